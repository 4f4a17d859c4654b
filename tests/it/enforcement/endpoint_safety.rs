//! An endpoint is deleted only when a reversal can bring it back as it was (#51): one that
//! autoscales, or runs another instance count than its config starts with, is left running
//! with why; one that is deleted comes back with every tag it had, not only the project's.
//! The real SDK against the SageMaker fake, which also answers Application Auto Scaling's
//! `DescribeScalableTargets` as AWS documents it.

use sqlx::PgPool;

use crate::common::aws_config_at;
use crate::common::enforcement::{AUTOMATIC_ENDPOINTS, action_id, resource_executor, seed, status, today};
use crate::common::sagemaker_fake::{FakeEndpoint, SageMakerFake};
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::reconcile;

/// (resource, status, note) of each row of the stop, by resource.
async fn rows(pool: &PgPool, stop: i64) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "select resource_id, status, note from enforcement_resources where action_id = $1 order by resource_id",
    )
    .bind(stop)
    .fetch_all(pool)
    .await
    .expect("rows")
}

fn endpoint(config: &str, tags: &[(&str, &str)]) -> FakeEndpoint {
    FakeEndpoint {
        status: "InService".into(),
        config: config.into(),
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

#[sqlx::test]
async fn only_endpoints_a_reversal_restores_are_deleted_and_they_come_back_with_every_tag(pool: PgPool) {
    let fake = SageMakerFake::start().await;
    let tags = [("project", "gpu-burner"), ("user", "alice"), ("cost-center", "cc-42")];
    fake.with(|s| {
        for name in ["plain", "scaled", "resized", "stacked"] {
            s.configs.insert(format!("{name}-v1"), vec![("ml.g5.xlarge".into(), 2)]);
            s.endpoints.insert(name.into(), endpoint(&format!("{name}-v1"), &tags));
        }
        s.scalable.insert("endpoint/scaled/variant/variant-0".into(), (1, 8));
        // Someone raised `resized` to 5 instances by hand; its config still starts 2.
        s.current.insert("resized/variant-0".into(), 5);
        // `stacked` belongs to a CloudFormation stack, which tags it with AWS's own keys.
        s.endpoints
            .get_mut("stacked")
            .expect("stacked")
            .tags
            .push(("aws:cloudformation:stack-name".into(), "serving".into()));
    });
    seed(&pool, AUTOMATIC_ENDPOINTS).await;
    let exec = resource_executor(&aws_config_at(&fake.endpoint(), "AKIDTEST").await);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.settle();
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "executed");
    let found = rows(&pool, stop).await;
    let of = |id: &str| found.iter().find(|r| r.0 == id).cloned().expect("listed");
    assert_eq!(of("plain").1, "stopped");
    let (_, scaled, why) = of("scaled");
    assert_eq!(scaled, "skipped");
    let why = why.expect("why");
    assert!(why.contains("autoscales") && why.contains("from 1 to 8"), "{why}");
    let (_, stacked, why) = of("stacked");
    assert_eq!(stacked, "skipped");
    assert!(why.expect("why").contains("aws:cloudformation:stack-name"));
    let (_, resized, why) = of("resized");
    assert_eq!(resized, "skipped");
    let why = why.expect("why");
    assert!(why.contains("runs 5 instances where its config starts 2"), "{why}");
    fake.with(|s| {
        assert!(!s.endpoints.contains_key("plain"));
        assert!(
            ["scaled", "resized", "stacked"]
                .iter()
                .all(|e| s.endpoints.contains_key(*e))
        );
    });
    // Its size is what it runs now: 5 instances of one GPU.
    let gpus: rust_decimal::Decimal =
        sqlx::query_scalar("select gpus from enforcement_resources where action_id = $1 and resource_id = 'resized'")
            .bind(stop)
            .fetch_one(&pool)
            .await
            .expect("gpus");
    assert_eq!(gpus, rust_decimal::Decimal::from(5));

    burnrate::enforcement::reverse::reverse(&pool, &exec, stop, "finance@example.com")
        .await
        .expect("reversed");
    fake.settle();
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "reversed");
    fake.with(|s| {
        let mut back = s.endpoints["plain"].tags.clone();
        back.sort();
        let mut had: Vec<(String, String)> = tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        had.sort();
        assert_eq!(back, had, "every tag it had, not only the project's");
    });
}
