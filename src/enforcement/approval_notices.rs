//! The emails an approval earns on its way: when its project's spend reaches 80 % of the cap in
//! a period of the governing policy (once per period), and when 7 days are left, counting the
//! last day (once). Per version of the approval (a new cap or day may warn again), to the
//! project's team owners and the approver, through the alert outbox. Queued after each
//! ingestion; safe to repeat. At expiry nothing needs doing here: the project is judged by its
//! policy again (`judge`).

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::model::ApprovalStanding;
use crate::format::{tag_label, usd};
use crate::mail::compose::{escape, facts_message, one_line};

/// Spend at or past this share of the cap warns once.
const CAP_SHARE: Decimal = Decimal::from_parts(8, 0, 0, false, 1);
/// Warned this many days before the last day counts (the last day itself is day 1).
const EXPIRY_DAYS: i64 = 7;

/// Which warnings `standing` is due, as `approval_notices.kind` names them.
pub fn due(standing: &ApprovalStanding) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    if standing.used >= CAP_SHARE {
        kinds.push("cap_80");
    }
    // days_left counts the last day: 7 means it expires at the end of the 7th day from today.
    if standing.days_left >= 1 && standing.days_left <= EXPIRY_DAYS {
        kinds.push("expiry_7");
    }
    kinds
}

/// Queues every warning due today and not yet queued for its approval's version; returns how
/// many were queued.
pub async fn queue_due(pool: &PgPool, today: NaiveDate, public_url: Option<&str>) -> Result<usize, sqlx::Error> {
    let standing = {
        let mut conn = pool.acquire().await?;
        super::standing::all(&mut conn, today, None).await?
    };
    let mut queued = 0;
    for approval in &standing {
        for kind in due(approval) {
            let mut tx = pool.begin().await?;
            if queue_one(&mut tx, approval, kind, public_url).await? {
                queued += 1;
            }
            tx.commit().await?;
        }
    }
    Ok(queued)
}

async fn queue_one(
    conn: &mut PgConnection,
    approval: &ApprovalStanding,
    kind: &str,
    public_url: Option<&str>,
) -> Result<bool, sqlx::Error> {
    // The version these figures were read for, if it is still the current one: an approval
    // edited since is a new version, judged on the next pass with its own figures.
    let current: Option<i64> = sqlx::query_scalar(
        "select id from approvals where project = $1 and ended_at is null and cap = $2 and expires = $3",
    )
    .bind(&approval.project)
    .bind(approval.cap)
    .bind(approval.expires)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(approval_id) = current else {
        return Ok(false);
    };
    // Once per period for the cap (it is a cap per period), once for the last week.
    let occasion = match kind {
        "cap_80" => approval.period_from,
        _ => approval.expires,
    };
    let (subject, text, html) = compose(approval, kind, public_url);
    let id: Option<i64> = sqlx::query_scalar(
        "insert into approval_notices (approval_id, kind, occasion, project, subject, body_text, body_html)
         values ($1, $2, $3, $4, $5, $6, $7) on conflict (approval_id, kind, occasion) do nothing returning id",
    )
    .bind(approval_id)
    .bind(kind)
    .bind(occasion)
    .bind(&approval.project)
    .bind(&subject)
    .bind(&text)
    .bind(&html)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else {
        return Ok(false);
    };
    sqlx::query(
        "insert into alert_deliveries (approval_notice_id, recipient)
         select $1, lower(email) from (
             select o.email from team_owners o join projects p on p.team_id = o.team_id where p.name = $2
             union select $3
         ) r
         -- A disabled sign-in account (someone who left) gets no more warnings.
         where not exists (select 1 from accounts a where lower(a.email) = lower(r.email) and a.disabled_at is not null)
         on conflict do nothing",
    )
    .bind(id)
    .bind(&approval.project)
    .bind(&approval.approver)
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

fn compose(approval: &ApprovalStanding, kind: &str, public_url: Option<&str>) -> (String, String, String) {
    let project = tag_label(&approval.project).to_string();
    let subject = one_line(&match kind {
        "cap_80" => format!(
            "burnrate: {project} has spent {}% of its approved cap",
            (approval.used * Decimal::ONE_HUNDRED).round_dp(0)
        ),
        _ => format!("burnrate: the approval of {project} ends on {}", approval.expires),
    });
    let link = format!("{}/approvals", public_url.unwrap_or(""));
    let mut body = facts_message(
        &subject,
        &[
            ("Project", project),
            ("Team", approval.team.clone().unwrap_or_default()),
            ("Approved by", approval.approver.clone()),
            ("Cap per period", usd(approval.cap)),
            (
                "Spend this period",
                format!(
                    "{} ({} – {})",
                    usd(approval.spend),
                    approval.period_from,
                    approval.period_to.pred_opt().unwrap_or(approval.period_to)
                ),
            ),
            ("Last day (UTC)", approval.expires.to_string()),
        ],
    );
    let after = "After its last day, or past its cap, the project is held to its policy limit again.";
    body.text
        .push_str(&format!("\n{after} Ask for more, or review it, at {link}\n"));
    body.html.push_str(&format!(
        "<p>{after}</p><p><a href=\"{}\">Ask for more, or review it, in burnrate</a></p></body></html>",
        escape(&link)
    ));
    (subject, body.text, body.html)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(used: &str, days_left: i64) -> ApprovalStanding {
        let day: NaiveDate = "2026-11-01".parse().expect("day");
        ApprovalStanding {
            project: "llm".into(),
            team: Some("ml".into()),
            approver: "cfo@example.com".into(),
            reason: "run".into(),
            cap: Decimal::from(1000),
            expires: day,
            days_left,
            spend: Decimal::ZERO,
            period_from: day,
            period_to: day,
            used: used.parse().expect("decimal"),
        }
    }

    #[test]
    fn warnings_fall_due_at_80_percent_and_in_the_last_7_days() {
        assert!(due(&standing("0.7999", 8)).is_empty());
        assert_eq!(due(&standing("0.8", 30)), ["cap_80"]);
        assert_eq!(due(&standing("0.1", 7)), ["expiry_7"]);
        assert_eq!(due(&standing("1.2", 1)), ["cap_80", "expiry_7"]);
        assert_eq!(
            due(&standing("0.1", 0)),
            Vec::<&str>::new(),
            "expired: nothing to warn of"
        );
    }

    #[test]
    fn a_tag_value_is_escaped_in_the_html() {
        let mut s = standing("0.9", 3);
        s.project = "<script>x</script>".into();
        let (subject, _, html) = compose(&s, "cap_80", Some("https://burnrate.example.com"));
        assert!(subject.contains("90%"), "{subject}");
        assert!(!html.contains("<script>"), "{html}");
    }
}
