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
            let (traffic, judged) = match u.sagemaker {
                Some(SageMakerUse::Hosting) => quiet_off_hours(u, endpoints)?,
                Some(SageMakerUse::Notebook) => (String::new(), u.spend),
                Some(_) => return None,
                None if u.purchase != PurchaseOption::Reserved
                    && matches!(u.workload(), Workload::Dev | Workload::Batch) =>
                {
                    (String::new(), u.spend)
                }
                None => return None,
            };
            always_on(inputs, u, traffic, judged)
        })
        .collect()
}

/// What shows a project's endpoints of this type idle in the off-hours, if anything does,
/// and the spend that evidence covers: the usage's in the accounts whose endpoints were read.
/// Another account's spend on the same type is not judged by traffic read elsewhere.
fn quiet_off_hours(u: &Usage, endpoints: &[Endpoint]) -> Option<(String, Decimal)> {
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
    let read_in: std::collections::BTreeSet<&str> = same.iter().map(|e| e.account.as_str()).collect();
    let judged: Decimal = u
        .accounts
        .iter()
        .filter(|(account, _)| read_in.contains(account.as_str()))
        .map(|(_, spend)| *spend)
        .sum();
    if judged <= Decimal::ZERO {
        return None;
    }
    let seen = same.iter().map(|e| e.off_hours_seen).min().unwrap_or_default();
    let elsewhere = u.spend - judged;
    let others = if elsewhere > Decimal::ZERO {
        format!(
            "; only account {}'s {} of this usage is judged ({} in other accounts, whose endpoints were not read)",
            read_in.iter().copied().collect::<Vec<_>>().join(", "),
            crate::format::usd_precise(judged, 2),
            crate::format::usd_precise(elsewhere, 2)
        )
    } else {
        String::new()
    };
    Some((
        format!(
            "; CloudWatch saw no request to {} in {} off-hours (outside weekdays 08:00–20:00 UTC){others}",
            same.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "),
            crate::format::count(seen)
        ),
        judged,
    ))
}

/// `judged`: the part of the usage's spend the evidence covers.
fn always_on(inputs: &Inputs, u: &Usage, traffic: String, judged: Decimal) -> Option<Recommendation> {
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
        judged * share,
        detail,
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::savings::facts::Window;
    use crate::savings::model::ProjectFacts;
    use crate::savings::pricing::Pricing;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    #[test]
    fn traffic_read_in_one_account_judges_only_that_accounts_spend() {
        // 14 days of an ml.g5.xlarge endpoint around the clock: $600 in the account whose
        // endpoint CloudWatch showed quiet every off-hour, $400 in another whose endpoints were
        // not read. The schedule saves 108/168 of the $600 only: $385.71… over 14 days, per
        // 30 days $826.53….
        let from = chrono::NaiveDate::from_ymd_opt(2026, 10, 1).expect("day");
        let window = Window {
            from,
            to: from + chrono::Days::new(14),
        };
        let usage = [Usage {
            project: "chat".into(),
            team: Some("ml".into()),
            usage_type: "USE1-Host:ml.g5.xlarge".into(),
            purchase: PurchaseOption::OnDemand,
            instance_type: "g5.xlarge".into(),
            family: "g5".into(),
            gpus_per_instance: Decimal::ONE,
            sagemaker: Some(SageMakerUse::Hosting),
            region: "us-east-1".into(),
            facts: ProjectFacts::default(),
            spend: d("1000"),
            hours: d("336"),
            daily_hours: window.each_day().map(|day| (day, d("24"))).collect(),
            inferred: None,
            accounts: BTreeMap::from([("111111111111".into(), d("600")), ("222222222222".into(), d("400"))]),
        }];
        let endpoint = Endpoint {
            region: "us-east-1".into(),
            name: "chat-ep".into(),
            variant: "AllTraffic".into(),
            project: Some("chat".into()),
            instance_type: "ml.g5.xlarge".into(),
            instances: 1,
            gpus_per_instance: 1,
            observed_since: 0,
            read_at: 0,
            recent_invocations: 5.0,
            running_since: Some(0),
            quiet_since: None,
            off_hours_busy: 0,
            off_hours_seen: 216,
            asynchronous: false,
            account: "111111111111".into(),
        };
        let pricing = Pricing::default();
        let inputs = Inputs {
            window,
            usage: &usage,
            pricing: &pricing,
        };
        let rows = recommend(&inputs, std::slice::from_ref(&endpoint));
        assert_eq!(rows.len(), 1);
        let in_window = d("600") * d("108") / d("168");
        assert_eq!(rows[0].monthly_saving, in_window * d("30") / d("14"));
        assert!(
            rows[0].detail.contains("only account 111111111111's $600.00"),
            "{}",
            rows[0].detail
        );
        // Read in neither account: nothing is judged.
        let elsewhere = Endpoint {
            account: "333333333333".into(),
            ..endpoint
        };
        assert!(recommend(&inputs, &[elsewhere]).is_empty());
    }
}
