//! Approval requests through `/api/v1`: a lead asks for the lead's own team's project, an
//! admin approves (the admin becomes the approver) or denies with a reason, each request is
//! decided once; and the emails an approval earns at 80 % of its cap and 7 days before it
//! ends, once each, through a real SMTP server.

use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{self, import_config, spawn_app, today};
use burnrate::auth::Role;
use burnrate::mail::SmtpSettings;
use burnrate::outbox::{AlertSender, RetryPolicy};

fn body(project: &str, cap: &str, days_ahead: u64) -> String {
    serde_json::json!({
        "project": project,
        "cap": cap,
        "until": (today() + chrono::Days::new(days_ahead)).to_string(),
        "reason": "fine-tune run for the Q1 launch",
    })
    .to_string()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("json")
}

#[sqlx::test]
async fn a_lead_requests_for_the_own_team_and_an_admin_approves_once(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let lead = token(&pool, "vision-lead@example.com", Role::Lead, None).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let admin = token(&pool, "finance@example.com", Role::Admin, None).await;
    let path = "/api/v1/approvals/requests";

    // Another team's project, or a viewer: refused, and nothing is recorded.
    let other = app
        .api("POST", path, Some(&lead), Some(&body("train", "2000", 30)))
        .await;
    assert_eq!(other.status, 403, "{}", other.body);
    let viewer_asks = app
        .api("POST", path, Some(&viewer), Some(&body("detector", "2000", 30)))
        .await;
    assert_eq!(viewer_asks.status, 403);
    let past = app
        .api(
            "POST",
            path,
            Some(&lead),
            Some(&body("detector", "2000", 0).replace(&today().to_string(), "2020-01-01")),
        )
        .await;
    assert_eq!(
        (past.status, json(&past.body)["field"].clone()),
        (400, "until".into()),
        "{}",
        past.body
    );
    let unknown = app
        .api(
            "POST",
            path,
            Some(&lead),
            Some(r#"{"project":"detector","cap":"1","until":"2099-01-01","reason":"x","approver":"me@example.com"}"#),
        )
        .await;
    assert_eq!(
        (unknown.status, json(&unknown.body)["field"].clone()),
        (400, "approver".into()),
        "{}",
        unknown.body
    );
    let none: i64 = sqlx::query_scalar("select count(*) from approval_requests")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(none, 0);

    let made = app
        .api("POST", path, Some(&lead), Some(&body("detector", "2000", 30)))
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let made = json(&made.body);
    assert_eq!(
        (made["status"].as_str(), made["team"].as_str()),
        (Some("pending"), Some("vision"))
    );
    assert_eq!(made["requested_by"], "vision-lead@example.com");
    let again = app
        .api("POST", path, Some(&lead), Some(&body("detector", "3000", 30)))
        .await;
    assert_eq!(again.status, 409, "one request per project waits: {}", again.body);

    let decision = format!("{path}/{}/decision", made["id"]);
    let approve = r#"{"decision":"approve","cap":"1500"}"#;
    assert_eq!(
        app.api("POST", &decision, Some(&lead), Some(approve)).await.status,
        403,
        "leads do not decide"
    );
    let decided = app.api("POST", &decision, Some(&admin), Some(approve)).await;
    assert_eq!(decided.status, 200, "{}", decided.body);
    let decided = json(&decided.body);
    assert_eq!(decided["status"], "approved");
    assert_eq!(decided["decided_by"], "finance@example.com");
    assert_eq!(decided["approved_cap"], "1500.00");
    assert_eq!(decided["approved_until"], (today() + chrono::Days::new(30)).to_string());
    let twice = app
        .api(
            "POST",
            &decision,
            Some(&admin),
            Some(r#"{"decision":"deny","note":"changed my mind"}"#),
        )
        .await;
    assert_eq!(twice.status, 409, "a request is decided once: {}", twice.body);
    assert_eq!(
        app.api("POST", &format!("{path}/999999/decision"), Some(&admin), Some(approve))
            .await
            .status,
        404
    );

    // The approval is in force, with the admin as approver, and its standing reads back.
    let approvals = json(&app.api("GET", "/api/v1/approvals", Some(&viewer), None).await.body);
    let detector = approvals
        .as_array()
        .expect("list")
        .iter()
        .find(|a| a["project"] == "detector")
        .cloned()
        .expect("approved");
    assert_eq!(
        (detector["approver"].as_str(), detector["cap"].as_str()),
        (Some("finance@example.com"), Some("1500.00"))
    );
    assert_eq!(detector["days_left"], 31);
    let audit: Vec<String> = sqlx::query_scalar("select action from audit_log where subject = 'detector' order by id")
        .fetch_all(&pool)
        .await
        .expect("audit");
    assert_eq!(audit, ["approval.request", "approval.add", "approval.request.approve"]);

    // A request decided after its last day is not approved as asked: that would replace the
    // current approval with an expired one. With a new last day it is.
    let late = json(
        &app.api("POST", path, Some(&lead), Some(&body("detector", "1800", 10)))
            .await
            .body,
    );
    sqlx::query("update approval_requests set until = $1 where id = $2")
        .bind(today() - chrono::Days::new(1))
        .bind(late["id"].as_i64().expect("id"))
        .execute(&pool)
        .await
        .expect("aged");
    let decision = format!("{path}/{}/decision", late["id"]);
    let stale = app.api("POST", &decision, Some(&admin), Some(approve)).await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    let still: String =
        sqlx::query_scalar("select cap::text from approvals where project = 'detector' and ended_at is null")
            .fetch_one(&pool)
            .await
            .expect("current");
    assert_eq!(still, "1500.00", "the current approval stands");
    let until = (today() + chrono::Days::new(5)).to_string();
    let renewed = app
        .api(
            "POST",
            &decision,
            Some(&admin),
            Some(&format!(r#"{{"decision":"approve","until":"{until}"}}"#)),
        )
        .await;
    assert_eq!(
        json(&renewed.body)["approved_until"],
        until.as_str(),
        "{}",
        renewed.body
    );

    // A denial needs its reason.
    let second = json(
        &app.api("POST", path, Some(&lead), Some(&body("detector", "5000", 60)))
            .await
            .body,
    );
    let decision = format!("{path}/{}/decision", second["id"]);
    let bare = app
        .api("POST", &decision, Some(&admin), Some(r#"{"decision":"deny"}"#))
        .await;
    assert_eq!((bare.status, json(&bare.body)["field"].clone()), (400, "note".into()));
    let denied = app
        .api(
            "POST",
            &decision,
            Some(&admin),
            Some(r#"{"decision":"deny","note":"over the Q1 plan"}"#),
        )
        .await;
    assert_eq!(json(&denied.body)["status"], "denied", "{}", denied.body);
    let listed = json(&app.api("GET", path, Some(&viewer), None).await.body);
    let statuses: Vec<&str> = listed
        .as_array()
        .expect("list")
        .iter()
        .map(|r| r["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["denied", "approved", "approved"], "newest first");
    let ml_only = token(&pool, "ml-lead@example.com", Role::Lead, Some("ml")).await;
    let listed = json(&app.api("GET", path, Some(&ml_only), None).await.body);
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(0),
        "a one-team token reads its team's requests only"
    );
}

#[sqlx::test]
async fn an_approval_warns_at_80_percent_of_its_cap_and_a_week_before_it_ends_once_each(pool: PgPool) {
    import_config(&pool, ORG).await;
    let until = today() + chrono::Days::new(6);
    import_config(
        &pool,
        &format!("approvals:\n  - project: detector\n    approver: cfo@example.com\n    reason: launch\n    cap: \"1000.00\"\n    expires: {until}\n  - project: train\n    approver: cfo@example.com\n    reason: research\n    cap: \"5000.00\"\n    expires: 2099-12-31\n"),
    )
    .await;
    // $790 of detector's $1,000 cap today: under 80 %, but its last day is 7 days away.
    let spend = |project: &'static str, amount: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query("delete from daily_project_costs where day = $1 and project = $2")
                .bind(today())
                .bind(project)
                .execute(&pool)
                .await
                .expect("cleared");
            sqlx::query(
                "insert into daily_project_costs (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized)
                 values ($1, $2, $3::numeric, $3::numeric, 0, 0, 0, 0)",
            )
            .bind(today())
            .bind(project)
            .bind(amount)
            .execute(&pool)
            .await
            .expect("spend");
        }
    };
    spend("detector", "790").await;
    spend("train", "100").await;
    let queue =
        || burnrate::enforcement::approval_notices::queue_due(&pool, today(), Some("https://burnrate.example.com"));
    assert_eq!(queue().await.expect("queued"), 1, "the week's warning only");
    assert_eq!(queue().await.expect("queued"), 0, "once");
    spend("detector", "800").await;
    assert_eq!(queue().await.expect("queued"), 1, "80 % reached: its own warning");
    assert_eq!(queue().await.expect("queued"), 0, "once");
    // A new cap is a new version of the approval: 800 of 950 is past 80 % of it too, and its
    // last week is still this one.
    import_config(
        &pool,
        &format!("approvals:\n  - project: detector\n    approver: cfo@example.com\n    reason: launch\n    cap: \"950.00\"\n    expires: {until}\n  - project: train\n    approver: cfo@example.com\n    reason: research\n    cap: \"5000.00\"\n    expires: 2099-12-31\n"),
    )
    .await;
    assert_eq!(queue().await.expect("queued"), 2, "the new version warns of both");
    sqlx::query("delete from alert_deliveries where approval_notice_id in (select n.id from approval_notices n join approvals a on a.id = n.approval_id where a.ended_at is null)")
        .execute(&pool)
        .await
        .expect("only the first version's emails are sent below");

    let smtp = common::smtp::start().await;
    let settings =
        SmtpSettings::parse(&smtp.url(), "burnrate@example.com", std::time::Duration::from_secs(10)).expect("smtp");
    let sender = AlertSender::new(Some(&settings), RetryPolicy::default());
    let report = sender.deliver_now(&pool).await.expect("delivered");
    assert_eq!(
        (report.sent, report.failed, report.queued),
        (4, 0, 0),
        "two emails, each to the owner and the approver"
    );
    let mut sent: Vec<(String, String)> = smtp
        .messages()
        .into_iter()
        .map(|m| (m.subject, m.rcpt_to.join(",")))
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            (
                "burnrate: detector has spent 80% of its approved cap",
                "cfo@example.com"
            ),
            (
                "burnrate: detector has spent 80% of its approved cap",
                "vision-lead@example.com"
            ),
            (
                &*format!("burnrate: the approval of detector ends on {until}"),
                "cfo@example.com"
            ),
            (
                &*format!("burnrate: the approval of detector ends on {until}"),
                "vision-lead@example.com"
            ),
        ]
        .map(|(s, r)| (s.to_string(), r.to_string()))
    );
    assert!(
        smtp.messages()
            .iter()
            .all(|m| m.body.contains("https://burnrate.example.com/approvals")),
        "each links to the Approvals page"
    );
}

#[sqlx::test]
async fn approval_warnings_skip_a_disabled_sign_in_account(pool: PgPool) {
    import_config(&pool, ORG).await;
    let until = today() + chrono::Days::new(6);
    import_config(
        &pool,
        &format!("approvals:\n  - project: detector\n    approver: cfo@example.com\n    reason: launch\n    cap: \"1000.00\"\n    expires: {until}\n"),
    )
    .await;
    // The approver left: the account is disabled, its email kept with its history.
    crate::common::create_account(&pool, "CFO@example.com", burnrate::auth::Role::Admin).await;
    sqlx::query("update accounts set disabled_at = now() where lower(email) = 'cfo@example.com'")
        .execute(&pool)
        .await
        .expect("disabled");
    let queued = burnrate::enforcement::approval_notices::queue_due(&pool, today(), None)
        .await
        .expect("queued");
    assert_eq!(queued, 1, "the week's warning");
    let recipients: Vec<String> = sqlx::query_scalar("select recipient from alert_deliveries order by recipient")
        .fetch_all(&pool)
        .await
        .expect("deliveries");
    assert_eq!(recipients, ["vision-lead@example.com"]);
}

#[sqlx::test]
async fn approving_an_old_request_over_a_newer_larger_approval_is_refused_unless_replaced(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let lead = token(&pool, "vision-lead@example.com", Role::Lead, None).await;
    let admin = token(&pool, "finance@example.com", Role::Admin, None).await;
    let path = "/api/v1/approvals/requests";
    let made = json(
        &app.api("POST", path, Some(&lead), Some(&body("detector", "1000", 30)))
            .await
            .body,
    );
    // Meanwhile the CFO granted more, for longer.
    sqlx::query("update approval_requests set requested_at = now() - interval '1 hour'")
        .execute(&pool)
        .await
        .expect("asked an hour ago");
    import_config(
        &pool,
        "approvals:\n  - project: detector\n    approver: cfo@example.com\n    reason: launch\n    cap: \"5000.00\"\n    expires: 2099-12-31\n",
    )
    .await;
    let decision = format!("{path}/{}/decision", made["id"]);

    let refused = app
        .api("POST", &decision, Some(&admin), Some(r#"{"decision":"approve"}"#))
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    let detail = json(&refused.body)["detail"].as_str().expect("detail").to_string();
    for both in ["cfo@example.com", "$5,000.00", "2099-12-31", "$1,000.00"] {
        assert!(detail.contains(both), "{both}: {detail}");
    }
    let cap: rust_decimal::Decimal =
        sqlx::query_scalar("select cap from approvals where project = 'detector' and ended_at is null")
            .fetch_one(&pool)
            .await
            .expect("approval");
    assert_eq!(cap.to_string(), "5000.00", "the newer approval is kept");

    // Approving with the newer approval's own terms or more is no conflict; replacing it
    // explicitly is the admin's choice.
    let replaced = app
        .api(
            "POST",
            &decision,
            Some(&admin),
            Some(r#"{"decision":"approve","replace_newer":true}"#),
        )
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let cap: rust_decimal::Decimal =
        sqlx::query_scalar("select cap from approvals where project = 'detector' and ended_at is null")
            .fetch_one(&pool)
            .await
            .expect("approval");
    assert_eq!(cap.to_string(), "1000.00");
}
