//! The daily series anomalies are found in, read from the daily totals, the page rollups and
//! the facts: per project, team (its allocated spend), user tag, service, linked account and
//! the organisation, unblended (net of credits, as the bill).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::format::UNASSIGNED_TEAM;
use crate::period::DateRange;

/// What a series is the spend of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Org,
    Team,
    Project,
    User,
    Service,
    Account,
}

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::Org,
        Scope::Team,
        Scope::Project,
        Scope::User,
        Scope::Service,
        Scope::Account,
    ];

    /// The name in CSV, YAML and `--scope`.
    pub fn key(self) -> &'static str {
        match self {
            Scope::Org => "org",
            Scope::Team => "team",
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Service => "service",
            Scope::Account => "account",
        }
    }

    pub fn parse(text: &str) -> Result<Scope, String> {
        Scope::ALL
            .into_iter()
            .find(|s| s.key() == text.trim())
            .ok_or_else(|| format!("unknown scope {text:?}: expected org, team, project, user, service or account"))
    }

    /// `name`, `day` and `spend` per series and day in `$1..$2`. Tag values are bound, never
    /// spliced; only this fixed text is.
    fn sql(self) -> String {
        match self {
            Scope::Org => "select 'organisation' as name, day, sum(unblended) as spend from daily_project_costs
                           where day >= $1 and day < $2 group by day"
                .into(),
            Scope::Team => format!(
                "select coalesce(t.name, '{UNASSIGNED_TEAM}') as name, a.day, sum(a.unblended) as spend
                 from team_daily_costs a left join teams t on t.id = a.team_id
                 where a.day >= $1 and a.day < $2 group by 1, 2"
            ),
            Scope::Project => by("project", "daily_project_costs"),
            Scope::User => by("user_name", "costs_by_user"),
            Scope::Service => by("service", "costs_by_service"),
            Scope::Account => by("account_id", "costs_by_account"),
        }
    }
}

/// The series named by `column` of `table`, summed per day.
fn by(column: &str, table: &str) -> String {
    format!(
        "select {column} as name, day, sum(unblended) as spend from {table} where day >= $1 and day < $2 group by 1, 2"
    )
}

/// Each series of `scope` over `range`, one value a day from `range.from` (0 where it had no
/// row), by name.
pub async fn read(
    conn: &mut PgConnection,
    scope: Scope,
    range: DateRange,
) -> Result<BTreeMap<String, Vec<Decimal>>, sqlx::Error> {
    let rows: Vec<(String, NaiveDate, Decimal)> = sqlx::query_as(&scope.sql())
        .bind(range.from)
        .bind(range.to)
        .fetch_all(conn)
        .await?;
    let days = usize::try_from(range.days()).unwrap_or_default();
    let mut series: BTreeMap<String, Vec<Decimal>> = BTreeMap::new();
    for (name, day, spend) in rows {
        let Ok(i) = usize::try_from((day - range.from).num_days()) else {
            continue;
        };
        if let Some(value) = series
            .entry(name)
            .or_insert_with(|| vec![Decimal::ZERO; days])
            .get_mut(i)
        {
            *value += spend;
        }
    }
    Ok(series)
}
