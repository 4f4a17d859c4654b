//! Blocks of days that the page rollups store beside single days: ISO weeks (Monday to
//! Sunday) and calendar months. A sum over any range of days reads the blocks that tile it
//! ([`cover`]): a few rows per key instead of one per day, whatever range a page asks for.

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

use crate::period::DateRange;

/// How many days a stored row covers. Its `day` is the block's first day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Day,
    /// Monday to Sunday; it may cross a month's end.
    Week,
    Month,
}

impl Span {
    /// The `span` column's value.
    pub fn key(self) -> &'static str {
        match self {
            Span::Day => "day",
            Span::Week => "week",
            Span::Month => "month",
        }
    }
}

/// One stored block: its span and first day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub span: Span,
    pub first: NaiveDate,
}

/// The blocks that tile `range` exactly, each day in one of them: the whole months inside
/// it, then whole weeks inside what is left on either side, then single days. An empty
/// range has none. At most 14 blocks on either side of the whole months (up to 6 days, 2
/// weeks and 6 days), so 42 for a range of 14 months.
pub fn cover(range: DateRange) -> Vec<Block> {
    let mut blocks = Vec::new();
    let first_month = month_start_on_or_after(range.from);
    let months_end = month_start(range.to);
    if first_month < months_end {
        weeks_and_days(range.from, first_month, &mut blocks);
        let mut month = first_month;
        while month < months_end {
            blocks.push(Block {
                span: Span::Month,
                first: month,
            });
            month = next_month(month);
        }
        weeks_and_days(months_end, range.to, &mut blocks);
    } else {
        weeks_and_days(range.from, range.to, &mut blocks);
    }
    blocks
}

/// The blocks of several ranges as the binds of one query: `unnest` of [`Cover::sql`] gives
/// each block's span, first day and `part`, the index of the range it tiles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cover {
    pub spans: Vec<&'static str>,
    pub days: Vec<NaiveDate>,
    pub parts: Vec<i32>,
}

impl Cover {
    pub fn of(ranges: &[DateRange]) -> Cover {
        let mut all = Cover::default();
        for (part, range) in (0_i32..).zip(ranges) {
            for block in cover(*range) {
                all.spans.push(block.span.key());
                all.days.push(block.first);
                all.parts.push(part);
            }
        }
        all
    }

    /// The join of the rows of `alias` (with `span` and `day` columns) to these blocks, bound
    /// as parameters `$n`, `$n+1` and `$n+2`: the block's range index is `b.part`.
    pub fn sql(alias: &str, n: u8) -> String {
        format!(
            "join unnest(${n}::text[], ${}::date[], ${}::int4[]) as b(span, day, part)
               on {alias}.span = b.span and {alias}.day = b.day",
            n + 1,
            n + 2
        )
    }
}

/// `[from, to)` as whole weeks where they fit and single days elsewhere.
fn weeks_and_days(from: NaiveDate, to: NaiveDate, blocks: &mut Vec<Block>) {
    let mut day = from;
    while day < to {
        let week_end = day.checked_add_days(Days::new(7));
        match week_end {
            Some(end) if day.weekday() == Weekday::Mon && end <= to => {
                blocks.push(Block {
                    span: Span::Week,
                    first: day,
                });
                day = end;
            }
            _ => {
                blocks.push(Block {
                    span: Span::Day,
                    first: day,
                });
                match day.succ_opt() {
                    Some(next) => day = next,
                    None => return,
                }
            }
        }
    }
}

/// The weeks and months whose blocks change when the days of `range` do: every one that
/// contains a day of it, as the range from the first block's first day to the last one's end.
pub fn touched(range: DateRange) -> Touched {
    let last = range.last_day();
    Touched {
        weeks: DateRange {
            from: week_start(range.from),
            to: week_start(last).checked_add_days(Days::new(7)).unwrap_or(range.to),
        },
        months: DateRange {
            from: month_start(range.from),
            to: next_month(month_start(last)),
        },
    }
}

/// What [`touched`] returns: the days of the weeks and of the months to rebuild.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touched {
    pub weeks: DateRange,
    pub months: DateRange,
}

fn week_start(day: NaiveDate) -> NaiveDate {
    day.checked_sub_days(Days::new(u64::from(day.weekday().num_days_from_monday())))
        .unwrap_or(day)
}

fn month_start(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

fn month_start_on_or_after(day: NaiveDate) -> NaiveDate {
    if day.day() == 1 {
        day
    } else {
        next_month(month_start(day))
    }
}

fn next_month(first: NaiveDate) -> NaiveDate {
    first.checked_add_months(Months::new(1)).unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, m, d).expect("date")
    }

    fn range(from: NaiveDate, to: NaiveDate) -> DateRange {
        DateRange { from, to }
    }

    /// Every day of the range is in exactly one block, and no block reaches outside it.
    fn assert_tiles(r: DateRange, blocks: &[Block]) {
        let mut covered = Vec::new();
        for b in blocks {
            let end = match b.span {
                Span::Day => b.first + Days::new(1),
                Span::Week => b.first + Days::new(7),
                Span::Month => next_month(b.first),
            };
            covered.extend(b.first.iter_days().take_while(|d| *d < end));
        }
        covered.sort();
        let expected: Vec<NaiveDate> = r.from.iter_days().take_while(|d| *d < r.to).collect();
        assert_eq!(covered, expected, "{r:?} → {blocks:?}");
    }

    #[test]
    fn a_month_to_date_is_its_whole_weeks_and_the_days_around_them() {
        // 2026-11-01 is a Sunday; the 2nd, 9th and 16th are Mondays.
        let r = range(day(11, 1), day(11, 25));
        let blocks = cover(r);
        let spans: Vec<(Span, u32)> = blocks.iter().map(|b| (b.span, b.first.day())).collect();
        assert_eq!(
            spans,
            [
                (Span::Day, 1),
                (Span::Week, 2),
                (Span::Week, 9),
                (Span::Week, 16),
                (Span::Day, 23),
                (Span::Day, 24)
            ]
        );
        assert_tiles(r, &blocks);
    }

    #[test]
    fn whole_months_are_one_block_each_and_the_edges_weeks_and_days() {
        let r = range(day(7, 10), day(10, 9));
        let blocks = cover(r);
        let months: Vec<u32> = blocks
            .iter()
            .filter(|b| b.span == Span::Month)
            .map(|b| b.first.month())
            .collect();
        assert_eq!(months, [8, 9]);
        assert_tiles(r, &blocks);
        // 10–12 July, 2 weeks, 27–31 July; August; September; 1–8 October.
        assert_eq!(blocks.len(), 3 + 2 + 5 + 2 + 8, "{blocks:?}");
    }

    #[test]
    fn any_range_in_a_year_is_tiled_exactly() {
        let start = day(1, 1);
        for offset in (0..400).step_by(7) {
            for length in [0, 1, 6, 7, 8, 13, 27, 31, 45, 62, 95, 200, 365] {
                let from = start + Days::new(offset);
                let r = range(from, from + Days::new(length));
                assert_tiles(r, &cover(r));
            }
        }
    }

    #[test]
    fn a_changed_day_touches_its_week_and_its_month() {
        // Tuesday 2026-09-01: its week began in August.
        let t = touched(range(day(9, 1), day(9, 2)));
        assert_eq!(t.weeks, range(day(8, 31), day(9, 7)));
        assert_eq!(t.months, range(day(9, 1), day(10, 1)));
        let t = touched(range(day(10, 30), day(11, 3)));
        assert_eq!(t.weeks, range(day(10, 26), day(11, 9)));
        assert_eq!(t.months, range(day(10, 1), day(12, 1)));
    }
}
