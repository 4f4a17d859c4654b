//! Demo budgets, sized from the demo's own previous month so their status is interesting:
//! the org budget sits just above last month's spend, ml-research's (on its allocated
//! spend, with an escalation ladder) just below it.

use chrono::{Datelike, Months, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::audit_log::Actor;
use crate::budgets::spec::{BudgetInput, recipient_list, threshold_lines, validate};
use crate::error::AppError;

pub async fn insert(conn: &mut PgConnection, until: NaiveDate) -> Result<(), sqlx::Error> {
    let this_month = until.with_day(1).unwrap_or(until);
    let last_month = this_month.checked_sub_months(Months::new(1)).unwrap_or(this_month);
    let spend = |team: Option<&'static str>| {
        sqlx::query_scalar::<_, Decimal>(
            "select coalesce(sum(a.unblended), 0) from allocated_daily_costs a left join teams t on t.id = a.team_id
             where a.day >= $1 and a.day < $2 and ($3::text is null or t.name = $3)",
        )
        .bind(last_month)
        .bind(this_month)
        .bind(team)
    };
    let org = spend(None).fetch_one(&mut *conn).await?;
    let ml = spend(Some("ml-research")).fetch_one(&mut *conn).await?;
    for (name, kind, scope, amount, thresholds, recipients) in [
        (
            "Organisation monthly",
            "org",
            "",
            org * Decimal::new(105, 2),
            "50\n80\n100 cfo@example.com\n100 forecasted",
            "finance@example.com",
        ),
        (
            "ml-research monthly",
            "team",
            "ml-research",
            ml * Decimal::new(90, 2),
            // The escalation ladder: the team, then its director, then finance.
            "50\n80 director@example.com\n100 finance@example.com\n90 forecasted",
            "",
        ),
    ] {
        // Whole hundreds, and never zero, so the amount passes the form's rules.
        let amount = (amount / Decimal::ONE_HUNDRED).ceil().max(Decimal::ONE) * Decimal::ONE_HUNDRED;
        let input = BudgetInput {
            name: name.into(),
            scope_kind: kind.into(),
            scope_name: scope.into(),
            period: "monthly".into(),
            amount: amount.to_string(),
            metric: "unblended".into(),
            thresholds: threshold_lines(thresholds),
            recipients: recipient_list(recipients),
        };
        let Ok(spec) = validate(&input) else {
            continue;
        };
        match crate::budgets::store::save(conn, &Actor::system("demo"), None, &spec).await {
            Ok(_) => {}
            Err(AppError::Internal) => return Err(sqlx::Error::Protocol("saving a demo budget failed".into())),
            Err(other) => tracing::warn!(error = %other, "a demo budget was skipped"),
        }
    }
    Ok(())
}
