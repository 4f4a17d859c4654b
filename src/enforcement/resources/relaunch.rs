//! The relaunch guard of one project: a customer-managed IAM policy that burnrate creates
//! per project (`/burnrate/burnrate-deny-…`) and attaches to the roles a stop names. It
//! denies only what carries the violating project's tag, so an approved project launching
//! through the same role is not blocked:
//! - creating or launching with the tag (`aws:RequestTag/<key>` equal to the project):
//!   `ec2:RunInstances`, `sagemaker:CreateTrainingJob`, `CreateProcessingJob`,
//!   `CreateNotebookInstance`, `CreateEndpoint`;
//! - starting what carries it (`aws:ResourceTag/<key>`): `ec2:StartInstances`,
//!   `sagemaker:StartNotebookInstance`.
//!
//! `StringEquals` compares exactly (no wildcards,
//! <https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html>),
//! and the document is written by serde_json, so a tag value cannot change its meaning.
//! The policy is created only when a stop runs (`CreatePolicy`; one that exists is kept),
//! never while listing; reversal detaches it. The documented IAM permissions limit create,
//! attach and detach to the prefix. Names: 1–128 of `[\w+=,.@-]`
//! (<https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicy.html>).

use sha2::{Digest, Sha256};

use super::CallError;

/// The IAM path burnrate's deny policies live under.
pub const PATH: &str = "/burnrate/";
/// Every burnrate deny policy's name starts so.
pub const PREFIX: &str = "burnrate-deny-";

/// The policy's name: the prefix, the project's safe characters (at most 60), and 12 hex
/// digits of its SHA-256, so two projects never share one.
pub fn name(project: &str) -> String {
    let safe: String = project
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+=,.@-_".contains(*c))
        .take(60)
        .collect();
    let digest = Sha256::digest(project.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{safe}-{hex}")
}

/// The policy's ARN in `account`.
pub fn arn(account: &str, project: &str) -> String {
    format!("arn:aws:iam::{account}:policy{PATH}{}", name(project))
}

/// True for an ARN of a deny policy burnrate makes itself.
pub fn is_ours(policy_arn: &str) -> bool {
    policy_arn
        .rsplit_once(':')
        .and_then(|(_, resource)| resource.strip_prefix("policy"))
        .and_then(|path| path.strip_prefix(PATH))
        .is_some_and(|name| name.starts_with(PREFIX))
}

/// The policy document: deny what carries `key` = `project`, nothing else.
pub fn document(key: &str, project: &str) -> String {
    let request_tag = format!("aws:RequestTag/{key}");
    let resource_tag = format!("aws:ResourceTag/{key}");
    serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "NoLaunchesOfTheProject",
                "Effect": "Deny",
                "Action": [
                    "ec2:RunInstances", "sagemaker:CreateTrainingJob", "sagemaker:CreateProcessingJob",
                    "sagemaker:CreateNotebookInstance", "sagemaker:CreateEndpoint"
                ],
                "Resource": "*",
                "Condition": {"StringEquals": {request_tag: project}}
            },
            {
                "Sid": "NoStartsOfTheProject",
                "Effect": "Deny",
                "Action": ["ec2:StartInstances", "sagemaker:StartNotebookInstance"],
                "Resource": "*",
                "Condition": {"StringEquals": {resource_tag: project}}
            }
        ]
    })
    .to_string()
}

/// Creates the project's deny policy, or, when one of that name exists
/// (`EntityAlreadyExists`), reads its default version and accepts it only if its document is
/// exactly this project's: the name is predictable, so a policy someone else planted under it
/// is never attached.
pub async fn ensure(iam: &aws_sdk_iam::Client, arn: &str, key: &str, project: &str) -> Result<(), CallError> {
    let created = iam
        .create_policy()
        .policy_name(name(project))
        .path(PATH)
        // IAM allows only \u0009-\u00FF in a description: the project stays in the document.
        .description("burnrate: denies launches and starts tagged with one project while its stop holds")
        .policy_document(document(key, project))
        .send()
        .await;
    let err = match created {
        Ok(_) => return Ok(()),
        Err(e) => CallError::from_sdk("IAM", "CreatePolicy", &e),
    };
    if err.code.as_deref() != Some("EntityAlreadyExists") {
        return Err(err);
    }
    let iam_error = |call: &'static str| move |e| CallError::from_sdk("IAM", call, &e);
    let policy = iam
        .get_policy()
        .policy_arn(arn)
        .send()
        .await
        .map_err(iam_error("GetPolicy"))?;
    let version = policy.policy().and_then(|p| p.default_version_id()).unwrap_or("v1");
    let answer = iam
        .get_policy_version()
        .policy_arn(arn)
        .version_id(version)
        .send()
        .await
        .map_err(|e| CallError::from_sdk("IAM", "GetPolicyVersion", &e))?;
    let text = answer.policy_version().and_then(|v| v.document()).unwrap_or_default();
    if same_document(text, &document(key, project)) {
        Ok(())
    } else {
        Err(CallError {
            message: format!(
                "a policy named {} exists with another document than this project's deny policy: not attached \
                 (delete or rename it, and the next stop creates burnrate's)",
                name(project)
            ),
            code: None,
            transient: false,
        })
    }
}

/// True when `found` (IAM answers it URL-encoded, RFC 3986) is the JSON of `want`.
fn same_document(found: &str, want: &str) -> bool {
    let decoded = if found.trim_start().starts_with('{') {
        found.to_string()
    } else {
        url::form_urlencoded::parse(format!("d={}", found.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
    parse(&decoded).is_some_and(|found| Some(found) == parse(want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_projects_document_is_accepted_as_it() {
        let ours = document("project", "gpu-burner");
        let encoded: String = url::form_urlencoded::byte_serialize(ours.as_bytes()).collect();
        assert!(same_document(&ours, &ours));
        assert!(same_document(&encoded.replace('+', "%20"), &ours));
        assert!(!same_document(&document("project", "gpu-burner2"), &ours));
        let allow_all = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
        assert!(!same_document(allow_all, &ours));
        assert!(!same_document("not json", &ours));
    }

    #[test]
    fn each_project_has_its_own_policy_that_names_it_exactly() {
        assert_ne!(name("gpu-*"), name("gpu-?"));
        assert!(name("gpu-*").starts_with("burnrate-deny-gpu--"));
        assert!(name(&"x".repeat(300)).len() <= 128);
        let arn = arn("123456789012", "gpu-burner");
        assert!(arn.starts_with("arn:aws:iam::123456789012:policy/burnrate/burnrate-deny-gpu-burner-"));
        assert!(is_ours(&arn));
        assert!(!is_ours("arn:aws:iam::123456789012:policy/deny-gpu-launch"));
        // A value that looks like JSON stays a value.
        let doc: serde_json::Value = serde_json::from_str(&document("project", "a\",\"b")).expect("json");
        assert_eq!(
            doc["Statement"][0]["Condition"]["StringEquals"]["aws:RequestTag/project"],
            "a\",\"b"
        );
        assert_eq!(
            doc["Statement"][1]["Condition"]["StringEquals"]["aws:ResourceTag/project"],
            "a\",\"b"
        );
    }
}
