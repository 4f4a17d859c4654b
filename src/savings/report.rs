//! The monthly savings report finance forwards (`/savings/report`, its CSV and printable
//! HTML). For one UTC calendar month:
//! - **GPU spend**: the month's GPU spend (unblended, accelerator usage types) up to today,
//!   by the team owning each project now; no team is "Unassigned".
//! - **Proposed**: the recommendations open now that count in the totals, compounded (what
//!   "Savings available" sums), by lever and team: what is on the table as the report is made.
//! - **Accepted**: decisions accepted in the month and still standing, each at what it added
//!   after the other rows it was proposed with (the compounded figure; the ledger's Accepted),
//!   a group of decisions on the same spend never more than that spend's baseline month.
//! - **Realised**: dollars saved in the month's settled days by the standing accepted
//!   decisions, measured once per group of decisions on overlapping spend (`realised`): the
//!   group's daily rate in the 30 days before its first decision × the days on and after it
//!   (for 90 days) − what they cost, at most the former, split by compounded shares.
//! - **Before and after, per lever**: each decision's share of its group's 30 days before and
//!   of the month's days after scaled to 30 days: −58 % reads as seed 002's.

use std::collections::BTreeMap;

use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::insights::Insights;
use super::model::{Kind, LeverRow, SavingsReport, TeamRow};
use super::realised::{self, BEFORE_DAYS};
use super::store;
use crate::period::DateRange;

#[derive(Default)]
struct Sums {
    proposed: Decimal,
    accepted: Decimal,
    realised: Decimal,
    before: Option<Decimal>,
    after: Option<Decimal>,
}

pub async fn compute(
    pool: &PgPool,
    insights: &Insights,
    month: DateRange,
    today: NaiveDate,
) -> Result<SavingsReport, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let spend_to = month.to.min(today).max(month.from);
    let settled_to = store::last_settled_day(&mut conn)
        .await?
        .map_or(month.from, |day| (day + Days::new(1)).clamp(month.from, month.to));
    let spend: Vec<(String, Decimal)> = sqlx::query_as(
        "select coalesce(t.name, ''), coalesce(sum(d.gpu_unblended), 0)
         from daily_project_costs d
         left join projects p on p.name = d.project
         left join teams t on t.id = p.team_id
         where d.day >= $1 and d.day < $2
         group by 1",
    )
    .bind(month.from)
    .bind(spend_to)
    .fetch_all(&mut *conn)
    .await?;
    let mut levers: BTreeMap<Kind, Sums> = BTreeMap::new();
    let mut teams: BTreeMap<String, Sums> = BTreeMap::new();
    let decided = store::current_decisions(&mut conn).await?;
    for r in insights
        .recommendations
        .iter()
        .filter(|r| r.counts_in_totals() && !decided.contains_key(&r.key()))
    {
        levers.entry(r.kind).or_default().proposed += r.compounded_saving;
        teams.entry(r.team.clone()).or_default().proposed += r.compounded_saving;
    }
    // Decisions whose measured spend overlaps are measured once, together, and their drop
    // split by the compounded figures they were accepted at (`realised`).
    for group in realised::groups(&mut conn).await? {
        let accepted = group.accepted();
        for (decision, figure) in group.decisions.iter().zip(&accepted) {
            if decision.decided_on >= month.from && decision.decided_on < month.to {
                levers.entry(decision.kind()).or_default().accepted += *figure;
                teams.entry(decision.team.clone()).or_default().accepted += *figure;
            }
        }
        let after = DateRange {
            from: month.from,
            to: settled_to,
        };
        let Some(measured) = group.measure(&mut conn, after).await? else {
            continue;
        };
        let days = Decimal::from(measured.days);
        let saved = group.split(measured.realised);
        let before = group.split(group.baseline);
        let spent = group.split(measured.spent * Decimal::from(BEFORE_DAYS) / days);
        for (i, decision) in group.decisions.iter().enumerate() {
            let lever = levers.entry(decision.kind()).or_default();
            lever.realised += saved[i];
            lever.before = Some(lever.before.unwrap_or_default() + before[i]);
            lever.after = Some(lever.after.unwrap_or_default() + spent[i]);
            teams.entry(decision.team.clone()).or_default().realised += saved[i];
        }
    }
    let spend: BTreeMap<String, Decimal> = spend.into_iter().collect();
    for team in spend.keys() {
        teams.entry(team.clone()).or_default();
    }
    let mut team_rows: Vec<TeamRow> = teams
        .into_iter()
        .map(|(team, s)| TeamRow {
            gpu_spend: spend.get(&team).copied().unwrap_or_default(),
            team,
            proposed: s.proposed,
            accepted: s.accepted,
            realised: s.realised,
        })
        .collect();
    team_rows.sort_by(|a, b| b.gpu_spend.cmp(&a.gpu_spend).then_with(|| a.team.cmp(&b.team)));
    let lever_rows: Vec<LeverRow> = levers
        .into_iter()
        .map(|(kind, s)| LeverRow {
            kind,
            proposed: s.proposed,
            accepted: s.accepted,
            realised: s.realised,
            before: s.before,
            after: s.after,
        })
        .collect();
    Ok(SavingsReport {
        month: month.from,
        spend_to,
        settled_to,
        gpu_spend: spend.values().copied().sum(),
        proposed: lever_rows.iter().map(|l| l.proposed).sum(),
        accepted: lever_rows.iter().map(|l| l.accepted).sum(),
        realised: lever_rows.iter().map(|l| l.realised).sum(),
        levers: lever_rows,
        teams: team_rows,
    })
}
