//! What a project that declares nothing most likely runs, read from its bill: on a real
//! account nobody has declared anything yet, and the rules would otherwise stay silent.
//!
//! - EC2: the daily instance-hours of the project's GPU usage types over the window.
//!   - Every day at least 23 instance-hours (one instance around the clock) and flat (daily
//!     hours vary by at most 25 % around their mean, weekends like weekdays): serving.
//!   - Weekends at most half of weekdays, and hours on at least 80 % of the weekdays: dev
//!     (office hours; off at weekends is high confidence). Runs on a few weekdays are not
//!     office hours: they are the next profile.
//!   - Days without any hours between runs: training, or batch when no run reaches 12 hours
//!     per instance. A run is a stretch of consecutive days with hours; its length is its
//!     instance-hours ÷ the most instances seen at once.
//!   - Anything else is left unknown: no rule guesses on it.
//! - SageMaker: the operation in the usage type is the workload of that usage (`Train:`,
//!   `Host:`, `Notebk:`), a fact, not an inference. A project with no EC2 GPU usage is said
//!   to run what the SageMaker operation holding most of its GPU spend runs, at low
//!   confidence (its rows follow their own operations; this is what its page shows).
//! - Utilisation, where known, raises the confidence one step when it agrees (training or
//!   batch with a GPU mean of 60 % or more, dev below 40 %) and lowers it when it contradicts.
//!
//! Daily Cost Explorer figures cannot see hours inside a day, so "office hours" is read from
//! the week's shape. Declared workloads always win; a lead confirms or corrects an inference
//! in one click, which declares it.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate, Weekday};
use rust_decimal::Decimal;

use super::facts::{Usage, Window};
use super::model::{Confidence, Inferred, Utilisation, Workload};
use crate::format::number;
use crate::usage_type::SageMakerUse;

/// At least this many instance-hours every day: something ran around the clock.
const ROUND_THE_CLOCK_HOURS: i64 = 23;
/// Daily hours within this share of their mean, every day, read as flat.
const FLAT_WITHIN_PERCENT: i64 = 25;
/// Weekends at most this share of weekdays read as office hours.
const WEEKEND_AT_MOST_PERCENT: i64 = 50;
/// Weekends at most this share of weekdays read as switched off at weekends.
const WEEKEND_OFF_PERCENT: i64 = 10;
/// Office work shows on at least this share of the weekdays.
const WEEKDAYS_WORKED_PERCENT: i64 = 80;
/// A run this long per instance reads as training rather than batch.
const TRAINING_RUN_HOURS: i64 = 12;
/// Utilisation that agrees with a training or batch inference, and below which dev agrees.
const BUSY_MEAN_PERCENT: i64 = 60;
const DEV_MEAN_BELOW_PERCENT: i64 = 40;

/// The inferred workload of every project that declares none and whose bill fits a profile.
pub fn infer(usage: &[Usage], window: Window) -> BTreeMap<String, Inferred> {
    let mut by_project: BTreeMap<&str, Vec<&Usage>> = BTreeMap::new();
    // Untagged spend is no project anyone can confirm a workload for.
    for u in usage
        .iter()
        .filter(|u| u.facts.workload == Workload::Unknown && !u.project.is_empty())
    {
        by_project.entry(&u.project).or_default().push(u);
    }
    by_project
        .into_iter()
        .filter_map(|(project, usages)| {
            let ec2: Vec<&&Usage> = usages.iter().filter(|u| u.is_ec2()).collect();
            if ec2.is_empty() {
                return Some((project.to_string(), from_sagemaker(&usages)?));
            }
            let mut hours: BTreeMap<NaiveDate, Decimal> = BTreeMap::new();
            for u in ec2 {
                for (day, h) in &u.daily_hours {
                    *hours.entry(*day).or_default() += *h;
                }
            }
            Some((project.to_string(), profile(&hours, window)?))
        })
        .collect()
}

/// Gives every usage its project's inference (or none).
pub fn attach(usage: &mut [Usage], inferred: &BTreeMap<String, Inferred>) {
    for u in usage {
        u.inferred = inferred.get(&u.project).cloned();
    }
}

/// What the daily instance-hours look like, if they look like anything.
pub fn profile(hours: &BTreeMap<NaiveDate, Decimal>, window: Window) -> Option<Inferred> {
    let days: Vec<(NaiveDate, Decimal)> = window
        .each_day()
        .map(|day| (day, hours.get(&day).copied().unwrap_or_default().max(Decimal::ZERO)))
        .collect();
    // Days before the project's first hour or after its last say nothing of its shape: a
    // fleet or a desk that started mid-window is read from the days it existed.
    let first = days.iter().position(|(_, h)| !h.is_zero())?;
    let last = days.iter().rposition(|(_, h)| !h.is_zero())?;
    let active = &days[first..=last];
    let most = active.iter().map(|(_, h)| *h).max()?;
    round_the_clock(active)
        .or_else(|| office_hours(active))
        .or_else(|| bursty(active, most))
}

fn percent_of(value: Decimal, percent: i64) -> Decimal {
    value * Decimal::from(percent) / Decimal::ONE_HUNDRED
}

/// Fewer days than this, and a profile is a guess.
fn confidence_for_days(days: usize) -> Confidence {
    match days {
        14.. => Confidence::High,
        7.. => Confidence::Medium,
        _ => Confidence::Low,
    }
}

/// Fewer days than this, and "around the clock" says nothing.
const ROUND_THE_CLOCK_DAYS: usize = 7;

fn round_the_clock(days: &[(NaiveDate, Decimal)]) -> Option<Inferred> {
    if days.len() < ROUND_THE_CLOCK_DAYS {
        return None;
    }
    let least = days.iter().map(|(_, h)| *h).min()?;
    let most = days.iter().map(|(_, h)| *h).max()?;
    if least < Decimal::from(ROUND_THE_CLOCK_HOURS) {
        return None;
    }
    let mean = days.iter().map(|(_, h)| *h).sum::<Decimal>() / Decimal::from(days.len());
    let band = percent_of(mean, FLAT_WITHIN_PERCENT);
    if most - mean > band || mean - least > band {
        return None;
    }
    Some(Inferred {
        workload: Workload::Serving,
        basis: format!(
            "inferred: ran around the clock on all {} days, flat ({}–{} instance-hours a day)",
            days.len(),
            number(least, 0),
            number(most, 0)
        ),
        confidence: confidence_for_days(days.len()),
    })
}

fn weekend(day: NaiveDate) -> bool {
    matches!(day.weekday(), Weekday::Sat | Weekday::Sun)
}

fn office_hours(days: &[(NaiveDate, Decimal)]) -> Option<Inferred> {
    // Never below one instance around the clock: a fleet that scales in at weekends, not
    // office work.
    if days.iter().all(|(_, h)| *h >= Decimal::from(ROUND_THE_CLOCK_HOURS)) {
        return None;
    }
    let average = |at_weekend: bool| {
        let picked: Vec<Decimal> = days
            .iter()
            .filter(|(d, _)| weekend(*d) == at_weekend)
            .map(|(_, h)| *h)
            .collect();
        (!picked.is_empty()).then(|| picked.iter().sum::<Decimal>() / Decimal::from(picked.len()))
    };
    let (weekends, weekdays) = (average(true)?, average(false)?);
    if weekdays <= Decimal::ZERO || weekends > percent_of(weekdays, WEEKEND_AT_MOST_PERCENT) {
        return None;
    }
    let (worked, all): (usize, usize) = days
        .iter()
        .filter(|(d, _)| !weekend(*d))
        .fold((0, 0), |(worked, all), (_, h)| {
            (worked + usize::from(!h.is_zero()), all + 1)
        });
    if Decimal::from(worked) < percent_of(Decimal::from(all), WEEKDAYS_WORKED_PERCENT) {
        return None;
    }
    let ratio = weekends / weekdays;
    let (basis, confidence) = if ratio <= percent_of(Decimal::ONE, WEEKEND_OFF_PERCENT) {
        ("off at weekends".to_string(), Confidence::High)
    } else {
        (
            format!("weekends at {} of weekdays", super::rules::percent(ratio)),
            Confidence::Medium,
        )
    };
    Some(Inferred {
        workload: Workload::Dev,
        basis: format!(
            "inferred: weekday work, {basis} ({} instance-hours a weekday on average)",
            number(weekdays, 0)
        ),
        confidence: confidence.min(confidence_for_days(days.len())),
    })
}

/// `days` runs from the first day with hours to the last: an empty day inside is a pause.
fn bursty(days: &[(NaiveDate, Decimal)], most: Decimal) -> Option<Inferred> {
    if !days.iter().any(|(_, h)| h.is_zero()) {
        return None;
    }
    let instances = (most / Decimal::from(24)).ceil().max(Decimal::ONE);
    let mut runs: Vec<Decimal> = Vec::new();
    let mut current: Option<Decimal> = None;
    for (_, h) in days {
        current = match (current, h.is_zero()) {
            (Some(run), true) => {
                runs.push(run);
                None
            }
            (None, true) => None,
            (run, false) => Some(run.unwrap_or_default() + *h),
        };
    }
    runs.extend(current);
    let lengths: Vec<Decimal> = runs.iter().map(|r| *r / instances).collect();
    let (shortest, longest) = (*lengths.iter().min()?, *lengths.iter().max()?);
    let workload = if longest >= Decimal::from(TRAINING_RUN_HOURS) {
        Workload::Training
    } else {
        Workload::Batch
    };
    let confidence = Confidence::Medium.min(confidence_for_days(days.len()));
    let (shortest, longest) = (number(shortest, 0), number(longest, 0));
    let lengths = if shortest == longest {
        shortest
    } else {
        format!("{shortest}–{longest}")
    };
    Some(Inferred {
        workload,
        basis: format!(
            "inferred: bursty runs of {lengths} h ({} runs in {} days, up to {} at once)",
            runs.len(),
            days.len(),
            if instances == Decimal::ONE {
                "1 instance".to_string()
            } else {
                format!("{} instances", number(instances, 0))
            }
        ),
        confidence,
    })
}

/// The workload of the SageMaker operation holding most of the project's GPU spend.
fn from_sagemaker(usages: &[&Usage]) -> Option<Inferred> {
    let mut by_use: BTreeMap<&'static str, Decimal> = BTreeMap::new();
    for u in usages {
        if let Some(key) = u.sagemaker.and_then(SageMakerUse::workload_key) {
            *by_use.entry(key).or_default() += u.spend;
        }
    }
    let total: Decimal = usages.iter().map(|u| u.spend).sum();
    let (key, spend) = by_use.into_iter().max_by_key(|(_, s)| *s)?;
    if total <= Decimal::ZERO || spend <= Decimal::ZERO {
        return None;
    }
    Some(Inferred {
        workload: Workload::parse(key)?,
        basis: format!(
            "inferred: its SageMaker {key} usage is {} of its GPU spend",
            super::rules::percent(spend / total)
        ),
        confidence: Confidence::Low,
    })
}

/// Raises or lowers each inference by what its GPUs' utilisation says, where it is known.
pub fn corroborate(inferred: &mut BTreeMap<String, Inferred>, utilisation: &[Utilisation]) {
    for u in utilisation {
        let Some(found) = inferred.get_mut(&u.project) else {
            continue;
        };
        let busy = u.mean >= Decimal::from(BUSY_MEAN_PERCENT);
        let agrees = match found.workload {
            Workload::Training | Workload::Batch => Some(busy),
            Workload::Dev => Some(u.mean < Decimal::from(DEV_MEAN_BELOW_PERCENT)),
            _ => None,
        };
        let Some(agrees) = agrees else { continue };
        found.confidence = match (agrees, found.confidence) {
            (true, Confidence::Low) => Confidence::Medium,
            (true, _) => Confidence::High,
            (false, Confidence::High) => Confidence::Medium,
            (false, _) => Confidence::Low,
        };
        found.basis.push_str(&format!(
            "; GPU mean {} where measured, which {}",
            crate::format::percent_value(u.mean),
            if agrees { "agrees" } else { "does not agree" }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(days: u64) -> Window {
        // 2026-11-02 is a Monday.
        let from = NaiveDate::from_ymd_opt(2026, 11, 2).expect("day");
        Window {
            from,
            to: from + chrono::Days::new(days),
        }
    }

    fn hours(window: Window, each: impl Fn(usize, NaiveDate) -> i64) -> BTreeMap<NaiveDate, Decimal> {
        window
            .each_day()
            .enumerate()
            .map(|(i, d)| (d, Decimal::from(each(i, d))))
            .filter(|(_, h)| !h.is_zero())
            .collect()
    }

    #[test]
    fn a_flat_fleet_around_the_clock_reads_as_serving() {
        let w = window(28);
        // Three instances, one of them scaling in and out: 60 to 72 hours a day.
        let found = profile(&hours(w, |i, _| 60 + (i as i64 % 3) * 6), w).expect("a profile");
        assert_eq!(found.workload, Workload::Serving);
        assert_eq!(found.confidence, Confidence::High);
        assert!(found.basis.contains("all 28 days"), "{}", found.basis);
        // One day with a gap under 23 hours is not around the clock.
        let gap = profile(&hours(w, |i, _| if i == 9 { 20 } else { 24 }), w);
        assert!(gap.is_none_or(|f| f.workload != Workload::Serving));
        // Around the clock but doubling on some days is not flat.
        let spiky = profile(&hours(w, |i, _| if i % 4 == 0 { 96 } else { 48 }), w);
        assert!(spiky.is_none(), "{spiky:?}");
    }

    #[test]
    fn weekday_work_reads_as_dev() {
        let w = window(28);
        let off = profile(&hours(w, |_, d| if weekend(d) { 0 } else { 9 }), w).expect("a profile");
        assert_eq!((off.workload, off.confidence), (Workload::Dev, Confidence::High));
        assert!(off.basis.contains("off at weekends"), "{}", off.basis);
        // Weekends at 40 % of weekdays: still office-shaped, less sure.
        let quiet = profile(&hours(w, |_, d| if weekend(d) { 4 } else { 10 }), w).expect("a profile");
        assert_eq!((quiet.workload, quiet.confidence), (Workload::Dev, Confidence::Medium));
        assert!(quiet.basis.contains("40.0%"), "{}", quiet.basis);
        // A fleet that never drops below one instance around the clock but scales in at
        // weekends is not office work.
        assert!(
            profile(&hours(w, |_, d| if weekend(d) { 40 } else { 100 }), w).is_none_or(|f| f.workload != Workload::Dev)
        );
        // Weekends at 60 %: not office hours, and never zero, so not bursty either.
        assert!(profile(&hours(w, |_, d| if weekend(d) { 60 } else { 100 }), w).is_none());
        // Mondays only, nothing at weekends: short runs, not office hours.
        let runs = profile(&hours(w, |i, _| if i % 7 == 0 { 9 } else { 0 }), w).expect("a profile");
        assert_eq!(runs.workload, Workload::Batch);
    }

    #[test]
    fn runs_that_start_and_stop_read_as_training_or_batch() {
        let w = window(28);
        // Two days on, five off, on 8 instances: 384 instance-hours a run, 48 h on each.
        let found = profile(&hours(w, |i, _| if i % 7 == 2 || i % 7 == 3 { 192 } else { 0 }), w).expect("a profile");
        assert_eq!(
            (found.workload, found.confidence),
            (Workload::Training, Confidence::Medium)
        );
        assert_eq!(
            found.basis, "inferred: bursty runs of 48 h (4 runs in 23 days, up to 8 instances at once)",
            "counted from the first run to the last"
        );
        // Short runs: batch.
        let batch = profile(&hours(w, |i, _| if i % 7 == 0 { 6 } else { 0 }), w).expect("a profile");
        assert_eq!(batch.workload, Workload::Batch);
        // One run alone: no pause between runs, and a day says nothing of around the clock.
        assert!(profile(&hours(w, |i, _| if i == 10 { 40 } else { 0 }), w).is_none());
        // A fleet that started mid-window and runs on is read from its 14 days: serving.
        let late = profile(&hours(w, |i, _| if i >= 14 { 72 } else { 0 }), w).expect("a profile");
        assert_eq!((late.workload, late.confidence), (Workload::Serving, Confidence::High));
        // A desk used from the third week on, weekdays only: dev, read from its 12 days.
        let desk = profile(&hours(w, |i, d| if i >= 14 && !weekend(d) { 9 } else { 0 }), w).expect("a profile");
        assert_eq!((desk.workload, desk.confidence), (Workload::Dev, Confidence::Medium));
        // Two runs in five days: a guess.
        let short = window(5);
        let guess = profile(&hours(short, |i, _| if i == 1 || i == 3 { 20 } else { 0 }), short).expect("a profile");
        assert_eq!(guess.confidence, Confidence::Low);
        assert!(profile(&BTreeMap::new(), w).is_none(), "no hours, no profile");
    }

    #[test]
    fn utilisation_moves_the_confidence_a_step() {
        let mut found = BTreeMap::from([(
            "sweeps".to_string(),
            Inferred {
                workload: Workload::Training,
                basis: "inferred: bursty".into(),
                confidence: Confidence::Low,
            },
        )]);
        let mut busy: Utilisation = serde_json::from_value(serde_json::json!({
            "project": "sweeps", "gpus": 8, "mean": "82", "p50": "85", "p95": "97", "active_mean": "90",
            "judged_by": "SM activity", "observed_gpu_hours": "100", "billed_gpu_hours": null, "coverage": null,
            "idle_gpu_hours": "0", "idle_gpus_now": 0, "busy_but_ineffective": 0, "memory_pressure": 0,
            "peak_memory_used_mib": null, "memory_total_mib": null, "band": "", "usd_per_gpu_hour": null
        }))
        .expect("a utilisation row");
        corroborate(&mut found, std::slice::from_ref(&busy));
        assert_eq!(found["sweeps"].confidence, Confidence::Medium);
        assert!(
            found["sweeps"]
                .basis
                .ends_with("GPU mean 82.0% where measured, which agrees")
        );
        busy.mean = Decimal::from(12);
        corroborate(&mut found, &[busy]);
        assert_eq!(found["sweeps"].confidence, Confidence::Low);
    }
}
