//! The `burnrate` command line. Exit status: 0 success, 1 failure, 2 bad usage or configuration.

use std::process::ExitCode;

use chrono::NaiveDate;
use clap::{Parser, Subcommand};

use crate::config::{self, Config, ENV_HELP, LogFormat};
use crate::costs::export::{self, Granularity, Key};
use crate::db::Database;
use crate::demo::{self, DemoOptions};
use crate::ingestion::{
    self,
    cost_explorer::{Backoff, CostExplorer},
    run::{Outcome, RunOptions, Trigger},
};
use crate::period::{DateRange, Metric, days_before};
use crate::server::{self, AppState};

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
        /// Comma-separated: team, project, user, service, usage_type, instance_type. user, service and
        /// usage_type/instance_type exclude each other (Cost Explorer's two-dimension limit).
        #[arg(long, value_name = "KEYS")]
        group_by: String,
        /// daily or monthly (rows dated the 1st).
        #[arg(long, default_value = "daily", value_parser = ["daily", "monthly"])]
        granularity: String,
        /// unblended or amortized.
        #[arg(long, default_value = "unblended", value_parser = ["unblended", "amortized"])]
        metric: String,
        /// Prefix text cells that begin with =, +, -, @, TAB or CR with ' so a spreadsheet
        /// shows them as text instead of running them as formulas (the dashboard's downloads
        /// always do). Without it, values are written verbatim for programs.
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
            granularity,
            metric,
            excel_safe,
        } => {
            let keys = match export::checked_keys(&group_by) {
                Ok(keys) => keys,
                Err(message) => return usage_error(&format!("--group-by: {message}")),
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
            export_csv(config, range, keys, (granularity, metric), style).await
        }
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
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("burnrate: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("burnrate: {message}");
    ExitCode::from(2)
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

async fn serve(config: Config, demo: bool) -> Result<(), String> {
    // Bind first: a taken port should fail before a database cluster is started.
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let result = async {
        if demo {
            let yesterday = days_before(chrono::Utc::now().date_naive(), 1);
            if demo::database_is_empty(&db.pool).await.map_err(|e| e.to_string())? {
                let options = DemoOptions {
                    scale: 1,
                    until: yesterday,
                };
                demo::load(&db.pool, options)
                    .await
                    .map_err(|e| format!("loading the demo: {e}"))?;
            } else if demo::holds_only_demo_data(&db.pool).await.map_err(|e| e.to_string())? {
                // A demo started again days later restates its Estimated days, as ingestion would.
                demo::refresh(&db.pool, yesterday)
                    .await
                    .map_err(|e| format!("bringing the demo up to date: {e}"))?;
            }
            if let Some(created) = demo::accounts::create_if_none(&db.pool)
                .await
                .map_err(|e| e.to_string())?
            {
                println!("{}", demo::accounts::credentials_banner(&created));
            }
        }
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        tracing::info!("burnrate is serving on http://{addr}");
        let state = AppState::new(config, db.pool.clone());
        let schedule = tokio::spawn(ingestion::schedule::run_forever(
            db.pool.clone(),
            state.config.ingest.clone(),
            state.ingest_status.clone(),
            state.alerts.clone(),
            state.config.public_url.as_ref().map(|u| u.origin.clone()),
            state.enforcement.clone(),
        ));
        // Alerts queued while SMTP was down go out within a minute of its return.
        let alerts = tokio::spawn(
            state
                .alerts
                .clone()
                .run_forever(db.pool.clone(), std::time::Duration::from_secs(60)),
        );
        // Stops AWS is executing are followed every minute; disarms reach AWS when woken.
        let enforcement = tokio::spawn(crate::enforcement::reconcile::run_forever(
            db.pool.clone(),
            state.enforcement.clone(),
            std::time::Duration::from_secs(60),
        ));
        let served = server::serve(listener, state).await.map_err(|e| e.to_string());
        schedule.abort();
        alerts.abort();
        enforcement.abort();
        served
    }
    .await;
    db.close().await;
    result
}

async fn migrate(config: Config) -> Result<(), String> {
    let db = Database::open_for_batch(&config).await.map_err(|e| e.to_string())?;
    tracing::info!("migrations are up to date");
    db.close().await;
    Ok(())
}

async fn load_demo(config: Config, options: DemoOptions, replace: bool) -> Result<(), String> {
    let db = Database::open_for_batch(&config).await.map_err(|e| e.to_string())?;
    let result = async {
        if !replace && !demo::database_is_empty(&db.pool).await.map_err(|e| e.to_string())? {
            if !demo::holds_only_demo_data(&db.pool).await.map_err(|e| e.to_string())? {
                return Err(
                    "the database already holds cost data; pass --replace to overwrite it with the demo".to_string(),
                );
            }
            match demo::refresh(&db.pool, options.until)
                .await
                .map_err(|e| e.to_string())?
            {
                Some(window) => println!(
                    "demo brought up to date: {} to {} written again (Estimated days restated)",
                    window.from,
                    window.last_day()
                ),
                None => println!("the demo is already up to date through {}", options.until),
            }
            return Ok(());
        }
        let summary = demo::load(&db.pool, options).await.map_err(|e| e.to_string())?;
        println!(
            "demo loaded: {} teams, {} projects, {} users, {} cost rows, {} to {}",
            summary.teams, summary.projects, summary.users, summary.rows, summary.from, summary.until
        );
        Ok(())
    }
    .await;
    db.close().await;
    result
}

async fn create_account(config: Config, email: &str, name: &str, role: &str) -> Result<(), String> {
    use crate::auth::{Role, accounts};
    let password = read_new_password()?;
    let role = Role::parse(role).map_err(|e| e.to_string())?;
    let new = accounts::NewAccount::validate(email, name, role, &password).map_err(|e| e.to_string())?;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let actor = crate::audit::record::Actor::system("cli");
    let result = accounts::create(&db.pool, &actor, new).await.map_err(|e| e.to_string());
    db.close().await;
    result?;
    println!("created {} account {}", role.key(), accounts::normalise_email(email));
    Ok(())
}

async fn change_account(config: Config, email: &str, change: crate::auth::lifecycle::Change) -> Result<(), String> {
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let actor = crate::audit::record::Actor::system("cli");
    let result = crate::auth::lifecycle::apply(&db.pool, &actor, email, change).await;
    db.close().await;
    result.map_err(|e| e.to_string())?;
    let done = match change {
        crate::auth::lifecycle::Change::Disable => "disabled",
        crate::auth::lifecycle::Change::Enable => "enabled",
        crate::auth::lifecycle::Change::Delete => "deleted",
    };
    println!("{done} account {}", crate::auth::accounts::normalise_email(email));
    Ok(())
}

/// One line from standard input, or two matching prompts at a terminal.
fn read_new_password() -> Result<String, String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ").map_err(|e| e.to_string())?;
        let second = rpassword::prompt_password("Repeat the password: ").map_err(|e| e.to_string())?;
        if first != second {
            return Err("the two passwords differ".into());
        }
        Ok(first)
    } else {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("reading the password from standard input: {e}"))?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}

async fn export_csv(
    config: Config,
    range: DateRange,
    keys: Vec<Key>,
    figures: (Granularity, Metric),
    style: export::CsvStyle,
) -> Result<(), String> {
    use std::io::Write;
    let db = Database::open_for_batch(&config).await.map_err(|e| e.to_string())?;
    // Written as the rows arrive: memory does not grow with the window.
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write_failed = None;
    let result = match db.pool.begin().await {
        Ok(tx) => export::stream_csv(tx, range, &keys, figures, (style, None), |chunk| {
            let ok = match stdout.write_all(chunk.as_bytes()) {
                Ok(()) => true,
                Err(error) => {
                    write_failed = Some(error.to_string());
                    false
                }
            };
            std::future::ready(ok)
        })
        .await
        .map_err(|e| e.to_string()),
        Err(error) => Err(error.to_string()),
    };
    let flushed = stdout.flush().map_err(|e| format!("writing the CSV: {e}"));
    db.close().await;
    result?;
    if let Some(error) = write_failed {
        return Err(format!("writing the CSV: {error}"));
    }
    flushed
}

/// Exit status 0 on success, 1 with the AWS error on failure, 3 when another run holds the lock.
async fn ingest(config: Config, window: Option<DateRange>) -> ExitCode {
    let db = match Database::open(&config).await {
        Ok(db) => db,
        Err(err) => {
            eprintln!("burnrate: {err}");
            return ExitCode::FAILURE;
        }
    };
    let cost_explorer = CostExplorer::from_environment().await;
    let options = RunOptions {
        settings: config.ingest.clone(),
        window,
        today: chrono::Utc::now().date_naive(),
        backoff: Backoff::default(),
    };
    let outcome = ingestion::run::run(&db.pool, &cost_explorer, Trigger::Cli, &options).await;
    // Cron mode: evaluate and alert after a successful run, as `serve` does after its own.
    let after = match &outcome {
        Ok(Outcome::Finished(_)) => {
            let alerts = crate::budgets::outbox::AlertSender::new(config.smtp.as_ref(), Default::default());
            let executor = crate::enforcement::executor::Executor::from_config(&config, &alerts);
            let public_url = config.public_url.as_ref().map(|u| u.origin.clone());
            Some(crate::jobs::after_ingestion(&db.pool, &alerts, public_url.as_deref(), &executor, options.today).await)
        }
        _ => None,
    };
    db.close().await;
    match outcome {
        Ok(Outcome::Finished(report)) => {
            println!("{report}");
            match after {
                Some(Ok(done)) => {
                    println!("{done}");
                    if done.alerts_still_queued > 0 && config.smtp.is_none() {
                        eprintln!("burnrate: SMTP_URL is not set; queued alerts are sent once it is");
                    }
                    ExitCode::SUCCESS
                }
                Some(Err(failure)) => {
                    eprintln!("burnrate: the costs were stored, but {failure}");
                    ExitCode::FAILURE
                }
                None => ExitCode::SUCCESS,
            }
        }
        Ok(Outcome::AlreadyRunning) => {
            eprintln!("burnrate: ingestion already running");
            ExitCode::from(3)
        }
        Err(error) => {
            eprintln!("burnrate: ingestion failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn import_config(config: Config, file: &std::path::Path, dry_run: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let report = |errors: &[crate::config_file::FileError]| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {}: {e}", file.display())).collect();
        format!(
            "{} has {} error(s); nothing was changed:\n{}",
            file.display(),
            errors.len(),
            lines.join("\n")
        )
    };
    let document = crate::config_file::parse(&text).map_err(|errors| report(&errors))?;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let actor = crate::audit::record::Actor::system("cli");
    let result = crate::config_file::apply(&db.pool, &actor, &document, dry_run).await;
    db.close().await;
    let changes = result.map_err(|e| match e {
        crate::config_file::ApplyError::Invalid(errors) => report(&errors),
        other => other.to_string(),
    })?;
    if changes.is_empty() {
        println!("no changes: the database already matches {}", file.display());
    }
    for change in &changes {
        println!("{}{change}", if dry_run { "would " } else { "" });
    }
    Ok(())
}

async fn export_config(config: Config) -> Result<(), String> {
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let result = crate::config_file::export(&db.pool).await.map_err(|e| e.to_string());
    db.close().await;
    print!("{}", result?);
    Ok(())
}

async fn evaluate_budgets(config: Config) -> Result<(), String> {
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let sender = crate::budgets::outbox::AlertSender::new(config.smtp.as_ref(), Default::default());
    let public_url = config.public_url.as_ref().map(|u| u.origin.clone());
    let today = chrono::Utc::now().date_naive();
    let result = crate::budgets::evaluate_and_send(&db.pool, &sender, public_url.as_deref(), today, true).await;
    db.close().await;
    let (evaluation, delivery) = result.map_err(|e| e.to_string())?;
    for status in evaluation.settling.iter().chain(&evaluation.statuses) {
        let crossed: Vec<String> = status.crossed.iter().map(|t| t.label()).collect();
        println!(
            "{}: {} of {} ({}) for {} to {}, forecast {}; crossed: {}",
            status.budget.spec.name,
            crate::format::usd(status.spend),
            crate::format::usd(status.budget.spec.amount),
            status.percent_used(),
            status.period.from,
            status.period.last_day(),
            crate::format::usd(status.forecast),
            if crossed.is_empty() {
                "none".to_string()
            } else {
                crossed.join(", ")
            }
        );
    }
    println!(
        "alerts: {} newly queued; emails (one per recipient): {} sent, {} failed, {} still queued",
        evaluation.queued, delivery.sent, delivery.failed, delivery.queued
    );
    if delivery.queued > 0 && config.smtp.is_none() {
        eprintln!("burnrate: SMTP_URL is not set; queued alerts are sent once it is");
    }
    Ok(())
}

async fn evaluate_enforcement(config: Config) -> Result<(), String> {
    use crate::enforcement::evaluate;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let alerts = crate::budgets::outbox::AlertSender::new(config.smtp.as_ref(), Default::default());
    let executor = crate::enforcement::executor::Executor::from_config(&config, &alerts);
    let result = evaluate::evaluate_and_act(&db.pool, chrono::Utc::now().date_naive(), &executor).await;
    db.close().await;
    let lines = result.map_err(|e| e.to_string())?;
    println!("{}", evaluate::CSV_HEADER);
    for line in &lines {
        println!("{}", line.csv());
    }
    Ok(())
}

async fn sync_budgets(config: Config, prune: bool) -> Result<(), String> {
    use crate::budgets::aws_sync;
    let aws = aws_sync::AwsBudgets::from_environment()
        .await
        .map_err(|e| e.to_string())?;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let result = aws_sync::sync(&db.pool, &aws, &config.ingest.tag_project).await;
    let orphans = match &result {
        Ok(_) => crate::enforcement::orphans::find(&db.pool, &aws)
            .await
            .map_err(|e| e.to_string()),
        Err(_) => Ok(Vec::new()),
    };
    let pruned = match (&orphans, prune) {
        (Ok(names), true) => Some(crate::enforcement::orphans::prune(&db.pool, &aws, names).await),
        _ => None,
    };
    if let Ok(report) = &result {
        let mut conn = db.pool.acquire().await.map_err(|e| e.to_string())?;
        let details = serde_json::json!({
            "created": report.created, "replaced": report.replaced, "deleted": report.deleted, "skipped": report.skipped,
            "orphans": orphans.as_ref().ok(), "pruned": pruned.is_some(),
        });
        crate::audit::record::record(
            &mut conn,
            &crate::audit::record::Actor::system("cli"),
            "budget.aws_sync",
            "AWS Budgets",
            details,
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    db.close().await;
    println!("{}", result.map_err(|e| e.to_string())?);
    let orphans = orphans?;
    match (&pruned, orphans.is_empty()) {
        (_, true) => println!("orphaned enforcement budgets: none"),
        (None, false) => {
            println!("orphaned enforcement budgets (delete them with --prune):");
            for name in &orphans {
                println!("  {name}");
            }
        }
        (Some(failures), false) => {
            println!("orphaned enforcement budgets:");
            for name in &orphans {
                match failures.iter().find(|(failed, _)| failed == name) {
                    Some((_, why)) => println!("  {name}: not deleted: {why}"),
                    None => println!("  {name}: deleted"),
                }
            }
            if !failures.is_empty() {
                return Err(format!(
                    "{} orphaned enforcement budgets could not be deleted",
                    failures.len()
                ));
            }
        }
    }
    Ok(())
}

async fn bench_ingest(config: Config, rows: usize) -> Result<(), String> {
    let db = Database::open_for_batch(&config).await.map_err(|e| e.to_string())?;
    let result = ingestion::bench::ingest(&db.pool, rows).await;
    db.close().await;
    println!("{}", result.map_err(|e| e.to_string())?);
    Ok(())
}
