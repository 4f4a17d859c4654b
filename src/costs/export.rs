//! `burnrate export`: cost facts as CSV, grouped by the keys asked for, in the format every
//! dashboard table downloads. Each key set is answered from the one fact table whose grain
//! holds all its keys, so totals equal Cost Explorer's for the same days. `team` alone (or
//! with `project`) is the allocation, as the Teams table shows it; with a user, service or
//! usage type it is the team owning the project.

use std::fmt::Write as _;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::format::UNASSIGNED_TEAM;
pub use crate::format::csv::CsvStyle;
use crate::period::{AwsAccountId, Credits, DateRange, Metric};

/// A column to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Team,
    Project,
    User,
    Service,
    UsageType,
    InstanceType,
    /// training, batch, serving, dev or unknown: the SageMaker usage type's, else the
    /// project's declared workload.
    Workload,
    /// Cost Explorer's RECORD_TYPE: Usage, Credit, Refund, Tax, RIFee, …
    RecordType,
    /// The linked account's 12-digit ID ('' for facts stored before accounts were).
    Account,
    /// The linked account's name, as Cost Explorer last gave it.
    AccountName,
}

impl Key {
    pub const ALL: [Key; 10] = [
        Key::Team,
        Key::Project,
        Key::User,
        Key::Service,
        Key::UsageType,
        Key::InstanceType,
        Key::Workload,
        Key::RecordType,
        Key::Account,
        Key::AccountName,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::Team => "team",
            Key::Project => "project",
            Key::User => "user",
            Key::Service => "service",
            Key::UsageType => "usage_type",
            Key::InstanceType => "instance_type",
            Key::Workload => "workload",
            Key::RecordType => "record_type",
            Key::Account => "account",
            Key::AccountName => "account_name",
        }
    }

    /// The SQL expression for this key over fact table `c` joined to projects `p`, teams `t`
    /// and usage types `u`. Untagged and unknown values come out as ''.
    fn column(self) -> String {
        match self {
            Key::Team => format!("coalesce(t.name, '{UNASSIGNED_TEAM}')"),
            Key::Project => "c.project".into(),
            Key::User => "c.user_name".into(),
            Key::Service => "c.service".into(),
            Key::UsageType => "c.usage_type".into(),
            Key::InstanceType => "coalesce(u.instance_type, '')".into(),
            Key::Workload => crate::usage_type::WORKLOAD_SQL.into(),
            Key::RecordType => "c.record_type".into(),
            Key::Account => "c.account_id".into(),
            Key::AccountName => "coalesce(a.name, '')".into(),
        }
    }
}

/// Daily rows, or one row per calendar month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    Daily,
    Monthly,
}

/// Parses `--group-by`: comma-separated, no repeats, at least one key.
pub fn parse_keys(text: &str) -> Result<Vec<Key>, String> {
    let mut keys = Vec::new();
    for name in text.split(',').map(str::trim) {
        let key = Key::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
            format!(
                "unknown key {name:?}; expected team, project, user, service, usage_type, instance_type, workload, \
                 record_type, account or account_name"
            )
        })?;
        if keys.contains(&key) {
            return Err(format!("{name} is listed twice"));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// The fact table that holds every key: Cost Explorer groups by at most two dimensions,
/// so user, service, usage type and record type never meet in one grain.
pub fn table_for(keys: &[Key]) -> Result<&'static str, String> {
    let has = |k: Key| keys.contains(&k);
    // Accounts alone (with or without record types) are Cost Explorer's own account views,
    // exact to the last digit, where a sum over project grains is not.
    let by_account = has(Key::Account) || has(Key::AccountName);
    if by_account
        && keys
            .iter()
            .all(|k| matches!(k, Key::Account | Key::AccountName | Key::RecordType))
    {
        return Ok(match has(Key::RecordType) {
            true => "costs_by_account_record_type",
            false => "costs_by_account",
        });
    }
    let grains = [
        (has(Key::User), "costs_by_user"),
        (has(Key::Service), "costs_by_service"),
        (
            has(Key::UsageType) || has(Key::InstanceType) || has(Key::Workload),
            "costs_by_usage_type",
        ),
        (has(Key::RecordType), "costs_by_record_type"),
    ];
    let mut wanted = grains.iter().filter(|(wanted, _)| *wanted).map(|(_, table)| *table);
    match (wanted.next(), wanted.next()) {
        (Some(table), None) => Ok(table),
        // A team is its allocation (the Teams table's figures), with the projects it draws on
        // and the accounts its spend is in (every allocated row keeps its account).
        (None, _) if has(Key::Team) => Ok("allocated_daily_costs"),
        // Projects alone: any grain gives the same totals.
        (None, _) => Ok("costs_by_service"),
        (Some(_), Some(_)) => Err(
            "user, service, usage_type/instance_type/workload and record_type cannot be combined: Cost Explorer \
             reports at most two dimensions (project and one other) per request"
                .to_string(),
        ),
    }
}

/// `from`/`to` as the CLI and the download take them: `to` exclusive and after `from`.
pub fn checked_range(from: chrono::NaiveDate, to: chrono::NaiveDate) -> Result<DateRange, String> {
    if from >= to {
        return Err("from must be before to (to is exclusive)".into());
    }
    Ok(DateRange { from, to })
}

/// Keys that parse and that one fact table can answer.
pub fn checked_keys(text: &str) -> Result<Vec<Key>, String> {
    let keys = parse_keys(text)?;
    table_for(&keys)?;
    Ok(keys)
}

/// The header line: `date`, the keys in order, `cost`.
pub fn header(keys: &[Key]) -> String {
    let names: Vec<&str> = std::iter::once("date")
        .chain(keys.iter().map(|k| k.name()))
        .chain(["cost"])
        .collect();
    format!("{}\n", names.join(","))
}

/// Text handed to the sink at a time: whole lines, about this many bytes.
const CHUNK_BYTES: usize = 64 * 1024;

/// Streams the CSV for `range` (`date`, the keys in order, `cost`; sorted by date then keys;
/// exact decimals; no row for a day without spend) to `sink`, a chunk of whole lines at a
/// time, as the rows arrive from PostgreSQL: memory does not grow with the window. Runs in
/// `tx`, whose statement bound becomes `statement_bound` (none for the CLI: a large export
/// may take minutes). Stops early when
/// `sink` returns false (the client went away). Returns the rows written.
pub async fn stream_csv<F, Fut>(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    range: DateRange,
    keys: &[Key],
    selection: &Selection,
    (style, statement_bound): (CsvStyle, Option<std::time::Duration>),
    mut sink: F,
) -> Result<u64, ExportError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    use futures_util::TryStreamExt;
    use sqlx::Row;
    let sql = select_sql(keys, selection).map_err(ExportError::Invalid)?;
    sqlx::query(&format!(
        "set local statement_timeout = {}",
        statement_bound.map_or(0, |bound| bound.as_millis().max(1))
    ))
    .execute(&mut *tx)
    .await?;
    let mut out = header(keys);
    let mut written = 0u64;
    {
        let mut rows = sqlx::query(&sql).bind(range.from).bind(range.to).fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let day: NaiveDate = row.try_get(0)?;
            let _ = write!(out, "{day}");
            for i in 0..keys.len() {
                let value: String = row.try_get(i + 1)?;
                let _ = write!(out, ",{}", crate::format::csv::text(&value, style));
            }
            let cost: String = row.try_get(keys.len() + 1)?;
            // Exact, as stored: validated as a decimal rather than trusted blindly.
            cost.parse::<Decimal>()
                .map_err(|_| ExportError::Invalid(format!("stored cost {cost:?} is not a decimal")))?;
            let _ = writeln!(out, ",{cost}");
            written += 1;
            if out.len() >= CHUNK_BYTES && !sink(std::mem::take(&mut out)).await {
                return Ok(written);
            }
        }
    }
    if !out.is_empty() {
        sink(out).await;
    }
    tx.commit().await?;
    Ok(written)
}

/// The whole CSV as one string (tests, small windows).
pub async fn csv(
    pool: &PgPool,
    range: DateRange,
    keys: &[Key],
    granularity: Granularity,
    metric: Metric,
) -> Result<String, ExportError> {
    let tx = pool.begin().await?;
    let mut all = String::new();
    stream_csv(
        tx,
        range,
        keys,
        &Selection {
            granularity,
            metric,
            credits: Credits::Net,
            account: None,
            team: None,
        },
        (CsvStyle::Verbatim, None),
        |chunk| {
            all.push_str(&chunk);
            std::future::ready(true)
        },
    )
    .await?;
    Ok(all)
}

/// What an export sums besides its keys: daily or monthly rows, the metric, net of credits
/// or before them, one linked account (`?account=`, `--account`) or every one, and one team's
/// spend (an API token limited to that team) or every team's.
#[derive(Debug, Clone)]
pub struct Selection {
    pub granularity: Granularity,
    pub metric: Metric,
    pub credits: Credits,
    pub account: Option<AwsAccountId>,
    pub team: Option<i64>,
}

/// The fact table for `keys` counted as `credits` says. Before credits, a row must know its
/// record type: the allocation keeps each row's credit and refund parts, and the project ×
/// record type grain holds them; the user, service and usage type grains do not.
pub fn table_for_credits(keys: &[Key], credits: Credits) -> Result<&'static str, String> {
    let table = table_for(keys)?;
    match (credits, table) {
        (Credits::Net, _)
        | (Credits::Gross, "allocated_daily_costs" | "costs_by_record_type" | "costs_by_account_record_type") => {
            Ok(table)
        }
        (Credits::Gross, "costs_by_service") if !keys.contains(&Key::Service) => Ok("costs_by_record_type"),
        (Credits::Gross, "costs_by_account") => Ok("costs_by_account_record_type"),
        (Credits::Gross, _) => Err(
            "credits=gross needs team, project, record_type, account or account_name keys only: Cost Explorer's \
             user, service and usage type grains do not say which part of a cost is a credit"
                .to_string(),
        ),
    }
}

/// The allocation summed per day, team, step and account (a page rollup).
const ALLOCATION_BY_ACCOUNT: &str = "team_account_daily_costs";

/// The `select` behind an export: `day`, `k0`…, `cost` (text), sorted by them all.
pub(super) fn select_sql(keys: &[Key], selection: &Selection) -> Result<String, String> {
    let table = match (table_for_credits(keys, selection.credits)?, selection.team) {
        // The account views know no project, so no team: one team's spend by account is its
        // projects' record-type grain.
        ("costs_by_account" | "costs_by_account_record_type", Some(_)) => "costs_by_record_type",
        // Without projects, the allocation's rollup per team, step and account has the same
        // sums in a few hundred rows a month instead of every project's and user tag's.
        ("allocated_daily_costs", _) if !keys.contains(&Key::Project) => ALLOCATION_BY_ACCOUNT,
        (table, _) => table,
    };
    let date = match selection.granularity {
        Granularity::Daily => "c.day",
        Granularity::Monthly => "date_trunc('month', c.day)::date",
    };
    let columns: Vec<String> = keys.iter().map(|k| k.column()).collect();
    let group: Vec<String> = (1..=keys.len() + 1).map(|i| i.to_string()).collect();
    let metric = selection.metric.key();
    let (spend, gross_only) = match (selection.credits, table) {
        (Credits::Net, _) => (format!("c.{metric}"), ""),
        (Credits::Gross, "allocated_daily_costs" | ALLOCATION_BY_ACCOUNT) => (
            crate::period::Basis {
                metric: selection.metric,
                credits: Credits::Gross,
            }
            .spend_sql("c"),
            "",
        ),
        (Credits::Gross, _) => (format!("c.{metric}"), " and c.record_type not in ('Credit', 'Refund')"),
    };
    // The team is the allocation's own, or the one owning the project; an id, never text.
    let team = selection.team.map_or(String::new(), |id| format!(" and t.id = {id}"));
    Ok(format!(
        "select {date} as day, {cols}, sum({spend})::text as cost
         from {table} c
         {team_join}
         {usage_join}
         {account_join}
         where c.day >= $1 and c.day < $2{account}{gross_only}{team}
         group by {group}
         having sum({spend}) <> 0
         order by {group}",
        cols = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} as k{i}"))
            .collect::<Vec<_>>()
            .join(", "),
        account = AwsAccountId::and_in(selection.account.as_ref(), "c.account_id"),
        team_join = if table == "allocated_daily_costs" || table == ALLOCATION_BY_ACCOUNT {
            "left join teams t on t.id = c.team_id"
        } else if table.starts_with("costs_by_account") {
            ""
        } else {
            "left join projects p on p.name = c.project left join teams t on t.id = p.team_id"
        },
        usage_join = if table == "costs_by_usage_type" {
            "left join usage_types u on u.usage_type = c.usage_type"
        } else {
            ""
        },
        account_join = if keys.contains(&Key::AccountName) {
            "left join aws_accounts a on a.account_id = c.account_id"
        } else {
            ""
        },
        group = group.join(", "),
    ))
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Invalid(String),
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_limited_export_by_account_sums_that_teams_projects_not_the_account_views() {
        let selection = |team: Option<i64>, credits: Credits| Selection {
            granularity: Granularity::Daily,
            metric: Metric::Unblended,
            credits,
            account: None,
            team,
        };
        for keys in ["account", "account,record_type", "account_name"] {
            let keys = parse_keys(keys).expect("keys");
            for credits in [Credits::Net, Credits::Gross] {
                let limited = select_sql(&keys, &selection(Some(7), credits)).expect("sql");
                assert!(limited.contains("from costs_by_record_type c"), "{limited}");
                assert!(limited.contains("join teams t on t.id = p.team_id"), "{limited}");
                assert!(limited.contains("and t.id = 7"), "{limited}");
                let whole = select_sql(&keys, &selection(None, credits)).expect("sql");
                assert!(whole.contains("from costs_by_account"), "{whole}");
                assert!(!whole.contains("t.id"), "{whole}");
            }
        }
    }

    #[test]
    fn keys_parse_in_order_and_reject_unknowns_and_repeats() {
        assert_eq!(
            parse_keys("team,project,user"),
            Ok(vec![Key::Team, Key::Project, Key::User])
        );
        assert!(
            parse_keys("team,cluster")
                .unwrap_err()
                .contains("unknown key \"cluster\"")
        );
        assert!(parse_keys("project,project").unwrap_err().contains("twice"));
        assert!(parse_keys("").is_err());
    }

    #[test]
    fn each_key_set_reads_the_grain_that_holds_it() {
        assert_eq!(table_for(&[Key::Team, Key::User]), Ok("costs_by_user"));
        assert_eq!(table_for(&[Key::Project, Key::InstanceType]), Ok("costs_by_usage_type"));
        assert_eq!(table_for(&[Key::Service]), Ok("costs_by_service"));
        assert_eq!(table_for(&[Key::Team, Key::Workload]), Ok("costs_by_usage_type"));
        assert_eq!(table_for(&[Key::Project, Key::RecordType]), Ok("costs_by_record_type"));
        assert!(table_for(&[Key::RecordType, Key::Service]).is_err());
        assert_eq!(table_for(&[Key::Team]), Ok("allocated_daily_costs"));
        assert_eq!(table_for(&[Key::Team, Key::Project]), Ok("allocated_daily_costs"));
        assert_eq!(table_for(&[Key::Project]), Ok("costs_by_service"));
        assert!(table_for(&[Key::User, Key::Service]).is_err());
        assert!(table_for(&[Key::User, Key::UsageType]).is_err());
        // Every grain holds the account; a team by account is the owning team's facts.
        assert_eq!(table_for(&[Key::Account, Key::User]), Ok("costs_by_user"));
        assert_eq!(table_for(&[Key::Team, Key::Account]), Ok("allocated_daily_costs"));
        // Accounts alone are Cost Explorer's own account views.
        assert_eq!(table_for(&[Key::AccountName]), Ok("costs_by_account"));
        assert_eq!(table_for(&[Key::Account, Key::AccountName]), Ok("costs_by_account"));
        assert_eq!(
            table_for(&[Key::Account, Key::RecordType]),
            Ok("costs_by_account_record_type")
        );
        assert_eq!(table_for(&[Key::Account, Key::Project]), Ok("costs_by_service"));
        assert_eq!(
            table_for_credits(&[Key::Account], Credits::Gross),
            Ok("costs_by_account_record_type")
        );
        assert_eq!(
            parse_keys("account,account_name,project"),
            Ok(vec![Key::Account, Key::AccountName, Key::Project])
        );
    }
}
