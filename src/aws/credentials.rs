//! What burnrate says about AWS credentials: whether any AWS settings are present at all,
//! and, when loading them fails, one line naming the source tried and the fix. The full
//! error goes to DEBUG; the WARN a newcomer reads carries no SDK struct dump.

use aws_credential_types::provider::error::CredentialsError;

/// Variables that configure where AWS credentials come from (or where AWS is).
const SETTINGS: [&str; 8] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_COST_EXPLORER",
    "AWS_ROLE_ARN",
];

/// True when any AWS setting is present: one of the credential or endpoint variables, or an
/// AWS shared config or credentials file. Without any, only an instance role could answer,
/// and a demo has none.
pub fn settings_present() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if SETTINGS.iter().any(|name| set(name)) {
        return true;
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let file = |variable: &str, default: &str| {
        std::env::var_os(variable)
            .map(std::path::PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
            .is_some_and(|path| path.is_file())
    };
    file("AWS_CONFIG_FILE", "config") || file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
}

/// The credential source the standard chain would use here, and how to fix it.
fn source_and_fix() -> (String, String) {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if var("AWS_ACCESS_KEY_ID").is_some() {
        return (
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
            "Check that both are set and the key is active.".into(),
        );
    }
    if let Some(profile) = var("AWS_PROFILE") {
        return (
            format!("profile {profile:?}"),
            format!("For SSO run `aws sso login --profile {profile}`; otherwise check ~/.aws/config."),
        );
    }
    if var("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
        return (
            "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, IRSA)".into(),
            "Check AWS_ROLE_ARN and that the role trusts this service account.".into(),
        );
    }
    if var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some() || var("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some() {
        return (
            "the container credentials endpoint".into(),
            "Check the task role of this container.".into(),
        );
    }
    (
        "the default chain (no credential variables or profile; last, the EC2 instance metadata service)".into(),
        "Set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or attach an instance role.".into(),
    )
}

/// An error and its causes, each by its message, in one line: never a Debug dump.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ").replace('\n', " ")
}

/// What is wrong with the AWS credentials, in one line with how to fix it: none were found,
/// or a source was found but failed (an expired SSO session, a refused role), naming it.
pub fn describe_credentials_problem(error: &CredentialsError, needs: &str) -> String {
    tracing::debug!(error = %aws_sdk_costexplorer::error::DisplayErrorContext(error), "loading AWS credentials failed");
    match error {
        CredentialsError::CredentialsNotLoaded(_) => format!(
            "AWS credentials not found. Provide them through the standard AWS chain: \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE (including SSO), \
             or an IAM role (IRSA on EKS, an instance profile on EC2). The role needs {needs}."
        ),
        other => {
            let (source, fix) = source_and_fix();
            format!(
                "AWS credentials could not be loaded from {source}: {}. {fix} The role needs {needs}.",
                causes(other)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_source_is_one_line_of_messages_without_a_struct_dump() {
        let inner = std::io::Error::other("request forbidden: IMDS is disabled");
        let error = CredentialsError::provider_error(inner);
        let line = describe_credentials_problem(&error, "ce:GetCostAndUsage");
        assert!(line.contains("request forbidden: IMDS is disabled"), "{line}");
        assert!(line.contains("The role needs ce:GetCostAndUsage."), "{line}");
        for dump in ["ProviderError(", "{", "source:"] {
            assert!(!line.contains(dump), "{dump} in {line}");
        }
        assert!(!line.contains('\n'));
    }
}
