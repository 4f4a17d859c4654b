//! `burnrate export`, `ingest` and `bench ingest`: costs in and out.

use std::process::ExitCode;

use anyhow::Context;

use crate::config::Config;
use crate::costs::export::{self, Key};
use crate::db::Database;
use crate::ingestion::{
    self,
    cost_explorer::{Backoff, CostExplorer},
    run::{Outcome, RunOptions, Trigger},
};
use crate::period::DateRange;

pub(super) async fn export_csv(
    config: Config,
    range: DateRange,
    keys: Vec<Key>,
    selection: &export::Selection,
    style: export::CsvStyle,
) -> anyhow::Result<()> {
    use std::io::Write;
    let db = Database::open_for_batch(&config).await?;
    // Written as the rows arrive: memory does not grow with the window.
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write_failed = None;
    let result = match db.pool.begin().await {
        Ok(tx) => {
            export::stream_csv(tx, range, &keys, selection, (style, None), |chunk| {
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
        }
        Err(error) => Err(error.into()),
    };
    let flushed = stdout.flush().context("writing the CSV");
    db.close().await;
    result?;
    if let Some(error) = write_failed {
        anyhow::bail!("writing the CSV: {error}");
    }
    flushed
}

/// Exit status 0 on success, 1 with the AWS error on failure, 3 when another run holds the lock.
pub(super) async fn ingest(config: Config, window: Option<DateRange>) -> ExitCode {
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
            let workers = crate::jobs::Workers::from_config(&config);
            Some(crate::jobs::after_ingestion(&db.pool, &workers, options.today).await)
        }
        _ => None,
    };
    // The costs stand whatever this says; a failed read is shown and tried again later.
    let commitments = match &outcome {
        Ok(Outcome::Finished(_)) if config.ingest.read_commitments => Some(
            ingestion::commitments::refresh(&db.pool, &cost_explorer, chrono::Utc::now(), Backoff::default()).await,
        ),
        Ok(Outcome::Finished(_)) => {
            if let Err(error) = crate::savings::commitments::store::clear(&db.pool).await {
                eprintln!("burnrate: commitments: the stored read could not be cleared: {error}");
            }
            None
        }
        _ => None,
    };
    db.close().await;
    match outcome {
        Ok(Outcome::Finished(report)) => {
            println!("{report}");
            match commitments {
                Some(Ok(refresh @ ingestion::commitments::Refresh::Failed { .. })) => eprintln!("burnrate: {refresh}"),
                Some(Ok(refresh)) => println!("{refresh}"),
                Some(Err(error)) => eprintln!("burnrate: commitments: not stored: {error}"),
                None => {}
            }
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

pub(super) async fn bench_ingest(config: Config, rows: usize) -> anyhow::Result<()> {
    let db = Database::open_for_batch(&config).await?;
    let result = ingestion::bench::ingest(&db.pool, rows).await;
    db.close().await;
    println!("{}", result?);
    Ok(())
}

/// `burnrate bench utilisation`: one read of each configured utilisation source.
pub(super) async fn bench_utilisation(config: Config, days: u32) -> anyhow::Result<()> {
    use crate::savings::{cloudwatch, gpu_series::Grid, prometheus};
    let grid = Grid::ending(
        chrono::Utc::now().timestamp(),
        i64::from(days),
        prometheus::STEP_SECONDS,
    );
    let savings = &config.savings;
    if savings.prometheus.is_none() && savings.cloudwatch.is_none() {
        anyhow::bail!("set BURNRATE_PROMETHEUS_URL or BURNRATE_CLOUDWATCH=on to name a source to read");
    }
    if let Some(settings) = &savings.prometheus {
        let started = std::time::Instant::now();
        let read = prometheus::read_dcgm(settings, grid)
            .await
            .context("reading Prometheus")?;
        println!(
            "prometheus: {} GPUs × {} steps in {:.2} s",
            read.gpus.len(),
            grid.steps,
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(settings) = &savings.cloudwatch {
        let sdk = crate::aws::sdk_config_from_environment().await;
        let started = std::time::Instant::now();
        let read = cloudwatch::read(&sdk, settings, grid)
            .await
            .context("reading CloudWatch")?;
        println!(
            "cloudwatch: {} GPU series and {} endpoint variants × {} steps, {} GetMetricData calls for {} metrics in {:.2} s",
            read.series.gpus.len(),
            read.endpoints.len(),
            grid.steps,
            read.get_metric_data_calls,
            read.metrics_requested,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `burnrate insights`: the recommendations over the last `days` settled days, as CSV.
pub(super) async fn insights(config: Config, days: u32, excel_safe: bool) -> anyhow::Result<()> {
    use crate::format::csv::CsvStyle;
    use std::io::Write;
    let db = Database::open_for_batch(&config).await?;
    let result = async {
        crate::allocation::facts::reread_usage_types(&db.pool)
            .await
            .context("reading usage types with this build's GPU catalogue")?;
        let found = crate::savings::insights::compute(&db.pool, days, (&config.savings).into(), chrono::Utc::now())
            .await
            .context("computing the recommendations")?;
        let utilisation_configured = config.savings.prometheus.is_some() || config.savings.cloudwatch.is_some();
        if let Some(note) = &found.utilisation_note
            && utilisation_configured
        {
            eprintln!("burnrate: {note}");
        }
        let style = if excel_safe {
            CsvStyle::ExcelSafe
        } else {
            CsvStyle::Verbatim
        };
        let csv = crate::savings::csv::render(&found.recommendations, style);
        std::io::stdout()
            .lock()
            .write_all(csv.as_bytes())
            .context("writing the CSV")
    }
    .await;
    db.close().await;
    result
}
