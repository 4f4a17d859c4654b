//! `burnrate insights` as a process: the header, the order, exact basis amounts and cents.

use std::process::Command;

use sqlx::PgPool;

use super::{d, daily, declare, seed};
use crate::common::database_url;

async fn insights_cli(url: &str, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_burnrate"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("BURNRATE_")) {
        command.env_remove(name);
    }
    command
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "warn")
        .arg("insights")
        .args(args);
    tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join")
}

#[sqlx::test]
async fn the_csv_has_the_contracted_header_sorted_rows_and_exact_figures(pool: PgPool) {
    seed(
        &pool,
        &[
            daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
            daily("=evil,\"quoted\"", "USE1-BoxUsage:g5.xlarge", 0, 10, "0.3333333", "1"),
            daily("chat", "USE1-BoxUsage:g6.12xlarge", 0, 10, "110.4384", "24"),
        ]
        .concat(),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    declare(&pool, "=evil,\"quoted\"", "dev", None).await;
    declare(&pool, "chat", "serving", Some(("7", "bf16"))).await;
    let url = database_url(&pool).await;
    let out = insights_cli(&url, &["--days", "7"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "kind,team,project,usage_type,instance_type,recommended,from,to,basis_cost,monthly_saving,detail,compounded_saving"
        )
    );
    let rows: Vec<Vec<String>> = lines.map(split).collect();
    let kinds: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    // The last 7 settled days with data: day 3 to day 10 (exclusive).
    assert!(
        rows.iter().all(|r| r[6] == "2026-10-04" && r[7] == "2026-10-11"),
        "{rows:?}"
    );
    let savings: Vec<rust_decimal::Decimal> = rows.iter().map(|r| d(&r[9])).collect();
    assert!(
        savings.windows(2).all(|w| w[0] >= w[1]),
        "sorted descending: {savings:?}"
    );
    assert!(
        rows.iter()
            .all(|r| r[9].split('.').nth(1).is_some_and(|c| c.len() == 2)),
        "{rows:?}"
    );
    // `compounded_saving`, after the existing columns: what a row adds after the others on
    // its project's spend, in cents, never more than the row's own saving.
    assert!(
        rows.iter()
            .all(|r| r.len() == 12 && r[11].split('.').nth(1).is_some_and(|c| c.len() == 2) && d(&r[11]) <= d(&r[9])),
        "{rows:?}"
    );
    let spot = rows
        .iter()
        .find(|r| r[0] == "spot" && r[2] == "trainer")
        .expect("spot row");
    // 7 × 219.576 exactly, unrounded; saving 1537.032 × 0.65 × 30/7 = 4281.732
    assert_eq!(spot[8], "1537.032");
    assert_eq!(spot[9], "4281.73");
    assert_eq!(spot[4], "p4d.24xlarge");
    // A hostile tag value comes back verbatim (quoted as RFC 4180 says) for programs.
    let evil = rows
        .iter()
        .find(|r| r[2].starts_with('='))
        .expect("the dev project's spot row");
    assert_eq!(evil[2], "=evil,\"quoted\"");
    assert_eq!(evil[8], "2.3333331");
    assert!(kinds.contains(&"rightsize"), "{kinds:?}");
    assert!(
        kinds
            .iter()
            .all(|k| ["spot", "rightsize", "always_on", "commitment", "idle_gpu", "underused"].contains(k))
    );

    let safe = insights_cli(&url, &["--days", "7", "--excel-safe"]).await;
    assert!(String::from_utf8_lossy(&safe.stdout).contains("\"'=evil,\"\"quoted\"\"\""));
    let bad = insights_cli(&url, &["--days", "0"]).await;
    assert_eq!(bad.status.code(), Some(2), "--days 0 is a usage error");
}

#[sqlx::test]
async fn an_empty_database_gives_the_header_alone(pool: PgPool) {
    let out = insights_cli(&database_url(&pool).await, &[]).await;
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "kind,team,project,usage_type,instance_type,recommended,from,to,basis_cost,monthly_saving,detail,compounded_saving\n"
    );
}

/// RFC 4180 fields of one line.
fn split(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, ',') => cells.push(std::mem::take(&mut cell)),
            (false, '"') => quoted = true,
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (_, c) => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}
