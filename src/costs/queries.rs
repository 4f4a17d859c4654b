//! Shared reads of the daily rollup: the newest day with data, the days a comparison may
//! use, Estimated days and the note charts add for them.

use chrono::NaiveDate;
use sqlx::PgPool;

use crate::period::DateRange;

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

/// Days of `range` whose figures AWS still calls Estimated, organisation-wide.
pub async fn estimated_days(conn: impl sqlx::PgExecutor<'_>, range: DateRange) -> Result<Vec<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar(
        "select distinct day from daily_project_costs where day >= $1 and day < $2 and estimated order by day",
    )
    .bind(range.from)
    .bind(range.to)
    .fetch_all(conn)
    .await
}

/// The sentence a chart's description adds for provisional days.
pub fn estimated_note(estimated: &[NaiveDate]) -> String {
    match (estimated.first(), estimated.last()) {
        (Some(first), Some(last)) if first == last => {
            format!(" {first} is Estimated: AWS may still restate it.")
        }
        (Some(first), Some(last)) => format!(" {first} to {last} are Estimated: AWS may still restate them."),
        _ => String::new(),
    }
}
