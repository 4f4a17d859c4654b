//! Projects close to their policy limit now: each tagged project's spend in the current period
//! of the policy that governs it (its team's, else the org default), as a share of that
//! limit. What `/metrics` watches before a violation is recorded.

use std::collections::HashMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::policy::{self, Policy};
use crate::period::BudgetPeriod;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearLimit {
    pub project: String,
    /// Empty for a project no team owns.
    pub team: String,
    pub spend: Decimal,
    pub limit: Decimal,
}

impl NearLimit {
    pub fn used(&self) -> Decimal {
        if self.limit > Decimal::ZERO {
            self.spend / self.limit
        } else {
            Decimal::ZERO
        }
    }
}

/// The projects at or above `share` of their limit (0.8 is 80 %), the closest to it first, at
/// most `most`.
pub async fn projects(
    conn: &mut PgConnection,
    today: NaiveDate,
    share: Decimal,
    most: usize,
) -> Result<Vec<NearLimit>, sqlx::Error> {
    let policies: HashMap<Option<String>, Policy> = policy::all(conn)
        .await?
        .into_iter()
        .map(|p| (p.team.clone(), p))
        .collect();
    let mut near = Vec::new();
    for period in BudgetPeriod::ALL {
        let range = period.containing(today);
        let spends: Vec<(String, Option<String>, Decimal, Decimal)> = sqlx::query_as(
            "select r.project, t.name, sum(r.unblended), sum(r.amortized)
             from daily_project_costs r left join projects p on p.name = r.project left join teams t on t.id = p.team_id
             where r.day >= $1 and r.day < $2 and r.project <> ''
             group by 1, 2",
        )
        .bind(range.from)
        .bind(range.to)
        .fetch_all(&mut *conn)
        .await?;
        for (project, team, unblended, amortized) in spends {
            let Some(policy) = policies.get(&team).or_else(|| policies.get(&None)) else {
                continue;
            };
            if policy.period != period.key() {
                continue;
            }
            let spend = match policy.metric {
                crate::period::Metric::Unblended => unblended,
                crate::period::Metric::Amortized => amortized,
            };
            let row = NearLimit {
                project,
                team: team.unwrap_or_default(),
                spend,
                limit: policy.limit,
            };
            if row.used() >= share {
                near.push(row);
            }
        }
    }
    near.sort_by(|a, b| b.used().cmp(&a.used()).then_with(|| a.project.cmp(&b.project)));
    near.truncate(most);
    Ok(near)
}
