//! Proposals are listed apart from the enforcement pass, and share each region's reads: one
//! paged `GetResources` for the notebooks' and endpoints' tags (no `ListTags` per resource),
//! one list per kind, `ListTags` only for jobs in progress, whatever the number of open
//! proposals. Reads up to ten minutes old are shared; a stop about to run reads afresh.

use sqlx::PgPool;

use crate::common::enforcement::{AUTOMATIC_ENDPOINTS, action_id, resource_executor, seed, status, today};
use crate::common::sagemaker_fake::{FakeEndpoint, SageMakerFake, job};
use crate::common::{add_project_costs, aws_config_at, day};
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::reconcile;
use burnrate::enforcement::resources::listing::{self, Listings};

fn endpoint(project: &str, config: &str) -> FakeEndpoint {
    FakeEndpoint {
        status: "InService".into(),
        config: config.into(),
        tags: vec![("project".into(), project.into())],
    }
}

/// (kind, resource) of the stop's rows, in a stable order.
async fn listed(pool: &PgPool, stop: i64) -> Vec<(String, String)> {
    sqlx::query_as(
        "select kind, resource_id from enforcement_resources where action_id = $1 order by kind, resource_id",
    )
    .bind(stop)
    .fetch_all(pool)
    .await
    .expect("rows")
}

#[sqlx::test]
async fn open_proposals_share_one_read_per_region_and_a_running_stop_reads_afresh(pool: PgPool) {
    let fake = SageMakerFake::start().await;
    fake.with(|s| {
        s.configs.insert("g5-one".into(), vec![("ml.g5.xlarge".into(), 1)]);
        for (name, project) in [
            ("burner-serving", "gpu-burner"),
            ("hog-serving", "gpu-hog"),
            ("look-alike-serving", "gpu-burner "),
            ("others-serving", "someone-else"),
        ] {
            s.endpoints.insert(name.into(), endpoint(project, "g5-one"));
        }
        s.training
            .insert("burner-train".into(), job("gpu-burner", "ml.p4d.24xlarge", 1));
        s.training.insert("hog-train".into(), job("gpu-hog", "ml.g5.xlarge", 1));
        // A finished job keeps its tags; the listing never asks about it.
        let mut done = job("gpu-burner", "ml.p4d.24xlarge", 1);
        done.status = "Completed".into();
        s.training.insert("burner-old".into(), done);
        // AWS may answer fewer resources than asked a page: the listing follows the token.
        s.tagging_page = Some(2);
    });
    seed(
        &pool,
        "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_resources, stop_regions)
         select id, 100, '{flag,stop}', 'dry-run', '{training_jobs,endpoints}', '{us-east-1}' from teams",
    )
    .await;
    add_project_costs(
        &pool,
        "gpu-hog",
        Some("strict"),
        (day(2026, 11, 10), day(2026, 11, 10)),
        "300.00",
        "300.00",
    )
    .await;
    let exec = resource_executor(&aws_config_at(&fake.endpoint(), "AKIDTEST").await);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    let reads = |fake: &SageMakerFake| {
        ["GetResources", "ListEndpoints", "ListTrainingJobs", "ListTags"].map(|op| fake.count(op))
    };
    assert_eq!(reads(&fake), [0; 4], "the enforcement pass lists nothing");

    let mut listings = Listings::default();
    assert_eq!(listing::list_due(&pool, &exec, &mut listings).await.expect("round"), 2);
    let burner = action_id(&pool, "gpu-burner", "stop").await;
    let hog = action_id(&pool, "gpu-hog", "stop").await;
    let of = |kind: &str, id: &str| (kind.to_string(), id.to_string());
    assert_eq!(
        listed(&pool, burner).await,
        [of("endpoint", "burner-serving"), of("training_job", "burner-train")]
    );
    assert_eq!(
        listed(&pool, hog).await,
        [of("endpoint", "hog-serving"), of("training_job", "hog-train")]
    );
    // One read for both proposals: four tagged endpoints in pages of two, one list per kind,
    // and tags asked only for the two jobs in progress.
    assert_eq!(reads(&fake), [2, 1, 1, 2]);
    let pages: Vec<serde_json::Value> = fake.with(|s| {
        s.calls
            .iter()
            .filter(|(op, _)| op == "GetResources")
            .map(|(_, r)| r.clone())
            .collect()
    });
    // A tag-key filter: no project's value is ever sent as a pattern.
    assert_eq!(pages[0]["TagFilters"], serde_json::json!([{"Key": "project"}]));

    // Due again (listed over ten minutes ago): the reads, under ten minutes old, are shared,
    // and the listing shows when they were made.
    let first: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("select resources_listed_at from enforcement_actions where id = $1")
            .bind(burner)
            .fetch_one(&pool)
            .await
            .expect("listed at");
    sqlx::query(
        "update enforcement_actions set resources_listed_at = now() - interval '11 minutes' where action = 'stop'",
    )
    .execute(&pool)
    .await
    .expect("age");
    // Two seconds on, so "now" and the shared read's time are told apart.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(listing::list_due(&pool, &exec, &mut listings).await.expect("round"), 2);
    assert_eq!(reads(&fake), [2, 1, 1, 2]);
    let second: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("select resources_listed_at from enforcement_actions where id = $1")
            .bind(burner)
            .fetch_one(&pool)
            .await
            .expect("listed at");
    let drift = (second - first).num_milliseconds().abs();
    assert!(drift < 1000, "{second} is the shared read's time ({first}), not now");

    // The stops run: each reads afresh, whatever the lister holds.
    sqlx::query("update enforcement_policies set mode = 'automatic' where team_id is not null")
        .execute(&pool)
        .await
        .expect("automatic");
    evaluate_and_act(&pool, today(), &exec).await.expect("run");
    assert_eq!(status(&pool, burner).await, "executing");
    assert_eq!(status(&pool, hog).await, "executing");
    // Each run: the index's two pages, one list per kind, and SageMaker's own tags for the
    // jobs in progress and (confirming the index) the project's endpoint: the first run's
    // three, then two (burner-train is stopping, no longer in progress).
    assert_eq!(reads(&fake), [2 + 2 * 2, 1 + 2, 1 + 2, 2 + 3 + 2]);
    fake.with(|s| {
        assert!(s.endpoints["look-alike-serving"].status == "InService");
        assert!(s.endpoints["others-serving"].status == "InService");
    });
}

#[sqlx::test]
async fn a_stop_about_to_run_judges_an_endpoint_by_its_own_tags_not_a_lagging_index(pool: PgPool) {
    let fake = SageMakerFake::start().await;
    fake.with(|s| {
        s.configs.insert("g5-one".into(), vec![("ml.g5.xlarge".into(), 1)]);
        s.endpoints
            .insert("burner-serving".into(), endpoint("gpu-burner", "g5-one"));
        // Re-tagged to another project; the index still shows the old value.
        s.endpoints
            .insert("handed-over".into(), endpoint("someone-else", "g5-one"));
        s.indexed
            .insert("handed-over".into(), vec![("project".into(), "gpu-burner".into())]);
    });
    seed(&pool, AUTOMATIC_ENDPOINTS).await;
    let exec = resource_executor(&aws_config_at(&fake.endpoint(), "AKIDTEST").await);
    evaluate_and_act(&pool, today(), &exec).await.expect("run");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert_eq!(
        listed(&pool, stop).await,
        [("endpoint".to_string(), "burner-serving".to_string())]
    );
    fake.with(|s| {
        assert_eq!(s.endpoints["handed-over"].status, "InService");
        assert_eq!(s.endpoints["burner-serving"].status, "Deleting");
    });
}
