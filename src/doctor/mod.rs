//! `burnrate doctor`: the first thing to run after connecting AWS. It changes nothing. It makes
//! each read burnrate uses once, with the configured credentials, and checks the answer has
//! the shape burnrate reads (`reads`); it asks about each call that changes something without
//! making it: EC2's `DryRun` where there is a tagged instance to name, otherwise IAM's policy
//! simulator about the configured identity (`writes`); and it reads back one budget burnrate
//! made, with its filter, to see that it filters the project tag burnrate is configured with.
//! Each finding says which check it made. Cost Explorer charges USD 0.01 a request: a run
//! costs [`COST_EXPLORER_REQUESTS`] of them.

mod account_wide;
mod regional;
mod writes;

use aws_config::{Region, SdkConfig};

/// Cost Explorer requests one run makes (each USD 0.01).
pub const COST_EXPLORER_REQUESTS: u32 = 9;

/// How a finding was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// The call itself, once.
    Read,
    /// The call with `DryRun=true`: AWS checks the permission and does nothing.
    DryRun,
    /// IAM's policy simulator (`iam:SimulatePrincipalPolicy`) about the configured identity.
    Simulated,
    /// A budget burnrate made, read back.
    ReadBack,
}

impl How {
    fn label(self) -> &'static str {
        match self {
            How::Read => "read",
            How::DryRun => "dry run",
            How::Simulated => "policy simulator",
            How::ReadBack => "read back",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The IAM action the check is about (`ce:GetCostAndUsage`), with its region if any.
    pub call: String,
    pub how: How,
    pub passed: bool,
    /// What was found, or why it failed and what to do.
    pub detail: String,
}

impl Finding {
    fn pass(call: impl Into<String>, how: How, detail: impl Into<String>) -> Finding {
        Finding {
            call: call.into(),
            how,
            passed: true,
            detail: detail.into(),
        }
    }

    fn fail(call: impl Into<String>, how: How, detail: impl Into<String>) -> Finding {
        Finding {
            call: call.into(),
            how,
            passed: false,
            detail: detail.into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The identity's ARN, as STS names it.
    pub identity: Option<String>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn passed(&self) -> bool {
        !self.findings.is_empty() && self.findings.iter().all(|f| f.passed)
    }

    /// One line a finding, failures first, as the CLI prints them.
    pub fn lines(&self) -> Vec<String> {
        let width = self.findings.iter().map(|f| f.call.len()).max().unwrap_or(0);
        let mut findings: Vec<&Finding> = self.findings.iter().collect();
        findings.sort_by_key(|f| f.passed);
        findings
            .iter()
            .map(|f| {
                format!(
                    "{}  {:width$}  {}: {}",
                    if f.passed { "ok  " } else { "FAIL" },
                    f.call,
                    f.how.label(),
                    f.detail
                )
            })
            .collect()
    }
}

/// A read's answer judged: `ok` says what was found, or why the shape is not burnrate's.
fn judged<T, E>(
    call: &str,
    result: Result<T, aws_sdk_sts::error::SdkError<E, aws_sdk_sts::config::http::HttpResponse>>,
    ok: impl FnOnce(T) -> Result<String, String>,
) -> Finding
where
    E: aws_sdk_sts::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match result {
        Ok(answer) => match ok(answer) {
            Ok(detail) => Finding::pass(call, How::Read, detail),
            Err(why) => Finding::fail(call, How::Read, format!("unexpected answer: {why}")),
        },
        // Cost Explorer's answer when the account holds no commitments to report on
        // (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetSavingsPlansUtilization.html).
        // Only the commitments reads answer so for "nothing owned"; elsewhere it is a failure.
        Err(err)
            if (call.starts_with("ce:GetSavingsPlans") || call.starts_with("ce:GetReservation"))
                && err
                    .as_service_error()
                    .and_then(|e| e.code())
                    .is_some_and(|code| code == "DataUnavailableException") =>
        {
            Finding::pass(
                call,
                How::Read,
                "no data for the period (DataUnavailableException): none owned",
            )
        }
        Err(err) => Finding::fail(call, How::Read, crate::aws::error_message(&err)),
    }
}

/// What doctor checks against.
pub struct Settings<'a> {
    /// `BURNRATE_TAG_PROJECT`: the cost allocation tag key that names a project.
    pub tag_key: &'a str,
    /// `BURNRATE_AWS_REGIONS`; empty means the SDK's own region.
    pub regions: &'a [String],
}

/// Every check, in order; never changes anything.
pub async fn run(sdk: &SdkConfig, settings: &Settings<'_>) -> Report {
    let mut report = Report::default();
    let identity = match aws_sdk_sts::Client::new(sdk).get_caller_identity().send().await {
        Ok(identity) => identity,
        Err(err) => {
            report.findings.push(Finding::fail(
                "sts:GetCallerIdentity",
                How::Read,
                format!(
                    "{}: no other check can pass without an identity",
                    crate::aws::error_message(&err)
                ),
            ));
            return report;
        }
    };
    let (Some(arn), Some(account)) = (identity.arn(), identity.account()) else {
        report.findings.push(Finding::fail(
            "sts:GetCallerIdentity",
            How::Read,
            "STS named no ARN or account",
        ));
        return report;
    };
    report.identity = Some(arn.to_string());
    report.findings.push(Finding::pass(
        "sts:GetCallerIdentity",
        How::Read,
        format!("{arn} in account {account}"),
    ));
    report
        .findings
        .extend(account_wide::cost_explorer(sdk, settings.tag_key).await);
    report
        .findings
        .extend(account_wide::budgets(sdk, account, settings.tag_key).await);
    let regions: Vec<Option<String>> = if settings.regions.is_empty() {
        vec![None]
    } else {
        settings.regions.iter().cloned().map(Some).collect()
    };
    let mut tagged_instance = None;
    for region in &regions {
        let regional = match region {
            Some(region) => sdk.to_builder().region(Region::new(region.clone())).build(),
            None => sdk.clone(),
        };
        let (findings, instance) = regional::regional(&regional, settings.tag_key).await;
        report.findings.extend(findings);
        if tagged_instance.is_none() {
            tagged_instance = instance.map(|id| (regional, id));
        }
    }
    report
        .findings
        .extend(writes::check(sdk, arn, account, settings.tag_key, tagged_instance).await);
    report
}
