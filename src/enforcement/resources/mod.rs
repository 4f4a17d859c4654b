//! A stop that reaches the violating project's own resources: what it runs, found by the
//! same project tag that bills it, in every configured region (`discover`, from each
//! region's shared reads in `inventory`; proposals listed apart from the per-minute pass in
//! `listing`); each resource
//! stopped, and restarted on reversal, through its own AWS call (`act`); every resource its
//! own row (`store`); stopping them (`stopping`) and restarting them (`restarting`); the
//! claimed run and its tracking until AWS confirms (`run`).
//!
//! Never destroys: EC2 instances are stopped, never terminated; an endpoint is deleted only
//! when the policy lists `endpoints`, after its config is recorded, and reversal creates it
//! again from that config (the config and model stay in SageMaker). Optionally, relaunch is
//! prevented: the policy's deny policy is attached to the roles it names (`AttachRolePolicy`),
//! each role its own row, detached again on reversal.

pub mod act;
pub mod discover;
pub mod endpoints;
pub mod instance_store;
pub mod inventory;
pub mod listing;
pub mod read;
pub mod relaunch;
pub mod restarting;
pub mod run;
pub mod stopping;
pub mod store;

use rust_decimal::Decimal;

/// The kinds a policy's `stop: resources:` may list, with their row and policy names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Ec2,
    Notebook,
    TrainingJob,
    ProcessingJob,
    Endpoint,
    /// An IAM role the policy's deny policy is attached to, so it cannot launch GPUs again.
    Role,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Ec2,
        Kind::Notebook,
        Kind::TrainingJob,
        Kind::ProcessingJob,
        Kind::Endpoint,
        Kind::Role,
    ];

    /// The policy's word (`stop: resources: [ec2, notebooks]`).
    pub fn policy_key(self) -> &'static str {
        match self {
            Kind::Ec2 => "ec2",
            Kind::Notebook => "notebooks",
            Kind::TrainingJob => "training_jobs",
            Kind::ProcessingJob => "processing_jobs",
            Kind::Endpoint => "endpoints",
            // Not a kind `resources:` lists: the roles come with the deny policy.
            Kind::Role => "roles",
        }
    }

    /// The row's word (`enforcement_resources.kind`).
    pub fn key(self) -> &'static str {
        match self {
            Kind::Ec2 => "ec2",
            Kind::Notebook => "notebook",
            Kind::TrainingJob => "training_job",
            Kind::ProcessingJob => "processing_job",
            Kind::Endpoint => "endpoint",
            Kind::Role => "iam_role",
        }
    }

    pub fn from_key(key: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.key() == key)
    }

    pub fn from_policy_key(key: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| *k != Kind::Role && k.policy_key() == key)
    }

    /// True when reversal brings it back as it was: AWS cannot restart a stopped job.
    pub fn restorable(self) -> bool {
        !matches!(self, Kind::TrainingJob | Kind::ProcessingJob)
    }

    /// True for SageMaker, whose `ml.` types are priced apart from EC2's.
    pub fn sagemaker(self) -> bool {
        matches!(
            self,
            Kind::Notebook | Kind::TrainingJob | Kind::ProcessingJob | Kind::Endpoint
        )
    }
}

/// EC2 and SageMaker clients for one region, and IAM's (global).
pub struct Clients {
    pub ec2: aws_sdk_ec2::Client,
    pub sagemaker: aws_sdk_sagemaker::Client,
    pub iam: aws_sdk_iam::Client,
    /// Application Auto Scaling: an endpoint's scalable targets, read before it is deleted.
    pub autoscaling: aws_sdk_applicationautoscaling::Client,
    /// The Resource Groups Tagging API: which notebooks and endpoints carry the tag key.
    pub tagging: aws_sdk_resourcegroupstagging::Client,
}

impl Clients {
    /// For reads: the SDK's standard retries, with backoff on throttling and 5xx, are safe.
    pub fn reading(sdk: &aws_config::SdkConfig, region: &str) -> Clients {
        Clients::with(
            sdk,
            region,
            aws_config::retry::RetryConfig::standard().with_max_attempts(4),
        )
    }

    /// For the calls that change things: never retried by the SDK. An answer lost on the way
    /// is resolved by re-describing the resource on the next pass.
    pub fn acting(sdk: &aws_config::SdkConfig, region: &str) -> Clients {
        Clients::with(sdk, region, aws_config::retry::RetryConfig::disabled())
    }

    fn with(sdk: &aws_config::SdkConfig, region: &str, retry: aws_config::retry::RetryConfig) -> Clients {
        let region = aws_config::Region::new(region.to_string());
        Clients {
            ec2: aws_sdk_ec2::Client::from_conf(
                aws_sdk_ec2::config::Builder::from(sdk)
                    .region(region.clone())
                    .retry_config(retry.clone())
                    .build(),
            ),
            sagemaker: aws_sdk_sagemaker::Client::from_conf(
                aws_sdk_sagemaker::config::Builder::from(sdk)
                    .region(region.clone())
                    .retry_config(retry.clone())
                    .build(),
            ),
            autoscaling: aws_sdk_applicationautoscaling::Client::from_conf(
                aws_sdk_applicationautoscaling::config::Builder::from(sdk)
                    .region(region.clone())
                    .retry_config(retry.clone())
                    .build(),
            ),
            tagging: aws_sdk_resourcegroupstagging::Client::from_conf(
                aws_sdk_resourcegroupstagging::config::Builder::from(sdk)
                    .region(region)
                    .retry_config(retry.clone())
                    .build(),
            ),
            // IAM is global: its endpoint signs for us-east-1 in the commercial partition.
            iam: aws_sdk_iam::Client::from_conf(
                aws_sdk_iam::config::Builder::from(sdk)
                    .region(aws_config::Region::new(IAM_REGION))
                    .retry_config(retry)
                    .build(),
            ),
        }
    }
}

/// The AWS configuration for each account a stop acts in, each made once per pass.
pub struct AwsAccounts<'a> {
    exec: &'a crate::enforcement::executor::Executor,
    configs: std::collections::HashMap<String, aws_config::SdkConfig>,
}

impl<'a> AwsAccounts<'a> {
    pub fn new(exec: &'a crate::enforcement::executor::Executor) -> AwsAccounts<'a> {
        AwsAccounts {
            exec,
            configs: Default::default(),
        }
    }

    /// The configuration for `account` ('' for burnrate's own): a role assumed there, when
    /// the policy names another account.
    pub async fn sdk(&mut self, account: &str) -> Result<aws_config::SdkConfig, CallError> {
        if let Some(sdk) = self.configs.get(account) {
            return Ok(sdk.clone());
        }
        let sdk = self.exec.sdk_in(account).await.map_err(|message| CallError {
            message,
            code: None,
            transient: false,
        })?;
        self.configs.insert(account.to_string(), sdk.clone());
        Ok(sdk)
    }
}

/// The region IAM's global endpoint is reached through.
const IAM_REGION: &str = "us-east-1";
/// What a role's row shows as its region: IAM is not regional.
pub const GLOBAL: &str = "global";

/// What a stop lists when the policy names no kinds: those a reversal fully restores.
pub const DEFAULT_KINDS: [Kind; 2] = [Kind::Ec2, Kind::Notebook];

/// One running resource under the project's tag, as discovery found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The account it runs in ('' for burnrate's own).
    pub account: String,
    pub region: String,
    pub kind: Kind,
    /// The instance ID, or the notebook's, job's or endpoint's name.
    pub id: String,
    pub instance_type: String,
    /// Instances behind it (a job's or endpoint's instance count; 1 otherwise).
    pub instances: i32,
    pub launched_at: Option<chrono::DateTime<chrono::Utc>>,
    pub user: Option<String>,
    /// Why it must be left running, when it must (an instance-store root, an Auto Scaling
    /// group member).
    pub skip: Option<String>,
    /// What a stop of it will cost beyond the stop, when it is not skipped (instance-store
    /// data erased), shown with the proposal.
    pub warning: Option<String>,
    /// Every tag it carries (key, value), recorded for what reversal creates again; empty
    /// where reversal restarts the same resource.
    pub tags: Vec<(String, String)>,
    /// What reversal restores it from: an endpoint's config (created again from it), or the
    /// deny policy attached to a role (detached).
    pub restore_from: Option<String>,
}

impl Found {
    /// Accelerators across the resource and its list price per hour, from the catalogue;
    /// `None` for a type the catalogue does not know.
    pub fn sized(&self) -> Option<(Decimal, Decimal)> {
        let name = self.instance_type.strip_prefix("ml.").unwrap_or(&self.instance_type);
        let known = crate::catalogue::Catalogue::built_in().get(name)?;
        let instances = Decimal::from(self.instances.max(1));
        Some((
            known.accelerator_count * instances,
            known.list_price(self.kind.sagemaker()) * instances,
        ))
    }

    /// True for a GPU or other accelerator type: what a stop is for. A CPU instance under
    /// the same tag is left alone.
    pub fn is_accelerated(&self) -> bool {
        let name = self.instance_type.strip_prefix("ml.").unwrap_or(&self.instance_type);
        self.sized().is_some_and(|(gpus, _)| gpus > Decimal::ZERO) || crate::catalogue::looks_like_accelerator(name)
    }
}

/// A failed AWS call, told apart as AWS's own refusal or a passing fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub message: String,
    /// AWS's error code, when AWS answered.
    pub code: Option<String>,
    /// Throttling, a 5xx, a timeout: asked again on the next pass, never recorded as final.
    pub transient: bool,
}

impl CallError {
    pub(crate) fn from_sdk<E>(
        service: &str,
        call: &str,
        err: &aws_sdk_ec2::error::SdkError<E, aws_sdk_ec2::config::http::HttpResponse>,
    ) -> CallError
    where
        E: aws_sdk_ec2::error::ProvideErrorMetadata + std::error::Error + 'static,
    {
        CallError {
            message: format!("{service} {call} failed: {}", crate::aws::error_message(err)),
            code: err.as_service_error().and_then(|e| e.code()).map(str::to_string),
            transient: crate::aws::is_transient(err),
        }
    }
}
