//! Settings of GPU savings: where DCGM utilisation comes from, and the weekly digest.

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

/// Savings settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavingsSettings {
    pub prometheus: Option<PrometheusSettings>,
    /// `BURNRATE_SAVINGS_DIGEST`: `weekly` (Mondays) or `off`.
    pub weekly_digest: bool,
}

pub(super) fn read(get: &impl Fn(&str) -> Option<String>, timeout: Duration) -> Result<SavingsSettings, ConfigError> {
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
    Ok(SavingsSettings {
        prometheus,
        weekly_digest,
    })
}
