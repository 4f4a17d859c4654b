//! The first-run setup guard. While no admin exists, `/setup` creates one for whoever
//! comes first. On a server that listens beyond loopback that could be anyone on the
//! network, so there `serve` makes a one-time token, prints it to its output (as Jupyter
//! and Grafana do), and `/setup` requires it. On a loopback-only server (a laptop, a
//! container behind its own proxy on 127.0.0.1) no token is needed.

use std::sync::{Arc, Mutex};

/// The setup token `serve` provided to this request's server functions.
pub fn provided() -> Result<SetupToken, crate::error::AppError> {
    crate::ctx::get::<SetupToken>()
}

/// The token `serve` printed, if setup needs one. Shared by the server's clones.
#[derive(Debug, Clone, Default)]
pub struct SetupToken(Arc<Mutex<Option<String>>>);

impl SetupToken {
    /// Makes a token when no admin exists and `addr` is not loopback; returns it to print.
    pub async fn arm(
        &self,
        pool: &sqlx::PgPool,
        addr: std::net::SocketAddr,
    ) -> Result<Option<String>, crate::error::AppError> {
        if addr.ip().is_loopback() || super::accounts::admin_exists(pool).await? {
            return Ok(None);
        }
        let token = super::sessions::new_token();
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(token.clone());
        }
        Ok(Some(token))
    }

    /// Arms a token whatever the database says (it could not be asked).
    pub fn arm_anyway(&self) -> String {
        let token = super::sessions::new_token();
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(token.clone());
        }
        token
    }

    /// The armed token, for a test harness that cannot read `serve`'s output.
    pub fn current(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }

    /// Refuses `given` unless setup needs no token or it is the one printed. Compared in
    /// constant time, through their SHA-256 digests.
    pub fn check(&self, given: Option<&str>) -> Result<(), crate::error::AppError> {
        use sha2::{Digest, Sha256};
        let Some(expected) = self.current() else {
            return Ok(());
        };
        let given = given.unwrap_or("").trim();
        let (a, b) = (Sha256::digest(expected.as_bytes()), Sha256::digest(given.as_bytes()));
        let same = a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
        if same {
            Ok(())
        } else {
            Err(crate::error::AppError::Forbidden(
                "setup needs the one-time token that `burnrate serve` printed when it started".into(),
            ))
        }
    }

    /// Setup is done: the token is spent.
    pub fn spend(&self) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
    }
}

/// The lines `serve` prints for the operator.
pub fn banner(addr: std::net::SocketAddr, token: &str) -> String {
    format!(
        "No admin account exists yet. Create one at http://{addr}/setup?token={token}\n\
         (or run `burnrate admin create --email you@example.com`). The token works once."
    )
}
