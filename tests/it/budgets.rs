//! Budgets end to end on real Postgres: figures to the cent, alert emails through a real SMTP
//! server exactly once, permissions over HTTP, budgets as code, and AWS Budgets sync through
//! the real SDK against moto.

use crate::common;

use crate::common::budgets::spec;
use crate::common::{day, spawn_app};
use burnrate::audit_log::Actor;
use burnrate::auth::Role;
use burnrate::budgets::{BudgetScope, BudgetSpec, EvaluatedAndSent, evaluate, evaluate_and_send, store};
use burnrate::mail::SmtpSettings;
use burnrate::outbox::{AlertSender, RetryPolicy};
use rust_decimal::Decimal;
use sqlx::PgPool;
use std::time::Duration;

const XSS: &str = "<img src=x onerror=alert(1)>";

use crate::common::scenario_today as today;

/// Two teams and three projects with flat daily spend from November 1st to 21st (today, the
/// 22nd, has no figures yet):
/// train 100.00 (amortized 110.00), the XSS project 10.50, and platform's `other` 1000.00.
async fn seed(pool: &PgPool) {
    for statement in [
        "insert into teams (name) values ('ml-research'), ('platform')",
        "insert into team_owners (team_id, email) select id, 'owner@example.com' from teams where name = 'ml-research'",
        "insert into team_owners (team_id, email) select id, 'plat@example.com' from teams where name = 'platform'",
    ] {
        sqlx::query(statement).execute(pool).await.expect("seed");
    }
    for (project, team, unblended, amortized) in [
        ("train", "ml-research", "100.00", "110.00"),
        (XSS, "ml-research", "10.50", "10.50"),
        ("other", "platform", "1000.00", "1000.00"),
    ] {
        let november = (day(2026, 11, 1), day(2026, 11, 21));
        common::add_project_costs(pool, project, Some(team), november, unblended, amortized).await;
    }
}

async fn save(pool: &PgPool, id: Option<i64>, spec: &BudgetSpec) -> i64 {
    let mut conn = pool.acquire().await.expect("connection");
    store::save(&mut conn, &Actor::system("test"), id, spec)
        .await
        .expect("saved")
}

/// The team budget the alert tests use: 50 % actual and 80 % forecasted are crossed.
async fn team_budget(pool: &PgPool) -> i64 {
    let spec = spec(
        "ml-research monthly",
        ("team", "ml-research"),
        "4000.00",
        "50\n80\n100\n80 forecasted\n100 forecasted",
        "Finance@Example.com",
    );
    save(pool, None, &spec).await
}

fn smtp_settings(url: &str) -> SmtpSettings {
    SmtpSettings::parse(url, "burnrate@example.com", std::time::Duration::from_secs(10)).expect("smtp settings")
}

#[sqlx::test]
async fn status_figures_are_exact_for_every_scope_and_metric(pool: PgPool) {
    seed(&pool).await;
    let id = team_budget(&pool).await;
    let mut conn = pool.acquire().await.expect("connection");
    let budget = store::get(&mut conn, id).await.expect("read").expect("exists");
    let evaluate::Standing { status, daily } = evaluate::status(&mut conn, &budget, today()).await.expect("status");
    assert_eq!(
        (status.period.from, status.period.to),
        (day(2026, 11, 1), day(2026, 12, 1))
    );
    // 21 days of 110.50.
    assert_eq!(status.spend, Decimal::new(232050, 2));
    // 21 settled days (2,320.50) plus the 7-day run-rate 110.50 for the 9 days from today.
    assert_eq!(status.forecast, Decimal::new(331500, 2));
    assert_eq!(status.percent_used(), "58.0%");
    let crossed: Vec<String> = status.crossed.iter().map(|t| t.label()).collect();
    assert_eq!(crossed, ["50%", "80% forecasted"]);
    assert_eq!(status.level(), "warn");
    assert_eq!(daily.len(), 21);

    let mut amortized = budget.clone();
    amortized.spec.metric = burnrate::period::Metric::Amortized;
    let status = evaluate::status(&mut conn, &amortized, today())
        .await
        .expect("status")
        .status;
    assert_eq!(status.spend, Decimal::new(253050, 2));

    let mut org = budget.clone();
    org.spec.scope = BudgetScope::Org;
    let status = evaluate::status(&mut conn, &org, today()).await.expect("status").status;
    assert_eq!(status.spend, Decimal::new(2332050, 2));
    assert_eq!(status.level(), "over");

    let mut project = budget.clone();
    project.spec.scope = BudgetScope::Project(XSS.into());
    project.spec.period = burnrate::period::BudgetPeriod::Quarterly;
    let status = evaluate::status(&mut conn, &project, today())
        .await
        .expect("status")
        .status;
    assert_eq!(
        (status.period.from, status.period.to),
        (day(2026, 10, 1), day(2027, 1, 1))
    );
    assert_eq!(status.spend, Decimal::new(22050, 2));
}

#[sqlx::test]
async fn alerts_are_emailed_exactly_once_across_repeats_concurrent_evaluators_and_a_restart(pool: PgPool) {
    seed(&pool).await;
    let id = team_budget(&pool).await;
    let smtp = common::smtp::start().await;
    let settings = smtp_settings(&smtp.url());
    let url = Some("https://costs.example.com");
    let first = AlertSender::new(Some(&settings), RetryPolicy::default());
    let second = AlertSender::new(Some(&settings), RetryPolicy::default());
    let (a, b) = tokio::join!(
        evaluate_and_send(&pool, &first, url, today(), true),
        evaluate_and_send(&pool, &second, url, today(), true)
    );
    let (a, b) = (a.expect("first evaluator"), b.expect("second evaluator"));
    assert_eq!(
        a.evaluation.queued + b.evaluation.queued,
        2,
        "each crossed threshold is queued once"
    );
    assert_eq!(
        a.delivery.sent + b.delivery.sent,
        4,
        "each alert is sent once to each of its two recipients"
    );

    let again = evaluate_and_send(&pool, &first, url, today(), true)
        .await
        .expect("repeat");
    assert_eq!((again.evaluation.queued, again.delivery.sent), (0, 0));

    // A restart: a new pool and a new sender against the same database.
    let restarted = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with((*pool.connect_options()).clone())
        .await
        .expect("new pool");
    let sender = AlertSender::new(Some(&settings), RetryPolicy::default());
    let after = evaluate_and_send(&restarted, &sender, url, today(), true)
        .await
        .expect("after restart");
    assert_eq!((after.evaluation.queued, after.delivery.sent), (0, 0));

    let messages = smtp.messages();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    let mut sent: Vec<(&str, String)> = messages
        .iter()
        .map(|m| (m.subject.as_str(), m.rcpt_to.join(",")))
        .collect();
    sent.sort();
    let actual = "[burnrate] ml-research monthly: actual spend reached 50% of its $4,000.00 budget";
    let forecast = "[burnrate] ml-research monthly: forecast spend reached 80% of its $4,000.00 budget";
    assert_eq!(
        sent,
        [
            (actual, "finance@example.com".to_string()),
            (actual, "owner@example.com".to_string()),
            (forecast, "finance@example.com".to_string()),
            (forecast, "owner@example.com".to_string()),
        ],
        "one email per alert and recipient"
    );
    for message in &messages {
        assert_eq!(message.mail_from, "burnrate@example.com");
        assert!(
            message.message_id.starts_with("<burnrate-alert-"),
            "{}",
            message.message_id
        );
        for figure in [
            "Spend so far: $2,320.50",
            "Used: 58.0%",
            "Forecast to period end: $3,315.00",
            "Scope: Team ml-research",
            "monthly 2026-11-01 to 2026-11-30",
            "train: $2,100.00",
            "<img src=x onerror=alert(1)>: $220.50",
            &format!("https://costs.example.com/budgets/{id}"),
            "&lt;img src=x onerror=alert(1)&gt;",
        ] {
            assert!(
                message.body.contains(figure),
                "{figure:?} missing from:\n{}",
                message.body
            );
        }
    }
    let rows: Vec<(String, String)> =
        sqlx::query_as("select status, coalesce(last_reply, '') from budget_alerts order by id")
            .fetch_all(&pool)
            .await
            .expect("alerts");
    assert_eq!(rows.len(), 2);
    for (status, reply) in rows {
        assert_eq!(status, "sent");
        assert!(reply.starts_with("250"), "{reply}");
    }
}

/// Seed 003's ladder: 50 % to the team, 80 % also to the director, 100 % also to finance.
#[sqlx::test]
async fn each_threshold_reaches_its_own_step_of_the_escalation_ladder_through_smtp(pool: PgPool) {
    seed(&pool).await;
    // ml-research has spent $2,320.50 by the 21st: 116 % of $2,000, so 50, 80 and 100 are
    // crossed and 150 is not.
    let ladder = spec(
        "ml-research ladder",
        ("team", "ml-research"),
        "2000.00",
        "50\n80 director@example.com\n100 finance@example.com, cfo@example.com\n150 finance@example.com",
        "",
    );
    save(&pool, None, &ladder).await;
    let smtp = common::smtp::start().await;
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), RetryPolicy::default());
    let outcome = evaluate_and_send(&pool, &sender, None, today(), true)
        .await
        .expect("evaluated");
    assert_eq!((outcome.evaluation.queued, outcome.delivery.sent), (3, 6));
    let mut sent: Vec<(String, String)> = smtp
        .messages()
        .into_iter()
        .map(|m| {
            let percent = m
                .subject
                .split("reached ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or_default()
                .to_string();
            (percent, m.rcpt_to.join(","))
        })
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("100%", "cfo@example.com"),
            ("100%", "finance@example.com"),
            ("100%", "owner@example.com"),
            ("50%", "owner@example.com"),
            ("80%", "director@example.com"),
            ("80%", "owner@example.com"),
        ]
        .map(|(p, r)| (p.to_string(), r.to_string())),
        "the owners hear of every threshold; the director of 80 % and finance of 100 % only"
    );
    // The alert history records who each alert went to.
    let recipients: Vec<(Decimal, Vec<String>)> =
        sqlx::query_as("select percent, recipients from budget_alerts order by percent")
            .fetch_all(&pool)
            .await
            .expect("alerts");
    assert_eq!(
        recipients,
        [
            (Decimal::from(50), vec!["owner@example.com".to_string()]),
            (
                Decimal::from(80),
                vec!["director@example.com".to_string(), "owner@example.com".to_string()]
            ),
            (
                Decimal::from(100),
                vec![
                    "cfo@example.com".to_string(),
                    "finance@example.com".to_string(),
                    "owner@example.com".to_string()
                ]
            ),
        ]
    );
    // The ladder is stored with the budget and read back as saved.
    let mut conn = pool.acquire().await.expect("connection");
    let stored = store::list(&mut conn).await.expect("budgets");
    assert_eq!(stored[0].spec.escalation, ladder.escalation);
}

#[sqlx::test]
async fn alerts_stay_queued_while_smtp_is_down_and_go_out_once_when_it_returns(pool: PgPool) {
    seed(&pool).await;
    team_budget(&pool).await;
    let mut smtp = common::smtp::reserve();
    let policy = RetryPolicy {
        first_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
    };
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), policy);
    let EvaluatedAndSent { evaluation, delivery } = evaluate_and_send(&pool, &sender, None, today(), false)
        .await
        .expect("evaluate");
    assert_eq!((evaluation.queued, delivery.sent, delivery.queued), (2, 0, 4));
    let waiting: Vec<(String, i32, String)> =
        sqlx::query_as("select status, attempts, coalesce(last_reply, '') from budget_alerts order by id")
            .fetch_all(&pool)
            .await
            .expect("alerts");
    for (status, attempts, reply) in &waiting {
        assert_eq!((status.as_str(), *attempts), ("queued", 1));
        assert!(!reply.is_empty(), "the connection error is recorded");
    }

    smtp.start().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let delivery = sender.deliver_due(&pool).await.expect("deliver");
    assert_eq!((delivery.sent, delivery.queued), (4, 0));
    let delivery = sender.deliver_due(&pool).await.expect("deliver again");
    assert_eq!(delivery.sent, 0);
    assert_eq!(smtp.messages().len(), 4);

    // Without SMTP configured, alerts wait with a reason instead of failing.
    sqlx::query("delete from budget_alerts")
        .execute(&pool)
        .await
        .expect("reset");
    let unconfigured = AlertSender::new(None, policy);
    let EvaluatedAndSent { delivery, .. } = evaluate_and_send(&pool, &unconfigured, None, today(), true)
        .await
        .expect("evaluate");
    assert_eq!((delivery.sent, delivery.queued), (0, 4));
    let reply: String = sqlx::query_scalar("select last_reply from budget_alerts limit 1")
        .fetch_one(&pool)
        .await
        .expect("reply");
    assert!(reply.contains("SMTP_URL is not set"), "{reply}");
}

#[sqlx::test]
async fn a_password_is_never_sent_without_starttls(pool: PgPool) {
    seed(&pool).await;
    team_budget(&pool).await;
    // aiosmtpd here offers no STARTTLS, so a URL with credentials must refuse to log in.
    let smtp = common::smtp::start().await;
    let url = format!("smtp://alerts:s3cret@127.0.0.1:{}", smtp.port);
    let sender = AlertSender::new(Some(&smtp_settings(&url)), RetryPolicy::default());
    let EvaluatedAndSent { delivery, .. } = evaluate_and_send(&pool, &sender, None, today(), true)
        .await
        .expect("evaluate");
    assert_eq!((delivery.sent, delivery.queued), (0, 4));
    assert!(smtp.messages().is_empty());
    let replies: Vec<String> = sqlx::query_scalar("select last_reply from budget_alerts")
        .fetch_all(&pool)
        .await
        .expect("replies");
    for reply in replies {
        assert!(!reply.contains("s3cret"), "{reply}");
        assert!(!reply.is_empty());
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k}={}", common::encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn budget_form<'a>(name: &'a str, kind: &'a str, scope: &'a str, amount: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("name", name),
        ("scope_kind", kind),
        ("scope_name", scope),
        ("period", "monthly"),
        ("amount", amount),
        ("metric", "unblended"),
        ("thresholds", "50\n80\n100"),
        ("recipients", ""),
    ]
}

async fn budget_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from budgets")
        .fetch_one(pool)
        .await
        .expect("count")
}

#[sqlx::test]
async fn leads_change_only_their_own_teams_budgets_and_viewers_none(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let lead = app.session_for("owner@example.com", Role::Lead).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;

    let own = form(&budget_form("ml", "team", "ml-research", "4000"));
    let created = app.post_form_as("/api/save_budget", &own, &lead).await;
    assert!(created.status < 400, "{} {}", created.status, created.body);
    let own_project = form(&budget_form("train budget", "project", "train", "100"));
    assert!(app.post_form_as("/api/save_budget", &own_project, &lead).await.status < 400);
    assert_eq!(budget_count(&pool).await, 2);

    for (fields, who) in [
        (budget_form("org", "org", "", "1000"), &lead),
        (budget_form("platform", "team", "platform", "1000"), &lead),
        (budget_form("other", "project", "other", "1000"), &lead),
        (budget_form("viewer's", "team", "ml-research", "1000"), &viewer),
    ] {
        let response = app.post_form_as("/api/save_budget", &form(&fields), who).await;
        assert_eq!(response.status, 403, "{fields:?}: {}", response.body);
    }
    let anonymous = app
        .post_form("/api/save_budget", &form(&budget_form("x", "org", "", "1")))
        .await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(budget_count(&pool).await, 2);
    // Pushing budgets to AWS and retrying alerts are for admins only.
    assert_eq!(app.post_form_as("/api/sync_budgets", "", &lead).await.status, 403);
    assert_eq!(
        app.post_form_as("/api/retry_alert", "alert_id=1", &viewer).await.status,
        403
    );

    // An org budget made by an admin cannot be edited or deleted by the lead, nor can the
    // lead move an own budget to another team.
    let org = save(&pool, None, &spec("org", ("org", ""), "100000", "100", "")).await;
    let org_id = org.to_string();
    let mut edit = budget_form("org", "team", "ml-research", "5");
    edit.push(("id", &org_id));
    assert_eq!(
        app.post_form_as("/api/save_budget", &form(&edit), &lead).await.status,
        403
    );
    let delete = format!("id={org}");
    assert_eq!(app.post_form_as("/api/delete_budget", &delete, &lead).await.status, 403);
    let ml: i64 = sqlx::query_scalar("select id from budgets where name = 'ml'")
        .fetch_one(&pool)
        .await
        .expect("ml");
    let ml_id = ml.to_string();
    let mut moved = budget_form("ml", "team", "platform", "4000");
    moved.push(("id", &ml_id));
    assert_eq!(
        app.post_form_as("/api/save_budget", &form(&moved), &lead).await.status,
        403
    );

    // Reading is open to every signed-in role; deleting an own budget works.
    let listed = app.post_form_as("/api/budgets", "", &viewer).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("\"ml\""), "{}", listed.body);
    assert!(
        app.post_form_as("/api/delete_budget", &format!("id={ml}"), &lead)
            .await
            .status
            < 400
    );
    assert_eq!(budget_count(&pool).await, 2);
    let audited: i64 = sqlx::query_scalar("select count(*) from audit_log where action like 'budget.%'")
        .fetch_one(&pool)
        .await
        .expect("audit");
    assert_eq!(
        audited, 4,
        "two creates by the lead, the admin's org budget, one delete"
    );
}

#[sqlx::test]
async fn an_invalid_form_reports_every_field_and_saves_nothing(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let body = form(&[
        ("name", ""),
        ("scope_kind", "team"),
        ("scope_name", "no-such-team"),
        ("period", "weekly"),
        ("amount", "10.001"),
        ("metric", "unblended"),
        ("thresholds", "0\n50\n50"),
        ("recipients", "not-an-email"),
    ]);
    let response = app.post_form_as("/api/save_budget", &body, &admin).await;
    assert_eq!(response.status, 400, "{}", response.body);
    for field in ["name", "period", "amount", "thresholds", "recipients"] {
        assert!(
            response.body.contains(&format!("\"field\":\"{field}\"")),
            "{field}: {}",
            response.body
        );
    }
    // Valid fields but a scope that does not exist.
    let unknown = form(&budget_form("x", "team", "no-such-team", "10"));
    let response = app.post_form_as("/api/save_budget", &unknown, &admin).await;
    assert_eq!(response.status, 400);
    assert!(response.body.contains("there is no team named"), "{}", response.body);
    let duplicate = form(&budget_form("Dup", "org", "", "10"));
    assert!(app.post_form_as("/api/save_budget", &duplicate, &admin).await.status < 400);
    let response = app
        .post_form_as("/api/save_budget", &form(&budget_form("dup", "org", "", "10")), &admin)
        .await;
    assert_eq!(response.status, 400);
    assert!(response.body.contains("already named"), "{}", response.body);
    assert_eq!(budget_count(&pool).await, 1);
}

#[sqlx::test]
async fn budgets_as_code_apply_whole_or_not_at_all(pool: PgPool) {
    use burnrate::as_code::{ApplyError, apply, export, parse};
    seed(&pool).await;
    let actor = Actor::system("test");
    let file = parse(
        "teams:
  - name: ml-research
    owners: [owner@example.com]
    projects: [train, \"<img src=x onerror=alert(1)>\"]
  - name: platform
    owners: [plat@example.com]
    projects: [other]
budgets:
  - name: ml-research monthly
    scope: {team: ml-research}
    period: monthly
    amount: \"25000.00\"
    metric: unblended
    thresholds: [{percent: 50}, {percent: 80}, {percent: 100}, {percent: 100, type: forecasted}]
    recipients: [finance@example.com]
  - name: org annual
    scope: {org: true}
    period: annual
    amount: \"1000000\"
",
    )
    .expect("valid file");
    let changes = apply(&pool, &actor, &file, false).await.expect("applied");
    assert!(
        changes.contains(&"create budget \"ml-research monthly\"".to_string()),
        "{changes:?}"
    );
    assert_eq!(budget_count(&pool).await, 2);
    assert!(
        apply(&pool, &actor, &file, false).await.expect("again").is_empty(),
        "a second import changes nothing"
    );

    let exported = export(&pool).await.expect("export");
    let again = parse(&exported).expect("round trip");
    // The export adds each budget's key (its name here); the rest round-trips unchanged.
    let specs = |f: &burnrate::as_code::ConfigFile| {
        f.budgets.as_ref().map(|b| {
            b.iter()
                .map(|b| BudgetSpec {
                    key: None,
                    ..b.spec.clone()
                })
                .collect::<Vec<_>>()
        })
    };
    assert!(
        exported.contains("  - key: \"ml-research monthly\"\n    name: \"ml-research monthly\""),
        "{exported}"
    );
    assert_eq!((&again.teams, specs(&again)), (&file.teams, specs(&file)));

    // A budget on an unknown team: the error names the line and nothing changes (the team
    // section in the same file is rolled back too).
    let bad = parse(
        "teams:
  - name: renamed
    projects: [train]
budgets:
  - name: ghost
    scope: {team: ghost-team}
    period: monthly
    amount: \"10\"
",
    )
    .expect("valid on its own");
    match apply(&pool, &actor, &bad, false).await {
        Err(ApplyError::Invalid(errors)) => {
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].line, 5);
            assert!(
                errors[0].message.contains("there is no team named \"ghost-team\""),
                "{errors:?}"
            );
        }
        other => panic!("expected an invalid file, got {other:?}"),
    }
    // Removing a team its budget still names is refused too.
    let orphaning = parse("teams:\n  - name: platform\n    projects: [other]\n").expect("valid");
    assert!(matches!(
        apply(&pool, &actor, &orphaning, false).await,
        Err(ApplyError::Invalid(_))
    ));
    assert!(matches!(
        apply(&pool, &actor, &orphaning, true).await,
        Err(ApplyError::Invalid(_))
    ));
    assert_eq!(export(&pool).await.expect("export"), exported, "nothing changed");

    // The admin page's team deletion says which budgets hold the team.
    let refused = burnrate::teams::edit::delete(&pool, &actor, "ml-research")
        .await
        .expect_err("refused");
    assert!(refused.to_string().contains("ml-research monthly"), "{refused}");
}

async fn budgets_client(endpoint: &str) -> burnrate::aws::budgets::AwsBudgets {
    let config = common::aws_config_at(endpoint, "test-key").await;
    burnrate::aws::budgets::AwsBudgets::new(&config, "123456789012".into())
}

/// The AWS budget that burnrate budget `id` became.
async fn describe(aws: &burnrate::aws::budgets::AwsBudgets, id: i64) -> aws_sdk_budgets::types::Budget {
    aws.client()
        .describe_budget()
        .account_id("123456789012")
        .budget_name(format!("burnrate-{id}"))
        .send()
        .await
        .expect("described")
        .budget()
        .cloned()
        .expect("budget")
}

#[sqlx::test]
async fn aws_budgets_sync_is_idempotent_and_touches_only_burnrate_budgets(pool: PgPool) {
    use aws_sdk_budgets::types::{Budget, BudgetType, Spend, TimeUnit};
    use burnrate::budgets::aws_sync::sync;
    seed(&pool).await;
    let moto = common::moto::start().await;
    let aws = budgets_client(&moto.endpoint).await;
    let account = "123456789012";
    aws.client()
        .create_budget()
        .account_id(account)
        .budget(
            Budget::builder()
                .budget_name("finance-manual")
                .budget_type(BudgetType::Cost)
                .time_unit(TimeUnit::Monthly)
                .budget_limit(Spend::builder().amount("5").unit("USD").build().expect("spend"))
                .build()
                .expect("budget"),
        )
        .send()
        .await
        .expect("a budget made outside burnrate");
    let team = team_budget(&pool).await;
    let org = save(
        &pool,
        None,
        &spec("org", ("org", ""), "50000", "100", "cfo@example.com"),
    )
    .await;

    let report = sync(&pool, &aws, "project").await.expect("first sync");
    assert_eq!(report.created, [format!("burnrate-{team}"), format!("burnrate-{org}")]);
    let budget = describe(&aws, team).await;
    assert_eq!(budget.budget_limit().map(|l| l.amount()), Some("4000.00"));
    assert_eq!(budget.time_unit(), &TimeUnit::Monthly);
    // FilterExpression is Cost Explorer's Expression: the tag key, and plain tag values
    // (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_TagValues.html),
    // not the deprecated `user:project$train` strings, which match no spend.
    let tags = budget.filter_expression().and_then(|f| f.tags()).expect("tag filter");
    assert_eq!(tags.key(), Some("project"));
    let mut values = tags.values().to_vec();
    values.sort();
    assert_eq!(values, [XSS.to_string(), "train".to_string()]);
    assert_eq!(tags.match_options(), [aws_sdk_budgets::types::MatchOption::Equals]);
    let notifications = aws
        .client()
        .describe_notifications_for_budget()
        .account_id(account)
        .budget_name(format!("burnrate-{team}"))
        .send()
        .await
        .expect("notifications");
    assert_eq!(notifications.notifications().len(), 5);

    let second = sync(&pool, &aws, "project").await.expect("second sync");
    assert_eq!(
        (second.created.len(), second.replaced.len(), second.deleted.len()),
        (0, 0, 0)
    );
    assert_eq!(second.unchanged.len(), 2);

    let mut edited = spec(
        "ml-research monthly",
        ("team", "ml-research"),
        "4500",
        "50\n100 cfo@example.com",
        "finance@example.com",
    );
    edited.recipients.push("cto@example.com".into());
    save(&pool, Some(team), &edited).await;
    let mut conn = pool.acquire().await.expect("connection");
    store::delete(&mut conn, &Actor::system("test"), org)
        .await
        .expect("deleted");
    drop(conn);
    let third = sync(&pool, &aws, "project").await.expect("third sync");
    assert_eq!(third.replaced, [format!("burnrate-{team}")]);
    assert_eq!(third.deleted, [format!("burnrate-{org}")]);

    let names: Vec<String> = burnrate::budgets::aws_sync::summaries(&aws)
        .await
        .expect("listed")
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, [format!("burnrate-{team}"), "finance-manual".to_string()]);
    let limit = describe(&aws, team)
        .await
        .budget_limit()
        .map(|l| l.amount().to_string());
    assert_eq!(limit.as_deref(), Some("4500.00"));
}

#[sqlx::test]
async fn cost_pages_show_each_budget_in_its_scope(pool: PgPool) {
    use burnrate::dashboard::model::Scope;
    use burnrate::dashboard::reads::breakdown;
    use burnrate::period::{Metric, Period};
    seed(&pool).await;
    let team = team_budget(&pool).await;
    let org = save(&pool, None, &spec("org", ("org", ""), "30000", "100", "")).await;
    let overview =
        burnrate::dashboard::reads::overview::overview(&pool, Period::MonthToDate, Metric::Unblended, today(), None)
            .await
            .expect("overview");
    assert_eq!(
        overview
            .budgets
            .iter()
            .map(|b| (b.id, b.used.as_str()))
            .collect::<Vec<_>>(),
        [(org, "77.7%")]
    );
    assert!(
        overview.burn_svg.0.contains("Budget"),
        "the burn chart draws the org budget line"
    );
    let teams = breakdown::teams(&pool, Period::MonthToDate, Metric::Unblended, today())
        .await
        .expect("teams");
    assert_eq!(
        teams.budgets.iter().map(|b| (b.id, b.spend)).collect::<Vec<_>>(),
        [(team, Decimal::new(232050, 2))]
    );
    for (team, budgets) in [("ml-research", 1), ("platform", 0)] {
        let scope = Scope::Team(team.into());
        let view = breakdown::scope(&pool, scope, Period::MonthToDate, Metric::Unblended, today())
            .await
            .expect("team view");
        assert_eq!(view.budgets.len(), budgets, "{team}");
    }
}

/// Alerts of budget `id`: (period start, percent, kind, status), oldest first.
async fn alert_rows(pool: &PgPool, id: i64) -> Vec<(chrono::NaiveDate, Decimal, String, String)> {
    sqlx::query_as("select period_start, percent, kind, status from budget_alerts where budget_id = $1 order by id")
        .bind(id)
        .fetch_all(pool)
        .await
        .expect("alerts")
}

#[sqlx::test]
async fn a_threshold_crossed_by_late_figures_for_last_month_is_alerted_once_for_that_month(pool: PgPool) {
    for statement in [
        "insert into teams (name) values ('ml-research')",
        "insert into team_owners (team_id, email) select id, 'owner@example.com' from teams",
    ] {
        sqlx::query(statement).execute(&pool).await.expect("team");
    }
    // October: USD 100 a day, 3,100 in all; a budget of 4,000 is not reached.
    common::add_project_costs(
        &pool,
        "train",
        Some("ml-research"),
        (day(2026, 10, 1), day(2026, 10, 31)),
        "100",
        "100",
    )
    .await;
    let id = save(
        &pool,
        None,
        &spec("monthly", ("team", "ml-research"), "4000", "100", ""),
    )
    .await;
    // A second budget created on 2 November: October's late figures are none of its business.
    let newcomer = save(&pool, None, &spec("newcomer", ("team", "ml-research"), "10", "100", "")).await;
    sqlx::query(
        "update budgets set created_at = case when id = $1 then timestamptz '2026-09-15 00:00Z'
                                              else timestamptz '2026-11-02 09:00Z' end",
    )
    .bind(id)
    .execute(&pool)
    .await
    .expect("creation dates");
    let smtp = common::smtp::start().await;
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), RetryPolicy::default());
    let on = |y, m, d| day(y, m, d);
    let first = evaluate_and_send(&pool, &sender, None, on(2026, 11, 1), true)
        .await
        .expect("1 Nov");
    assert_eq!(first.evaluation.queued, 0);
    assert!(first.evaluation.settling.is_empty(), "October is settled on 1 November");

    // On 2 November AWS restates 29–31 October upwards (still Estimated): October reaches 4,300.
    sqlx::query(
        "update daily_project_costs set unblended = 500, estimated = true
         where day between '2026-10-29' and '2026-10-31'",
    )
    .execute(&pool)
    .await
    .expect("late figures");
    common::reallocate(&pool).await;
    common::add_project_costs(&pool, "", None, (day(2026, 11, 1), day(2026, 11, 1)), "1", "1").await;
    let late = evaluate_and_send(&pool, &sender, None, on(2026, 11, 2), true)
        .await
        .expect("2 Nov");
    assert_eq!(
        late.evaluation.queued, 1,
        "October's 100 % is alerted after October ended"
    );
    assert_eq!(
        late.evaluation.settling.len(),
        1,
        "only the budget that existed in October"
    );
    assert_eq!(late.evaluation.settling[0].budget.id, id);
    assert!(
        alert_rows(&pool, newcomer).await.is_empty(),
        "nothing for a period before it existed"
    );
    assert_eq!(late.evaluation.settling[0].spend, Decimal::from(4300));
    assert_eq!(
        alert_rows(&pool, id).await,
        [(
            day(2026, 10, 1),
            Decimal::ONE_HUNDRED,
            "actual".to_string(),
            "sent".to_string()
        )]
    );
    let again = evaluate_and_send(&pool, &sender, None, on(2026, 11, 3), true)
        .await
        .expect("3 Nov");
    assert_eq!(again.evaluation.queued, 0, "once per period");

    // Once October is settled it is no longer judged.
    sqlx::query("update daily_project_costs set estimated = false")
        .execute(&pool)
        .await
        .expect("settle");
    let settled = evaluate_and_send(&pool, &sender, None, on(2026, 11, 4), true)
        .await
        .expect("4 Nov");
    assert!(settled.evaluation.settling.is_empty());
    assert_eq!(smtp.messages().len(), 1);
    assert!(smtp.messages()[0].subject.contains("actual spend reached 100%"));
}

#[sqlx::test]
async fn raising_a_budget_rearms_thresholds_it_no_longer_crosses_and_lowering_never_resends(pool: PgPool) {
    seed(&pool).await;
    let smtp = common::smtp::start().await;
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), RetryPolicy::default());
    let evaluate = || evaluate_and_send(&pool, &sender, None, today(), true);
    // ml-research has spent 2,320.50 (21 days of 110.50): 50 % of 4,000 is crossed.
    let at = |amount: &str| spec("ml-research monthly", ("team", "ml-research"), amount, "50\n100", "");
    let id = save(&pool, None, &at("4000")).await;
    assert_eq!(evaluate().await.expect("eval").delivery.sent, 1);

    // Raised to 5,000: 50 % is 2,500, no longer crossed, so it is re-armed, not re-sent.
    save(&pool, Some(id), &at("5000")).await;
    assert_eq!(evaluate().await.expect("eval").delivery.sent, 0);
    let statuses: Vec<String> = alert_rows(&pool, id).await.into_iter().map(|r| r.3).collect();
    assert_eq!(statuses, ["rearmed"]);

    // Lowered straight back: 50 % of 4,000 was already alerted this period.
    save(&pool, Some(id), &at("4000")).await;
    assert_eq!(evaluate().await.expect("eval").evaluation.queued, 0);

    // Raised again, and spend then crosses the new 50 %: that is a new alert.
    save(&pool, Some(id), &at("5000")).await;
    evaluate().await.expect("eval");
    sqlx::query("update daily_project_costs set unblended = unblended + 10 where project = 'train'")
        .execute(&pool)
        .await
        .expect("more spend");
    common::reallocate(&pool).await;
    let crossed = evaluate().await.expect("eval");
    assert_eq!((crossed.evaluation.queued, crossed.delivery.sent), (1, 1));

    // Lowering never re-sends what this period already sent.
    save(&pool, Some(id), &at("2600")).await;
    let lowered = evaluate().await.expect("eval");
    assert_eq!(
        lowered.evaluation.queued, 0,
        "50 % of 2,600 was alerted at 5,000 already"
    );
    let statuses: Vec<String> = alert_rows(&pool, id).await.into_iter().map(|r| r.3).collect();
    assert_eq!(statuses, ["rearmed", "sent"]);
    let subjects: Vec<String> = smtp.messages().into_iter().map(|m| m.subject).collect();
    assert_eq!(
        subjects,
        [
            "[burnrate] ml-research monthly: actual spend reached 50% of its $4,000.00 budget",
            "[burnrate] ml-research monthly: actual spend reached 50% of its $5,000.00 budget",
        ]
    );
}

#[sqlx::test]
async fn a_budget_renamed_in_yaml_under_the_same_key_keeps_its_id_and_alert_history(pool: PgPool) {
    use burnrate::as_code::{apply, export, parse};
    seed(&pool).await;
    let actor = Actor::system("test");
    let file = |name: &str| {
        parse(&format!(
            "budgets:
  - key: ml-gpu
    name: {name}
    scope: {{team: ml-research}}
    period: monthly
    amount: \"1000\"
"
        ))
        .expect("valid")
    };
    apply(&pool, &actor, &file("ML GPU"), false).await.expect("created");
    let id: i64 = sqlx::query_scalar("select id from budgets where key = 'ml-gpu'")
        .fetch_one(&pool)
        .await
        .expect("id");
    let sender = AlertSender::new(None, RetryPolicy::default());
    evaluate_and_send(&pool, &sender, None, today(), false)
        .await
        .expect("eval");
    let history = alert_rows(&pool, id).await;
    assert!(!history.is_empty());

    let changes = apply(&pool, &actor, &file("ML research GPU"), false)
        .await
        .expect("renamed");
    assert_eq!(changes, ["update budget \"ML research GPU\""]);
    let (same_id, name): (i64, String) = sqlx::query_as("select id, name from budgets where key = 'ml-gpu'")
        .fetch_one(&pool)
        .await
        .expect("still there");
    assert_eq!((same_id, name.as_str()), (id, "ML research GPU"));
    assert_eq!(
        alert_rows(&pool, id).await,
        history,
        "the history stays with the budget"
    );
    let exported = export(&pool).await.expect("export");
    assert!(
        exported.contains("  - key: \"ml-gpu\"\n    name: \"ML research GPU\""),
        "{exported}"
    );

    // A new budget may not take a key another budget keeps from its old name.
    let clash = parse(
        "budgets:
  - key: ml-gpu
    name: ML research GPU
    scope: {team: ml-research}
    period: monthly
    amount: \"1000\"
  - name: ml-gpu
    scope: {org: true}
    period: monthly
    amount: \"10\"
",
    );
    assert!(clash.is_err(), "the file itself names the key twice");
}

/// ml-research's budget whose 50 % threshold the seed crosses, alerting `extra` besides the
/// team's owner.
async fn half_crossed_budget(pool: &PgPool, extra: &str) -> i64 {
    let budget = spec("ml-research monthly", ("team", "ml-research"), "4000", "50", extra);
    save(pool, None, &budget).await
}

#[sqlx::test]
async fn a_recipient_the_server_refuses_fails_alone_and_retry_requeues_only_it(pool: PgPool) {
    seed(&pool).await;
    let id = half_crossed_budget(&pool, "reject-me@example.com").await;
    let smtp = common::smtp::start_picky().await;
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), RetryPolicy::default());
    let EvaluatedAndSent { evaluation, delivery } = evaluate_and_send(&pool, &sender, None, today(), true)
        .await
        .expect("evaluate");
    assert_eq!(evaluation.queued, 1);
    assert_eq!((delivery.sent, delivery.failed, delivery.queued), (1, 1, 0));
    let messages = smtp.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].rcpt_to, ["owner@example.com"]);
    let deliveries = || async {
        sqlx::query_as::<_, (String, String, String)>(
            "select recipient, status, coalesce(last_reply, '') from alert_deliveries order by recipient",
        )
        .fetch_all(&pool)
        .await
        .expect("deliveries")
    };
    let recorded = deliveries().await;
    assert_eq!(recorded[0].0, "owner@example.com");
    assert_eq!(recorded[0].1, "sent");
    assert_eq!(
        (recorded[1].0.as_str(), recorded[1].1.as_str()),
        ("reject-me@example.com", "failed")
    );
    assert!(recorded[1].2.contains("550"), "{}", recorded[1].2);
    let alert_status: String = sqlx::query_scalar("select status from budget_alerts where budget_id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("alert");
    assert_eq!(
        alert_status, "failed",
        "the history shows the alert did not reach everyone"
    );

    // An admin's Retry re-queues that alert's failed delivery and returns; it does not send
    // inside the request (this server's sender has no SMTP, so nothing would go out anyway).
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("boss@example.com", Role::Admin).await;
    let alert_id: i64 = sqlx::query_scalar("select id from budget_alerts where budget_id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("alert");
    let retried = app
        .post_form_as("/api/retry_alert", &format!("alert_id={alert_id}"), &admin)
        .await;
    assert!(retried.status < 400, "{} {}", retried.status, retried.body);
    let after_retry = deliveries().await;
    assert_eq!(after_retry[0].1, "sent", "the delivered recipient is left alone");
    assert_eq!(after_retry[1].1, "queued", "the refused one waits for the sender");

    let again = sender.deliver_now(&pool).await.expect("deliver");
    assert_eq!(
        (again.sent, again.failed),
        (0, 1),
        "refused again; the owner gets no second copy"
    );
    assert_eq!(smtp.messages().len(), 1);
}

#[sqlx::test]
async fn an_alert_whose_sender_is_killed_mid_send_is_delivered_after_the_lease_expires(pool: PgPool) {
    seed(&pool).await;
    half_crossed_budget(&pool, "slow@example.com").await;
    let smtp = common::smtp::start_stalling().await;
    let marker = smtp.slow_marker.clone().expect("marker path");
    let url = common::database_url(&pool).await;
    let evaluate = || {
        let mut command = crate::common::burnrate_command(&url);
        command
            .args(["budgets", "evaluate"])
            .env("SMTP_URL", smtp.url())
            .env("SMTP_FROM", "burnrate@example.com")
            // Each SMTP step waits at most 1 s, so a delivery's lease lasts 10 s.
            .env("BURNRATE_SMTP_TIMEOUT", "1s")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    };
    let deliveries = || async {
        sqlx::query_as::<_, (String, String, i32)>(
            "select recipient, status, attempts from alert_deliveries order by recipient",
        )
        .fetch_all(&pool)
        .await
        .expect("deliveries")
    };

    // The sender is killed while the server holds the message to slow@.
    let mut child = evaluate().spawn().expect("burnrate runs");
    let mut held = false;
    for _ in 0..300 {
        if marker.exists() {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held, "the server received the message to slow@");
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert_eq!(
        deliveries().await,
        [
            ("owner@example.com".to_string(), "sent".to_string(), 1),
            ("slow@example.com".to_string(), "sending".to_string(), 1),
        ],
        "the claim outlives its dead sender"
    );

    // A run while the lease holds leaves it alone: the sender might still be alive.
    let early = evaluate().output().expect("run");
    assert!(early.status.success(), "{}", String::from_utf8_lossy(&early.stderr));
    assert_eq!(deliveries().await[1].1, "sending");

    // Once the lease has expired, the next run delivers it; the owner's copy is not resent.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let later = evaluate().output().expect("run");
    assert!(later.status.success(), "{}", String::from_utf8_lossy(&later.stderr));
    assert_eq!(
        deliveries().await,
        [
            ("owner@example.com".to_string(), "sent".to_string(), 1),
            ("slow@example.com".to_string(), "sent".to_string(), 2),
        ]
    );
    let status: String = sqlx::query_scalar("select status from budget_alerts")
        .fetch_one(&pool)
        .await
        .expect("alert");
    assert_eq!(status, "sent");
    let mut to: Vec<String> = smtp.messages().into_iter().flat_map(|m| m.rcpt_to).collect();
    to.sort();
    assert_eq!(to, ["owner@example.com", "slow@example.com"]);
}

#[sqlx::test]
async fn disabled_accounts_get_no_budget_mail(pool: PgPool) {
    seed(&pool).await;
    // The team's owner and an escalation address each have an account; both are disabled.
    common::create_account(&pool, "owner@example.com", Role::Lead).await;
    common::create_account(&pool, "gone@example.com", Role::Admin).await;
    sqlx::query("update accounts set disabled_at = now() where email in ('owner@example.com', 'gone@example.com')")
        .execute(&pool)
        .await
        .expect("disabled");
    half_crossed_budget(&pool, "gone@example.com, kept@example.com").await;
    let smtp = common::smtp::start().await;
    let sender = AlertSender::new(Some(&smtp_settings(&smtp.url())), RetryPolicy::default());
    evaluate_and_send(&pool, &sender, None, today(), true)
        .await
        .expect("evaluate");
    let recipients: Vec<String> = sqlx::query_scalar("select recipient from alert_deliveries order by recipient")
        .fetch_all(&pool)
        .await
        .expect("deliveries");
    assert_eq!(recipients, ["kept@example.com"]);
    assert_eq!(
        smtp.messages()
            .iter()
            .flat_map(|m| m.rcpt_to.clone())
            .collect::<Vec<_>>(),
        ["kept@example.com"]
    );
}

/// AWS answers `DescribeBudgets` without a budget's `FilterExpression` unless the request sets
/// `ShowFilterExpression`
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_DescribeBudgets.html>);
/// moto always includes it.
fn filter_only_when_asked(request: &str, answer: &mut serde_json::Value) {
    let asked = serde_json::from_str::<serde_json::Value>(request)
        .ok()
        .and_then(|r| r["ShowFilterExpression"].as_bool())
        .unwrap_or(false);
    if asked {
        return;
    }
    for budget in answer["Budgets"].as_array_mut().into_iter().flatten() {
        if let Some(budget) = budget.as_object_mut() {
            budget.remove("FilterExpression");
        }
    }
}

/// moto 5.2.5 answers `DescribeBudgets` with a `nextToken`; AWS's member is `NextToken`
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_DescribeBudgets.html>),
/// found by the contract step (scripts/aws-contract).
fn page_token_as_aws_spells_it(_: &str, answer: &mut serde_json::Value) {
    if let Some(token) = answer.as_object_mut().and_then(|a| a.remove("nextToken"))
        && !token.is_null()
    {
        answer["NextToken"] = token;
    }
}

/// AWS adds each notification's `NotificationState` (`OK` or `ALARM`)
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Notification.html>);
/// moto does not. moto also answers `"NextToken": null` on the last page, where AWS leaves
/// the member out (found by the contract step, scripts/aws-contract).
fn with_notification_state(_: &str, answer: &mut serde_json::Value) {
    for notification in answer["Notifications"].as_array_mut().into_iter().flatten() {
        notification["NotificationState"] = serde_json::json!("OK");
    }
    if let Some(answer) = answer.as_object_mut()
        && answer.get("NextToken").is_some_and(serde_json::Value::is_null)
    {
        answer.remove("NextToken");
    }
}

#[sqlx::test]
async fn a_second_sync_against_budgets_as_aws_answers_makes_no_write_call(pool: PgPool) {
    use burnrate::budgets::aws_sync::sync;
    seed(&pool).await;
    let moto = common::moto::start().await;
    let proxy = common::aws_proxy::AwsProxy::start(&moto.endpoint).await;
    proxy.with(|s| {
        s.reshape.push(("DescribeBudgets".into(), filter_only_when_asked));
        s.reshape.push(("DescribeBudgets".into(), page_token_as_aws_spells_it));
        s.reshape
            .push(("DescribeNotificationsForBudget".into(), with_notification_state));
    });
    let aws = budgets_client(&proxy.endpoint()).await;
    let team = team_budget(&pool).await;
    let org = save(
        &pool,
        None,
        &spec("org", ("org", ""), "50000", "50\n100", "cfo@example.com"),
    )
    .await;
    let first = sync(&pool, &aws, "project").await.expect("first sync");
    assert_eq!(first.created, [format!("burnrate-{team}"), format!("burnrate-{org}")]);
    let writes = || {
        proxy.with(|s| {
            s.forwarded
                .iter()
                .filter(|(a, _)| a == "CreateBudget" || a == "DeleteBudget")
                .count()
        })
    };
    let after_first = writes();
    assert_eq!(after_first, 2);

    let second = sync(&pool, &aws, "project").await.expect("second sync");
    assert_eq!(
        (
            second.created.len(),
            second.replaced.len(),
            second.deleted.len(),
            second.unchanged.len()
        ),
        (0, 0, 0, 2),
        "{second:?}"
    );
    assert_eq!(writes(), after_first, "nothing deleted or created again");
}
