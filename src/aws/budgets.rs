//! The AWS Budgets client for one account: list, describe notifications, create and delete
//! budgets; the underlying SDK client for budget actions. What burnrate puts in a budget is
//! `budgets::aws_sync`'s business.

use aws_sdk_budgets::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_budgets::types::{
    Budget as AwsBudget, Expression, MatchOption, Notification, NotificationWithSubscribers, TagValues,
};

/// Why AWS Budgets could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    #[error("{0}")]
    Aws(String),
    #[error(
        "AWS account id unknown: STS GetCallerIdentity failed ({0}); set AWS_ACCOUNT_ID to the 12-digit account the budgets belong to"
    )]
    NoAccount(String),
}

/// Why a pass over AWS Budgets that compares it with the database (a budget sync, the
/// search for orphaned enforcement budgets) could not finish.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Aws(#[from] AwsError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

/// Where the account a Budgets client works on came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsAccountSource {
    /// `AWS_ACCOUNT_ID`, whatever the credentials' source.
    Environment,
    /// The credentials carried it (an SSO or other profile that names it).
    Credentials,
    /// STS GetCallerIdentity: the account of whoever the credentials belong to.
    CallerIdentity,
}

impl std::fmt::Display for AwsAccountSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AwsAccountSource::Environment => "from AWS_ACCOUNT_ID",
            AwsAccountSource::Credentials => "from the credentials' profile",
            AwsAccountSource::CallerIdentity => "from STS GetCallerIdentity",
        })
    }
}

/// `AWS Budgets <call> failed: <code>: <message>`, or the transport error in full.
pub fn describe_error<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    call: &str,
    err: &SdkError<E, R>,
) -> String {
    let message = super::error_message(err);
    format!("AWS Budgets {call} failed: {message}")
}

/// The filter for spend carrying the cost allocation tag `tag_key` with one of `values`.
///
/// `FilterExpression` is Cost Explorer's `Expression`: `Tags.Key` is the tag key itself
/// and `Values` are plain tag values (`{Key: "project", Values: ["alpha"], MatchOptions:
/// ["EQUALS"]}`), as in
/// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_TagValues.html>
/// and Cost Explorer's own filters
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_Expression.html>).
/// The `user:<key>$<value>` strings belong to the deprecated `CostFilters.TagKeyValue`;
/// sent here they match no spend, so the budget would track $0.
pub fn tag_filter(tag_key: &str, values: &[String]) -> Expression {
    Expression::builder()
        .tags(
            TagValues::builder()
                .key(tag_key)
                .set_values(Some(values.to_vec()))
                .match_options(MatchOption::Equals)
                .build(),
        )
        .build()
}

/// `AWS_ACCOUNT_ID` when set: 12 digits, or an error naming what is wrong.
fn account_from_environment() -> Result<Option<String>, AwsError> {
    match std::env::var("AWS_ACCOUNT_ID") {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) if value.trim().len() == 12 && value.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Ok(Some(value.trim().to_string()))
        }
        Ok(value) => Err(AwsError::Aws(format!(
            "AWS_ACCOUNT_ID is {value:?}: expected the 12-digit account id"
        ))),
        Err(_) => Ok(None),
    }
}

/// The account the credentials belong to, from STS GetCallerIdentity (honours
/// `AWS_ENDPOINT_URL_STS`). Any caller may make this call: it needs no IAM permission.
async fn caller_account(sdk_config: &aws_config::SdkConfig) -> Result<String, AwsError> {
    let client = aws_sdk_sts::Client::new(sdk_config);
    let identity = client.get_caller_identity().send().await.map_err(|e| {
        let message = match e.as_service_error() {
            Some(service) => format!(
                "{}: {}",
                service.code().unwrap_or("error"),
                service.message().unwrap_or("no message")
            ),
            None => DisplayErrorContext(&e).to_string(),
        };
        AwsError::NoAccount(message)
    })?;
    match identity.account() {
        Some(account) if account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit()) => Ok(account.to_string()),
        other => Err(AwsError::NoAccount(format!(
            "it answered the account {other:?}, not 12 digits"
        ))),
    }
}

fn aws_error<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    call: &str,
    err: SdkError<E, R>,
) -> AwsError {
    AwsError::Aws(describe_error(call, &err))
}

/// A Budgets client for one account.
pub struct AwsBudgets {
    client: aws_sdk_budgets::Client,
    /// The same client with the SDK's retries off, for calls that change things.
    acting: aws_sdk_budgets::Client,
    account_id: String,
    account_source: AwsAccountSource,
}

impl AwsBudgets {
    /// The standard AWS chain and endpoint variables (`AWS_ENDPOINT_URL_BUDGETS`). The account
    /// comes from the credentials (`AWS_ACCOUNT_ID`, SSO profiles) or, when they do not carry
    /// it, from STS GetCallerIdentity, as the AWS CLI and most AWS tools find it.
    pub async fn from_environment() -> Result<AwsBudgets, AwsError> {
        let sdk_config = super::sdk_config_from_environment().await;
        let credentials = super::credentials_within(&sdk_config).await.map_err(|e| {
            AwsError::Aws(super::describe_credentials_problem(
                &e,
                "budgets:ViewBudget and budgets:ModifyBudget",
            ))
        })?;
        let (account_id, account_source) = match (account_from_environment()?, credentials.account_id()) {
            (Some(account), _) => (account, AwsAccountSource::Environment),
            (None, Some(account)) => (account.as_str().to_string(), AwsAccountSource::Credentials),
            (None, None) => (caller_account(&sdk_config).await?, AwsAccountSource::CallerIdentity),
        };
        let mut aws = AwsBudgets::new(&sdk_config, account_id);
        aws.account_source = account_source;
        Ok(aws)
    }

    /// A client from an explicit SDK configuration, with the SDK's standard retries (Budgets
    /// calls are free, unlike Cost Explorer's) for reads and syncs, and a twin without them
    /// for a stop's calls that change things ([`AwsBudgets::acting`]).
    pub fn new(sdk_config: &aws_config::SdkConfig, account_id: String) -> AwsBudgets {
        let config = aws_sdk_budgets::config::Builder::from(sdk_config)
            .retry_config(aws_config::retry::RetryConfig::standard())
            .build();
        let acting = config
            .to_builder()
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .build();
        AwsBudgets {
            client: aws_sdk_budgets::Client::from_conf(config),
            acting: aws_sdk_budgets::Client::from_conf(acting),
            account_id,
            account_source: AwsAccountSource::Credentials,
        }
    }

    /// The underlying client, for reading back what a sync wrote and for budget actions.
    pub fn client(&self) -> &aws_sdk_budgets::Client {
        &self.client
    }

    /// The client for a stop's budget-action calls that change things (create, execute,
    /// delete): never retried by the SDK, so an answer lost on the way does not send the call
    /// again; the stop's claim and AWS's record of the action resolve it.
    pub fn acting(&self) -> &aws_sdk_budgets::Client {
        &self.acting
    }

    pub fn account_id(&self) -> &str {
        &self.account_id
    }

    /// `account 123456789012 (from STS GetCallerIdentity)`: which account, and how it was found.
    pub fn account_description(&self) -> String {
        format!("account {} ({})", self.account_id, self.account_source)
    }

    /// Every budget in the account, following NextToken, each with its `FilterExpression`:
    /// AWS leaves it out unless asked (`ShowFilterExpression`,
    /// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_DescribeBudgets.html>),
    /// and a sync that saw no filter would replace every filtered budget each time.
    pub async fn list(&self) -> Result<Vec<AwsBudget>, AwsError> {
        let mut budgets = Vec::new();
        let mut token = None;
        // Bounded: 100 per page, AWS allows 20,000 budgets per account.
        for _ in 0..200 {
            let page = self
                .client
                .describe_budgets()
                .account_id(&self.account_id)
                .max_results(100)
                .show_filter_expression(true)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| aws_error("DescribeBudgets", e))?;
            budgets.extend(page.budgets().iter().cloned());
            token = page.next_token().map(str::to_string).filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        Ok(budgets)
    }

    pub async fn notifications(&self, name: &str) -> Result<Vec<Notification>, AwsError> {
        let out = self
            .client
            .describe_notifications_for_budget()
            .account_id(&self.account_id)
            .budget_name(name)
            .send()
            .await
            .map_err(|e| aws_error("DescribeNotificationsForBudget", e))?;
        Ok(out.notifications().to_vec())
    }

    pub async fn delete(&self, name: &str) -> Result<(), AwsError> {
        self.client
            .delete_budget()
            .account_id(&self.account_id)
            .budget_name(name)
            .send()
            .await
            .map_err(|e| aws_error("DeleteBudget", e))?;
        Ok(())
    }

    pub async fn create(
        &self,
        budget: &AwsBudget,
        notifications: &[NotificationWithSubscribers],
    ) -> Result<(), AwsError> {
        self.client
            .create_budget()
            .account_id(&self.account_id)
            .budget(budget.clone())
            .set_notifications_with_subscribers(Some(notifications.to_vec()))
            .send()
            .await
            .map_err(|e| aws_error("CreateBudget", e))?;
        Ok(())
    }
}
