//! Ingestion settings: the schedule, the tag keys, the backfill and restatement windows.

use std::time::Duration;

use super::{ConfigError, parse_duration};

/// What and when to fetch from Cost Explorer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSettings {
    /// `BURNRATE_INGEST_INTERVAL`; `None` (`off`) disables the schedule inside `serve`.
    pub interval: Option<Duration>,
    /// `BURNRATE_BACKFILL_SINCE`; `None`: as far back as Cost Explorer keeps daily data.
    pub backfill_since: Option<chrono::NaiveDate>,
    /// `BURNRATE_RESTATE_DAYS`: settled days re-fetched on every run, because AWS restates them.
    pub restate_days: u32,
    /// Cost-allocation tag keys (`BURNRATE_TAG_PROJECT`, `BURNRATE_TAG_USER`).
    pub tag_project: String,
    pub tag_user: String,
    /// `BURNRATE_COMMITMENTS` (`on`, the default, or `off`): read owned Savings Plans and
    /// Reserved Instances from Cost Explorer after ingestion, at most every 20 hours.
    pub read_commitments: bool,
}

impl Default for IngestSettings {
    fn default() -> Self {
        IngestSettings {
            interval: Some(Duration::from_secs(6 * 3600)),
            backfill_since: None,
            restate_days: 3,
            tag_project: "project".into(),
            tag_user: "user".into(),
            read_commitments: true,
        }
    }
}

pub(super) fn ingest_settings(get: &impl Fn(&str) -> Option<String>) -> Result<IngestSettings, ConfigError> {
    let defaults = IngestSettings::default();
    let interval = match get("BURNRATE_INGEST_INTERVAL").as_deref() {
        None => defaults.interval,
        Some("off") => None,
        Some(text) => Some(parse_duration(text).filter(|d| d.as_secs() >= 60).ok_or(ConfigError {
            variable: "BURNRATE_INGEST_INTERVAL",
            value: Some(text.to_string()),
            expected: "a duration of at least 1m such as 30m, 6h or 1d, or off",
        })?),
    };
    let backfill_since = match get("BURNRATE_BACKFILL_SINCE") {
        None => None,
        Some(text) => Some(
            chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d").map_err(|_| ConfigError {
                variable: "BURNRATE_BACKFILL_SINCE",
                value: Some(text),
                expected: "a date YYYY-MM-DD",
            })?,
        ),
    };
    let restate_days = match get("BURNRATE_RESTATE_DAYS") {
        None => defaults.restate_days,
        Some(text) => text.parse().ok().filter(|n| *n <= 90).ok_or(ConfigError {
            variable: "BURNRATE_RESTATE_DAYS",
            value: Some(text),
            expected: "a whole number of days from 0 to 90",
        })?,
    };
    let tag = |variable: &'static str, default: String| match get(variable) {
        None => Ok(default),
        // AWS tag keys are 1-128 characters; `$` would make Cost Explorer's group keys ambiguous.
        Some(text) if text.chars().count() <= 128 && !text.contains('$') => Ok(text),
        Some(text) => Err(ConfigError {
            variable,
            value: Some(text),
            expected: "a cost-allocation tag key of 1-128 characters without '$'",
        }),
    };
    let read_commitments = match get("BURNRATE_COMMITMENTS").as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err(ConfigError {
                variable: "BURNRATE_COMMITMENTS",
                value: Some(other.to_string()),
                expected: "on or off",
            });
        }
    };
    Ok(IngestSettings {
        read_commitments,
        interval,
        backfill_since,
        restate_days,
        tag_project: tag("BURNRATE_TAG_PROJECT", defaults.tag_project)?,
        tag_user: tag("BURNRATE_TAG_USER", defaults.tag_user)?,
    })
}
