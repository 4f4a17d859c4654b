//! The weekly savings digest: on Mondays (UTC), each team's owners get the team's top open
//! opportunities by email, through the same outbox as budget alerts (one delivery per
//! owner, retried, never lost). One digest per team and week: the unique key makes queueing
//! safe to repeat. `BURNRATE_SAVINGS_DIGEST=off` turns it off.

use chrono::{Datelike, Days, NaiveDate, Weekday};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::insights::Insights;
use super::model::Recommendation;
use super::store;
use crate::format::usd;
use crate::mail::compose::{escape, facts_message, one_line};

/// Opportunities listed per email.
const TOP: usize = 5;

/// The Monday starting `today`'s week.
pub fn week_start(today: NaiveDate) -> NaiveDate {
    today - Days::new(u64::from(today.weekday().num_days_from_monday()))
}

/// Queues this week's digests not yet queued, on Mondays. Returns how many were queued.
pub async fn queue_due(
    pool: &PgPool,
    insights: &Insights,
    today: NaiveDate,
    public_url: Option<&str>,
) -> Result<usize, sqlx::Error> {
    if today.weekday() != Weekday::Mon {
        return Ok(0);
    }
    queue_week(pool, insights, week_start(today), public_url).await
}

/// Whether some team with owners has no digest for `week` yet.
pub async fn teams_waiting(pool: &PgPool, week: NaiveDate) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists (select 1 from teams t where exists (select 1 from team_owners o where o.team_id = t.id)
                          and not exists (select 1 from savings_digests g where g.team_id = t.id and g.week_start = $1))",
    )
    .bind(week)
    .fetch_one(pool)
    .await
}

/// Queues the digest of `week` for every team with owners and open opportunities.
pub async fn queue_week(
    pool: &PgPool,
    insights: &Insights,
    week: NaiveDate,
    public_url: Option<&str>,
) -> Result<usize, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let decisions = store::current_decisions(&mut conn).await?;
    drop(conn);
    let teams: Vec<(i64, String, Vec<String>)> = sqlx::query_as(
        "select t.id, t.name, array_agg(o.email order by o.email)
         from teams t join team_owners o on o.team_id = t.id group by t.id, t.name order by t.name",
    )
    .fetch_all(pool)
    .await?;
    let mut queued = 0;
    for (team_id, team, owners) in teams {
        let open: Vec<&Recommendation> = insights
            .recommendations
            .iter()
            .filter(|r| r.team == team && !decisions.contains_key(&r.key()))
            .collect();
        if open.is_empty() {
            continue;
        }
        let (subject, text, html) = compose(&team, &open, public_url);
        // One statement per team: the digest and its deliveries commit together or not at all.
        let mut tx = pool.begin().await?;
        let id: Option<i64> = sqlx::query_scalar(
            "insert into savings_digests (team_id, week_start, subject, body_text, body_html)
             values ($1, $2, $3, $4, $5) on conflict (team_id, week_start) do nothing returning id",
        )
        .bind(team_id)
        .bind(week)
        .bind(&subject)
        .bind(&text)
        .bind(&html)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(id) = id {
            sqlx::query(
                "insert into alert_deliveries (savings_digest_id, recipient)
                 select $1, unnest($2::text[]) on conflict do nothing",
            )
            .bind(id)
            .bind(&owners)
            .execute(&mut *tx)
            .await?;
            queued += 1;
        }
        tx.commit().await?;
    }
    Ok(queued)
}

fn compose(team: &str, open: &[&Recommendation], public_url: Option<&str>) -> (String, String, String) {
    // Rows on an inferred workload are listed (their detail says so) but not summed.
    let counted: Vec<&&Recommendation> = open.iter().filter(|r| r.counts_in_totals()).collect();
    let total: Decimal = counted.iter().map(|r| r.compounded_saving).sum();
    let to_confirm = open.len() - counted.len();
    let subject = one_line(&if counted.is_empty() {
        format!("burnrate: {to_confirm} GPU savings for {team} to confirm")
    } else {
        format!(
            "burnrate: {} GPU savings for {team}, {} a month",
            counted.len(),
            usd(total)
        )
    });
    let link = format!(
        "{}/savings?team={}",
        public_url.unwrap_or(""),
        crate::format::url_encode(team)
    );
    let mut facts = vec![
        ("Team", team.to_string()),
        ("Open opportunities", counted.len().to_string()),
        ("Saving available", format!("{} per month", usd(total))),
    ];
    if to_confirm > 0 {
        facts.push((
            "Resting on a workload to confirm",
            format!("{to_confirm} more, not in the saving above until a lead confirms it"),
        ));
    }
    let mut body = facts_message(&subject, &facts);
    body.text.push_str("\nTop opportunities:\n");
    body.html.push_str("<h2>Top opportunities</h2><ol>");
    for r in open.iter().take(TOP) {
        let line = format!(
            "{} {} {} → {}: {} a month ({})",
            r.kind.label(),
            crate::format::tag_label(&r.project),
            r.instance_type,
            r.recommended,
            usd(r.compounded_saving),
            r.detail
        );
        body.text.push_str(&format!("- {line}\n"));
        body.html.push_str(&format!("<li>{}</li>", escape(&line)));
    }
    // Without BURNRATE_PUBLIC_URL the path alone is all there is to give.
    let place = if public_url.is_some() {
        link.clone()
    } else {
        format!("the Savings page of burnrate ({link})")
    };
    body.text.push_str(&format!("\nAccept or dismiss them at {place}\n"));
    body.html.push_str(&format!(
        "</ol><p><a href=\"{}\">Accept or dismiss them in burnrate</a></p></body></html>",
        escape(&link)
    ));
    (subject, body.text, body.html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_start_on_monday() {
        let monday = NaiveDate::from_ymd_opt(2026, 11, 23).expect("date");
        assert_eq!(week_start(monday), monday);
        assert_eq!(week_start(monday + Days::new(6)), monday);
        assert_eq!(week_start(monday - Days::new(1)), monday - Days::new(7));
    }
}
