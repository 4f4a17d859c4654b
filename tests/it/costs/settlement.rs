//! The open bill: Cost Explorer flags every day of an open billing period Estimated, yet
//! only the last few days still move. Day by day through a month whose spend triples on the
//! 10th, ingested from the Cost Explorer fake and judged as the scheduled jobs would, the
//! forecast follows the new rate and a FORECASTED threshold fires before the ACTUAL one.
//! The old shape (only the last three days Estimated) must give the very same figures.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::ce_fake::{CostExplorerFake, LineItem};
use crate::common::{FAST_BACKOFF as FAST, cost_explorer_at, day};
use burnrate::config::IngestSettings;
use burnrate::costs::settlement::period_is_closed;
use burnrate::ingestion::cost_explorer::CostExplorer;
use burnrate::ingestion::run::{self, Outcome, RunOptions, Trigger};
use burnrate::period::DateRange;
use burnrate::period::OpenDays;

/// `train` (team ml-research) spends $100 a day from 1 October, $300 from 10 November.
fn items() -> Vec<LineItem> {
    day(2026, 10, 1)
        .iter_days()
        .take_while(|d| *d <= day(2026, 12, 10))
        .map(|on| {
            let cost = Decimal::from(if on >= day(2026, 11, 10) { 300 } else { 100 });
            LineItem {
                day: on,
                account: crate::common::ce_fake::SAMPLE_ACCOUNT.into(),
                project: Some("train".into()),
                user: Some("alice".into()),
                usage_type: "USE1-BoxUsage:p4d.24xlarge".into(),
                service: "Amazon Elastic Compute Cloud - Compute".into(),
                record_type: "Usage".into(),
                unblended: cost,
                amortized: cost,
                quantity: Decimal::from(24),
            }
        })
        .collect()
}

async fn seed(pool: &PgPool) {
    crate::common::import_config(
        pool,
        "teams:
  - name: ml-research
    owners: [ml@example.com]
    projects: [train]
budgets:
  - name: ml monthly
    scope: {team: ml-research}
    period: monthly
    amount: \"6000\"
    thresholds: [{percent: 100}, {percent: 100, type: forecasted}]
    recipients: [finance@example.com]
",
    )
    .await;
}

async fn ingest(pool: &PgPool, ce: &CostExplorer, today: NaiveDate) {
    let options = RunOptions {
        settings: IngestSettings {
            backfill_since: Some(day(2026, 10, 1)),
            ..IngestSettings::default()
        },
        window: None,
        today,
        backoff: FAST,
    };
    match run::run(pool, ce, Trigger::Cli, &options).await {
        Ok(Outcome::Finished(_)) => {}
        other => panic!("ingestion on {today}: {other:?}"),
    }
}

/// How the fake flags Estimated days.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// As AWS does: the whole open bill.
    OpenBill,
    /// As the old fake did: only the last three days.
    RecentDays,
}

/// What was seen on the days the scenario looks at.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    /// The November forecast on each day asked for.
    forecasts: BTreeMap<NaiveDate, Decimal>,
    /// The first day each kind of alert for November was queued.
    first_alert: BTreeMap<String, NaiveDate>,
    /// Whether November was settled, and its statement frozen, on 3 and 6 December.
    settled: BTreeMap<NaiveDate, (bool, bool)>,
}

const FORECAST_DAYS: [(u32, u32); 5] = [(11, 2), (11, 10), (11, 18), (11, 25), (11, 28)];

/// Runs ingestion and budget evaluation every day from 2 November to 6 December.
async fn month_of_days(pool: &PgPool, shape: Shape, checks: impl Fn(NaiveDate, OpenDays)) -> Seen {
    seed(pool).await;
    let fake = CostExplorerFake::start(items()).await;
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let budget = burnrate::budgets::store::list(&mut pool.acquire().await.expect("conn"))
        .await
        .expect("budgets")
        .remove(0);
    let mut seen = Seen::default();
    for today in day(2026, 11, 2).iter_days().take_while(|d| *d <= day(2026, 12, 6)) {
        fake.with(|s| {
            s.today = Some(today);
            s.open_bill = shape == Shape::OpenBill;
            s.estimated = match shape {
                Shape::OpenBill => Default::default(),
                Shape::RecentDays => (1..=3).map(|n| today - chrono::Days::new(n)).collect(),
            };
        });
        ingest(pool, &ce, today).await;
        burnrate::budgets::evaluate::evaluate(pool, today, None)
            .await
            .expect("evaluate");
        let kinds: Vec<String> = sqlx::query_scalar(
            "select distinct kind from budget_alerts where period_start = '2026-11-01' and percent = 100",
        )
        .fetch_all(pool)
        .await
        .expect("alerts");
        for kind in kinds {
            seen.first_alert.entry(kind).or_insert(today);
        }
        let mut conn = pool.acquire().await.expect("conn");
        if FORECAST_DAYS.iter().any(|(m, d)| day(2026, *m, *d) == today) {
            let status = burnrate::budgets::evaluate::status(&mut conn, &budget, today)
                .await
                .expect("status")
                .status;
            seen.forecasts.insert(today, status.forecast);
            let november = DateRange {
                from: day(2026, 10, 1),
                to: day(2026, 12, 1),
            };
            let open = burnrate::costs::queries::open_days(&mut *conn, november)
                .await
                .expect("open days");
            checks(today, open);
        }
        if [day(2026, 12, 3), day(2026, 12, 6)].contains(&today) {
            let november = DateRange {
                from: day(2026, 11, 1),
                to: day(2026, 12, 1),
            };
            let settled = period_is_closed(&mut conn, november).await.expect("settled");
            let statement = burnrate::statements::store::statement(&mut conn, day(2026, 11, 1), today)
                .await
                .expect("statement");
            seen.settled.insert(today, (settled, statement.frozen_at.is_some()));
        }
    }
    seen
}

/// Both shapes must give these figures.
fn assert_right_figures(seen: &Seen) {
    let d = |text: &str| text.parse::<Decimal>().expect("decimal");
    // On the 2nd and the 10th the settled week is still at $100 a day: 30 × 100.
    assert_eq!(seen.forecasts[&day(2026, 11, 2)], d("3000"));
    assert_eq!(seen.forecasts[&day(2026, 11, 10)], d("3000"));
    // On the 25th the settled week (15th–21st) is all at the new rate: 4,500 through the
    // 21st plus 9 × 300.
    assert_eq!(seen.forecasts[&day(2026, 11, 25)], d("7200"));
    assert_eq!(seen.forecasts[&day(2026, 11, 28)], d("7200"));
    // The forecast crosses $6,000 on the 18th (2,400 through the 14th + 16 × 1,700 / 7);
    // actual spend reaches it only with the 26th's figures, on the 27th.
    assert_eq!(
        seen.first_alert,
        BTreeMap::from([
            ("forecasted".to_string(), day(2026, 11, 18)),
            ("actual".to_string(), day(2026, 11, 27)),
        ])
    );
    // November is still settling on 3 December (its 30th is inside the window), settled and
    // its statement frozen on the 6th.
    assert_eq!(seen.settled[&day(2026, 12, 3)], (false, false));
    assert_eq!(seen.settled[&day(2026, 12, 6)], (true, true));
}

#[sqlx::test]
async fn with_the_whole_open_bill_estimated_the_forecast_follows_the_new_rate(pool: PgPool) {
    let seen = month_of_days(&pool, Shape::OpenBill, |today, open| {
        // Only the last three days are provisional; the rest of the open bill is marked so.
        let window: Vec<NaiveDate> = (1..=3).rev().map(|n| today - chrono::Days::new(n)).collect();
        assert_eq!(open.provisional, window, "{today}");
        if today == day(2026, 11, 2) {
            // October's bill is still open on the 2nd: 1–29 October are on it, settled.
            assert_eq!(open.bill_open.first(), Some(&day(2026, 10, 1)), "{today}");
            assert_eq!(open.bill_open.last(), Some(&day(2026, 10, 29)), "{today}");
        }
        if today == day(2026, 11, 25) {
            assert_eq!(
                open.bill_open.first(),
                Some(&day(2026, 11, 1)),
                "{today}: October closed"
            );
            assert_eq!(open.bill_open.last(), Some(&day(2026, 11, 21)), "{today}");
        }
    })
    .await;
    assert_right_figures(&seen);
}

#[sqlx::test]
async fn with_only_recent_days_estimated_the_figures_are_the_same(pool: PgPool) {
    let seen = month_of_days(&pool, Shape::RecentDays, |today, open| {
        assert!(open.bill_open.is_empty(), "{today}");
        assert_eq!(open.provisional.len(), 3, "{today}");
    })
    .await;
    assert_right_figures(&seen);
}

/// Settled counts from the last fetch, not the clock: while ingestion is stopped, the days
/// it last stored inside the restatement window stay provisional, however late it gets.
#[sqlx::test]
async fn days_stored_partial_stay_provisional_while_ingestion_is_stopped(pool: PgPool) {
    seed(&pool).await;
    let fake = CostExplorerFake::start(items()).await;
    fake.with(|s| s.today = Some(day(2026, 11, 10)));
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    ingest(&pool, &ce, day(2026, 11, 10)).await;
    // Weeks later, nothing has been fetched since the 10th.
    let november = DateRange {
        from: day(2026, 11, 1),
        to: day(2026, 12, 1),
    };
    let mut conn = pool.acquire().await.expect("conn");
    let open = burnrate::costs::queries::open_days(&mut *conn, november)
        .await
        .expect("open days");
    assert_eq!(open.provisional, [day(2026, 11, 7), day(2026, 11, 8), day(2026, 11, 9)]);
    let settled = burnrate::costs::forecast::settled_before(&mut *conn, day(2026, 12, 1))
        .await
        .expect("settled");
    assert_eq!(settled.last_day, Some(day(2026, 11, 6)));
    // A window re-fetched by hand from the past does not settle the recent days.
    let options = RunOptions {
        settings: IngestSettings::default(),
        window: Some(DateRange {
            from: day(2026, 11, 1),
            to: day(2026, 11, 3),
        }),
        today: day(2026, 11, 28),
        backoff: FAST,
    };
    fake.with(|s| s.today = Some(day(2026, 11, 28)));
    run::run(&pool, &ce, Trigger::Cli, &options).await.expect("re-fetched");
    let open = burnrate::costs::queries::open_days(&mut *conn, november)
        .await
        .expect("open days");
    assert_eq!(open.provisional, [day(2026, 11, 7), day(2026, 11, 8), day(2026, 11, 9)]);
    // Nor does a run of yesterday alone: the 7th to the 9th were not fetched again.
    let options = RunOptions {
        window: Some(DateRange {
            from: day(2026, 11, 27),
            to: day(2026, 11, 28),
        }),
        ..options
    };
    run::run(&pool, &ce, Trigger::Cli, &options).await.expect("yesterday");
    let open = burnrate::costs::queries::open_days(&mut *conn, november)
        .await
        .expect("open days");
    assert_eq!(
        open.provisional,
        [day(2026, 11, 7), day(2026, 11, 8), day(2026, 11, 9), day(2026, 11, 27)]
    );
    // A scheduled run re-fetches from the first provisional day, and settles them.
    let options = RunOptions {
        window: None,
        ..options
    };
    run::run(&pool, &ce, Trigger::Cli, &options).await.expect("scheduled");
    let open = burnrate::costs::queries::open_days(&mut *conn, november)
        .await
        .expect("open days");
    assert_eq!(
        open.provisional,
        [day(2026, 11, 25), day(2026, 11, 26), day(2026, 11, 27)]
    );
}
