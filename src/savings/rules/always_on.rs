//! Always-on: SageMaker notebooks, SageMaker endpoints whose traffic shows the off-hours are
//! idle, and EC2 GPU instances of dev or batch projects (declared or inferred), that ran
//! around the clock: at least 23 instance-hours per instance on every day of the window,
//! weekends included. The instance count is the largest day's hours ÷ 24, rounded up.
//! Saving = spend × the off-hours share of a business-hours schedule (12 h × 5 weekdays,
//! 08:00–20:00 UTC = 60 of 168 hours, so 108/168 = 64.3 %).
//!
//! An endpoint serves production traffic: it is never told to keep business hours unless
//! CloudWatch shows every endpoint of that project and type saw no invocation in a week or
//! more of off-hours (`Endpoint::idle_off_hours`); without CloudWatch, no endpoint row.

use chrono::{Datelike, Weekday};
use rust_decimal::Decimal;

use super::{Inputs, percent};
use crate::savings::cloudwatch::Endpoint;
use crate::savings::facts::Usage;
use crate::savings::model::{Kind, Recommendation, Workload};
use crate::usage_type::{PurchaseOption, SageMakerUse};

/// Hours a business-hours schedule keeps running in a week, and the week's hours.
pub const SCHEDULE_HOURS: i64 = 12 * 5;
pub const WEEK_HOURS: i64 = 24 * 7;

pub fn off_hours_share() -> Decimal {
    Decimal::from(WEEK_HOURS - SCHEDULE_HOURS) / Decimal::from(WEEK_HOURS)
}

pub fn recommend(inputs: &Inputs, endpoints: &[Endpoint]) -> Vec<Recommendation> {
    inputs
        .usage
        .iter()
        .filter_map(|u| {
            let traffic = match u.sagemaker {
                Some(SageMakerUse::Hosting) => Some(quiet_off_hours(u, endpoints)?),
                Some(SageMakerUse::Notebook) => None,
                Some(_) => return None,
                None if u.purchase != PurchaseOption::Reserved
                    && matches!(u.workload(), Workload::Dev | Workload::Batch) =>
                {
                    None
                }
                None => return None,
            };
            always_on(inputs, u, traffic.unwrap_or_default())
        })
        .collect()
}

/// What shows a project's endpoints of this type idle in the off-hours, if anything does.
fn quiet_off_hours(u: &Usage, endpoints: &[Endpoint]) -> Option<String> {
    let same: Vec<&Endpoint> = endpoints
        .iter()
        .filter(|e| {
            e.project.as_deref() == Some(u.project.as_str())
                && e.region == u.region
                && e.instance_type == format!("ml.{}", u.instance_type)
        })
        .collect();
    if same.is_empty() || !same.iter().all(|e| e.idle_off_hours()) {
        return None;
    }
    let seen = same.iter().map(|e| e.off_hours_seen).min().unwrap_or_default();
    Some(format!(
        "; CloudWatch saw no invocation of {} in {} off-hours (outside weekdays 08:00–20:00 UTC)",
        same.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "),
        crate::format::count(seen)
    ))
}

fn always_on(inputs: &Inputs, u: &Usage, traffic: String) -> Option<Recommendation> {
    let day_hours: Vec<(Weekday, Decimal)> = inputs
        .window
        .each_day()
        .map(|day| (day.weekday(), u.daily_hours.get(&day).copied().unwrap_or_default()))
        .collect();
    let most = day_hours.iter().map(|(_, h)| *h).max()?;
    let instances = (most / Decimal::from(24)).ceil().max(Decimal::ONE);
    let least = day_hours.iter().map(|(_, h)| *h).min()?;
    if least < Decimal::from(23) * instances {
        return None;
    }
    let average = |weekend: bool| {
        let days: Vec<Decimal> = day_hours
            .iter()
            .filter(|(w, _)| matches!(w, Weekday::Sat | Weekday::Sun) == weekend)
            .map(|(_, h)| *h)
            .collect();
        (!days.is_empty()).then(|| days.iter().sum::<Decimal>() / Decimal::from(days.len()))
    };
    let weekend_ratio = match (average(true), average(false)) {
        (Some(weekend), Some(weekday)) if weekday > Decimal::ZERO => Some(weekend / weekday),
        _ => None,
    };
    let evidence = match weekend_ratio {
        Some(ratio) if u.workload() == Workload::Dev && ratio > Decimal::new(8, 1) => format!(
            "; weekend-to-weekday ratio {} (above 0.8: nobody switches it off at weekends)",
            ratio.round_dp(2).normalize()
        ),
        _ => String::new(),
    };
    let share = off_hours_share();
    let detail = format!(
        "{} × {} ran at least {} hours every day of {} days{evidence}{traffic}; a 12 h × 5 weekday schedule would save the off-hours share, {}",
        crate::format::number(instances, 0),
        u.instance_type,
        crate::format::number(least, 1),
        crate::format::count(inputs.window.days()),
        percent(share),
    );
    Some(inputs.for_usage(
        Kind::AlwaysOn,
        u,
        "business-hours schedule (12 h × 5 weekdays)".into(),
        u.spend * share,
        detail,
    ))
}
