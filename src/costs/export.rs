//! `burnrate export`: cost facts as CSV, grouped by the keys asked for, in the format every
//! dashboard table downloads. Each key set is answered from the one fact table whose grain
//! holds all its keys, so totals equal Cost Explorer's for the same days.

use std::fmt::Write as _;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::UNASSIGNED_TEAM;
use super::period::{DateRange, Metric};

/// A column to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Team,
    Project,
    User,
    Service,
    UsageType,
    InstanceType,
}

impl Key {
    pub const ALL: [Key; 6] = [
        Key::Team,
        Key::Project,
        Key::User,
        Key::Service,
        Key::UsageType,
        Key::InstanceType,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::Team => "team",
            Key::Project => "project",
            Key::User => "user",
            Key::Service => "service",
            Key::UsageType => "usage_type",
            Key::InstanceType => "instance_type",
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
            format!("unknown key {name:?}; expected team, project, user, service, usage_type or instance_type")
        })?;
        if keys.contains(&key) {
            return Err(format!("{name} is listed twice"));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// The fact table that holds every key: Cost Explorer groups by at most two dimensions,
/// so user, service and usage type never meet in one grain.
pub fn table_for(keys: &[Key]) -> Result<&'static str, String> {
    let has = |k: Key| keys.contains(&k);
    let by_usage = has(Key::UsageType) || has(Key::InstanceType);
    match (has(Key::User), has(Key::Service), by_usage) {
        (true, false, false) => Ok("costs_by_user"),
        (false, true, false) => Ok("costs_by_service"),
        (false, false, true) => Ok("costs_by_usage_type"),
        // Project and team alone: any grain gives the same totals.
        (false, false, false) => Ok("costs_by_service"),
        _ => Err(
            "user, service and usage_type/instance_type cannot be combined: Cost Explorer reports \
                  at most two dimensions (project and one other) per request"
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

/// Writes the CSV for `range` to a string: `date`, the keys in order, `cost`; sorted by date
/// then keys; exact decimals; no row for a day without spend.
pub async fn csv(
    pool: &PgPool,
    range: DateRange,
    keys: &[Key],
    granularity: Granularity,
    metric: Metric,
) -> Result<String, ExportError> {
    let table = table_for(keys).map_err(ExportError::Invalid)?;
    let date = match granularity {
        Granularity::Daily => "c.day",
        Granularity::Monthly => "date_trunc('month', c.day)::date",
    };
    let columns: Vec<String> = keys.iter().map(|k| k.column()).collect();
    let group: Vec<String> = (1..=keys.len() + 1).map(|i| i.to_string()).collect();
    let sql = format!(
        "select {date}, {cols}, sum(c.{metric})::text
         from {table} c
         left join projects p on p.name = c.project
         left join teams t on t.id = p.team_id
         {usage_join}
         where c.day >= $1 and c.day < $2
         group by {group}
         having sum(c.{metric}) <> 0
         order by {group}",
        cols = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} as k{i}"))
            .collect::<Vec<_>>()
            .join(", "),
        metric = metric.key(),
        usage_join = if table == "costs_by_usage_type" {
            "left join usage_types u on u.usage_type = c.usage_type"
        } else {
            ""
        },
        group = group.join(", "),
    );
    let rows = sqlx::query(&sql)
        .bind(range.from)
        .bind(range.to)
        .fetch_all(pool)
        .await?;

    let mut out = String::new();
    let header: Vec<&str> = std::iter::once("date")
        .chain(keys.iter().map(|k| k.name()))
        .chain(["cost"])
        .collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for row in rows {
        use sqlx::Row;
        let day: NaiveDate = row.try_get(0)?;
        let mut fields = vec![day.to_string()];
        for i in 0..keys.len() {
            fields.push(row.try_get::<String, _>(i + 1)?);
        }
        let cost: String = row.try_get(keys.len() + 1)?;
        // Exact, as stored: validated as a decimal rather than trusted blindly.
        cost.parse::<Decimal>()
            .map_err(|_| ExportError::Invalid(format!("stored cost {cost:?} is not a decimal")))?;
        fields.push(cost);
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        let _ = writeln!(out, "{}", line.join(","));
    }
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Invalid(String),
    #[error("database: {0}")]
    Sql(#[from] sqlx::Error),
}

/// RFC 4180: quote fields holding commas, quotes or line breaks; double inner quotes.
pub fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(table_for(&[Key::Team]), Ok("costs_by_service"));
        assert!(table_for(&[Key::User, Key::Service]).is_err());
        assert!(table_for(&[Key::User, Key::UsageType]).is_err());
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("line\nbreak"), "\"line\nbreak\"");
        assert_eq!(
            csv_field("<img src=x onerror=alert(1)>"),
            "<img src=x onerror=alert(1)>"
        );
    }
}
