//! Settings of GPU savings: where utilisation comes from (Prometheus, CloudWatch), idle
//! alerts, and the weekly digest.

use std::time::Duration;

use super::ConfigError;

/// `BURNRATE_PROMETHEUS_URL` and `BURNRATE_PROMETHEUS_PROJECT_LABEL`.
#[derive(Clone, PartialEq, Eq)]
pub struct PrometheusSettings {
    /// The server's base URL, without a trailing slash (`http://prometheus:9090`). It may
    /// carry basic-auth credentials, so it is never printed.
    pub url: String,
    /// The series label naming the project; series without it are grouped by `Hostname`.
    pub project_label: String,
    /// One query_range request, from sending it to its last byte.
    pub timeout: Duration,
}

impl std::fmt::Debug for PrometheusSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusSettings")
            .field("project_label", &self.project_label)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// `BURNRATE_CLOUDWATCH=on`: utilisation from CloudWatch in these regions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudWatchSettings {
    /// `BURNRATE_AWS_REGIONS`; empty means the SDK's own region.
    pub regions: Vec<String>,
    /// The resource tag naming the project: the ingestion's cost-allocation tag key.
    pub project_tag: String,
    /// One whole read, every region and call: ten times `BURNRATE_AWS_TIMEOUT`.
    pub timeout: Duration,
}

/// Savings settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavingsSettings {
    pub prometheus: Option<PrometheusSettings>,
    pub cloudwatch: Option<CloudWatchSettings>,
    /// `BURNRATE_IDLE_ALERT_HOURS`: a GPU or endpoint idle this long emails its team's owners.
    pub idle_alert_hours: u32,
    /// `BURNRATE_SAVINGS_DIGEST`: `weekly` (Mondays) or `off`.
    pub weekly_digest: bool,
}

/// An AWS region name: `us-east-1`, `eu-central-2`, `us-gov-west-1`.
pub fn is_region(name: &str) -> bool {
    let parts: Vec<&str> = name.split('-').collect();
    parts.len() >= 3
        && parts[0].len() == 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
        && parts.last().is_some_and(|p| p.chars().all(|c| c.is_ascii_digit()))
}

/// `BURNRATE_AWS_REGIONS`: region names such as `us-east-1` or `us-gov-west-1`.
pub fn regions(get: &impl Fn(&str) -> Option<String>) -> Result<Vec<String>, ConfigError> {
    let Some(text) = get("BURNRATE_AWS_REGIONS") else {
        return Ok(Vec::new());
    };
    let regions: Vec<String> = text
        .split(',')
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    if regions.is_empty() || !regions.iter().all(|r| is_region(r)) {
        return Err(ConfigError {
            variable: "BURNRATE_AWS_REGIONS",
            value: Some(text),
            expected: "AWS region names separated by commas, e.g. us-east-1,eu-west-1",
        });
    }
    Ok(regions)
}

pub(super) fn read(
    get: &impl Fn(&str) -> Option<String>,
    timeout: Duration,
    project_tag: &str,
) -> Result<SavingsSettings, ConfigError> {
    let label = get("BURNRATE_PROMETHEUS_PROJECT_LABEL").unwrap_or_else(|| "project".into());
    let label_ok = label
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !label_ok {
        return Err(ConfigError {
            variable: "BURNRATE_PROMETHEUS_PROJECT_LABEL",
            value: Some(label),
            expected: "a Prometheus label name such as project or team_project",
        });
    }
    let prometheus = match get("BURNRATE_PROMETHEUS_URL") {
        None => None,
        Some(url) => {
            let parsed = url::Url::parse(&url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"));
            if parsed.is_none_or(|u| u.host_str().is_none()) {
                return Err(ConfigError {
                    variable: "BURNRATE_PROMETHEUS_URL",
                    value: None,
                    expected: "http:// or https:// and the Prometheus server, e.g. http://prometheus:9090",
                });
            }
            Some(PrometheusSettings {
                url: url.trim_end_matches('/').to_string(),
                project_label: label,
                timeout,
            })
        }
    };
    let weekly_digest = match get("BURNRATE_SAVINGS_DIGEST").as_deref() {
        None | Some("weekly") => true,
        Some("off") => false,
        Some(other) => {
            return Err(ConfigError {
                variable: "BURNRATE_SAVINGS_DIGEST",
                value: Some(other.to_string()),
                expected: "weekly or off",
            });
        }
    };
    let cloudwatch = match get("BURNRATE_CLOUDWATCH").as_deref() {
        None | Some("off") => None,
        Some("on") => Some(CloudWatchSettings {
            regions: regions(get)?,
            project_tag: project_tag.to_string(),
            timeout: timeout * 10,
        }),
        Some(other) => {
            return Err(ConfigError {
                variable: "BURNRATE_CLOUDWATCH",
                value: Some(other.to_string()),
                expected: "on or off",
            });
        }
    };
    let idle_alert_hours = match get("BURNRATE_IDLE_ALERT_HOURS") {
        None => 4,
        Some(text) => text.parse().ok().filter(|h| (1..=720).contains(h)).ok_or(ConfigError {
            variable: "BURNRATE_IDLE_ALERT_HOURS",
            value: Some(text),
            expected: "whole hours from 1 to 720",
        })?,
    };
    Ok(SavingsSettings {
        prometheus,
        cloudwatch,
        idle_alert_hours,
        weekly_digest,
    })
}
