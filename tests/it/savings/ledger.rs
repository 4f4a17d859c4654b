//! The ledger counts each dollar once (#53): decisions accepted through the real decide path
//! on overlapping spend (spot on two projects' g5 usage and a Savings Plan for the g5 family
//! over both) are Accepted at what each adds after the others, and their measured drop is
//! booked once, in the ledger and in the monthly report. Every figure is worked by hand.

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{Line, d, day, declare, insights, seed};
use burnrate::auth::{Caller, Role};
use burnrate::savings::Kind;
use burnrate::savings::model::Decision;

/// `cost` a day, 24 hours, on `usage_type`, for `days` days from `first`.
fn lines<'a>(project: &'a str, usage_type: &'a str, first: u32, days: u32, cost: &str) -> Vec<Line<'a>> {
    (first..first + days)
        .map(|n| Line(project, usage_type, day(n), d(cost), d("24")))
        .collect()
}

async fn admin(pool: &PgPool) -> Caller {
    Caller {
        account_id: crate::common::create_account(pool, "admin@example.com", Role::Admin).await,
        email: "admin@example.com".into(),
        display_name: String::new(),
        role: Role::Admin,
        team_ids: Vec::new(),
    }
}

#[sqlx::test]
async fn overlapping_decisions_are_accepted_after_each_other_and_realised_once(pool: PgPool) {
    // October 1–30 on demand: trainer on a g5.xlarge ($1.006/h, $24.144 a day), tuner on a
    // g5.2xlarge ($1.212/h, $29.088 a day), both training around the clock.
    seed(
        &pool,
        &[
            lines("trainer", "USE1-BoxUsage:g5.xlarge", 0, 30, "24.144"),
            lines("tuner", "USE1-BoxUsage:g5.2xlarge", 0, 30, "29.088"),
        ]
        .concat(),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    declare(&pool, "tuner", "training", None).await;
    let found = insights(&pool, 30).await;
    let spot = |project: &str| {
        found
            .recommendations
            .iter()
            .find(|r| r.kind == Kind::Spot && r.project == project)
            .unwrap_or_else(|| panic!("spot for {project}: {:?}", found.recommendations))
            .clone()
    };
    let (trainer, tuner) = (spot("trainer"), spot("tuner"));
    // 30 × 24.144 × 0.65 and 30 × 29.088 × 0.65.
    assert_eq!(trainer.compounded_saving, d("470.808"));
    assert_eq!(tuner.compounded_saving, d("567.216"));
    let commitment = found
        .recommendations
        .iter()
        .find(|r| r.kind == Kind::Commitment)
        .expect("a Savings Plan for the g5 family")
        .clone();
    // Alone it saves; after spot moved both projects off on-demand prices, nothing is left.
    assert!(commitment.monthly_saving > Decimal::ZERO);
    assert_eq!(commitment.compounded_saving, Decimal::ZERO);

    // Accepted on 31 October, each through the real decide path.
    let admin = admin(&pool).await;
    for key in [trainer.key(), tuner.key(), commitment.key()] {
        burnrate::savings::service::decide(
            &pool,
            &found,
            &admin,
            &key,
            (Decision::Accepted, "moving the g5 fleet to spot"),
            day(30),
        )
        .await
        .expect("accepted");
    }
    // Then 20 days on spot at 35 % of on demand: $8.4504 and $10.1808 a day.
    seed(
        &pool,
        &[
            lines("trainer", "USE1-SpotUsage:g5.xlarge", 30, 20, "8.4504"),
            lines("tuner", "USE1-SpotUsage:g5.2xlarge", 30, 20, "10.1808"),
        ]
        .concat(),
    )
    .await;

    let mut conn = pool.acquire().await.expect("connection");
    let ledger = burnrate::savings::ledger::entries(&mut conn).await.expect("ledger");
    let totals = burnrate::savings::ledger::totals(&[], &ledger);
    // Accepted: 470.808 + 567.216 + 0, where each row's own figure summed passes it.
    assert_eq!(totals.accepted, d("1038.024"));
    assert!(ledger.iter().map(|e| e.proposed_monthly_saving).sum::<Decimal>() > d("1038.024"));
    // Realised once: 30 days before, 30 × (24.144 + 29.088) = 1,596.96; the 20 days after,
    // 20 × (8.4504 + 10.1808) = 372.624, per 30 days 558.936; 1,596.96 − 558.936 = 1,038.024
    // (the old ledger booked it for each spot row and again for the Savings Plan: 2,076.048).
    assert_eq!(totals.realised, d("1038.024"));
    let realised = |kind: Kind, project: &str| {
        ledger
            .iter()
            .find(|e| e.kind == kind && e.project == project)
            .and_then(|e| e.realised_monthly_saving)
            .expect("measured")
    };
    assert_eq!(realised(Kind::Spot, "trainer"), d("470.808"));
    assert_eq!(realised(Kind::Spot, "tuner"), d("567.216"));
    assert_eq!(realised(Kind::Commitment, ""), Decimal::ZERO);
    assert!(ledger.iter().all(|e| e.measured_with == 2 && e.days_after == 20));

    // The monthly report: October accepts 1,038.024 and realises 31 October once,
    // 53.232 − 18.6312 = 34.6008; November realises its 19 settled days once,
    // 19 × 34.6008 = 657.4152, and accepts nothing. November's GPU spend is only
    // 19 × 18.6312 = 353.9928: the report books that, and says it held back
    // 657.4152 − 353.9928 = 303.4224 (the old report booked 657.4152, more than the month spent).
    let october = burnrate::savings::report::compute(
        &pool,
        &found,
        burnrate::period::parse_month("2026-10").expect("month"),
        day(50),
    )
    .await
    .expect("october");
    assert_eq!((october.accepted, october.realised), (d("1038.024"), d("34.6008")));
    let november = burnrate::savings::report::compute(
        &pool,
        &found,
        burnrate::period::parse_month("2026-11").expect("month"),
        day(50),
    )
    .await
    .expect("november");
    assert_eq!(november.gpu_spend, d("353.9928"));
    assert_eq!((november.accepted, november.realised), (Decimal::ZERO, d("353.9928")));
    assert_eq!(
        (november.held_back.accepted, november.held_back.realised),
        (Decimal::ZERO, d("303.4224"))
    );
    let spot_row = november
        .levers
        .iter()
        .find(|l| l.kind == Kind::Spot)
        .expect("spot lever");
    assert_eq!(spot_row.realised, d("353.9928"));
    let note = november.held_back_note().expect("the cap is stated");
    assert!(note.contains("$303.42"), "{note}");
    // Each decision records what the person saw: its own and compounded figures, and the
    // data version of the set.
    let recorded: Vec<(Decimal, Decimal, Option<i64>)> = sqlx::query_as(
        "select proposed_monthly_saving, compounded_monthly_saving, data_version from savings_decisions
         where kind = 'commitment'",
    )
    .fetch_all(&pool)
    .await
    .expect("decision");
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].0, commitment.monthly_saving.round_dp(2));
    assert_eq!(recorded[0].1, Decimal::ZERO);
    assert!(recorded[0].2.is_some_and(|v| v > 0));
}
