//! Enforcement policies: the org default and per-team overrides. Each sets the period spend
//! limit, the actions a violation gets, the mode they run in, and how `stop` reaches AWS.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// How a `stop` action acts: on the project's own resources (`resources`), or through an
/// AWS Budgets action (`stop_type` and its targets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopConfig {
    /// `APPLY_IAM_POLICY` (attach a deny policy for GPU instance launches to roles) or
    /// `RUN_SSM_DOCUMENTS` (STOP_EC2_INSTANCES for the listed instances); empty for a stop
    /// on the project's resources.
    pub stop_type: String,
    /// The kinds a stop on the project's resources reaches: `ec2`, `notebooks`,
    /// `training_jobs`, `processing_jobs`, `endpoints`. Empty: an AWS Budgets action.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Where it looks; empty means `BURNRATE_AWS_REGIONS` (else the SDK's region).
    #[serde(default)]
    pub regions: Vec<String>,
    /// Another AWS account it acts in, through the role `BURNRATE_AWS_ASSUME_ROLE` names
    /// there; `None`: the account of burnrate's own credentials.
    #[serde(default)]
    pub account: Option<String>,
    /// Tag keys, beyond the built-in list, that mark an instance as run by a controller that
    /// would replace it if stopped: such instances are left running.
    #[serde(default)]
    pub managed_by_tags: Vec<String>,
    /// Instances whose instance-store (NVMe) data a stop erases are stopped too; otherwise
    /// they are left running, with why.
    #[serde(default)]
    pub allow_instance_store: bool,
    /// The role AWS Budgets assumes to act.
    pub execution_role_arn: String,
    pub iam_policy_arn: String,
    pub iam_roles: Vec<String>,
    pub instance_ids: Vec<String>,
    pub instance_region: String,
}

/// One policy as shown and edited; `team: None` is the org default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The stable identity of a policy kept as code (`key:` in the YAML). `None` means
    /// `team:<name>` (`org` for the default) on a new policy, and the key it has on a change.
    #[serde(default)]
    pub key: Option<String>,
    pub team: Option<String>,
    pub limit: Decimal,
    pub period: String,
    /// The cost the limit is compared with.
    #[serde(default)]
    pub metric: crate::period::Metric,
    pub actions: Vec<String>,
    pub mode: String,
    pub stop: Option<StopConfig>,
}

impl StopConfig {
    /// True when the stop acts on the project's own resources, found by its tag.
    pub fn on_resources(&self) -> bool {
        !self.resources.is_empty()
    }
}

/// The kinds a resource stop may list, as the policy names them.
pub const RESOURCE_KINDS: [&str; 5] = ["ec2", "notebooks", "training_jobs", "processing_jobs", "endpoints"];
/// What a resource stop reaches when its policy lists no kinds: what a reversal restores.
pub const DEFAULT_RESOURCE_KINDS: [&str; 2] = ["ec2", "notebooks"];

pub const ACTIONS: [&str; 3] = ["notify", "flag", "stop"];
pub const MODES: [&str; 3] = ["dry-run", "manual", "automatic"];
pub const STOP_TYPES: [&str; 2] = ["APPLY_IAM_POLICY", "RUN_SSM_DOCUMENTS"];

/// A policy form, still text. Lists are one entry per line or comma-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyInput {
    pub team: String,
    pub limit: String,
    pub period: String,
    /// `unblended` (also when empty) or `amortized`.
    pub metric: String,
    pub actions: Vec<String>,
    pub mode: String,
    pub stop_type: String,
    pub execution_role_arn: String,
    pub iam_policy_arn: String,
    pub iam_roles: String,
    pub instance_ids: String,
    pub instance_region: String,
    /// The kinds a stop on the project's resources reaches (none: the defaults, when no
    /// `stop_type` is given).
    #[serde(default)]
    pub stop_resources: Vec<String>,
    /// Regions, one per line or comma-separated.
    #[serde(default)]
    pub stop_regions: String,
    /// The 12-digit account a stop on the project's resources acts in; empty: burnrate's own.
    #[serde(default)]
    pub stop_account: String,
    /// Extra controller tag keys, one per line or comma-separated.
    #[serde(default)]
    pub stop_managed_by_tags: String,
    /// `allow` to stop instances whose instance-store data a stop erases; `skip` or empty
    /// to leave them running.
    #[serde(default)]
    pub stop_instance_store: String,
}

#[cfg(feature = "ssr")]
pub use store::*;

#[cfg(feature = "ssr")]
mod stop_fields;

#[cfg(feature = "ssr")]
mod store {
    use sqlx::PgConnection;

    use super::*;
    use crate::audit_log::{Actor, record};
    use crate::error::FieldError;

    use super::stop_fields::{deny_policy_fields, is_account_arn, list, resource_stop};

    /// Every problem with its field, or the policy. The team (if any) is checked by `save`.
    pub fn validate(input: &PolicyInput) -> Result<Policy, Vec<FieldError>> {
        let mut errors = Vec::new();
        let limit = crate::format::amount::parse_amount(&input.limit)
            .map_err(|m| errors.push(FieldError::new("limit", m)))
            .ok();
        if crate::period::BudgetPeriod::parse(&input.period).is_none() {
            errors.push(FieldError::new("period", "choose monthly, quarterly or annual"));
        }
        let metric = match input.metric.trim() {
            "" => Ok(crate::period::Metric::Unblended),
            text => crate::period::Metric::parse(Some(text)),
        }
        .map_err(|m| errors.push(FieldError::new("metric", m)))
        .unwrap_or_default();
        let mut actions: Vec<String> = Vec::new();
        for action in &input.actions {
            match ACTIONS.iter().find(|a| **a == action.trim()) {
                Some(a) if !actions.iter().any(|x| x == a) => actions.push(a.to_string()),
                Some(_) => {}
                None => errors.push(FieldError::new(
                    "actions",
                    format!("{action:?} is not notify, flag or stop"),
                )),
            }
        }
        actions.sort_by_key(|a| ACTIONS.iter().position(|x| x == a));
        if !MODES.contains(&input.mode.trim()) {
            errors.push(FieldError::new("mode", "choose dry-run, manual or automatic"));
        }
        let stop = if actions.iter().any(|a| a == "stop") && input.stop_type.trim().is_empty() {
            Some(resource_stop(input, &mut errors))
        } else if actions.iter().any(|a| a == "stop") {
            let config = StopConfig {
                stop_type: input.stop_type.trim().to_string(),
                execution_role_arn: input.execution_role_arn.trim().to_string(),
                iam_policy_arn: input.iam_policy_arn.trim().to_string(),
                iam_roles: list(&input.iam_roles),
                instance_ids: list(&input.instance_ids),
                instance_region: input.instance_region.trim().to_string(),
                resources: Vec::new(),
                regions: Vec::new(),
                account: None,
                managed_by_tags: Vec::new(),
                allow_instance_store: false,
            };
            if !input.stop_resources.is_empty()
                || !input.stop_regions.trim().is_empty()
                || !input.stop_account.trim().is_empty()
                || !input.stop_managed_by_tags.trim().is_empty()
                || !input.stop_instance_store.trim().is_empty()
            {
                errors.push(FieldError::new(
                    "stop_type",
                    "a stop acts either on the project's resources (resources:, regions:) or through an AWS \
                     Budgets action (type:), not both",
                ));
            }
            if !is_account_arn(&config.execution_role_arn, "role") {
                errors.push(FieldError::new(
                    "execution_role_arn",
                    "expected an IAM role ARN, arn:aws:iam::123456789012:role/NAME, that AWS Budgets may assume",
                ));
            }
            match config.stop_type.as_str() {
                "APPLY_IAM_POLICY" => deny_policy_fields(&config.iam_policy_arn, &config.iam_roles, &mut errors),
                "RUN_SSM_DOCUMENTS" => {
                    let bad = config.instance_ids.iter().find(|id| {
                        !(id.starts_with("i-") && id.len() >= 10 && id[2..].bytes().all(|b| b.is_ascii_hexdigit()))
                    });
                    if let Some(id) = bad {
                        errors.push(FieldError::new(
                            "instance_ids",
                            format!("{id:?} is not an EC2 instance id (i-0123abcd…)"),
                        ));
                    } else if !(1..=100).contains(&config.instance_ids.len()) {
                        errors.push(FieldError::new("instance_ids", "list 1 to 100 EC2 instance ids"));
                    }
                    if config.instance_region.is_empty()
                        || !config
                            .instance_region
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    {
                        errors.push(FieldError::new(
                            "instance_region",
                            "name the instances' region, e.g. us-east-1",
                        ));
                    }
                }
                _ => errors.push(FieldError::new(
                    "stop_type",
                    "choose APPLY_IAM_POLICY or RUN_SSM_DOCUMENTS",
                )),
            }
            Some(config)
        } else {
            None
        };
        match limit {
            Some(limit) if errors.is_empty() => Ok(Policy {
                key: None,
                team: Some(input.team.trim().to_string()).filter(|t| !t.is_empty()),
                limit,
                period: input.period.trim().to_string(),
                metric,
                actions,
                mode: input.mode.trim().to_string(),
                stop,
            }),
            _ => Err(errors),
        }
    }

    /// An `enforcement_policies` row with its team's name.
    #[derive(sqlx::FromRow)]
    struct PolicyRow {
        key: String,
        team: Option<String>,
        spend_limit: Decimal,
        period: String,
        metric: String,
        actions: Vec<String>,
        mode: String,
        stop_type: Option<String>,
        execution_role_arn: Option<String>,
        iam_policy_arn: Option<String>,
        iam_roles: Vec<String>,
        instance_ids: Vec<String>,
        instance_region: Option<String>,
        stop_resources: Vec<String>,
        stop_regions: Vec<String>,
        stop_account: Option<String>,
        stop_managed_by_tags: Vec<String>,
        stop_allow_instance_store: bool,
    }

    const SELECT: &str =
        "select p.key, t.name as team, p.spend_limit, p.period, p.metric, p.actions, p.mode, p.stop_type, p.execution_role_arn,
                p.iam_policy_arn, p.iam_roles, p.instance_ids, p.instance_region, p.stop_resources, p.stop_regions,
                p.stop_account, p.stop_managed_by_tags, p.stop_allow_instance_store
         from enforcement_policies p left join teams t on t.id = p.team_id";

    fn from_row(row: PolicyRow) -> Policy {
        Policy {
            key: Some(row.key),
            team: row.team,
            limit: row.spend_limit,
            period: row.period,
            // The table's check allows only the two metrics.
            metric: crate::period::Metric::parse(Some(&row.metric)).unwrap_or_default(),
            actions: row.actions,
            mode: row.mode,
            stop: (row.stop_type.is_some() || !row.stop_resources.is_empty()).then(|| StopConfig {
                stop_type: row.stop_type.unwrap_or_default(),
                execution_role_arn: row.execution_role_arn.unwrap_or_default(),
                iam_policy_arn: row.iam_policy_arn.unwrap_or_default(),
                iam_roles: row.iam_roles,
                instance_ids: row.instance_ids,
                instance_region: row.instance_region.unwrap_or_default(),
                resources: row.stop_resources,
                regions: row.stop_regions,
                account: row.stop_account,
                managed_by_tags: row.stop_managed_by_tags,
                allow_instance_store: row.stop_allow_instance_store,
            }),
        }
    }

    /// The key of the org default when it was given none.
    pub const ORG_KEY: &str = "org";

    /// The key a policy gets when it was given none: `team:<name>`, or `org`.
    pub fn default_key(team: Option<&str>) -> String {
        team.map_or_else(|| ORG_KEY.to_string(), |t| format!("team:{t}"))
    }

    /// The org default first, then team overrides by name.
    pub async fn all(conn: &mut PgConnection) -> Result<Vec<Policy>, sqlx::Error> {
        let rows: Vec<PolicyRow> = sqlx::query_as(&format!("{SELECT} order by t.name nulls first"))
            .fetch_all(conn)
            .await?;
        Ok(rows.into_iter().map(from_row).collect())
    }

    /// The policy that governs `team` (its override, else the org default).
    pub async fn for_team(conn: &mut PgConnection, team: Option<&str>) -> Result<Option<Policy>, sqlx::Error> {
        let rows: Vec<PolicyRow> = sqlx::query_as(&format!(
            "{SELECT} where p.team_id is null or t.name = $1 order by p.team_id is null limit 1"
        ))
        .bind(team)
        .fetch_all(conn)
        .await?;
        Ok(rows.into_iter().next().map(from_row))
    }

    /// Writes the org default or a team's override, audited. Errors name the field.
    pub async fn save(conn: &mut PgConnection, actor: &Actor, policy: &Policy) -> Result<(), SaveError> {
        let team_id: Option<i64> = match &policy.team {
            None => None,
            Some(name) => Some(
                sqlx::query_scalar("select id from teams where name = $1")
                    .bind(name)
                    .fetch_optional(&mut *conn)
                    .await?
                    .ok_or_else(|| SaveError::Invalid(FieldError::new("team", format!("no team is named {name:?}"))))?,
            ),
        };
        let stop = policy.stop.as_ref();
        sqlx::query(
            "insert into enforcement_policies (team_id, spend_limit, period, actions, mode, stop_type, execution_role_arn,
                    iam_policy_arn, iam_roles, instance_ids, instance_region, key, metric, stop_resources, stop_regions,
                    stop_account, stop_managed_by_tags, stop_allow_instance_store)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, coalesce($12, $13), $14, $15, $16, $17, $18, $19)
             on conflict (coalesce(team_id, 0)) do update set spend_limit = $2, period = $3, actions = $4, mode = $5,
                stop_type = $6, execution_role_arn = $7, iam_policy_arn = $8, iam_roles = $9, instance_ids = $10,
                instance_region = $11, key = coalesce($12, enforcement_policies.key), metric = $14,
                stop_resources = $15, stop_regions = $16, stop_account = $17, stop_managed_by_tags = $18,
                stop_allow_instance_store = $19, updated_at = now()",
        )
        .bind(team_id)
        .bind(policy.limit)
        .bind(&policy.period)
        .bind(&policy.actions)
        .bind(&policy.mode)
        .bind(stop.map(|s| s.stop_type.clone()).filter(|t| !t.is_empty()))
        .bind(stop.map(|s| s.execution_role_arn.clone()))
        .bind(stop.map(|s| s.iam_policy_arn.clone()).filter(|a| !a.is_empty()))
        .bind(stop.map(|s| s.iam_roles.clone()).unwrap_or_default())
        .bind(stop.map(|s| s.instance_ids.clone()).unwrap_or_default())
        .bind(stop.map(|s| s.instance_region.clone()).filter(|r| !r.is_empty()))
        .bind(&policy.key)
        .bind(default_key(policy.team.as_deref()))
        .bind(policy.metric.key())
        .bind(stop.map(|s| s.resources.clone()).unwrap_or_default())
        .bind(stop.map(|s| s.regions.clone()).unwrap_or_default())
        .bind(stop.and_then(|s| s.account.clone()))
        .bind(stop.map(|s| s.managed_by_tags.clone()).unwrap_or_default())
        .bind(stop.is_some_and(|s| s.allow_instance_store))
        .execute(&mut *conn)
        .await
        .map_err(|e| match e.as_database_error().and_then(|d| d.constraint()) {
            Some("enforcement_policies_key") => SaveError::Invalid(FieldError::new(
                "key",
                format!(
                    "another policy already has the key {:?}",
                    policy
                        .key
                        .clone()
                        .unwrap_or_else(|| default_key(policy.team.as_deref()))
                ),
            )),
            _ => SaveError::Database(e),
        })?;
        record(
            conn,
            actor,
            "enforcement.policy.save",
            policy.team.as_deref().unwrap_or("org default"),
            serde_json::to_value(policy).unwrap_or_default(),
        )
        .await?;
        Ok(())
    }

    /// Removes a team's override, so the org default governs it again.
    pub async fn remove_override(conn: &mut PgConnection, actor: &Actor, team: &str) -> Result<bool, sqlx::Error> {
        let removed =
            sqlx::query("delete from enforcement_policies p using teams t where p.team_id = t.id and t.name = $1")
                .bind(team)
                .execute(&mut *conn)
                .await?;
        if removed.rows_affected() == 0 {
            return Ok(false);
        }
        // The org default governs the team now: marked changed, so what its proposals would
        // touch is listed again (the lister relists after the latest `updated_at`).
        sqlx::query("update enforcement_policies set updated_at = now() where team_id is null")
            .execute(&mut *conn)
            .await?;
        record(conn, actor, "enforcement.policy.remove", team, serde_json::Value::Null).await?;
        Ok(true)
    }

    #[derive(Debug, thiserror::Error)]
    pub enum SaveError {
        #[error("{0:?}")]
        Invalid(FieldError),
        #[error(transparent)]
        Database(#[from] sqlx::Error),
    }
}
