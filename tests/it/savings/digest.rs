//! The weekly digest: queued once per team and week, delivered through the alert outbox to
//! each owner by a real SMTP server, with every tag value escaped in the HTML part.

use sqlx::PgPool;

use super::{daily, declare, insights, seed, team};
use crate::common;
use burnrate::mail::SmtpSettings;
use burnrate::outbox::{AlertSender, RetryPolicy};
use burnrate::savings::digest;

#[sqlx::test]
async fn each_team_gets_one_digest_a_week_with_its_top_opportunities(pool: PgPool) {
    seed(
        &pool,
        &daily("trainer<b>", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
    )
    .await;
    declare(&pool, "trainer<b>", "training", None).await;
    team(&pool, "ml", "owner@example.com", &["trainer<b>"]).await;
    let found = insights(&pool, 30).await;
    let monday = chrono::NaiveDate::from_ymd_opt(2026, 11, 23).expect("a Monday");
    let tuesday = monday.succ_opt().expect("day");
    assert_eq!(
        digest::queue_due(&pool, &found, tuesday, None)
            .await
            .expect("not Monday"),
        0
    );
    let url = Some("https://costs.example.com");
    assert_eq!(digest::queue_due(&pool, &found, monday, url).await.expect("queued"), 1);
    assert_eq!(
        digest::queue_due(&pool, &found, monday, url).await.expect("repeat"),
        0,
        "once a week"
    );
    assert!(!digest::teams_waiting(&pool, monday).await.expect("waiting"));

    let smtp = common::smtp::start().await;
    let settings = SmtpSettings::parse(&smtp.url(), "burnrate@example.com", std::time::Duration::from_secs(10))
        .expect("smtp settings");
    let sender = AlertSender::new(Some(&settings), RetryPolicy::default());
    let report = sender.deliver_now(&pool).await.expect("delivered");
    assert_eq!(report.sent, 1);
    let messages = smtp.messages();
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert_eq!(message.rcpt_to, vec!["owner@example.com".to_string()]);
    // 2195.76 × 0.65 × 3 = 4281.732
    assert_eq!(message.subject, "burnrate: 1 GPU savings for ml, $4,281.73 a month");
    assert!(
        message.message_id.starts_with("<burnrate-digest-"),
        "{}",
        message.message_id
    );
    assert!(
        message.body.contains("https://costs.example.com/savings?team=ml"),
        "{}",
        message.body
    );
    let html: String = sqlx::query_scalar("select body_html from savings_digests")
        .fetch_one(&pool)
        .await
        .expect("html");
    assert!(
        html.contains("trainer&lt;b&gt;") && !html.contains("trainer<b>"),
        "{html}"
    );
}
