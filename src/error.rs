//! The one error type that crosses the wire from server functions to pages, and the error
//! policy for the whole crate:
//!
//! - **`AppError` at the server-function boundary.** Server functions and the HTTP handlers
//!   beside them return it. Details (SQL, AWS, I/O) are logged on the server; users see a
//!   plain message and the HTTP status that fits it, set in `AppError`'s encoding for a
//!   server function's response, and by `codec::resource` for a page rendered on the server
//!   whose data failed. Validation failures name their field (`InvalidInput`, `InvalidFields`).
//! - **Typed errors in stores and domain code:** `sqlx::Error` from SQL, and a
//!   `thiserror` enum where callers or tests must tell kinds apart (`IngestError`,
//!   `aws::budgets::SyncError`, `aws::budgets::AwsError`,
//!   `enforcement::actions::ActionError`, `costs::export::ExportError`, `DbError`,
//!   `as_code::ApplyError`).
//! - **Two exceptions, kept on purpose:**
//!   - Validation that ends in a form's field messages returns `AppError` directly
//!     (`auth::accounts`, `auth::lifecycle`, `auth::rate_limit`, `auth::sessions`,
//!     `teams::edit`, `budgets::store::save`, `budgets::access`, `mail::address`): those
//!     errors are the per-field answer the page shows, and only server functions and the
//!     CLI call them.
//!   - Parsers of one typed value (`Period::parse`, `parse_amount`,
//!     `TrustedProxies::parse`, the export's keys and range) and the private cluster's
//!     process steps return the message as a `String`, which the caller wraps with the
//!     field's or the step's name.
//! - **`anyhow` with context in the CLI and background jobs** (`cli/`, `jobs.rs`), where an
//!   error is only ever reported: each step says what it was doing (`.context(…)`), and the
//!   CLI prints the chain on one line and exits 1.
//! - Never `unwrap` on user or AWS data; a failed run leaves the previous data whole.

use http::StatusCode;
use leptos::prelude::{FromServerFnError, ServerFnErrorErr};
use leptos::server_fn::Encodes;
use leptos::server_fn::codec::JsonEncoding;
use serde::{Deserialize, Serialize};

/// What went wrong, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum AppError {
    /// A request value failed validation; names the field and the expected form.
    #[error("{field}: {message}")]
    InvalidInput { field: String, message: String },
    /// Several fields failed validation at once (forms): every problem, each with its field.
    #[error("{}", FieldError::join(.0))]
    InvalidFields(Vec<FieldError>),
    #[error("not found: {0}")]
    NotFound(String),
    /// The request is valid but the state it acts on has moved on (already decided, already
    /// waiting): 409.
    #[error("{0}")]
    Conflict(String),
    /// No valid session: sign in first.
    #[error("sign in to continue")]
    Unauthorized,
    /// Signed in, but the role or team does not allow this.
    #[error("not allowed: {0}")]
    Forbidden(String),
    /// The same message for an unknown email and a wrong password, so neither is revealed.
    #[error("email or password is incorrect")]
    SignInFailed,
    #[error("{0}")]
    TooManyRequests(String),
    /// Something failed on the server; the details are in the server log.
    #[error("something went wrong on the server; the details are in its log")]
    Internal,
    /// The database cannot serve the request just now (restarting, unreachable, overloaded).
    #[error("the database is unavailable just now; try again in a few seconds")]
    Unavailable,
    /// Another change held a lock this one waited for past `lock_timeout` (SQLSTATE 55P03):
    /// the transaction rolled back, nothing was changed; the caller tries again.
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    ServerFn(ServerFnErrorErr),
}

impl AppError {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        AppError::InvalidInput {
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::InvalidInput { .. } | AppError::InvalidFields(_) => StatusCode::BAD_REQUEST,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::Unauthorized | AppError::SignInFailed => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Unavailable | AppError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Internal | AppError::ServerFn(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// One field's problem in a form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// A name typed by a person (a budget's, a rule's): trimmed, 1 to 200 characters, no
/// control characters; else the `name` field's error.
pub fn checked_name(text: &str) -> Result<String, FieldError> {
    let name = text.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(FieldError::new(
            "name",
            "a name must be 1 to 200 characters without control characters",
        ));
    }
    Ok(name.to_string())
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn join(errors: &[FieldError]) -> String {
        let parts: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        parts.join("; ")
    }
}

impl AppError {
    /// The message for `field`, if the error names it.
    pub fn for_field(&self, field: &str) -> Option<String> {
        match self {
            AppError::InvalidInput { field: f, message } if f == field => Some(message.clone()),
            AppError::InvalidFields(errors) => errors.iter().find(|e| e.field == field).map(|e| e.message.clone()),
            _ => None,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }

    /// Encodes the error for a server function's response, and gives that response the
    /// error's status: server_fn would answer every error with 500. So no server function
    /// needs an envelope of its own.
    fn ser(&self) -> leptos::server_fn::Bytes {
        #[cfg(feature = "ssr")]
        self.set_response_status();
        // As server_fn's own encoding: an error that cannot be encoded is sent as that.
        JsonEncoding::encode(self).unwrap_or_else(|e| {
            let unencodable = AppError::ServerFn(ServerFnErrorErr::Serialization(e.to_string()));
            JsonEncoding::encode(&unencodable).unwrap_or_default()
        })
    }
}

impl AppError {
    /// Sets the status of the response being built, when there is one (a server function's
    /// call, or a page rendered on the server).
    #[cfg(feature = "ssr")]
    pub fn set_response_status(&self) {
        if let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(self.status());
            if matches!(self, AppError::Unavailable | AppError::Busy(_)) {
                response.insert_header(http::header::RETRY_AFTER, http::HeaderValue::from_static("5"));
            }
        }
    }
}

#[cfg(feature = "ssr")]
impl From<sqlx::Error> for AppError {
    fn from(err: sqlx::Error) -> Self {
        if is_lock_timeout(&err) {
            tracing::warn!("a request waited too long for a lock held by another change");
            return AppError::Busy(
                "another change holds what this one needs (a lock wait timed out); nothing was changed, try again \
                 in a few seconds"
                    .into(),
            );
        }
        if is_unavailable(&err) {
            tracing::warn!(error = %err, "database unavailable");
            return AppError::Unavailable;
        }
        tracing::error!(error = %err, "database error");
        AppError::Internal
    }
}

/// True when a lock wait ran past `lock_timeout` (SQLSTATE 55P03, lock_not_available).
#[cfg(feature = "ssr")]
pub fn is_lock_timeout(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("55P03"))
}

/// True when `err` says the database cannot be reached or is shutting down, restarting or
/// overloaded, rather than that a query was wrong: the caller gets 503 and tries again.
#[cfg(feature = "ssr")]
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        // SQLSTATE class 08 (connection exception) and 57 (operator intervention: admin
        // shutdown, crash shutdown, cannot connect now, query canceled by a timeout).
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57")),
        _ => false,
    }
}

/// A 503 for a request the database could not serve just now.
#[cfg(feature = "ssr")]
pub fn unavailable_response() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        http::StatusCode::SERVICE_UNAVAILABLE,
        [(http::header::RETRY_AFTER, "5")],
        "the database is unavailable just now; try again in a few seconds",
    )
        .into_response()
}
