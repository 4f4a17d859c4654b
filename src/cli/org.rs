//! `burnrate config`, `budgets` and `enforce`: teams, budgets, approvals and policies as code, and their evaluations.

use anyhow::Context;

use crate::config::Config;
use crate::db::Database;

pub(super) async fn import_config(config: Config, file: &std::path::Path, dry_run: bool) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let report = |errors: &[crate::as_code::FileError]| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {}: {e}", file.display())).collect();
        format!(
            "{} has {} error(s); nothing was changed:\n{}",
            file.display(),
            errors.len(),
            lines.join("\n")
        )
    };
    let document = crate::as_code::parse(&text).map_err(|errors| anyhow::anyhow!(report(&errors)))?;
    let db = Database::open(&config).await?;
    let actor = crate::audit_log::Actor::system("cli");
    let result = crate::as_code::apply_reporting(&db.pool, &actor, &document, dry_run).await;
    db.close().await;
    let applied = result.map_err(|e| match e {
        crate::as_code::ApplyError::Invalid(errors) => anyhow::anyhow!(report(&errors)),
        other => anyhow::Error::new(other),
    })?;
    if applied.changes.is_empty() {
        println!("no changes: the database already matches {}", file.display());
    }
    for change in &applied.changes {
        println!("{}{change}", if dry_run { "would " } else { "" });
    }
    match applied.rewrite {
        Some((0, took)) => println!(
            "allocation: no spend moved, nothing rewritten ({:.1} s)",
            took.as_secs_f64()
        ),
        Some((days, took)) => println!("allocation: {days} days rewritten in {:.1} s", took.as_secs_f64()),
        None => {}
    }
    Ok(())
}

pub(super) async fn export_config(config: Config) -> anyhow::Result<()> {
    let db = Database::open(&config).await?;
    let result = crate::as_code::export(&db.pool).await;
    db.close().await;
    print!("{}", result?);
    Ok(())
}

pub(super) async fn evaluate_budgets(config: Config) -> anyhow::Result<()> {
    let db = Database::open(&config).await?;
    let workers = crate::jobs::Workers::from_config(&config);
    let result = crate::jobs::evaluate_budgets(&db.pool, &workers, chrono::Utc::now().date_naive()).await;
    db.close().await;
    let crate::budgets::EvaluatedAndSent { evaluation, delivery } = result?;
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

pub(super) async fn evaluate_enforcement(config: Config) -> anyhow::Result<()> {
    use crate::enforcement::evaluate;
    let db = Database::open(&config).await?;
    let workers = crate::jobs::Workers::from_config(&config);
    let result = crate::jobs::evaluate_enforcement(&db.pool, &workers, chrono::Utc::now().date_naive()).await;
    db.close().await;
    let lines = result?;
    println!("{}", evaluate::CSV_HEADER);
    for line in &lines {
        println!("{}", line.csv());
    }
    Ok(())
}

pub(super) async fn sync_budgets(config: Config, prune: bool) -> anyhow::Result<()> {
    use crate::budgets::aws_sync;
    let aws = crate::aws::budgets::AwsBudgets::from_environment().await?;
    println!("AWS Budgets: {}", aws.account_description());
    let db = Database::open(&config).await?;
    let result = aws_sync::sync(&db.pool, &aws, &config.ingest.tag_project).await;
    let orphans = match &result {
        Ok(_) => crate::enforcement::orphans::find(&db.pool, &aws).await,
        Err(_) => Ok(Vec::new()),
    };
    let pruned = match (&orphans, prune) {
        (Ok(names), true) => Some(crate::enforcement::orphans::prune(&db.pool, &aws, names).await),
        _ => None,
    };
    if let Ok(report) = &result {
        let mut conn = db.pool.acquire().await?;
        let details = serde_json::json!({
            "created": report.created, "replaced": report.replaced, "deleted": report.deleted, "skipped": report.skipped,
            "orphans": orphans.as_ref().ok(), "pruned": pruned.is_some(),
        });
        crate::audit_log::record(
            &mut conn,
            &crate::audit_log::Actor::system("cli"),
            "budget.aws_sync",
            "AWS Budgets",
            details,
        )
        .await?;
    }
    db.close().await;
    println!("{}", result?);
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
                match failures.iter().find(|failed| &failed.name == name) {
                    Some(failed) => println!("  {name}: not deleted: {}", failed.why),
                    None => println!("  {name}: deleted"),
                }
            }
            if !failures.is_empty() {
                anyhow::bail!("{} orphaned enforcement budgets could not be deleted", failures.len());
            }
        }
    }
    Ok(())
}

/// `burnrate statement`: the month's statement (frozen if final) on standard output.
pub(super) async fn statement(
    config: Config,
    month: chrono::NaiveDate,
    (team, account): (Option<String>, Option<crate::period::AwsAccountId>),
    (html, excel_safe): (bool, bool),
) -> anyhow::Result<()> {
    use std::io::Write;
    let db = Database::open(&config).await?;
    let today = chrono::Utc::now().date_naive();
    let result = async {
        let mut conn = db.pool.acquire().await?;
        match &account {
            None => crate::statements::store::statement(&mut conn, month, today).await,
            Some(account) => crate::statements::store::statement_in_account(&mut conn, month, account).await,
        }
    }
    .await;
    db.close().await;
    let statement = result.context("computing the statement")?;
    if let Some(team) = &team
        && !statement.lines.iter().any(|l| &l.team == team)
    {
        anyhow::bail!(
            "no spend of team {team:?} in {}{}",
            crate::statements::store::month_label(month),
            account.as_ref().map_or(String::new(), |id| format!(" in account {id}"))
        );
    }
    let text = if html {
        crate::statements::render::html(&statement, team.as_deref())
    } else {
        let style = if excel_safe {
            crate::format::csv::CsvStyle::ExcelSafe
        } else {
            crate::format::csv::CsvStyle::Verbatim
        };
        crate::statements::render::csv(&statement, team.as_deref(), style)
    };
    match (&statement.account, &statement.frozen_at) {
        (Some(account), _) => {
            eprintln!("burnrate: account {account}'s part of the month, as the allocation has it now (never frozen)")
        }
        (None, None) => {
            eprintln!("burnrate: provisional: the month's figures may still change, so it is not frozen yet")
        }
        (None, Some(_)) => {}
    }
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing the statement")?;
    Ok(())
}
