//! The Savings page's data and the "savings available" figures: the recommendations
//! (computed in the background once per data version, and per 5 minutes while utilisation
//! comes from Prometheus; requests read the last complete set), joined with the decisions
//! taken on them and what the caller may do.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::facts::AwsAccountUsage;
use super::insights::{self, Insights, Sources};
use super::ledger;
use super::model::{Decision, Kind, Opportunity, Recommendation, SavingsAvailable, SavingsData};
use super::store;
use crate::auth::Caller;
use crate::config::Config;
use crate::error::AppError;
use crate::page_data::{Latest, PageDataCache, Wait};
use crate::period::AwsAccountId;

/// Days the Savings page and the "savings available" figures look back.
pub const WINDOW_DAYS: u32 = 30;

/// How long a request waits for the first set after a start (each later one is answered
/// from the last complete set): as long as one statement may run, and never past the
/// request's own bound. A set not ready by then is answered 503 with Retry-After
/// (`InsightsError::NotReady`); it goes on computing.
const FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a request has no recommendation set to answer from.
#[derive(Debug, thiserror::Error)]
pub enum InsightsError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// The first set since the server started is not ready within the request's bound, or
    /// its computation failed (the server log says why; the next request tries again).
    #[error(
        "the savings recommendations are being computed for the first time since the server started; try again in a few seconds"
    )]
    NotReady,
}

impl From<InsightsError> for AppError {
    fn from(error: InsightsError) -> AppError {
        match error {
            InsightsError::Database(error) => error.into(),
            InsightsError::NotReady => AppError::Busy(error.to_string()),
        }
    }
}

/// The recommendation set a request answers from: the newest complete one, computed in the
/// background once per data version (and per 5 minutes while utilisation comes from
/// Prometheus, per hour from CloudWatch), with when it was computed and whether a newer one is
/// being computed. No request waits for a computation but the first after a start.
pub async fn latest_insights(
    pool: &PgPool,
    cache: &PageDataCache,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Latest<Arc<Insights>>, InsightsError> {
    latest_within(pool, cache, config, now, Wait::First(first_wait(config)))
        .await?
        .ok_or(InsightsError::NotReady)
}

/// After the caller's own change to what the set rests on (a workload declared, say): waits,
/// within the same bound, for the set of the current data, so the page reloaded after it
/// shows the change. Past the bound the page shows the older set and says a newer one comes.
pub async fn settle_insights(pool: &PgPool, cache: &PageDataCache, config: &Config) -> Result<(), sqlx::Error> {
    latest_within(pool, cache, config, Utc::now(), Wait::Current(first_wait(config))).await?;
    Ok(())
}

/// As long as one statement may run, and never past the request's own bound.
fn first_wait(config: &Config) -> std::time::Duration {
    FIRST_WAIT.min(
        config
            .timeouts
            .request
            .saturating_sub(std::time::Duration::from_secs(1)),
    )
}

/// [`latest_insights`]'s set alone.
pub async fn cached_insights(
    pool: &PgPool,
    cache: &PageDataCache,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Arc<Insights>, InsightsError> {
    Ok(latest_insights(pool, cache, config, now).await?.value)
}

/// Starts computing the set in the background when the data moved since the last one, and
/// returns at once: `serve` calls it every minute, so the set is ready before anyone asks.
pub async fn refresh_insights(pool: &PgPool, cache: &PageDataCache, config: &Config) -> Result<(), sqlx::Error> {
    latest_within(pool, cache, config, Utc::now(), Wait::First(std::time::Duration::ZERO)).await?;
    Ok(())
}

async fn latest_within(
    pool: &PgPool,
    cache: &PageDataCache,
    config: &Config,
    now: DateTime<Utc>,
    wait: Wait,
) -> Result<Option<Latest<Arc<Insights>>>, sqlx::Error> {
    let settings = config.savings.clone();
    let sources = Sources::from(&settings);
    // Utilisation moves without any write to the database: five minutes bound its age with
    // Prometheus; CloudWatch is read at most hourly (it bills per metric requested).
    let bucket = match (sources.prometheus, sources.cloudwatch) {
        (Some(_), _) => now.timestamp() / 300,
        (None, Some(_)) => now.timestamp() / 3600,
        (None, None) => 0,
    };
    let stamp = format!("{WINDOW_DAYS}|{}|{bucket}", now.date_naive());
    let pool_for_set = pool.clone();
    let compute = move || {
        let (pool, settings) = (pool_for_set.clone(), settings.clone());
        async move {
            let computed = insights::compute(&pool, WINDOW_DAYS, Sources::from(&settings), now).await?;
            Ok::<_, sqlx::Error>(Arc::new(computed))
        }
    };
    cache.latest(pool, "savings", stamp, wait, compute).await
}

/// Team ids by name, for `may_decide`.
pub async fn team_ids(pool: &PgPool) -> Result<HashMap<String, i64>, sqlx::Error> {
    let rows: Vec<(String, i64)> = sqlx::query_as("select name, id from teams").fetch_all(pool).await?;
    Ok(rows.into_iter().collect())
}

/// Whether `caller` may accept or dismiss a recommendation of `team` ('' is
/// organisation-wide: admins only).
pub fn may_decide(caller: &Caller, team: &str, ids: &HashMap<String, i64>) -> bool {
    caller.is_admin() || ids.get(team).is_some_and(|id| caller.can_edit_team(*id))
}

/// The Savings page's and CSV's filters: `?team=`, `?kind=` and `?account=` (read as what
/// that account holds).
#[derive(Debug, Default)]
pub struct Filters<'a> {
    pub team: Option<&'a str>,
    pub kind: Option<Kind>,
    pub account: Option<Arc<AwsAccountUsage>>,
}

impl Filters<'_> {
    /// Whether a recommendation passes every filter.
    pub fn keeps(&self, r: &super::model::Recommendation) -> bool {
        self.team.is_none_or(|t| r.team == t)
            && self.kind.is_none_or(|k| r.kind == k)
            && self
                .account
                .as_ref()
                .is_none_or(|a| a.covers(&r.project, &r.usage_type))
    }
}

/// `?account=` as what that account holds in the recommendations' window.
/// Read once per data version, account and window (two scans of the account's rows), not
/// on every view of the page or its CSV.
pub async fn account_usage(
    pool: &PgPool,
    cache: &PageDataCache,
    insights: &Insights,
    account: Option<&AwsAccountId>,
) -> Result<Option<Arc<AwsAccountUsage>>, sqlx::Error> {
    let Some(account) = account else {
        return Ok(None);
    };
    let window = insights
        .window
        .map(|w| format!("{}..{}", w.from, w.to))
        .unwrap_or_default();
    let key = format!("savings-account|{account}|{window}");
    let compute = async {
        let mut conn = pool.acquire().await?;
        Ok::<_, sqlx::Error>(Arc::new(
            AwsAccountUsage::read(&mut conn, account, insights.window).await?,
        ))
    };
    Ok(Some(cache.get_or_compute(pool, key, compute).await?))
}

/// The opportunities with their decisions, filtered.
pub async fn opportunities(
    pool: &PgPool,
    insights: &Insights,
    caller: &Caller,
    filters: &Filters<'_>,
) -> Result<Vec<Opportunity>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let decisions = store::current_decisions(&mut conn).await?;
    drop(conn);
    let ids = team_ids(pool).await?;
    Ok(insights
        .recommendations
        .iter()
        .filter(|r| filters.keeps(r))
        .map(|r| {
            let key = r.key();
            let (decision, reason) = decisions.get(&key).cloned().unwrap_or((Decision::Open, String::new()));
            Opportunity {
                can_decide: may_decide(caller, &r.team, &ids),
                now: crate::usage_type::describe(&r.usage_type, &r.instance_type),
                recommendation: r.clone(),
                key,
                decision,
                reason,
            }
        })
        .collect())
}

pub async fn page(
    pool: &PgPool,
    cache: &PageDataCache,
    insights: &Insights,
    caller: &Caller,
    filters: &Filters<'_>,
    idle_alert_hours: u32,
) -> Result<SavingsData, sqlx::Error> {
    let (team, kind, account) = (filters.team, filters.kind, filters.account.as_ref());
    let opportunities = opportunities(pool, insights, caller, filters).await?;
    // Measured from the facts: the same for every caller until the data changes.
    let today = chrono::Utc::now().date_naive();
    let compute = async {
        let mut conn = pool.acquire().await?;
        Ok::<_, sqlx::Error>(Arc::new(ledger::entries(&mut conn).await?))
    };
    let all = cache
        .get_or_compute(pool, format!("savings-ledger|{today}"), compute)
        .await?;
    let mut conn = pool.acquire().await?;
    let ledger: Vec<_> = all
        .iter()
        .filter(|e| team.is_none_or(|t| e.team == t))
        .filter(|e| kind.is_none_or(|k| e.kind == k))
        .filter(|e| account.is_none_or(|a| a.ever_held(&e.project)))
        .cloned()
        .collect();
    let teams: Vec<String> = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(&mut *conn)
        .await?;
    let ids = team_ids(pool).await?;
    let now = chrono::Utc::now();
    let idle_now = super::idle_alerts::rows(&mut conn, &insights.idle_now, now, |t| may_decide(caller, t, &ids))
        .await?
        .into_iter()
        .filter(|r| team.is_none_or(|t| r.idle.team == t))
        .filter(|r| account.is_none_or(|a| a.covers(&r.idle.project, "")))
        .collect();
    let totals = ledger::totals(&opportunities, &ledger);
    let opportunities_total = opportunities.len();
    let mut opportunities = opportunities;
    opportunities.truncate(super::model::PAGE_ROWS);
    Ok(SavingsData {
        opportunities_total,
        from: insights.window.map(|w| w.from),
        to: insights.window.map(|w| w.to),
        opportunities,
        ledger,
        totals,
        utilisation: insights.utilisation.clone(),
        gpus: insights.gpus.iter().take(super::model::PAGE_ROWS).cloned().collect(),
        gpus_total: insights.gpus.len(),
        idle_now,
        idle_alert_hours,
        utilisation_note: insights.utilisation_note.clone(),
        teams,
        accounts: crate::costs::aws_accounts::known(pool).await?,
        spot_discount_percent: insights.pricing.spot_discount() * Decimal::ONE_HUNDRED,
        commitments: insights.commitments.clone(),
        computed_at: None,
        refreshing: false,
    })
}

/// Open opportunities of the organisation, a team or a project, and their monthly sum.
pub async fn available(
    pool: &PgPool,
    insights: &Insights,
    team: Option<&str>,
    project: Option<&str>,
) -> Result<SavingsAvailable, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let decisions = store::current_decisions(&mut conn).await?;
    let open: Vec<_> = insights
        .recommendations
        .iter()
        .filter(|r| team.is_none_or(|t| r.team == t))
        .filter(|r| project.is_none_or(|p| r.project == p))
        .filter(|r| !decisions.contains_key(&r.key()))
        .collect();
    let (counted, to_confirm): (Vec<&Recommendation>, Vec<&Recommendation>) =
        open.into_iter().partition(|r| r.counts_in_totals());
    Ok(SavingsAvailable {
        count: counted.len(),
        // Compounded across kinds: a project's figure never passes its GPU spend.
        monthly_saving: counted.iter().map(|r| r.compounded_saving).sum(),
        to_confirm: to_confirm.len(),
        to_confirm_saving: to_confirm.iter().map(|r| r.compounded_saving).sum(),
    })
}

/// Records `caller`'s decision on the recommendation `key` (the server's own proposal,
/// never an amount the browser sent), if they may decide for its team, on `today`: its own
/// and compounded figures, and the data version of the set it was taken from.
pub async fn decide(
    pool: &PgPool,
    insights: &Insights,
    caller: &Caller,
    key: &str,
    (decision, reason): (Decision, &str),
    today: chrono::NaiveDate,
) -> Result<(), AppError> {
    let Some(recommendation) = insights.recommendations.iter().find(|r| r.key() == key) else {
        return Err(AppError::NotFound(
            "that recommendation is no longer proposed; reload the page".into(),
        ));
    };
    let ids = team_ids(pool).await?;
    if !may_decide(caller, &recommendation.team, &ids) {
        return Err(AppError::Forbidden(
            "only admins and the team's leads decide on its recommendations".into(),
        ));
    }
    // The version the set was computed from (the person may see an older set than the
    // current data while a newer one is computed).
    let version = match insights.data_version {
        Some(version) => version,
        None => crate::page_data::request_version(pool).await?,
    };
    let mut tx = pool.begin().await?;
    store::decide(
        &mut tx,
        &caller.into(),
        recommendation,
        decision,
        reason,
        (today, version),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Snoozes the idle alerts of `resource`, which the server itself sees idle now, if
/// `caller` may decide for its team.
pub async fn snooze(
    pool: &PgPool,
    insights: &Insights,
    caller: &Caller,
    resource: &str,
    (hours, reason): (u32, &str),
) -> Result<(), AppError> {
    let Some(idle) = insights.idle_now.iter().find(|i| i.resource == resource) else {
        return Err(AppError::NotFound(
            "that resource is not idle now; reload the page".into(),
        ));
    };
    let ids = team_ids(pool).await?;
    if !may_decide(caller, &idle.team, &ids) {
        return Err(AppError::Forbidden(
            "only admins and the team's leads snooze its idle alerts".into(),
        ));
    }
    let mut tx = pool.begin().await?;
    super::idle_alerts::snooze(&mut tx, &caller.into(), idle, hours, reason).await?;
    tx.commit().await?;
    Ok(())
}

/// The report's month: `2026-11`, or this month when none is given; never after this month.
pub fn report_month(text: Option<&str>, today: chrono::NaiveDate) -> Result<crate::period::DateRange, String> {
    use chrono::Datelike;
    let this_month = today.with_day(1).unwrap_or(today);
    let month = match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => crate::period::parse_month(&crate::period::month_label(this_month))?,
        Some(text) => crate::period::parse_month(text)?,
    };
    if month.from > this_month {
        return Err(format!("{} has not begun", crate::period::month_label(month.from)));
    }
    Ok(month)
}

/// What the Project page shows of `project`'s workload, for `caller`.
pub async fn project_workload(
    pool: &PgPool,
    caller: &Caller,
    project: &str,
) -> Result<super::model::ProjectWorkload, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let facts = store::project_facts(&mut conn, project).await?;
    drop(conn);
    let team = team_of(pool, project).await?;
    let ids = team_ids(pool).await?;
    Ok(super::model::ProjectWorkload {
        facts,
        may_edit: caller.is_admin(),
        may_confirm: may_decide(caller, team.as_deref().unwrap_or_default(), &ids),
    })
}

/// The team owning `project`, if one does.
async fn team_of(pool: &PgPool, project: &str) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("select t.name from projects p join teams t on t.id = p.team_id where p.name = $1")
        .bind(project)
        .fetch_optional(pool)
        .await
}

/// Declares `project`'s workload as confirmed or corrected by `caller` (an admin, or a lead of
/// the project's team), keeping the model it declares; true when it changed.
pub async fn confirm_workload(
    pool: &PgPool,
    caller: &Caller,
    project: &str,
    workload: super::model::Workload,
) -> Result<bool, AppError> {
    let ids = team_ids(pool).await?;
    let mut tx = pool.begin().await?;
    // Read under the row's lock: the team and the declaration checked are the ones written over.
    let (mut facts, team) = store::project_facts_for_update(&mut tx, project).await?;
    if !may_decide(caller, team.as_deref().unwrap_or_default(), &ids) {
        return Err(AppError::Forbidden(
            "only admins and the team's leads confirm its workload".into(),
        ));
    }
    // A lead confirms what the bill suggests; changing a declared workload stays an admin's.
    if !caller.is_admin() && facts.workload != super::model::Workload::Unknown {
        return Err(AppError::Forbidden(format!(
            "{project} already declares {}; only an admin changes a declared workload",
            facts.workload.key()
        )));
    }
    facts.workload = workload;
    let changed = store::set_project_facts(&mut tx, &caller.into(), project, facts).await?;
    tx.commit().await?;
    Ok(changed)
}

/// Declares what `project` runs, audited as `caller`'s; true when it changed.
pub async fn save_project_facts(
    pool: &PgPool,
    caller: &Caller,
    project: &str,
    facts: super::model::ProjectFacts,
) -> Result<bool, AppError> {
    let mut tx = pool.begin().await?;
    let changed = store::set_project_facts(&mut tx, &caller.into(), project, facts).await?;
    tx.commit().await?;
    Ok(changed)
}
