//! Cost Explorer ingestion (`burnrate ingest` and the schedule in `serve`) and the
//! Ingestion page (`/ingestion`): recent runs with their status, size and cost.

#[cfg(feature = "ssr")]
pub mod bench;
#[cfg(feature = "ssr")]
pub mod bill;
#[cfg(feature = "ssr")]
pub mod commitments;
#[cfg(feature = "ssr")]
pub mod cost_explorer;
pub mod model;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod plan;
#[cfg(feature = "ssr")]
pub mod response;
#[cfg(feature = "ssr")]
pub mod run;
#[cfg(feature = "ssr")]
pub mod schedule;
pub mod server_fns;
#[cfg(feature = "ssr")]
pub mod store;

/// Why an ingestion run failed, in words fit for the run's record and the terminal.
/// Typed by kind, so callers and tests can tell AWS's refusals from bad answers, failed
/// checks and the database.
#[cfg(feature = "ssr")]
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Cost Explorer refused the request or could not be reached: credentials, endpoint,
    /// permissions, timeout.
    #[error("{0}")]
    CostExplorer(String),
    /// Cost Explorer answered `DataUnavailableException`: it has no figures for the question
    /// (yet). Some callers read that as "nothing to report".
    #[error("{0}")]
    DataUnavailable(String),
    /// A retryable failure that lasted through every attempt.
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp { attempts: u32, last: Box<IngestError> },
    /// Cost Explorer's answer is not what burnrate can store: a shape, date or amount it
    /// did not expect.
    #[error("{0}")]
    Malformed(String),
    /// A group of one day's result was malformed.
    #[error("Cost Explorer result for {day}: {source}")]
    InResult {
        day: chrono::NaiveDate,
        source: Box<IngestError>,
    },
    /// The window asked for, or the figures fetched, fail a check; nothing is stored.
    #[error("{0}")]
    Rejected(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Staging(#[from] crate::costs::store::StagingError),
}

#[cfg(feature = "ssr")]
impl IngestError {
    pub fn malformed(message: impl Into<String>) -> IngestError {
        IngestError::Malformed(message.into())
    }

    pub fn rejected(message: impl Into<String>) -> IngestError {
        IngestError::Rejected(message.into())
    }
}
