//! Shared reads of the daily totals: the newest day with data, the days a comparison may
//! use, the days not yet final and the note charts add for them.

use chrono::NaiveDate;
use sqlx::PgPool;

use super::settlement::SETTLED;
use crate::period::{DateRange, OpenDays};

/// The newest day with any cost data; `None` before anything is loaded.
pub async fn latest_day(pool: &PgPool) -> Result<Option<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar("select max(day) from daily_project_costs")
        .fetch_one(pool)
        .await
}

/// The days of `range` that have data (through `latest_day`), and as many days just before
/// them: what "change against the period before" compares. A lagging ingestion leaves a
/// period's last days empty, and comparing them with full days would show a fall that is
/// not there.
pub fn days_with_data(range: DateRange, latest_day: Option<NaiveDate>) -> Compared {
    let current = range.cut_at(latest_day.map_or(range.from, crate::period::next_day));
    Compared {
        current,
        previous: current.days_before(current.days()),
    }
}

/// The days a period's change compares: those with data, and as many just before them.
pub struct Compared {
    pub current: DateRange,
    pub previous: DateRange,
}

/// The days of `range` that are provisional or on an open bill (`costs::settlement`).
pub async fn open_days(conn: impl sqlx::PgExecutor<'_>, range: DateRange) -> Result<OpenDays, sqlx::Error> {
    // A skip scan over the partial index of estimated rows: one probe per day, where a
    // `distinct` read every estimated row of the range (a month's open bill at 10M facts:
    // 76,000 rows, 70 ms, on every page's first view after a data change).
    let days: Vec<(NaiveDate, bool)> = sqlx::query_as(&format!(
        "with recursive open(day) as (
             select min(day) from daily_project_costs where estimated and day >= $1 and day < $2
             union all
             select (select min(c.day) from daily_project_costs c where c.estimated and c.day > open.day and c.day < $2)
             from open where open.day is not null
         )
         select day, {SETTLED} from (select day, true as estimated from open where day is not null) d order by day"
    ))
    .bind(range.from)
    .bind(range.to)
    .fetch_all(conn)
    .await?;
    let (bill_open, provisional): (Vec<_>, Vec<_>) = days.into_iter().partition(|(_, settled)| *settled);
    let days = |list: Vec<(NaiveDate, bool)>| list.into_iter().map(|(day, _)| day).collect();
    Ok(OpenDays {
        provisional: days(provisional),
        bill_open: days(bill_open),
    })
}

/// The sentence a chart's description adds for provisional days.
pub fn provisional_note(provisional: &[NaiveDate]) -> String {
    match (provisional.first(), provisional.last()) {
        (Some(first), Some(last)) if first == last => {
            format!(" {first} is provisional: AWS may still restate it.")
        }
        (Some(first), Some(last)) => format!(" {first} to {last} are provisional: AWS may still restate them."),
        _ => String::new(),
    }
}
