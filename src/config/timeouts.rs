//! How long burnrate waits for anything outside the process, each with a default and an
//! environment variable. No wait is unbounded: an AWS endpoint or SMTP server that hangs,
//! or a query stuck behind a lock, fails with a clear error instead of holding the run,
//! the request or the shutdown forever.

use std::time::Duration;

use super::{ConfigError, parse_duration};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// `BURNRATE_AWS_CONNECT_TIMEOUT`: opening a connection to an AWS endpoint.
    pub aws_connect: Duration,
    /// `BURNRATE_AWS_TIMEOUT`: one AWS request, from sending it to its last byte.
    pub aws_operation: Duration,
    /// `BURNRATE_SMTP_TIMEOUT`: each step of a conversation with the SMTP server.
    pub smtp: Duration,
    /// `BURNRATE_DB_STATEMENT_TIMEOUT`: one SQL statement of a page or server function.
    /// Ingestion, the demo and benchmarks lift it for their bulk writes.
    pub db_statement: Duration,
    /// `BURNRATE_DB_LOCK_TIMEOUT`: waiting for a row or table lock, everywhere.
    pub db_lock: Duration,
    /// `BURNRATE_REQUEST_TIMEOUT`: one HTTP request to the dashboard; then 408.
    pub request: Duration,
    /// `BURNRATE_SHUTDOWN_TIMEOUT`: draining open requests after SIGINT/SIGTERM; then the
    /// rest are cut and the private cluster is stopped.
    pub shutdown: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            aws_connect: Duration::from_secs(5),
            aws_operation: Duration::from_secs(60),
            smtp: Duration::from_secs(30),
            db_statement: Duration::from_secs(30),
            db_lock: Duration::from_secs(5),
            request: Duration::from_secs(60),
            shutdown: Duration::from_secs(30),
        }
    }
}

/// Every variable with its meaning, for the help text.
pub const VARIABLES: [(&str, &str); 7] = [
    ("BURNRATE_AWS_CONNECT_TIMEOUT", "connecting to AWS [default: 5s]"),
    ("BURNRATE_AWS_TIMEOUT", "one AWS request [default: 60s]"),
    ("BURNRATE_SMTP_TIMEOUT", "each SMTP step [default: 30s]"),
    (
        "BURNRATE_DB_STATEMENT_TIMEOUT",
        "one SQL statement of a request [default: 30s]",
    ),
    ("BURNRATE_DB_LOCK_TIMEOUT", "waiting for a database lock [default: 5s]"),
    ("BURNRATE_REQUEST_TIMEOUT", "one HTTP request [default: 60s]"),
    (
        "BURNRATE_SHUTDOWN_TIMEOUT",
        "draining requests at shutdown [default: 30s]",
    ),
];

impl Timeouts {
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Timeouts, ConfigError> {
        let defaults = Timeouts::default();
        let read = |variable: &'static str, default: Duration| match get(variable) {
            None => Ok(default),
            Some(text) => parse_duration(&text).filter(|d| !d.is_zero()).ok_or(ConfigError {
                variable,
                value: Some(text),
                expected: "a duration above zero such as 500ms, 90s or 5m",
            }),
        };
        Ok(Timeouts {
            aws_connect: read("BURNRATE_AWS_CONNECT_TIMEOUT", defaults.aws_connect)?,
            aws_operation: read("BURNRATE_AWS_TIMEOUT", defaults.aws_operation)?,
            smtp: read("BURNRATE_SMTP_TIMEOUT", defaults.smtp)?,
            db_statement: read("BURNRATE_DB_STATEMENT_TIMEOUT", defaults.db_statement)?,
            db_lock: read("BURNRATE_DB_LOCK_TIMEOUT", defaults.db_lock)?,
            request: read("BURNRATE_REQUEST_TIMEOUT", defaults.request)?,
            shutdown: read("BURNRATE_SHUTDOWN_TIMEOUT", defaults.shutdown)?,
        })
    }

    /// The process environment's timeouts. `Config::from_env` has already refused bad values
    /// at start, so a failure here cannot happen after it; the defaults stand in regardless.
    pub fn from_env() -> Timeouts {
        Timeouts::from_lookup(&|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty())).unwrap_or_default()
    }

    /// PostgreSQL's form of a duration, in whole milliseconds.
    pub fn pg(duration: Duration) -> String {
        format!("{}ms", duration.as_millis().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_and_bad_or_zero_values_name_the_variable() {
        let none = |_: &str| None;
        assert_eq!(Timeouts::from_lookup(&none), Ok(Timeouts::default()));
        let set = |name: &str| (name == "BURNRATE_AWS_TIMEOUT").then(|| "2s".to_string());
        assert_eq!(
            Timeouts::from_lookup(&set).map(|t| t.aws_operation),
            Ok(Duration::from_secs(2))
        );
        for bad in ["0s", "soon", "-1s"] {
            let lookup = |name: &str| (name == "BURNRATE_SMTP_TIMEOUT").then(|| bad.to_string());
            let error = Timeouts::from_lookup(&lookup).expect_err(bad);
            assert_eq!(error.variable, "BURNRATE_SMTP_TIMEOUT");
        }
        assert_eq!(Timeouts::pg(Duration::from_millis(1500)), "1500ms");
    }
}
