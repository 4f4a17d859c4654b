//! Advice before anyone declares anything: each billing profile read as a workload, with its
//! basis and confidence; serving never sent to spot; endpoints never scheduled without
//! traffic evidence; rows on an inference summed apart until a lead confirms it, which is
//! checked on the server and audited. Amounts are worked here by hand from the seeded lines.

use chrono::{Datelike, Weekday};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{Line, d, day, declare, insights, seed, team};
use crate::common::{encode, spawn_app};
use burnrate::auth::Role;
use burnrate::savings::Kind;
use burnrate::savings::model::{Confidence, Workload};

/// 28 days from day(0), 2026-10-01. `api` bills every day, so every day is in the window.
fn undeclared_account() -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for n in 0..28 {
        let weekend = matches!(day(n).weekday(), Weekday::Sat | Weekday::Sun);
        // Three g5.xlarge around the clock, every day alike: serving.
        lines.push(Line("api", "USE1-BoxUsage:g5.xlarge", day(n), d("72.432"), d("72")));
        // An endpoint up around the clock: a production endpoint, no traffic data here.
        lines.push(Line("hosted", "USE1-Host:ml.g5.xlarge", day(n), d("33.792"), d("24")));
        // A two-day sweep every week on 8 × g5.12xlarge: 192 instance-hours a run day.
        if n % 7 == 2 || n % 7 == 3 {
            lines.push(Line(
                "sweeps",
                "USE1-BoxUsage:g5.12xlarge",
                day(n),
                d("1089.024"),
                d("192"),
            ));
            // The same shape, but its team declared it serving.
            lines.push(Line(
                "declared",
                "USE1-BoxUsage:g5.12xlarge",
                day(n),
                d("1089.024"),
                d("192"),
            ));
        }
        // A workstation used 9 hours each weekday, off at weekends.
        if !weekend {
            lines.push(Line("desk", "USE1-BoxUsage:g5.xlarge", day(n), d("9.054"), d("9")));
        }
        // SageMaker training jobs: training by the usage type itself.
        lines.push(Line("tuner", "USE1-Train:ml.g5.xlarge", day(n), d("14.08"), d("10")));
    }
    lines
}

fn rows_of<'a>(
    found: &'a burnrate::savings::insights::Insights,
    project: &str,
) -> Vec<&'a burnrate::savings::Recommendation> {
    found.recommendations.iter().filter(|r| r.project == project).collect()
}

#[sqlx::test]
async fn an_account_with_no_declarations_gets_inferred_advice_for_each_profile(pool: PgPool) {
    seed(&pool, &undeclared_account()).await;
    declare(&pool, "declared", "serving", None).await;
    let found = insights(&pool, 30).await;
    assert_eq!(
        (found.window.expect("window").from, found.window.expect("window").to),
        (day(0), day(28))
    );

    // Bursty runs: training, medium confidence (four runs), so spot at the default 65 %:
    // 8 run days × $1,089.024 = $8,712.192 in 28 days; × 0.65 × 30 / 28.
    let sweeps = rows_of(&found, "sweeps");
    assert_eq!(sweeps.len(), 1, "{sweeps:?}");
    let spot = sweeps[0];
    assert_eq!(spot.kind, Kind::Spot);
    assert_eq!(
        spot.monthly_saving.round_dp(10),
        (d("5662.9248") * Decimal::from(30) / Decimal::from(28)).round_dp(10)
    );
    let inferred = spot.inferred.as_ref().expect("the row says it rests on an inference");
    assert_eq!(
        (inferred.workload, inferred.confidence),
        (Workload::Training, Confidence::Medium)
    );
    assert_eq!(
        inferred.basis,
        "inferred: bursty runs of 48 h (4 runs in 23 days, up to 8 instances at once)"
    );
    assert!(
        spot.detail.contains("not in the totals until a lead confirms"),
        "{}",
        spot.detail
    );

    // Weekday work, off at weekends: dev, high confidence; spot on its 20 weekdays × $9.054.
    let desk = rows_of(&found, "desk");
    assert_eq!(desk.len(), 1, "{desk:?}");
    assert_eq!(desk[0].kind, Kind::Spot);
    assert_eq!(
        desk[0].monthly_saving.round_dp(10),
        (d("181.08") * d("0.65") * Decimal::from(30) / Decimal::from(28)).round_dp(10)
    );
    let inferred = desk[0].inferred.as_ref().expect("inferred");
    assert_eq!(
        (inferred.workload, inferred.confidence),
        (Workload::Dev, Confidence::High)
    );
    assert!(inferred.basis.contains("off at weekends"), "{}", inferred.basis);

    // Flat around the clock reads as serving: no spot, no schedule, nothing at all.
    assert!(rows_of(&found, "api").is_empty(), "{:?}", rows_of(&found, "api"));
    // A production endpoint without traffic evidence keeps its hours.
    assert!(rows_of(&found, "hosted").is_empty(), "{:?}", rows_of(&found, "hosted"));
    // Declared wins over the bill's shape.
    assert!(
        rows_of(&found, "declared").is_empty(),
        "{:?}",
        rows_of(&found, "declared")
    );
    // SageMaker's own operation is a fact: training on spot, no inference to confirm.
    let tuner = rows_of(&found, "tuner");
    assert_eq!(tuner.len(), 1, "{tuner:?}");
    assert_eq!((tuner[0].kind, tuner[0].inferred.is_none()), (Kind::Spot, true));

    // The totals count what rests on facts; the two inferred rows are summed apart.
    let available = burnrate::savings::service::available(&pool, &found, None, None)
        .await
        .expect("available");
    let counted: Vec<_> = found.recommendations.iter().filter(|r| r.inferred.is_none()).collect();
    assert_eq!(available.count, counted.len());
    assert_eq!(
        available.monthly_saving,
        counted.iter().map(|r| r.compounded_saving).sum::<Decimal>()
    );
    assert_eq!(available.to_confirm, 2);
    assert_eq!(
        available.to_confirm_saving,
        spot.compounded_saving + desk[0].compounded_saving
    );
}

#[sqlx::test]
async fn a_lead_confirms_an_inferred_workload_in_one_click_and_its_row_counts(pool: PgPool) {
    seed(&pool, &undeclared_account()).await;
    team(&pool, "research", "lead@example.com", &["sweeps"]).await;
    team(&pool, "platform", "other@example.com", &["api", "desk"]).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    let other = app.session_for("other@example.com", Role::Lead).await;

    // The row offers the confirmation to its team's lead, not to a viewer.
    let page = app.get_as("/savings", &lead).await;
    assert!(page.body.contains("data-testid=\"inferred\""), "{}", page.body);
    assert!(page.body.contains("data-testid=\"confirm-workload\""));
    let page = app.get_as("/savings", &viewer).await;
    assert!(page.body.contains("data-testid=\"inferred\""));
    assert!(!page.body.contains("data-testid=\"confirm-workload\""));

    // The Project page shows the declared workload at once, and asks after hydration what
    // the bill suggests (it needs the recommendations) and whether this lead may confirm it.
    let project = app.get_as("/projects/sweeps", &lead).await;
    assert_eq!(project.status, 200);
    assert!(project.body.contains("Declared: unknown"), "{}", project.body);
    let asked = format!("project={}", encode("sweeps"));
    let inferred = app.post_form_as("/api/project/workload/inferred", &asked, &lead).await;
    assert_eq!(inferred.status, 200, "{}", inferred.body);
    assert!(inferred.body.contains("bursty runs of 48 h"), "{}", inferred.body);
    let facts = app.post_form_as("/api/project/workload", &asked, &lead).await;
    assert!(facts.body.contains("\"may_confirm\":true"), "{}", facts.body);
    assert_eq!(
        app.post_form("/api/project/workload/inferred", &asked).await.status,
        401
    );

    let confirm = |project: &str, workload: &str| format!("project={}&workload={workload}", encode(project));
    let url = "/api/project/workload/confirm";
    assert_eq!(app.post_form(url, &confirm("sweeps", "training")).await.status, 401);
    assert_eq!(
        app.post_form_as(url, &confirm("sweeps", "training"), &viewer)
            .await
            .status,
        403
    );
    assert_eq!(
        app.post_form_as(url, &confirm("sweeps", "training"), &other)
            .await
            .status,
        403
    );
    let unknown = app.post_form_as(url, &confirm("sweeps", "unknown"), &lead).await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    assert!(unknown.body.contains("workload"), "{}", unknown.body);
    let before = insights(&pool, 30).await;
    let row = rows_of(&before, "sweeps")[0].clone();
    let available_before = burnrate::savings::service::available(&pool, &before, None, None)
        .await
        .expect("available");
    let audited: i64 = sqlx::query_scalar("select count(*) from audit_log where action = 'project.workload'")
        .fetch_one(&pool)
        .await
        .expect("audit");
    assert_eq!(audited, 0, "refused confirmations change nothing");

    let done = app.post_form_as(url, &confirm("sweeps", "training"), &lead).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let (actor, after): (String, String) = sqlx::query_as(
        "select actor, details->'after'->>'workload' from audit_log where action = 'project.workload' and subject = 'sweeps'",
    )
    .fetch_one(&pool)
    .await
    .expect("audited");
    assert_eq!((actor.as_str(), after.as_str()), ("lead@example.com", "training"));
    // Declared now: a lead no longer changes it; that stays an admin's.
    let again = app.post_form_as(url, &confirm("sweeps", "batch"), &lead).await;
    assert_eq!(again.status, 403, "{}", again.body);

    // Declared now: the same row, no longer inferred, and counted in the total.
    let after = insights(&pool, 30).await;
    let confirmed = rows_of(&after, "sweeps")[0];
    assert_eq!((confirmed.kind, confirmed.inferred.is_none()), (Kind::Spot, true));
    assert_eq!(confirmed.monthly_saving, row.monthly_saving);
    let available = burnrate::savings::service::available(&pool, &after, None, None)
        .await
        .expect("available");
    assert_eq!(available.to_confirm, available_before.to_confirm - 1);
    assert_eq!(
        available.monthly_saving,
        available_before.monthly_saving + row.compounded_saving
    );
}
