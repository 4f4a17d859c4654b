//! Pieces every read of a project's resources shares: the tags that name its project, an
//! EC2 filter value matched literally, AWS's times, and how a failed read of one resource
//! counts.

use super::CallError;

/// The tag keys that name a resource's project and user.
#[derive(Debug, Clone, Copy)]
pub struct Tags<'a> {
    pub project_key: &'a str,
    pub user_key: &'a str,
    pub project: &'a str,
    /// Tag keys, beyond [`super::discover::MANAGED_BY`], that mark an instance as run by a controller (the
    /// policy's `stop: managed_by_tags:`).
    pub managed_by: &'a [String],
    /// The policy allows stopping an instance whose instance-store data a stop erases.
    pub allow_instance_store: bool,
}

/// A value as an EC2 filter matches it literally: `*`, `?` and `\` escaped with `\`.
pub fn literal_filter_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An AWS time as chrono's.
pub(super) fn time(t: Option<&aws_sdk_ec2::primitives::DateTime>) -> Option<chrono::DateTime<chrono::Utc>> {
    t.and_then(|t| chrono::DateTime::from_timestamp(t.secs(), t.subsec_nanos()))
}

/// One resource's read: a passing fault fails the whole discovery (asked again on the next
/// pass); AWS's refusal for this one resource (it ended or was deleted between the list and
/// this call, or may not be read) skips it, so one vanished job does not stop the stop.
pub(super) fn one<T>(result: Result<T, CallError>) -> Result<Option<T>, CallError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.transient => Err(err),
        Err(err) => {
            tracing::info!(error = %err.message, "a resource vanished or cannot be read while listing; skipped");
            Ok(None)
        }
    }
}

/// Maps a SageMaker call's error, named.
pub(super) fn sagemaker_error<E>(
    call: &'static str,
) -> impl Fn(aws_sdk_sagemaker::error::SdkError<E, aws_sdk_sagemaker::config::http::HttpResponse>) -> CallError
where
    E: aws_sdk_sagemaker::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    move |e| CallError::from_sdk("SageMaker", call, &e)
}
