//! Frozen statements, and the statement of a month: frozen if it is, else computed now (and
//! frozen now when the month's figures are final).

use std::collections::BTreeMap;

use chrono::{Months, NaiveDate};
use sqlx::PgConnection;

use super::adjust::{MonthLines, adjustments, apply};
use super::compute::{month_lines, sort};
use super::model::{Statement, StatementLine};
use crate::costs::settlement::period_is_closed;
use crate::period::{AwsAccountId, DateRange};

/// The month holding `first` as a day range.
pub fn month_range(first: NaiveDate) -> DateRange {
    DateRange {
        from: first,
        to: first.checked_add_months(Months::new(1)).unwrap_or(first),
    }
}

/// `2026-10` as its first day.
pub fn parse_month(text: &str) -> Result<NaiveDate, String> {
    crate::period::parse_month(text).map(|month| month.from)
}

pub use crate::period::month_label;

#[derive(sqlx::FromRow)]
struct Frozen {
    frozen_at: String,
    lines: sqlx::types::Json<Vec<StatementLine>>,
}

async fn frozen(conn: &mut PgConnection, month: NaiveDate) -> Result<Option<Frozen>, sqlx::Error> {
    sqlx::query_as(
        "select to_char(frozen_at at time zone 'utc', 'YYYY-MM-DD HH24:MI') || ' UTC' as frozen_at, lines
         from statements where month = $1",
    )
    .bind(month)
    .fetch_optional(conn)
    .await
}

/// The statement of the month starting `month`, as of `today`. A frozen one is returned as
/// frozen. Otherwise it is computed from the allocation; if it is the next statement to be
/// frozen (no month with spend between it and the last frozen one), it carries an adjustment
/// for each frozen month and team whose total has changed since it was charged
/// (`adjust`); and once the month has ended and all its days are settled
/// (`costs::settlement`), it is frozen
/// with the data version and the shared-cost rules in force.
pub async fn statement(conn: &mut PgConnection, month: NaiveDate, today: NaiveDate) -> Result<Statement, sqlx::Error> {
    // Two callers freezing the same month at once: PostgreSQL refuses the second insert
    // (its snapshot cannot see the first's row), and once more it reads the frozen one.
    match snapshot(conn, month, today).await {
        Err(error) if is_serialization_failure(&error) => snapshot(conn, month, today).await,
        result => result,
    }
}

fn is_serialization_failure(error: &sqlx::Error) -> bool {
    error.as_database_error().and_then(|e| e.code()).as_deref() == Some("40001")
}

/// One snapshot: the lines, the settled check and the data version frozen with them all
/// describe the same data.
async fn snapshot(conn: &mut PgConnection, month: NaiveDate, today: NaiveDate) -> Result<Statement, sqlx::Error> {
    let mut tx = sqlx::Acquire::begin(&mut *conn).await?;
    // Serializable: two months freezing at once both read `statements` for the adjustments
    // they book, so one of them must fail (and read again) rather than book them twice.
    sqlx::query("set transaction isolation level serializable")
        .execute(&mut *tx)
        .await?;
    let statement = in_snapshot(&mut tx, month, today).await?;
    tx.commit().await?;
    Ok(statement)
}

async fn in_snapshot(conn: &mut PgConnection, month: NaiveDate, today: NaiveDate) -> Result<Statement, sqlx::Error> {
    let range = month_range(month);
    let budgets = monthly_budgets(conn).await?;
    let as_frozen = |frozen: Frozen, budgets| Statement {
        month,
        lines: frozen.lines.0,
        frozen_at: Some(frozen.frozen_at),
        budgets,
        account: None,
    };
    if let Some(frozen) = frozen(conn, month).await? {
        return Ok(as_frozen(frozen, budgets));
    }
    let mut lines = month_lines(conn, range, None).await?;
    let before = frozen_before(conn, month).await?;
    if next_to_freeze(conn, &before, month).await? {
        let now = totals_now(conn, &before, month).await?;
        let ids: BTreeMap<String, i64> = sqlx::query_as("select name, id from teams")
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        lines = apply(lines, adjustments(&before, &now, &ids));
    }
    sort(&mut lines);
    let ended = range.to <= today;
    if ended && !lines.is_empty() && period_is_closed(conn, range).await? {
        let rules = serde_json::to_value(crate::allocation::rule_store::list(conn).await?).unwrap_or_default();
        sqlx::query(
            "insert into statements (month, data_version, rules, lines)
             values ($1, (select version from data_version), $2, $3) on conflict (month) do nothing",
        )
        .bind(month)
        .bind(rules)
        .bind(sqlx::types::Json(&lines))
        .execute(&mut *conn)
        .await?;
        if let Some(frozen) = frozen(conn, month).await? {
            return Ok(as_frozen(frozen, budgets));
        }
    }
    Ok(Statement {
        month,
        lines,
        frozen_at: None,
        budgets,
        account: None,
    })
}

/// The month's statement in one linked account: its allocation there, computed now. It is
/// never frozen and books no adjustment (the organisation's statement does both), and it
/// lists no budget (a team's budget counts every account).
pub async fn statement_in_account(
    conn: &mut PgConnection,
    month: NaiveDate,
    account: &AwsAccountId,
) -> Result<Statement, sqlx::Error> {
    let mut lines = month_lines(conn, month_range(month), Some(account)).await?;
    sort(&mut lines);
    Ok(Statement {
        month,
        lines,
        frozen_at: None,
        budgets: Vec::new(),
        account: Some(account.to_string()),
    })
}

/// The frozen statements of months before `month`, oldest first.
async fn frozen_before(conn: &mut PgConnection, month: NaiveDate) -> Result<Vec<MonthLines>, sqlx::Error> {
    let rows: Vec<(NaiveDate, sqlx::types::Json<Vec<StatementLine>>)> =
        sqlx::query_as("select month, lines from statements where month < $1 order by month")
            .bind(month)
            .fetch_all(conn)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(first, lines)| MonthLines {
            month: month_label(first),
            lines: lines.0,
        })
        .collect())
}

/// True when `month` is the statement that books the frozen months' changes: the first month
/// with spend after the last frozen one. Some month before it is frozen, none after it is,
/// it has spend itself (a month without is never listed), and no month with spend lies
/// between (that one freezes first, and carries them).
async fn next_to_freeze(conn: &mut PgConnection, frozen: &[MonthLines], month: NaiveDate) -> Result<bool, sqlx::Error> {
    let Some(last) = frozen.last().and_then(|m| parse_month(&m.month).ok()) else {
        return Ok(false);
    };
    let after = last.checked_add_months(Months::new(1)).unwrap_or(month);
    sqlx::query_scalar(
        "select not exists (select 1 from statements where month > $2)
            and exists (select 1 from daily_project_costs where day >= $2 and day < $3)
            and not exists (select 1 from daily_project_costs where day >= $1 and day < $2)",
    )
    .bind(after)
    .bind(month)
    .bind(month_range(month).to)
    .fetch_one(conn)
    .await
}

/// Each frozen month's total per team as the allocation has it now, in one pass over the
/// allocation from the first frozen month.
async fn totals_now(
    conn: &mut PgConnection,
    frozen: &[MonthLines],
    month: NaiveDate,
) -> Result<Vec<MonthLines>, sqlx::Error> {
    let Some(first) = frozen.first().and_then(|m| parse_month(&m.month).ok()) else {
        return Ok(Vec::new());
    };
    let rows: Vec<(
        String,
        Option<i64>,
        String,
        rust_decimal::Decimal,
        rust_decimal::Decimal,
    )> = sqlx::query_as(
        "select to_char(a.day, 'YYYY-MM'), a.team_id, coalesce(t.name, $3), sum(a.unblended), sum(a.amortized)
         from allocated_daily_costs a left join teams t on t.id = a.team_id
         where a.day >= $1 and a.day < $2 group by 1, 2, 3 order by 1",
    )
    .bind(first)
    .bind(month)
    .bind(crate::format::UNASSIGNED_TEAM)
    .fetch_all(conn)
    .await?;
    let mut months: Vec<MonthLines> = Vec::new();
    for (label, team_id, team, unblended, amortized) in rows {
        if months.last().is_none_or(|m| m.month != label) {
            months.push(MonthLines {
                month: label,
                lines: Vec::new(),
            });
        }
        if let Some(current) = months.last_mut() {
            current.lines.push(StatementLine {
                team,
                team_id,
                section: super::model::Section::Total,
                item: "Total".into(),
                untagged: false,
                adjusts: None,
                unblended,
                amortized,
            });
        }
    }
    Ok(months)
}

/// Every team's monthly budgets: (team, name, amount, metric, credits).
async fn monthly_budgets(
    conn: &mut PgConnection,
) -> Result<Vec<(String, String, rust_decimal::Decimal, String, String)>, sqlx::Error> {
    sqlx::query_as(
        "select t.name, b.name, b.amount, b.metric, b.credits from budgets b join teams t on t.id = b.team_id
         where b.scope_kind = 'team' and b.period = 'monthly' order by 1, 2",
    )
    .fetch_all(conn)
    .await
}

/// Months with spend, newest first, with their totals and when each was frozen; with
/// `account`, the months and totals of that linked account.
pub async fn months(
    conn: &mut PgConnection,
    account: Option<&AwsAccountId>,
) -> Result<Vec<super::model::MonthRow>, sqlx::Error> {
    let rows: Vec<(NaiveDate, rust_decimal::Decimal, Option<String>)> = sqlx::query_as(&format!(
        "select m.month, m.total,
                (select to_char(s.frozen_at at time zone 'utc', 'YYYY-MM-DD HH24:MI') || ' UTC'
                 from statements s where s.month = m.month)
         from (select date_trunc('month', day)::date as month, sum(unblended) as total
               from daily_project_costs where true{account} group by 1) m
         order by 1 desc",
        account = AwsAccountId::and_in(account, "account_id")
    ))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(month, total, frozen_at)| super::model::MonthRow {
            month: month_label(month),
            frozen_at,
            total,
        })
        .collect())
}

/// The Statements page: the months (of one account when `account` is set), the teams and
/// the accounts to choose from.
pub async fn page(
    conn: &mut PgConnection,
    account: Option<&AwsAccountId>,
) -> Result<super::model::StatementsData, sqlx::Error> {
    let months = months(conn, account).await?;
    let teams = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(&mut *conn)
        .await?;
    let accounts = crate::costs::aws_accounts::known(&mut *conn).await?;
    Ok(super::model::StatementsData {
        months,
        teams,
        account: account.map(ToString::to_string),
        accounts,
    })
}
