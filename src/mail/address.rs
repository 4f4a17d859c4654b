//! Email addresses typed by people (accounts, team owners, recipients, approvers).

use crate::error::AppError;

/// Emails compare case-insensitively.
pub fn normalise_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A plausible address: one `@`, a dotted domain, no spaces, at most 254 characters.
pub fn validate_email(email: &str) -> Result<String, AppError> {
    let email = normalise_email(email);
    let valid = email.len() <= 254
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';' | '"'))
        && match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
            }
            None => false,
        };
    if valid {
        Ok(email)
    } else {
        Err(AppError::invalid("email", "enter an address such as name@example.com"))
    }
}
