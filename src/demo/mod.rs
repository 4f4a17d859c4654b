//! `burnrate demo`: a deterministic synthetic GPU organisation, written through the same
//! fact store as ingestion so every page behaves as it would on real data.

pub mod accounts;
pub mod budgets;
pub mod commitments;
pub mod enforcement;
pub mod generator;
pub mod history;
pub mod org;
pub mod stop_listing;

use chrono::{Datelike, Months, NaiveDate};
use sqlx::{PgConnection, PgPool};

use crate::costs::store::{self, CostBatch};
use crate::period::{DateRange, days_before, next_day};
use generator::{BillingProject, Timeline};
use org::{PROJECTS, TEAMS};

/// How much demo data to make, and up to which day.
#[derive(Debug, Clone, Copy)]
pub struct DemoOptions {
    /// Multiplies projects and users (and so rows); 1 is the standard organisation.
    pub scale: u32,
    /// The last day with data (UTC), normally yesterday: as with Cost Explorer, today has no
    /// figures yet, the last three days are partial, and the open bill's days are Estimated.
    pub until: NaiveDate,
}

/// What `load` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSummary {
    pub teams: usize,
    pub projects: usize,
    pub users: usize,
    pub rows: u64,
    pub from: NaiveDate,
    pub until: NaiveDate,
}

/// True when there are no teams, projects or costs: nothing a demo load would overwrite.
pub async fn database_is_empty(pool: &PgPool) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select not exists (select 1 from teams) and not exists (select 1 from projects)
            and not exists (select 1 from daily_project_costs)",
    )
    .fetch_one(pool)
    .await
}

/// Replaces all teams, projects, users and costs with the demo organisation, in one
/// transaction: 13 months before `until`'s month plus that month to date, with budgets,
/// approvals and enforcement policies sized from that spend. Evaluating them is the
/// caller's (`cli`), as after an ingestion, with [`history::sent_alerts`] first on a fresh load.
pub async fn load(pool: &PgPool, options: DemoOptions) -> Result<DemoSummary, sqlx::Error> {
    let month_start = options.until.with_day(1).unwrap_or(options.until);
    let timeline = Timeline {
        from: month_start.checked_sub_months(Months::new(13)).unwrap_or(month_start),
        until: options.until,
    };
    let users = org::user_names();
    let projects = billing_projects(&users, &timeline, options);

    let mut tx = pool.begin().await?;
    // Fourteen months of costs in one transaction: longer than a request may take.
    crate::db::lift_statement_timeout_in_transaction(&mut tx).await?;
    clear(&mut tx).await?;
    let team_ids = insert_org(&mut tx, &users, options.scale).await?;
    tracing::info!(scale = options.scale, from = %timeline.from, until = %timeline.until, "loading demo costs");

    let window = DateRange {
        from: timeline.from,
        to: next_day(timeline.until),
    };
    // Projects get their teams, and the shared-cost rule exists, before the facts go in, so
    // each month is allocated once, as it is written.
    map_projects(&mut tx, &team_ids, options.scale).await?;
    shared_cost_rules(&mut tx).await?;
    let rows = write_costs(&mut tx, &projects, &timeline, window).await?;
    budgets::insert(&mut tx, options.until).await?;
    enforcement::insert(&mut tx, options.until).await?;
    commitments::insert(&mut tx, options.until).await?;
    tx.commit().await?;
    let mut conn = pool.acquire().await?;
    store::refresh_statistics(&mut conn).await?;

    let summary = DemoSummary {
        teams: TEAMS.len(),
        projects: PROJECTS.len() * options.scale as usize,
        users: users.len() * options.scale as usize,
        rows,
        from: timeline.from,
        until: timeline.until,
    };
    tracing::info!(rows = summary.rows, "demo loaded");
    Ok(summary)
}

/// Writes the demo's costs for `window`, month by month, and records the window as a
/// demo run with each day's Estimated flag in `ingested_days`, as an ingestion would.
async fn write_costs(
    conn: &mut PgConnection,
    projects: &[BillingProject],
    timeline: &Timeline,
    window: DateRange,
) -> Result<u64, sqlx::Error> {
    let run_id: i64 = sqlx::query_scalar(
        "insert into ingestion_runs (trigger, status, window_from, window_to) values ('demo', 'running', $1, $2)
         returning id",
    )
    .bind(window.from)
    .bind(window.to)
    .fetch_one(&mut *conn)
    .await?;
    let mut rows = 0;
    let mut month = window.from;
    while month < window.to {
        let end = month
            .with_day(1)
            .and_then(|first| first.checked_add_months(Months::new(1)))
            .unwrap_or(window.to)
            .min(window.to);
        let mut batch = CostBatch::default();
        // Days after `until` in the window are only cleared: the demo has no figures for them.
        for day in month.iter_days().take_while(|d| *d < end && *d <= timeline.until) {
            generator::day_batch(projects, timeline, day, &mut batch);
        }
        rows += crate::allocation::facts::replace_window(conn, DateRange { from: month, to: end }, &batch).await?;
        month = end;
    }
    sqlx::query("delete from ingested_days where day > $1")
        .bind(timeline.until)
        .execute(&mut *conn)
        .await?;
    let days: Vec<NaiveDate> = window
        .from
        .iter_days()
        .take_while(|d| *d < window.to && *d <= timeline.until)
        .collect();
    let estimated: Vec<bool> = days.iter().map(|d| timeline.reported_share(*d).1).collect();
    let accounts: Vec<(String, String)> = org::ACCOUNTS
        .iter()
        .map(|(id, name)| (id.to_string(), name.to_string()))
        .collect();
    crate::costs::aws_accounts::record(conn, &accounts).await?;
    sqlx::query(
        "insert into ingested_days (day, estimated, run_id, with_accounts)
         select unnest($1::date[]), unnest($2::bool[]), $3, true
         on conflict (day) do update set estimated = excluded.estimated, run_id = excluded.run_id,
             with_accounts = true, fetched_at = now()",
    )
    .bind(&days)
    .bind(&estimated)
    .bind(run_id)
    .execute(&mut *conn)
    .await?;
    // Every load and refresh writes through `until`: its window settles as a fetch would.
    crate::costs::settlement::record_fetch(conn, next_day(timeline.until), generator::PARTIAL_DAYS).await?;
    sqlx::query(
        "update ingestion_runs set status = 'succeeded', rows_written = $2, finished_at = now(), updated_at = now()
         where id = $1",
    )
    .bind(run_id)
    .bind(rows as i64)
    .execute(&mut *conn)
    .await?;
    Ok(rows)
}

/// True when every cost row came from the demo: no ingestion from AWS has run.
pub async fn holds_only_demo_data(pool: &PgPool) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists (select 1 from ingestion_runs where trigger = 'demo' and status = 'succeeded')
            and not exists (select 1 from ingestion_runs where trigger <> 'demo' and status = 'succeeded')",
    )
    .fetch_one(pool)
    .await
}

/// Brings a demo database up to `until` as a scheduled ingestion would: every day still
/// Estimated, and every day since the last, is written again, so provisional days are
/// restated to their final figures. Teams, budgets and mappings stay as they are. Returns
/// the window written, or `None` when the demo is already current.
pub async fn refresh(pool: &PgPool, until: NaiveDate) -> Result<Option<DateRange>, sqlx::Error> {
    // Days loaded before linked accounts were recorded are written again with them, as the
    // first ingestion after that upgrade fetches them again.
    let (recorded_first, recorded_last, first_estimated): (Option<NaiveDate>, Option<NaiveDate>, Option<NaiveDate>) =
        sqlx::query_as(
            "select min(day), max(day), min(day) filter (where estimated or not with_accounts) from ingested_days",
        )
        .fetch_one(pool)
        .await?;
    let (stored_first, stored_last): (Option<NaiveDate>, Option<NaiveDate>) =
        sqlx::query_as("select min(day), max(day) from daily_project_costs")
            .fetch_one(pool)
            .await?;
    let (Some(first), Some(last)) = (recorded_first.or(stored_first), recorded_last.max(stored_last)) else {
        return Ok(None);
    };
    // A demo loaded before days were recorded ran through its load day, its last three days
    // partial and unmarked: write those again too, and drop anything after `until`.
    let first_estimated = match recorded_first {
        Some(_) => first_estimated,
        None => Some(days_before(last, 2)),
    };
    let window = DateRange {
        from: first_estimated.unwrap_or(next_day(last)).min(next_day(last)),
        to: next_day(until).max(next_day(last)),
    };
    if window.from > until && last <= until {
        return Ok(None);
    }
    let users: i64 = sqlx::query_scalar("select count(*) from tagged_users")
        .fetch_one(pool)
        .await?;
    let scale = u32::try_from(users / org::user_names().len().max(1) as i64)
        .unwrap_or(1)
        .max(1);
    let timeline = Timeline { from: first, until };
    let projects = billing_projects(&org::user_names(), &timeline, DemoOptions { scale, until });
    let mut tx = pool.begin().await?;
    crate::db::lift_statement_timeout_in_transaction(&mut tx).await?;
    write_costs(&mut tx, &projects, &timeline, window).await?;
    commitments::insert(&mut tx, until).await?;
    tx.commit().await?;
    Ok(Some(DateRange {
        from: window.from,
        to: next_day(until).min(window.to),
    }))
}

/// The tag value of copy `copy` of `name`: copies beyond the first get a numeric suffix.
fn scaled(name: &str, copy: u32) -> String {
    if copy == 0 {
        name.to_string()
    } else {
        format!("{name}-{copy}")
    }
}

fn billing_projects(users: &[String], timeline: &Timeline, options: DemoOptions) -> Vec<BillingProject> {
    let mut projects = Vec::new();
    for copy in 0..options.scale {
        for (index, demo) in PROJECTS.iter().enumerate() {
            // Three people per project: from its team, or from across the org when unmapped.
            let first = demo.team.map_or(index * 7, |team| team * 10 + (index % 3) * 3);
            let people = (0..3)
                .map(|k| scaled(&users[(first + k) % users.len()], copy))
                .collect();
            let starts = timeline
                .until
                .with_day(1)
                .and_then(|m| m.checked_sub_months(Months::new(demo.starts_months_ago)))
                .unwrap_or(timeline.from)
                .max(timeline.from);
            projects.push(BillingProject::new(
                demo,
                scaled(demo.name, copy),
                people,
                starts,
                timeline.from,
            ));
        }
    }
    projects.push(BillingProject::untagged(
        vec![users[99].clone()],
        timeline.from,
        options.scale,
    ));
    projects
}

async fn clear(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "truncate costs_by_user, costs_by_usage_type, costs_by_service, costs_by_record_type, costs_by_user_credit,
                  costs_by_user_refund, costs_by_user_tax, costs_by_user_gpu, costs_by_account, costs_by_account_record_type, settlement, daily_project_costs, aws_accounts,
                  ingested_days, statements,
                  projects, tagged_users, team_owners,
                  budgets, budget_thresholds, budget_alerts, alert_deliveries, budget_aws_sync,
                  savings_decisions, savings_digests, pricing_settings,
                  allocated_daily_costs, allocation_rule_teams, allocation_rules,
                  team_daily_costs, team_account_daily_costs, allocated_project_spans, owned_spend_spans, record_type_days,
                  commitment_reads, commitment_coverage, commitment_use, aws_savings_plan_recommendations",
    )
    .execute(&mut *conn)
    .await?;
    // Deleted rather than truncated: team policies cascade, the org default policy stays.
    sqlx::query("delete from teams").execute(conn).await?;
    Ok(())
}

async fn insert_org(conn: &mut PgConnection, users: &[String], scale: u32) -> Result<Vec<i64>, sqlx::Error> {
    let mut team_ids = Vec::with_capacity(TEAMS.len());
    for team in &TEAMS {
        let id: i64 = sqlx::query_scalar("insert into teams (name) values ($1) returning id")
            .bind(team.name)
            .fetch_one(&mut *conn)
            .await?;
        for (name, email) in team.owners {
            sqlx::query("insert into team_owners (team_id, email, name) values ($1, $2, $3)")
                .bind(id)
                .bind(email)
                .bind(name)
                .execute(&mut *conn)
                .await?;
        }
        team_ids.push(id);
    }
    let mut names = Vec::new();
    let mut teams = Vec::new();
    for copy in 0..scale {
        for (i, user) in users.iter().enumerate() {
            names.push(scaled(user, copy));
            teams.push(team_ids[org::user_team(i)]);
        }
    }
    sqlx::query("insert into tagged_users (name, team_id) select * from unnest($1::text[], $2::bigint[])")
        .bind(names)
        .bind(teams)
        .execute(&mut *conn)
        .await?;
    Ok(team_ids)
}

/// The demo's shared-cost rule: untagged NAT gateway and snapshot spend (Cost Explorer's
/// `EC2 - Other`) and sales tax shared in proportion to each team's own spend. The untagged
/// accelerator box nobody claims stays Unassigned.
async fn shared_cost_rules(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let rule = crate::allocation::rules::validate(&crate::allocation::rules::RuleInput {
        name: "Network, snapshots and tax".into(),
        selector: "services".into(),
        values: vec![generator::EC2_OTHER.into(), "Tax".into()],
        split: "proportional".into(),
        teams: Vec::new(),
    })
    .map_err(|errors| sqlx::Error::Protocol(format!("the demo's rule is invalid: {errors:?}")))?;
    crate::allocation::rule_store::replace_all(conn, &crate::audit_log::Actor::system("demo"), &[rule]).await?;
    Ok(())
}

/// Creates each project with its team and what it declares it runs.
async fn map_projects(conn: &mut PgConnection, team_ids: &[i64], scale: u32) -> Result<(), sqlx::Error> {
    let (mut names, mut teams, mut workloads, mut params, mut precisions) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for copy in 0..scale {
        for demo in &PROJECTS {
            let facts = org::declared(demo);
            names.push(scaled(demo.name, copy));
            teams.push(demo.team.map(|team| team_ids[team]));
            workloads.push(facts.workload.key());
            params.push(facts.model.map(|m| m.params_b));
            precisions.push(facts.model.map(|m| m.precision.key()));
        }
    }
    sqlx::query(
        "insert into projects (name, team_id, workload, model_params_b, model_precision)
         select * from unnest($1::text[], $2::bigint[], $3::text[], $4::numeric[], $5::text[])
         on conflict (name) do update set team_id = excluded.team_id, workload = excluded.workload,
             model_params_b = excluded.model_params_b, model_precision = excluded.model_precision, updated_at = now()",
    )
    .bind(names)
    .bind(teams)
    .bind(workloads)
    .bind(params)
    .bind(precisions)
    .execute(conn)
    .await?;
    Ok(())
}
