//! Month-to-date sums that the page rollups store beside single days. A `to_date` row at a
//! day holds its key's sum from the first of that day's month through that day, and every
//! key with a day row in a month has one on each day from its first to the month's end.
//! So a sum over any range of days is a difference of two such rows per key, plus one per
//! further month the range reaches into ([`cover`]): the same handful of rows whatever
//! range a page asks for, where single days would be one row per day.

use chrono::{Datelike, Months, NaiveDate};

use crate::period::DateRange;

/// What a stored row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Its day alone.
    Day,
    /// The month's days through its day.
    ToDate,
}

impl Span {
    /// The `span` column's value.
    pub fn key(self) -> &'static str {
        match self {
            Span::Day => "day",
            Span::ToDate => "to_date",
        }
    }
}

/// One stored row of a sum, added (`sign` 1) or taken away (-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub span: Span,
    pub day: NaiveDate,
    pub sign: i32,
}

/// The `to_date` rows whose signed sum is exactly `range`: the last day of the range in
/// each month it reaches into (the month's end, but in its last month), less the day before
/// the range when that day is in the range's first month. An empty range has none.
pub fn cover(range: DateRange) -> Vec<Block> {
    let mut blocks = Vec::new();
    if range.days() == 0 {
        return blocks;
    }
    if range.from.day() != 1
        && let Some(before) = range.from.pred_opt()
    {
        blocks.push(to_date(before, -1));
    }
    let last = range.last_day();
    let mut month = month_start(range.from);
    loop {
        let end = next_month(month).pred_opt().unwrap_or(month).min(last);
        blocks.push(to_date(end, 1));
        if end >= last || next_month(month) == month {
            return blocks;
        }
        month = next_month(month);
    }
}

fn to_date(day: NaiveDate, sign: i32) -> Block {
    Block {
        span: Span::ToDate,
        day,
        sign,
    }
}

/// The blocks of several ranges as the binds of one query: `unnest` of [`Cover::sql`] gives
/// each block's span, day, `part` (the index of the range it sums) and `sign`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cover {
    pub spans: Vec<&'static str>,
    pub days: Vec<NaiveDate>,
    pub parts: Vec<i32>,
    pub signs: Vec<i32>,
}

impl Cover {
    pub fn of(ranges: &[DateRange]) -> Cover {
        let mut all = Cover::default();
        for (part, range) in (0_i32..).zip(ranges) {
            for block in cover(*range) {
                all.push(block, part);
            }
        }
        all
    }

    /// Every day of `range` as its own block: daily figures, as a chart draws them.
    pub fn each_day(range: DateRange) -> Cover {
        Cover::days_of(&[range])
    }

    /// Every day of each of `ranges` as its own block, `part` the range's index: the sums of
    /// [`Cover::of`] from tables that hold single days only.
    pub fn days_of(ranges: &[DateRange]) -> Cover {
        let mut all = Cover::default();
        for (part, range) in (0_i32..).zip(ranges) {
            for day in range.from.iter_days().take_while(|d| *d < range.to) {
                all.push(
                    Block {
                        span: Span::Day,
                        day,
                        sign: 1,
                    },
                    part,
                );
            }
        }
        all
    }

    fn push(&mut self, block: Block, part: i32) {
        self.spans.push(block.span.key());
        self.days.push(block.day);
        self.parts.push(part);
        self.signs.push(block.sign);
    }

    /// The join of the rows of `alias` (with `span` and `day` columns) to these blocks, bound
    /// as parameters `$n` to `$n+3`: a figure's sum is `sum(figure * b.sign)`, and the
    /// block's range index is `b.part`.
    pub fn sql(alias: &str, n: u8) -> String {
        format!(
            "join unnest(${n}::text[], ${}::date[], ${}::int4[], ${}::int4[]) as b(span, day, part, sign)
               on {alias}.span = b.span and {alias}.day = b.day",
            n + 1,
            n + 2,
            n + 3
        )
    }
}

/// The `to_date` rows that change when the days of `range` do: those from its first day to
/// the end of the month of its last.
pub fn touched(range: DateRange) -> DateRange {
    DateRange {
        from: range.from,
        to: next_month(month_start(range.last_day())),
    }
}

/// `range` cut at each month's start: the part of every month it holds, in order.
pub fn months_of(range: DateRange) -> Vec<DateRange> {
    let mut parts = Vec::new();
    let mut from = range.from;
    while from < range.to {
        let to = next_month(month_start(from)).min(range.to);
        if to <= from {
            break;
        }
        parts.push(DateRange { from, to });
        from = to;
    }
    parts
}

pub fn month_start(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

fn next_month(first: NaiveDate) -> NaiveDate {
    first.checked_add_months(Months::new(1)).unwrap_or(first)
}

/// Binds a [`Cover`]'s four arrays where [`Cover::sql`] placed them: after the query's
/// earlier parameters, so call it where the `$n` it was given falls in the chain.
pub trait BindCover<'q> {
    fn bind_cover(self, cover: &'q Cover) -> Self;
}

impl<'q, O> BindCover<'q> for sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    fn bind_cover(self, cover: &'q Cover) -> Self {
        self.bind(&cover.spans)
            .bind(&cover.days)
            .bind(&cover.parts)
            .bind(&cover.signs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Days;

    fn day(m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, m, d).expect("date")
    }

    fn range(from: NaiveDate, to: NaiveDate) -> DateRange {
        DateRange { from, to }
    }

    /// Each block's days with its sign, added up: every day of the range counts once and no
    /// other day at all.
    fn assert_sums_exactly(r: DateRange, blocks: &[Block]) {
        let mut count = std::collections::BTreeMap::<NaiveDate, i32>::new();
        for b in blocks {
            let first = match b.span {
                Span::Day => b.day,
                Span::ToDate => b.day.with_day(1).expect("first of month"),
            };
            for d in first.iter_days().take_while(|d| *d <= b.day) {
                *count.entry(d).or_default() += b.sign;
            }
        }
        count.retain(|_, n| *n != 0);
        let expected: std::collections::BTreeMap<NaiveDate, i32> =
            r.from.iter_days().take_while(|d| *d < r.to).map(|d| (d, 1)).collect();
        assert_eq!(count, expected, "{r:?} → {blocks:?}");
    }

    #[test]
    fn a_month_to_date_is_one_row_and_the_same_days_a_month_before_another() {
        let r = range(day(11, 1), day(11, 25));
        assert_eq!(cover(r), [to_date(day(11, 24), 1)]);
        let r = range(day(10, 1), day(10, 25));
        assert_eq!(cover(r), [to_date(day(10, 24), 1)]);
    }

    #[test]
    fn a_range_inside_a_month_is_its_last_day_less_the_day_before_it() {
        let r = range(day(7, 10), day(7, 21));
        assert_eq!(cover(r), [to_date(day(7, 9), -1), to_date(day(7, 20), 1)]);
        assert_sums_exactly(r, &cover(r));
    }

    #[test]
    fn a_range_across_months_adds_each_months_last_day() {
        // 10 July to 8 October: July less its first nine days, August, September, 1–8 October.
        let r = range(day(7, 10), day(10, 9));
        assert_eq!(
            cover(r),
            [
                to_date(day(7, 9), -1),
                to_date(day(7, 31), 1),
                to_date(day(8, 31), 1),
                to_date(day(9, 30), 1),
                to_date(day(10, 8), 1),
            ]
        );
    }

    #[test]
    fn any_range_in_two_years_sums_exactly() {
        let start = day(1, 1);
        for offset in (0..400).step_by(3) {
            for length in [0, 1, 2, 6, 7, 8, 13, 27, 28, 29, 30, 31, 45, 62, 95, 200, 365] {
                let from = start + Days::new(offset);
                let r = range(from, from + Days::new(length));
                assert_sums_exactly(r, &cover(r));
            }
        }
    }

    #[test]
    fn a_range_is_cut_at_each_months_start() {
        assert_eq!(
            months_of(range(day(1, 20), day(3, 10))),
            [
                range(day(1, 20), day(2, 1)),
                range(day(2, 1), day(3, 1)),
                range(day(3, 1), day(3, 10))
            ]
        );
        assert_eq!(months_of(range(day(5, 1), day(6, 1))), [range(day(5, 1), day(6, 1))]);
        assert_eq!(months_of(range(day(5, 3), day(5, 3))), []);
    }

    #[test]
    fn each_day_is_one_block_per_day() {
        let c = Cover::each_day(range(day(2, 27), day(3, 2)));
        assert_eq!(c.days, [day(2, 27), day(2, 28), day(3, 1)]);
        assert_eq!(c.spans, ["day"; 3]);
        assert_eq!(c.signs, [1; 3]);
    }

    #[test]
    fn a_changed_day_touches_the_rest_of_its_month_and_every_later_month_of_the_change() {
        assert_eq!(touched(range(day(9, 1), day(9, 2))), range(day(9, 1), day(10, 1)));
        assert_eq!(touched(range(day(10, 30), day(11, 3))), range(day(10, 30), day(12, 1)));
    }
}
