//! The notify action: one email to the team's owners and every admin, composed once and
//! queued in the alert outbox, one delivery per recipient. The outbox sends it with no
//! transaction open and marks the action executed once every recipient has it (failed if
//! one was refused), so nothing is shown as sent before the SMTP server accepted it.

use sqlx::PgConnection;

use super::claims::ActionRow;
use crate::format::{tag_label, usd};
use crate::mail::compose::{Body, escape, facts_message, one_line};

/// The team's owners and every admin, less disabled accounts: who hears of a violation and
/// subscribes to its stop.
pub async fn recipients(conn: &mut PgConnection, team_id: Option<i64>) -> Result<Vec<String>, sqlx::Error> {
    let all = sqlx::query_scalar(
        "select email from team_owners where team_id = $1
         union select email from accounts where role = 'admin' order by 1",
    )
    .bind(team_id)
    .fetch_all(&mut *conn)
    .await?;
    crate::auth::accounts::without_disabled(conn, all).await
}

/// A notify email: its subject and body.
pub struct Notice {
    pub subject: String,
    pub body: Body,
}

/// The notice about `row`. Tag values are untrusted: one line in the subject, escaped in
/// the HTML.
pub fn notice(row: &ActionRow, public_url: Option<&str>) -> Notice {
    let project = tag_label(&row.project);
    let subject = format!(
        "[burnrate] {} is over its spend limit ({})",
        one_line(project),
        row.reason.replace('_', " ")
    );
    let facts = [
        ("Project", project.to_string()),
        (
            "Team",
            row.team
                .clone()
                .unwrap_or_else(|| crate::format::UNASSIGNED_TEAM.into()),
        ),
        ("Period from", row.period_start.to_string()),
        ("Spend", usd(row.spend)),
        ("Policy limit", usd(row.spend_limit)),
        ("Reason", row.reason.replace('_', " ")),
    ];
    let link = public_url.map(|u| format!("{}/enforcement", u.trim_end_matches('/')));
    let Body { mut text, mut html } = facts_message(&subject, &facts);
    text.push_str("\nApprove the project (with a cap and an expiry) or bring its spend down.\n");
    if let Some(link) = link {
        text.push_str(&format!("Enforcement: {link}\n"));
        html.push_str(&format!("<p><a href=\"{0}\">{0}</a></p>", escape(&link)));
    }
    html.push_str("</body></html>");
    Notice {
        subject,
        body: Body { text, html },
    }
}

/// Stores the notice on the locked action and queues one delivery per recipient; the action
/// is `executing` until the outbox has delivered them. Returns the recipients, or a reason
/// nothing could be queued.
pub async fn enqueue(
    conn: &mut PgConnection,
    row: &ActionRow,
    public_url: Option<&str>,
) -> Result<Result<Vec<String>, String>, sqlx::Error> {
    let to = recipients(conn, row.team_id).await?;
    if to.is_empty() {
        return Ok(Err(
            "nobody to email: the team has no owner and there is no admin account".into(),
        ));
    }
    let Notice {
        subject,
        body: Body { text, html },
    } = notice(row, public_url);
    // Composed once: a Retry re-sends the same message to the refused recipients.
    sqlx::query(
        "update enforcement_actions set subject = coalesce(subject, $2), body_text = coalesce(body_text, $3),
             body_html = coalesce(body_html, $4), status = 'executing', last_message = $5, updated_at = now()
         where id = $1",
    )
    .bind(row.id)
    .bind(&subject)
    .bind(&text)
    .bind(&html)
    .bind(format!("queued for {}", to.join(", ")))
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into alert_deliveries (enforcement_action_id, recipient)
         select $1, r from unnest($2::text[]) as r
         on conflict (enforcement_action_id, recipient) where enforcement_action_id is not null
         do update set status = 'queued', next_attempt_at = now()
         where alert_deliveries.status in ('failed', 'cancelled')",
    )
    .bind(row.id)
    .bind(&to)
    .execute(&mut *conn)
    .await?;
    // Nothing left to send (a refused recipient no longer on the list): settle it now.
    crate::outbox::summarize_action(conn, row.id).await?;
    Ok(Ok(to))
}
