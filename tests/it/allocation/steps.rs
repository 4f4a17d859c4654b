//! Allocation end to end on real Postgres: each precedence step, each split kind with its
//! remainder to the cent, the Teams table reconciling with the organisation's total, team
//! budgets on allocated spend, rules as code, mapping changes, and the preview over HTTP
//! matching what a save then shows.

use crate::common::bills::d;
use crate::common::{day, spawn_app};
use burnrate::allocation::facts::replace_window;
use burnrate::audit_log::Actor;
use burnrate::auth::Role;
use burnrate::costs::store::{CostBatch, CostRow};
use burnrate::dashboard::reads::breakdown;
use burnrate::period::{DateRange, Metric, Period};
use rust_decimal::Decimal;
use sqlx::PgPool;

const DAY: (i32, u32, u32) = (2026, 10, 20);

fn row(project: &str, dimension: &str, cost: &str) -> CostRow {
    crate::common::bills::row(day(DAY.0, DAY.1, DAY.2), project, dimension, cost)
}

/// Three teams; `train` owned by ml-research; `sandbox` and `k8s-shared` owned by nobody;
/// alice (ml-research) and bob (web) mapped, carol not. One day of spend, 230.00 in all:
/// train 100, sandbox 60 (alice 30, bob 20, no user 10), untagged 40 (carol; by service
/// 30 NAT gateway and 10 CloudWatch), k8s-shared 30.
async fn seed(pool: &PgPool) {
    crate::common::import_config(
        pool,
        "teams:
  - name: ml-research
    owners: [ml@example.com]
    projects: [train]
    users: [alice]
  - name: platform
    owners: [platform@example.com]
  - name: web
    owners: [web@example.com]
    users: [bob]
",
    )
    .await;
    let batch = CostBatch {
        by_usage_type: vec![
            row("train", "USE1-BoxUsage:g5.xlarge", "100.00"),
            row("sandbox", "USE1-BoxUsage:m5.large", "60.00"),
            row("", "USE1-NatGateway-Hours", "40.00"),
            row("k8s-shared", "USE1-AmazonEKS-Hours:perCluster", "30.00"),
        ],
        by_user: vec![
            row("train", "alice", "100.00"),
            row("sandbox", "alice", "30.00"),
            row("sandbox", "bob", "20.00"),
            row("sandbox", "", "10.00"),
            row("", "carol", "40.00"),
            row("k8s-shared", "", "30.00"),
        ],
        by_service: vec![
            row("train", "Amazon Elastic Compute Cloud - Compute", "100.00"),
            row("sandbox", "Amazon Elastic Compute Cloud - Compute", "60.00"),
            row("", "EC2 - Other", "30.00"),
            row("", "AmazonCloudWatch", "10.00"),
            row("k8s-shared", "Amazon Elastic Container Service for Kubernetes", "30.00"),
        ],
        ..CostBatch::default()
    };
    let mut tx = pool.begin().await.expect("tx");
    let window = DateRange {
        from: day(DAY.0, DAY.1, 1),
        to: day(DAY.0, DAY.1 + 1, 1),
    };
    replace_window(&mut tx, window, &batch).await.expect("facts");
    tx.commit().await.expect("commit");
}

const RULES: &str = "shared_costs:
  - name: Network
    services: [\"EC2 - Other\", AmazonCloudWatch]
    split: proportional
  - name: Cluster
    projects: [k8s-shared]
    split: fixed
    teams: {ml-research: 50, platform: 30, web: 20}
";

async fn import(pool: &PgPool, text: &str) -> Vec<String> {
    crate::common::import_config(pool, text).await
}

/// (team, spend, own projects, via user tag, shared) per Teams-table row.
async fn teams_table(pool: &PgPool) -> Vec<(String, Decimal, Decimal, Decimal, Decimal)> {
    let view = breakdown::teams(pool, Period::MonthToDate, Metric::Unblended, day(DAY.0, DAY.1, 25))
        .await
        .expect("teams");
    let rollup: Decimal = sqlx::query_scalar("select sum(unblended) from daily_project_costs")
        .fetch_one(pool)
        .await
        .expect("rollup total");
    assert_eq!(
        view.total, rollup,
        "the teams and Unassigned add up to the organisation's total"
    );
    view.teams
        .into_iter()
        .map(|t| (t.team, t.spend, t.direct, t.user_tag, t.shared))
        .collect()
}

fn line(
    team: &str,
    spend: &str,
    direct: &str,
    user: &str,
    shared: &str,
) -> (String, Decimal, Decimal, Decimal, Decimal) {
    (team.to_string(), d(spend), d(direct), d(user), d(shared))
}

#[sqlx::test]
async fn each_step_claims_what_the_steps_before_it_left_and_every_cent_is_counted_once(pool: PgPool) {
    seed(&pool).await;
    // Without rules: projects, then user tags; the rest is Unassigned.
    assert_eq!(
        teams_table(&pool).await,
        [
            line("ml-research", "130.00", "100.00", "30.00", "0"),
            line("Unassigned", "80.00", "0", "0", "0"),
            line("web", "20.00", "0", "20.00", "0"),
        ]
    );
    let changes = import(&pool, RULES).await;
    assert_eq!(
        changes,
        [
            "create shared-cost rule \"Network\": services AmazonCloudWatch, EC2 - Other → proportional over every team",
            "create shared-cost rule \"Cluster\": projects k8s-shared → fixed: ml-research 50%, platform 30%, web 20%",
        ]
    );
    // Network takes the untagged 40 (all of it NAT gateway and CloudWatch), split 130 : 0 :
    // 20 by the teams' own spend: 34.666… and 5.333…, the leftover cent to the larger
    // remainder. Cluster splits k8s-shared's 30 as 15 / 9 / 6. Sandbox's 10 with no user
    // tag stays Unassigned.
    assert_eq!(
        teams_table(&pool).await,
        [
            line("ml-research", "179.67", "100.00", "30.00", "49.67"),
            line("web", "31.33", "0", "20.00", "11.33"),
            line("Unassigned", "10.00", "0", "0", "0"),
            line("platform", "9.00", "0", "0", "9.00"),
        ]
    );
    // A team's budget judges its allocated spend.
    let budget = crate::common::budgets::spec("web monthly", ("team", "web"), "40.00", "50\n80", "");
    let id = crate::common::budgets::save(&pool, &budget).await;
    let mut conn = pool.acquire().await.expect("connection");
    let budget = burnrate::budgets::store::get(&mut conn, id)
        .await
        .expect("read")
        .expect("budget");
    let standing = burnrate::budgets::evaluate::status(&mut conn, &budget, day(DAY.0, DAY.1, 25))
        .await
        .expect("status");
    assert_eq!(standing.status.spend, d("31.33"));
    assert_eq!(
        standing.status.crossed.len(),
        1,
        "31.33 of 40 crosses 50 % and not 80 %"
    );
    // The team's page lists each part by step, project and rule.
    let scope = breakdown::scope(
        &pool,
        burnrate::dashboard::model::Scope::Team("web".into()),
        Period::MonthToDate,
        Metric::Unblended,
        day(DAY.0, DAY.1, 25),
    )
    .await
    .expect("team page");
    assert_eq!(scope.total, d("31.33"));
    let parts: Vec<(String, String, Option<String>, Decimal)> = scope
        .parts
        .into_iter()
        .map(|p| (p.source, p.project, p.rule, p.spend))
        .collect();
    assert_eq!(
        parts,
        [
            ("user".to_string(), "sandbox".to_string(), None, d("20.00")),
            (
                "shared".to_string(),
                "k8s-shared".to_string(),
                Some("Cluster".to_string()),
                d("6.00")
            ),
            (
                "shared".to_string(),
                "".to_string(),
                Some("Network".to_string()),
                d("5.33")
            ),
        ]
    );
    // The Teams CSV is the allocation too, and reconciles to the cent.
    let csv = burnrate::costs::export::csv(
        &pool,
        DateRange {
            from: day(DAY.0, DAY.1, 1),
            to: day(DAY.0, DAY.1 + 1, 1),
        },
        &burnrate::costs::export::parse_keys("team").expect("keys"),
        burnrate::costs::export::Granularity::Monthly,
        Metric::Unblended,
    )
    .await
    .expect("csv");
    assert_eq!(
        csv,
        "date,team,cost\n2026-10-01,Unassigned,10.00\n2026-10-01,ml-research,179.67\n2026-10-01,platform,9.00\n2026-10-01,web,31.33\n"
    );
}

#[sqlx::test]
async fn a_user_mapping_change_moves_the_spend_its_tag_carries_and_owned_projects_stay_owned(pool: PgPool) {
    seed(&pool).await;
    import(&pool, RULES).await;
    // carol joins platform: the untagged 40 is hers, so step 2 takes it before Network can.
    burnrate::teams::edit::assign(&pool, &Actor::system("test"), "user", "carol", "platform")
        .await
        .expect("assigned");
    assert_eq!(
        teams_table(&pool).await,
        [
            line("ml-research", "145.00", "100.00", "30.00", "15.00"),
            line("platform", "49.00", "0", "40.00", "9.00"),
            line("web", "26.00", "0", "20.00", "6.00"),
            line("Unassigned", "10.00", "0", "0", "0"),
        ]
    );
    // A rule naming a project a team owns is refused: that spend is the team's.
    let file = burnrate::as_code::parse(
        "shared_costs:
  - name: Training
    projects: [train]
    split: even
",
    )
    .expect("parses");
    let refused = burnrate::as_code::apply(&pool, &Actor::system("test"), &file, false)
        .await
        .expect_err("refused");
    assert_eq!(
        refused.to_string(),
        "line 2: values: project \"train\" belongs to team \"ml-research\", and a team's own projects stay its own; unmap it to share it"
    );
}

/// Two rewrites at once (an ingestion and a mapping change, or two replicas starting) must
/// not both keep their rows: each would miss the other's, counting spend twice.
#[sqlx::test]
async fn concurrent_rewrites_of_the_allocation_count_every_dollar_once(pool: PgPool) {
    seed(&pool).await;
    import(&pool, RULES).await;
    let rewrite = |pool: PgPool| async move {
        let mut tx = pool.begin().await.expect("tx");
        burnrate::allocation::store::refresh_all(&mut tx)
            .await
            .expect("allocated");
        // Hold the transaction open a moment, as a long ingestion would.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        tx.commit().await.expect("commit");
    };
    tokio::join!(rewrite(pool.clone()), rewrite(pool.clone()), rewrite(pool.clone()));
    let (allocated, rollup): (Decimal, Decimal) = sqlx::query_as(
        "select (select sum(unblended) from allocated_daily_costs), (select sum(unblended) from daily_project_costs)",
    )
    .fetch_one(&pool)
    .await
    .expect("sums");
    assert_eq!(allocated, rollup);
    assert_eq!(allocated, d("230.00"));
}

#[sqlx::test]
async fn the_preview_shows_what_a_save_then_does_and_saves_nothing(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let form = "name=Untagged&selector=untagged&split=fixed&teams=platform+75%0Aweb+25&month=2026-10";
    let response = app.post_form_as("/api/allocation/rules/preview", form, &admin).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let preview: burnrate::allocation::Preview = serde_json::from_str(&response.body).expect("preview");
    let moved: Vec<(String, Decimal, Decimal)> = preview
        .teams
        .iter()
        .map(|t| (t.team.clone(), t.now, t.proposed))
        .collect();
    assert_eq!(
        moved,
        [
            ("ml-research".to_string(), d("130.00"), d("130.00")),
            ("Unassigned".to_string(), d("80.00"), d("40.00")),
            ("platform".to_string(), d("0"), d("30.00")),
            ("web".to_string(), d("20.00"), d("30.00")),
        ]
    );
    let stored: i64 = sqlx::query_scalar("select count(*) from allocation_rules")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(stored, 0, "a preview saves nothing");
    assert_eq!(
        app.post_form_as("/api/allocation/rules/save", form, &viewer)
            .await
            .status,
        403,
        "viewers read the rules but cannot change them"
    );
    let page = app.post_form_as("/api/allocation/rules", "", &viewer).await;
    assert_eq!(page.status, 200, "{}", page.body);

    let saved = app.post_form_as("/api/allocation/rules/save", form, &admin).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let table: Vec<(String, Decimal)> = teams_table(&pool).await.into_iter().map(|t| (t.0, t.1)).collect();
    let mut previewed: Vec<(String, Decimal)> = preview.teams.into_iter().map(|t| (t.team, t.proposed)).collect();
    previewed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert_eq!(table, previewed, "the Teams table moved as previewed");
    // Every change is in the audit log with what it did.
    let audited: Vec<String> = sqlx::query_scalar("select action from audit_log where action like 'allocation.%'")
        .fetch_all(&pool)
        .await
        .expect("audit");
    assert_eq!(audited, ["allocation.rules.replace"]);
}
