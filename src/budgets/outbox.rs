//! Sending queued alerts. Each row is claimed with `FOR UPDATE SKIP LOCKED` and held while
//! it is sent, so two senders never send one alert; the row becomes `sent` in the same
//! transaction. A transient failure (connection refused, 4xx) keeps it queued with
//! exponential backoff, however long SMTP stays down; a 5xx reply marks it `failed`.

use std::time::Duration;

use sqlx::{Acquire, PgPool};

use crate::mail::{Email, Mailer};

/// How long a transiently failed alert waits before the next attempt.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            first_delay: Duration::from_secs(30),
            max_delay: Duration::from_secs(30 * 60),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, attempts: i32) -> Duration {
        let doublings = attempts.saturating_sub(1).clamp(0, 20) as u32;
        self.first_delay
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.max_delay)
    }
}

/// What one pass sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub sent: usize,
    pub failed: usize,
    /// Still queued after the pass (waiting for SMTP or for their next attempt).
    pub queued: usize,
}

/// The sender that `serve` shares: the mailer (if SMTP is configured) and the retry policy.
#[derive(Clone)]
pub struct AlertSender {
    mailer: Option<Mailer>,
    policy: RetryPolicy,
}

impl AlertSender {
    pub fn new(smtp: Option<&crate::mail::SmtpSettings>, policy: RetryPolicy) -> AlertSender {
        let mailer = smtp.and_then(|settings| match Mailer::new(settings.clone()) {
            Ok(mailer) => Some(mailer),
            Err(failure) => {
                tracing::error!(error = %failure.message, "SMTP is misconfigured; alerts stay queued");
                None
            }
        });
        AlertSender { mailer, policy }
    }

    /// The SMTP client, when SMTP is configured (enforcement's notify emails use it too).
    pub fn mailer(&self) -> Option<Mailer> {
        self.mailer.clone()
    }

    /// Tries every queued alert now, backoff or not.
    pub async fn deliver_now(&self, pool: &PgPool) -> Result<DeliveryReport, sqlx::Error> {
        deliver(pool, self.mailer.as_ref(), self.policy, false).await
    }

    /// Sends the alerts whose next attempt is due.
    pub async fn deliver_due(&self, pool: &PgPool) -> Result<DeliveryReport, sqlx::Error> {
        deliver(pool, self.mailer.as_ref(), self.policy, true).await
    }

    /// `serve`'s loop: every `every`, send what is due, so alerts queued while SMTP was down
    /// go out once it is back.
    pub async fn run_forever(self, pool: PgPool, every: Duration) {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            match self.deliver_due(&pool).await {
                Ok(report) if report.sent + report.failed > 0 => {
                    tracing::info!(
                        sent = report.sent,
                        failed = report.failed,
                        queued = report.queued,
                        "alert emails"
                    );
                }
                Ok(_) => {}
                Err(error) => tracing::error!(%error, "sending alert emails failed"),
            }
        }
    }
}

/// Rows one pass looks at, so a pass always ends.
const PASS_LIMIT: usize = 1000;

/// Sends queued alerts once each. `due_only` skips alerts still backing off (the background
/// loop); `false` tries every queued alert now (an operator's `budgets evaluate`).
pub async fn deliver(
    pool: &PgPool,
    mailer: Option<&Mailer>,
    policy: RetryPolicy,
    due_only: bool,
) -> Result<DeliveryReport, sqlx::Error> {
    let mut report = DeliveryReport::default();
    let mut last_id = 0i64;
    let mut conn = pool.acquire().await?;
    for _ in 0..PASS_LIMIT {
        let mut tx = conn.begin().await?;
        let row: Option<(i64, Vec<String>, String, String, String, i32)> = sqlx::query_as(
            "select id, recipients, subject, body_text, body_html, attempts from budget_alerts
             where status = 'queued' and id > $1 and (not $2 or next_attempt_at <= now())
             order by id limit 1 for update skip locked",
        )
        .bind(last_id)
        .bind(due_only)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((id, recipients, subject, text, html, attempts)) = row else {
            break;
        };
        last_id = id;
        let outcome = match (recipients.is_empty(), mailer) {
            (true, _) => Some(Err(crate::mail::SendFailure {
                permanent: true,
                message: "no recipients: the scope has no team owners and the budget lists no extra addresses".into(),
            })),
            (false, None) => None,
            (false, Some(mailer)) => Some(
                mailer
                    .send(&Email {
                        message_id: format!("<burnrate-alert-{id}@burnrate>"),
                        to: &recipients,
                        subject: &subject,
                        text: &text,
                        html: &html,
                    })
                    .await,
            ),
        };
        match outcome {
            None => {
                sqlx::query("update budget_alerts set last_reply = $2 where id = $1")
                    .bind(id)
                    .bind("waiting: SMTP_URL is not set, so alerts stay queued until it is")
                    .execute(&mut *tx)
                    .await?;
                report.queued += 1;
            }
            Some(Ok(reply)) => {
                sqlx::query(
                    "update budget_alerts set status = 'sent', attempts = attempts + 1, last_reply = $2, sent_at = now()
                     where id = $1",
                )
                .bind(id)
                .bind(reply)
                .execute(&mut *tx)
                .await?;
                report.sent += 1;
            }
            Some(Err(failure)) if failure.permanent => {
                sqlx::query("update budget_alerts set status = 'failed', attempts = attempts + 1, last_reply = $2 where id = $1")
                    .bind(id)
                    .bind(&failure.message)
                    .execute(&mut *tx)
                    .await?;
                tracing::warn!(alert = id, reply = %failure.message, "an alert email was refused");
                report.failed += 1;
            }
            Some(Err(failure)) => {
                let delay = policy.delay(attempts + 1);
                sqlx::query(
                    "update budget_alerts set attempts = attempts + 1, last_reply = $2,
                            next_attempt_at = now() + make_interval(secs => $3)
                     where id = $1",
                )
                .bind(id)
                .bind(&failure.message)
                .bind(delay.as_secs_f64())
                .execute(&mut *tx)
                .await?;
                tracing::info!(alert = id, error = %failure.message, retry_in = ?delay, "alert email will be retried");
                report.queued += 1;
            }
        }
        tx.commit().await?;
    }
    Ok(report)
}

/// Puts a failed alert back in the queue (an admin's Retry).
pub async fn requeue(pool: &PgPool, alert_id: i64) -> Result<bool, sqlx::Error> {
    let updated = sqlx::query(
        "update budget_alerts set status = 'queued', next_attempt_at = now() where id = $1 and status = 'failed'",
    )
    .bind(alert_id)
    .execute(pool)
    .await?;
    Ok(updated.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let secs: Vec<u64> = (1..=9).map(|n| policy.delay(n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 960, 1800, 1800, 1800]);
    }
}
