//! Configuration from environment variables, validated before anything starts.
//! A bad value names the variable and the form it expects; the CLI then exits with status 2.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;

mod ingest;
pub mod metrics;
use ingest::ingest_settings;
pub mod savings;
pub mod timeouts;
pub use savings::{CloudWatchSettings, PrometheusSettings, SavingsSettings};

pub use ingest::IngestSettings;
pub use timeouts::Timeouts;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Settings shared by every subcommand.
#[derive(Clone)]
pub struct Config {
    /// `DATABASE_URL`; `None` means the private cluster under `data_dir`.
    pub database_url: Option<String>,
    pub data_dir: PathBuf,
    pub addr: SocketAddr,
    pub log_format: LogFormat,
    /// Where the release build put the compiled site (`pkg/`, CSS, favicon).
    pub site_root: PathBuf,
    /// The dashboard's public origin (`BURNRATE_PUBLIC_URL`), used for cross-site checks,
    /// Secure cookies and links in emails. `None`: the request's own Host.
    pub public_url: Option<PublicUrl>,
    /// A session ends after this long without a request.
    pub session_idle: Duration,
    /// A session ends this long after sign-in, however active.
    pub session_max: Duration,
    pub ingest: IngestSettings,
    /// `SMTP_URL` and `SMTP_FROM`; `None`: alerts stay queued until SMTP is configured.
    pub smtp: Option<crate::mail::SmtpSettings>,
    pub timeouts: Timeouts,
    /// `BURNRATE_TRUSTED_PROXIES`: peers whose `Forwarded`/`X-Forwarded-For` is believed.
    pub trusted_proxies: crate::client_address::TrustedProxies,
    /// DCGM utilisation through Prometheus, and the weekly savings digest.
    pub savings: SavingsSettings,
    /// `BURNRATE_AWS_REGIONS`: the regions CloudWatch is read in and resource stops look in;
    /// empty means the SDK's own region.
    pub aws_regions: Vec<String>,
    /// `BURNRATE_AWS_ASSUME_ROLE` and `BURNRATE_AWS_EXTERNAL_ID`: how a stop acts in another
    /// account its policy names.
    pub assume_role: Option<AssumeRole>,
    /// `BURNRATE_API_RATE_LIMIT`: requests per minute each API token may make.
    pub api_rate_limit: u32,
    /// `BURNRATE_METRICS_ADDR` and `BURNRATE_METRICS_TOKEN`: where `/metrics` answers.
    pub metrics: metrics::MetricsSettings,
}

/// The role burnrate assumes in another account: `pattern` with `{account_id}` replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumeRole {
    pub pattern: String,
    pub external_id: Option<String>,
}

impl AssumeRole {
    /// The role's ARN in `account`.
    pub fn role_in(&self, account: &str) -> String {
        self.pattern.replace("{account_id}", account)
    }

    fn read(get: &impl Fn(&str) -> Option<String>) -> Result<Option<AssumeRole>, ConfigError> {
        let Some(pattern) = get("BURNRATE_AWS_ASSUME_ROLE") else {
            return Ok(None);
        };
        let valid = pattern.starts_with("arn:aws") && pattern.contains(":iam::{account_id}:role/");
        if !valid {
            return Err(ConfigError {
                variable: "BURNRATE_AWS_ASSUME_ROLE",
                value: Some(pattern),
                expected: "an IAM role ARN with {account_id}, e.g. arn:aws:iam::{account_id}:role/burnrate-enforcer",
            });
        }
        Ok(Some(AssumeRole {
            pattern,
            external_id: get("BURNRATE_AWS_EXTERNAL_ID"),
        }))
    }
}

/// The scheme, host and port users reach burnrate at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `https://burnrate.example.com` (no trailing slash, no path).
    pub origin: String,
    pub https: bool,
}

impl PublicUrl {
    fn parse(text: &str) -> Option<PublicUrl> {
        let (scheme, rest) = text.split_once("://")?;
        let https = match scheme {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        let authority = rest.split('/').next().unwrap_or("");
        let host_ok = !authority.is_empty()
            && authority
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
        host_ok.then(|| PublicUrl {
            origin: format!("{scheme}://{authority}"),
            https,
        })
    }
}

// DATABASE_URL may carry a password, so Debug never prints it.
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &self.database_url.as_ref().map(|_| "<set>"))
            .field("data_dir", &self.data_dir)
            .field("addr", &self.addr)
            .field("log_format", &self.log_format)
            .field("site_root", &self.site_root)
            .field("public_url", &self.public_url)
            .field("session_idle", &self.session_idle)
            .field("session_max", &self.session_max)
            .field("ingest", &self.ingest)
            .field("smtp", &self.smtp)
            .finish()
    }
}

/// A variable with a value burnrate cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    /// The offending value, or `None` when it must not be echoed (secrets).
    pub value: Option<String>,
    pub expected: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(
                f,
                "{}={value:?} is not valid: expected {}",
                self.variable, self.expected
            ),
            None => write!(f, "{} is not valid: expected {}", self.variable, self.expected),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Every variable burnrate reads, for `--help` and docs/CONFIGURATION.md.
pub const ENV_HELP: &str = "\
Environment variables:
  DATABASE_URL        postgres://user:password@host:port/database. Unset: burnrate runs a
                      private PostgreSQL cluster under BURNRATE_DATA_DIR.
  BURNRATE_DATA_DIR   Directory for the private cluster [default: ./data]
  BURNRATE_ADDR       Address the dashboard listens on, host:port [default: 127.0.0.1:3000]
  LOG_FORMAT          text or json [default: text]
  RUST_LOG            Log filter, e.g. info or burnrate=debug [default: info]
  LEPTOS_SITE_ROOT    Compiled site directory [default: target/site, or site/ beside the binary]
  BURNRATE_PUBLIC_URL Public origin, e.g. https://burnrate.example.com: cross-site checks,
                      Secure cookies (https) and links in emails [default: the request's Host]
  BURNRATE_SESSION_IDLE  Sign-out after this long idle, e.g. 30m, 12h [default: 12h]
  BURNRATE_SESSION_MAX   Sign-out this long after sign-in, e.g. 7d [default: 7d]
  BURNRATE_INGEST_INTERVAL  How often `serve` ingests Cost Explorer costs, e.g. 6h, or off [default: 6h]
  BURNRATE_BACKFILL_SINCE   First day the first ingestion fetches, YYYY-MM-DD
                      [default: as far back as Cost Explorer keeps daily data]
  BURNRATE_RESTATE_DAYS  Days AWS may still restate: re-fetched on every run, and
                      provisional until older, 0-90 [default: 3]
  BURNRATE_TAG_PROJECT   Cost-allocation tag naming the project [default: project]
  BURNRATE_TAG_USER      Cost-allocation tag naming the user [default: user]
  SMTP_URL            Alert email server: smtp://host:port, smtp://user:pass@host:587 (STARTTLS)
                      or smtps://user:pass@host:465 [default: unset, alerts stay queued]
  SMTP_FROM           Sender of alert emails, e.g. burnrate@example.com (required with SMTP_URL)
  BURNRATE_AWS_CONNECT_TIMEOUT, BURNRATE_AWS_TIMEOUT, BURNRATE_SMTP_TIMEOUT,
  BURNRATE_DB_STATEMENT_TIMEOUT, BURNRATE_DB_LOCK_TIMEOUT, BURNRATE_REQUEST_TIMEOUT,
  BURNRATE_SHUTDOWN_TIMEOUT
                      How long to wait for AWS, SMTP, a SQL statement or lock, an HTTP request
                      and draining at shutdown, e.g. 500ms, 30s [defaults: 5s, 60s, 30s, 30s,
                      5s, 60s, 30s]
  BURNRATE_PROMETHEUS_URL  Prometheus holding NVIDIA DCGM exporter series, e.g.
                      http://prometheus:9090: GPU utilisation, idle and underused GPUs
                      [default: unset, savings from billing data only]
  BURNRATE_PROMETHEUS_PROJECT_LABEL  Series label naming the project [default: project]
  BURNRATE_CLOUDWATCH  on: GPU utilisation from CloudWatch too (SageMaker endpoints, and EC2
                      instances running the CloudWatch agent's NVIDIA metrics) [default: off]
  BURNRATE_AWS_REGIONS  Regions to read, comma-separated, e.g. us-east-1,us-west-2
                      [default: the SDK's region]
  BURNRATE_AWS_ASSUME_ROLE  The role a stop assumes in another account its policy names,
                      with {account_id}, e.g. arn:aws:iam::{account_id}:role/burnrate-enforcer
                      [default: unset, stops act in burnrate's own account only]
  BURNRATE_AWS_EXTERNAL_ID  The external ID that role's trust policy requires [default: none]
  BURNRATE_IDLE_ALERT_HOURS  Email a project's team owners when a GPU or endpoint has been
                      idle this many hours, 1-720 [default: 4]
  BURNRATE_SAVINGS_DIGEST  weekly (Mondays, to team owners) or off [default: weekly]
  AWS_*               Credentials, region and endpoints through the standard AWS chain
                      (AWS_PROFILE, AWS_ACCESS_KEY_ID, SSO, IMDS/IRSA, AWS_ENDPOINT_URL);
                      region us-east-1 unless configured";

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`, so tests can supply their own environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());

        let database_url = get("DATABASE_URL");
        if let Some(url) = &database_url {
            let usable = (url.starts_with("postgres://") || url.starts_with("postgresql://"))
                && PgConnectOptions::from_str(url).is_ok();
            if !usable {
                return Err(ConfigError {
                    variable: "DATABASE_URL",
                    value: None,
                    expected: "postgres://user:password@host:port/database",
                });
            }
        }
        let addr = match get("BURNRATE_ADDR") {
            None => SocketAddr::from(([127, 0, 0, 1], 3000)),
            Some(text) => parse_addr("BURNRATE_ADDR", &text)?,
        };
        let log_format = match get("LOG_FORMAT").as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError {
                    variable: "LOG_FORMAT",
                    value: Some(other.to_string()),
                    expected: "text or json",
                });
            }
        };
        let public_url = match get("BURNRATE_PUBLIC_URL") {
            None => None,
            Some(text) => Some(PublicUrl::parse(&text).ok_or(ConfigError {
                variable: "BURNRATE_PUBLIC_URL",
                value: Some(text),
                expected: "http:// or https:// followed by a host, e.g. https://burnrate.example.com",
            })?),
        };
        let duration = |variable: &'static str, default: Duration| match get(variable) {
            None => Ok(default),
            Some(text) => parse_duration(&text).ok_or(ConfigError {
                variable,
                value: Some(text),
                expected: "a duration such as 90s, 30m, 12h or 7d",
            }),
        };
        let session_idle = duration("BURNRATE_SESSION_IDLE", Duration::from_secs(12 * 3600))?;
        let session_max = duration("BURNRATE_SESSION_MAX", Duration::from_secs(7 * 86400))?;
        let ingest = ingest_settings(&get)?;
        let timeouts = Timeouts::from_lookup(&get)?;
        let trusted_proxies = match get("BURNRATE_TRUSTED_PROXIES") {
            None => Default::default(),
            Some(text) => crate::client_address::TrustedProxies::parse(&text).map_err(|_| ConfigError {
                variable: "BURNRATE_TRUSTED_PROXIES",
                value: Some(text),
                expected: "comma-separated IP addresses or CIDR blocks, e.g. 10.0.0.0/8, 192.0.2.7",
            })?,
        };
        let trusted_proxies = match get("BURNRATE_FORWARDED_HEADER") {
            None => trusted_proxies,
            Some(text) => {
                trusted_proxies.reading(crate::client_address::ForwardedHeader::parse(&text).ok_or(ConfigError {
                    variable: "BURNRATE_FORWARDED_HEADER",
                    value: Some(text),
                    expected: "x-forwarded-for or forwarded: the header your proxies append to",
                })?)
            }
        };
        let smtp = match (get("SMTP_URL"), get("SMTP_FROM")) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(ConfigError {
                    variable: "SMTP_FROM",
                    value: None,
                    expected: "the sender address for alert emails, required when SMTP_URL is set",
                });
            }
            (Some(url), Some(from)) => Some(crate::mail::SmtpSettings::parse(&url, &from, timeouts.smtp).map_err(
                |expected| {
                    ConfigError {
                        // Neither value is echoed: the URL may hold a password.
                        variable: if expected.starts_with("SMTP_FROM") {
                            "SMTP_FROM"
                        } else {
                            "SMTP_URL"
                        },
                        value: None,
                        expected,
                    }
                },
            )?),
        };
        let savings = savings::read(&get, timeouts.aws_operation, &ingest.tag_project)?;
        let api_rate_limit = match get("BURNRATE_API_RATE_LIMIT") {
            None => 120,
            Some(text) => text
                .parse()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .ok_or(ConfigError {
                    variable: "BURNRATE_API_RATE_LIMIT",
                    value: Some(text),
                    expected: "requests per minute per token, from 1 to 100000",
                })?,
        };
        Ok(Config {
            api_rate_limit,
            metrics: metrics::read(&get)?,
            savings,
            aws_regions: savings::regions(&get)?,
            assume_role: AssumeRole::read(&get)?,
            smtp,
            timeouts,
            trusted_proxies,
            ingest,
            public_url,
            session_idle,
            session_max,
            database_url,
            data_dir: get("BURNRATE_DATA_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("data")),
            addr,
            log_format,
            site_root: get("LEPTOS_SITE_ROOT")
                .map(PathBuf::from)
                .unwrap_or_else(default_site_root),
        })
    }
}

/// Parses `host:port`, naming `variable` (an env var or a flag) when it is wrong.
pub fn parse_addr(variable: &'static str, text: &str) -> Result<SocketAddr, ConfigError> {
    SocketAddr::from_str(text).map_err(|_| ConfigError {
        variable,
        value: Some(text.to_string()),
        expected: "an IP address and port such as 127.0.0.1:3000 or 0.0.0.0:8080",
    })
}

/// Parses `90s`, `30m`, `12h` or `7d` (a positive whole number and one unit).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let unit_at = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(unit_at);
    let n: u64 = number.parse().ok().filter(|n| *n > 0)?;
    if unit == "ms" {
        return Some(Duration::from_millis(n));
    }
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return None,
    };
    n.checked_mul(seconds).map(Duration::from_secs)
}

/// `target/site` when run from the source tree (scripts/build-release.sh puts it there), otherwise
/// `site/` beside the directory holding the binary (the Docker image's layout).
fn default_site_root() -> PathBuf {
    let in_tree = PathBuf::from("target/site");
    if in_tree.is_dir() {
        return in_tree;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(|bin| bin.parent()).map(|root| root.join("site")))
        .unwrap_or(in_tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn the_role_to_assume_in_another_account_is_a_pattern_with_its_account_id() {
        assert_eq!(config(&[]).expect("defaults").assume_role, None);
        let c = config(&[
            (
                "BURNRATE_AWS_ASSUME_ROLE",
                "arn:aws:iam::{account_id}:role/burnrate-enforcer",
            ),
            ("BURNRATE_AWS_EXTERNAL_ID", "ext-42"),
        ])
        .expect("valid");
        let role = c.assume_role.expect("set");
        assert_eq!(
            role.role_in("210987654321"),
            "arn:aws:iam::210987654321:role/burnrate-enforcer"
        );
        assert_eq!(role.external_id.as_deref(), Some("ext-42"));
        let err = config(&[("BURNRATE_AWS_ASSUME_ROLE", "arn:aws:iam::210987654321:role/fixed")])
            .expect_err("no {account_id}");
        assert_eq!(err.variable, "BURNRATE_AWS_ASSUME_ROLE");
    }

    #[test]
    fn defaults_need_no_variables() {
        let c = config(&[]).expect("defaults are valid");
        assert_eq!(c.database_url, None);
        assert_eq!(c.addr.to_string(), "127.0.0.1:3000");
        assert_eq!(c.data_dir, PathBuf::from("data"));
        assert_eq!(c.log_format, LogFormat::Text);
    }

    #[test]
    fn a_bad_address_names_the_variable_and_the_expected_form() {
        let err = config(&[("BURNRATE_ADDR", "localhost")]).expect_err("must reject");
        assert_eq!(err.variable, "BURNRATE_ADDR");
        assert!(
            err.to_string()
                .contains("BURNRATE_ADDR=\"localhost\" is not valid: expected an IP address and port")
        );
    }

    #[test]
    fn a_bad_log_format_is_rejected() {
        let err = config(&[("LOG_FORMAT", "xml")]).expect_err("must reject");
        assert_eq!(
            err.to_string(),
            "LOG_FORMAT=\"xml\" is not valid: expected text or json"
        );
    }

    #[test]
    fn a_bad_database_url_is_rejected_without_echoing_it() {
        let err = config(&[("DATABASE_URL", "mysql://root:hunter2@db/x")]).expect_err("must reject");
        assert_eq!(err.variable, "DATABASE_URL");
        assert!(!err.to_string().contains("hunter2"));
    }

    #[test]
    fn durations_and_public_urls_are_validated() {
        assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1800)));
        assert_eq!(parse_duration("7d"), Some(Duration::from_secs(604_800)));
        for bad in ["", "m", "0h", "12", "1.5h", "-3h", "12 h"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        let err = config(&[("BURNRATE_SESSION_IDLE", "forever")]).expect_err("must reject");
        assert!(
            err.to_string()
                .contains("BURNRATE_SESSION_IDLE=\"forever\" is not valid: expected a duration")
        );
        let c = config(&[("BURNRATE_PUBLIC_URL", "https://costs.example.com/some/path")]).expect("valid");
        assert_eq!(
            c.public_url,
            Some(PublicUrl {
                origin: "https://costs.example.com".into(),
                https: true
            })
        );
        assert!(config(&[("BURNRATE_PUBLIC_URL", "costs.example.com")]).is_err());
        assert!(config(&[("BURNRATE_PUBLIC_URL", "javascript://x")]).is_err());
    }

    #[test]
    fn ingestion_settings_have_defaults_and_name_bad_values() {
        assert_eq!(config(&[]).expect("valid").ingest, IngestSettings::default());
        let c = config(&[
            ("BURNRATE_INGEST_INTERVAL", "off"),
            ("BURNRATE_BACKFILL_SINCE", "2026-01-01"),
            ("BURNRATE_RESTATE_DAYS", "0"),
            ("BURNRATE_TAG_PROJECT", "cost-center"),
        ])
        .expect("valid");
        assert_eq!(c.ingest.interval, None);
        assert_eq!(c.ingest.backfill_since, chrono::NaiveDate::from_ymd_opt(2026, 1, 1));
        assert_eq!(c.ingest.restate_days, 0);
        assert_eq!(c.ingest.tag_project, "cost-center");
        for (variable, value) in [
            ("BURNRATE_INGEST_INTERVAL", "10s"),
            ("BURNRATE_INGEST_INTERVAL", "sometimes"),
            ("BURNRATE_BACKFILL_SINCE", "2026-13-01"),
            ("BURNRATE_RESTATE_DAYS", "91"),
            ("BURNRATE_RESTATE_DAYS", "-1"),
            ("BURNRATE_TAG_USER", "user$"),
        ] {
            let err = config(&[(variable, value)]).expect_err(value);
            assert_eq!(err.variable, variable);
        }
    }

    #[test]
    fn debug_output_hides_the_database_url() {
        let c = config(&[("DATABASE_URL", "postgres://u:hunter2@localhost/db")]).expect("valid");
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
