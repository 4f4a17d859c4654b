//! Cost Explorer through the real AWS SDK. Every attempt is counted (each costs USD 0.01),
//! so the SDK's own retries are off and throttling is retried here, visibly and bounded.

use std::time::Duration;

use aws_config::{SdkConfig, retry::RetryConfig};
use aws_sdk_costexplorer::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_costexplorer::operation::get_cost_and_usage::GetCostAndUsageOutput;
use aws_sdk_costexplorer::types::{
    Context, DateInterval, Dimension, DimensionValues, Expression, Granularity, GroupDefinition, GroupDefinitionType,
};

use super::IngestError;
use super::response::{GrainSummary, GroupKeys, is_account_id};
use crate::config::IngestSettings;
use crate::costs::aws_account_views::{AwsAccountRow, AwsAccountView};
use crate::costs::store::{CostRow, Grain};
use crate::period::DateRange;

/// The metrics every query asks for; the fact tables hold exactly these.
pub const METRICS: [&str; 3] = ["UnblendedCost", "AmortizedCost", "UsageQuantity"];

/// Requests made so far in one run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RequestMeter {
    pub requests: u32,
}

/// Bounded exponential backoff with full jitter for LimitExceededException and transport errors.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// Attempts per request, the first included.
    pub max_attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_attempts: 6,
        }
    }
}

impl Backoff {
    fn delay_before(&self, retry: u32) -> Duration {
        let ceiling = self
            .first_delay
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
            .min(self.max_delay);
        // Full jitter: replicas throttled together do not retry together.
        ceiling.mul_f64(rand::random::<f64>())
    }
}

/// A Cost Explorer client.
#[derive(Clone)]
pub struct CostExplorer {
    pub(super) client: aws_sdk_costexplorer::Client,
    sdk_config: SdkConfig,
}

impl CostExplorer {
    /// The standard AWS chain: environment, profile, SSO, web identity (IRSA), IMDS; the
    /// standard endpoint variables; region us-east-1 unless configured (Cost Explorer's home).
    pub async fn from_environment() -> CostExplorer {
        CostExplorer::from_sdk_config(crate::aws::sdk_config_from_environment().await)
    }

    /// A client from an explicit SDK configuration. Retries stay off whatever it says.
    pub fn from_sdk_config(sdk_config: SdkConfig) -> CostExplorer {
        let service_config = aws_sdk_costexplorer::config::Builder::from(&sdk_config)
            .retry_config(RetryConfig::disabled())
            .build();
        CostExplorer {
            client: aws_sdk_costexplorer::Client::from_conf(service_config),
            sdk_config,
        }
    }

    /// The per-request bound the client was built with (`BURNRATE_AWS_TIMEOUT`).
    fn operation_timeout(&self) -> Option<Duration> {
        self.sdk_config.timeout_config().and_then(|t| t.operation_timeout())
    }

    /// Why no request could be signed, if so, with how to fix it.
    pub async fn credentials_problem(&self) -> Option<String> {
        match crate::aws::credentials_within(&self.sdk_config).await {
            Ok(_) => None,
            Err(error) => Some(crate::aws::describe_credentials_problem(
                &error,
                "ce:GetCostAndUsage and ce:GetDimensionValues",
            )),
        }
    }

    /// The pages of one group-by pair over `range` in one linked account (every account's
    /// spend together when `account` is `None`), fetched one at a time so a long window never
    /// sits in memory whole.
    pub fn pager<'a>(
        &'a self,
        range: DateRange,
        grain: Grain,
        account: Option<&'a LinkedAccount>,
        settings: &'a IngestSettings,
    ) -> Pager<'a> {
        Pager {
            cost_explorer: self,
            keys: GroupKeys::for_grain(grain, settings, account.map_or("", |a| &a.id)),
            query: Query {
                range,
                grain,
                account,
                settings,
                usage_types: &[],
            },
            chain: Chain::default(),
        }
    }

    /// The linked accounts with spend in `range`, with their names: `GetDimensionValues` for
    /// `LINKED_ACCOUNT`, every page followed. The name is the `description` attribute,
    /// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetDimensionValues.html>.
    pub async fn linked_accounts(
        &self,
        range: DateRange,
        backoff: Backoff,
        meter: &mut RequestMeter,
    ) -> Result<Vec<LinkedAccount>, IngestError> {
        let period = interval(range)?;
        let mut accounts = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let output = self
                .counted(backoff, meter, || {
                    self.client
                        .get_dimension_values()
                        .time_period(period.clone())
                        .dimension(Dimension::LinkedAccount)
                        .context(Context::CostAndUsage)
                        .set_next_page_token(token.clone())
                        .send()
                })
                .await?;
            for value in output.dimension_values() {
                let id = value.value().unwrap_or_default();
                if !is_account_id(id) {
                    return Err(IngestError::malformed(format!(
                        "Cost Explorer named a linked account {id:?}, not a 12-digit account ID"
                    )));
                }
                let name = value
                    .attributes()
                    .and_then(|a| a.get("description"))
                    .cloned()
                    .unwrap_or_default();
                accounts.push(LinkedAccount {
                    id: id.to_string(),
                    name: name.replace('\0', ""),
                    listed: true,
                });
            }
            token = output.next_page_token().filter(|t| !t.is_empty()).map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        accounts.sort_by(|a, b| a.id.cmp(&b.id));
        accounts.dedup_by(|a, b| a.id == b.id);
        Ok(accounts)
    }

    /// The pages of one of Cost Explorer's account views over `range`, unfiltered, fetched
    /// one at a time as the grains' are.
    pub fn account_pager(&self, range: DateRange, view: AwsAccountView) -> AwsAccountPager<'_> {
        AwsAccountPager {
            cost_explorer: self,
            range,
            view,
            chain: Chain::default(),
        }
    }

    /// One page of DAILY [`METRICS`] over `range`, grouped and filtered as given.
    async fn page(
        &self,
        range: DateRange,
        (group_by, filter): (Vec<GroupDefinition>, Option<Expression>),
        token: Option<String>,
        backoff: Backoff,
        meter: &mut RequestMeter,
    ) -> Result<GetCostAndUsageOutput, IngestError> {
        let period = interval(range)?;
        self.counted(backoff, meter, || {
            self.client
                .get_cost_and_usage()
                .time_period(period.clone())
                .granularity(Granularity::Daily)
                .set_metrics(Some(METRICS.iter().map(|m| m.to_string()).collect()))
                .set_group_by(Some(group_by.clone()))
                .set_filter(filter.clone())
                .set_next_page_token(token.clone())
                .send()
        })
        .await
    }

    /// One request, counted, with throttling and dropped connections retried here (bounded,
    /// with backoff) and everything else returned as it failed.
    pub(super) async fn counted<T, E, F, Fut>(
        &self,
        backoff: Backoff,
        meter: &mut RequestMeter,
        mut send: F,
    ) -> Result<T, IngestError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SdkError<E, aws_sdk_costexplorer::config::http::HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let mut attempt = 1;
        loop {
            meter.requests += 1;
            let error = match send().await {
                Ok(output) => return Ok(output),
                Err(error) => error,
            };
            let retryable = is_retryable(&error);
            if !retryable || attempt >= backoff.max_attempts {
                let failure = IngestError::from_sdk(&error, self.operation_timeout());
                return Err(match retryable {
                    true => IngestError::GaveUp {
                        attempts: attempt,
                        last: Box::new(failure),
                    },
                    false => failure,
                });
            }
            let delay = backoff.delay_before(attempt);
            tracing::warn!(attempt, delay_ms = delay.as_millis() as u64, error = %IngestError::from_sdk(&error, self.operation_timeout()), "Cost Explorer request will be retried");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}

/// A member account of the organisation (or the account itself, when it is not in one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedAccount {
    /// The 12-digit account ID.
    pub id: String,
    pub name: String,
    /// Whether `GetDimensionValues` listed it (else only an account view named it).
    pub listed: bool,
}

pub(super) fn interval(range: DateRange) -> Result<DateInterval, IngestError> {
    DateInterval::builder()
        .start(range.from.to_string())
        .end(range.to.to_string())
        .build()
        .map_err(|e| IngestError::CostExplorer(format!("building the request: {e}")))
}

/// One group-by pair's question: its days, its grain and the account it is filtered to.
struct Query<'a> {
    range: DateRange,
    grain: Grain,
    account: Option<&'a LinkedAccount>,
    settings: &'a IngestSettings,
    /// The usage types asked for; empty asks for all.
    usage_types: &'a [String],
}

/// Walks one group-by pair's NextPageToken chain.
pub struct Pager<'a> {
    cost_explorer: &'a CostExplorer,
    query: Query<'a>,
    keys: GroupKeys,
    chain: Chain,
}

impl<'a> Pager<'a> {
    /// Asks for `usage_types` only (`Grain::ByUserGpu`: the account's GPU usage types).
    pub fn of_usage_types(mut self, usage_types: &'a [String]) -> Pager<'a> {
        self.query.usage_types = usage_types;
        self
    }

    /// The next page's rows, added to `summary`; `None` after the last page.
    pub async fn next(
        &mut self,
        summary: &mut GrainSummary,
        backoff: Backoff,
        meter: &mut RequestMeter,
    ) -> Result<Option<Vec<CostRow>>, IngestError> {
        let query = &self.query;
        let asked = (
            group_by(query.grain, query.settings),
            filter(query.grain, query.account.map(|a| a.id.as_str()), query.usage_types),
        );
        match self
            .chain
            .next(self.cost_explorer, query.range, asked, backoff, meter)
            .await?
        {
            Some(output) => Ok(Some(summary.add_page(output.results_by_time(), &self.keys)?)),
            None => Ok(None),
        }
    }
}

/// A NextPageToken chain: the token to send next, and whether the last page has come.
#[derive(Default)]
struct Chain {
    token: Option<String>,
    done: bool,
}

impl Chain {
    /// The next page of the chain; `None` after the last.
    async fn next(
        &mut self,
        cost_explorer: &CostExplorer,
        range: DateRange,
        asked: (Vec<GroupDefinition>, Option<Expression>),
        backoff: Backoff,
        meter: &mut RequestMeter,
    ) -> Result<Option<GetCostAndUsageOutput>, IngestError> {
        if self.done {
            return Ok(None);
        }
        let output = cost_explorer
            .page(range, asked, self.token.take(), backoff, meter)
            .await?;
        self.token = output.next_page_token().filter(|t| !t.is_empty()).map(str::to_string);
        self.done = self.token.is_none();
        Ok(Some(output))
    }
}

/// Walks one account view's NextPageToken chain.
pub struct AwsAccountPager<'a> {
    cost_explorer: &'a CostExplorer,
    range: DateRange,
    view: AwsAccountView,
    chain: Chain,
}

impl AwsAccountPager<'_> {
    /// The next page's rows, added to `summary`; `None` after the last page.
    pub async fn next(
        &mut self,
        summary: &mut GrainSummary,
        backoff: Backoff,
        meter: &mut RequestMeter,
    ) -> Result<Option<Vec<AwsAccountRow>>, IngestError> {
        let group_by: Vec<GroupDefinition> = self.view.dimensions().iter().map(|key| dimension(key)).collect();
        match self
            .chain
            .next(self.cost_explorer, self.range, (group_by, None), backoff, meter)
            .await?
        {
            Some(output) => Ok(Some(summary.add_account_page(output.results_by_time(), self.view)?)),
            None => Ok(None),
        }
    }
}

/// The two GroupBy of `grain`: the project tag and one more (Cost Explorer allows two).
fn group_by(grain: Grain, settings: &IngestSettings) -> Vec<GroupDefinition> {
    let tag = |key: &str| {
        GroupDefinition::builder()
            .r#type(GroupDefinitionType::Tag)
            .key(key)
            .build()
    };
    let second = match grain {
        Grain::ByUser | Grain::ByUserCredit | Grain::ByUserRefund | Grain::ByUserTax | Grain::ByUserGpu => {
            tag(&settings.tag_user)
        }
        Grain::ByUsageType => dimension("USAGE_TYPE"),
        Grain::ByService => dimension("SERVICE"),
        Grain::ByRecordType => dimension("RECORD_TYPE"),
    };
    vec![tag(&settings.tag_project), second]
}

/// A `DIMENSION` group.
fn dimension(key: &str) -> GroupDefinition {
    GroupDefinition::builder()
        .r#type(GroupDefinitionType::Dimension)
        .key(key)
        .build()
}

/// A grain's filter: `RECORD_TYPE` equal to its record type, for the grains of one (a third
/// grouping is not allowed, so each record type users are charged by is its own query),
/// `USAGE_TYPE` one of `usage_types` where some are given (a dimension's values are ORed), and
/// `LINKED_ACCOUNT` equal to the account, for one account's facts; all under `And`. Cost
/// Explorer's `Expression`,
/// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_Expression.html>.
fn filter(grain: Grain, account: Option<&str>, usage_types: &[String]) -> Option<Expression> {
    let equals = |key: Dimension, value: &str| {
        Expression::builder()
            .dimensions(DimensionValues::builder().key(key).values(value).build())
            .build()
    };
    let mut parts: Vec<Expression> = Vec::new();
    if let Some(record_type) = grain.record_type() {
        parts.push(equals(Dimension::RecordType, record_type));
    }
    if !usage_types.is_empty() {
        let values = DimensionValues::builder()
            .key(Dimension::UsageType)
            .set_values(Some(usage_types.to_vec()))
            .build();
        parts.push(Expression::builder().dimensions(values).build());
    }
    if let Some(account) = account {
        parts.push(equals(Dimension::LinkedAccount, account));
    }
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Expression::builder().set_and(Some(parts)).build()),
    }
}

/// Throttling and dropped connections are worth another (counted) try. A request that used
/// up `BURNRATE_AWS_TIMEOUT` is not: the endpoint hangs, and the run should fail and free
/// the lock rather than wait that long again. Nor is anything AWS rejected on its merits.
fn is_retryable<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> bool {
    match error {
        SdkError::ServiceError(service) => {
            matches!(
                service.err().code(),
                Some("LimitExceededException" | "ThrottlingException" | "ServiceUnavailableException")
            )
        }
        SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
        _ => false,
    }
}

impl IngestError {
    /// `Code: message` for errors AWS answered; the SDK's full context for the rest
    /// (missing credentials, unreachable endpoint).
    fn from_sdk<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
        error: &SdkError<E, R>,
        operation_timeout: Option<Duration>,
    ) -> IngestError {
        match error {
            SdkError::ServiceError(service) => {
                let err = service.err();
                let text = format!(
                    "{}: {}",
                    err.code().unwrap_or("UnknownError"),
                    err.message().unwrap_or("(no message)")
                );
                match err.code() {
                    Some("DataUnavailableException") => IngestError::DataUnavailable(text),
                    _ => IngestError::CostExplorer(text),
                }
            }
            SdkError::TimeoutError(_) => IngestError::CostExplorer(format!(
                "Cost Explorer did not answer within {:?} (BURNRATE_AWS_TIMEOUT); nothing was stored",
                operation_timeout.unwrap_or_default()
            )),
            other => IngestError::CostExplorer(format!("Cost Explorer request failed: {}", DisplayErrorContext(other))),
        }
    }
}
