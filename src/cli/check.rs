//! `burnrate check`: the pre-flight budget check for CI and launch scripts. It asks a running
//! burnrate (`BURNRATE_URL`, with the API token in `BURNRATE_TOKEN`) and exits 0 (allow),
//! 10 (warn) or 20 (block); 1 when the check could not be made, 2 for bad usage.

use std::process::ExitCode;
use std::time::Duration;

use rust_decimal::Decimal;

use crate::preflight::model::GpuEstimate;
use crate::preflight::{PreflightAnswer, PreflightRequest};

#[derive(Debug, clap::Args)]
pub(super) struct CheckArgs {
    /// The project tag value the work will carry.
    #[arg(long, required_unless_present = "team")]
    project: Option<String>,
    /// The team (for work with no project yet, or to check that the project is its).
    #[arg(long)]
    team: Option<String>,
    /// The estimated cost in USD.
    #[arg(long, value_name = "USD", conflicts_with = "gpu")]
    cost: Option<Decimal>,
    /// A GPU instance type, priced on demand from the catalogue and `pricing:`.
    #[arg(long, value_name = "TYPE", requires_all = ["count", "hours"])]
    gpu: Option<String>,
    /// How many instances of --gpu.
    #[arg(long, value_name = "N", requires = "gpu")]
    count: Option<u32>,
    /// For how many hours.
    #[arg(long, value_name = "H", requires = "gpu")]
    hours: Option<Decimal>,
}

fn request(args: CheckArgs) -> Result<PreflightRequest, String> {
    let gpu = match (args.gpu, args.count, args.hours) {
        (None, None, None) => None,
        (Some(instance_type), Some(count), Some(hours)) => Some(GpuEstimate {
            instance_type,
            count,
            hours,
        }),
        _ => return Err("--gpu, --count and --hours go together".into()),
    };
    if args.cost.is_some() && gpu.is_some() {
        return Err("give --cost or --gpu/--count/--hours, not both".into());
    }
    Ok(PreflightRequest {
        project: args.project,
        team: args.team,
        estimated_cost_usd: args.cost,
        gpu,
    })
}

pub(super) async fn check(args: CheckArgs) -> ExitCode {
    let request = match request(args) {
        Ok(request) => request,
        Err(message) => return super::usage_error(&message),
    };
    let (Some(base), Some(token)) = (std::env::var("BURNRATE_URL").ok(), std::env::var("BURNRATE_TOKEN").ok()) else {
        return super::usage_error(
            "set BURNRATE_URL (the dashboard, e.g. https://burnrate.example.com) and BURNRATE_TOKEN (an API token)",
        );
    };
    let url = format!("{}/api/v1/preflight", base.trim_end_matches('/'));
    let client = match reqwest::Client::builder().timeout(Duration::from_secs(30)).build() {
        Ok(client) => client,
        Err(error) => return failed(&format!("building the HTTP client: {error}")),
    };
    let body = match serde_json::to_string(&request) {
        Ok(body) => body,
        Err(error) => return failed(&format!("encoding the request: {error}")),
    };
    let response = match client
        .post(&url)
        .bearer_auth(token.trim())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
    {
        Ok(response) => response,
        Err(error) => return failed(&format!("could not reach {url}: {error}")),
    };
    let status = response.status();
    let body = match response.text().await {
        Ok(body) => body,
        Err(error) => return failed(&format!("reading the answer from {url}: {error}")),
    };
    if !status.is_success() {
        // A problem+json's `detail`, else the status alone (never the token).
        let detail = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["detail"].as_str().map(str::to_string))
            .unwrap_or_default();
        return failed(&format!("{url} answered {status}: {detail}"));
    }
    let answer: PreflightAnswer = match serde_json::from_str(&body) {
        Ok(answer) => answer,
        Err(error) => return failed(&format!("{url} answered something other than a verdict: {error}")),
    };
    println!("{}", answer.verdict.key());
    for reason in &answer.reasons {
        println!("  {reason}");
    }
    println!("  estimate: {}", crate::format::usd(answer.estimate_usd));
    for b in &answer.budgets {
        println!(
            "  budget {:?} ({}): {} of {} forecast with the estimate, {} left",
            b.name,
            b.scope,
            crate::format::usd(b.forecast_with_estimate),
            crate::format::usd(b.amount),
            crate::format::usd(b.left_after)
        );
    }
    ExitCode::from(answer.verdict.exit_code())
}

fn failed(message: &str) -> ExitCode {
    eprintln!("burnrate: check: {message}");
    ExitCode::FAILURE
}
