//! The Savings page, its decisions and CSV, and the what-if page, through `serve_until`.

use sqlx::PgPool;

use super::{daily, declare, seed, team};
use crate::common::{encode, spawn_app};
use burnrate::auth::Role;

async fn seeded(pool: &PgPool) {
    seed(
        pool,
        &[
            daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
            daily("other", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
        ]
        .concat(),
    )
    .await;
    declare(pool, "trainer", "training", None).await;
    declare(pool, "other", "training", None).await;
    team(pool, "ml", "lead@example.com", &["trainer"]).await;
    team(pool, "vision", "someone@example.com", &["other"]).await;
}

fn key(project: &str) -> String {
    ["spot", project, "USE1-BoxUsage:p4d.24xlarge", "p4d.24xlarge"].join("\u{1f}")
}

#[sqlx::test]
async fn decisions_are_checked_on_the_server_and_audited(pool: PgPool) {
    seeded(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;

    let page = app.get_as("/savings", &viewer).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("data-testid=\"savings-row\""), "{}", page.body);
    assert!(page.body.contains("$4,281.73"), "2195.76 × 0.65 × 3 on the page");

    let body = |project: &str, decision: &str| {
        format!(
            "key={}&decision={decision}&reason={}",
            encode(&key(project)),
            encode("moving to spot")
        )
    };
    assert_eq!(
        app.post_form("/api/savings/decide", &body("trainer", "accepted"))
            .await
            .status,
        401
    );
    assert_eq!(
        app.post_form_as("/api/savings/decide", &body("trainer", "accepted"), &viewer)
            .await
            .status,
        403
    );
    // A lead decides for its own team only.
    assert_eq!(
        app.post_form_as("/api/savings/decide", &body("other", "accepted"), &lead)
            .await
            .status,
        403
    );
    let accepted = app
        .post_form_as("/api/savings/decide", &body("trainer", "accepted"), &lead)
        .await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    let no_reason = format!("key={}&decision=dismissed&reason=", encode(&key("other")));
    assert_eq!(
        app.post_form_as("/api/savings/decide", &no_reason, &admin).await.status,
        400
    );
    let unknown = "key=nothing&decision=dismissed&reason=x";
    assert_eq!(
        app.post_form_as("/api/savings/decide", unknown, &admin).await.status,
        404
    );

    let (decision, proposed): (String, rust_decimal::Decimal) = sqlx::query_as(
        "select decision, proposed_monthly_saving from savings_decisions where project = 'trainer' and ended_at is null",
    )
    .fetch_one(&pool)
    .await
    .expect("decision");
    assert_eq!((decision.as_str(), proposed), ("accepted", super::d("4281.73")));
    let audited: i64 = sqlx::query_scalar(
        "select count(*) from audit_log where action = 'savings.accepted' and actor = 'lead@example.com'
           and details->>'reason' = 'moving to spot'",
    )
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1);

    // The ledger shows the acceptance; the proposed total keeps only what is still open.
    let page = app.get_as("/savings", &viewer).await;
    assert!(page.body.contains("data-testid=\"ledger-row\""), "{}", page.body);
    let csv = app.get_as("/api/savings.csv?team=vision", &viewer).await;
    assert_eq!(csv.status, 200);
    assert!(csv.body.starts_with(
        "kind,team,project,usage_type,instance_type,recommended,from,to,basis_cost,monthly_saving,detail,compounded_saving\n"
    ));
    assert_eq!(csv.body.lines().count(), 2, "only vision's row: {}", csv.body);
    assert_eq!(app.get_as("/api/savings.csv?kind=nonsense", &viewer).await.status, 400);
    assert_eq!(
        app.get("/api/savings.csv").await.status,
        401,
        "signed-out callers are refused"
    );
}

#[sqlx::test]
async fn the_what_if_page_answers_without_javascript(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let page = app
        .get_as(
            "/what-if?params_b=7&precision=bf16&workload=serving&tokens_per_day=20000000",
            &viewer,
        )
        .await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("about 15.6 GiB"), "{}", page.body);
    assert!(page.body.contains("g6.xlarge"));
    // 20M tokens a day × 30 × $3 per million: seed 000's managed figure.
    assert!(page.body.contains("$1,800.00"));
    // The browser's call for an empty form sends no fields at all.
    let empty = app.post_form_as("/api/what_if", "", &viewer).await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    let bad = app.get_as("/what-if?days=-1", &viewer).await;
    assert!(bad.body.contains("expected a number above 0"), "{}", bad.body);
}
