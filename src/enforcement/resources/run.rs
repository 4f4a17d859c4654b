//! A resource stop, claimed: list what the project runs and confirm the violation still
//! holds under the decision lock, then end the claim as `executing` (or, to reverse,
//! `reversing`). Tracking makes the stop and start calls, one resource at a time, at once
//! and at every pass until AWS confirms each: one tracker per stop (a session advisory
//! lock), and a stop under way stops more only while its violation still holds.
//!
//! No AWS call is made with a transaction open. Each resource is marked `requested` before
//! its stop call (`stopping`), so a process killed between the call and its record is found
//! by the next pass, which re-describes the resource and acts only on what AWS reports. A
//! transient failure (throttling, a 5xx, a timeout) leaves the resource where it was for
//! the next pass; only AWS's own refusal is recorded as failed.

use sqlx::PgPool;

use super::discover::{self, Tags};
use super::restarting;
use super::stopping;
use super::store::{self, ResourceRow};
use super::{Accounts, CallError, Clients, Found, Kind};
use crate::enforcement::claims::{self, ActionRow, Intent, Settled, Step};
use crate::enforcement::executor::Executor;
use crate::enforcement::policy;

/// What a resource stop reaches: the kinds its policy lists, in these regions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub kinds: Vec<Kind>,
    pub regions: Vec<String>,
    /// The account it acts in ('' for burnrate's own).
    pub account: String,
    /// Relaunch prevented: the deny policy's ARN and the roles it is attached to.
    pub deny: Option<(String, Vec<String>)>,
    /// Controller tag keys the policy adds to [`discover::MANAGED_BY`].
    pub managed_by: Vec<String>,
    /// The policy allows stopping instances whose instance-store data a stop erases.
    pub allow_instance_store: bool,
}

/// The plan of the policy that governs `row`'s team now, when its stop lists resources;
/// `None` for a stop through an AWS Budgets action.
pub async fn plan(pool: &PgPool, exec: &Executor, row: &ActionRow) -> Result<Option<Plan>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let policy = policy::for_team(&mut conn, row.team.as_deref()).await?;
    let Some(stop) = policy.and_then(|p| p.stop).filter(|s| s.on_resources()) else {
        return Ok(None);
    };
    let kinds = stop.resources.iter().filter_map(|k| Kind::from_policy_key(k)).collect();
    let regions = if stop.regions.is_empty() {
        exec.regions().await
    } else {
        stop.regions.clone()
    };
    let deny = (!stop.iam_roles.is_empty()).then(|| (stop.iam_policy_arn.clone(), stop.iam_roles.clone()));
    Ok(Some(Plan {
        kinds,
        regions,
        account: stop.account.unwrap_or_default(),
        deny,
        managed_by: stop.managed_by_tags,
        allow_instance_store: stop.allow_instance_store,
    }))
}

/// The project's accelerated resources of the plan's kinds in every region of the plan, and
/// the roles its deny policy is attached to (IAM is global: one row each).
async fn discover_all(exec: &Executor, row: &ActionRow, plan: &Plan) -> Result<Vec<Found>, CallError> {
    let sdk = Accounts::new(exec).sdk(&plan.account).await?;
    let tags = Tags {
        project_key: &exec.tag_key,
        user_key: &exec.user_tag_key,
        project: &row.project,
        managed_by: &plan.managed_by,
        allow_instance_store: plan.allow_instance_store,
    };
    let mut found = Vec::new();
    for region in &plan.regions {
        let readers = Clients::reading(&sdk, region);
        let mut listed = discover::running(&readers, region, tags, &plan.kinds).await?;
        if plan.kinds.contains(&Kind::Endpoint) {
            listed.extend(super::endpoints::running(&readers, region, tags).await?);
        }
        found.extend(listed.into_iter().filter(Found::is_accelerated).map(|f| Found {
            account: plan.account.clone(),
            ..f
        }));
    }
    if let Some((policy, roles)) = &plan.deny {
        // Without a policy named, the project's own deny policy (created when the stop runs):
        // it blocks this project alone on the roles.
        let (policy, tags) = if policy.is_empty() {
            let account = match plan.account.as_str() {
                "" => own_account(&sdk).await?,
                other => other.to_string(),
            };
            let tags = vec![(exec.tag_key.clone(), row.project.clone())];
            (super::relaunch::arn(&account, &row.project), tags)
        } else {
            (policy.clone(), Vec::new())
        };
        found.extend(roles.iter().map(|role| Found {
            account: plan.account.clone(),
            region: super::GLOBAL.to_string(),
            kind: Kind::Role,
            id: role.clone(),
            instance_type: String::new(),
            instances: 0,
            launched_at: None,
            user: None,
            skip: None,
            warning: None,
            tags: tags.clone(),
            restore_from: Some(policy.clone()),
        }));
    }
    Ok(found)
}

/// The account `sdk`'s credentials belong to (STS `GetCallerIdentity`, a read).
async fn own_account(sdk: &aws_config::SdkConfig) -> Result<String, CallError> {
    aws_sdk_sts::Client::new(sdk)
        .get_caller_identity()
        .send()
        .await
        .map_err(|e| CallError::from_sdk("STS", "GetCallerIdentity", &e))?
        .account()
        .map(str::to_string)
        .ok_or_else(|| CallError {
            message: "STS GetCallerIdentity named no account".into(),
            code: None,
            transient: true,
        })
}

/// Lists an unclaimed dry-run or manual stop's resources, so the proposal shows exactly what
/// a stop would touch. Recorded only while the stop is still a proposal. Returns whether it
/// recorded a listing.
pub async fn list_proposal(pool: &PgPool, exec: &Executor, row: &ActionRow, plan: &Plan) -> Result<bool, sqlx::Error> {
    let found = match discover_all(exec, row, plan).await {
        Ok(found) => found,
        Err(err) => {
            tracing::warn!(action = row.id, error = %err.message, "listing a stop's resources failed; tried again later");
            // Looked at now, so other stops' listings take their turn; the reason is shown.
            sqlx::query(
                "update enforcement_actions set resources_listed_at = now(), last_message = $2
                 where id = $1 and status in ('proposed', 'awaiting_approval')",
            )
            .bind(row.id)
            .bind(format!("listing the project's resources failed: {}", err.message))
            .execute(pool)
            .await?;
            return Ok(false);
        }
    };
    let mut tx = pool.begin().await?;
    let still: Option<String> = sqlx::query_scalar(
        "select status from enforcement_actions where id = $1 and status in ('proposed', 'awaiting_approval') for update",
    )
    .bind(row.id)
    .fetch_optional(&mut *tx)
    .await?;
    if still.is_none() {
        return Ok(false);
    }
    store::record_listing(&mut tx, row.id, &found).await?;
    tx.commit().await?;
    Ok(true)
}

/// Runs a claimed resource stop for `intent` and ends the claim; returns the status it
/// ended in.
pub async fn run_claimed(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    claim: i64,
    actor: &str,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<String, sqlx::Error> {
    if intent == Intent::Reverse {
        // Reversing again (an admin's Reverse after AWS refused a start) tries those again.
        sqlx::query(
            "update enforcement_resources set status = 'stopped', updated_at = now()
             where action_id = $1 and status = 'restart_failed'",
        )
        .bind(row.id)
        .execute(pool)
        .await?;
    }
    let outcome = match intent {
        // The calls are made by tracking, once the claim has ended (below).
        Intent::Reverse => Step::End(Settled::new(
            "reversing",
            "reversal_started",
            "restarting what the stop stopped; burnrate shows it done when AWS confirms each".into(),
        )),
        _ => match plan(pool, exec, row).await? {
            None => Step::End(Settled::new(
                "failed",
                "failed",
                "the policy no longer stops the project's resources".into(),
            )),
            Some(plan) => run(pool, exec, row, claim, &plan, (intent, today)).await?,
        },
    };
    let status = claims::end(&mut *pool.acquire().await?, row, claim, actor, intent, outcome).await?;
    if !matches!(status.as_str(), "executing" | "reversing") {
        return Ok(status);
    }
    // The AWS calls, one resource at a time, by the same path every later pass takes: no
    // claim's lease to outlast, one tracker per stop.
    let Some(row) = claims::read(&mut *pool.acquire().await?, row.id).await? else {
        return Ok(status);
    };
    track(pool, exec, &row, today).await?;
    let now: Option<String> = sqlx::query_scalar("select status from enforcement_actions where id = $1")
        .bind(row.id)
        .fetch_optional(pool)
        .await?;
    Ok(now.unwrap_or(status))
}

async fn run(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    claim: i64,
    plan: &Plan,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<Step, sqlx::Error> {
    let found = match discover_all(exec, row, plan).await {
        Ok(found) => found,
        Err(err) if err.transient => {
            // An admin's approval stands: the next pass tries again either way.
            return Ok(Step::Release(format!(
                "listing the project's resources did not succeed ({}); tried again on the next pass",
                err.message
            )));
        }
        Err(err) => return Ok(Step::End(Settled::new("failed", "failed", err.message))),
    };
    {
        let mut tx = pool.begin().await?;
        let ours: Option<i64> =
            sqlx::query_scalar("select id from enforcement_actions where id = $1 and claim = $2 for update")
                .bind(row.id)
                .bind(claim)
                .fetch_optional(&mut *tx)
                .await?;
        if ours.is_none() {
            return Ok(Step::Lost);
        }
        store::record_listing(&mut tx, row.id, &found).await?;
        tx.commit().await?;
    }
    if intent == Intent::Prepare {
        let rows = store::of_action(&mut *pool.acquire().await?, row.id).await?;
        return Ok(Step::Release(format!(
            "{}; nothing is stopped until an admin approves",
            describe_listing(&rows)
        )));
    }
    // The last word before AWS acts: judged again under the decision lock, claim checked.
    if !crate::enforcement::judge::confirm(&mut *pool.acquire().await?, row.id, claim, exec.lease, today).await? {
        return Ok(Step::Lost);
    }
    Ok(Step::End(Settled::new(
        "executing",
        "started",
        "stopping the project's resources; burnrate shows it done when AWS confirms each".into(),
    )))
}

/// "3 resources would be stopped (2 skipped)" and the like.
fn describe_listing(rows: &[ResourceRow]) -> String {
    let (roles, resources): (Vec<&ResourceRow>, Vec<&ResourceRow>) =
        rows.iter().partition(|r| r.kind() == Some(Kind::Role));
    let listed = resources.iter().filter(|r| r.status == "listed").count();
    let skipped = resources.iter().filter(|r| r.status == "skipped").count();
    let what = match (listed, skipped) {
        (0, 0) => "the project runs no GPU resources of the listed kinds now".into(),
        (n, 0) => format!("{n} of the project's GPU resources would be stopped"),
        (n, s) => format!("{n} of the project's GPU resources would be stopped; {s} would be left running"),
    };
    match roles.len() {
        0 => what,
        n => format!("{what}; the deny policy would be attached to {n} role(s), so they cannot launch GPUs"),
    }
}

/// The project tag a stop's recreated endpoints carry.
fn project_tag<'a>(exec: &'a Executor, row: &'a ActionRow) -> restarting::Tag<'a> {
    restarting::Tag {
        key: &exec.tag_key,
        value: &row.project,
    }
}

/// `pg_try_advisory_lock` key space for tracking one resource stop ("reso" in ASCII, then
/// the action id): one tracker at a time per stop, across passes and replicas.
const TRACK_LOCK: i64 = 0x7265_736f_0000_0000;

/// Follows an unclaimed `executing` or `reversing` resource stop one step, and records it
/// done once AWS has confirmed every resource. A stop under way stops more resources only
/// while its violation still holds (judged under the decision lock); otherwise it ends with
/// what it stopped, for the lift to restart. Returns true when the action moved on.
pub async fn track(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    today: chrono::NaiveDate,
) -> Result<bool, sqlx::Error> {
    // A session lock, not a transaction: held across the AWS calls, it locks no row, and it
    // ends with the connection if this process dies.
    let mut guard = pool.acquire().await?;
    let ours: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(TRACK_LOCK + row.id)
        .fetch_one(&mut *guard)
        .await?;
    if !ours {
        return Ok(false);
    }
    let moved = track_locked(pool, exec, row, today).await;
    sqlx::query("select pg_advisory_unlock($1)")
        .bind(TRACK_LOCK + row.id)
        .execute(&mut *guard)
        .await?;
    moved
}

async fn track_locked(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    today: chrono::NaiveDate,
) -> Result<bool, sqlx::Error> {
    let mut accounts = Accounts::new(exec);
    let next = match row.status.as_str() {
        "executing" => {
            let (rows, may) = stopping::advance(pool, &mut accounts, row.id, today).await?;
            stopping::outcome(&rows, may)
        }
        "reversing" => match restarting::step(pool, &mut accounts, row.id, project_tag(exec, row)).await? {
            // A reversal AWS refused leaves the stop in force, with why.
            failed if failed.status == "failed" => Settled {
                message: format!("reversal failed: {}", failed.message),
                ..Settled::new("executed", "failed", String::new())
            },
            next => next,
        },
        _ => return Ok(false),
    };
    if next.status == row.status {
        return Ok(false);
    }
    let mut conn = pool.acquire().await?;
    claims::transition(&mut conn, row, &row.status, &next).await
}

/// Ends the claim of a resource stop whose runner died. A claimed run makes no stop or
/// start call (tracking does, after the claim), so nothing was done in AWS: the stop returns
/// to where it was claimed from, to run again.
pub async fn resume(pool: &PgPool, row: &ActionRow, claim: i64) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    claims::release(
        &mut conn,
        row,
        claim,
        Some(("system", "interrupted")),
        "the run was interrupted before it stopped or restarted anything; it runs again",
    )
    .await?;
    Ok(())
}
