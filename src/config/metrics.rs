//! Where Prometheus reads `/metrics`: a listener of its own (`BURNRATE_METRICS_ADDR`, for a
//! port only the monitoring network reaches), and/or the dashboard's own address behind a
//! bearer token of its own (`BURNRATE_METRICS_TOKEN`). Neither set: no `/metrics` at all.

use std::net::SocketAddr;

use super::ConfigError;

/// A token shorter than this is refused: it guards figures finance considers private.
const MIN_TOKEN_CHARS: usize = 32;

#[derive(Clone, Default)]
pub struct MetricsSettings {
    pub addr: Option<SocketAddr>,
    /// SHA-256 of `BURNRATE_METRICS_TOKEN`: the token itself is not kept, so no Debug or log
    /// can show it.
    pub token_sha256: Option<[u8; 32]>,
}

impl std::fmt::Debug for MetricsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSettings")
            .field("addr", &self.addr)
            .field("token", &self.token_sha256.map(|_| "set"))
            .finish()
    }
}

impl MetricsSettings {
    /// Whether `/metrics` on the dashboard's address answers (with the token).
    pub fn on_main_address(&self) -> bool {
        self.token_sha256.is_some()
    }
}

pub fn read(get: &impl Fn(&str) -> Option<String>) -> Result<MetricsSettings, ConfigError> {
    let addr = match get("BURNRATE_METRICS_ADDR") {
        None => None,
        Some(text) => Some(text.parse().map_err(|_| ConfigError {
            variable: "BURNRATE_METRICS_ADDR",
            value: Some(text),
            expected: "host:port for /metrics alone, such as 127.0.0.1:9464",
        })?),
    };
    let token_sha256 = match get("BURNRATE_METRICS_TOKEN") {
        None => None,
        Some(token) if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) => {
            return Err(ConfigError {
                variable: "BURNRATE_METRICS_TOKEN",
                // Never echoed: it is a secret.
                value: None,
                expected: "at least 32 characters without spaces, such as `openssl rand -hex 32`",
            });
        }
        Some(token) => {
            use sha2::Digest;
            Some(sha2::Sha256::digest(token.as_bytes()).into())
        }
    };
    Ok(MetricsSettings { addr, token_sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<MetricsSettings, ConfigError> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        read(&|name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn a_short_token_is_refused_without_echoing_it_and_a_good_one_is_kept_hashed() {
        let short = with(&[("BURNRATE_METRICS_TOKEN", "secret")]).expect_err("short");
        assert_eq!(short.value, None);
        let good = with(&[("BURNRATE_METRICS_TOKEN", &"a".repeat(40))]).expect("good");
        assert!(good.on_main_address());
        assert!(!format!("{good:?}").contains("aaaa"));
        assert!(with(&[("BURNRATE_METRICS_ADDR", "not an address")]).is_err());
        let none = with(&[]).expect("none");
        assert!(none.addr.is_none() && !none.on_main_address());
    }
}
