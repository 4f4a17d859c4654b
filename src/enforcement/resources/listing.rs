//! What a stop would touch: the project's accelerated resources in every region of its
//! plan (`discover_all`), and proposals listed again every [`RELIST_MINUTES`] apart from the
//! per-minute enforcement pass (`list_forever`), so a slow or throttled account never holds
//! up a lift or a stop.
//!
//! Proposals listed within [`RELIST_MINUTES`] of each other share each (account, region)'s
//! reads (`inventory`): 20 open proposals cost what one does. A stop about to run lists
//! afresh ([`Listings::fresh`]). One lister at a time across replicas (a session advisory
//! lock, held without a transaction while AWS answers); each round lists at most
//! [`ROUND_LIMIT`] proposals within [`ROUND_BUDGET`], and the rest wait for the next.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::discover::{self, Tags};
use super::inventory::Inventory;
use super::{CallError, Found, Kind, store};
use crate::enforcement::claims::{self, ActionRow};
use crate::enforcement::executor::Executor;
use crate::enforcement::policy;

/// How often a proposal lists the project's resources again, and how old a shared read may
/// be.
pub const RELIST_MINUTES: i32 = 10;
/// Proposals listed in one round, at most.
pub const ROUND_LIMIT: i64 = 50;
/// How long one round may take; what is left waits for the next.
pub const ROUND_BUDGET: Duration = Duration::from_secs(180);
/// `pg_try_advisory_lock` key of the lister ("list" in ASCII).
const LIST_LOCK: i64 = 0x6c69_7374_0000_0000;

/// Reads by (account, region), and each account's AWS configuration.
#[derive(Default)]
pub struct Listings {
    inventories: HashMap<(String, String), Inventory>,
    sdks: HashMap<String, aws_config::SdkConfig>,
    /// A stop about to run: tags the tagging API indexes are confirmed with SageMaker.
    fresh: bool,
}

impl Listings {
    /// For a stop about to run: every read made now, none kept, and every notebook's and
    /// endpoint's tags confirmed with SageMaker itself.
    pub fn fresh() -> Listings {
        Listings {
            fresh: true,
            ..Listings::default()
        }
    }

    /// Forgets reads older than [`RELIST_MINUTES`], older than the last policy change
    /// (`changed`: how long ago), or that failed (each is asked again, once, next round).
    pub fn expire(&mut self, changed: Option<chrono::Duration>) {
        let limit = chrono::Duration::minutes(i64::from(RELIST_MINUTES));
        let limit = changed.map_or(limit, |changed| changed.min(limit));
        let now = Utc::now();
        self.inventories
            .retain(|_, inv| now - inv.read_at < limit && inv.failure.is_none());
    }

    /// The AWS configuration for `account` ('' for burnrate's own), made once.
    async fn sdk(&mut self, exec: &Executor, account: &str) -> Result<&aws_config::SdkConfig, CallError> {
        Ok(match self.sdks.entry(account.to_string()) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(slot) => slot.insert(exec.sdk_in(account).await.map_err(|message| CallError {
                message,
                code: None,
                transient: false,
            })?),
        })
    }

    async fn inventory(&mut self, exec: &Executor, account: &str, region: &str) -> Result<&mut Inventory, CallError> {
        let key = (account.to_string(), region.to_string());
        if !self.inventories.contains_key(&key) {
            let fresh = self.fresh;
            let made = Inventory::new(self.sdk(exec, account).await?, region, &exec.tag_key, fresh);
            self.inventories.insert(key.clone(), made);
        }
        self.inventories.get_mut(&key).ok_or_else(|| CallError {
            message: "the region's reads were lost".into(),
            code: None,
            transient: true,
        })
    }
}

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
/// the roles its deny policy is attached to (IAM is global: one row each), with when the
/// oldest read behind them was made.
pub async fn discover_all(
    exec: &Executor,
    row: &ActionRow,
    plan: &Plan,
    listings: &mut Listings,
) -> Result<(Vec<Found>, DateTime<Utc>), CallError> {
    let tags = Tags {
        project_key: &exec.tag_key,
        user_key: &exec.user_tag_key,
        project: &row.project,
        managed_by: &plan.managed_by,
        allow_instance_store: plan.allow_instance_store,
    };
    let mut found = Vec::new();
    let mut read_at = Utc::now();
    for region in &plan.regions {
        let inv = listings.inventory(exec, &plan.account, region).await?;
        read_at = read_at.min(inv.read_at);
        let listed = discover::running(inv, tags, &plan.kinds).await?;
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
                "" => own_account(listings, exec).await?,
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
    Ok((found, read_at))
}

/// The account burnrate's own credentials belong to (STS `GetCallerIdentity`, a read).
async fn own_account(listings: &mut Listings, exec: &Executor) -> Result<String, CallError> {
    aws_sdk_sts::Client::new(listings.sdk(exec, "").await?)
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
pub async fn list_proposal(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    plan: &Plan,
    listings: &mut Listings,
) -> Result<bool, sqlx::Error> {
    let (found, read_at) = match discover_all(exec, row, plan, listings).await {
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
    store::record_listing(&mut tx, row.id, &found, Utc::now() - read_at).await?;
    tx.commit().await?;
    Ok(true)
}

/// One round: lists again the resources of proposed resource stops (dry-run, and manual
/// ones awaiting approval) not listed in [`RELIST_MINUTES`] or since a policy changed (its
/// kinds, regions or mode may have), so a proposal shows what a stop would touch now. Only
/// violations evaluation saw in the last day, at most [`ROUND_LIMIT`] within
/// [`ROUND_BUDGET`], and no lock held while AWS answers. Returns how many it listed; none
/// when another replica is listing.
pub async fn list_due(pool: &PgPool, exec: &Executor, listings: &mut Listings) -> Result<usize, sqlx::Error> {
    // The lock lives on a connection detached from the pool and closed after: however the
    // round ends, the lock can never be left held in a pooled connection.
    let mut guard = pool.acquire().await?.detach();
    let ours: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(LIST_LOCK)
        .fetch_one(&mut guard)
        .await?;
    if !ours {
        let _ = sqlx::Connection::close(guard).await;
        return Ok(0);
    }
    let listed = list_due_locked(pool, exec, listings).await;
    let _ = sqlx::query("select pg_advisory_unlock($1)")
        .bind(LIST_LOCK)
        .execute(&mut guard)
        .await;
    let _ = sqlx::Connection::close(guard).await;
    listed
}

async fn list_due_locked(pool: &PgPool, exec: &Executor, listings: &mut Listings) -> Result<usize, sqlx::Error> {
    // Reads made before the last policy change are not shared after it: ages, not clock
    // times, so the database's clock and this process's never meet.
    let changed: Option<f64> =
        sqlx::query_scalar("select extract(epoch from now() - max(updated_at))::float8 from enforcement_policies")
            .fetch_one(pool)
            .await?;
    listings.expire(changed.map(|secs| chrono::Duration::milliseconds((secs * 1000.0) as i64)));
    let due: Vec<i64> = sqlx::query_scalar(
        "select a.id from enforcement_actions a join violations v on v.id = a.violation_id
         where a.action = 'stop' and a.status in ('proposed', 'awaiting_approval') and a.mode <> 'automatic'
           and v.last_seen_at > now() - interval '1 day'
           and (a.resources_listed_at is null or a.resources_listed_at < now() - make_interval(mins => $1)
                or a.resources_listed_at < (select max(updated_at) from enforcement_policies))
         order by a.resources_listed_at nulls first, a.id limit $2",
    )
    .bind(RELIST_MINUTES)
    .bind(ROUND_LIMIT)
    .fetch_all(pool)
    .await?;
    let deadline = tokio::time::Instant::now() + ROUND_BUDGET;
    let mut listed = 0;
    for id in due {
        let Some(row) = claims::read(&mut *pool.acquire().await?, id).await? else {
            continue;
        };
        let Some(plan) = plan(pool, exec, &row).await? else {
            // A stop through an AWS Budgets action: nothing to list; looked at again later.
            sqlx::query("update enforcement_actions set resources_listed_at = now() where id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            continue;
        };
        match tokio::time::timeout_at(deadline, list_proposal(pool, exec, &row, &plan, listings)).await {
            Ok(done) => listed += usize::from(done?),
            Err(_) => {
                // Looked at now, so a proposal too slow for one round never holds the others
                // back: it comes round again after the rest.
                tracing::info!(
                    action = id,
                    "listing round out of time; the rest are listed in the next"
                );
                sqlx::query(
                    "update enforcement_actions set resources_listed_at = now(), last_message = $2
                     where id = $1 and status in ('proposed', 'awaiting_approval')",
                )
                .bind(id)
                .bind("listing the project's resources took longer than a listing round; tried again later")
                .execute(pool)
                .await?;
                break;
            }
        }
    }
    Ok(listed)
}

/// `serve`'s lister: a round every `every` (a minute), apart from the enforcement pass.
pub async fn list_forever(pool: PgPool, exec: Executor, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut listings = Listings::default();
    loop {
        ticker.tick().await;
        match list_due(&pool, &exec, &mut listings).await {
            Ok(0) => {}
            Ok(listed) => tracing::info!(listed, "listed proposed stops' resources"),
            Err(error) => tracing::error!(%error, "listing proposed stops' resources failed"),
        }
    }
}
