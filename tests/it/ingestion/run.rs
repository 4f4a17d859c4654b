//! Ingestion through the real AWS SDK against the Cost Explorer fake on loopback.

use crate::common;

use crate::common::ce_fake::{CostExplorerFake, sample_items};
use crate::common::{FAST_BACKOFF as FAST, cost_explorer_at, day};
use burnrate::config::IngestSettings;
use burnrate::ingestion::cost_explorer::CostExplorer;
use burnrate::ingestion::run::{self, Outcome, RunOptions, RunReport, Trigger};
use burnrate::period::DateRange;
use rust_decimal::Decimal;
use sqlx::PgPool;

fn options(window: Option<DateRange>, today: chrono::NaiveDate) -> RunOptions {
    RunOptions {
        settings: IngestSettings::default(),
        window,
        today,
        backoff: FAST,
    }
}

/// The fake with `items`, its clock at `TODAY`, and a client signed as a valid key.
async fn fake_and_client(items: Vec<common::ce_fake::LineItem>) -> (CostExplorerFake, CostExplorer) {
    let fake = CostExplorerFake::start(items).await;
    fake.with(|s| s.today = Some(TODAY));
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    (fake, ce)
}

const TODAY: chrono::NaiveDate = match chrono::NaiveDate::from_ymd_opt(2026, 11, 22) {
    Some(d) => d,
    None => panic!("valid date"),
};

async fn ingest(pool: &PgPool, ce: &CostExplorer, options: &RunOptions) -> Result<RunReport, String> {
    match run::run(pool, ce, Trigger::Cli, options).await {
        Ok(Outcome::Finished(report)) => Ok(report),
        Ok(Outcome::AlreadyRunning) => Err("already running".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// A fingerprint of every fact, rollup and coverage row, to show what did (not) change.
async fn snapshot(pool: &PgPool) -> String {
    sqlx::query_scalar(
        "select md5(coalesce((select string_agg(t::text, '|' order by t::text) from costs_by_user t), '')
                 || coalesce((select string_agg(t::text, '|' order by t::text) from costs_by_usage_type t), '')
                 || coalesce((select string_agg(t::text, '|' order by t::text) from costs_by_service t), '')
                 || coalesce((select string_agg(t::text, '|' order by t::text) from costs_by_account t), '')
                 || coalesce((select string_agg(t::text, '|' order by t::text) from costs_by_account_record_type t), '')
                 || coalesce((select string_agg(t::text, '|' order by t::text) from daily_project_costs t), ''))",
    )
    .fetch_one(pool)
    .await
    .expect("snapshot")
}

async fn table_total(pool: &PgPool, table: &str) -> Decimal {
    sqlx::query_scalar(&format!("select coalesce(sum(unblended), 0) from {table}"))
        .fetch_one(pool)
        .await
        .expect("total")
}

async fn last_run(pool: &PgPool) -> (String, i32, Decimal, Option<String>) {
    sqlx::query_as("select status, requests, api_cost, error from ingestion_runs order by id desc limit 1")
        .fetch_one(pool)
        .await
        .expect("a run is recorded")
}

#[sqlx::test]
async fn a_backfill_reconciles_to_the_cent_in_every_view(pool: PgPool) {
    let today = day(2026, 11, 22);
    let from = day(2026, 11, 1);
    let fake = CostExplorerFake::start(sample_items(from, 21)).await;
    fake.with(|s| {
        s.today = Some(today);
        s.page_size = 25; // forces several pages per group-by pair
    });
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let settings = IngestSettings {
        backfill_since: Some(from),
        ..IngestSettings::default()
    };
    let report = ingest(
        &pool,
        &ce,
        &RunOptions {
            settings,
            ..options(None, today)
        },
    )
    .await
    .expect("ingests");

    assert_eq!(report.window, Some(DateRange { from, to: today }));
    assert_eq!(report.days, 21);
    assert_eq!(
        report.requests as usize,
        fake.request_count(),
        "every request is counted"
    );
    assert!(report.requests > 3, "small pages paginate: {}", report.requests);
    // Each table equals its own Cost Explorer query to the last digit; the rollup is made
    // from the usage-type grain. The grains differ from each other by rounding only.
    for (table, second) in [
        ("costs_by_user", "user"),
        ("costs_by_usage_type", "USAGE_TYPE"),
        ("costs_by_service", "SERVICE"),
        ("costs_by_record_type", "RECORD_TYPE"),
        ("daily_project_costs", "USAGE_TYPE"),
    ] {
        assert_eq!(
            table_total(&pool, table).await,
            fake.total(from, today, second),
            "{table} equals its Cost Explorer query's total"
        );
    }
    // Usage apart from what the bill adds: the sample's credit, refunds and tax.
    let by_record_type: Vec<(String, Decimal)> =
        sqlx::query_as("select record_type, sum(unblended) from costs_by_record_type group by 1 order by 1")
            .fetch_all(&pool)
            .await
            .expect("record types");
    let kinds: Vec<&str> = by_record_type.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["Credit", "Refund", "Tax", "Usage"]);
    assert!(by_record_type[0].1 < Decimal::ZERO && by_record_type[1].1 < Decimal::ZERO);
    assert!(by_record_type[2].1 > Decimal::ZERO && by_record_type[3].1 > Decimal::ZERO);
    let expected = fake.total(from, today, "user");
    assert_ne!(
        expected,
        fake.total(from, today, "SERVICE"),
        "the fake rounds each group, so grains differ in the last digits"
    );
    assert_eq!(report.grain_difference, fake.largest_grain_difference(from, today));
    assert!(report.grain_difference > Decimal::ZERO && report.grain_difference < Decimal::new(1, 8));
    let (status, requests, api_cost, error) = last_run(&pool).await;
    assert_eq!((status.as_str(), error), ("succeeded", None));
    assert_eq!(requests as u32, report.requests);
    assert_eq!(api_cost, Decimal::new(i64::from(report.requests), 2));

    // Untagged spend is kept as '' and tag values verbatim.
    let untagged: i64 = sqlx::query_scalar("select count(*) from costs_by_user where project = '' and user_name = ''")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert!(untagged > 0);
    let hostile: bool =
        sqlx::query_scalar("select exists (select 1 from projects where name = '<img src=x onerror=alert(1)>')")
            .fetch_one(&pool)
            .await
            .expect("exists");
    assert!(hostile);
    // Every grain's request asked for two groups at most, the project tag first; the account
    // views group by the account (and the record type) alone.
    for request in fake
        .with(|s| s.requests.clone())
        .iter()
        .filter(|r| r.operation == "GetCostAndUsage" && r.group_by[0] != "DIMENSION:LINKED_ACCOUNT")
    {
        assert_eq!(request.group_by.len(), 2);
        assert_eq!(request.group_by[0], "TAG:project");
    }
    // The CSV export agrees with Cost Explorer to the cent.
    let csv = burnrate::costs::export::csv(
        &pool,
        DateRange { from, to: today },
        &burnrate::costs::export::parse_keys("project,user").expect("keys"),
        burnrate::costs::export::Granularity::Daily,
        burnrate::period::Metric::Unblended,
    )
    .await
    .expect("csv");
    let csv_total: Decimal = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.rsplit(',')
                .next()
                .and_then(|c| c.parse::<Decimal>().ok())
                .expect("cost column")
        })
        .sum();
    assert_eq!(csv_total, expected);
}

#[sqlx::test]
async fn the_same_ingestion_twice_changes_nothing_and_a_settled_history_costs_eleven_requests(pool: PgPool) {
    let today = day(2026, 11, 22);
    let (fake, ce) = fake_and_client(sample_items(day(2026, 11, 10), 12)).await;
    // A closed bill: no day is Estimated (an open one is re-fetched from its first day).
    fake.with(|s| s.open_bill = false);
    let window = DateRange {
        from: day(2026, 11, 10),
        to: today,
    };
    ingest(&pool, &ce, &options(Some(window), today)).await.expect("first");
    let before = snapshot(&pool).await;
    ingest(&pool, &ce, &options(Some(window), today)).await.expect("second");
    assert_eq!(snapshot(&pool).await, before, "re-ingesting a window is idempotent");

    // A scheduled run on a settled history: the accounts, the two account views, then one
    // request per grain in the one account (it has credits, refunds, tax and GPU usage: four
    // grains of all spend, three by user of one record type and GPU spend by user), the
    // lookback only.
    let requests_before = fake.request_count();
    let report = ingest(&pool, &ce, &options(None, today)).await.expect("incremental");
    assert_eq!(report.requests, 11);
    assert_eq!(fake.request_count() - requests_before, 11);
    assert_eq!(
        report.window,
        Some(DateRange {
            from: day(2026, 11, 19),
            to: today
        })
    );
    assert_eq!(snapshot(&pool).await, before);
}

#[sqlx::test]
async fn estimated_days_are_refetched_until_settled_and_restated_values_replace_old_ones(pool: PgPool) {
    let today = day(2026, 11, 22);
    let from = day(2026, 11, 1);
    let fake = CostExplorerFake::start(sample_items(from, 21)).await;
    fake.with(|s| {
        s.today = Some(today);
        // The old shape, before AWS flagged the whole open bill: only chosen days Estimated.
        s.open_bill = false;
        s.estimated = [day(2026, 11, 12), day(2026, 11, 20), day(2026, 11, 21)].into();
    });
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let first = ingest(&pool, &ce, &options(Some(DateRange { from, to: today }), today))
        .await
        .expect("backfill");
    assert_eq!(first.estimated_days, 3);

    // AWS settles the 12th with a different figure.
    fake.with(|s| {
        s.estimated.remove(&day(2026, 11, 12));
        for item in s.items.iter_mut().filter(|i| i.day == day(2026, 11, 12)) {
            item.unblended += Decimal::new(1, 2);
        }
    });
    let second = ingest(&pool, &ce, &options(None, today)).await.expect("incremental");
    assert_eq!(
        second.window,
        Some(DateRange {
            from: day(2026, 11, 12),
            to: today
        }),
        "the window reaches back to the first Estimated day"
    );
    assert_eq!(
        table_total(&pool, "costs_by_service").await,
        fake.total(from, today, "SERVICE")
    );
    assert_eq!(
        table_total(&pool, "daily_project_costs").await,
        fake.total(from, today, "USAGE_TYPE")
    );
    let still_estimated: Vec<chrono::NaiveDate> =
        sqlx::query_scalar("select day from ingested_days where estimated order by day")
            .fetch_all(&pool)
            .await
            .expect("days");
    assert_eq!(still_estimated, [day(2026, 11, 20), day(2026, 11, 21)]);
}

#[sqlx::test]
async fn throttling_is_retried_with_backoff_then_gives_up_leaving_data_whole(pool: PgPool) {
    let today = day(2026, 11, 22);
    let fake = CostExplorerFake::start(sample_items(day(2026, 11, 15), 7)).await;
    fake.with(|s| {
        s.today = Some(today);
        s.throttle_next = 2;
    });
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let window = Some(DateRange {
        from: day(2026, 11, 15),
        to: today,
    });
    let report = ingest(&pool, &ce, &options(window, today))
        .await
        .expect("succeeds after two throttles");
    // Eleven requests and the two throttled attempts.
    assert_eq!(report.requests, 13, "throttled attempts are counted too");
    let before = snapshot(&pool).await;

    fake.with(|s| s.throttle_next = 100);
    let error = ingest(&pool, &ce, &options(window, today)).await.expect_err("gives up");
    assert!(error.contains("LimitExceededException"), "{error}");
    assert!(error.contains("gave up after 4 attempts"), "{error}");
    assert_eq!(snapshot(&pool).await, before);
    let (status, requests, _, recorded) = last_run(&pool).await;
    assert_eq!((status.as_str(), requests), ("failed", 4));
    assert!(recorded.unwrap_or_default().contains("LimitExceededException"));
}

/// A week already ingested from a fake, for tests of what a later run must not break.
struct Baseline {
    fake: CostExplorerFake,
    ce: CostExplorer,
    window: Option<DateRange>,
    today: chrono::NaiveDate,
    before: String,
}

async fn baseline(pool: &PgPool, items: Vec<common::ce_fake::LineItem>) -> Baseline {
    let today = day(2026, 11, 22);
    let (fake, ce) = fake_and_client(items).await;
    let window = Some(DateRange {
        from: day(2026, 11, 15),
        to: today,
    });
    ingest(pool, &ce, &options(window, today)).await.expect("baseline");
    let before = snapshot(pool).await;
    Baseline {
        fake,
        ce,
        window,
        today,
        before,
    }
}

#[sqlx::test]
async fn each_aws_error_fails_the_run_with_its_message_and_stores_nothing(pool: PgPool) {
    let Baseline {
        fake,
        ce,
        window,
        today,
        before,
    } = baseline(&pool, sample_items(day(2026, 11, 15), 7)).await;

    for (kind, message) in [
        ("ValidationException", "Group by key is invalid"),
        ("DataUnavailableException", "Data is not available"),
        ("BillExpirationException", "The requested report expired"),
        (
            "RequestChangedException",
            "Your request parameters changed between pages",
        ),
        ("InvalidNextTokenException", "The pagination token is invalid."),
    ] {
        fake.with(|s| s.fail_next = Some((kind.into(), message.into())));
        let error = ingest(&pool, &ce, &options(window, today)).await.expect_err(kind);
        assert_eq!(error, format!("{kind}: {message}"));
        assert_eq!(snapshot(&pool).await, before, "{kind} leaves the stored data whole");
        let (status, requests, _, recorded) = last_run(&pool).await;
        assert_eq!((status.as_str(), requests), ("failed", 1), "{kind} is not retried");
        assert_eq!(recorded.as_deref(), Some(error.as_str()));
    }

    let expired = cost_explorer_at(&fake.endpoint(), "EXPIRED").await;
    let error = ingest(&pool, &expired, &options(window, today))
        .await
        .expect_err("expired");
    assert_eq!(
        error,
        "ExpiredTokenException: The security token included in the request is expired"
    );

    // Older than Cost Explorer keeps: AWS's own ValidationException, nothing stored.
    let too_old = Some(DateRange {
        from: day(2025, 9, 1),
        to: today,
    });
    let error = ingest(&pool, &ce, &options(too_old, today)).await.expect_err("too old");
    assert!(
        error.starts_with("ValidationException: start date 2025-09-01 is too old"),
        "{error}"
    );
    assert_eq!(snapshot(&pool).await, before);
}

#[sqlx::test]
async fn malformed_amounts_and_mid_run_restatements_are_rejected_not_stored(pool: PgPool) {
    let items = sample_items(day(2026, 11, 15), 7);
    let Baseline {
        fake,
        ce,
        window,
        today,
        before,
    } = baseline(&pool, items.clone()).await;

    for bad in ["12,50", "NaN", "", "1.2.3"] {
        fake.with(|s| s.corrupt_amount = Some(bad.into()));
        let error = ingest(&pool, &ce, &options(window, today)).await.expect_err(bad);
        assert!(
            error.contains(&format!("metric UnblendedCost has a malformed Amount {bad:?}")),
            "{error}"
        );
        assert_eq!(snapshot(&pool).await, before);
    }
    fake.with(|s| s.corrupt_amount = None);

    let mut restated = items;
    restated[0].unblended += Decimal::new(5, 0);
    fake.with(|s| s.restate_after_first = Some(restated));
    let error = ingest(&pool, &ce, &options(window, today))
        .await
        .expect_err("inconsistent");
    assert!(error.contains("differ between group-bys"), "{error}");
    assert_eq!(
        snapshot(&pool).await,
        before,
        "a view that would not reconcile is not stored"
    );
}

#[sqlx::test]
async fn grains_that_differ_by_less_than_a_cent_are_stored_verbatim_and_the_difference_is_recorded(pool: PgPool) {
    let today = day(2026, 11, 22);
    let from = day(2026, 11, 15);
    let (fake, ce) = fake_and_client(sample_items(from, 7)).await;
    // The service grain reads USD 0.0099 more on every day: still within a cent.
    fake.with(|s| s.skew = vec![("SERVICE".into(), Decimal::new(99, 4))]);
    let window = Some(DateRange { from, to: today });
    let report = ingest(&pool, &ce, &options(window, today))
        .await
        .expect("within a cent");
    let largest = fake.largest_grain_difference(from, today);
    assert!(
        largest > Decimal::new(98, 4) && largest <= Decimal::new(1, 2),
        "{largest}"
    );
    assert_eq!(report.grain_difference, largest);
    assert_eq!(
        table_total(&pool, "costs_by_service").await,
        fake.total(from, today, "SERVICE"),
        "the service grain is stored as answered"
    );
    assert_eq!(
        table_total(&pool, "costs_by_user").await,
        fake.total(from, today, "user")
    );
    let recorded: Option<Decimal> =
        sqlx::query_scalar("select grain_difference from ingestion_runs order by id desc limit 1")
            .fetch_one(&pool)
            .await
            .expect("run");
    assert_eq!(recorded, Some(largest), "the Ingestion page shows it");
}

#[sqlx::test]
async fn grains_that_differ_by_more_than_a_cent_fail_the_run_naming_the_day_and_amounts(pool: PgPool) {
    let Baseline {
        fake,
        ce,
        window,
        today,
        before,
    } = baseline(&pool, sample_items(day(2026, 11, 15), 7)).await;
    // Each grain within a cent of project × user, but 0.012 apart from each other.
    fake.with(|s| {
        s.skew = vec![
            ("USAGE_TYPE".into(), Decimal::new(6, 3)),
            ("SERVICE".into(), Decimal::new(-6, 3)),
        ]
    });
    let error = ingest(&pool, &ce, &options(window, today))
        .await
        .expect_err("over a cent");
    let first_day = fake.total(day(2026, 11, 15), day(2026, 11, 16), "user");
    let skewed = fake.total(day(2026, 11, 15), day(2026, 11, 16), "USAGE_TYPE");
    let service = fake.total(day(2026, 11, 15), day(2026, 11, 16), "SERVICE");
    assert!(
        error.contains(&format!("project × service: unblended {service}")),
        "{error}"
    );
    assert!(
        error.starts_with("Cost Explorer's totals for 2026-11-15 differ between group-bys by more than a cent"),
        "{error}"
    );
    assert!(
        error.contains(&format!("project × user: unblended {first_day}")),
        "{error}"
    );
    assert!(
        error.contains(&format!("project × usage type: unblended {skewed}")),
        "{error}"
    );
    assert_eq!(snapshot(&pool).await, before, "nothing is stored");
    let (status, ..) = last_run(&pool).await;
    assert_eq!(status, "failed");
}

/// The account view takes part in the cross-check: when its daily total is over a cent
/// from the grains', the run fails naming it, and nothing is stored.
#[sqlx::test]
async fn an_account_view_that_disagrees_with_the_grains_fails_the_run(pool: PgPool) {
    let Baseline {
        fake,
        ce,
        window,
        today,
        before,
    } = baseline(&pool, sample_items(day(2026, 11, 15), 7)).await;
    fake.with(|s| s.skew = vec![("LINKED_ACCOUNT".into(), Decimal::new(2, 2))]);
    let error = ingest(&pool, &ce, &options(window, today))
        .await
        .expect_err("over a cent");
    let skewed = fake.account_totals(day(2026, 11, 15), day(2026, 11, 16), &["LINKED_ACCOUNT"]);
    let skewed: Decimal = skewed.values().copied().sum();
    assert!(error.contains(&format!("account: unblended {skewed}")), "{error}");
    assert_eq!(snapshot(&pool).await, before, "nothing is stored");
}

#[sqlx::test]
async fn a_difference_of_exactly_one_cent_is_accepted(pool: PgPool) {
    let today = day(2026, 11, 22);
    let from = day(2026, 11, 20);
    let mut items = sample_items(from, 2);
    // Amounts of whole cents, so AWS's rounding adds nothing and the skew is the difference.
    for item in &mut items {
        item.unblended = item.unblended.round_dp(2);
        item.amortized = item.amortized.round_dp(2);
    }
    let (fake, ce) = fake_and_client(items).await;
    fake.with(|s| s.skew = vec![("USAGE_TYPE".into(), Decimal::new(1, 2))]);
    let report = ingest(&pool, &ce, &options(Some(DateRange { from, to: today }), today))
        .await
        .expect("a cent is within the tolerance");
    assert_eq!(report.grain_difference, Decimal::new(1, 2));
}

#[sqlx::test]
async fn a_group_answered_twice_is_named_and_nothing_is_stored(pool: PgPool) {
    let Baseline {
        fake,
        ce,
        window,
        today,
        before,
    } = baseline(&pool, sample_items(day(2026, 11, 15), 7)).await;
    fake.with(|s| s.duplicate_first_group = true);
    let error = ingest(&pool, &ce, &options(window, today))
        .await
        .expect_err("duplicate");
    assert!(error.starts_with("Cost Explorer returned the group"), "{error}");
    // The account views are asked first, so the first group twice is theirs.
    assert!(error.contains("twice for 2026-11-15 in its account view"), "{error}");
    assert_eq!(snapshot(&pool).await, before);
}

#[sqlx::test]
async fn an_explicit_window_past_today_stops_at_yesterday(pool: PgPool) {
    let today = day(2026, 11, 22);
    let from = day(2026, 11, 18);
    let (fake, ce) = fake_and_client(sample_items(from, 6)).await;
    let report = ingest(
        &pool,
        &ce,
        &options(
            Some(DateRange {
                from,
                to: day(2026, 11, 24),
            }),
            today,
        ),
    )
    .await
    .expect("clipped");
    assert_eq!(report.window, Some(DateRange { from, to: today }));
    assert_eq!(report.clipped_from, Some(day(2026, 11, 24)));
    assert!(report.to_string().contains("stops at yesterday"), "{report}");
    for request in fake.with(|s| s.requests.clone()) {
        assert_eq!(request.end, "2026-11-22", "today is never asked for");
    }
    let stored_today: i64 = sqlx::query_scalar("select count(*) from costs_by_user where day >= $1")
        .bind(today)
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(stored_today, 0);

    let error = ingest(
        &pool,
        &ce,
        &options(
            Some(DateRange {
                from: today,
                to: day(2026, 11, 23),
            }),
            today,
        ),
    )
    .await
    .expect_err("only today");
    assert!(error.contains("only days before today"), "{error}");
}

#[sqlx::test]
async fn a_second_run_while_one_holds_the_lock_touches_nothing(pool: PgPool) {
    let today = day(2026, 11, 22);
    let (fake, ce) = fake_and_client(sample_items(day(2026, 11, 15), 7)).await;
    let mut holder = pool.acquire().await.expect("connection");
    let held: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(run::LOCK_KEY)
        .fetch_one(&mut *holder)
        .await
        .expect("lock");
    assert!(held);
    let outcome = run::run(&pool, &ce, Trigger::Schedule, &options(None, today))
        .await
        .expect("no error");
    assert_eq!(outcome, Outcome::AlreadyRunning);
    assert_eq!(fake.request_count(), 0);
    let runs: i64 = sqlx::query_scalar("select count(*) from ingestion_runs")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(runs, 0);
}

#[sqlx::test]
async fn tag_values_with_control_characters_and_backslashes_are_stored_verbatim(pool: PgPool) {
    let today = day(2026, 11, 22);
    let odd = "tab\there\nnew\\line \\N \r ü \"q\" 'q' <b>";
    let mut items = sample_items(day(2026, 11, 20), 2);
    for item in &mut items {
        item.project = Some(odd.to_string());
        item.user = Some(format!("{odd}-user"));
    }
    let (_fake, ce) = fake_and_client(items).await;
    ingest(
        &pool,
        &ce,
        &options(
            Some(DateRange {
                from: day(2026, 11, 20),
                to: today,
            }),
            today,
        ),
    )
    .await
    .expect("ingests");
    let stored: Vec<(String, String)> = sqlx::query_as("select distinct project, user_name from costs_by_user")
        .fetch_all(&pool)
        .await
        .expect("rows");
    assert_eq!(stored, [(odd.to_string(), format!("{odd}-user"))]);
}
