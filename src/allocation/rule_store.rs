//! Shared-cost rules in Postgres. Callers hold the transaction and call
//! `store::refresh_every_day` after a change, so the allocation never lags the rules.

use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::engine::Rule;
use super::model::{RuleTeam, Selector, SharedRule, SplitKind};
use crate::audit_log::{Actor, record};
use crate::error::FieldError;

#[derive(sqlx::FromRow)]
struct RuleRow {
    id: i64,
    name: String,
    selector: String,
    selector_values: Vec<String>,
    split: String,
    teams: Vec<String>,
    percents: Vec<Option<Decimal>>,
}

/// Every rule in the order it is applied.
pub async fn list(conn: &mut PgConnection) -> Result<Vec<SharedRule>, sqlx::Error> {
    Ok(stored(conn).await?.into_iter().map(|(_, rule)| rule).collect())
}

/// Every rule with its id, in the order it is applied.
async fn stored(conn: &mut PgConnection) -> Result<Vec<(i64, SharedRule)>, sqlx::Error> {
    let rows: Vec<RuleRow> = sqlx::query_as(
        "select r.id, r.name, r.selector, r.selector_values, r.split,
                coalesce(array_agg(t.name order by t.name) filter (where t.name is not null), '{}') as teams,
                coalesce(array_agg(rt.percent order by t.name) filter (where t.name is not null), '{}') as percents
         from allocation_rules r
         left join allocation_rule_teams rt on rt.rule_id = r.id
         left join teams t on t.id = rt.team_id
         group by r.id order by r.position, r.id",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            (
                row.id,
                SharedRule {
                    name: row.name,
                    selector: match row.selector.as_str() {
                        "projects" => Selector::Projects(row.selector_values),
                        "services" => Selector::Services(row.selector_values),
                        _ => Selector::Untagged,
                    },
                    // The table's check allows only the three kinds.
                    split: SplitKind::parse(&row.split).unwrap_or(SplitKind::Even),
                    teams: row
                        .teams
                        .into_iter()
                        .zip(row.percents)
                        .map(|(team, percent)| RuleTeam {
                            team,
                            percent: percent.map(|p| p.normalize()),
                        })
                        .collect(),
                },
            )
        })
        .collect())
}

/// The stored rules as the engine applies them, with their ids.
pub async fn engine_rules(conn: &mut PgConnection) -> Result<Vec<Rule>, sqlx::Error> {
    let stored = stored(conn).await?;
    let rules: Vec<SharedRule> = stored.iter().map(|(_, rule)| rule.clone()).collect();
    let mut resolved = resolve(conn, &rules).await?;
    for (rule, (id, _)) in resolved.iter_mut().zip(&stored) {
        rule.id = *id;
    }
    Ok(resolved)
}

/// What the database says is wrong with `rule`: a team that does not exist, or a named
/// project a team owns (its spend is that team's, so no rule could take it).
pub async fn check(conn: &mut PgConnection, rule: &SharedRule) -> Result<Vec<FieldError>, sqlx::Error> {
    let mut errors = Vec::new();
    for team in &rule.teams {
        let known: bool = sqlx::query_scalar("select exists (select 1 from teams where name = $1)")
            .bind(&team.team)
            .fetch_one(&mut *conn)
            .await?;
        if !known {
            errors.push(FieldError::new(
                "teams",
                format!("there is no team named {:?}", team.team),
            ));
        }
    }
    if let Selector::Projects(projects) = &rule.selector {
        let owned: Vec<(String, String)> = sqlx::query_as(
            "select p.name, t.name from projects p join teams t on t.id = p.team_id
             where p.name = any($1) order by p.name",
        )
        .bind(projects)
        .fetch_all(&mut *conn)
        .await?;
        for (project, team) in owned {
            errors.push(FieldError::new(
                "values",
                format!(
                    "project {:?} belongs to team {team:?}, and a team's own projects stay its own; unmap it to share it",
                    crate::format::tag_label(&project)
                ),
            ));
        }
    }
    Ok(errors)
}

/// Replaces every rule with `rules`, in their order, auditing what changed. Returns the
/// changes, worded for the CLI and the audit log. Run `check` on each rule first.
pub async fn replace_all(
    conn: &mut PgConnection,
    actor: &Actor,
    rules: &[SharedRule],
) -> Result<Vec<String>, sqlx::Error> {
    let current = list(conn).await?;
    if current == rules {
        return Ok(Vec::new());
    }
    let mut changes = Vec::new();
    for old in &current {
        if !rules.iter().any(|r| r.name.eq_ignore_ascii_case(&old.name)) {
            changes.push(format!("delete shared-cost rule {:?}", old.name));
        }
    }
    for (position, rule) in rules.iter().enumerate() {
        match current.iter().position(|r| r.name.eq_ignore_ascii_case(&rule.name)) {
            None => changes.push(format!("create shared-cost rule {:?}: {}", rule.name, describe(rule))),
            Some(at) if current[at] != *rule || at != position => {
                changes.push(format!("update shared-cost rule {:?}: {}", rule.name, describe(rule)))
            }
            Some(_) => {}
        }
    }
    sqlx::query("delete from allocation_rules").execute(&mut *conn).await?;
    for (position, rule) in rules.iter().enumerate() {
        insert(conn, rule, position as i32).await?;
    }
    record(
        conn,
        actor,
        "allocation.rules.replace",
        "shared-cost rules",
        serde_json::json!({ "changes": changes, "rules": rules.iter().map(|r| serde_json::json!({
            "name": r.name, "takes": r.selector.label(), "split": r.split_label()
        })).collect::<Vec<_>>() }),
    )
    .await?;
    Ok(changes)
}

/// "services EC2 - Other → proportional over every team".
pub fn describe(rule: &SharedRule) -> String {
    format!("{} → {}", rule.selector.label(), rule.split_label())
}

async fn insert(conn: &mut PgConnection, rule: &SharedRule, position: i32) -> Result<(), sqlx::Error> {
    let (selector, values): (&str, &[String]) = match &rule.selector {
        Selector::Untagged => ("untagged", &[]),
        Selector::Projects(values) => ("projects", values),
        Selector::Services(values) => ("services", values),
    };
    let id: i64 = sqlx::query_scalar(
        "insert into allocation_rules (name, position, selector, selector_values, split)
         values ($1, $2, $3, $4, $5) returning id",
    )
    .bind(&rule.name)
    .bind(position)
    .bind(selector)
    .bind(values)
    .bind(rule.split.key())
    .fetch_one(&mut *conn)
    .await?;
    for team in &rule.teams {
        sqlx::query(
            "insert into allocation_rule_teams (rule_id, team_id, percent)
             select $1, id, $3 from teams where name = $2",
        )
        .bind(id)
        .bind(&team.team)
        .bind(team.percent)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Rules as the engine applies them, with team names resolved to ids; a team that does
/// not exist is left out (the caller ran `check`).
pub async fn resolve(conn: &mut PgConnection, rules: &[SharedRule]) -> Result<Vec<Rule>, sqlx::Error> {
    let mut resolved = Vec::new();
    for (n, rule) in rules.iter().enumerate() {
        let mut teams = Vec::new();
        for team in &rule.teams {
            let id: Option<i64> = sqlx::query_scalar("select id from teams where name = $1")
                .bind(&team.team)
                .fetch_optional(&mut *conn)
                .await?;
            if let Some(id) = id {
                teams.push((id, team.percent.unwrap_or_default()));
            }
        }
        resolved.push(Rule {
            // Proposed rules have no ids yet: their positions stand in (`engine_rules` sets
            // the stored ones').
            id: -(n as i64) - 1,
            untagged: rule.selector == Selector::Untagged,
            projects: match &rule.selector {
                Selector::Projects(p) => p.clone(),
                _ => Vec::new(),
            },
            services: match &rule.selector {
                Selector::Services(s) => s.clone(),
                _ => Vec::new(),
            },
            split: rule.split,
            teams,
        });
    }
    Ok(resolved)
}
