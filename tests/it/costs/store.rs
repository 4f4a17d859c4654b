//! The schema, the fact store and the rollup, on a real PostgreSQL database.

use crate::common;
use crate::common::bills::d;

use crate::common::{day, load_demo};
use burnrate::costs::store::{CostBatch, CostRow};
use burnrate::period::DateRange;
use rust_decimal::Decimal;
use sqlx::PgPool;

async fn sum(pool: &PgPool, sql: &str) -> Decimal {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect("sum query")
}

#[sqlx::test]
async fn demo_rollup_totals_equal_every_fact_grain_to_the_cent(pool: PgPool) {
    let summary = load_demo(&pool, day(2026, 2, 10)).await;
    assert_eq!(summary.from, day(2025, 1, 1));
    assert!(summary.rows > 100_000, "rows: {}", summary.rows);

    let rollup = sum(&pool, "select sum(unblended) from daily_project_costs").await;
    for table in ["costs_by_user", "costs_by_usage_type", "costs_by_service"] {
        assert_eq!(
            sum(&pool, &format!("select sum(unblended) from {table}")).await,
            rollup,
            "{table} unblended"
        );
        assert_eq!(
            sum(&pool, &format!("select sum(amortized) from {table}")).await,
            sum(&pool, "select sum(amortized) from daily_project_costs").await,
            "{table} amortized"
        );
    }
    // Per day and project too, not just overall.
    let mismatched: i64 = sqlx::query_scalar(
        "select count(*) from (
            select day, project, sum(unblended) s from costs_by_user group by 1, 2
         ) f full join daily_project_costs r using (day, project)
         where f.s is distinct from r.unblended",
    )
    .fetch_one(&pool)
    .await
    .expect("compare");
    assert_eq!(mismatched, 0);
}

#[sqlx::test]
async fn demo_organisation_has_the_promised_shape(pool: PgPool) {
    load_demo(&pool, day(2026, 2, 10)).await;
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.expect("count") }
    };
    assert_eq!(count("select count(*) from teams").await, 10);
    assert_eq!(count("select count(*) from team_owners").await, 12);
    assert_eq!(count("select count(*) from projects").await, 30);
    assert_eq!(count("select count(*) from tagged_users").await, 100);
    assert_eq!(
        count("select count(*) from projects where name = '<img src=x onerror=alert(1)>'").await,
        1
    );
    assert_eq!(count("select count(*) from projects where team_id is null").await, 1);
    for family in ["p4d", "p5", "g5", "g6"] {
        let n: i64 = sqlx::query_scalar("select count(*) from usage_types where instance_family = $1")
            .bind(family)
            .fetch_one(&pool)
            .await
            .expect("family");
        assert!(n > 0, "no {family} usage");
    }
    let spot: i64 = count("select count(*) from usage_types where purchase_option = 'spot' and gpu_count > 0").await;
    assert!(spot > 0);
    let services: Vec<String> = sqlx::query_scalar("select distinct service from costs_by_service order by 1")
        .fetch_all(&pool)
        .await
        .expect("services");
    for service in ["Amazon Bedrock", "Amazon SageMaker", "Amazon Simple Storage Service"] {
        assert!(services.iter().any(|s| s == service), "missing {service}");
    }
    let untagged_share: Decimal = sum(
        &pool,
        "select sum(unblended) filter (where project = '') * 100 / sum(unblended) from daily_project_costs",
    )
    .await;
    assert!(
        untagged_share > d("5") && untagged_share < d("11"),
        "untagged {untagged_share}%"
    );
    // Cost Explorer flags the whole open bill Estimated: 1–9 February.
    let estimated_days: i64 = count("select count(distinct day) from costs_by_user where estimated").await;
    assert_eq!(estimated_days, 9);
}

#[sqlx::test]
async fn demo_data_is_deterministic(pool: PgPool) {
    load_demo(&pool, day(2026, 2, 10)).await;
    let first = sum(
        &pool,
        "select sum(unblended * extract(day from day)) from costs_by_usage_type",
    )
    .await;
    load_demo(&pool, day(2026, 2, 10)).await;
    let second = sum(
        &pool,
        "select sum(unblended * extract(day from day)) from costs_by_usage_type",
    )
    .await;
    assert_eq!(first, second);
}

fn row(on: chrono::NaiveDate, project: &str, dimension: &str, unblended: &str) -> CostRow {
    CostRow {
        usage_quantity: d("1.5"),
        ..crate::common::bills::row(on, project, dimension, unblended)
    }
}

fn batch(rows: Vec<CostRow>) -> CostBatch {
    CostBatch {
        by_user: rows.clone(),
        by_usage_type: rows.clone(),
        by_service: rows.clone(),
        by_record_type: rows,
        ..CostBatch::default()
    }
}

#[sqlx::test]
async fn replacing_a_window_replaces_its_facts_and_rollup_and_keeps_other_days(pool: PgPool) {
    let window = DateRange {
        from: day(2026, 1, 1),
        to: day(2026, 1, 3),
    };
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(
        &mut tx,
        DateRange {
            from: day(2025, 12, 31),
            to: day(2026, 1, 3),
        },
        &batch(vec![
            row(day(2025, 12, 31), "keep", "x", "5.00"),
            row(day(2026, 1, 1), "a", "x", "10.123456789"),
            row(day(2026, 1, 2), "", "", "1.1"),
        ]),
    )
    .await
    .expect("first write");
    tx.commit().await.expect("commit");

    // A restatement of 2026-01-01..02 replaces those days only.
    let mut tx = pool.begin().await.expect("tx");
    let written = burnrate::allocation::facts::replace_window(
        &mut tx,
        window,
        &batch(vec![row(day(2026, 1, 1), "a", "x", "0.01")]),
    )
    .await
    .expect("restatement");
    tx.commit().await.expect("commit");
    assert_eq!(written, 4, "one row in each of the four grains");

    assert_eq!(sum(&pool, "select sum(unblended) from costs_by_user").await, d("5.01"));
    assert_eq!(
        sum(&pool, "select sum(unblended) from daily_project_costs").await,
        d("5.01")
    );
    let untagged: i64 = sqlx::query_scalar("select count(*) from daily_project_costs where project = ''")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(untagged, 0, "the untagged row of 2026-01-02 was restated away");
}

#[sqlx::test]
async fn untagged_spend_and_hostile_tag_values_are_stored_verbatim(pool: PgPool) {
    let hostile = "'; drop table teams; -- <script>\t\n\u{1F680}";
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(
        &mut tx,
        DateRange {
            from: day(2026, 1, 1),
            to: day(2026, 1, 2),
        },
        &batch(vec![
            row(day(2026, 1, 1), hostile, hostile, "2.5"),
            row(day(2026, 1, 1), "", "", "0.5"),
        ]),
    )
    .await
    .expect("write");
    tx.commit().await.expect("commit");
    let projects: Vec<String> = sqlx::query_scalar("select project from daily_project_costs order by project")
        .fetch_all(&pool)
        .await
        .expect("read");
    assert_eq!(projects, vec!["".to_string(), hostile.to_string()]);
    let known: Vec<String> = sqlx::query_scalar("select name from projects")
        .fetch_all(&pool)
        .await
        .expect("projects");
    assert_eq!(
        known,
        vec![hostile.to_string()],
        "untagged spend creates no project row"
    );
}

#[sqlx::test]
async fn a_failed_write_leaves_the_previous_data_whole(pool: PgPool) {
    let window = DateRange {
        from: day(2026, 1, 1),
        to: day(2026, 1, 2),
    };
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(&mut tx, window, &batch(vec![row(day(2026, 1, 1), "a", "x", "7")]))
        .await
        .expect("write");
    tx.commit().await.expect("commit");

    // Two rows with the same key violate the primary key halfway through the write.
    let mut tx = pool.begin().await.expect("tx");
    let duplicate = vec![row(day(2026, 1, 1), "a", "x", "1"), row(day(2026, 1, 1), "a", "x", "2")];
    assert!(
        burnrate::allocation::facts::replace_window(&mut tx, window, &batch(duplicate))
            .await
            .is_err()
    );
    drop(tx);
    assert_eq!(sum(&pool, "select sum(unblended) from costs_by_user").await, d("7"));
    assert_eq!(
        sum(&pool, "select sum(unblended) from daily_project_costs").await,
        d("7")
    );
}

#[sqlx::test]
async fn no_team_may_be_called_unassigned(pool: PgPool) {
    let err = sqlx::query("insert into teams (name) values ('Unassigned')")
        .execute(&pool)
        .await;
    assert!(err.is_err());
}

/// Each day's total in the rollup, with its Estimated flag.
async fn daily_rollup(pool: &PgPool) -> Vec<(chrono::NaiveDate, Decimal, bool)> {
    sqlx::query_as("select day, sum(unblended), bool_or(estimated) from daily_project_costs group by day order by day")
        .fetch_all(pool)
        .await
        .expect("rollup")
}

#[sqlx::test]
async fn the_demo_ends_yesterday_with_three_partial_days_on_an_open_bill_that_a_later_run_restates(pool: PgPool) {
    use burnrate::demo::{self, DemoOptions};
    let today = day(2026, 2, 11);
    common::load_demo(&pool, today).await;
    let first = daily_rollup(&pool).await;
    assert_eq!(first.last().map(|d| d.0), Some(day(2026, 2, 10)), "nothing for today");
    // As Cost Explorer flags them: every day of February's open bill, none of January's.
    let estimated: Vec<chrono::NaiveDate> = first.iter().filter(|d| d.2).map(|d| d.0).collect();
    let february: Vec<chrono::NaiveDate> = day(2026, 2, 1).iter_days().take(10).collect();
    assert_eq!(estimated, february);
    let ingested: Vec<(chrono::NaiveDate, bool)> =
        sqlx::query_as("select day, estimated from ingested_days where estimated order by day")
            .fetch_all(&pool)
            .await
            .expect("ingested days");
    assert_eq!(ingested.iter().map(|d| d.0).collect::<Vec<_>>(), estimated);

    // Three days later: every Estimated day is written again; the three partial days are
    // final and higher than they were, and the result is what a fresh load on that day
    // would write.
    let window = demo::refresh(&pool, day(2026, 2, 13)).await.expect("refresh");
    assert_eq!(
        window,
        Some(burnrate::period::DateRange {
            from: day(2026, 2, 1),
            to: day(2026, 2, 14)
        })
    );
    let refreshed = daily_rollup(&pool).await;
    for (before, after) in first.iter().zip(&refreshed).skip(first.len() - 3) {
        assert_eq!(before.0, after.0);
        assert!(after.1 > before.1, "{} was restated upwards", before.0);
        assert!(after.2, "{} is still on February's open bill", before.0);
    }
    assert_eq!(
        refreshed[..first.len() - 3],
        first[..first.len() - 3],
        "settled days are unchanged"
    );
    demo::load(
        &pool,
        DemoOptions {
            scale: 1,
            until: day(2026, 2, 13),
        },
    )
    .await
    .expect("fresh load");
    assert_eq!(daily_rollup(&pool).await, refreshed);
}

#[sqlx::test]
async fn edits_wait_on_an_open_ingestion_only_to_reallocate_the_days_it_adds(pool: PgPool) {
    use burnrate::audit_log::Actor;
    for statement in [
        "insert into teams (name) values ('ml'), ('platform')",
        "insert into projects (name, team_id) select 'train', id from teams where name = 'ml'",
        "insert into projects (name) values ('stray')",
    ] {
        sqlx::query(statement).execute(&pool).await.expect("seed");
    }
    let version = |pool: PgPool| async move {
        sqlx::query_scalar::<_, i64>("select version from data_version")
            .fetch_one(&pool)
            .await
            .expect("version")
    };
    let before = version(pool.clone()).await;

    // An ingestion replacing a window, its transaction left open.
    let window = DateRange {
        from: day(2026, 11, 1),
        to: day(2026, 11, 3),
    };
    let row = |day: chrono::NaiveDate, project: &str, dimension: &str| CostRow {
        account: "111122223333".to_string(),
        day,
        project: project.into(),
        dimension: dimension.into(),
        unblended: Decimal::from(10),
        amortized: Decimal::from(10),
        usage_quantity: Decimal::ONE,
        estimated: false,
    };
    let batch = CostBatch {
        by_user: vec![
            row(day(2026, 11, 1), "train", "alice"),
            row(day(2026, 11, 2), "stray", "bob"),
        ],
        by_usage_type: vec![
            row(day(2026, 11, 1), "train", "USE1-BoxUsage:g5.xlarge"),
            row(day(2026, 11, 2), "stray", "USE1-BoxUsage:g5.xlarge"),
        ],
        by_service: vec![
            row(day(2026, 11, 1), "train", "EC2"),
            row(day(2026, 11, 2), "stray", "EC2"),
        ],
        ..CostBatch::default()
    };
    let mut ingestion = pool.begin().await.expect("transaction");
    burnrate::allocation::facts::replace_window(&mut ingestion, window, &batch)
        .await
        .expect("window written");

    // Every edit below goes through connections that give up on any lock wait over 2 s, so
    // one that queued behind the ingestion fails the test instead of merely waiting.
    let impatient = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .after_connect(|conn, _| {
            Box::pin(async move {
                sqlx::query("set lock_timeout = '2s'").execute(conn).await?;
                Ok(())
            })
        })
        .connect_with((*pool.connect_options()).clone())
        .await
        .expect("pool");
    let actor = Actor::system("test");
    let mut conn = impatient.acquire().await.expect("connection");
    let budget = crate::common::budgets::spec("ml monthly", ("team", "ml"), "1000", "80", "");
    burnrate::budgets::store::save(&mut conn, &actor, None, &budget)
        .await
        .expect("a budget saves");
    let approval = burnrate::enforcement::approvals::validate(&burnrate::enforcement::approvals::ApprovalInput {
        project: "train".into(),
        approver: "cfo@example.com".into(),
        reason: "run".into(),
        cap: "5000".into(),
        expires: "2027-01-31".into(),
    })
    .expect("valid");
    burnrate::enforcement::approvals::set(&mut conn, &actor, &approval)
        .await
        .expect("an approval saves");
    drop(conn);
    // A team edit that moves no spend (an owner) rewrites no allocation, so it waits on
    // nothing the ingestion holds.
    let mut owners = burnrate::teams::mapping::TeamMapping::default();
    owners.owners.insert("ops@example.com".into());
    let edit = burnrate::teams::edit::TeamEdit {
        original: Some("platform".into()),
        name: "platform".into(),
        mapping: owners,
        keep_accounts: false,
    };
    burnrate::teams::edit::save(&impatient, &actor, edit)
        .await
        .expect("a team edit saves");
    let edited = version(impatient.clone()).await;
    assert!(edited > before, "the edits changed the version: {before} -> {edited}");

    // One that moves spend must see the ingestion's days: it takes the allocation's lock
    // before reading which days to rewrite, so it allocates 2 November, which the open
    // ingestion is adding, with the new mapping.
    let moving = tokio::spawn({
        let pool = pool.clone();
        async move { burnrate::teams::edit::assign(&pool, &Actor::system("test"), "project", "stray", "platform").await }
    });
    let mut waiting = false;
    for _ in 0..200 {
        waiting = sqlx::query_scalar(
            "select exists (select 1 from pg_stat_activity
                            where datname = current_database() and wait_event = 'advisory')",
        )
        .fetch_one(&pool)
        .await
        .expect("activity");
        if waiting || moving.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    ingestion.commit().await.expect("commit");
    moving
        .await
        .expect("task")
        .expect("the mapping saves once the ingestion is in");
    assert!(waiting, "the mapping change waited for the ingestion's allocation lock");
    let stray: Option<String> = sqlx::query_scalar(
        "select t.name from allocated_daily_costs a join teams t on t.id = a.team_id
         where a.project = 'stray' and a.day = '2026-11-02'",
    )
    .fetch_optional(&pool)
    .await
    .expect("allocation");
    assert_eq!(stray.as_deref(), Some("platform"));
    let ingested = version(pool.clone()).await;
    assert!(
        ingested > edited,
        "the ingestion's commit changed it again: {edited} -> {ingested}"
    );
}

#[sqlx::test]
async fn folding_old_changes_keeps_the_version_and_later_changes_still_raise_it(pool: PgPool) {
    let version = || async {
        sqlx::query_scalar::<_, i64>("select version from data_version")
            .fetch_one(&pool)
            .await
            .expect("version")
    };
    let mut last = version().await;
    // Enough single-statement writes to fold the change log more than once.
    for n in 0..600 {
        sqlx::query("insert into teams (name) values ($1)")
            .bind(format!("team-{n}"))
            .execute(&pool)
            .await
            .expect("write");
        let now = version().await;
        assert_eq!(now, last + 1, "write {n}");
        last = now;
    }
    let rows: i64 = sqlx::query_scalar("select count(*) from data_changes")
        .fetch_one(&pool)
        .await
        .expect("rows");
    assert!(rows < 300, "old changes are folded: {rows} rows");
    // A write rolled back leaves the version alone.
    let mut tx = pool.begin().await.expect("transaction");
    sqlx::query("insert into teams (name) values ('never')")
        .execute(&mut *tx)
        .await
        .expect("write");
    tx.rollback().await.expect("rollback");
    assert_eq!(version().await, last);
}
