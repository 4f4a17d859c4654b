//! Enforcement when things overlap and fail: actions judged again before they run, disarmed
//! by approvals and policy changes (in AWS too), AWS's asynchronous execution followed to
//! SUCCESS or FAILURE, runs that die resumed from AWS's record, AWS budgets cleaned up, and
//! approval racing evaluation. The real aws-sdk-budgets talks to the budget-action fake, and
//! Postgres is real.

use crate::common;

use crate::common::budget_actions_fake::BudgetActionsFake;
use crate::common::day;
use crate::common::enforcement::*;
use burnrate::audit_log::Actor;
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::{Approval, actions, approvals, judge, policy, reconcile};
use rust_decimal::Decimal;
use sqlx::PgPool;

/// What the API and the YAML import do: the approval and the disarm in one transaction.
async fn approve_project(pool: &PgPool, project: &str, on: chrono::NaiveDate) {
    let mut tx = pool.begin().await.expect("tx");
    let approval = Approval {
        key: None,
        project: project.into(),
        approver: "cfo@example.com".into(),
        reason: "Q4 training run".into(),
        cap: Decimal::from(10_000),
        expires: day(2027, 1, 31),
    };
    let actor = Actor::system("test");
    approvals::set(&mut tx, &actor, &approval).await.expect("approve");
    judge::disarm_stale(&mut tx, "cfo@example.com", on, &judge::Touched::Project(project.into()))
        .await
        .expect("disarm");
    tx.commit().await.expect("commit");
}

/// The strict team's policy switched to `mode`, as the Enforcement page saves it.
async fn switch_mode(pool: &PgPool, mode: &str) {
    let mut tx = pool.begin().await.expect("tx");
    let mut current = policy::for_team(&mut tx, Some("strict"))
        .await
        .expect("policy")
        .expect("strict has one");
    current.mode = mode.into();
    policy::save(&mut tx, &Actor::system("test"), &current)
        .await
        .expect("save");
    judge::disarm_stale(
        &mut tx,
        "admin@example.com",
        today(),
        &judge::Touched::Team("strict".into()),
    )
    .await
    .expect("disarm");
    tx.commit().await.expect("commit");
}

/// Every ExecutionType AWS received for any action, in order.
fn executions(fake: &BudgetActionsFake) -> Vec<String> {
    fake.with(|s| {
        s.actions
            .iter()
            .flat_map(|a| a.history.iter().map(|(_, event)| event.clone()))
            .filter(|e| e.ends_with("_BUDGET_ACTION"))
            .collect()
    })
}

fn events(audit: &[(String, Option<String>)]) -> Vec<&str> {
    audit.iter().map(|(e, _)| e.as_str()).collect()
}

#[sqlx::test]
async fn an_action_is_judged_again_under_its_lock_and_cancelled_when_the_violation_no_longer_holds(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));

    // An approval written behind enforcement's back (no disarm): the admin's approval of the
    // stop still finds it, under the lock, and the stop never reaches AWS.
    sqlx::query(
        "insert into approvals (key, project, approver, reason, cap, expires, created_by)
         values ('gpu-burner', 'gpu-burner', 'cfo@example.com', 'pilot', 5000, '2027-01-31', 'sql')",
    )
    .execute(&pool)
    .await
    .expect("approval");
    let status = actions::approve(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approve");
    assert_eq!(status, "cancelled");
    assert!(executions(&fake).is_empty(), "{:?}", executions(&fake));
    let trail = audit(&pool, stop).await;
    assert_eq!(events(&trail), ["proposed", "cancelled"]);
    let why = last_message(&pool, stop).await;
    assert!(why.contains("approved by cfo@example.com"), "{why}");

    // The next pass deletes the cancelled stop's budget and action in AWS.
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert!(fake.with(|s| s.budgets.is_empty() && s.actions.is_empty()));
    assert_eq!(events(&audit(&pool, stop).await).last(), Some(&"cleaned_up"));
}

#[sqlx::test]
async fn a_violation_from_an_earlier_period_is_never_stopped(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));

    // December comes before anyone approves November's stop.
    let status = actions::approve(&pool, &exec, stop, "finance@example.com", day(2026, 12, 2))
        .await
        .expect("approve");
    assert_eq!(status, "cancelled");
    assert!(executions(&fake).is_empty());
    let why = last_message(&pool, stop).await;
    assert!(why.contains("period (from 2026-11-01) has ended"), "{why}");
    // November's email may still go out while its figures settle.
    let notify = action_id(&pool, "gpu-burner", "notify").await;
    let status = actions::approve(&pool, &exec, notify, "finance@example.com", day(2026, 12, 2))
        .await
        .expect("notify");
    assert_eq!(status, "executing");
}

#[sqlx::test]
async fn approving_a_project_disarms_its_pending_automatic_stop_at_once_including_in_aws(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert_eq!(status(&pool, stop).await, "proposed", "AWS has not seen the breach yet");
    fake.breach(&format!("burnrate-enforce-{stop}"));

    approve_project(&pool, "gpu-burner", today()).await;
    assert_eq!(status(&pool, stop).await, "cancelled");
    // What `serve`'s woken loop does next: the AWS side is deleted, and nothing ran.
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert!(fake.with(|s| s.budgets.is_empty() && s.actions.is_empty()));
    assert!(executions(&fake).is_empty());
    assert_eq!(
        events(&audit(&pool, stop).await),
        ["proposed", "cancelled", "cleaned_up"]
    );
    // Evaluating again proposes nothing for the approved project.
    let lines = evaluate_and_act(&pool, today(), &exec).await.expect("again");
    assert!(lines.iter().all(|l| l.project != "gpu-burner"), "{lines:?}");
}

#[sqlx::test]
async fn switching_a_policy_to_dry_run_or_manual_disarms_automatic_actions_and_deletes_them_in_aws(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));

    switch_mode(&pool, "dry-run").await;
    let (mode, state): (String, String) = sqlx::query_as("select mode, status from enforcement_actions where id = $1")
        .bind(stop)
        .fetch_one(&pool)
        .await
        .expect("row");
    assert_eq!((mode.as_str(), state.as_str()), ("dry-run", "proposed"));
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert!(fake.with(|s| s.actions.is_empty()), "the budget action is deleted");
    assert!(executions(&fake).is_empty());
    assert!(refused(actions::approve(&pool, &exec, stop, "finance@example.com", today()).await).contains("dry-run"));

    // Manual: the stop waits for an admin, and its AWS side is prepared afresh, in MANUAL
    // approval, for AWS to evaluate.
    switch_mode(&pool, "manual").await;
    assert_eq!(status(&pool, stop).await, "awaiting_approval");
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(fake.statuses().len(), 1);
    assert_eq!(fake.with(|s| s.actions[0].request["ApprovalModel"].clone()), "MANUAL");
    assert!(executions(&fake).is_empty());
    let trail = events(&audit(&pool, stop).await).join(",");
    assert_eq!(trail, "proposed,disarmed,cleaned_up,disarmed");
}

#[sqlx::test]
async fn aws_failures_are_shown_with_aws_reason_and_retry_sends_retry_budget_action(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));
    let approved = actions::approve(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approve");
    assert_eq!(approved, "executing");

    let reason = "User: arn:aws:sts::123456789012:assumed-role/budgets is not authorized to perform: ssm:StartAutomationExecution";
    fake.with(|s| s.fail_next_execution = Some(reason.into()));
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "failed");
    let message = last_message(&pool, stop).await;
    assert!(message.contains(reason), "{message}");

    let retried = actions::retry(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("retry");
    assert_eq!(retried, "executing");
    assert_eq!(executions(&fake), ["APPROVE_BUDGET_ACTION", "RETRY_BUDGET_ACTION"]);
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");
    assert_eq!(
        events(&audit(&pool, stop).await),
        [
            "proposed", "approved", "started", "failed", "retried", "started", "executed"
        ]
    );
}

#[sqlx::test]
async fn a_stop_in_force_is_lifted_when_its_project_is_approved_or_its_period_ends(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let budget = format!("burnrate-enforce-{stop}");
    fake.breach(&budget);
    actions::approve(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approve");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");

    // The period ends: the next pass reverses the stop, then deletes its budget.
    let december = day(2026, 12, 1);
    reconcile::pass(&pool, &exec, december).await.expect("lift");
    assert_eq!(status(&pool, stop).await, "reversing");
    assert_eq!(fake.statuses()[0].1, "REVERSE_IN_PROGRESS");
    fake.finish();
    reconcile::pass(&pool, &exec, december).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "reversed");
    reconcile::pass(&pool, &exec, december).await.expect("clean up");
    assert!(fake.with(|s| s.budgets.is_empty()));
    let trail = events(&audit(&pool, stop).await).join(",");
    assert!(
        trail.ends_with("executed,disarmed,reversal_started,reversed,cleaned_up"),
        "{trail}"
    );
}

#[sqlx::test]
async fn approving_a_project_lifts_its_stop_in_force(pool: PgPool) {
    let (fake, exec, stop) = manual_ssm_stop_in_force(&pool).await;
    approve_project(&pool, "gpu-burner", today()).await;
    // Executing when approved: followed to executed, then reversed.
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "reversing");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    reconcile::pass(&pool, &exec, today()).await.expect("clean up");
    assert_eq!(status(&pool, stop).await, "reversed");
    assert!(fake.with(|s| s.budgets.is_empty()));
    let why: String =
        sqlx::query_scalar("select response from enforcement_audit where action_id = $1 and event = 'disarmed'")
            .bind(stop)
            .fetch_one(&pool)
            .await
            .expect("disarmed");
    assert!(why.contains("approved"), "{why}");
}

/// What a run creates in AWS for stop `action_id` (strict's policy), as if it died before
/// recording it; returns the budget action's id.
async fn create_in_aws(
    pool: &PgPool,
    exec: &burnrate::enforcement::executor::Executor,
    action_id: i64,
    project: &str,
) -> String {
    let aws = exec.aws.clone().expect("aws");
    let mut conn = pool.acquire().await.expect("conn");
    let stop_config = policy::for_team(&mut conn, Some("strict"))
        .await
        .expect("policy")
        .and_then(|p| p.stop)
        .expect("stop config");
    let subscribers = vec!["owner@example.com".to_string()];
    let target = burnrate::enforcement::aws_stop::StopTarget {
        action_id,
        project,
        tag_key: "project",
        limit: Decimal::from(100),
        period: burnrate::period::BudgetPeriod::Monthly,
        metric: burnrate::period::Metric::Unblended,
        subscribers: &subscribers,
    };
    let burnrate::enforcement::aws_stop::Prepared { action_id: action, .. } =
        burnrate::enforcement::aws_stop::prepare(&aws, &target, &stop_config)
            .await
            .expect("prepare");
    action
}

/// Claims the stop as a runner would, then "dies": only what reached AWS and the claim remain.
async fn claim_and_die(pool: &PgPool, exec: &burnrate::enforcement::executor::Executor, stop: i64) -> i64 {
    let mut tx = pool.begin().await.expect("tx");
    let row = burnrate::enforcement::claims::lock(&mut tx, stop)
        .await
        .expect("lock")
        .expect("row");
    let claim = burnrate::enforcement::claims::claim(&mut tx, &row, exec.lease)
        .await
        .expect("claim");
    tx.commit().await.expect("commit");
    claim
}

async fn expire_lease(pool: &PgPool, stop: i64) {
    sqlx::query("update enforcement_actions set lease_until = now() - interval '1 second' where id = $1")
        .bind(stop)
        .execute(pool)
        .await
        .expect("expire");
}

#[sqlx::test]
async fn a_run_that_dies_is_resumed_from_aws_and_creates_nothing_twice(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    burnrate::enforcement::evaluate::evaluate(&pool, today())
        .await
        .expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;

    // Died after AWS created the budget and its action, before recording them.
    claim_and_die(&pool, &exec, stop).await;
    let first = create_in_aws(&pool, &exec, stop, "gpu-burner").await;
    let aws = exec.aws.clone().expect("aws");
    // While the lease lasts, no pass touches it.
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "running");
    expire_lease(&pool, stop).await;
    reconcile::pass(&pool, &exec, today()).await.expect("resume");
    // Resumed (nothing had run), then run again: the existing budget and action are reused.
    assert_eq!(fake.with(|s| s.actions.len()), 1);
    let recorded: Option<String> = sqlx::query_scalar("select aws_action_id from enforcement_actions where id = $1")
        .bind(stop)
        .fetch_one(&pool)
        .await
        .expect("ids");
    assert_eq!(recorded.as_deref(), Some(first.as_str()));
    assert_eq!(status(&pool, stop).await, "proposed");

    // Died after AWS accepted the approval: resumed as executing, never approved twice.
    fake.breach(&format!("burnrate-enforce-{stop}"));
    claim_and_die(&pool, &exec, stop).await;
    burnrate::enforcement::aws_stop::execute(
        &aws,
        &format!("burnrate-enforce-{stop}"),
        &first,
        aws_sdk_budgets::types::ExecutionType::ApproveBudgetAction,
    )
    .await
    .expect("approve in AWS");
    expire_lease(&pool, stop).await;
    reconcile::pass(&pool, &exec, today()).await.expect("resume");
    assert_eq!(status(&pool, stop).await, "executing");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");
    assert_eq!(executions(&fake), ["APPROVE_BUDGET_ACTION"]);
    let trail = events(&audit(&pool, stop).await).join(",");
    assert_eq!(trail, "proposed,interrupted,interrupted,executed");
}

#[sqlx::test]
async fn approval_racing_evaluation_50_times_never_leaves_a_stop_on_an_approved_project(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    for round in 0..50 {
        let project = format!("race-{round}");
        common::add_project_costs(&pool, &project, Some("strict"), (today(), today()), "500.00", "500.00").await;
        // The stop is proposed and AWS has it PENDING: a run would execute it at once.
        burnrate::enforcement::evaluate::evaluate(&pool, today())
            .await
            .expect("evaluate");
        reconcile::pass(&pool, &exec, today()).await.expect("prepare");
        let stop = action_id(&pool, &project, "stop").await;
        fake.breach(&format!("burnrate-enforce-{stop}"));

        let (approved, evaluated) = tokio::join!(
            approve_project(&pool, &project, today()),
            evaluate_and_act(&pool, today(), &exec)
        );
        let () = approved;
        evaluated.expect("evaluation never deadlocks nor fails");
        // Whatever the order, once AWS and the passes settle, no stop is in force.
        for _ in 0..3 {
            fake.finish();
            reconcile::pass(&pool, &exec, today()).await.expect("settle");
        }
        let state = status(&pool, stop).await;
        assert!(
            state == "cancelled" || state == "reversed",
            "round {round}: the stop ended {state}"
        );
        // Cancelled means it never reached AWS; reversed means it ran before the approval.
        let approved_in_aws = fake.with(|s| {
            s.actions.iter().any(|a| {
                a.budget.ends_with(&format!("-{stop}")) && a.history.iter().any(|(_, e)| e == "APPROVE_BUDGET_ACTION")
            })
        });
        let audited_start: bool = sqlx::query_scalar(
            "select exists (select 1 from enforcement_audit where action_id = $1 and event = 'started')",
        )
        .bind(stop)
        .fetch_one(&pool)
        .await
        .expect("audit");
        assert!(
            !(state == "cancelled" && (approved_in_aws || audited_start)),
            "round {round}"
        );
        assert!(
            fake.with(|s| s.actions.iter().all(|a| !a.budget.ends_with(&format!("-{stop}")))),
            "round {round}: its AWS budget is deleted"
        );
    }
}

#[sqlx::test]
async fn budgets_sync_lists_orphaned_enforcement_budgets_and_prune_deletes_only_them(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let live = format!("burnrate-enforce-{stop}");
    // Left behind by a database restored from an older backup: no action records it.
    create_in_aws(&pool, &exec, 999_999, "gone").await;
    let url = common::database_url(&pool).await;
    let sync = |prune: bool| {
        let mut command = crate::common::burnrate_command(&url);
        command
            .args(["budgets", "sync"])
            .args(prune.then_some("--prune"))
            .env("AWS_ENDPOINT_URL_BUDGETS", fake.endpoint())
            .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
            .env("AWS_SECRET_ACCESS_KEY", "test-secret")
            .env("AWS_ACCOUNT_ID", "123456789012")
            .env("AWS_REGION", "us-east-1");
        command
    };
    // The fake answers on this test's runtime, so the CLI runs off it.
    let run = |mut command: std::process::Command| async move {
        let output = tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
            .await
            .expect("join");
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    };

    let listed = run(sync(false)).await;
    assert!(
        listed.contains("orphaned enforcement budgets (delete them with --prune):\n  burnrate-enforce-999999\n"),
        "{listed}"
    );
    assert!(!listed.contains(&live), "{listed}");
    assert_eq!(fake.with(|s| s.budgets.len()), 2, "listing deletes nothing");

    let pruned = run(sync(true)).await;
    assert!(pruned.contains("  burnrate-enforce-999999: deleted"), "{pruned}");
    let left: Vec<String> = fake.with(|s| s.budgets.keys().cloned().collect());
    assert_eq!(left, std::slice::from_ref(&live));
    assert_eq!(
        fake.with(|s| s.actions.iter().map(|a| a.budget.clone()).collect::<Vec<_>>()),
        [live]
    );
    assert!(run(sync(false)).await.contains("orphaned enforcement budgets: none"));
}

#[sqlx::test]
async fn a_notify_email_goes_through_the_outbox_and_a_refused_recipient_fails_only_itself(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    sqlx::query("insert into team_owners (team_id, email) select id, 'rejected@example.com' from teams")
        .execute(&pool)
        .await
        .expect("owner");
    let fake = BudgetActionsFake::start().await;
    let smtp = common::smtp::start_picky().await;
    let exec = executor(&fake, Some(smtp.url())).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let notify = action_id(&pool, "gpu-burner", "notify").await;

    let queued = actions::approve(&pool, &exec, notify, "finance@example.com", today())
        .await
        .expect("approve");
    assert_eq!(queued, "executing", "queued, not yet sent");
    let report = exec.alerts.deliver_now(&pool).await.expect("deliver");
    assert_eq!((report.sent, report.failed), (2, 1));
    let deliveries: Vec<(String, String)> = sqlx::query_as(
        "select recipient, status from alert_deliveries where enforcement_action_id = $1 order by recipient",
    )
    .bind(notify)
    .fetch_all(&pool)
    .await
    .expect("deliveries");
    let deliveries: Vec<(&str, &str)> = deliveries.iter().map(|(r, s)| (r.as_str(), s.as_str())).collect();
    assert_eq!(
        deliveries,
        [
            ("finance@example.com", "sent"),
            ("owner@example.com", "sent"),
            ("rejected@example.com", "failed")
        ]
    );
    assert_eq!(status(&pool, notify).await, "failed");
    let message = last_message(&pool, notify).await;
    let refused = message
        .split("; ")
        .find(|part| part.starts_with("rejected@example.com: "));
    assert!(refused.is_some_and(|r| r.contains("550")), "{message}");
    assert_eq!(smtp.messages().len(), 2);

    // Retry re-queues only the refused recipient; the others get no second copy.
    let retried = actions::retry(&pool, &exec, notify, "finance@example.com", today())
        .await
        .expect("retry");
    assert_eq!(retried, "executing");
    let again = exec.alerts.deliver_now(&pool).await.expect("deliver");
    assert_eq!((again.sent, again.failed), (0, 1));
    assert_eq!(smtp.messages().len(), 2);
    assert_eq!(
        events(&audit(&pool, notify).await),
        ["proposed", "approved", "failed", "retried", "failed"]
    );
}

#[sqlx::test]
async fn an_approval_committed_after_the_claim_still_stops_the_call_to_aws(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));
    // A runner has claimed the stop; the approval commits before it reaches AWS.
    let claim = claim_and_die(&pool, &exec, stop).await;
    approve_project(&pool, "gpu-burner", today()).await;
    let row = burnrate::enforcement::claims::read(&mut pool.acquire().await.expect("conn"), stop)
        .await
        .expect("read")
        .expect("row");
    let ended = burnrate::enforcement::stop_run::run_claimed(
        &pool,
        &exec,
        &row,
        claim,
        "system",
        (burnrate::enforcement::claims::Intent::Run { by_admin: false }, today()),
    )
    .await
    .expect("run");
    assert_eq!(ended, "cancelled");
    assert!(executions(&fake).is_empty(), "{:?}", executions(&fake));
    assert!(last_message(&pool, stop).await.contains("approved"));
}

#[sqlx::test]
async fn an_execution_aws_did_not_answer_is_settled_from_aws_not_marked_failed(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    // AWS calls give up after one second, as BURNRATE_AWS_TIMEOUT=1s would.
    let sdk = common::aws_config_at(&fake.endpoint(), "AKIDTEST").await;
    let sdk = sdk
        .into_builder()
        .timeout_config(
            aws_config::timeout::TimeoutConfig::builder()
                .operation_timeout(std::time::Duration::from_secs(1))
                .build(),
        )
        .build();
    let exec = burnrate::enforcement::executor::Executor {
        aws: Some(std::sync::Arc::new(burnrate::aws::budgets::AwsBudgets::new(
            &sdk,
            "123456789012".into(),
        ))),
        lease: std::time::Duration::from_secs(30),
        ..executor(&fake, None).await
    };
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));
    fake.with(|s| s.execute_delay = Some(std::time::Duration::from_secs(3)));

    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    // AWS took the approval but its answer never came: not failed, still claimed.
    assert_eq!(fake.statuses()[0].1, "EXECUTION_IN_PROGRESS");
    assert_eq!(status(&pool, stop).await, "running");
    expire_lease(&pool, stop).await;
    reconcile::pass(&pool, &exec, today()).await.expect("resume");
    assert_eq!(status(&pool, stop).await, "executing");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");
    assert_eq!(executions(&fake), ["APPROVE_BUDGET_ACTION"]);
}

#[sqlx::test]
async fn prune_reverses_an_orphans_action_in_force_before_deleting_it(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    // An orphan whose action AWS ran: its instances are stopped in AWS.
    let action = create_in_aws(&pool, &exec, 999_999, "gone").await;
    let orphan = "burnrate-enforce-999999";
    fake.breach(orphan);
    let aws = exec.aws.clone().expect("aws");
    burnrate::enforcement::aws_stop::execute(
        &aws,
        orphan,
        &action,
        aws_sdk_budgets::types::ExecutionType::ApproveBudgetAction,
    )
    .await
    .expect("approved");
    fake.finish();
    let status = |fake: &BudgetActionsFake| fake.with(|s| s.actions[0].status.clone());
    assert_eq!(status(&fake), "EXECUTION_SUCCESS");

    let names = vec![orphan.to_string()];
    let kept = burnrate::enforcement::orphans::prune(&pool, &aws, &names).await;
    assert_eq!(kept.len(), 1);
    assert!(kept[0].why.contains("reversal requested"), "{}", kept[0].why);
    assert_eq!(status(&fake), "REVERSE_IN_PROGRESS", "reversed, not deleted");
    assert!(fake.with(|s| s.budgets.contains_key(orphan)));
    // While AWS undoes it, the budget stays.
    let kept = burnrate::enforcement::orphans::prune(&pool, &aws, &names).await;
    assert!(kept[0].why.contains("REVERSE_IN_PROGRESS"), "{}", kept[0].why);

    fake.finish();
    assert!(
        burnrate::enforcement::orphans::prune(&pool, &aws, &names)
            .await
            .is_empty()
    );
    assert!(!fake.with(|s| s.budgets.contains_key(orphan)), "deleted once undone");
}

#[sqlx::test]
async fn throttling_never_fails_an_automatic_stop_or_takes_a_manual_one_out_of_approval(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));

    // AWS throttles the execution (reads are retried by the SDK; a call that changes things
    // is not): the stop stays proposed, to run on the next pass.
    throttle_next_execution(&fake);
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "proposed");
    assert!(last_message(&pool, stop).await.contains("tried again on the next pass"));
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "executing");
    assert!(!audit(&pool, stop).await.iter().any(|(event, _)| event == "failed"));
}

#[sqlx::test]
async fn a_manual_stop_approved_while_aws_throttles_still_awaits_approval(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert_eq!(status(&pool, stop).await, "awaiting_approval");
    fake.breach(&format!("burnrate-enforce-{stop}"));
    throttle_next_execution(&fake);
    let after = actions::approve(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approve");
    assert_eq!(after, "awaiting_approval");
    assert!(last_message(&pool, stop).await.contains("Rate exceeded"));
    // Approved again once AWS answers, it runs.
    let after = actions::approve(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("approve");
    assert_eq!(after, "executing");
}

/// AWS answers the next ExecuteBudgetAction with throttling, as documented for AWS Budgets
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/CommonErrors.html>).
fn throttle_next_execution(fake: &BudgetActionsFake) {
    fake.with(|s| {
        s.fail_next_of = Some((
            "ExecuteBudgetAction".into(),
            "ThrottlingException".into(),
            "Rate exceeded".into(),
        ))
    });
}

#[sqlx::test]
async fn a_stops_aws_budget_tracks_the_policys_metric_through_the_documented_tag_filter(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    sqlx::query("update enforcement_policies set metric = 'amortized'")
        .execute(&pool)
        .await
        .expect("amortized");
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let budget = fake
        .with(|s| s.budgets.get(&format!("burnrate-enforce-{stop}")).cloned())
        .expect("the manual stop's budget is prepared");
    // Budget.Metrics (API_budgets_Budget.html) and a FilterExpression on the tag's value
    // (API_budgets_TagValues.html), never the deprecated CostFilters.
    assert_eq!(budget["Metrics"], serde_json::json!(["AmortizedCost"]), "{budget}");
    assert_eq!(
        budget["FilterExpression"]["Tags"],
        serde_json::json!({"Key": "project", "Values": ["gpu-burner"], "MatchOptions": ["EQUALS"]}),
        "{budget}"
    );
    assert!(budget.get("CostFilters").is_none(), "{budget}");
}
