//! Linked accounts (#33): a management account's Cost Explorer sees every member account's
//! spend. Each fact is fetched per account (a LINKED_ACCOUNT filter, under And with
//! RECORD_TYPE for the grains of one record type), stored with its account, and each view
//! still equals its own query's total to the last digit. Names come from GetDimensionValues.
//! A database from before accounts keeps its history: the first run after the upgrade fetches
//! again the days Cost Explorer still keeps, and older days stay, without an account.

use std::borrow::Cow;

use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::ce_fake::{CostExplorerFake, LineItem, sample_items};
use crate::common::{FAST_BACKOFF, cost_explorer_at, day};
use burnrate::config::IngestSettings;
use burnrate::ingestion::run::{self, Outcome, RunOptions, RunReport, Trigger};
use burnrate::period::DateRange;

const RESEARCH: &str = "518273640931";
const SERVING: &str = "730495862153";

/// The sample spend split over two member accounts: every second day's `rlhf-eval` line and
/// all untagged spend in serving-prod, the rest in research-prod.
fn two_accounts(from: chrono::NaiveDate, days: u32) -> Vec<LineItem> {
    sample_items(from, days)
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let serving = item.project.is_none() || (item.project.as_deref() == Some("rlhf-eval") && i % 2 == 0);
            LineItem {
                account: if serving { SERVING } else { RESEARCH }.into(),
                ..item
            }
        })
        .collect()
}

async fn ingest(pool: &PgPool, fake: &CostExplorerFake, window: Option<DateRange>) -> RunReport {
    ingest_on(pool, fake, window, day(2026, 11, 20)).await
}

async fn ingest_on(
    pool: &PgPool,
    fake: &CostExplorerFake,
    window: Option<DateRange>,
    today: chrono::NaiveDate,
) -> RunReport {
    let ce = cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let options = RunOptions {
        settings: IngestSettings::default(),
        window,
        today,
        backoff: FAST_BACKOFF,
    };
    match run::run(pool, &ce, Trigger::Cli, &options).await.expect("ingests") {
        Outcome::Finished(report) => report,
        Outcome::AlreadyRunning => panic!("not locked"),
    }
}

/// The window's unblended spend exported by `keys`, one row per month.
async fn monthly_export(pool: &PgPool, window: DateRange, keys: &str) -> String {
    burnrate::costs::export::csv(
        pool,
        window,
        &burnrate::costs::export::parse_keys(keys).expect("keys"),
        burnrate::costs::export::Granularity::Monthly,
        burnrate::period::Metric::Unblended,
    )
    .await
    .expect("csv")
}

async fn stored_total(pool: &PgPool, table: &str, account: &str) -> Decimal {
    sqlx::query_scalar(&format!(
        "select coalesce(sum(unblended), 0) from {table} where account_id = $1"
    ))
    .bind(account)
    .fetch_one(pool)
    .await
    .expect("total")
}

#[sqlx::test]
async fn every_fact_carries_its_account_and_each_account_reconciles_with_its_own_query(pool: PgPool) {
    let from = day(2026, 11, 1);
    let fake = CostExplorerFake::start(two_accounts(from, 3)).await;
    fake.with(|s| {
        s.today = Some(day(2026, 11, 20));
        s.account_names.insert(RESEARCH.into(), "research-prod".into());
        s.account_names.insert(SERVING.into(), "serving-prod <script>".into());
        // Two accounts on two pages: the names are read page by page.
        s.page_size = 1;
    });
    let window = DateRange {
        from,
        to: day(2026, 11, 4),
    };
    let report = ingest(&pool, &fake, Some(window)).await;

    // Names as Cost Explorer gave them (escaped where they are shown, not here).
    let names: Vec<(String, String)> = sqlx::query_as("select account_id, name from aws_accounts order by 1")
        .fetch_all(&pool)
        .await
        .expect("names");
    assert_eq!(
        names,
        vec![
            (RESEARCH.to_string(), "research-prod".to_string()),
            (SERVING.to_string(), "serving-prod <script>".to_string())
        ]
    );
    // Every fact has an account, and every grain's total in each account is what Cost
    // Explorer answers for that account alone.
    let unset: i64 = sqlx::query_scalar(
        "select (select count(*) from costs_by_user where account_id = '')
              + (select count(*) from costs_by_usage_type where account_id = '')
              + (select count(*) from costs_by_service where account_id = '')
              + (select count(*) from costs_by_record_type where account_id = '')
              + (select count(*) from costs_by_user_credit where account_id = '')
              + (select count(*) from costs_by_user_refund where account_id = '')
              + (select count(*) from costs_by_user_tax where account_id = '')
              + (select count(*) from costs_by_user_gpu where account_id = '')",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(unset, 0);
    for (table, second) in [
        ("costs_by_user", "user"),
        ("costs_by_usage_type", "USAGE_TYPE"),
        ("costs_by_service", "SERVICE"),
        ("costs_by_record_type", "RECORD_TYPE"),
    ] {
        for account in [RESEARCH, SERVING] {
            let expected = fake.with(|s| {
                let only: Vec<LineItem> = s.items.iter().filter(|i| i.account == account).cloned().collect();
                crate::common::ce_fake::total_of(&only, window.from, window.to, second)
            });
            assert_eq!(
                stored_total(&pool, table, account).await,
                expected,
                "{table} in {account}"
            );
        }
    }
    // Each per-user grain of one record type was asked (each chain's first page) only of the
    // accounts whose account view has that record type, under And with it: the credit is
    // research's, the refunds and tax serving's.
    let asked = |record_type: &str| -> Vec<Option<Vec<String>>> {
        fake.with(|s| {
            s.requests
                .iter()
                .filter(|r| !r.paged && r.record_types.as_deref() == Some(&[record_type.to_string()][..]))
                .map(|r| r.accounts.clone())
                .collect()
        })
    };
    assert_eq!(asked("Credit"), vec![Some(vec![RESEARCH.to_string()])]);
    assert_eq!(asked("Refund"), vec![Some(vec![SERVING.to_string()])]);
    assert_eq!(asked("Tax"), vec![Some(vec![SERVING.to_string()])]);
    // The GPU spend by user, asked of each account with GPU usage, filtered to the GPU usage
    // types its usage-type grain named, and stored as Cost Explorer answered it.
    type AccountsAndUsageTypes = (Option<Vec<String>>, Option<Vec<String>>);
    let gpu_asked: Vec<AccountsAndUsageTypes> = fake.with(|s| {
        s.requests
            .iter()
            .filter(|r| !r.paged && r.usage_types.is_some())
            .map(|r| (r.accounts.clone(), r.usage_types.clone()))
            .collect()
    });
    let gpu_types = vec![
        "USE1-BoxUsage:p4d.24xlarge".to_string(),
        "USE1-SpotUsage:g5.xlarge".to_string(),
    ];
    assert_eq!(
        gpu_asked,
        vec![
            (Some(vec![RESEARCH.to_string()]), Some(gpu_types.clone())),
            (Some(vec![SERVING.to_string()]), Some(gpu_types.clone()))
        ]
    );
    for account in [RESEARCH, SERVING] {
        let expected = fake.with(|s| {
            let only: Vec<LineItem> = s
                .items
                .iter()
                .filter(|i| i.account == account && gpu_types.contains(&i.usage_type))
                .cloned()
                .collect();
            crate::common::ce_fake::total_of(&only, window.from, window.to, "user")
        });
        assert!(expected > Decimal::ZERO);
        assert_eq!(
            stored_total(&pool, "costs_by_user_gpu", account).await,
            expected,
            "{account}"
        );
    }
    // At one group per page, the report counts every page; only the two account views (their
    // first pages) were asked unfiltered, grouped by the account.
    assert_eq!(report.requests as usize, fake.request_count());
    let unfiltered: Vec<Vec<String>> = fake.with(|s| {
        s.requests
            .iter()
            .filter(|r| r.operation == "GetCostAndUsage" && r.accounts.is_none() && !r.paged)
            .map(|r| r.group_by.clone())
            .collect()
    });
    assert_eq!(
        unfiltered,
        vec![
            vec!["DIMENSION:LINKED_ACCOUNT".to_string()],
            vec![
                "DIMENSION:LINKED_ACCOUNT".to_string(),
                "DIMENSION:RECORD_TYPE".to_string()
            ]
        ]
    );

    // The export groups by account and its name, each account's total equal to Cost
    // Explorer's LINKED_ACCOUNT query to the last digit, not to a sum over a project grain
    // (AWS rounds each group on its own, so those differ in the last digits).
    let csv = monthly_export(&pool, window, "account,account_name").await;
    let by_account = fake.account_totals(window.from, window.to, &["LINKED_ACCOUNT"]);
    let account_total = |account: &str| by_account[&vec![account.to_string()]];
    let service_total = |account: &str| {
        fake.with(|s| {
            let only: Vec<LineItem> = s.items.iter().filter(|i| i.account == account).cloned().collect();
            crate::common::ce_fake::total_of(&only, window.from, window.to, "SERVICE")
        })
    };
    assert_ne!(
        account_total(RESEARCH),
        service_total(RESEARCH),
        "the fake rounds per group"
    );
    let rows: Vec<(String, String, String, Decimal)> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let cost = cells[3].parse::<Decimal>().expect("exact decimal");
            (cells[0].to_string(), cells[1].to_string(), cells[2].to_string(), cost)
        })
        .collect();
    assert_eq!(csv.lines().next(), Some("date,account,account_name,cost"));
    assert_eq!(
        rows,
        vec![
            (
                "2026-11-01".to_string(),
                RESEARCH.to_string(),
                "research-prod".to_string(),
                account_total(RESEARCH)
            ),
            (
                "2026-11-01".to_string(),
                SERVING.to_string(),
                "serving-prod <script>".to_string(),
                account_total(SERVING)
            ),
        ]
    );
    // By account and record type: Cost Explorer's LINKED_ACCOUNT × RECORD_TYPE query, group
    // by group.
    let csv = monthly_export(&pool, window, "account,record_type").await;
    let exported: std::collections::BTreeMap<Vec<String>, Decimal> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                vec![cells[1].to_string(), cells[2].to_string()],
                cells[3].parse::<Decimal>().expect("exact decimal"),
            )
        })
        .collect();
    assert_eq!(
        exported,
        fake.account_totals(window.from, window.to, &["LINKED_ACCOUNT", "RECORD_TYPE"])
    );
}

/// An account `GetDimensionValues` leaves out is caught by the account views: its spend is
/// fetched and stored like the others', and it is recorded without a name.
#[sqlx::test]
async fn an_account_the_listing_leaves_out_is_still_fetched(pool: PgPool) {
    let from = day(2026, 11, 1);
    let fake = CostExplorerFake::start(two_accounts(from, 3)).await;
    fake.with(|s| {
        s.today = Some(day(2026, 11, 20));
        s.account_names.insert(RESEARCH.into(), "research-prod".into());
        s.unlisted.insert(SERVING.into());
    });
    let window = DateRange {
        from,
        to: day(2026, 11, 4),
    };
    ingest(&pool, &fake, Some(window)).await;
    let names: Vec<(String, String)> = sqlx::query_as("select account_id, name from aws_accounts order by 1")
        .fetch_all(&pool)
        .await
        .expect("names");
    assert_eq!(
        names,
        vec![
            (RESEARCH.to_string(), "research-prod".to_string()),
            (SERVING.to_string(), String::new())
        ]
    );
    let serving_items = fake.with(|s| {
        s.items
            .iter()
            .filter(|i| i.account == SERVING)
            .cloned()
            .collect::<Vec<LineItem>>()
    });
    assert_eq!(
        stored_total(&pool, "costs_by_service", SERVING).await,
        crate::common::ce_fake::total_of(&serving_items, window.from, window.to, "SERVICE")
    );
    // And the export by account has it, as Cost Explorer's account view does.
    let by_account: Decimal = sqlx::query_scalar("select sum(unblended) from costs_by_account where account_id = $1")
        .bind(SERVING)
        .fetch_one(&pool)
        .await
        .expect("total");
    assert_eq!(
        by_account,
        fake.account_totals(window.from, window.to, &["LINKED_ACCOUNT"])[&vec![SERVING.to_string()]]
    );
}

/// The migrations before linked accounts, then old-shaped facts, then the rest: what an
/// upgrade finds.
async fn database_before_accounts(pool: &PgPool) {
    let mut before = sqlx::migrate!();
    before.migrations = Cow::Owned(
        before
            .migrations
            .iter()
            .filter(|m| m.version < 20261201010000)
            .cloned()
            .collect(),
    );
    before.run(pool).await.expect("old migrations");
    let run_id: i64 = sqlx::query_scalar(
        "insert into ingestion_runs (trigger, status, window_from, window_to)
         values ('cli', 'succeeded', '2025-09-15', '2026-11-06') returning id",
    )
    .fetch_one(pool)
    .await
    .expect("old run");
    // A service fact on a day stored before record types were read (it has no record type).
    sqlx::query(
        "insert into costs_by_service (day, project, service, unblended, amortized, usage_quantity, estimated)
         values ('2025-08-01', 'llm-finetune', 'Amazon Elastic Compute Cloud - Compute', 123.45, 123.45, 24, false)",
    )
    .execute(pool)
    .await
    .expect("a fact from before record types");
    // One fact per grain on a day Cost Explorer no longer keeps, and on two it does.
    for on in [day(2025, 9, 15), day(2026, 10, 15), day(2026, 11, 5)] {
        for (table, column, value) in [
            ("costs_by_user", "user_name", "alice"),
            ("costs_by_usage_type", "usage_type", "USE1-BoxUsage:p4d.24xlarge"),
            ("costs_by_service", "service", "Amazon Elastic Compute Cloud - Compute"),
            ("costs_by_record_type", "record_type", "Usage"),
        ] {
            sqlx::query(&format!(
                "insert into {table} (day, project, {column}, unblended, amortized, usage_quantity, estimated)
                 values ($1, 'llm-finetune', $2, 123.45, 123.45, 24, false)"
            ))
            .bind(on)
            .bind(value)
            .execute(pool)
            .await
            .expect("old fact");
        }
        sqlx::query("insert into ingested_days (day, estimated, run_id) values ($1, false, $2)")
            .bind(on)
            .bind(run_id)
            .execute(pool)
            .await
            .expect("old day");
    }
    sqlx::migrate!().run(pool).await.expect("upgrade");
}

#[sqlx::test(migrations = false)]
async fn an_upgraded_database_gets_its_accounts_without_losing_history(pool: PgPool) {
    database_before_accounts(&pool).await;
    // The migration that keeps the rollup per account writes it again in its own
    // transaction: budgets and enforcement judged right after it never see it empty.
    let rollup: (i64, Option<Decimal>) = sqlx::query_as("select count(*), sum(unblended) from daily_project_costs")
        .fetch_one(&pool)
        .await
        .expect("rollup");
    assert_eq!(rollup, (3, Some(Decimal::new(37035, 2))));
    let stored: Vec<(String, Decimal)> =
        sqlx::query_as("select account_id, unblended from costs_by_usage_type order by day")
            .fetch_all(&pool)
            .await
            .expect("facts");
    assert_eq!(
        stored,
        vec![(String::new(), Decimal::new(12345, 2)); 3],
        "kept, without an account"
    );
    // The account views begin as the grains' sums: the account view from the service grain
    // (also on the day stored before record types, which has none), the record types from
    // theirs.
    let views: (i64, Decimal, i64) = sqlx::query_as(
        "select (select count(*) from costs_by_account where account_id = ''),
                (select sum(unblended) from costs_by_account),
                (select count(*) from costs_by_account_record_type)",
    )
    .fetch_one(&pool)
    .await
    .expect("views");
    assert_eq!(views, (4, Decimal::new(49380, 2), 3));

    // Cost Explorer keeps daily data from 2025-10-01 (13 months before November 2026).
    let fake = CostExplorerFake::start(two_accounts(day(2026, 10, 1), 50)).await;
    fake.with(|s| s.today = Some(day(2026, 11, 20)));
    let report = ingest(&pool, &fake, None).await;
    // The first run goes back to the first day without accounts it can still fetch.
    assert_eq!(
        report.window,
        Some(DateRange {
            from: day(2026, 10, 15),
            to: day(2026, 11, 20)
        })
    );
    let without: Vec<(chrono::NaiveDate, Decimal)> =
        sqlx::query_as("select day, unblended from costs_by_usage_type where account_id = '' order by day")
            .fetch_all(&pool)
            .await
            .expect("old facts");
    assert_eq!(
        without,
        vec![(day(2025, 9, 15), Decimal::new(12345, 2))],
        "only what Cost Explorer no longer keeps stays without an account, as it was"
    );
    let fetched: i64 =
        sqlx::query_scalar("select count(*) from ingested_days where day >= '2025-10-01' and not with_accounts")
            .fetch_one(&pool)
            .await
            .expect("days");
    assert_eq!(fetched, 0);

    // The next run is an ordinary one: the open bill (November, Estimated from the 1st).
    let next = ingest(&pool, &fake, None).await;
    assert_eq!(next.window.map(|w| w.from), Some(day(2026, 11, 1)));
}

/// One user's usage and credit in two accounts on the same day: the allocation splits each
/// account's part of the project by that account's users, so the user's team gets exactly
/// their net spend (joining the grains across accounts would count each of their rows
/// against the other's).
#[sqlx::test]
async fn a_user_in_two_accounts_is_weighed_once(pool: PgPool) {
    let on = day(2026, 11, 10);
    let line = |account: &str, user: &str, record_type: &str, amount: i64| LineItem {
        day: on,
        account: account.into(),
        project: Some("shared-gpu".into()),
        user: Some(user.into()),
        usage_type: "USE1-BoxUsage:g5.xlarge".into(),
        service: "Amazon Elastic Compute Cloud - Compute".into(),
        record_type: record_type.into(),
        unblended: Decimal::from(amount),
        amortized: Decimal::from(amount),
        quantity: Decimal::ONE,
    };
    let fake = CostExplorerFake::start(vec![
        line(RESEARCH, "alice", "Usage", 100),
        line(SERVING, "alice", "Usage", 50),
        line(RESEARCH, "alice", "Credit", -20),
        line(SERVING, "alice", "Credit", -10),
        line(SERVING, "bob", "Usage", 30),
    ])
    .await;
    fake.with(|s| s.today = Some(day(2026, 11, 20)));
    crate::common::import_config(&pool, "teams:\n  - name: ml-research\n    users: [alice]\n").await;
    ingest(
        &pool,
        &fake,
        Some(DateRange {
            from: on,
            to: on + chrono::Days::new(1),
        }),
    )
    .await;
    // alice: 150 of usage and 30 of credits, net 120; bob's 30 is nobody's.
    let parts: Vec<(Option<String>, Decimal, Decimal)> = sqlx::query_as(
        "select t.name, sum(a.unblended), sum(a.credit_unblended)
         from allocated_daily_costs a left join teams t on t.id = a.team_id group by 1 order by 1",
    )
    .fetch_all(&pool)
    .await
    .expect("allocation");
    assert_eq!(
        parts,
        vec![
            (Some("ml-research".to_string()), Decimal::from(120), Decimal::from(-30)),
            (None, Decimal::from(30), Decimal::ZERO),
        ]
    );
}

/// Allocated spend per team and step, and the page rollup's per team: the two must agree.
async fn by_team_and_source(pool: &PgPool) -> Vec<(Option<String>, String, Decimal)> {
    let sums = |table: &'static str| async move {
        sqlx::query_as::<_, (Option<String>, String, Decimal)>(&format!(
            "select t.name, a.source, sum(a.unblended) from {table} a left join teams t on t.id = a.team_id
             group by 1, 2 order by 1, 2"
        ))
        .fetch_all(pool)
        .await
        .expect(table)
    };
    let allocated = sums("allocated_daily_costs").await;
    assert_eq!(
        allocated,
        sums("team_daily_costs").await,
        "the page rollup follows the allocation"
    );
    assert_eq!(
        allocated,
        sums("team_account_daily_costs").await,
        "the rollup by account follows the allocation"
    );
    allocated
}

/// The account → team step: after project owners and user tags, before shared-cost rules,
/// the untagged and unclaimed spend in a team's account is that team's. Moving the account
/// moves exactly that spend; the export keeps the mapping; the Team page lists it.
/// Teams ml-research (user alice, account research-prod) and web (project web-api, or
/// research-prod too when `research_team` is "web").
fn teams_mapping(research_team: &str) -> burnrate::as_code::ConfigFile {
    let (ml, web) = match research_team {
        "ml-research" => (format!("    accounts: [\"{RESEARCH}\"]\n"), String::new()),
        _ => (String::new(), format!("    accounts: [{RESEARCH}]\n")),
    };
    burnrate::as_code::parse(&format!(
        "teams:\n  - name: ml-research\n    users: [alice]\n{ml}  - name: web\n    projects: [web-api]\n{web}"
    ))
    .expect("valid")
}

/// One day of g5 spend on `on` in two accounts, ingested with ml-research owning
/// research-prod: untagged 100, shared-gpu by alice 40 and bob 60, web-api 5 in research;
/// untagged 50 and web-api 30 in serving.
async fn research_and_serving(pool: &PgPool, on: chrono::NaiveDate) {
    let today = chrono::Utc::now().date_naive();
    let line = |account: &str, project: Option<&str>, user: Option<&str>, amount: i64| LineItem {
        day: on,
        account: account.into(),
        project: project.map(str::to_string),
        user: user.map(str::to_string),
        usage_type: "USE1-BoxUsage:g5.xlarge".into(),
        service: "Amazon Elastic Compute Cloud - Compute".into(),
        record_type: "Usage".into(),
        unblended: Decimal::from(amount),
        amortized: Decimal::from(amount),
        quantity: Decimal::ONE,
    };
    let fake = CostExplorerFake::start(vec![
        line(RESEARCH, None, None, 100),
        line(RESEARCH, Some("shared-gpu"), Some("alice"), 40),
        line(RESEARCH, Some("shared-gpu"), Some("bob"), 60),
        line(RESEARCH, Some("web-api"), None, 5),
        line(SERVING, None, None, 50),
        line(SERVING, Some("web-api"), None, 30),
    ])
    .await;
    fake.with(|s| {
        s.today = Some(today);
        s.account_names.insert(SERVING.into(), "serving-prod <script>".into());
    });
    let actor = burnrate::audit_log::Actor::system("test");
    burnrate::as_code::apply(pool, &actor, &teams_mapping("ml-research"), false)
        .await
        .expect("teams");
    ingest_on(
        pool,
        &fake,
        Some(DateRange {
            from: on,
            to: on + chrono::Days::new(1),
        }),
        today,
    )
    .await;
}

#[sqlx::test]
async fn unclaimed_spend_in_a_teams_account_is_that_teams(pool: PgPool) {
    let on = chrono::Utc::now().date_naive() - chrono::Days::new(2);
    research_and_serving(&pool, on).await;
    let actor = burnrate::audit_log::Actor::system("test");
    let row = |team: Option<&str>, source: &str, amount: i64| {
        (team.map(str::to_string), source.to_string(), Decimal::from(amount))
    };
    // alice's 40 by her tag; the untagged 100 and bob's 60 in research-prod by its account;
    // web-api is web's in both accounts; serving-prod's untagged 50 is nobody's.
    assert_eq!(
        by_team_and_source(&pool).await,
        [
            row(Some("ml-research"), "account", 160),
            row(Some("ml-research"), "user", 40),
            row(Some("web"), "direct", 35),
            row(None, "unassigned", 50),
        ]
    );
    let mut conn = pool.acquire().await.expect("connection");
    let unmapped = burnrate::teams::store::unmapped(&mut conn).await.expect("unmapped");
    let accounts: Vec<(&str, &str, Decimal)> = unmapped
        .iter()
        .filter(|u| u.kind == "account")
        .map(|u| (u.name.as_str(), u.detail.as_str(), u.spend_30d))
        .collect();
    assert_eq!(accounts, [(SERVING, "serving-prod <script>", Decimal::from(50))]);
    drop(conn);

    // The Team page lists its account, with the team's spend in each account.
    let range = DateRange {
        from: on,
        to: on + chrono::Days::new(1),
    };
    let basis = burnrate::period::Basis::from(burnrate::period::Metric::Unblended);
    let team = burnrate::dashboard::model::Scope::Team("ml-research".into());
    let lines = burnrate::dashboard::reads::aws_accounts::by_account(&pool, &team, range, basis)
        .await
        .expect("accounts");
    let lines: Vec<(&str, bool, Decimal)> = lines.iter().map(|l| (l.id.as_str(), l.mapped, l.spend)).collect();
    assert_eq!(lines, [(RESEARCH, true, Decimal::from(200))]);
    // A project in two accounts is one point a day on its page's chart, and two accounts.
    let web_api = burnrate::dashboard::reads::scope_figures::project(&pool, "web-api", range, basis)
        .await
        .expect("figures");
    assert_eq!(web_api.daily, [(on, "web-api".to_string(), Decimal::from(35))]);
    let project = burnrate::dashboard::model::Scope::Project("web-api".into());
    let lines = burnrate::dashboard::reads::aws_accounts::by_account(&pool, &project, range, basis)
        .await
        .expect("accounts");
    let lines: Vec<(&str, Decimal)> = lines.iter().map(|l| (l.id.as_str(), l.spend)).collect();
    assert_eq!(lines, [(SERVING, Decimal::from(30)), (RESEARCH, Decimal::from(5))]);

    // The export by team and account is the allocation, as the Team page shows it.
    let csv = burnrate::costs::export::csv(
        &pool,
        range,
        &burnrate::costs::export::parse_keys("team,account").expect("keys"),
        burnrate::costs::export::Granularity::Daily,
        burnrate::period::Metric::Unblended,
    )
    .await
    .expect("csv");
    let rows: Vec<(String, String, Decimal)> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[1].to_string(),
                cells[2].to_string(),
                cells[3].parse().expect("amount"),
            )
        })
        .collect();
    let csv_row =
        |team: &str, account: &str, amount: i64| (team.to_string(), account.to_string(), Decimal::from(amount));
    assert_eq!(
        rows,
        [
            csv_row("Unassigned", SERVING, 50),
            csv_row("ml-research", RESEARCH, 200),
            csv_row("web", RESEARCH, 5),
            csv_row("web", SERVING, 30),
        ]
    );

    // The mapping is config: exported, and moving it moves exactly what it claimed.
    let exported = burnrate::as_code::export(&pool).await.expect("export");
    assert!(
        exported.contains(&format!("    accounts: [\"{RESEARCH}\"]\n")),
        "{exported}"
    );
    burnrate::as_code::apply(&pool, &actor, &teams_mapping("web"), false)
        .await
        .expect("move the account");
    assert_eq!(
        by_team_and_source(&pool).await,
        [
            row(Some("ml-research"), "user", 40),
            row(Some("web"), "account", 160),
            row(Some("web"), "direct", 35),
            row(None, "unassigned", 50),
        ]
    );
}

/// A budget on one linked account counts that account's whole spend, and only it; the
/// teams file carries it, and a bad ID is refused naming the line.
#[sqlx::test]
async fn a_budget_on_an_account_counts_that_accounts_spend(pool: PgPool) {
    let fake = CostExplorerFake::start(two_accounts(day(2026, 11, 1), 19)).await;
    fake.with(|s| s.today = Some(day(2026, 11, 20)));
    ingest(&pool, &fake, None).await;
    let file = format!(
        "budgets:\n  - name: research-prod\n    scope: {{account: \"{RESEARCH}\"}}\n    period: monthly\n    amount: \"1000\"\n    metric: unblended\n"
    );
    let actor = burnrate::audit_log::Actor::system("test");
    burnrate::as_code::apply(&pool, &actor, &burnrate::as_code::parse(&file).expect("valid"), false)
        .await
        .expect("budget");
    let mut conn = pool.acquire().await.expect("connection");
    let budgets = burnrate::budgets::store::list(&mut conn).await.expect("budgets");
    let standing = burnrate::budgets::evaluate::status(&mut conn, &budgets[0], day(2026, 11, 20))
        .await
        .expect("status");
    // The account's facts for November, as Cost Explorer answered them for that account.
    let expected = stored_total(&pool, "costs_by_usage_type", RESEARCH).await;
    assert!(expected > Decimal::ZERO && stored_total(&pool, "costs_by_usage_type", SERVING).await > Decimal::ZERO);
    assert_eq!(standing.status.spend, expected);
    drop(conn);
    let exported = burnrate::as_code::export(&pool).await.expect("export");
    assert!(
        exported.contains(&format!("scope: {{account: \"{RESEARCH}\"}}")),
        "{exported}"
    );

    let bad = burnrate::as_code::parse(&file.replace(RESEARCH, "5182-7364-0931")).expect_err("bad id");
    assert!(bad[0].to_string().contains("not an AWS account ID"), "{bad:?}");
}

/// Days allocated before the allocation kept accounts (their rows say account '', as the
/// upgrade leaves them) are allocated again at the next start, per account, with the same
/// totals; a day whose rollup has no account (older history) is left as it is.
#[sqlx::test]
async fn days_allocated_before_accounts_are_allocated_again_per_account(pool: PgPool) {
    let fake = CostExplorerFake::start(two_accounts(day(2026, 11, 1), 19)).await;
    fake.with(|s| s.today = Some(day(2026, 11, 20)));
    ingest(&pool, &fake, None).await;
    let by_account = |pool: PgPool| async move {
        sqlx::query_as::<_, (String, Decimal)>(
            "select account_id, sum(unblended) from allocated_daily_costs group by 1 order by 1",
        )
        .fetch_all(&pool)
        .await
        .expect("allocation")
    };
    let before = by_account(pool.clone()).await;
    assert_eq!(before.len(), 2, "{before:?}");
    sqlx::query("update allocated_daily_costs set account_id = ''")
        .execute(&pool)
        .await
        .expect("as the upgrade leaves them");
    assert!(
        burnrate::allocation::store::fill_gaps_in_transaction(&pool)
            .await
            .expect("fill")
    );
    assert_eq!(by_account(pool.clone()).await, before);
    assert!(
        !burnrate::allocation::store::fill_gaps_in_transaction(&pool)
            .await
            .expect("fill"),
        "nothing left to do"
    );
}

/// `?account=` on every cost page (#33): a team's totals, allocation steps and breakdowns, a
/// project's, the export, the statement, the Statements list and the Savings filter are that
/// account's figures alone, through the same routes the pages use.
#[sqlx::test]
async fn every_cost_page_narrows_to_one_account(pool: PgPool) {
    use burnrate::dashboard::model::Scope;
    use burnrate::dashboard::reads::breakdown;
    use burnrate::period::{AwsAccountId, Metric, Period};
    let today = chrono::Utc::now().date_naive();
    // The last day of the month before last: settled, so its month's statement is final.
    let this_month = today - chrono::Days::new(u64::from(chrono::Datelike::day(&today)) - 1);
    let on = this_month - chrono::Months::new(1) - chrono::Days::new(1);
    research_and_serving(&pool, on).await;
    let range = DateRange {
        from: on,
        to: on + chrono::Days::new(1),
    };
    let (serving, research) = (
        AwsAccountId::parse(SERVING).expect("id"),
        AwsAccountId::parse(RESEARCH).expect("id"),
    );
    let page = |scope: Scope, account: Option<AwsAccountId>| {
        let pool = pool.clone();
        async move {
            breakdown::scope_in(
                &pool,
                scope,
                Period::Custom(range),
                Metric::Unblended,
                today,
                account.as_ref(),
            )
            .await
            .expect("page")
        }
    };
    let lines = |lines: &[burnrate::dashboard::model::Line]| -> Vec<(String, Decimal)> {
        lines.iter().map(|l| (l.key.clone(), l.spend)).collect()
    };
    let usd = |amount: i64| Decimal::from(amount);

    // Team web: its project's 30 in serving-prod, 5 in research-prod, 35 in all.
    let web = page(Scope::Team("web".into()), Some(serving.clone())).await;
    assert_eq!(web.total, usd(30));
    assert_eq!(web.account.as_deref(), Some(SERVING));
    assert!(web.all_accounts.iter().any(|(id, _)| id == SERVING));
    assert_eq!(lines(&web.by_project), [("web-api".to_string(), usd(30))]);
    let parts: Vec<(&str, &str, Decimal)> = web
        .parts
        .iter()
        .map(|p| (p.source.as_str(), p.project.as_str(), p.spend))
        .collect();
    assert_eq!(parts, [("direct", "web-api", usd(30))]);
    assert_eq!(
        page(Scope::Team("web".into()), Some(research.clone())).await.total,
        usd(5)
    );
    assert_eq!(page(Scope::Team("web".into()), None).await.total, usd(35));
    // ml-research in its own account: alice's 40 by her tag, the rest of research-prod's
    // unclaimed 160 by the account; nothing in serving-prod.
    let ml = page(Scope::Team("ml-research".into()), Some(research.clone())).await;
    assert_eq!(ml.total, usd(200));
    let parts: Vec<(&str, &str, Decimal)> = ml
        .parts
        .iter()
        .map(|p| (p.source.as_str(), p.project.as_str(), p.spend))
        .collect();
    assert_eq!(
        parts,
        [
            ("user", "shared-gpu", usd(40)),
            ("account", "", usd(100)),
            ("account", "shared-gpu", usd(60))
        ]
    );
    let ml_serving = page(Scope::Team("ml-research".into()), Some(serving.clone())).await;
    assert_eq!((ml_serving.total, ml_serving.parts.len()), (usd(0), 0));
    // Unassigned in serving-prod: the untagged 50, which no team owns.
    let unassigned = page(Scope::Team("Unassigned".into()), Some(serving.clone())).await;
    assert_eq!(unassigned.total, usd(50));
    assert_eq!(lines(&unassigned.by_project), [(String::new(), usd(50))]);
    // Project web-api in research-prod: its 5, by user, service and GPU family alike, and a
    // chart of that account's days.
    let project = page(Scope::Project("web-api".into()), Some(research.clone())).await;
    assert_eq!(project.total, usd(5));
    assert_eq!(
        lines(&project.by_service),
        [("Amazon Elastic Compute Cloud - Compute".to_string(), usd(5))]
    );
    assert_eq!(lines(&project.by_family), [("g5 (A10G)".to_string(), usd(5))]);
    let figures = burnrate::dashboard::reads::scope_figures::from_facts(
        &pool,
        burnrate::dashboard::reads::scope_figures::Projects::OwnedBy("web"),
        range,
        Metric::Unblended.into(),
        Some(&serving),
    )
    .await
    .expect("figures");
    assert_eq!(figures.daily, [(on, "web-api".to_string(), usd(30))]);

    // The downloads and server functions take `account=` and refuse a bad one.
    let app = crate::common::spawn_app(pool.clone()).await;
    let viewer = app
        .session_for("viewer@example.com", burnrate::auth::Role::Viewer)
        .await;
    let to = range.to;
    let export = app
        .get_as(
            &format!("/api/export.csv?from={on}&to={to}&group_by=team,project&account={SERVING}"),
            &viewer,
        )
        .await;
    assert_eq!(export.status, 200, "{}", export.body);
    let rows: Vec<(String, Decimal)> = export
        .body
        .lines()
        .map(|line| match line.rsplit_once(',') {
            Some((keys, cost)) => (keys.to_string(), cost.parse().unwrap_or(Decimal::MIN)),
            None => (line.to_string(), Decimal::MIN),
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("date,team,project".to_string(), Decimal::MIN),
            (format!("{on},Unassigned,"), usd(50)),
            (format!("{on},web,web-api"), usd(30))
        ]
    );
    let refused = app
        .get_as(
            &format!("/api/export.csv?from={on}&to={to}&group_by=team&account=12345"),
            &viewer,
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("not an AWS account ID"), "{}", refused.body);
    let scope = app
        .post_form_as(
            "/api/scope",
            &format!("kind=team&name=web&period={on}..{to}&account={SERVING}"),
            &viewer,
        )
        .await;
    assert_eq!(scope.status, 200, "{}", scope.body);
    let refused = app
        .post_form_as("/api/scope", "kind=team&name=web&account=research", &viewer)
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);

    // A month's statement in one account: that account's allocation, never frozen.
    let month = format!("{}", on.format("%Y-%m"));
    let statement = app
        .get_as(
            &format!("/api/statement?month={month}&format=csv&account={SERVING}"),
            &viewer,
        )
        .await;
    assert_eq!(statement.status, 200, "{}", statement.body);
    assert_eq!(
        statement.body,
        format!(
            "month,team,section,item,unblended,amortized\n\
             {month},web,direct,web-api,30.00,30.00\n\
             {month},web,credit,Credits,0.00,0.00\n\
             {month},web,refund,Refunds,0.00,0.00\n\
             {month},web,tax,Tax,0.00,0.00\n\
             {month},web,total,Total,30.00,30.00\n\
             {month},Unassigned,direct,(untagged),50.00,50.00\n\
             {month},Unassigned,credit,Credits,0.00,0.00\n\
             {month},Unassigned,refund,Refunds,0.00,0.00\n\
             {month},Unassigned,tax,Tax,0.00,0.00\n\
             {month},Unassigned,total,Total,50.00,50.00\n"
        )
    );
    let frozen = || async {
        sqlx::query_scalar::<_, i64>("select count(*) from statements")
            .fetch_one(&pool)
            .await
            .expect("count")
    };
    assert_eq!(frozen().await, 0, "an account's statement is never frozen");
    let whole = app
        .get_as(&format!("/api/statement?month={month}&format=csv"), &viewer)
        .await;
    assert_eq!(whole.status, 200, "{}", whole.body);
    assert_eq!(frozen().await, 1, "the organisation's statement of a final month is");
    let mut conn = pool.acquire().await.expect("connection");
    let months = burnrate::statements::store::months(&mut conn, Some(&serving))
        .await
        .expect("months");
    assert_eq!(
        months.iter().map(|m| (m.month.as_str(), m.total)).collect::<Vec<_>>(),
        [(month.as_str(), usd(80))]
    );

    // Savings: a recommendation is an account's when its project ran its usage type there.
    let window = burnrate::savings::facts::Window { from: on, to };
    let held = burnrate::savings::facts::AwsAccountUsage::read(&mut conn, &serving, Some(window))
        .await
        .expect("usage");
    assert!(held.covers("web-api", "USE1-BoxUsage:g5.xlarge"));
    assert!(held.covers("", "USE1-BoxUsage:g5.xlarge"), "untagged spend ran there");
    assert!(!held.covers("shared-gpu", "USE1-BoxUsage:g5.xlarge"));
    assert!(
        held.covers("web-api", ""),
        "a project-wide row of a project with spend there"
    );
    assert!(!held.covers("shared-gpu", ""));
    assert!(!held.covers("", ""), "organisation-wide rows are no one account's");
    assert!(held.ever_held("web-api") && !held.ever_held("shared-gpu"));
    drop(conn);
    let recommendation =
        |kind: burnrate::savings::Kind, project: &str, usage_type: &str| burnrate::savings::Recommendation {
            kind,
            team: String::new(),
            project: project.into(),
            usage_type: usage_type.into(),
            instance_type: "g5.xlarge".into(),
            recommended: "g5.xlarge spot".into(),
            from: on,
            to,
            basis_cost: None,
            monthly_saving: usd(1),
            compounded_saving: rust_decimal::Decimal::ZERO,
            detail: String::new(),
            host: String::new(),
            inferred: None,
        };
    let in_serving = burnrate::savings::service::Filters {
        account: Some(std::sync::Arc::new(held)),
        ..Default::default()
    };
    let g5 = "USE1-BoxUsage:g5.xlarge";
    assert!(in_serving.keeps(&recommendation(burnrate::savings::Kind::Spot, "web-api", g5)));
    assert!(!in_serving.keeps(&recommendation(burnrate::savings::Kind::Spot, "shared-gpu", g5)));
    assert!(!in_serving.keeps(&recommendation(burnrate::savings::Kind::Commitment, "", "")));
    assert!(in_serving.keeps(&recommendation(burnrate::savings::Kind::IdleGpu, "web-api", "")));
    let savings = app
        .get_as(&format!("/api/savings.csv?account={SERVING}"), &viewer)
        .await;
    assert_eq!(savings.status, 200, "{}", savings.body);
    let refused = app.get_as("/api/savings.csv?account=x", &viewer).await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("account"), "{}", refused.body);
}
