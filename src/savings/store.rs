//! Reads and writes of GPU savings: what each project declares, and the decisions taken on
//! recommendations.

use std::collections::HashMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Decision, Kind, Model, Precision, ProjectFacts, Recommendation, Workload};
use crate::audit_log::{self, Actor};
use crate::costs::settlement::SETTLED;

/// What `project` declares (the default when it has no row).
pub async fn project_facts(conn: &mut PgConnection, project: &str) -> Result<ProjectFacts, sqlx::Error> {
    let row: Option<(String, Option<Decimal>, Option<String>)> =
        sqlx::query_as("select workload, model_params_b, model_precision from projects where name = $1")
            .bind(project)
            .fetch_optional(conn)
            .await?;
    Ok(row.map(facts_from_row).unwrap_or_default())
}

/// What a project declares and the team owning it, its row locked until the transaction
/// ends, so a confirmation decides on what it then writes over.
pub async fn project_facts_for_update(
    conn: &mut PgConnection,
    project: &str,
) -> Result<(ProjectFacts, Option<String>), sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Locked {
        workload: String,
        model_params_b: Option<Decimal>,
        model_precision: Option<String>,
        team: Option<String>,
    }
    let row: Option<Locked> = sqlx::query_as(
        "select p.workload, p.model_params_b, p.model_precision, t.name as team
         from projects p left join teams t on t.id = p.team_id
         where p.name = $1
         for update of p",
    )
    .bind(project)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        Some(r) => (
            facts_from_row((r.workload, r.model_params_b, r.model_precision)),
            r.team,
        ),
        None => (ProjectFacts::default(), None),
    })
}

/// Every project's declared facts.
pub async fn all_project_facts(conn: &mut PgConnection) -> Result<HashMap<String, ProjectFacts>, sqlx::Error> {
    let rows: Vec<(String, String, Option<Decimal>, Option<String>)> =
        sqlx::query_as("select name, workload, model_params_b, model_precision from projects")
            .fetch_all(conn)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(name, w, p, m)| (name, facts_from_row((w, p, m))))
        .collect())
}

/// What a project declares, from its `projects` columns (workload, params_b, precision).
pub(super) fn facts_from_row(
    (workload, params_b, precision): (String, Option<Decimal>, Option<String>),
) -> ProjectFacts {
    ProjectFacts {
        workload: Workload::parse(&workload).unwrap_or_default(),
        model: match (params_b, precision.as_deref().and_then(Precision::parse)) {
            (Some(params_b), Some(precision)) => Some(Model { params_b, precision }),
            _ => None,
        },
    }
}

/// Sets what a project declares, creating the project row if spend has not named it yet.
/// Returns whether anything changed; the change is audited in the same transaction.
pub async fn set_project_facts(
    conn: &mut PgConnection,
    actor: &Actor,
    project: &str,
    facts: ProjectFacts,
) -> Result<bool, sqlx::Error> {
    let before = project_facts(&mut *conn, project).await?;
    if before == facts {
        return Ok(false);
    }
    sqlx::query(
        "insert into projects (name, workload, model_params_b, model_precision) values ($1, $2, $3, $4)
         on conflict (name) do update set workload = excluded.workload, model_params_b = excluded.model_params_b,
             model_precision = excluded.model_precision, updated_at = now()",
    )
    .bind(project)
    .bind(facts.workload.key())
    .bind(facts.model.map(|m| m.params_b))
    .bind(facts.model.map(|m| m.precision.key()))
    .execute(&mut *conn)
    .await?;
    audit_log::record(
        conn,
        actor,
        "project.workload",
        project,
        serde_json::json!({"before": before, "after": facts}),
    )
    .await?;
    Ok(true)
}

/// The current decision on each recommendation key, with its reason.
pub async fn current_decisions(conn: &mut PgConnection) -> Result<HashMap<String, (Decision, String)>, sqlx::Error> {
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("select recommendation_key, decision, reason from savings_decisions where ended_at is null")
            .fetch_all(conn)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(key, decision, reason)| {
            let decision = if decision == "accepted" {
                Decision::Accepted
            } else {
                Decision::Dismissed
            };
            (key, (decision, reason))
        })
        .collect())
}

/// Records a decision on `recommendation`, ending any earlier one, with its audit entry.
pub async fn decide(
    conn: &mut PgConnection,
    actor: &Actor,
    recommendation: &Recommendation,
    decision: Decision,
    reason: &str,
    (today, data_version): (NaiveDate, i64),
) -> Result<(), sqlx::Error> {
    let key = recommendation.key();
    // Two people deciding at once: the second waits, then ends the first's decision.
    sqlx::query("select pg_advisory_xact_lock(hashtext('savings:' || $1))")
        .bind(&key)
        .execute(&mut *conn)
        .await?;
    sqlx::query("update savings_decisions set ended_at = now() where recommendation_key = $1 and ended_at is null")
        .bind(&key)
        .execute(&mut *conn)
        .await?;
    let word = match decision {
        Decision::Accepted => "accepted",
        Decision::Dismissed => "dismissed",
        Decision::Open => {
            return audit_log::record(
                conn,
                actor,
                "savings.reopen",
                &key,
                serde_json::json!({"reason": reason}),
            )
            .await;
        }
    };
    sqlx::query(
        "insert into savings_decisions (recommendation_key, kind, team, project, usage_type, instance_type, decision,
             reason, proposed_monthly_saving, decided_by, decided_on, compounded_monthly_saving, data_version)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&key)
    .bind(recommendation.kind.key())
    .bind(&recommendation.team)
    .bind(&recommendation.project)
    .bind(&recommendation.usage_type)
    .bind(&recommendation.instance_type)
    .bind(word)
    .bind(reason)
    .bind(recommendation.monthly_saving.round_dp(2))
    .bind(&actor.label)
    .bind(today)
    // Exact, as computed: the ledger splits measured drops by these shares.
    .bind(recommendation.compounded_saving)
    .bind(data_version)
    .execute(&mut *conn)
    .await?;
    audit_log::record(
        conn,
        actor,
        &format!("savings.{word}"),
        &format!("{} {}", recommendation.kind.key(), recommendation.project),
        serde_json::json!({
            "kind": recommendation.kind.key(),
            "project": recommendation.project,
            "usage_type": recommendation.usage_type,
            "instance_type": recommendation.instance_type,
            "monthly_saving": recommendation.monthly_saving.round_dp(2),
            "compounded_monthly_saving": recommendation.compounded_saving.round_dp(2),
            "data_version": data_version,
            "reason": reason,
        }),
    )
    .await
}

/// An accepted decision, as the ledger measures it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Accepted {
    pub kind: String,
    pub team: String,
    pub project: String,
    pub usage_type: String,
    pub instance_type: String,
    pub reason: String,
    /// The row's own saving when it was accepted.
    pub proposed_monthly_saving: Decimal,
    /// What the row added after the others in the set it was accepted from.
    pub compounded_monthly_saving: Decimal,
    pub decided_by: String,
    pub decided_on: NaiveDate,
}

impl Accepted {
    /// The kind, as the table's check constraint allows only the six kinds.
    pub fn kind(&self) -> Kind {
        Kind::parse(&self.kind).unwrap_or(Kind::AlwaysOn)
    }
}

pub async fn accepted(conn: &mut PgConnection) -> Result<Vec<Accepted>, sqlx::Error> {
    sqlx::query_as(
        "select kind, team, project, usage_type, instance_type, reason, proposed_monthly_saving,
                compounded_monthly_saving, decided_by, decided_on
         from savings_decisions where ended_at is null and decision = 'accepted' order by decided_at desc, id desc",
    )
    .fetch_all(conn)
    .await
}

/// The cells (project, usage type) a decision's realised saving is measured on, with spend
/// between two days (`to` exclusive): what the change moves. Spot moves a type's hours from
/// on-demand to spot, so both count; right-sizing, idle and underused GPUs change the
/// project's GPU spend; a schedule changes the usage type's; a commitment changes the
/// family's cost in every project; deleting an idle endpoint changes the project's hosting
/// on that instance type.
pub async fn measured_cells(
    conn: &mut PgConnection,
    decision: &Accepted,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let scope = match decision.kind() {
        Kind::AlwaysOn => "c.project = $1 and c.usage_type = $2",
        Kind::Spot => "c.project = $1 and u.instance_type = $3",
        Kind::Rightsize | Kind::IdleGpu | Kind::Underused => "c.project = $1 and u.gpu_count > 0",
        // Deleting an endpoint ends the project's hosting of that instance type.
        Kind::IdleEndpoint => {
            "c.project = $1 and u.instance_type = regexp_replace($3, '^ml[.]', '') and c.usage_type like '%Host:%'"
        }
        Kind::Commitment => {
            "u.instance_family = split_part(trim(trailing '.*' from $3), '.', case when $3 like 'ml.%' then 2 else 1 end)
             and (($3 like 'ml.%') = (c.usage_type like '%:ml.%'))"
        }
    };
    sqlx::query_as(&format!(
        "select distinct c.project, c.usage_type from costs_by_usage_type c
         join usage_types u on u.usage_type = c.usage_type
         where {scope} and c.day >= $4 and c.day < $5
         order by 1, 2"
    ))
    .bind(&decision.project)
    .bind(&decision.usage_type)
    .bind(&decision.instance_type)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
}

/// Spend on `cells` between two days (`to` exclusive), amortized (what a commitment moves)
/// or unblended.
pub async fn cells_spend(
    conn: &mut PgConnection,
    cells: &[(String, String)],
    amortized: bool,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Decimal, sqlx::Error> {
    let metric = if amortized { "amortized" } else { "unblended" };
    sqlx::query_scalar(&format!(
        "select coalesce(sum(c.{metric}), 0) from costs_by_usage_type c
         join unnest($1::text[], $2::text[]) as cell(project, usage_type)
           on cell.project = c.project and cell.usage_type = c.usage_type
         where c.day >= $3 and c.day < $4"
    ))
    .bind(cells.iter().map(|c| c.0.clone()).collect::<Vec<_>>())
    .bind(cells.iter().map(|c| c.1.clone()).collect::<Vec<_>>())
    .bind(from)
    .bind(to)
    .fetch_one(conn)
    .await
}

/// The last settled day (`costs::settlement`).
pub async fn last_settled_day(conn: &mut PgConnection) -> Result<Option<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar(&format!("select max(day) from daily_project_costs where {SETTLED}"))
        .fetch_one(conn)
        .await
}
