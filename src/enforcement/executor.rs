//! What enforcement actions need from the outside world: the alert outbox, AWS Budgets,
//! the tag key, the public URL, the claim lease and the loop's wake-up.

use std::sync::Arc;
use std::time::Duration;

use super::aws_stop::AwsFailure;
use crate::aws::budgets::AwsBudgets;
use crate::outbox::AlertSender;

/// The executor `serve` provided to this request's server functions.
pub fn current() -> Result<Arc<Executor>, crate::error::AppError> {
    crate::ctx::get::<Arc<Executor>>()
}

/// What actions need from the outside world.
#[derive(Clone)]
pub struct Executor {
    /// The alert outbox notify emails go through.
    pub alerts: AlertSender,
    /// `None`: resolved from the standard AWS chain when a stop needs it.
    pub aws: Option<Arc<AwsBudgets>>,
    pub tag_key: String,
    /// The user tag key, shown beside each resource a stop lists.
    pub user_tag_key: String,
    /// `BURNRATE_AWS_REGIONS`: where a resource stop looks when its policy names no region;
    /// empty means the SDK's own region.
    pub aws_regions: Vec<String>,
    /// The AWS configuration resource stops use; `None`: the standard chain's, read when a
    /// stop needs it.
    pub sdk: Option<aws_config::SdkConfig>,
    /// How a stop acts in another account its policy names; `None`: it cannot.
    pub assume_role: Option<crate::config::AssumeRole>,
    pub public_url: Option<String>,
    /// How long a claim on a stop lasts: longer than its AWS calls can take, so a live run
    /// is never overtaken, while a dead one's claim expires and the next pass resumes it.
    pub lease: Duration,
    /// Wakes `reconcile::run_forever` early (a disarm to carry out in AWS).
    pub wake: Arc<tokio::sync::Notify>,
}

impl Executor {
    /// SMTP and tag settings from the configuration; AWS from the standard chain.
    pub fn from_config(config: &crate::config::Config, alerts: &AlertSender) -> Executor {
        Executor {
            alerts: alerts.clone(),
            aws: None,
            tag_key: config.ingest.tag_project.clone(),
            user_tag_key: config.ingest.tag_user.clone(),
            aws_regions: config.aws_regions.clone(),
            sdk: None,
            assume_role: config.assume_role.clone(),
            public_url: config.public_url.as_ref().map(|u| u.origin.clone()),
            // A stop makes at most six AWS calls, each bounded by the operation timeout.
            lease: config.timeouts.aws_operation.saturating_mul(10),
            wake: Default::default(),
        }
    }

    /// The AWS configuration resource stops call with.
    pub(super) async fn sdk(&self) -> aws_config::SdkConfig {
        match &self.sdk {
            Some(sdk) => sdk.clone(),
            None => crate::aws::sdk_config_from_environment().await,
        }
    }

    /// The AWS configuration for acting in `account` ('' for burnrate's own): its own
    /// credentials, or the role `BURNRATE_AWS_ASSUME_ROLE` names there (with the external
    /// ID), assumed through STS and refreshed as they expire.
    pub(super) async fn sdk_in(&self, account: &str) -> Result<aws_config::SdkConfig, String> {
        let own = self.sdk().await;
        if account.is_empty() {
            return Ok(own);
        }
        let Some(assume) = &self.assume_role else {
            return Err(format!(
                "the policy names account {account}, but BURNRATE_AWS_ASSUME_ROLE is not set: burnrate cannot act there"
            ));
        };
        let mut role = aws_config::sts::AssumeRoleProvider::builder(assume.role_in(account))
            .session_name("burnrate-enforcement")
            .configure(&own);
        if let Some(id) = &assume.external_id {
            role = role.external_id(id);
        }
        let provider = role.build().await;
        Ok(own
            .into_builder()
            .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(provider))
            .build())
    }

    /// Where a resource stop looks when its policy names no region.
    pub(super) async fn regions(&self) -> Vec<String> {
        if !self.aws_regions.is_empty() {
            return self.aws_regions.clone();
        }
        let sdk = self.sdk().await;
        vec![sdk.region().map_or_else(|| "us-east-1".to_string(), |r| r.to_string())]
    }

    pub(super) async fn aws(&self) -> Result<Arc<AwsBudgets>, AwsFailure> {
        match &self.aws {
            Some(aws) => Ok(aws.clone()),
            // A credentials chain that fails (IMDS, IRSA's web identity, STS, SSO) is most
            // often passing: asked again on the next pass, never recorded as a final
            // failure, so neither a stop nor its lift is lost to a hiccup (#51).
            None => AwsBudgets::from_environment()
                .await
                .map(Arc::new)
                .map_err(|e| AwsFailure {
                    transient: true,
                    ..AwsFailure::new(e.to_string())
                }),
        }
    }
}
