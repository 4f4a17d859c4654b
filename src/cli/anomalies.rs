//! `burnrate anomalies`: what the anomaly rule flags over history, as CSV.

use crate::anomalies::detect::{self, Anomaly};
use crate::anomalies::rule::Thresholds;
use crate::anomalies::series::Scope;
use crate::config::Config;
use crate::db::Database;
use crate::format::csv::CsvStyle;
use crate::period::DateRange;

/// `--scope`: comma-separated scopes, each once; every scope when left out.
pub(super) fn scopes(text: Option<&str>) -> Result<Vec<Scope>, String> {
    let Some(text) = text else {
        return Ok(Scope::ALL.to_vec());
    };
    let mut scopes = Vec::new();
    for part in text.split(',') {
        let scope = Scope::parse(part)?;
        if scopes.contains(&scope) {
            return Err(format!("{} is named twice", scope.key()));
        }
        scopes.push(scope);
    }
    Ok(scopes)
}

pub(super) async fn print(config: Config, range: DateRange, scopes: &[Scope], excel_safe: bool) -> anyhow::Result<()> {
    let db = Database::open_for_batch(&config).await?;
    let found = find_all(&db, range, scopes).await;
    db.close().await;
    let mut found = found?;
    found.sort_by(|a, b| (a.from, a.scope, &a.name).cmp(&(b.from, b.scope, &b.name)));
    let style = if excel_safe {
        CsvStyle::ExcelSafe
    } else {
        CsvStyle::Verbatim
    };
    print!("{}", crate::anomalies::csv::write(&found, style));
    Ok(())
}

async fn find_all(db: &Database, range: DateRange, scopes: &[Scope]) -> anyhow::Result<Vec<Anomaly>> {
    let mut conn = db.pool.acquire().await?;
    let mut found = Vec::new();
    for scope in scopes {
        found.extend(detect::find(&mut conn, *scope, range, &Thresholds::default()).await?);
    }
    Ok(found)
}
