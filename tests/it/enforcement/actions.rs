//! Enforcement actions end to end: the real aws-sdk-budgets against the budget-action fake,
//! a real SMTP server (aiosmtpd) for notify, real Postgres for state and the audit log.

use crate::common;

use crate::common::budget_actions_fake::BudgetActionsFake;
use burnrate::auth::Role;
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::{actions, reconcile};
use sqlx::PgPool;

use crate::common::enforcement::*;

#[sqlx::test]
async fn a_manual_stop_runs_once_approved_after_aws_sees_the_breach_and_reverses(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let smtp = common::smtp::start().await;
    let exec = executor(&fake, Some(smtp.url())).await;

    let lines = evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let mine: Vec<_> = lines.iter().filter(|l| l.project == "gpu-burner").collect();
    assert_eq!(mine.len(), 3);
    assert!(
        mine.iter()
            .all(|l| l.status == "awaiting_approval" && l.mode == "manual"),
        "{mine:?}"
    );
    // The stop's AWS side is prepared at once, so AWS evaluates it before anyone approves.
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let budget = format!("burnrate-enforce-{stop}");
    assert_eq!(fake.statuses(), vec![(budget.clone(), "STANDBY".to_string())]);
    let request = fake.with(|s| s.actions[0].request.clone());
    assert_eq!(request["ActionType"], "RUN_SSM_DOCUMENTS");
    assert_eq!(request["ApprovalModel"], "MANUAL");
    assert_eq!(
        request["Definition"]["SsmActionDefinition"]["InstanceIds"][0],
        "i-0abc12345def67890"
    );
    // The body the SDK sent, exactly: FilterExpression is Cost Explorer's Expression, with
    // the tag key and plain values
    // (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_TagValues.html).
    let filter = fake.with(|s| s.budgets[&budget]["FilterExpression"].clone());
    assert_eq!(
        filter,
        serde_json::json!({"Tags": {"Key": "project", "Values": ["gpu-burner"], "MatchOptions": ["EQUALS"]}})
    );

    // Evaluating again records nothing new and creates nothing in AWS.
    let calls = fake.with(|s| s.calls.len());
    evaluate_and_act(&pool, today(), &exec).await.expect("again");
    assert_eq!(fake.with(|s| s.calls.len()), calls);
    let proposed: i64 = sqlx::query_scalar("select count(*) from enforcement_audit where event = 'proposed'")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(proposed, 3 + 2, "three for gpu-burner, notify and flag for orphan");

    // Approved before AWS has seen the breach: failed, with why, and nothing shown as done.
    assert_eq!(
        actions::approve(&pool, &exec, stop, "finance@example.com", today())
            .await
            .expect("approve"),
        "failed"
    );
    let message = last_message(&pool, stop).await;
    assert!(
        message.contains("has not yet found the project over the limit"),
        "{message}"
    );
    // AWS evaluates, finds the project over: the action is PENDING; Retry asks AWS to run it.
    fake.breach(&budget);
    assert_eq!(
        actions::retry(&pool, &exec, stop, "finance@example.com", today())
            .await
            .expect("retry"),
        "executing"
    );
    // AWS runs it asynchronously: not shown as executed until AWS says so.
    assert_eq!(fake.statuses()[0].1, "EXECUTION_IN_PROGRESS");
    evaluate_and_act(&pool, today(), &exec).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executing");
    assert_eq!(fake.finish(), 1);
    evaluate_and_act(&pool, today(), &exec).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");
    let events = audit(&pool, stop).await;
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        names,
        ["proposed", "approved", "failed", "retried", "started", "executed"]
    );
    assert!(
        events[4].1.as_deref().is_some_and(|id| id.starts_with("fake-")),
        "the accepted call keeps AWS's request id: {events:?}"
    );
    assert!(
        actions::approve(&pool, &exec, stop, "finance@example.com", today())
            .await
            .is_err()
    );

    // Notify queues one email per recipient (the team owner and the finance admin) in the
    // outbox; it is executed once the SMTP server has accepted both.
    let notify = action_id(&pool, "gpu-burner", "notify").await;
    assert_eq!(
        actions::approve(&pool, &exec, notify, "finance@example.com", today())
            .await
            .expect("notify"),
        "executing"
    );
    let again = refused(actions::approve(&pool, &exec, notify, "finance@example.com", today()).await);
    assert!(again.contains("executing"), "{again}");
    let report = exec.alerts.deliver_now(&pool).await.expect("deliver");
    assert_eq!((report.sent, report.failed, report.queued), (2, 0, 0));
    assert_eq!(status(&pool, notify).await, "executed");
    let mail = smtp.messages();
    assert_eq!(mail.len(), 2);
    let mut to: Vec<String> = mail.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, ["finance@example.com", "owner@example.com"]);
    assert!(
        mail[0]
            .subject
            .contains("gpu-burner is over its spend limit (unapproved)"),
        "{}",
        mail[0].subject
    );
    assert!(
        mail[0].body.contains("Spend: $150.00") && mail[0].body.contains("Policy limit: $100.00"),
        "{}",
        mail[0].body
    );
    assert!(mail[0].body.contains("https://costs.example.com/enforcement"));
    let ids: Vec<&str> = mail.iter().map(|m| m.message_id.as_str()).collect();
    assert!(
        ids.iter()
            .all(|id| id.starts_with(&format!("<burnrate-enforcement-{notify}-")))
            && ids[0] != ids[1],
        "a stable Message-ID per action and recipient: {ids:?}"
    );

    // Flag: the badge shows until reversed.
    let flag = action_id(&pool, "gpu-burner", "flag").await;
    actions::approve(&pool, &exec, flag, "finance@example.com", today())
        .await
        .expect("flag");
    let mut conn = pool.acquire().await.expect("conn");
    assert_eq!(
        burnrate::enforcement::flags::flagged_projects(&mut conn)
            .await
            .expect("flags"),
        ["gpu-burner"]
    );

    // Reversal: the stop through REVERSE_BUDGET_ACTION (asynchronous too), the flag locally;
    // an email cannot be taken back. A reversed stop's AWS budget is then deleted.
    assert_eq!(
        burnrate::enforcement::reverse::reverse(&pool, &exec, stop, "finance@example.com")
            .await
            .expect("reverse"),
        "reversing"
    );
    assert_eq!(fake.statuses()[0].1, "REVERSE_IN_PROGRESS");
    fake.finish();
    evaluate_and_act(&pool, today(), &exec).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "reversed");
    evaluate_and_act(&pool, today(), &exec).await.expect("clean up");
    assert!(fake.statuses().is_empty(), "the reversed stop's budget is deleted");
    assert!(fake.with(|s| s.budgets.is_empty()));
    assert_eq!(
        burnrate::enforcement::reverse::reverse(&pool, &exec, flag, "finance@example.com")
            .await
            .expect("unflag"),
        "reversed"
    );
    assert!(
        burnrate::enforcement::flags::flagged_projects(&mut conn)
            .await
            .expect("flags")
            .is_empty()
    );
    assert!(
        refused(burnrate::enforcement::reverse::reverse(&pool, &exec, notify, "finance@example.com").await)
            .contains("email")
    );
    let events: Vec<(String, Option<String>)> = audit(&pool, stop).await;
    let tail: Vec<&str> = events.iter().rev().take(3).rev().map(|(e, _)| e.as_str()).collect();
    assert_eq!(tail, ["reversal_started", "reversed", "cleaned_up"]);
    assert!(events[events.len() - 3].1.is_some());

    // The dry-run org default only records: orphan's actions cannot be run.
    let orphan = action_id(&pool, "orphan", "notify").await;
    assert_eq!(status(&pool, orphan).await, "proposed");
    assert!(refused(actions::approve(&pool, &exec, orphan, "finance@example.com", today()).await).contains("dry-run"));
    assert_eq!(smtp.messages().len(), 2);

    // The log is append-only.
    assert!(
        sqlx::query("delete from enforcement_audit")
            .execute(&pool)
            .await
            .is_err()
    );
    assert!(
        sqlx::query("update enforcement_audit set actor = 'x'")
            .execute(&pool)
            .await
            .is_err()
    );
    let csv = burnrate::enforcement::trail::csv(&mut conn).await.expect("csv");
    assert!(csv.starts_with("id,at,actor,event,action_id,project,action,aws_request_id,response\n"));
    assert_eq!(
        csv.lines().count(),
        1 + sqlx::query_scalar::<_, i64>("select count(*) from enforcement_audit")
            .fetch_one(&pool)
            .await
            .expect("n") as usize
    );
}

#[sqlx::test]
async fn automatic_mode_acts_when_aws_is_ready_and_a_failed_call_can_be_retried(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;

    let lines = evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let status_of = |action: &str| {
        lines
            .iter()
            .find(|l| l.project == "gpu-burner" && l.action == action)
            .map(|l| l.status.clone())
    };
    assert_eq!(status_of("flag").as_deref(), Some("executed"));
    // AWS has not evaluated the new budget yet: the stop stays proposed, not failed.
    assert_eq!(status_of("stop").as_deref(), Some("proposed"));
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let budget = format!("burnrate-enforce-{stop}");
    let request = fake.with(|s| s.actions[0].request.clone());
    assert_eq!(request["ActionType"], "APPLY_IAM_POLICY");
    assert_eq!(request["Definition"]["IamActionDefinition"]["Roles"][0], "ml-training");

    // AWS sees the breach, but the next call fails: the action is failed with AWS's message.
    fake.breach(&budget);
    fake.with(|s| s.fail_next = Some(("AccessDeniedException".into(), "User is not authorized".into())));
    let lines = evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop_line = lines
        .iter()
        .find(|l| l.action == "stop" && l.project == "gpu-burner")
        .expect("stop");
    assert_eq!(stop_line.status, "failed");
    let message = last_message(&pool, stop).await;
    assert!(
        message.contains("AccessDeniedException: User is not authorized"),
        "{message}"
    );
    let events = audit(&pool, stop).await;
    assert_eq!(events.last().map(|e| e.0.as_str()), Some("failed"));
    assert!(
        events.last().and_then(|e| e.1.clone()).is_some(),
        "the failure keeps AWS's request id"
    );

    assert_eq!(
        actions::retry(&pool, &exec, stop, "finance@example.com", today())
            .await
            .expect("retry"),
        "executing"
    );
    fake.finish();
    evaluate_and_act(&pool, today(), &exec).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");
    assert_eq!(fake.statuses()[0].1, "EXECUTION_SUCCESS");
    // Further evaluations leave everything as it is.
    let calls = fake.with(|s| s.calls.len());
    evaluate_and_act(&pool, today(), &exec).await.expect("again");
    assert_eq!(fake.with(|s| s.calls.len()), calls);
}

async fn set_org_mode(pool: &PgPool, mode: &str) {
    sqlx::query("update enforcement_policies set mode = $1 where team_id is null")
        .bind(mode)
        .execute(pool)
        .await
        .expect("policy");
}

#[sqlx::test]
async fn switching_a_policy_out_of_dry_run_makes_its_open_proposals_actionable(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let fake = BudgetActionsFake::start().await;
    let exec = executor(&fake, None).await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let flag = action_id(&pool, "orphan", "flag").await;
    assert_eq!(status(&pool, flag).await, "proposed");

    set_org_mode(&pool, "manual").await;
    let lines = evaluate_and_act(&pool, today(), &exec).await.expect("again");
    let orphan: Vec<_> = lines.iter().filter(|l| l.project == "orphan").collect();
    assert!(
        orphan
            .iter()
            .all(|l| l.mode == "manual" && l.status == "awaiting_approval"),
        "{orphan:?}"
    );
    assert_eq!(
        actions::approve(&pool, &exec, flag, "finance@example.com", today())
            .await
            .expect("approve"),
        "executed"
    );
    let events: Vec<String> = audit(&pool, flag).await.into_iter().map(|(e, _)| e).collect();
    assert_eq!(events, ["proposed", "proposed", "approved", "executed"]);

    // Back to dry-run: the executed flag is no longer justified, so the pass lifts it, as it
    // lifts a stop (#35); nothing else becomes runnable.
    set_org_mode(&pool, "dry-run").await;
    evaluate_and_act(&pool, today(), &exec).await.expect("third");
    assert_eq!(status(&pool, flag).await, "reversed");
    let events: Vec<String> = audit(&pool, flag).await.into_iter().map(|(e, _)| e).collect();
    assert_eq!(events[4..], ["disarmed", "reversed"]);
    let notify = action_id(&pool, "orphan", "notify").await;
    assert_eq!(status(&pool, notify).await, "proposed");
    assert!(refused(actions::approve(&pool, &exec, notify, "finance@example.com", today()).await).contains("dry-run"));
}

#[sqlx::test]
async fn only_admins_act_and_set_policies_and_every_policy_field_is_checked(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    let app = common::spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    burnrate::enforcement::evaluate::evaluate(&pool, today())
        .await
        .expect("evaluate");
    let flag = action_id(&pool, "gpu-burner", "flag").await;

    let body = format!("id={flag}&step=approve");
    assert_eq!(
        app.post_form_as("/api/enforcement_action", &body, &lead).await.status,
        403
    );
    assert_eq!(status(&pool, flag).await, "awaiting_approval");
    let done = app.post_form_as("/api/enforcement_action", &body, &admin).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(status(&pool, flag).await, "executed");
    let twice = app.post_form_as("/api/enforcement_action", &body, &admin).await;
    assert_eq!(twice.status, 400, "{}", twice.body);

    // The flag shows on the project's page.
    let page = app.get_as("/projects/gpu-burner?period=2026-11", &lead).await;
    assert!(page.body.contains("data-testid=\"flag-badge\""), "{}", page.body);

    let good = "team=strict&limit=250.00&period=quarterly&mode=automatic&notify=on&flag=on";
    assert_eq!(app.post_form_as("/api/save_policy", good, &lead).await.status, 403);
    let saved = app.post_form_as("/api/save_policy", good, &admin).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let (limit, period, mode): (String, String, String) = sqlx::query_as(
        "select spend_limit::text, period, mode from enforcement_policies p join teams t on t.id = p.team_id",
    )
    .fetch_one(&pool)
    .await
    .expect("policy");
    assert_eq!(
        (limit.as_str(), period.as_str(), mode.as_str()),
        ("250.00", "quarterly", "automatic")
    );

    let bad = "team=nope&limit=0&period=weekly&mode=sometimes&stop=on&stop_type=RUN_SSM_DOCUMENTS\
               &execution_role_arn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fx&instance_ids=host-1&instance_region=";
    let refused = app.post_form_as("/api/save_policy", bad, &admin).await;
    assert_eq!(refused.status, 400);
    for field in [
        "limit",
        "period",
        "mode",
        "execution_role_arn",
        "instance_ids",
        "instance_region",
    ] {
        assert!(
            refused.body.contains(&format!("\"field\":\"{field}\"")),
            "{field}: {}",
            refused.body
        );
    }
    let unknown = "team=nope&limit=10&period=monthly&mode=manual&flag=on";
    let refused = app.post_form_as("/api/save_policy", unknown, &admin).await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("\"field\":\"team\""), "{}", refused.body);

    assert_eq!(app.get("/api/enforcement_audit.csv").await.status, 401);
    let csv = app.get_as("/api/enforcement_audit.csv", &lead).await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.body
            .starts_with("id,at,actor,event,action_id,project,action,aws_request_id,response\n")
    );
    assert!(csv.body.contains(",admin@example.com,approved,"), "{}", csv.body);
    assert!(csv.body.contains(",admin@example.com,executed,"), "{}", csv.body);
}

#[sqlx::test]
async fn disabled_accounts_get_no_enforcement_mail(pool: PgPool) {
    seed(&pool, MANUAL_SSM).await;
    crate::common::create_account(&pool, "cfo@example.com", burnrate::auth::Role::Admin).await;
    crate::common::create_account(&pool, "owner@example.com", burnrate::auth::Role::Lead).await;
    sqlx::query("update accounts set disabled_at = now() where email in ('finance@example.com', 'owner@example.com')")
        .execute(&pool)
        .await
        .expect("disabled");
    let team: i64 = sqlx::query_scalar("select id from teams where name = 'strict'")
        .fetch_one(&pool)
        .await
        .expect("team");
    let mut conn = pool.acquire().await.expect("connection");
    let recipients = burnrate::enforcement::notify::recipients(&mut conn, Some(team))
        .await
        .expect("recipients");
    assert_eq!(recipients, ["cfo@example.com"]);
}

#[sqlx::test]
async fn a_stop_left_in_force_without_justification_is_listed_on_the_enforcement_page(pool: PgPool) {
    let (fake, exec, stop) = manual_ssm_stop_in_force(&pool).await;
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "executed");
    assert!(reconcile::unjustified(&pool, today()).await.expect("read").is_empty());

    // Approved since; AWS refuses to undo the stop, so it stays in force, unjustified.
    crate::common::enforcement::approve_behind_the_back(&pool).await;
    fake.with(|s| s.fail_next_execution = Some("the execution role may not detach the policy".into()));
    reconcile::pass(&pool, &exec, today()).await.expect("lift");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("follow");
    assert_eq!(status(&pool, stop).await, "executed");
    assert!(last_message(&pool, stop).await.starts_with("reversal failed"));
    let listed = reconcile::unjustified(&pool, today()).await.expect("read");
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].0, listed[0].1.as_str()), (stop, "gpu-burner"));
    assert!(listed[0].2.contains("approved"), "{}", listed[0].2);

    let app = common::spawn_app(pool.clone()).await;
    let admin = app.session_for("cfo@example.com", Role::Admin).await;
    let page = app.post_form_as("/api/enforcement", "", &admin).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("\"unjustified\":[["), "{}", page.body);
}

#[sqlx::test]
async fn a_lead_holds_a_stop_for_72_hours_in_all_and_only_an_admin_longer(pool: PgPool) {
    let (_fake, _exec, stop) = manual_ssm_stop_awaiting(&pool).await;
    let app = common::spawn_app(pool.clone()).await;
    // owner@example.com owns team strict: a lead of the project's team.
    let lead = app.session_for("owner@example.com", Role::Lead).await;
    let admin = app.session_for("cfo@example.com", Role::Admin).await;
    let form = |hours: &str| format!("id={stop}&hours={hours}&reason=launch%20week");
    let snooze_ends = || async {
        sqlx::query("update enforcement_actions set snoozed_until = now() - interval '1 second' where id = $1")
            .bind(stop)
            .execute(&pool)
            .await
            .expect("time passes");
        burnrate::enforcement::snooze::wake(&pool).await.expect("woken");
    };

    let first = app.post_form_as("/api/snooze_stop", &form("48"), &lead).await;
    assert_eq!(first.status, 200, "{}", first.body);
    snooze_ends().await;
    let second = app.post_form_as("/api/snooze_stop", &form("24"), &lead).await;
    assert_eq!(second.status, 200, "72 h in all: {}", second.body);
    snooze_ends().await;
    let renewed = app.post_form_as("/api/snooze_stop", &form("1"), &lead).await;
    assert_eq!(renewed.status, 403, "{}", renewed.body);
    assert!(renewed.body.contains("72 h already"), "{}", renewed.body);
    let by_admin = app.post_form_as("/api/snooze_stop", &form("1"), &admin).await;
    assert_eq!(by_admin.status, 200, "{}", by_admin.body);
}

#[sqlx::test]
async fn an_approval_judges_only_its_own_projects_actions_and_a_policy_only_its_teams(pool: PgPool) {
    let (_fake, _exec, stop) = manual_ssm_stop_awaiting(&pool).await;
    // The strict team's limit moves above gpu-burner's spend behind enforcement's back: only
    // a judgement of gpu-burner's actions would notice.
    sqlx::query("update enforcement_policies set spend_limit = 100000 where team_id is not null")
        .execute(&pool)
        .await
        .expect("raised quietly");
    let app = common::spawn_app(pool.clone()).await;
    let admin = app.session_for("cfo@example.com", Role::Admin).await;

    // Approving another project (orphan, under the org default) leaves gpu-burner's alone.
    let approve_orphan = "project=orphan&reason=backfill&cap=5000.00&expires=2027-01-31";
    let saved = app.post_form_as("/api/save_approval", approve_orphan, &admin).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(
        status(&pool, stop).await,
        "awaiting_approval",
        "not judged by orphan's approval"
    );

    // Saving the strict team's policy judges the strict team's projects: the stop is cancelled.
    let policy = "team=strict&limit=100000&period=monthly&mode=manual&notify=on&flag=on&stop=on\
                  &stop_type=RUN_SSM_DOCUMENTS&execution_role_arn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbudgets\
                  &instance_ids=i-0abc12345def67890&instance_region=us-east-1";
    let saved = app.post_form_as("/api/save_policy", policy, &admin).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(status(&pool, stop).await, "cancelled");
}
