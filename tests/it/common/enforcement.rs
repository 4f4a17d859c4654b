//! Enforcement fixtures shared by the enforcement test binaries: a team over its policy
//! limit, policies in each mode, an executor wired to the budget-action fake, and readers
//! for an action's status and audit trail.

use std::sync::Arc;

use burnrate::auth::Role;
use burnrate::aws::budgets::AwsBudgets;
use burnrate::enforcement::actions::ActionError;
use burnrate::enforcement::executor::Executor;
use burnrate::mail::SmtpSettings;
use burnrate::outbox::AlertSender;
use sqlx::PgPool;

use super::budget_actions_fake::BudgetActionsFake;
use super::day;

pub use super::scenario_today as today;

/// `gpu-burner` spent USD 150 this month in team `strict`, whose policy (limit 100) is set
/// by `policy_sql`; `orphan` (no team) spent 2,500 under the org default (dry-run).
pub async fn seed(pool: &PgPool, policy_sql: &str) {
    seed_on(pool, policy_sql, day(2026, 11, 10)).await;
}

/// [`seed`], with the spend on `spent_on`.
pub async fn seed_on(pool: &PgPool, policy_sql: &str, spent_on: chrono::NaiveDate) {
    sqlx::query("insert into teams (name) values ('strict')")
        .execute(pool)
        .await
        .expect("team");
    sqlx::query("insert into team_owners (team_id, email) select id, 'owner@example.com' from teams")
        .execute(pool)
        .await
        .expect("owner");
    super::create_account(pool, "finance@example.com", Role::Admin).await;
    let one_day = (spent_on, spent_on);
    super::add_project_costs(pool, "gpu-burner", Some("strict"), one_day, "150.00", "150.00").await;
    super::add_project_costs(pool, "orphan", None, one_day, "2500.00", "2500.00").await;
    sqlx::query(policy_sql).execute(pool).await.expect("policy");
}

pub const MANUAL_SSM: &str = "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_type,
        execution_role_arn, instance_ids, instance_region)
    select id, 100, '{notify,flag,stop}', 'manual', 'RUN_SSM_DOCUMENTS', 'arn:aws:iam::123456789012:role/budgets',
        '{i-0abc12345def67890}', 'us-east-1' from teams";

pub const AUTOMATIC_IAM: &str = "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_type,
        execution_role_arn, iam_policy_arn, iam_roles)
    select id, 100, '{flag,stop}', 'automatic', 'APPLY_IAM_POLICY', 'arn:aws:iam::123456789012:role/budgets',
        'arn:aws:iam::123456789012:policy/deny-gpu-launch', '{ml-training}' from teams";

/// An automatic stop of team `strict`'s (limit 100) real-time endpoints in us-east-1.
pub const AUTOMATIC_ENDPOINTS: &str = "insert into enforcement_policies (team_id, spend_limit, actions, mode,
        stop_resources, stop_regions)
    select id, 100, '{flag,stop}', 'automatic', '{endpoints}', '{us-east-1}' from teams";

pub async fn executor(fake: &BudgetActionsFake, smtp_url: Option<String>) -> Executor {
    let sdk = super::aws_config_at(&fake.endpoint(), "AKIDTEST").await;
    let smtp = smtp_url.map(|url| {
        SmtpSettings::parse(&url, "burnrate@example.com", std::time::Duration::from_secs(10)).expect("smtp")
    });
    Executor {
        alerts: AlertSender::new(smtp.as_ref(), Default::default()),
        aws: Some(Arc::new(AwsBudgets::new(&sdk, "123456789012".into()))),
        tag_key: "project".into(),
        user_tag_key: "user".into(),
        aws_regions: vec!["us-east-1".into()],
        sdk: Some(sdk),
        assume_role: None,
        public_url: Some("https://costs.example.com".into()),
        lease: std::time::Duration::from_secs(60),
        wake: Default::default(),
    }
}

/// A stop on the project's own GPUs: EC2 instances and notebooks in us-east-1 and us-west-2,
/// in `mode`, for team `strict` (limit 100). The GPU types the tests launch (g5, p4d) carry
/// instance store, so the policy allows erasing it (`instance_store: allow`).
pub fn resource_policy(mode: &str) -> String {
    format!(
        "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_resources, stop_regions,
                                           stop_allow_instance_store)
         select id, 100, '{{flag,stop}}', '{mode}', '{{ec2,notebooks}}', '{{us-east-1,us-west-2}}', true from teams"
    )
}

/// An executor whose resource stops call AWS as `sdk` says (moto on loopback), with no AWS
/// Budgets at hand.
pub fn resource_executor(sdk: &aws_config::SdkConfig) -> Executor {
    Executor {
        alerts: AlertSender::new(None, Default::default()),
        aws: None,
        tag_key: "project".into(),
        user_tag_key: "user".into(),
        aws_regions: vec!["us-east-1".into()],
        sdk: Some(sdk.clone()),
        assume_role: None,
        public_url: None,
        lease: std::time::Duration::from_secs(60),
        wake: Default::default(),
    }
}

pub async fn action_id(pool: &PgPool, project: &str, action: &str) -> i64 {
    sqlx::query_scalar(
        "select a.id from enforcement_actions a join violations v on v.id = a.violation_id
         where v.project = $1 and a.action = $2",
    )
    .bind(project)
    .bind(action)
    .fetch_one(pool)
    .await
    .expect("action")
}

/// One text column of an action (`status`, `last_message`), '' when null.
pub async fn action_text(pool: &PgPool, id: i64, column: &str) -> String {
    sqlx::query_scalar(&format!(
        "select coalesce({column}, '') from enforcement_actions where id = $1"
    ))
    .bind(id)
    .fetch_one(pool)
    .await
    .expect("action column")
}

pub async fn status(pool: &PgPool, id: i64) -> String {
    action_text(pool, id, "status").await
}

pub async fn last_message(pool: &PgPool, id: i64) -> String {
    action_text(pool, id, "last_message").await
}

/// (event, aws_request_id) for one action, oldest first.
pub async fn audit(pool: &PgPool, id: i64) -> Vec<(String, Option<String>)> {
    sqlx::query_as("select event, aws_request_id from enforcement_audit where action_id = $1 order by id")
        .bind(id)
        .fetch_all(pool)
        .await
        .expect("audit")
}

pub fn refused(result: Result<String, ActionError>) -> String {
    match result {
        Err(ActionError::Refused(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Approves gpu-burner (cap 5,000 through 2026-12-31) behind enforcement's back: a plain
/// insert, no disarm, so only enforcement's own judgement can notice it.
pub async fn approve_behind_the_back(pool: &PgPool) {
    sqlx::query(
        "insert into approvals (key, project, approver, reason, cap, expires, created_by)
         values ('gpu-burner', 'gpu-burner', 'cfo@example.com', 'launch week', 5000, '2026-12-31', 'finance@example.com')",
    )
    .execute(pool)
    .await
    .expect("approval");
}

/// Runs enforcement passes until the stop is `want` (AWS confirms asynchronously: a stop is
/// `executing`, a reversal `reversing`, until a pass re-describes its resources); at most
/// five.
pub async fn passes_until(pool: &PgPool, exec: &Executor, stop: i64, want: &str) {
    for _ in 0..5 {
        if status(pool, stop).await == want {
            return;
        }
        burnrate::enforcement::reconcile::pass(pool, exec, today())
            .await
            .expect("pass");
    }
    assert_eq!(status(pool, stop).await, want);
}

/// Where moto says an EC2 instance stands (`running`, `stopped`, …).
pub async fn instance_state(client: &aws_sdk_ec2::Client, id: &str) -> String {
    let out = client
        .describe_instances()
        .instance_ids(id)
        .send()
        .await
        .expect("describe");
    out.reservations()[0].instances()[0]
        .state()
        .and_then(|s| s.name())
        .expect("state")
        .as_str()
        .to_string()
}

/// A manual RUN_SSM_DOCUMENTS stop on gpu-burner, approved by an admin after AWS saw the
/// breach, and run by AWS: the stop in force, its fake and executor.
pub async fn manual_ssm_stop_in_force(pool: &PgPool) -> (BudgetActionsFake, Executor, i64) {
    let (fake, exec, stop) = manual_ssm_stop_awaiting(pool).await;
    fake.breach(&format!("burnrate-enforce-{stop}"));
    burnrate::enforcement::actions::approve(pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approved");
    fake.finish();
    (fake, exec, stop)
}

/// A manual RUN_SSM_DOCUMENTS stop on gpu-burner, evaluated and awaiting an admin: its fake,
/// executor and id.
pub async fn manual_ssm_stop_awaiting(pool: &PgPool) -> (BudgetActionsFake, Executor, i64) {
    seed(pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    burnrate::enforcement::evaluate::evaluate_and_act(pool, today(), &exec)
        .await
        .expect("evaluate");
    let stop = action_id(pool, "gpu-burner", "stop").await;
    assert_eq!(status(pool, stop).await, "awaiting_approval");
    (fake, exec, stop)
}

/// An EC2 client for `region`.
pub fn ec2_in(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_ec2::Client {
    aws_sdk_ec2::Client::from_conf(
        aws_sdk_ec2::config::Builder::from(sdk)
            .region(aws_config::Region::new(region.to_string()))
            .build(),
    )
}

/// Launches one `instance_type` instance with these tags (moto); its ID.
pub async fn launch_tagged(client: &aws_sdk_ec2::Client, instance_type: &str, tags: &[(&str, &str)]) -> String {
    use aws_sdk_ec2::types::{InstanceType, ResourceType, Tag, TagSpecification};
    let mut spec = TagSpecification::builder().resource_type(ResourceType::Instance);
    for (key, value) in tags {
        spec = spec.tags(Tag::builder().key(*key).value(*value).build());
    }
    let out = client
        .run_instances()
        .image_id("ami-12c6146b")
        .instance_type(InstanceType::from(instance_type))
        .min_count(1)
        .max_count(1)
        .tag_specifications(spec.build())
        .send()
        .await
        .expect("moto launches the instance");
    out.instances()[0].instance_id().expect("id").to_string()
}

/// The policies attached to IAM role `role`, by ARN.
pub async fn attached(iam: &aws_sdk_iam::Client, role: &str) -> Vec<String> {
    iam.list_attached_role_policies()
        .role_name(role)
        .send()
        .await
        .expect("attached")
        .attached_policies()
        .iter()
        .filter_map(|p| p.policy_arn().map(str::to_string))
        .collect()
}

/// One round of the proposal lister, as `serve` runs it apart from the enforcement pass;
/// how many proposals it listed.
pub async fn list_proposals(pool: &PgPool, exec: &Executor) -> usize {
    let mut listings = burnrate::enforcement::resources::listing::Listings::default();
    burnrate::enforcement::resources::listing::list_due(pool, exec, &mut listings)
        .await
        .expect("listing round")
}
