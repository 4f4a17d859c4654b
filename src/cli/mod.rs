//! The `burnrate` command line. Exit status: 0 success, 1 failure, 2 bad usage or configuration.

use std::process::ExitCode;

use chrono::NaiveDate;
use clap::{Parser, Subcommand};

use crate::config::{self, Config, ENV_HELP, LogFormat};
use crate::costs::export::{self, Granularity};
use crate::demo::DemoOptions;
use crate::period::{DateRange, Metric, days_before};

mod accounts;
mod anomalies;
mod check;
mod data;
mod org;
mod serve;
mod tokens;

use accounts::{change_account, create_account};
use data::{bench_ingest, export_csv, ingest};
use org::{evaluate_budgets, evaluate_enforcement, export_config, import_config, sync_budgets};
use serve::{load_demo, migrate, serve};

#[derive(Debug, Parser)]
#[command(name = "burnrate", version, about = "Self-hosted GPU and AI cloud FinOps dashboard", after_help = ENV_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the dashboard (migrations run first).
    #[command(after_help = ENV_HELP)]
    Serve {
        /// Load the demo organisation first if the database has no cost data.
        #[arg(long)]
        demo: bool,
        /// Listen address, host:port; overrides BURNRATE_ADDR.
        #[arg(long, value_name = "HOST:PORT")]
        addr: Option<String>,
    },
    /// Apply pending database migrations and exit.
    #[command(after_help = ENV_HELP)]
    Migrate,
    /// Fill the database with a deterministic synthetic GPU organisation.
    #[command(after_help = ENV_HELP)]
    Demo {
        /// Multiply projects, users and cost rows by N (for benchmarks); 1 is about 150k rows.
        #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
        scale: u32,
        /// Last day of demo data, YYYY-MM-DD (UTC), before today [default: yesterday].
        #[arg(long, value_name = "DATE")]
        until: Option<NaiveDate>,
        /// Replace existing cost data, teams, projects and users. Without it, a database that
        /// holds only demo data is brought up to date instead (Estimated days restated).
        #[arg(long)]
        replace: bool,
    },
    /// Write costs as CSV to standard output: `date`, the keys in order, `cost`.
    #[command(after_help = ENV_HELP)]
    Export {
        /// First day, YYYY-MM-DD (UTC).
        #[arg(long, value_name = "DATE")]
        from: NaiveDate,
        /// Day after the last, YYYY-MM-DD (exclusive, as in Cost Explorer).
        #[arg(long, value_name = "DATE")]
        to: NaiveDate,
        /// Comma-separated: team, project, user, service, usage_type, instance_type, workload,
        /// record_type, account, account_name. user, service, usage_type/instance_type/workload
        /// and record_type exclude each other (Cost Explorer's two-dimension limit).
        #[arg(long, value_name = "KEYS")]
        group_by: String,
        /// Only the spend in this linked AWS account (12 digits).
        #[arg(long, value_name = "ID")]
        account: Option<String>,
        /// daily or monthly (rows dated the 1st).
        #[arg(long, default_value = "daily", value_parser = ["daily", "monthly"])]
        granularity: String,
        /// unblended or amortized.
        #[arg(long, default_value = "unblended", value_parser = ["unblended", "amortized"])]
        metric: String,
        /// net (credits and refunds subtracted, as the bill) or gross (before them); gross
        /// takes team, project, record_type, account and account_name keys only.
        #[arg(long, default_value = "net", value_parser = ["net", "gross"])]
        credits: String,
        /// Prefix text cells that begin with =, +, -, @, TAB or CR with ' so a spreadsheet
        /// shows them as text instead of running them as formulas (the dashboard's downloads
        /// always do). Without it, values are written verbatim for programs.
        #[arg(long)]
        excel_safe: bool,
    },
    /// Write GPU savings recommendations as CSV to standard output, largest monthly saving
    /// first: kind,team,project,usage_type,instance_type,recommended,from,to,basis_cost,
    /// monthly_saving,detail,compounded_saving. Utilisation rows need BURNRATE_PROMETHEUS_URL.
    #[command(after_help = ENV_HELP)]
    Insights {
        /// How many of the last settled days with data to look at.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=365))]
        days: u32,
        /// Prefix text cells that begin with =, +, -, @, TAB or CR with ' for spreadsheets.
        #[arg(long)]
        excel_safe: bool,
    },
    /// Write as CSV what the anomaly rule (with its defaults) flags over history, to tune it
    /// before alerts go out: from,to,scope,name,spend,baseline,excess,driver,driver_excess
    /// (`to` the day after the last anomalous day). Each day is judged on the 90 days before.
    #[command(after_help = ENV_HELP)]
    Anomalies {
        /// First day to judge, YYYY-MM-DD (UTC).
        #[arg(long, value_name = "DATE")]
        from: NaiveDate,
        /// Day after the last, YYYY-MM-DD (exclusive).
        #[arg(long, value_name = "DATE")]
        to: NaiveDate,
        /// Only these series: comma-separated org, team, project, user, service, account.
        #[arg(long, value_name = "SCOPES")]
        scope: Option<String>,
        /// Prefix text cells that begin with =, +, -, @, TAB or CR with ' for spreadsheets.
        #[arg(long)]
        excel_safe: bool,
    },
    /// Write a month's chargeback statement to standard output: per team, usage by project
    /// and shared-cost rule, credits, refunds, tax and the total (CSV header
    /// month,team,section,item,unblended,amortized), or the printable HTML. A month that
    /// has ended with all its days settled is frozen the first time it is asked for.
    #[command(after_help = ENV_HELP)]
    Statement {
        /// The month, YYYY-MM.
        #[arg(long, value_name = "YYYY-MM")]
        month: String,
        /// One team (or Unassigned); every team when left out.
        #[arg(long, value_name = "NAME")]
        team: Option<String>,
        /// Only the spend in this linked AWS account (12 digits): computed now, never frozen.
        #[arg(long, value_name = "ID")]
        account: Option<String>,
        #[arg(long, default_value = "csv", value_parser = ["csv", "html"])]
        format: String,
        /// Prefix CSV text cells that begin with =, +, -, @, TAB or CR with ' for spreadsheets
        /// (the dashboard's download always does).
        #[arg(long)]
        excel_safe: bool,
    },
    /// Fetch costs from AWS Cost Explorer into the database once, then exit. Without --from/--to
    /// it fetches what can still change (or backfills on the first run). Exit status 3: another
    /// ingestion is running.
    #[command(after_help = ENV_HELP)]
    Ingest {
        /// First day to re-fetch, YYYY-MM-DD (UTC).
        #[arg(long, value_name = "DATE", requires = "to")]
        from: Option<NaiveDate>,
        /// Day after the last to re-fetch, YYYY-MM-DD (exclusive, as in Cost Explorer).
        #[arg(long, value_name = "DATE", requires = "from")]
        to: Option<NaiveDate>,
    },
    /// API tokens for `/api/v1` (`Authorization: Bearer brt_…`).
    #[command(after_help = ENV_HELP)]
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Pre-flight budget check for CI and launch scripts: asks the dashboard at BURNRATE_URL
    /// (with the API token in BURNRATE_TOKEN) whether the budgets and the enforcement policy
    /// allow the work, prints the verdict and why, and exits 0 (allow), 10 (warn) or 20
    /// (block); 1 when no verdict could be had.
    Check(check::CheckArgs),
    /// Teams, budgets, approvals and enforcement policies as code: one YAML file.
    #[command(after_help = ENV_HELP)]
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Budgets: evaluate thresholds and send alerts, or sync them to AWS Budgets.
    #[command(after_help = ENV_HELP)]
    Budgets {
        #[command(subcommand)]
        command: BudgetsCommand,
    },
    /// Approved high-cost projects and enforcement.
    #[command(after_help = ENV_HELP)]
    Enforce {
        #[command(subcommand)]
        command: EnforceCommand,
    },
    /// Check the AWS connection without changing anything: each read once, each call that
    /// changes something by dry run or IAM's policy simulator, and one budget read back.
    /// Exit 0 when every check passes, 1 when one fails. Costs 8 Cost Explorer requests.
    #[command(after_help = ENV_HELP)]
    Doctor,
    /// Measure performance on this machine (see docs/PERFORMANCE.md).
    #[command(after_help = ENV_HELP)]
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Manage sign-in accounts.
    #[command(after_help = ENV_HELP)]
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Check FILE whole, then apply it in one transaction; on any error nothing changes and
    /// each bad entry is named with its line. Within each section present, entries missing
    /// from the file are removed.
    Import {
        /// The YAML file.
        file: std::path::PathBuf,
        /// Check the file and print what would change, without changing anything.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write the current teams, budgets, approvals and policies as YAML to standard output.
    Export,
}

#[derive(Debug, Subcommand)]
enum BudgetsCommand {
    /// Evaluate every budget for its current period, queue one alert per newly crossed
    /// threshold and send every queued alert now (SMTP_URL). Safe to repeat: no alert is queued
    /// twice, and each recipient gets it at least once.
    Evaluate,
    /// Make AWS Budgets match burnrate's budgets (`burnrate-<id>`); other AWS budgets are untouched.
    /// Also lists orphaned enforcement budgets (`burnrate-enforce-<id>` no action needs).
    Sync {
        /// Delete the orphaned enforcement budgets and their budget actions.
        #[arg(long)]
        prune: bool,
    },
}

#[derive(Debug, Subcommand)]
enum EnforceCommand {
    /// Judge every project against its policy for the current period and print one CSV line
    /// per violation and action: project,team,period_start,spend,limit,reason,action,mode,status.
    /// Each violation's actions are recorded once, however often this runs.
    Evaluate,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Rows per second from parsed Cost Explorer pages into PostgreSQL. Writes a synthetic
    /// window in 1900 inside a transaction that is rolled back: the database is left unchanged.
    Ingest {
        /// Fact rows to write across the three group-by pairs.
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=50_000_000))]
        rows: u64,
    },
    /// Reads GPU utilisation from the configured sources (BURNRATE_PROMETHEUS_URL,
    /// BURNRATE_CLOUDWATCH) over the last DAYS at five-minute steps, as the Savings page does,
    /// and prints what was read and how long it took. Touches no database.
    Utilisation {
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=63))]
        days: u32,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Create a token for an account and print its secret alone on standard output (once).
    Create(tokens::CreateArgs),
    /// List every token as CSV (never a secret): email,name,hint,role,team,service,created,expires,last_used,state.
    List,
    /// Revoke an account's live token by name; its next use is refused.
    Revoke {
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Create an account. The password is read from standard input (one line), or prompted
    /// for twice when standard input is a terminal.
    Create {
        /// The account's email address (its sign-in name).
        #[arg(long)]
        email: String,
        /// Display name.
        #[arg(long, default_value = "")]
        name: String,
        /// admin (finance: everything), lead (edits its own teams' budgets) or viewer.
        #[arg(long, default_value = "admin", value_parser = ["admin", "lead", "viewer"])]
        role: String,
    },
    /// Disable an account: it can no longer sign in and its sessions end at once. Its history
    /// stays. The last active admin cannot be disabled.
    Disable {
        #[arg(long)]
        email: String,
    },
    /// Enable a disabled account again.
    Enable {
        #[arg(long)]
        email: String,
    },
    /// Delete an account and end its sessions; audit entries keep its email. The last active
    /// admin cannot be deleted.
    Delete {
        #[arg(long)]
        email: String,
    },
}

/// Parses arguments and the environment, then runs the chosen subcommand.
pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => return usage_error(&err.to_string()),
    };
    init_tracing(config.log_format);
    let result = match cli.command {
        Command::Serve { demo, addr } => {
            let mut config = config;
            if let Some(addr) = addr {
                match config::parse_addr("--addr", &addr) {
                    Ok(addr) => config.addr = addr,
                    Err(err) => return usage_error(&err.to_string()),
                }
            }
            serve(config, demo).await
        }
        Command::Migrate => migrate(config).await,
        Command::Insights { days, excel_safe } => data::insights(config, days, excel_safe).await,
        Command::Anomalies {
            from,
            to,
            scope,
            excel_safe,
        } => {
            let range = match export::checked_range(from, to) {
                Ok(range) => range,
                Err(message) => return usage_error(&format!("--from/--to: {message}")),
            };
            let scopes = match anomalies::scopes(scope.as_deref()) {
                Ok(scopes) => scopes,
                Err(message) => return usage_error(&format!("--scope: {message}")),
            };
            anomalies::print(config, range, &scopes, excel_safe).await
        }
        Command::Statement {
            month,
            team,
            account,
            format,
            excel_safe,
        } => {
            let month = match crate::statements::store::parse_month(&month) {
                Ok(month) => month,
                Err(message) => return usage_error(&format!("--month: {message}")),
            };
            let account = match crate::period::AwsAccountId::parse_filter(account.as_deref()) {
                Ok(account) => account,
                Err(message) => return usage_error(&format!("--account: {message}")),
            };
            org::statement(config, month, (team, account), (format == "html", excel_safe)).await
        }
        Command::Demo { scale, until, replace } => {
            let today = chrono::Utc::now().date_naive();
            let until = until.unwrap_or_else(|| days_before(today, 1));
            if until >= today {
                return usage_error(&format!(
                    "--until {until}: the demo ends before today ({today}, UTC), which has no figures yet"
                ));
            }
            load_demo(config, DemoOptions { scale, until }, replace).await
        }
        Command::Export {
            from,
            to,
            group_by,
            account,
            granularity,
            metric,
            credits,
            excel_safe,
        } => {
            let keys = match export::checked_keys(&group_by) {
                Ok(keys) => keys,
                Err(message) => return usage_error(&format!("--group-by: {message}")),
            };
            let account = match crate::period::AwsAccountId::parse_filter(account.as_deref()) {
                Ok(account) => account,
                Err(message) => return usage_error(&format!("--account: {message}")),
            };
            let range = match export::checked_range(from, to) {
                Ok(range) => range,
                Err(_) => return usage_error("--from must be before --to (--to is exclusive)"),
            };
            let granularity = if granularity == "monthly" {
                Granularity::Monthly
            } else {
                Granularity::Daily
            };
            let metric = if metric == "amortized" {
                Metric::Amortized
            } else {
                Metric::Unblended
            };
            let style = if excel_safe {
                export::CsvStyle::ExcelSafe
            } else {
                export::CsvStyle::Verbatim
            };
            let credits = crate::period::Credits::parse(Some(&credits)).unwrap_or_default();
            if let Err(message) = export::table_for_credits(&keys, credits) {
                return usage_error(&format!("--credits: {message}"));
            }
            let selection = export::Selection {
                granularity,
                metric,
                credits,
                account,
                team: None,
            };
            export_csv(config, range, keys, &selection, style).await
        }
        Command::Check(args) => return check::check(args).await,
        Command::Doctor => return doctor(&config).await,
        Command::Token { command } => match command {
            TokenCommand::Create(args) => tokens::create_token(config, args).await,
            TokenCommand::List => tokens::list_tokens(config).await,
            TokenCommand::Revoke { name, email } => tokens::revoke_token(config, &name, &email).await,
        },
        Command::Ingest { from, to } => {
            let window = match from.zip(to) {
                Some((from, to)) if from >= to => return usage_error("--from must be before --to (--to is exclusive)"),
                window => window.map(|(from, to)| DateRange { from, to }),
            };
            return ingest(config, window).await;
        }
        Command::Config {
            command: ConfigCommand::Import { file, dry_run },
        } => import_config(config, &file, dry_run).await,
        Command::Config {
            command: ConfigCommand::Export,
        } => export_config(config).await,
        Command::Budgets {
            command: BudgetsCommand::Evaluate,
        } => evaluate_budgets(config).await,
        Command::Budgets {
            command: BudgetsCommand::Sync { prune },
        } => sync_budgets(config, prune).await,
        Command::Enforce {
            command: EnforceCommand::Evaluate,
        } => evaluate_enforcement(config).await,
        Command::Bench {
            command: BenchCommand::Ingest { rows },
        } => bench_ingest(config, rows as usize).await,
        Command::Bench {
            command: BenchCommand::Utilisation { days },
        } => data::bench_utilisation(config, days).await,
        Command::Admin { command } => {
            use crate::auth::lifecycle::Change;
            match command {
                AdminCommand::Create { email, name, role } => create_account(config, &email, &name, &role).await,
                AdminCommand::Disable { email } => change_account(config, &email, Change::Disable).await,
                AdminCommand::Enable { email } => change_account(config, &email, Change::Enable).await,
                AdminCommand::Delete { email } => change_account(config, &email, Change::Delete).await,
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let message = one_line(&error);
            tracing::error!("{message}");
            eprintln!("burnrate: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The error chain on one line, "what burnrate was doing: why it failed". A cause whose
/// text its wrapper already shows (sqlx and the AWS SDK repeat their source) is left out.
fn one_line(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain().map(ToString::to_string) {
        if message.contains(&cause) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&cause);
    }
    message
}

/// `burnrate doctor`: prints each finding, failures first; exit 0 only when all pass.
async fn doctor(config: &Config) -> ExitCode {
    let sdk = crate::aws::sdk_config_from_environment().await;
    let settings = crate::doctor::Settings {
        tag_key: &config.ingest.tag_project,
        regions: &config.aws_regions,
    };
    let report = crate::doctor::run(&sdk, &settings).await;
    println!(
        "burnrate doctor: {} (changes nothing; {} Cost Explorer requests, USD 0.01 each)",
        report.identity.as_deref().unwrap_or("no AWS identity"),
        crate::doctor::COST_EXPLORER_REQUESTS
    );
    for line in report.lines() {
        println!("{line}");
    }
    let failed = report.findings.iter().filter(|f| !f.passed).count();
    if report.passed() {
        println!("every check passed");
        ExitCode::SUCCESS
    } else {
        println!("{failed} of {} checks failed", report.findings.len());
        ExitCode::FAILURE
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("burnrate: {message}");
    ExitCode::from(2)
}

/// The default log filter. The AWS SDK's own warnings are multi-line dumps of every
/// provider it tried; burnrate reports what it needs of them in one line (a missing
/// credential, a failed request), so only their errors pass. `RUST_LOG` replaces all this.
const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,aws_config=error,aws_smithy_runtime=error,aws_runtime=error";

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_chain_reads_as_one_line_with_each_cause_once() {
        let io = std::io::Error::other("connection refused");
        let error = anyhow::Error::new(io).context("loading the demo");
        assert_eq!(one_line(&error), "loading the demo: connection refused");
        // A wrapper that already quotes its cause does not repeat it.
        let quoted = anyhow::anyhow!("database: connection refused").context("migrating");
        let twice = quoted.context("database: connection refused");
        assert_eq!(one_line(&twice), "database: connection refused: migrating");
    }
}
