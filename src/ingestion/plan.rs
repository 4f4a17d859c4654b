//! Which days a run fetches: everything once, then only what AWS may still change.

use chrono::{Datelike, Months, NaiveDate};
use sqlx::PgConnection;

use super::IngestError;
use crate::config::IngestSettings;
use crate::period::{DateRange, days_before, next_day};

/// The first day Cost Explorer still has daily data for: 13 months plus the current month.
pub fn earliest_available(today: NaiveDate) -> NaiveDate {
    let month_start = today.with_day(1).unwrap_or(today);
    month_start.checked_sub_months(Months::new(13)).unwrap_or(month_start)
}

/// An explicit `--from/--to` window cut at yesterday: Cost Explorer has barely begun today,
/// and a stored today would sit stale (incremental runs stop before today). An error when
/// nothing before today is left.
pub fn clip_to_complete_days(window: DateRange, today: NaiveDate) -> Result<DateRange, IngestError> {
    if window.from >= today {
        return Err(IngestError::rejected(format!(
            "the window starts on {}, but only days before today ({today}, UTC) have figures; \
             ingest up to --to {today} (exclusive) at the latest",
            window.from
        )));
    }
    Ok(DateRange {
        from: window.from,
        to: window.to.min(today),
    })
}

/// What is already stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    pub first: Option<NaiveDate>,
    pub last: Option<NaiveDate>,
    pub first_estimated: Option<NaiveDate>,
    /// The first day stored without its linked accounts (before the upgrade that added them)
    /// that Cost Explorer still keeps on `today`.
    pub first_without_accounts: Option<NaiveDate>,
}

pub async fn coverage(conn: &mut PgConnection, today: NaiveDate) -> Result<Coverage, sqlx::Error> {
    let (first, last, first_estimated, first_without_accounts) = sqlx::query_as(
        "select min(day), max(day), min(day) filter (where estimated),
                min(day) filter (where not with_accounts and day >= $1)
         from ingested_days",
    )
    .bind(earliest_available(today))
    .fetch_one(conn)
    .await?;
    Ok(Coverage {
        first,
        last,
        first_estimated,
        first_without_accounts,
    })
}

/// The window a run without `--from/--to` fetches, ending before `today` (today's figures
/// are incomplete). `None` when there is nothing to fetch.
///
/// First run: from BURNRATE_BACKFILL_SINCE, or as far back as Cost Explorer allows. Later
/// runs: from the earliest of the first Estimated day, the restatement lookback before the
/// last stored day, the first day stored without its accounts (once, after the upgrade that
/// added them), and any earlier BURNRATE_BACKFILL_SINCE not yet covered.
pub fn incremental_window(stored: Coverage, settings: &IngestSettings, today: NaiveDate) -> Option<DateRange> {
    let earliest = earliest_available(today);
    let from = match (stored.first, stored.last) {
        (Some(first), Some(last)) => {
            let lookback = days_before(next_day(last), u64::from(settings.restate_days));
            let mut from = stored.first_estimated.map_or(lookback, |day| day.min(lookback));
            if let Some(day) = stored.first_without_accounts {
                from = from.min(day);
            }
            if let Some(since) = settings.backfill_since.filter(|since| *since < first) {
                from = from.min(since);
            }
            // Days AWS no longer keeps cannot be re-fetched; asking would fail the run.
            from.max(earliest).min(next_day(last))
        }
        _ => settings.backfill_since.unwrap_or(earliest),
    };
    (from < today).then_some(DateRange { from, to: today })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date")
    }

    #[test]
    fn cost_explorer_keeps_thirteen_months_plus_the_current_one() {
        assert_eq!(earliest_available(d("2026-11-22")), d("2025-10-01"));
        assert_eq!(earliest_available(d("2026-01-01")), d("2024-12-01"));
    }

    #[test]
    fn the_first_run_backfills_and_later_runs_refetch_only_what_can_change() {
        let settings = IngestSettings::default();
        let today = d("2026-11-22");
        let empty = Coverage::default();
        assert_eq!(
            incremental_window(empty, &settings, today),
            Some(DateRange {
                from: d("2025-10-01"),
                to: today
            })
        );
        let since = IngestSettings {
            backfill_since: Some(d("2026-06-01")),
            ..settings.clone()
        };
        assert_eq!(
            incremental_window(empty, &since, today).map(|r| r.from),
            Some(d("2026-06-01"))
        );

        // Settled through yesterday: the three restatement days only.
        let settled = Coverage {
            first: Some(d("2025-10-01")),
            last: Some(d("2026-11-21")),
            first_estimated: None,
            first_without_accounts: None,
        };
        assert_eq!(
            incremental_window(settled, &settings, today),
            Some(DateRange {
                from: d("2026-11-19"),
                to: today
            })
        );
        // An Estimated day further back widens the window to it.
        let estimated = Coverage {
            first_estimated: Some(d("2026-11-10")),
            ..settled
        };
        assert_eq!(
            incremental_window(estimated, &settings, today).map(|r| r.from),
            Some(d("2026-11-10"))
        );
        // Days since the last run are fetched even with no lookback.
        let no_lookback = IngestSettings {
            restate_days: 0,
            ..settings.clone()
        };
        let behind = Coverage {
            last: Some(d("2026-11-15")),
            ..settled
        };
        assert_eq!(
            incremental_window(behind, &no_lookback, today).map(|r| r.from),
            Some(d("2026-11-16"))
        );
        assert_eq!(incremental_window(settled, &no_lookback, today), None);
        // An earlier BURNRATE_BACKFILL_SINCE fills the gap.
        let earlier = IngestSettings {
            backfill_since: Some(d("2025-12-01")),
            ..settings.clone()
        };
        let late_start = Coverage {
            first: Some(d("2026-03-01")),
            ..settled
        };
        assert_eq!(
            incremental_window(late_start, &earlier, today).map(|r| r.from),
            Some(d("2025-12-01"))
        );
        // After the upgrade that added linked accounts, the first run fetches again every
        // day stored without them that Cost Explorer still keeps (`coverage` leaves out
        // older ones), once: later runs find them all with accounts.
        let before_accounts = Coverage {
            first_without_accounts: Some(d("2025-11-01")),
            ..settled
        };
        assert_eq!(
            incremental_window(before_accounts, &settings, today).map(|r| r.from),
            Some(d("2025-11-01"))
        );
    }
}
