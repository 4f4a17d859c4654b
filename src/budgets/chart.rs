//! A budget's burn chart: cumulative actual spend, the forecast to the period's end, the
//! budget line and its thresholds.

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::BudgetStatus;

/// Cumulative actual spend, the forecast to the period's end, the budget line and its
/// thresholds.
pub fn burn_chart(status: &BudgetStatus, daily: &[(NaiveDate, Decimal)], provisional: &[NaiveDate]) -> String {
    let spec = &status.budget.spec;
    let days: Vec<NaiveDate> = status
        .period
        .from
        .iter_days()
        .take_while(|d| *d < status.period.to)
        .collect();
    let mut running = Decimal::ZERO;
    let actual: Vec<(NaiveDate, Decimal)> = daily
        .iter()
        .map(|(d, v)| {
            running += *v;
            (*d, running)
        })
        .collect();
    let start = actual.last().copied().unwrap_or((status.period.from, Decimal::ZERO));
    let remaining: Vec<NaiveDate> = start.0.iter_days().take_while(|d| *d < status.period.to).collect();
    let steps = Decimal::from((remaining.len().max(2) - 1) as i64);
    let forecast: Vec<(NaiveDate, Decimal, Decimal, Decimal)> = remaining
        .iter()
        .enumerate()
        .map(|(n, d)| {
            let value = start.1 + (status.forecast - start.1) * Decimal::from(n as i64) / steps;
            (*d, value, value, value)
        })
        .collect();
    let thresholds: Vec<(String, Decimal)> = spec
        .thresholds
        .iter()
        .filter(|t| t.percent != Decimal::ONE_HUNDRED)
        .map(|t| (t.label(), t.trigger_amount(spec.amount)))
        .collect();
    let description = format!(
        "Cumulative {} spend ({}) for {} to {}: {} so far, {} forecast, against a budget of {}.",
        spec.metric.key(),
        spec.credits.describe(),
        status.period.from,
        status.period.last_day(),
        crate::format::usd(status.spend),
        crate::format::usd(status.forecast),
        crate::format::usd(spec.amount)
    );
    crate::charts::burn(
        &format!("{}: spend against budget", spec.name),
        &description,
        &crate::charts::Burn {
            days: &days,
            actual: &actual,
            provisional,
            forecast: &forecast,
            budget: Some(spec.amount),
            thresholds: &thresholds,
        },
    )
}
