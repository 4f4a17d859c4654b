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
        for spent in super::judge::project_spends(conn, range).await? {
            let Some(policy) = policies.get(&spent.team).or_else(|| policies.get(&None)) else {
                continue;
            };
            if policy.period != period.key() {
                continue;
            }
            let row = NearLimit {
                spend: spent.in_metric(policy.metric),
                project: spent.project,
                team: spent.team.unwrap_or_default(),
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
