//! Idle GPUs reach people: one email per idle stretch to the project's team owners through a
//! real SMTP server, repeated passes and a shrinking window change nothing, a snooze holds
//! and then ends by itself, and snoozing over HTTP is checked and audited.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::{daily, seed, team};
use crate::common::prometheus::{Prometheus, start, workloads};
use crate::common::{self, encode, spawn_app_with};
use burnrate::audit_log::Actor;
use burnrate::auth::Role;
use burnrate::config::{Config, PrometheusSettings};
use burnrate::mail::SmtpSettings;
use burnrate::outbox::{AlertSender, RetryPolicy};
use burnrate::savings::idle_alerts;
use burnrate::savings::insights::{self, Sources};
use burnrate::savings::model::IdleNow;

/// The cluster (idle its last 8 hours) and the notebook (idle its 6 hours) on team ml with
/// two owners; Prometheus holds their series.
async fn idle_fleet(pool: &PgPool) -> (Prometheus, PrometheusSettings) {
    seed(
        pool,
        &[
            daily("cluster", "USE1-BoxUsage:g5.xlarge", 0, 10, "24.144", "24"),
            daily("notebook", "USE1-BoxUsage:g5.xlarge", 0, 10, "24.144", "24"),
            daily("vision", "USE1-BoxUsage:g5.xlarge", 0, 10, "24.144", "24"),
        ]
        .concat(),
    )
    .await;
    team(pool, "ml", "lead@example.com", &["cluster", "notebook"]).await;
    sqlx::query(
        "insert into team_owners (team_id, email) select id, 'second@example.com' from teams where name = 'ml'",
    )
    .execute(pool)
    .await
    .expect("second owner");
    team(pool, "vision", "someone@example.com", &["vision"]).await;
    let end = Utc::now().timestamp() - 5;
    let prometheus = start(workloads(
        end,
        &[("nightly_idle", "cluster"), ("resident_idle", "notebook")],
    ))
    .await;
    let settings = PrometheusSettings {
        url: format!("http://127.0.0.1:{}", prometheus.port),
        project_label: "project".into(),
        timeout: Duration::from_secs(60),
    };
    (prometheus, settings)
}

fn idle(found: &insights::Insights, project: &str) -> IdleNow {
    found
        .idle_now
        .iter()
        .find(|i| i.project == project)
        .unwrap_or_else(|| panic!("{project} idle now: {:?}", found.idle_now))
        .clone()
}

async fn alerts(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from idle_alerts")
        .fetch_one(pool)
        .await
        .expect("count")
}

#[sqlx::test]
async fn one_email_per_idle_stretch_and_a_snooze_holds_then_ends(pool: PgPool) {
    let (_prometheus, settings) = idle_fleet(&pool).await;
    let sources = Sources {
        prometheus: Some(&settings),
        cloudwatch: None,
        aws: None,
    };
    let now = Utc::now();
    let found = insights::compute(&pool, 30, sources, now).await.expect("insights");
    let cluster = idle(&found, "cluster");
    assert_eq!(cluster.team, "ml");
    let idle_for = now.timestamp() - cluster.since;
    assert!(
        (7 * 3600..=8 * 3600 + 600).contains(&idle_for),
        "idle about 8 hours: {idle_for} s"
    );
    assert_eq!(cluster.usd_per_hour, Some(super::d("1.006")));

    // Above 10 hours nothing is due; at 4 both are (6 and 8 hours idle).
    assert_eq!(
        idle_alerts::queue_due(&pool, &found.idle_now, now, 10, None)
            .await
            .expect("pass"),
        0
    );
    let url = Some("https://costs.example.com");
    assert_eq!(
        idle_alerts::queue_due(&pool, &found.idle_now, now, 4, url)
            .await
            .expect("pass"),
        2
    );
    // The next pass, and one whose window no longer reaches the stretch's start, are the
    // same stretches.
    let later = now + chrono::Duration::minutes(5);
    assert_eq!(
        idle_alerts::queue_due(&pool, &found.idle_now, later, 4, url)
            .await
            .expect("pass"),
        0
    );
    let truncated = IdleNow {
        since: cluster.since + 3600,
        ..cluster.clone()
    };
    let later = now + chrono::Duration::minutes(10);
    assert_eq!(
        idle_alerts::queue_due(&pool, &[truncated], later, 4, url)
            .await
            .expect("pass"),
        0
    );
    assert_eq!(alerts(&pool).await, 2);

    let smtp = common::smtp::start().await;
    let smtp_settings =
        SmtpSettings::parse(&smtp.url(), "burnrate@example.com", Duration::from_secs(10)).expect("smtp settings");
    let sender = AlertSender::new(Some(&smtp_settings), RetryPolicy::default());
    let report = sender.deliver_now(&pool).await.expect("delivered");
    assert_eq!(report.sent, 4, "two resources × two owners");
    let messages = smtp.messages();
    let to_cluster: Vec<_> = messages
        .iter()
        .filter(|m| m.subject.contains(&cluster.resource))
        .collect();
    assert_eq!(to_cluster.len(), 2);
    let message = to_cluster[0];
    assert!(
        message.message_id.starts_with("<burnrate-idle-"),
        "{}",
        message.message_id
    );
    assert!(
        message
            .subject
            .starts_with("burnrate: cluster-1/gpu0 of cluster idle for "),
        "{}",
        message.subject
    );
    assert!(
        message.body.contains("https://costs.example.com/savings?team=ml"),
        "{}",
        message.body
    );
    // Hours idle × $1.006: about 8 hours, $8.05.
    assert!(
        message.body.contains("Spent while idle: $8.0") || message.body.contains("Spent while idle: $7.9"),
        "{}",
        message.body
    );

    // A new stretch after the GPU worked again: one more email, unless snoozed.
    let next_since = later + chrono::Duration::hours(2);
    let next = IdleNow {
        since: next_since.timestamp(),
        seen_at: (next_since + chrono::Duration::hours(5)).timestamp(),
        ..cluster.clone()
    };
    let lead = Actor {
        account_id: None,
        label: "lead@example.com".into(),
    };
    let mut conn = pool.acquire().await.expect("connection");
    let until: DateTime<Utc> = idle_alerts::snooze(&mut conn, &lead, &cluster, 12, "reserved for the demo on Friday")
        .await
        .expect("snoozed");
    drop(conn);
    let while_snoozed = later + chrono::Duration::hours(7);
    assert!(while_snoozed < until);
    assert_eq!(
        idle_alerts::queue_due(&pool, std::slice::from_ref(&next), while_snoozed, 4, url)
            .await
            .expect("pass"),
        0
    );
    let after = until + chrono::Duration::minutes(1);
    assert_eq!(
        idle_alerts::queue_due(&pool, &[next], after, 4, url)
            .await
            .expect("pass"),
        1,
        "the snooze ended"
    );
    assert_eq!(alerts(&pool).await, 3);
    let audited: i64 = sqlx::query_scalar(
        "select count(*) from audit_log where action = 'savings.idle_snooze' and subject = 'cluster-1/gpu0'
           and details->>'reason' = 'reserved for the demo on Friday' and (details->>'hours')::int = 12",
    )
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1);
}

#[sqlx::test]
async fn snoozing_over_http_is_for_the_teams_leads_and_admins(pool: PgPool) {
    let (_prometheus, settings) = idle_fleet(&pool).await;
    let mut config = Config::from_lookup(|_| None).expect("default config");
    config.savings.prometheus = Some(settings);
    let app = spawn_app_with(pool.clone(), config).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let own_lead = app.session_for("lead@example.com", Role::Lead).await;
    let other_lead = app.session_for("someone@example.com", Role::Lead).await;

    let page = app.get_as("/savings", &viewer).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("data-testid=\"idle-row\""), "{}", page.body);
    assert!(page.body.contains("cluster-1/gpu0"), "{}", page.body);
    assert!(
        !page.body.contains("data-testid=\"snooze-form\""),
        "a viewer gets no snooze form"
    );

    let body = |resource: &str, hours: &str| {
        format!(
            "resource={}&hours={hours}&reason={}",
            encode(resource),
            encode("planned standby")
        )
    };
    let snooze = |body: String, session| {
        let app = &app;
        async move {
            app.post_form_as("/api/savings/idle/snooze", &body, session)
                .await
                .status
        }
    };
    assert_eq!(
        app.post_form("/api/savings/idle/snooze", &body("cluster-1/gpu0", "24"))
            .await
            .status,
        401
    );
    assert_eq!(snooze(body("cluster-1/gpu0", "24"), &viewer).await, 403);
    assert_eq!(
        snooze(body("cluster-1/gpu0", "24"), &other_lead).await,
        403,
        "another team's lead"
    );
    assert_eq!(
        snooze(body("cluster-1/gpu0", "169"), &own_lead).await,
        400,
        "at most a week"
    );
    assert_eq!(
        snooze(body("nothing/gpu9", "24"), &own_lead).await,
        404,
        "only what is idle now"
    );
    assert_eq!(snooze(body("cluster-1/gpu0", "24"), &own_lead).await, 200);
    let (until, by): (DateTime<Utc>, String) =
        sqlx::query_as("select until, snoozed_by from idle_snoozes where resource = 'cluster-1/gpu0'")
            .fetch_one(&pool)
            .await
            .expect("snooze");
    assert_eq!(by, "lead@example.com");
    let hours = (until - Utc::now()).num_minutes();
    assert!((23 * 60..=24 * 60).contains(&hours), "{hours} minutes");
    let audited: i64 = sqlx::query_scalar(
        "select count(*) from audit_log where action = 'savings.idle_snooze' and actor = 'lead@example.com'",
    )
    .fetch_one(&pool)
    .await
    .expect("audit");
    assert_eq!(audited, 1);
    let page = app.get_as("/savings", &own_lead).await;
    assert!(page.body.contains("snoozed until"), "{}", page.body);
}
