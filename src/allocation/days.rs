//! Sets of days as the allocation's writers handle them: runs of consecutive days, and the
//! days one table has that another lacks.

use chrono::NaiveDate;
use sqlx::PgConnection;

use crate::period::DateRange;

/// Sorted days as half-open ranges of consecutive days.
pub fn runs(days: &[NaiveDate]) -> Vec<DateRange> {
    let mut runs: Vec<DateRange> = Vec::new();
    for day in days {
        let next = *day + chrono::Days::new(1);
        match runs.last_mut() {
            Some(run) if run.to == *day => run.to = next,
            _ => runs.push(DateRange { from: *day, to: next }),
        }
    }
    runs
}

/// The days table `stored` has and table `lacking` does not, in order. Both have an index
/// leading on `day`; the distinct days are found by one probe each (a recursive skip scan),
/// so this check, made at every start, reads a few hundred index entries, not every row.
pub async fn days_lacking(conn: &mut PgConnection, stored: &str, lacking: &str) -> Result<Vec<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "with recursive d(day) as (
             select min(day) from {stored}
             union all
             select (select min(s.day) from {stored} s where s.day > d.day) from d where d.day is not null)
         select d.day from d
         where d.day is not null and not exists (select 1 from {lacking} l where l.day = d.day)
         order by 1"
    ))
    .fetch_all(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_days_make_one_run_and_a_gap_starts_another() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 10, d).expect("date");
        let range = |from, to| DateRange {
            from: day(from),
            to: day(to),
        };
        assert_eq!(runs(&[]), []);
        assert_eq!(
            runs(&[day(1), day(2), day(3), day(5), day(9), day(10)]),
            [range(1, 4), range(5, 6), range(9, 11)]
        );
    }
}
