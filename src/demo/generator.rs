//! Deterministic daily cost lines for the demo organisation, aggregated to the same grains
//! ingestion stores. Every figure is an exact decimal derived from integers, so the
//! grains agree to the cent and the same day always gets the same numbers.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate, Weekday};
use rust_decimal::Decimal;

use super::org::{DemoProject, Workload};
use crate::costs::store::{CostBatch, CostRow};

/// Daily spend of a weight-1 project at the end of the demo period, in dollars.
const DOLLARS_PER_WEIGHT: i64 = 400;
/// The untagged share of spend is about this weight, against ~94 for all tagged projects.
pub const UNTAGGED_WEIGHT: u32 = 8;
/// How much of a day's final spend Cost Explorer shows while AWS is still publishing it, in
/// per mille, by the day's age: `until` (yesterday) shows 55 %, the day before 80 %, then
/// 95 %. Older days are final. A later load restates them to their full value, as AWS does.
const PARTIAL_SHARE: [i64; 3] = [550, 800, 950];
/// The days the demo's AWS may still restate: its restatement window.
pub const PARTIAL_DAYS: u32 = PARTIAL_SHARE.len() as u32;
/// The day of the month by which AWS has closed the previous month's bill; until then its
/// days stay Estimated, with the whole open month's.
pub const BILL_CLOSES_ON: u32 = 5;
/// Days over which spend grows from 60 % to 100 % of its level; then it stays flat. Fixed,
/// so a day's final figures do not depend on how far the demo runs.
const GROWTH_DAYS: i64 = 426;

const EC2: &str = "Amazon Elastic Compute Cloud - Compute";
pub const EC2_OTHER: &str = "EC2 - Other";
const S3: &str = "Amazon Simple Storage Service";
const SAGEMAKER: &str = "Amazon SageMaker";
const BEDROCK: &str = "Amazon Bedrock";

/// One line of a project's bill.
struct Line {
    usage_type: &'static str,
    service: &'static str,
    /// Price of one usage unit in ten-thousandths of a dollar (hours, GB-months, 1k tokens).
    unit_price_bp: i64,
    /// Share of the project's daily spend, per mille.
    share: i64,
    /// Which of the project's users tags it; `None` is spend without a user tag.
    user_slot: Option<usize>,
    quiet_at_weekends: bool,
    /// Reserved capacity: a flat daily amortized cost, billed (unblended) on the 1st.
    reserved: bool,
    /// Instances that run around the clock: exactly 24 hours each, every day, whatever the
    /// project's weight (an always-on box bills the same on a Sunday).
    always_on: Option<i64>,
    /// Runs only two days in every seven (a weekly sweep); nothing bills in between.
    weekly_runs: bool,
}

const fn line(
    usage_type: &'static str,
    service: &'static str,
    unit_price_bp: i64,
    share: i64,
    user_slot: Option<usize>,
) -> Line {
    Line {
        usage_type,
        service,
        unit_price_bp,
        share,
        user_slot,
        quiet_at_weekends: false,
        reserved: false,
        always_on: None,
        weekly_runs: false,
    }
}

const fn always_on(mut l: Line, instances: i64) -> Line {
    l.always_on = Some(instances);
    l
}

const fn weekdays(mut l: Line) -> Line {
    l.quiet_at_weekends = true;
    l
}

const fn weekly_runs(mut l: Line) -> Line {
    l.weekly_runs = true;
    l
}

/// Whether a weekly sweep runs on `day`: two consecutive days of every seven.
fn sweep_runs_on(day: NaiveDate) -> bool {
    day.num_days_from_ce().rem_euclid(7) < 2
}

const fn reserved(mut l: Line) -> Line {
    l.reserved = true;
    l
}

// Unit prices are the catalogue's us-east-1 prices (spot about 60–70 % below on-demand).
const TRAINING: [Line; 4] = [
    line("USE1-BoxUsage:p4d.24xlarge", EC2, 219_576, 450, Some(0)),
    line("USE1-SpotUsage:p5.48xlarge", EC2, 220_224, 350, Some(1)),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 80, None),
    line("USE1-TimedStorage-ByteHrs", S3, 230, 120, None),
];
const SERVING: [Line; 4] = [
    line("USE1-BoxUsage:g5.xlarge", EC2, 10_060, 400, Some(0)),
    line("USE1-BoxUsage:g6.xlarge", EC2, 8_048, 300, Some(1)),
    reserved(line("USE1-HeavyUsage:g5.12xlarge", EC2, 35_730, 200, Some(0))),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 100, None),
];
const RESEARCH: [Line; 4] = [
    weekdays(line("USE1-SpotUsage:g5.12xlarge", EC2, 22_900, 350, Some(0))),
    weekdays(line("USE1-SpotUsage:g6.12xlarge", EC2, 18_300, 250, Some(1))),
    weekdays(line("USE1-Notebk:ml.g5.2xlarge", SAGEMAKER, 15_150, 250, Some(2))),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 150, None),
];
const OVERSIZED_SERVING: [Line; 4] = [
    line("USE1-BoxUsage:g6.12xlarge", EC2, 46_016, 550, Some(0)),
    line("USE1-Host:ml.g5.xlarge", SAGEMAKER, 14_080, 250, Some(1)),
    line("USE1-BoxUsage:g5.xlarge", EC2, 10_060, 100, Some(0)),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 100, None),
];
const RESEARCH_ALWAYS_ON: [Line; 5] = [
    weekdays(line("USE1-SpotUsage:g5.12xlarge", EC2, 22_900, 300, Some(0))),
    weekdays(line("USE1-SpotUsage:p4d.24xlarge", EC2, 65_873, 250, Some(1))),
    always_on(line("USE1-Notebk:ml.g5.12xlarge", SAGEMAKER, 70_900, 0, Some(2)), 2),
    weekdays(line("USE1-BoxUsage:g6.12xlarge", EC2, 46_016, 150, Some(0))),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 150, None),
];
const SWEEPS: [Line; 2] = [
    weekly_runs(line("USE1-BoxUsage:g5.12xlarge", EC2, 56_720, 800, Some(0))),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 200, None),
];
const MANAGED_MODELS: [Line; 3] = [
    weekdays(line("USE1-Claude-3.5-Sonnet-output-tokens", BEDROCK, 150, 600, Some(0))),
    line("USE1-BoxUsage:g6.xlarge", EC2, 8_048, 300, Some(1)),
    line("USE1-TimedStorage-ByteHrs", S3, 230, 100, None),
];
const DATA: [Line; 4] = [
    weekdays(line("USE1-BoxUsage:m5.4xlarge", EC2, 7_680, 400, Some(0))),
    line("USE1-SpotUsage:r5.8xlarge", EC2, 6_100, 250, Some(1)),
    line("USE1-TimedStorage-ByteHrs", S3, 230, 300, None),
    line("USE1-EBS:VolumeUsage.gp3", EC2_OTHER, 800, 50, None),
];
/// Spend nobody tagged: networking, snapshots, a stray GPU box, and an AMD g4ad box the GPU catalogue lacks.
const UNTAGGED: [Line; 4] = [
    line("USE1-NatGateway-Hours", EC2_OTHER, 450, 300, None),
    line("USE1-EBS:SnapshotUsage", EC2_OTHER, 500, 250, None),
    line("USE1-BoxUsage:g5.xlarge", EC2, 10_060, 400, Some(0)),
    line("USE1-BoxUsage:g4ad.xlarge", EC2, 3_785, 50, None),
];

fn lines(workload: Workload) -> &'static [Line] {
    match workload {
        Workload::Training => &TRAINING,
        Workload::Serving => &SERVING,
        Workload::Research => &RESEARCH,
        Workload::ManagedModels => &MANAGED_MODELS,
        Workload::Data => &DATA,
        Workload::OversizedServing => &OVERSIZED_SERVING,
        Workload::ResearchAlwaysOn => &RESEARCH_ALWAYS_ON,
        Workload::Sweeps => &SWEEPS,
    }
}

/// A project as it bills: its tag value, users and lines. The untagged pseudo-project has
/// the empty name.
pub struct BillingProject {
    pub name: String,
    /// The linked account its spend is in.
    pub account: &'static str,
    pub users: Vec<String>,
    pub weight: u32,
    pub starts: NaiveDate,
    lines: &'static [Line],
    /// (first day, last day, multiplier): a runaway job.
    spike: Option<(NaiveDate, NaiveDate, i64)>,
}

impl BillingProject {
    pub fn new(
        demo: &DemoProject,
        name: String,
        users: Vec<String>,
        starts: NaiveDate,
        first_day: NaiveDate,
    ) -> BillingProject {
        // Counted from the demo's first day, so a day's figures never depend on how far the
        // demo runs: both fall in the last 90 days of a standard 13-month demo.
        let after = |days: u64| first_day + chrono::Days::new(days);
        let spike = match demo.name {
            "llm-pretrain" => Some((after(372), after(375), 4)),
            "batch-inference" => Some((after(330), after(332), 6)),
            _ => None,
        };
        BillingProject {
            name,
            account: super::org::account_of(demo.team),
            users,
            weight: demo.weight,
            starts,
            lines: lines(demo.workload),
            spike,
        }
    }

    pub fn untagged(users: Vec<String>, starts: NaiveDate, scale: u32) -> BillingProject {
        BillingProject {
            name: String::new(),
            account: super::org::ACCOUNTS[0].0,
            users,
            weight: UNTAGGED_WEIGHT * scale,
            starts,
            lines: &UNTAGGED,
            spike: None,
        }
    }
}

/// The demo period: `from` is the first day of the month 13 months before `until`'s.
pub struct Timeline {
    pub from: NaiveDate,
    pub until: NaiveDate,
}

impl Timeline {
    /// Spend grows from 60% to 100% over [`GROWTH_DAYS`] from the first day, in per mille.
    fn growth(&self, day: NaiveDate) -> i64 {
        600 + 400 * (day - self.from).num_days().clamp(0, GROWTH_DAYS) / GROWTH_DAYS
    }

    /// The share of `day`'s final figures Cost Explorer would show on the day after
    /// `until`, in per mille, and whether it would flag them Estimated: every day of the
    /// open bill is, whether or not its figures still move.
    pub fn reported_share(&self, day: NaiveDate) -> (i64, bool) {
        let share = match usize::try_from((self.until - day).num_days()) {
            Ok(age) if age < PARTIAL_SHARE.len() => PARTIAL_SHARE[age],
            _ => 1000,
        };
        (share, bill_open(day, self.until + chrono::Days::new(1)))
    }
}

/// Whether Cost Explorer, asked on `today`, flags `day` Estimated: every day of the current
/// month, and the previous month's until its bill closes on the [`BILL_CLOSES_ON`]th.
pub fn bill_open(day: NaiveDate, today: NaiveDate) -> bool {
    let this_month = today.with_day(1).unwrap_or(today);
    let open_from = match this_month.checked_sub_months(chrono::Months::new(1)) {
        Some(previous) if today.day() <= BILL_CLOSES_ON => previous,
        _ => this_month,
    };
    day >= open_from
}

/// Every project's cost lines for `day`, aggregated to the four stored grains.
pub fn day_batch(projects: &[BillingProject], timeline: &Timeline, day: NaiveDate, batch: &mut CostBatch) {
    type Key = (String, String);
    let mut by_user: BTreeMap<Key, Sums> = BTreeMap::new();
    let mut by_usage: BTreeMap<Key, Sums> = BTreeMap::new();
    let mut by_service: BTreeMap<Key, Sums> = BTreeMap::new();
    let mut by_record: BTreeMap<Key, Sums> = BTreeMap::new();
    // Credits, refunds and tax by project and user tag, as their filtered queries answer.
    let mut by_user_of_type: BTreeMap<&str, BTreeMap<Key, Sums>> = BTreeMap::new();
    // Spend on GPU usage types by project and user tag, as its filtered query answers.
    let mut by_user_gpu: BTreeMap<Key, Sums> = BTreeMap::new();
    let gpu = |usage_type: &str| crate::usage_type::parse(usage_type).gpu.is_some();
    let weekend = matches!(day.weekday(), Weekday::Sat | Weekday::Sun);
    let (reported, estimated) = timeline.reported_share(day);
    let reported = |amount: Decimal| (amount * Decimal::from(reported) / Decimal::ONE_THOUSAND).round_dp(8);

    for project in projects.iter().filter(|p| day >= p.starts) {
        for (index, line) in project.lines.iter().enumerate() {
            if line.weekly_runs && !sweep_runs_on(day) {
                continue;
            }
            let base =
                Decimal::from(DOLLARS_PER_WEIGHT * i64::from(project.weight) * line.share) / Decimal::ONE_THOUSAND;
            let (unblended, amortized) = if let Some(instances) = line.always_on {
                let cost = Decimal::new(line.unit_price_bp * 24 * instances, 4);
                (cost, cost)
            } else if line.reserved {
                reserved_costs(base, day)
            } else {
                let spike = match project.spike {
                    Some((first, last, factor)) if day >= first && day <= last => factor,
                    _ => 1,
                };
                let weekday_factor = if weekend && line.quiet_at_weekends { 450 } else { 1000 };
                let noise = 850 + (mix(&project.name, index as u64, day) % 300) as i64;
                let permille = timeline.growth(day) * weekday_factor * noise * spike;
                let cost = (base * Decimal::from(permille) / Decimal::from(1_000_000_000i64)).round_dp(8);
                (cost, cost)
            };
            let (unblended, amortized) = (reported(unblended), reported(amortized));
            let quantity = (amortized / Decimal::new(line.unit_price_bp, 4)).round_dp(6);
            let user = line
                .user_slot
                .and_then(|slot| project.users.get(slot % project.users.len().max(1)))
                .cloned()
                .unwrap_or_default();
            let sums = Sums {
                unblended,
                amortized,
                quantity,
            };
            // Reserved capacity bills its fee up front on the 1st; its hours are discounted usage.
            let record_type = match (line.reserved, unblended > amortized) {
                (true, true) => "RIFee",
                (true, false) => "DiscountedUsage",
                (false, _) => "Usage",
            };
            if gpu(line.usage_type) {
                add(&mut by_user_gpu, (project.name.clone(), user.clone()), sums);
            }
            add(&mut by_user, (project.name.clone(), user), sums);
            add(&mut by_usage, (project.name.clone(), line.usage_type.to_string()), sums);
            add(&mut by_service, (project.name.clone(), line.service.to_string()), sums);
            add(&mut by_record, (project.name.clone(), record_type.to_string()), sums);
        }
    }
    // What a real bill adds to usage, in every grain alike.
    let mut extra =
        |project: &BillingProject, record_type: &'static str, (usage_type, service): (&str, &str), amount: Decimal| {
            let sums = Sums {
                unblended: reported(amount),
                amortized: reported(amount),
                quantity: Decimal::ZERO,
            };
            add(&mut by_user, (project.name.clone(), String::new()), sums);
            add(&mut by_usage, (project.name.clone(), usage_type.to_string()), sums);
            add(&mut by_service, (project.name.clone(), service.to_string()), sums);
            add(&mut by_record, (project.name.clone(), record_type.to_string()), sums);
            let of_type = by_user_of_type.entry(record_type).or_default();
            add(of_type, (project.name.clone(), String::new()), sums);
            if gpu(usage_type) {
                add(&mut by_user_gpu, (project.name.clone(), String::new()), sums);
            }
        };
    for project in projects.iter().filter(|p| day >= p.starts) {
        let Some(first) = project.lines.first() else { continue };
        let line = (first.usage_type, first.service);
        // About what the project spends in a day.
        let daily = Decimal::from(DOLLARS_PER_WEIGHT * i64::from(project.weight));
        if project.name.is_empty() {
            // Sales tax, billed without a project tag; and a refund for a NAT gateway outage.
            extra(
                project,
                "Tax",
                ("NoUsageType", "Tax"),
                (daily * Decimal::new(1, 2)).round_dp(2),
            );
            if day.day() == 15 {
                extra(project, "Refund", line, -(daily * Decimal::new(5, 2)).round_dp(2));
            }
        } else if day.day() == 1 && (project.name == "llm-pretrain" || project.name.starts_with("llm-pretrain-")) {
            // A monthly promotional credit on the pre-training project: half a day's spend.
            extra(project, "Credit", line, -(daily / Decimal::TWO).round_dp(2));
        }
    }
    let accounts: BTreeMap<&str, &str> = projects.iter().map(|p| (p.name.as_str(), p.account)).collect();
    let mut of_type = |record_type: &str| by_user_of_type.remove(record_type).unwrap_or_default();
    let (credits, refunds, tax) = (of_type("Credit"), of_type("Refund"), of_type("Tax"));
    for (map, rows) in [
        (by_user, &mut batch.by_user),
        (by_usage, &mut batch.by_usage_type),
        (by_service, &mut batch.by_service),
        (by_record, &mut batch.by_record_type),
        (credits, &mut batch.by_user_credit),
        (refunds, &mut batch.by_user_refund),
        (tax, &mut batch.by_user_tax),
        (by_user_gpu, &mut batch.by_user_gpu),
    ] {
        rows.extend(map.into_iter().map(|((project, dimension), s)| CostRow {
            day,
            account: accounts.get(project.as_str()).copied().unwrap_or_default().to_string(),
            project,
            dimension,
            unblended: s.unblended,
            amortized: s.amortized,
            usage_quantity: s.quantity,
            estimated,
        }));
    }
}

#[derive(Clone, Copy)]
struct Sums {
    unblended: Decimal,
    amortized: Decimal,
    quantity: Decimal,
}

fn add(map: &mut BTreeMap<(String, String), Sums>, key: (String, String), s: Sums) {
    let entry = map.entry(key).or_insert(Sums {
        unblended: Decimal::ZERO,
        amortized: Decimal::ZERO,
        quantity: Decimal::ZERO,
    });
    entry.unblended += s.unblended;
    entry.amortized += s.amortized;
    entry.quantity += s.quantity;
}

/// Reserved capacity costs `daily` every day amortized, and the whole month up front on the 1st.
fn reserved_costs(daily: Decimal, day: NaiveDate) -> (Decimal, Decimal) {
    let unblended = if day.day() == 1 {
        daily * Decimal::from(days_in_month(day))
    } else {
        Decimal::ZERO
    };
    (unblended, daily)
}

fn days_in_month(day: NaiveDate) -> u32 {
    let first = day.with_day(1).unwrap_or(day);
    let next = first.checked_add_months(chrono::Months::new(1)).unwrap_or(first);
    (next - first).num_days() as u32
}

/// A stable 64-bit hash of (project, line, day): the demo's only source of variation.
fn mix(project: &str, line: u64, day: NaiveDate) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in project.bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= line.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (day.num_days_from_ce() as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    // splitmix64 finaliser
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::store::Grain;
    use crate::demo::org::PROJECTS;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
    }

    fn sample() -> (Vec<BillingProject>, Timeline) {
        let timeline = Timeline {
            from: day(2025, 1, 1),
            until: day(2026, 2, 10),
        };
        let projects = PROJECTS
            .iter()
            .map(|p| {
                BillingProject::new(
                    p,
                    p.name.to_string(),
                    vec!["a".into(), "b".into(), "c".into()],
                    timeline.from,
                    timeline.from,
                )
            })
            .chain([BillingProject::untagged(vec!["stray".into()], timeline.from, 1)])
            .collect();
        (projects, timeline)
    }

    fn total(rows: &[CostRow]) -> (Decimal, Decimal) {
        rows.iter().fold((Decimal::ZERO, Decimal::ZERO), |(u, a), r| {
            (u + r.unblended, a + r.amortized)
        })
    }

    #[test]
    fn every_grain_sums_to_the_same_daily_total() {
        let (projects, timeline) = sample();
        for d in [day(2025, 3, 1), day(2025, 7, 6), day(2025, 7, 15), day(2026, 2, 10)] {
            let mut batch = CostBatch::default();
            day_batch(&projects, &timeline, d, &mut batch);
            let user = total(batch.rows(Grain::ByUser));
            assert_eq!(user, total(batch.rows(Grain::ByUsageType)));
            assert_eq!(user, total(batch.rows(Grain::ByService)));
            assert_eq!(user, total(batch.rows(Grain::ByRecordType)));
            assert!(user.0 > Decimal::ZERO);
        }
    }

    #[test]
    fn the_bill_carries_credits_refunds_tax_and_reserved_fees_as_record_types() {
        let (projects, timeline) = sample();
        let record = |d: NaiveDate, project: &str, record_type: &str| {
            let mut batch = CostBatch::default();
            day_batch(&projects, &timeline, d, &mut batch);
            batch
                .by_record_type
                .iter()
                .find(|r| r.project == project && r.dimension == record_type)
                .map(|r| r.unblended)
        };
        // llm-pretrain weighs 10: $4,000 a day, so its credit on the 1st is $2,000.
        assert_eq!(
            record(day(2025, 7, 1), "llm-pretrain", "Credit"),
            Some(Decimal::new(-200000, 2))
        );
        assert_eq!(record(day(2025, 7, 2), "llm-pretrain", "Credit"), None);
        // Untagged spend weighs 8 ($3,200 a day): 1 % tax daily, a 5 % refund on the 15th.
        assert_eq!(record(day(2025, 7, 6), "", "Tax"), Some(Decimal::new(3200, 2)));
        assert_eq!(record(day(2025, 7, 15), "", "Refund"), Some(Decimal::new(-16000, 2)));
        let usage = record(day(2025, 7, 6), "llm-pretrain", "Usage");
        assert!(usage.is_some_and(|u| u > Decimal::ZERO));
    }

    #[test]
    fn the_same_day_always_gets_the_same_figures() {
        let (projects, timeline) = sample();
        let mut first = CostBatch::default();
        let mut second = CostBatch::default();
        day_batch(&projects, &timeline, day(2025, 9, 9), &mut first);
        day_batch(&projects, &timeline, day(2025, 9, 9), &mut second);
        assert_eq!(first.by_usage_type, second.by_usage_type);
    }

    #[test]
    fn reserved_capacity_is_billed_on_the_first_and_amortized_daily() {
        assert_eq!(
            reserved_costs(Decimal::from(10), day(2026, 2, 1)),
            (Decimal::from(280), Decimal::from(10))
        );
        assert_eq!(
            reserved_costs(Decimal::from(10), day(2026, 2, 2)),
            (Decimal::ZERO, Decimal::from(10))
        );
    }

    #[test]
    fn untagged_spend_is_about_eight_percent() {
        let (projects, timeline) = sample();
        let mut batch = CostBatch::default();
        day_batch(&projects, &timeline, day(2026, 2, 4), &mut batch);
        let (all, _) = total(&batch.by_service);
        let (untagged, _) = total(
            &batch
                .by_service
                .iter()
                .filter(|r| r.project.is_empty())
                .cloned()
                .collect::<Vec<_>>(),
        );
        let share = untagged / all * Decimal::ONE_HUNDRED;
        assert!(
            share > Decimal::from(6) && share < Decimal::from(11),
            "untagged share {share}%"
        );
    }

    #[test]
    fn the_last_three_days_are_below_their_final_figures_until_restated() {
        let (projects, timeline) = sample();
        let until = timeline.until;
        let later = Timeline {
            from: timeline.from,
            until: until + chrono::Days::new(5),
        };
        for (age, share) in [(0, 550), (1, 800), (2, 950)] {
            let d = until - chrono::Days::new(age);
            let (mut early, mut settled) = (CostBatch::default(), CostBatch::default());
            day_batch(&projects, &timeline, d, &mut early);
            day_batch(&projects, &later, d, &mut settled);
            let (shown, last) = (total(&early.by_service).0, total(&settled.by_service).0);
            assert!(shown < last, "{d}: {shown} < {last}");
            let ratio = (shown / last * Decimal::ONE_THOUSAND).round();
            assert_eq!(ratio, Decimal::from(share), "{d}");
        }
        // The fourth day back is final and the same whoever asks later, though its bill is open.
        let d = until - chrono::Days::new(3);
        let (mut now, mut later_batch) = (CostBatch::default(), CostBatch::default());
        day_batch(&projects, &timeline, d, &mut now);
        day_batch(&projects, &later, d, &mut later_batch);
        assert!(now.by_user.iter().all(|r| r.estimated), "February's bill is open");
        assert_eq!(now.by_usage_type, later_batch.by_usage_type);
    }

    #[test]
    fn every_day_of_the_open_bill_is_estimated_and_last_month_until_the_5th() {
        // As Cost Explorer flags them: the whole current month from the 1st...
        assert!(bill_open(day(2026, 2, 1), day(2026, 2, 11)));
        assert!(!bill_open(day(2026, 1, 31), day(2026, 2, 11)));
        // ...and the previous month until its bill closes a few days into the next.
        assert!(bill_open(day(2026, 2, 1), day(2026, 3, 3)));
        assert!(bill_open(day(2026, 2, 1), day(2026, 3, 5)));
        assert!(!bill_open(day(2026, 1, 31), day(2026, 3, 3)));
        assert!(!bill_open(day(2026, 2, 28), day(2026, 3, 6)));
        assert!(bill_open(day(2026, 3, 1), day(2026, 3, 6)));
        // January's bill, asked on 2 January, reaches back into December.
        assert!(bill_open(day(2025, 12, 1), day(2026, 1, 2)));
    }
}
