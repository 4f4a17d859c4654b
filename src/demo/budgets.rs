//! Demo budgets, one at every status a real organisation shows, sized from the demo's own
//! spend so the status holds whatever the day of the month:
//! - the organisation's, just above last month's spend, its forecast threshold the one to
//!   watch;
//! - ml-research's (on its allocated spend, with an escalation ladder), just below last
//!   month's spend;
//! - speech well under half used; inference past 80 %; llm-platform over 100 %;
//! - vision under 100 % so far, but forecast to end the month over it.
//!
//! On the 1st of a month nothing of the month is stored yet, so the month-to-date budgets
//! all stand at 0 % until the first day arrives.

use chrono::{Datelike, Months, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::audit_log::Actor;
use crate::budgets::spec::{BudgetInput, recipient_list, threshold_lines, validate};
use crate::budgets::{Budget, BudgetSpec};
use crate::error::AppError;
use crate::period::next_day;

/// How a demo budget's amount is found from its team's spend.
enum Sizing {
    /// A multiple of last month's spend.
    LastMonth(Decimal),
    /// Spend to date divided by this share: the budget stands at that share now.
    StandsAt(Decimal),
    /// Halfway between spend to date and the month's forecast: under 100 % now, over it
    /// by the month's end.
    ForecastOver,
}

struct DemoBudget {
    name: &'static str,
    team: Option<&'static str>,
    sizing: Sizing,
    thresholds: &'static str,
    recipients: &'static str,
}

const BUDGETS: [DemoBudget; 6] = [
    DemoBudget {
        name: "Organisation monthly",
        team: None,
        sizing: Sizing::LastMonth(Decimal::from_parts(105, 0, 0, false, 2)),
        thresholds: "50\n80\n100 cfo@example.com\n100 forecasted",
        recipients: "finance@example.com",
    },
    DemoBudget {
        name: "ml-research monthly",
        team: Some("ml-research"),
        sizing: Sizing::LastMonth(Decimal::from_parts(90, 0, 0, false, 2)),
        // The escalation ladder: the team, then its director, then finance.
        thresholds: "50\n80 director@example.com\n100 finance@example.com\n90 forecasted",
        recipients: "",
    },
    DemoBudget {
        name: "speech monthly",
        team: Some("speech"),
        sizing: Sizing::LastMonth(Decimal::from_parts(3, 0, 0, false, 0)),
        thresholds: "50\n80\n100",
        recipients: "",
    },
    DemoBudget {
        name: "inference monthly",
        team: Some("inference"),
        sizing: Sizing::StandsAt(Decimal::from_parts(85, 0, 0, false, 2)),
        thresholds: "50\n80 director@example.com\n100 finance@example.com",
        recipients: "",
    },
    DemoBudget {
        name: "llm-platform monthly",
        team: Some("llm-platform"),
        sizing: Sizing::StandsAt(Decimal::from_parts(108, 0, 0, false, 2)),
        thresholds: "50\n80\n100 finance@example.com",
        recipients: "",
    },
    DemoBudget {
        name: "vision monthly",
        team: Some("vision"),
        sizing: Sizing::ForecastOver,
        thresholds: "50\n100\n100 forecasted",
        recipients: "",
    },
];

/// Creates the demo budgets; `until` is the demo's last day with figures.
pub async fn insert(conn: &mut PgConnection, until: NaiveDate) -> Result<(), sqlx::Error> {
    let this_month = until.with_day(1).unwrap_or(until);
    let last_month = this_month.checked_sub_months(Months::new(1)).unwrap_or(this_month);
    for demo in &BUDGETS {
        let input = BudgetInput {
            name: demo.name.into(),
            scope_kind: if demo.team.is_some() { "team" } else { "org" }.into(),
            scope_name: demo.team.unwrap_or_default().into(),
            period: "monthly".into(),
            amount: "100".into(),
            metric: "unblended".into(),
            credits: "net".into(),
            thresholds: threshold_lines(demo.thresholds),
            recipients: recipient_list(demo.recipients),
        };
        let Ok(mut spec) = validate(&input) else {
            return Err(sqlx::Error::Protocol(format!(
                "the demo budget {:?} is invalid",
                demo.name
            )));
        };
        let amount = match demo.sizing {
            Sizing::LastMonth(times) => spend(conn, demo.team, last_month, this_month).await? * times,
            Sizing::StandsAt(share) => spend(conn, demo.team, this_month, next_day(until)).await? / share,
            Sizing::ForecastOver => {
                let standing = standing(conn, &spec, until).await?;
                (standing.spend + standing.forecast) / Decimal::TWO
            }
        };
        // Whole hundreds, as a finance lead would set them, and never zero.
        spec.amount = (amount / Decimal::ONE_HUNDRED).round().max(Decimal::ONE) * Decimal::ONE_HUNDRED;
        match crate::budgets::store::save(conn, &Actor::system("demo"), None, &spec).await {
            Ok(_) => {}
            Err(AppError::Internal) => return Err(sqlx::Error::Protocol("saving a demo budget failed".into())),
            Err(other) => return Err(sqlx::Error::Protocol(format!("a demo budget was refused: {other}"))),
        }
    }
    // The budgets were set up before the demo's history starts, so the history's alerts
    // (see `history`) and the settling month's are theirs.
    sqlx::query("update budgets set created_at = $1::date - interval '2 months'")
        .bind(this_month)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A team's allocated spend (the organisation's with `None`) over `from..to`.
async fn spend(
    conn: &mut PgConnection,
    team: Option<&str>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(
        "select coalesce(sum(a.unblended), 0) from allocated_daily_costs a left join teams t on t.id = a.team_id
         where a.day >= $1 and a.day < $2 and ($3::text is null or t.name = $3)",
    )
    .bind(from)
    .bind(to)
    .bind(team)
    .fetch_one(conn)
    .await
}

/// Where a budget with `spec` would stand today (the day after `until`), before it is saved.
async fn standing(
    conn: &mut PgConnection,
    spec: &BudgetSpec,
    until: NaiveDate,
) -> Result<crate::budgets::BudgetStatus, sqlx::Error> {
    let budget = Budget {
        id: 0,
        spec: spec.clone(),
    };
    Ok(crate::budgets::evaluate::status(conn, &budget, next_day(until))
        .await?
        .status)
}
