//! The anomaly rule on one daily series (docs/ANOMALIES.md): a robust baseline from the days
//! before, and whether a day stands out from it. Pure and exact: every figure is a
//! `Decimal`, and a day's verdict reads only the days before it, so a day judged again after
//! AWS restates it gets the same baseline.

use chrono::NaiveDate;
use rust_decimal::Decimal;

/// Which way a day may depart from its baseline and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Rises only (the default): a quiet day is good news.
    Up,
    /// Rises and drops, as a scope asks with `direction: both`.
    Both,
}

/// The thresholds of one scope (`anomalies:` in the YAML), with the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thresholds {
    /// How many MADs above (or below) the baseline a day must be.
    pub mads: Decimal,
    /// The least departure as a share of the baseline (0.30: 30 %).
    pub share: Decimal,
    /// The least departure in USD a day.
    pub dollars: Decimal,
    /// A series with no spend before: the first day's spend from which it counts.
    pub new_series: Decimal,
    pub direction: Direction,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            mads: Decimal::new(35, 1),
            share: Decimal::new(30, 2),
            dollars: Decimal::from(100),
            new_series: Decimal::from(500),
            direction: Direction::Up,
        }
    }
}

/// Days of history a baseline reads at most: four weeks.
pub const WEEKS_DAYS: usize = 28;
/// The plain baseline's window.
const RECENT_DAYS: usize = 14;
/// The fewest days before a day for a baseline at all: a week.
const LEAST_DAYS: usize = 7;
/// How far a weekday's median must stand from the four weeks' for a weekly shape: in MADs
/// of the values around their weekday's median, and as a share of the four weeks' median.
pub const WEEKLY_MADS: Decimal = Decimal::from_parts(35, 0, 0, false, 1);
pub const WEEKLY_SHARE: Decimal = Decimal::from_parts(30, 0, 0, false, 2);
/// The percentile rule's window.
pub const PERCENTILE_DAYS: usize = 90;

/// What a day is compared with: the median of the same weekday over the last four weeks when
/// the series has a weekly shape, else of the last 14 days, with the median absolute
/// deviation (MAD) around it as the spread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    pub median: Decimal,
    pub mad: Decimal,
    /// Whether the same-weekday median was used.
    pub weekly: bool,
    /// The 95th percentile of the last 90 days (fewer where the series is younger).
    pub p95: Decimal,
}

/// Why a day counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Above the baseline by more than the MADs, the share and the dollars.
    Spike,
    /// Above the series' own 95th percentile of the last 90 days by more than the dollar
    /// floor, and above the baseline by the share and dollar floors: a volatile series' MAD is
    /// wide, but a day beyond all but its top 5 % still counts.
    Percentile,
    /// Below the baseline by as much (with `direction: both` only).
    Drop,
    /// No spend in the four weeks before, and at least the new-series floor on its first day.
    New,
}

impl Reason {
    pub fn key(self) -> &'static str {
        match self {
            Reason::Spike => "spike",
            Reason::Percentile => "percentile",
            Reason::Drop => "drop",
            Reason::New => "new",
        }
    }
}

/// A day that counts: its spend, its baseline and the difference (negative for a drop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub day: NaiveDate,
    pub spend: Decimal,
    pub baseline: Decimal,
    pub excess: Decimal,
    pub reason: Reason,
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[Decimal]) -> Option<Decimal> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / Decimal::TWO),
    }
}

/// The median absolute deviation of `values` around `centre`.
fn mad(values: &[Decimal], centre: Decimal) -> Decimal {
    let deviations: Vec<Decimal> = values.iter().map(|v| (*v - centre).abs()).collect();
    median(&deviations).unwrap_or_default()
}

/// The nearest-rank 95th percentile of `values` (0 when empty), as the commitment rule takes
/// its 10th.
fn p95(values: &[Decimal]) -> Decimal {
    crate::savings::rules::commitment::percentile(&mut values.to_vec(), Decimal::new(95, 2)).unwrap_or_default()
}

/// The baseline of the day after `history`, which holds the series' days before it, oldest
/// first, one value a day with no gaps (a day without spend is 0). `None` with less than a
/// week of history.
///
/// A series has a weekly shape when, over the last four weeks, three of some weekday's four
/// days stand apart from the four weeks' median, on the same side, by more than
/// [`WEEKLY_MADS`] MADs of the values around their own weekday's median and by more than
/// [`WEEKLY_SHARE`] of it. A weekend dip then
/// sets the weekend's baseline, and a Monday is compared with Mondays. (A MAD around the
/// plain median would not see it: two days in seven are a minority, which a median ignores.)
pub fn baseline(history: &[Decimal]) -> Option<Baseline> {
    if history.len() < LEAST_DAYS {
        return None;
    }
    let last = |n: usize| &history[history.len().saturating_sub(n)..];
    let percentile = p95(last(PERCENTILE_DAYS));
    if history.len() >= WEEKS_DAYS {
        let weeks = last(WEEKS_DAYS);
        // weeks[i] is `WEEKS_DAYS - i` days before `day`: same weekday when that is a multiple of 7.
        let weekday_of = |i: usize| (WEEKS_DAYS - i) % 7;
        let days_of = |w: usize| -> Vec<Decimal> {
            (0..WEEKS_DAYS)
                .filter(|i| weekday_of(*i) == w)
                .map(|i| weeks[i])
                .collect()
        };
        let medians: Vec<Decimal> = (0..7).map(|w| median(&days_of(w)).unwrap_or_default()).collect();
        let residuals: Vec<Decimal> = (0..WEEKS_DAYS).map(|i| weeks[i] - medians[weekday_of(i)]).collect();
        let plain = median(weeks).unwrap_or_default();
        let weekly_spread = mad(&residuals, Decimal::ZERO);
        // Three of its four days on the same side, each far enough: a level that changed
        // within the four weeks moves every weekday alike, and moves half of one at most.
        let far = (WEEKLY_MADS * weekly_spread).max(WEEKLY_SHARE * plain.abs());
        let apart = |w: usize| {
            let side = medians[w] > plain;
            days_of(w)
                .iter()
                .filter(|v| (**v > plain) == side && (**v - plain).abs() > far)
                .count()
                >= 3
        };
        if (0..7).any(apart) {
            return Some(Baseline {
                median: medians[0],
                mad: weekly_spread,
                weekly: true,
                p95: percentile,
            });
        }
    }
    let recent = last(RECENT_DAYS);
    let centre = median(recent).unwrap_or_default();
    Some(Baseline {
        median: centre,
        mad: mad(recent, centre),
        weekly: false,
        p95: percentile,
    })
}

/// Whether `spend` on `day`, after `history` (as [`baseline`] takes it), counts.
pub fn judge(history: &[Decimal], day: NaiveDate, spend: Decimal, rule: &Thresholds) -> Option<Finding> {
    let found = |baseline: Decimal, reason| Finding {
        day,
        spend,
        baseline,
        excess: spend - baseline,
        reason,
    };
    let recent = &history[history.len().saturating_sub(WEEKS_DAYS)..];
    if recent.iter().all(Decimal::is_zero) {
        // Nothing in four weeks: a new series (or one back from the dead), judged on its own.
        return (spend >= rule.new_series && spend > Decimal::ZERO).then(|| found(Decimal::ZERO, Reason::New));
    }
    // The series' life: from its first day with spend. A younger series than a week has no
    // baseline (the zeros before it began are not its history), only the new-series rule.
    let life = &history[history.iter().position(|v| !v.is_zero()).unwrap_or(history.len())..];
    let base = baseline(life)?;
    let excess = spend - base.median;
    let beyond = |by: Decimal| by > rule.mads * base.mad && by > rule.share * base.median.abs() && by > rule.dollars;
    if beyond(excess) {
        return Some(found(base.median, Reason::Spike));
    }
    // In place of the MADs only: a trending series sets a new high by a few dollars often.
    let floors = excess > rule.share * base.median.abs() && excess > rule.dollars;
    if life.len() >= WEEKS_DAYS && spend - base.p95 > rule.dollars && floors {
        return Some(found(base.median, Reason::Percentile));
    }
    if rule.direction == Direction::Both && beyond(-excess) {
        return Some(found(base.median, Reason::Drop));
    }
    None
}

/// Every day of `series` (consecutive days from `first`, oldest first) from its `judged`-th
/// on that counts, each judged on all the days before it.
pub fn scan(first: NaiveDate, series: &[Decimal], judged: usize, rule: &Thresholds) -> Vec<Finding> {
    (judged..series.len())
        .filter_map(|i| {
            let day = first + chrono::Days::new(u64::try_from(i).unwrap_or_default());
            judge(&series[..i], day, series[i], rule)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    fn start() -> NaiveDate {
        // A Monday.
        NaiveDate::from_ymd_opt(2026, 9, 7).expect("date")
    }

    /// `days` values of `level` with a deterministic noise of up to ± `noise` (whole cents).
    fn noisy(days: usize, level: Decimal, noise: Decimal, seed: u64) -> Vec<Decimal> {
        let mut state = seed;
        (0..days)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let cents = i64::try_from((state >> 33) % 2001).expect("small") - 1000;
                level + noise * Decimal::new(cents, 3)
            })
            .collect()
    }

    /// Weekdays at `weekday`, weekends at `weekend`, from a Monday, each with noise.
    fn weekly(days: usize, weekday: &str, weekend: &str) -> Vec<Decimal> {
        let on = noisy(days, d(weekday), d("40"), 7);
        let off = noisy(days, d(weekend), d("40"), 11);
        (0..days).map(|i| if i % 7 >= 5 { off[i] } else { on[i] }).collect()
    }

    #[test]
    fn median_mad_and_percentile_are_exact() {
        assert_eq!(median(&[d("3"), d("1"), d("2")]), Some(d("2")));
        assert_eq!(median(&[d("4"), d("1"), d("2"), d("3")]), Some(d("2.5")));
        assert_eq!(median(&[]), None);
        assert_eq!(mad(&[d("1"), d("2"), d("3"), d("4"), d("100")], d("3")), d("1"));
        let hundred: Vec<Decimal> = (1..=100).map(Decimal::from).collect();
        assert_eq!(p95(&hundred), d("95"));
        assert_eq!(p95(&[d("7")]), d("7"));
    }

    #[test]
    fn a_one_day_tripling_of_a_2000_dollar_project_is_caught_that_day() {
        let mut series = noisy(40, d("2000"), d("50"), 3);
        series.push(d("6000"));
        let found = scan(start(), &series, 28, &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].day, start() + chrono::Days::new(40));
        assert_eq!(found[0].reason, Reason::Spike);
        assert!(found[0].excess > d("3900") && found[0].excess < d("4100"), "{found:?}");
    }

    #[test]
    fn a_step_change_is_caught_once_and_then_absorbed_into_the_baseline() {
        let mut series = noisy(30, d("1000"), d("20"), 5);
        series.extend(noisy(30, d("2000"), d("20"), 9));
        let found = scan(start(), &series, 28, &Thresholds::default());
        let days: Vec<i64> = found.iter().map(|f| (f.day - start()).num_days()).collect();
        // From the step's first day, one run of days, ended by the second week at the new level.
        assert_eq!(days.first(), Some(&30), "{days:?}");
        assert!(days.windows(2).all(|w| w[1] == w[0] + 1), "one run: {days:?}");
        assert!(*days.last().expect("some") < 30 + 14, "absorbed: {days:?}");
    }

    #[test]
    fn a_50_dollar_blip_on_a_100_dollar_project_is_under_the_dollar_floor() {
        let mut series = noisy(30, d("100"), d("2"), 13);
        series.push(d("150"));
        assert_eq!(scan(start(), &series, 28, &Thresholds::default()), []);
    }

    #[test]
    fn a_new_series_counts_from_its_first_day_when_it_spends_the_floor() {
        let rule = Thresholds::default();
        let found = judge(&[], start(), d("500"), &rule).expect("caught");
        assert_eq!(
            (found.reason, found.baseline, found.excess),
            (Reason::New, d("0"), d("500"))
        );
        assert_eq!(judge(&[Decimal::ZERO; 40], start(), d("499.99"), &rule), None);
        assert!(judge(&[Decimal::ZERO; 40], start(), d("800"), &rule).is_some());
    }

    #[test]
    fn a_weekend_dip_is_no_drop_where_the_series_has_a_weekly_shape() {
        let rule = Thresholds {
            direction: Direction::Both,
            ..Thresholds::default()
        };
        let series = weekly(8 * 7, "2000", "600");
        assert!(baseline(&series[..35]).expect("baseline").weekly);
        assert_eq!(scan(start(), &series, 28, &rule), []);
        // The same Saturday in a series without that shape is a drop.
        let mut flat = noisy(33, d("2000"), d("40"), 17);
        flat.push(d("600"));
        let found = scan(start(), &flat, 28, &rule);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].reason, Reason::Drop);
        // Drops count only when asked.
        assert_eq!(scan(start(), &flat, 28, &Thresholds::default()), []);
    }

    #[test]
    fn a_weekday_spike_in_a_weekly_series_is_measured_against_its_own_weekday() {
        // Five weeks and five days from a Monday: the next day is a Saturday, at 1,600: below
        // every weekday, but far above a Saturday.
        let mut series = weekly(5 * 7 + 5, "2000", "600");
        series.push(d("1600"));
        let found = scan(start(), &series, 28, &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].baseline < d("700"), "{found:?}");
    }

    #[test]
    fn a_young_series_under_the_new_series_floor_stays_quiet_for_its_first_week() {
        // $300 a day from its first day: under the $500 floor, and no baseline for a week.
        let mut series = vec![Decimal::ZERO; 40];
        series.extend(vec![d("300"); 7]);
        assert_eq!(scan(start(), &series, 40, &Thresholds::default()), []);
        // From its eighth day it has one, and a tripling counts.
        series.push(d("900"));
        let found = scan(start(), &series, 40, &Thresholds::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].baseline, found[0].excess), (d("300"), d("600")));
    }

    #[test]
    fn the_spread_decides_on_a_noisy_series() {
        // ±$600 of noise on $2,000 (a MAD near $300): a day $700 up passes the share and
        // dollar floors but is within 3.5 MADs; a day beyond them counts. (Three weeks of
        // history: the percentile rule, which would see it above the 95th, needs four.)
        let series = noisy(21, d("2000"), d("600"), 23);
        let base = baseline(&series).expect("baseline");
        let within = base.median + d("700");
        assert!(d("700") < Decimal::new(35, 1) * base.mad, "{base:?}");
        assert_eq!(judge(&series, start(), within, &Thresholds::default()), None);
        let beyond = base.median + Decimal::new(35, 1) * base.mad + d("1");
        assert_eq!(
            judge(&series, start(), beyond, &Thresholds::default()).map(|f| f.reason),
            Some(Reason::Spike)
        );
    }

    #[test]
    fn a_volatile_series_biggest_day_counts_by_its_percentile() {
        // Days alternate between $1,000 and $3,000: the median's MAD is $1,000, so $4,600 is
        // within 3.5 MADs, but it is $1,600 above every day of the 90 before.
        let series: Vec<Decimal> = (0..60)
            .map(|i| if i % 2 == 0 { d("1000") } else { d("3000") })
            .collect();
        let found = judge(&series, start(), d("4600"), &Thresholds::default()).expect("caught");
        assert_eq!(found.reason, Reason::Percentile);
        // $50 above the highest day is not enough (the dollar floor).
        assert_eq!(judge(&series, start(), d("3050"), &Thresholds::default()), None);
        // Nor is a growing series' new high, $140 above its 95th percentile but 11 % above its
        // baseline (the share floor).
        let growing: Vec<Decimal> = (0..60).map(|i| Decimal::from(1000 + 10 * i)).collect();
        assert_eq!(judge(&growing, start(), d("1700"), &Thresholds::default()), None);
    }
}
