//! Judging an action again just before it runs, with the row locked and the decision lock
//! held: the violation must still hold today, or the action does not run.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::claims::ActionRow;
use super::{Reason, approvals, policy};
use crate::format::usd;
use crate::period::BudgetPeriod;

/// What the action should become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The violation holds and the policy still wants this action in this mode.
    Holds,
    /// The violation no longer holds (why, in words): the action must not run. `lifts`: the
    /// reason also lifts a stop already in force (the project is approved, the period is
    /// over, the limit is above the spend, the policy drops the action, or no policy
    /// governs the project's team); a violation now of another reason does not.
    Cancel { why: String, lifts: bool },
    /// The policy now runs this action in another mode: dry-run records it, manual waits
    /// for an admin.
    Switch { mode: String, status: &'static str },
}

/// The action's violation judged as of `today`: its period, the project's current approval
/// and spend, and the policy that governs its team now.
pub async fn judge(conn: &mut PgConnection, row: &ActionRow, today: NaiveDate) -> Result<Verdict, sqlx::Error> {
    let Some(policy) = policy::for_team(conn, row.team.as_deref()).await? else {
        return Ok(cancel("no policy governs the project's team any more".into(), true));
    };
    let Some(period) = BudgetPeriod::parse(&policy.period) else {
        return Ok(cancel(
            format!("the policy's period {:?} is unknown", policy.period),
            false,
        ));
    };
    let current = period.containing(today);
    let previous = period.containing(crate::period::days_before(current.from, 1));
    // A stop acts on the period under way only; an email or a flag about the period before
    // still informs while that period's figures settle.
    let in_time = row.period_start == current.from || (row.action != "stop" && row.period_start == previous.from);
    if !in_time {
        return Ok(cancel(
            format!("the violation's period (from {}) has ended", row.period_start),
            true,
        ));
    }
    if !policy.actions.contains(&row.action) {
        return Ok(cancel(format!("the policy no longer includes {}", row.action), true));
    }
    let range = if row.period_start == current.from {
        current
    } else {
        previous
    };
    let spend = project_spend(conn, &row.project, range, policy.metric).await?;
    if spend <= policy.limit {
        return Ok(cancel(
            format!(
                "the project's spend {} is within the policy limit {}",
                usd(spend),
                usd(policy.limit)
            ),
            true,
        ));
    }
    let as_of = if range == current { today } else { range.last_day() };
    let approval = approvals::current_for(conn, &row.project).await?;
    let Some(reason) = Reason::judge(spend, approval.as_ref(), as_of) else {
        let approval = approval.map(|a| format!(" by {} (cap {}, through {})", a.approver, usd(a.cap), a.expires));
        return Ok(cancel(
            format!("the project is approved{}", approval.unwrap_or_default()),
            true,
        ));
    };
    if reason.key() != row.reason {
        // Another reason is another violation, with its own actions.
        return Ok(cancel(
            format!(
                "the violation is now {}, recorded on its own",
                reason.key().replace('_', " ")
            ),
            false,
        ));
    }
    if policy.mode != row.mode {
        let status = if policy.mode == "manual" {
            "awaiting_approval"
        } else {
            "proposed"
        };
        return Ok(Verdict::Switch {
            mode: policy.mode,
            status,
        });
    }
    Ok(Verdict::Holds)
}

impl Verdict {
    /// Why a stop in force is no longer justified, when it is not: the reason lifts it, or
    /// the policy left the mode that ran it (a stop stays in force once made automatic).
    pub fn lifts_a_stop(self) -> Option<String> {
        match self {
            Verdict::Cancel { why, lifts: true } => Some(why),
            Verdict::Switch { mode, .. } if mode != "automatic" => Some(format!("the policy is now in {mode} mode")),
            _ => None,
        }
    }
}

fn cancel(why: String, lifts: bool) -> Verdict {
    Verdict::Cancel { why, lifts }
}

/// The project's spend in `range`, in the policy's metric.
pub async fn project_spend(
    conn: &mut PgConnection,
    project: &str,
    range: crate::period::DateRange,
    metric: crate::period::Metric,
) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select coalesce(sum({}), 0) from daily_project_costs where project = $1 and day >= $2 and day < $3",
        metric.key()
    ))
    .bind(project)
    .bind(range.from)
    .bind(range.to)
    .fetch_one(conn)
    .await
}

/// A tagged project's spend in a period, with its team (`None`: unmapped).
#[derive(Debug, sqlx::FromRow)]
pub struct ProjectSpend {
    pub project: String,
    pub team: Option<String>,
    pub unblended: Decimal,
    pub amortized: Decimal,
}

impl ProjectSpend {
    /// The spend as `metric` counts it.
    pub fn in_metric(&self, metric: crate::period::Metric) -> Decimal {
        match metric {
            crate::period::Metric::Unblended => self.unblended,
            crate::period::Metric::Amortized => self.amortized,
        }
    }
}

/// Each tagged project with its team and its spend in `range`, by project: what evaluation
/// judges and what `/metrics` watches.
pub async fn project_spends(
    conn: &mut PgConnection,
    range: crate::period::DateRange,
) -> Result<Vec<ProjectSpend>, sqlx::Error> {
    sqlx::query_as(
        "select r.project, t.name as team, sum(r.unblended) as unblended, sum(r.amortized) as amortized
         from daily_project_costs r left join projects p on p.name = r.project left join teams t on t.id = p.team_id
         where r.day >= $1 and r.day < $2 and r.project <> ''
         group by 1, 2 order by 1",
    )
    .bind(range.from)
    .bind(range.to)
    .fetch_all(conn)
    .await
}

/// Applies a verdict other than `Holds` to a locked, unclaimed action, audited: cancelled,
/// or handed to its new mode. Either way the AWS side is deleted (it is prepared again if
/// the new mode is manual).
pub async fn apply(
    conn: &mut PgConnection,
    row: &ActionRow,
    actor: &str,
    verdict: &Verdict,
) -> Result<(), sqlx::Error> {
    let (mode, status, event, message) = match verdict {
        Verdict::Holds => return Ok(()),
        Verdict::Cancel { why, .. } => (row.mode.as_str(), "cancelled", "cancelled", why.clone()),
        Verdict::Switch { mode, status } => (
            mode.as_str(),
            *status,
            "disarmed",
            format!("the policy is now in {mode} mode"),
        ),
    };
    sqlx::query(
        "update enforcement_actions set mode = $2, status = $3, last_message = $4, updated_at = now(),
             aws_cleanup = aws_cleanup or (action = 'stop' and mode <> 'dry-run' and not stops_resources),
             approved_by = null
         where id = $1",
    )
    .bind(row.id)
    .bind(mode)
    .bind(status)
    .bind(&message)
    .execute(&mut *conn)
    .await?;
    super::trail::append(
        conn,
        &super::trail::Entry::new(actor, event, row.id, &row.project, &row.action).response(&message),
    )
    .await
}

/// What a change can move: the actions it must judge again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched {
    /// One project's (an approval, its revocation, a request's decision).
    Project(String),
    /// These projects' (a team change that moves them; deleting a team moves its projects).
    Projects(Vec<String>),
    /// The projects of one team (its policy override saved or removed).
    Team(String),
    /// Every project (the org default policy, a config import of approvals or policies).
    All,
}

/// Judges every action of `touched` that has not run (proposed, awaiting approval, failed)
/// and disarms those that no longer hold: called, under the decision lock, in the same
/// transaction as an approval, a policy change, a team change or a config import. An
/// approval judges its project's actions only, so the lock is held for a handful of rows,
/// not a year of every team's proposals. Returns how many changed.
pub async fn disarm_stale(
    conn: &mut PgConnection,
    actor: &str,
    today: NaiveDate,
    touched: &Touched,
) -> Result<usize, sqlx::Error> {
    super::claims::lock_decisions(conn).await?;
    let mut changed = 0;
    for id in not_run_of(conn, today, touched).await? {
        changed += usize::from(disarm_if_stale(conn, id, actor, today).await?);
    }
    Ok(changed)
}

/// [`not_run`] with dry-run proposals, of the touched projects only.
async fn not_run_of(conn: &mut PgConnection, today: NaiveDate, touched: &Touched) -> Result<Vec<i64>, sqlx::Error> {
    let (projects, team) = match touched {
        Touched::All => return not_run(conn, today, true, 10_000).await,
        Touched::Project(project) => (Some(vec![project.clone()]), None),
        Touched::Projects(projects) => (Some(projects.clone()), None),
        Touched::Team(team) => (None, Some(team.as_str())),
    };
    sqlx::query_scalar(
        "select a.id from enforcement_actions a join violations v on v.id = a.violation_id
         where a.status in ('proposed', 'awaiting_approval', 'failed')
           and (a.mode <> 'dry-run' or v.period_start > $1::date - 366)
           and ($2::text[] is null or v.project = any($2))
           and ($3::text is null or v.project in (select p.name from projects p join teams t on t.id = p.team_id
                                                  where t.name = $3))
         order by a.id desc limit 10000",
    )
    .bind(today)
    .bind(projects)
    .bind(team)
    .fetch_all(conn)
    .await
}

/// The enforcement pass's share of [`disarm_stale`]: the actions that may still run, each
/// judged in a short transaction of its own, at most `limit`. Dry-run proposals are left
/// out: their verdict changes only with a policy, approval or team change, and each of those
/// re-judges them as it commits, so the per-minute pass never re-judges a year of them.
pub async fn disarm_stale_in_pass(pool: &PgPool, today: NaiveDate, limit: i64) -> Result<usize, sqlx::Error> {
    let ids = not_run(&mut *pool.acquire().await?, today, false, limit).await?;
    let mut changed = 0;
    for id in ids {
        let mut tx = pool.begin().await?;
        super::claims::lock_decisions(&mut tx).await?;
        changed += usize::from(disarm_if_stale(&mut tx, id, "system", today).await?);
        tx.commit().await?;
    }
    Ok(changed)
}

/// Actions that have not run, newest first. Dry-run proposals stay `proposed` for ever as a
/// record; only those of periods that can still be current (a year covers the longest) may
/// be switched to a new mode, and only when `dry_run` is asked for.
async fn not_run(
    conn: &mut PgConnection,
    today: NaiveDate,
    dry_run: bool,
    limit: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "select a.id from enforcement_actions a join violations v on v.id = a.violation_id
         where a.status in ('proposed', 'awaiting_approval', 'failed')
           and (a.mode <> 'dry-run' or ($3 and v.period_start > $1::date - 366))
         order by a.id desc limit $2",
    )
    .bind(today)
    .bind(limit)
    .bind(dry_run)
    .fetch_all(conn)
    .await
}

/// Judges action `id` (locked here) and disarms it when it no longer holds; true when it
/// changed. A dry-run proposal stays a record of what would have happened.
async fn disarm_if_stale(conn: &mut PgConnection, id: i64, actor: &str, today: NaiveDate) -> Result<bool, sqlx::Error> {
    let Some(row) = super::claims::lock(conn, id).await? else {
        return Ok(false);
    };
    if !matches!(row.status.as_str(), "proposed" | "awaiting_approval" | "failed") {
        return Ok(false);
    }
    let verdict = judge(conn, &row, today).await?;
    if verdict == Verdict::Holds || (row.mode == "dry-run" && matches!(verdict, Verdict::Cancel { .. })) {
        return Ok(false);
    }
    apply(conn, &row, actor, &verdict).await?;
    Ok(true)
}

/// Disarms the actions of `touched` that a team change or config import stops from holding
/// (none when it moved no project), in a transaction of its own after the change has committed: the decision lock is never held across the
/// allocation rewrite such a change makes. Until it runs, the judgement under the lock
/// before any AWS call (`confirm`) keeps a stale action from acting. The change stands
/// whatever happens here: a failure is logged, and the pass judges the actions that may
/// still run (dry-run proposals wait for the next change that re-judges them).
pub async fn disarm_after_change(pool: &PgPool, actor: &str, touched: &Touched) {
    if matches!(touched, Touched::Projects(projects) if projects.is_empty()) {
        return;
    }
    let today = chrono::Utc::now().date_naive();
    let disarmed = async {
        let mut tx = pool.begin().await?;
        disarm_stale(&mut tx, actor, today, touched).await?;
        tx.commit().await
    };
    if let Err(err) = disarmed.await {
        tracing::warn!(error = %err, "judging enforcement actions after a change failed; the next pass judges them");
    }
}

/// Disarms, in `tx`, the actions an approval or policy change stops from holding, commits,
/// and wakes the enforcement loop (`wake`) to delete their AWS side at once.
pub async fn commit_and_disarm(
    mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
    actor: &str,
    wake: &tokio::sync::Notify,
    touched: &Touched,
) -> Result<(), sqlx::Error> {
    disarm_stale(&mut tx, actor, chrono::Utc::now().date_naive(), touched).await?;
    tx.commit().await?;
    wake.notify_one();
    Ok(())
}

/// Just before a stop is sent to AWS: under the decision lock, the claim must still be this
/// caller's and the violation must still hold as of `today`. A claim that no longer holds is
/// ended here, `cancelled` (or handed to its new mode) with the reason. Returns whether to
/// go on; the lease is renewed for the call.
pub async fn confirm(
    conn: &mut PgConnection,
    id: i64,
    claim: i64,
    lease: std::time::Duration,
    today: chrono::NaiveDate,
) -> Result<bool, sqlx::Error> {
    let mut tx = sqlx::Acquire::begin(conn).await?;
    super::claims::lock_decisions(&mut tx).await?;
    let Some(row) = super::claims::lock(&mut tx, id).await? else {
        return Ok(false);
    };
    if row.claim != Some(claim) {
        return Ok(false);
    }
    let verdict = judge(&mut tx, &row, today).await?;
    if verdict != Verdict::Holds {
        sqlx::query(
            "update enforcement_actions set status = claimed_from, claim = null, lease_until = null, claimed_from = null
             where id = $1",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let row = ActionRow {
            status: row.claimed_from.clone().unwrap_or(row.status),
            ..row
        };
        apply(&mut tx, &row, "system", &verdict).await?;
        tx.commit().await?;
        return Ok(false);
    }
    sqlx::query("update enforcement_actions set lease_until = now() + make_interval(secs => $2) where id = $1")
        .bind(id)
        .bind(lease.as_secs_f64())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}
