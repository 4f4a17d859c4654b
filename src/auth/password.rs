//! Password policy and argon2id hashing, off the async threads.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use crate::error::AppError;

pub const MIN_CHARS: usize = 12;
pub const MAX_CHARS: usize = 256;

/// Length is what makes a password strong; no composition rules (NIST SP 800-63B).
pub fn check_policy(password: &str) -> Result<(), AppError> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        return Err(AppError::invalid(
            "password",
            format!("use at least {MIN_CHARS} characters"),
        ));
    }
    if chars > MAX_CHARS {
        return Err(AppError::invalid(
            "password",
            format!("use at most {MAX_CHARS} characters"),
        ));
    }
    Ok(())
}

/// An argon2id PHC string (`$argon2id$v=19$…`) with a random salt.
pub async fn hash(password: String) -> Result<String, AppError> {
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .map_err(|_| AppError::Internal)?
}

fn hash_now(password: &str) -> Result<String, AppError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|err| {
            tracing::error!(error = %err, "password hashing failed");
            AppError::Internal
        })
}

/// True when `password` matches `stored`. With no stored hash (unknown email) it still
/// spends the time of one verification, so response times do not reveal which emails exist.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        let stored = stored.unwrap_or_else(|| dummy_hash().to_string());
        PasswordHash::new(&stored)
            .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_now("burnrate timing equaliser").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let stored = hash("correct horse battery".into()).await.expect("hash");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify("correct horse battery".into(), Some(stored.clone())).await);
        assert!(!verify("correct horse battery!".into(), Some(stored)).await);
        assert!(!verify("anything".into(), None).await);
        assert!(!verify("anything".into(), Some("not a hash".into())).await);
    }

    #[test]
    fn short_and_huge_passwords_are_refused() {
        assert!(check_policy("short").is_err());
        assert!(check_policy(&"x".repeat(MAX_CHARS + 1)).is_err());
        assert!(check_policy("twelve chars").is_ok());
    }
}
