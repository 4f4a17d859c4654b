//! The alert outbox: budget alerts, enforcement notify emails, savings digests and idle
//! GPU alerts, queued by their features and sent here, one delivery per recipient. It sits
//! below those features and imports none; it knows their tables only to record outcomes.
//!
//! Sending queued alerts, one delivery per recipient. A sender claims a delivery with a
//! lease in one short statement, sends it with no transaction open, and records the outcome
//! in another; no lock is held across the SMTP conversation. A transient failure
//! (connection refused, 4xx) keeps the delivery queued with exponential backoff, however
//! long SMTP stays down; a 5xx reply or an unusable address fails that recipient only.
//! Delivery is at least once: a process that dies between the server's acceptance and the
//! record leaves a lease that expires, and the delivery is sent again with the same
//! Message-ID.

use std::time::Duration;

use sqlx::PgPool;

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

/// What one pass did, in emails: one per alert and recipient.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub sent: usize,
    pub failed: usize,
    /// Still waiting after the pass (for SMTP, for their next attempt, or claimed by another
    /// sender).
    pub queued: usize,
}

/// The alert sender `serve` provided to this request's server functions.
pub fn sender() -> Result<std::sync::Arc<AlertSender>, crate::error::AppError> {
    crate::ctx::get::<std::sync::Arc<AlertSender>>()
}

/// The sender that `serve` shares: the mailer (if SMTP is configured) and the retry policy.
#[derive(Clone)]
pub struct AlertSender {
    mailer: Option<Mailer>,
    policy: RetryPolicy,
    /// Wakes `run_forever` early (an admin's Retry).
    wake: std::sync::Arc<tokio::sync::Notify>,
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
        AlertSender {
            mailer,
            policy,
            wake: Default::default(),
        }
    }

    /// Asks the background loop for a pass now rather than at its next tick.
    pub fn wake(&self) {
        self.wake.notify_one();
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
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.wake.notified() => {}
            }
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

/// Deliveries one pass looks at, so a pass always ends.
const PASS_LIMIT: usize = 1000;

/// How long a claim on a delivery lasts: longer than any send can take (lettre bounds each
/// SMTP step by the timeout, and a send is under ten steps), so a live sender is never
/// overtaken, while a dead one's claim expires and the next pass delivers it again.
fn lease(mailer: &Mailer) -> Duration {
    mailer.timeout().saturating_mul(10)
}

/// A delivery claimed for sending, with its alert's message.
#[derive(sqlx::FromRow)]
struct Claimed {
    id: i64,
    /// The budget alert, or the enforcement notify action, this delivery belongs to.
    alert_id: Option<i64>,
    enforcement_action_id: Option<i64>,
    savings_digest_id: Option<i64>,
    idle_alert_id: Option<i64>,
    approval_notice_id: Option<i64>,
    recipient: String,
    attempts: i32,
    subject: String,
    body_text: String,
    body_html: String,
}

/// Sends queued deliveries, each to its one recipient: claim with a lease (a statement of
/// its own), send with no transaction open, record the outcome. `due_only` skips deliveries
/// still backing off (the background loop); `false` tries every queued one now (an
/// operator's `budgets evaluate`). A delivery whose sender died mid-send is sent again once
/// its lease expires: at least once, never lost.
pub async fn deliver(
    pool: &PgPool,
    mailer: Option<&Mailer>,
    policy: RetryPolicy,
    due_only: bool,
) -> Result<DeliveryReport, sqlx::Error> {
    let mut report = DeliveryReport::default();
    let Some(mailer) = mailer else {
        // Nothing can be sent; say why on every alert that waits.
        // Written once per alert, not rewritten every minute while SMTP stays unset.
        sqlx::query(
            "update budget_alerts set last_reply = $1 where status = 'queued' and last_reply is distinct from $1",
        )
        .bind("waiting: SMTP_URL is not set, so alerts stay queued until it is")
        .execute(pool)
        .await?;
        report.queued = pending(pool).await?;
        return Ok(report);
    };
    let mut last_id = 0i64;
    for _ in 0..PASS_LIMIT {
        let claimed: Option<Claimed> = sqlx::query_as(
            "with next as (
                 select id from alert_deliveries
                 where id > $1
                   and ((status = 'queued' and (not $2 or next_attempt_at <= now()))
                        or (status = 'sending' and lease_until < now()))
                 order by id limit 1 for update skip locked
             )
             update alert_deliveries d
             set status = 'sending', lease_until = now() + make_interval(secs => $3), attempts = d.attempts + 1
             from next
             where d.id = next.id
             returning d.id, d.alert_id, d.enforcement_action_id, d.savings_digest_id, d.idle_alert_id, d.approval_notice_id, d.recipient, d.attempts,
                 coalesce((select subject from budget_alerts a where a.id = d.alert_id),
                          (select subject from enforcement_actions e where e.id = d.enforcement_action_id),
                          (select subject from savings_digests g where g.id = d.savings_digest_id),
                          (select subject from idle_alerts i where i.id = d.idle_alert_id),
                          (select subject from approval_notices n where n.id = d.approval_notice_id), '') as subject,
                 coalesce((select body_text from budget_alerts a where a.id = d.alert_id),
                          (select body_text from enforcement_actions e where e.id = d.enforcement_action_id),
                          (select body_text from savings_digests g where g.id = d.savings_digest_id),
                          (select body_text from idle_alerts i where i.id = d.idle_alert_id),
                          (select body_text from approval_notices n where n.id = d.approval_notice_id), '') as body_text,
                 coalesce((select body_html from budget_alerts a where a.id = d.alert_id),
                          (select body_html from enforcement_actions e where e.id = d.enforcement_action_id),
                          (select body_html from savings_digests g where g.id = d.savings_digest_id),
                          (select body_html from idle_alerts i where i.id = d.idle_alert_id),
                          (select body_html from approval_notices n where n.id = d.approval_notice_id), '') as body_html",
        )
        .bind(last_id)
        .bind(due_only)
        .bind(lease(mailer).as_secs_f64())
        .fetch_optional(pool)
        .await?;
        let Some(delivery) = claimed else {
            break;
        };
        last_id = delivery.id;
        let to = [delivery.recipient.clone()];
        let outcome = mailer
            .send(&Email {
                // Stable per alert and recipient: a resend after a crash is the same message.
                message_id: delivery.message_id(),
                to: &to,
                subject: &delivery.subject,
                text: &delivery.body_text,
                html: &delivery.body_html,
            })
            .await;
        record(pool, &delivery, outcome, policy, &mut report).await?;
    }
    report.queued = pending(pool).await?;
    Ok(report)
}

impl Claimed {
    fn message_id(&self) -> String {
        if let Some(idle) = self.idle_alert_id {
            return format!("<burnrate-idle-{idle}-{}@burnrate>", self.id);
        }
        if let Some(notice) = self.approval_notice_id {
            return format!("<burnrate-approval-{notice}-{}@burnrate>", self.id);
        }
        match (self.alert_id, self.enforcement_action_id, self.savings_digest_id) {
            (Some(alert), _, _) => format!("<burnrate-alert-{alert}-{}@burnrate>", self.id),
            (None, None, Some(digest)) => format!("<burnrate-digest-{digest}-{}@burnrate>", self.id),
            (None, action, _) => format!(
                "<burnrate-enforcement-{}-{}@burnrate>",
                action.unwrap_or_default(),
                self.id
            ),
        }
    }
}

/// Deliveries not yet made: queued, backing off, or claimed by a sender.
async fn pending(pool: &PgPool) -> Result<usize, sqlx::Error> {
    let count: i64 = sqlx::query_scalar("select count(*) from alert_deliveries where status in ('queued', 'sending')")
        .fetch_one(pool)
        .await?;
    Ok(count as usize)
}

/// Records one delivery's outcome (only if this sender still holds its claim), then the
/// alert's status: queued while any delivery is pending, else failed if any failed, else sent.
async fn record(
    pool: &PgPool,
    delivery: &Claimed,
    outcome: Result<String, crate::mail::SendFailure>,
    policy: RetryPolicy,
    report: &mut DeliveryReport,
) -> Result<(), sqlx::Error> {
    let (status, reply, retry_in) = match outcome {
        Ok(reply) => ("sent", reply, None),
        Err(failure) if failure.permanent => {
            tracing::warn!(alert = ?delivery.alert_id, action = ?delivery.enforcement_action_id, reply = %failure.message, "an alert email was refused for one recipient");
            ("failed", failure.message, None)
        }
        Err(failure) => {
            let delay = policy.delay(delivery.attempts);
            tracing::info!(alert = ?delivery.alert_id, action = ?delivery.enforcement_action_id, error = %failure.message, retry_in = ?delay, "alert email will be retried");
            ("queued", failure.message, Some(delay))
        }
    };
    let mut tx = pool.begin().await?;
    let recorded = sqlx::query(
        "update alert_deliveries
         set status = $2, last_reply = $3, lease_until = null,
             sent_at = case when $2 = 'sent' then now() end,
             next_attempt_at = now() + make_interval(secs => $4)
         where id = $1 and status = 'sending'",
    )
    .bind(delivery.id)
    .bind(status)
    .bind(&reply)
    .bind(retry_in.unwrap_or_default().as_secs_f64())
    .execute(&mut *tx)
    .await?;
    if recorded.rows_affected() == 1 {
        match status {
            "sent" => report.sent += 1,
            "failed" => report.failed += 1,
            _ => {}
        }
    }
    match (delivery.alert_id, delivery.enforcement_action_id) {
        (Some(alert_id), _) => summarize(&mut tx, alert_id).await?,
        (None, Some(action_id)) => summarize_action(&mut tx, action_id).await?,
        (None, None) => {}
    }
    tx.commit().await?;
    Ok(())
}

/// The alert's status, attempts, reply and send time from its deliveries. A re-armed alert
/// keeps its status.
async fn summarize(conn: &mut sqlx::PgConnection, alert_id: i64) -> Result<(), sqlx::Error> {
    // One summary at a time per alert, each reading its deliveries after the lock: two
    // senders recording an alert's last two deliveries at once would otherwise each see the
    // other's still 'sending' and both leave the alert 'queued'.
    sqlx::query("select 1 from budget_alerts where id = $1 for update")
        .bind(alert_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "update budget_alerts a set
             status = case
                 when exists (select 1 from alert_deliveries d where d.alert_id = a.id and d.status in ('queued', 'sending')) then 'queued'
                 when exists (select 1 from alert_deliveries d where d.alert_id = a.id and d.status = 'failed') then 'failed'
                 else 'sent' end,
             attempts = (select coalesce(max(attempts), 0) from alert_deliveries d where d.alert_id = a.id),
             last_reply = (select last_reply from alert_deliveries d where d.alert_id = a.id and d.last_reply is not null
                           order by (d.status = 'failed') desc, d.id desc limit 1),
             sent_at = (select max(sent_at) from alert_deliveries d where d.alert_id = a.id)
         where a.id = $1 and a.status <> 'rearmed'",
    )
    .bind(alert_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// An enforcement notify action from its deliveries: `executing` while any is pending, then
/// `failed` if any recipient was refused, else `executed`, with its audit entry.
pub async fn summarize_action(conn: &mut sqlx::PgConnection, action_id: i64) -> Result<(), sqlx::Error> {
    // Locked first, as `summarize` does, so the last two deliveries recorded at once agree.
    sqlx::query("select 1 from enforcement_actions where id = $1 for update")
        .bind(action_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "with outcome as (
             select case
                 when bool_or(d.status in ('queued', 'sending')) then 'executing'
                 when bool_or(d.status = 'failed') then 'failed'
                 else 'executed' end as status,
                 string_agg(d.recipient || ': ' || coalesce(d.last_reply, ''), '; ' order by d.recipient) as replies
             from alert_deliveries d where d.enforcement_action_id = $1
         ), changed as (
             update enforcement_actions a set status = o.status, last_message = o.replies, updated_at = now()
             from outcome o
             where a.id = $1 and a.status = 'executing' and o.status <> 'executing'
             returning a.id, a.status, a.action, a.last_message, a.violation_id
         )
         insert into enforcement_audit (actor, event, action_id, project, action, response)
         select 'system', c.status, c.id, v.project, c.action, c.last_message
         from changed c join violations v on v.id = c.violation_id",
    )
    .bind(action_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Puts a failed alert's failed deliveries back in the queue (an admin's Retry); the
/// background sender takes them on its next pass.
pub async fn requeue(pool: &PgPool, alert_id: i64) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let requeued = sqlx::query(
        "update alert_deliveries set status = 'queued', next_attempt_at = now()
         where alert_id = $1 and status = 'failed'
           and exists (select 1 from budget_alerts a where a.id = $1 and a.status = 'failed')",
    )
    .bind(alert_id)
    .execute(&mut *tx)
    .await?;
    if requeued.rows_affected() > 0 {
        summarize(&mut tx, alert_id).await?;
    }
    tx.commit().await?;
    Ok(requeued.rows_affected() > 0)
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
