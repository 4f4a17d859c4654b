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

/// Hashes running at once, at most: each argon2id hash takes 19 MiB and a core for tens of
/// milliseconds, so a flood of sign-ins queues here instead of exhausting memory.
pub const CONCURRENT_HASHES: usize = 4;
static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_HASHES);
/// How long a sign-in waits for a hashing slot before it is told to try again.
const HASHING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `work` on a blocking thread once a hashing slot is free.
async fn bounded<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, AppError> {
    let _slot = match tokio::time::timeout(HASHING_WAIT, HASHING.acquire()).await {
        Ok(Ok(slot)) => slot,
        _ => {
            return Err(AppError::TooManyRequests(
                "the server is busy checking passwords; try again in a few seconds".into(),
            ));
        }
    };
    tokio::task::spawn_blocking(work).await.map_err(|_| AppError::Internal)
}

/// An argon2id PHC string (`$argon2id$v=19$…`) with a random salt.
pub async fn hash(password: String) -> Result<String, AppError> {
    bounded(move || hash_now(&password)).await?
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
/// Refused (429) when every hashing slot stays busy for 10 s.
pub async fn verify(password: String, stored: Option<String>) -> Result<bool, AppError> {
    bounded(move || {
        let stored = stored.unwrap_or_else(|| dummy_hash().to_string());
        PasswordHash::new(&stored)
            .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
            .unwrap_or(false)
    })
    .await
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_now("burnrate timing equaliser").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the hashing slots are process-wide, and a test holding them all would make
    // another wait.
    #[tokio::test(start_paused = true)]
    async fn a_hash_verifies_its_password_only_and_a_flood_waits_for_a_slot() {
        let stored = hash("correct horse battery".into()).await.expect("hash");
        assert!(stored.starts_with("$argon2id$"));
        let check = |password: &str, stored: Option<String>| verify(password.into(), stored);
        assert_eq!(check("correct horse battery", Some(stored.clone())).await, Ok(true));
        assert_eq!(check("correct horse battery!", Some(stored)).await, Ok(false));
        assert_eq!(check("anything", None).await, Ok(false));
        assert_eq!(check("anything", Some("not a hash".into())).await, Ok(false));

        // Every slot taken (a flood in progress): the next check waits, then is told to retry.
        let held = HASHING.acquire_many(CONCURRENT_HASHES as u32).await.expect("slots");
        let refused = verify("anything at all".into(), None).await;
        assert!(matches!(refused, Err(AppError::TooManyRequests(_))), "{refused:?}");
        drop(held);
        assert_eq!(verify("anything at all".into(), None).await, Ok(false));
    }

    #[test]
    fn short_and_huge_passwords_are_refused() {
        assert!(check_policy("short").is_err());
        assert!(check_policy(&"x".repeat(MAX_CHARS + 1)).is_err());
        assert!(check_policy("twelve chars").is_ok());
    }
}
