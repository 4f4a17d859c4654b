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
