//! A small organisation's bill as facts: cost rows, one day's bill with usage, a credit,
//! untagged spend and tax, written through the same path ingestion uses, and the teams
//! and shared-cost rule that split it (statements, credits).

use std::str::FromStr;

use burnrate::allocation::facts::replace_window;
use burnrate::costs::store::{CostBatch, CostRow};
use burnrate::period::DateRange;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::day;

pub fn d(text: &str) -> Decimal {
    Decimal::from_str(text).expect("decimal")
}

pub fn row(on: chrono::NaiveDate, project: &str, dimension: &str, cost: &str) -> CostRow {
    CostRow {
        account: "111122223333".to_string(),
        day: on,
        project: project.into(),
        dimension: dimension.into(),
        unblended: d(cost),
        amortized: d(cost),
        usage_quantity: Decimal::ONE,
        estimated: false,
    }
}

/// One day's bill: `train` (ml) 100 of usage less a 10 credit; untagged 30 of NAT gateway
/// plus 3 of tax, shared evenly by ml and web; `site` (web) 20.
pub fn bill(on: chrono::NaiveDate, train_usage: &str) -> CostBatch {
    let train_net = (d(train_usage) - d("10")).to_string();
    CostBatch {
        by_usage_type: vec![
            row(on, "train", "USE1-BoxUsage:g5.xlarge", &train_net),
            row(on, "", "USE1-NatGateway-Hours", "30"),
            row(on, "", "NoUsageType", "3"),
            row(on, "site", "USE1-BoxUsage:m5.large", "20"),
        ],
        by_user: vec![
            row(on, "train", "alice", &train_net),
            row(on, "", "", "33"),
            row(on, "site", "bob", "20"),
        ],
        by_service: vec![
            row(on, "train", "Amazon Elastic Compute Cloud - Compute", &train_net),
            row(on, "", "EC2 - Other", "30"),
            row(on, "", "Tax", "3"),
            row(on, "site", "Amazon Elastic Compute Cloud - Compute", "20"),
        ],
        by_record_type: vec![
            row(on, "train", "Usage", train_usage),
            row(on, "train", "Credit", "-10"),
            row(on, "", "Usage", "30"),
            row(on, "", "Tax", "3"),
            row(on, "site", "Usage", "20"),
        ],
        ..CostBatch::default()
    }
}

pub async fn write(pool: &PgPool, on: chrono::NaiveDate, batch: CostBatch) {
    let mut tx = pool.begin().await.expect("tx");
    replace_window(
        &mut tx,
        DateRange {
            from: on,
            to: on + chrono::Days::new(1),
        },
        &batch,
    )
    .await
    .expect("facts");
    tx.commit().await.expect("commit");
}

pub async fn seed(pool: &PgPool) {
    crate::common::import_config(
        pool,
        "teams:
  - name: ml-research
    owners: [ml@example.com]
    projects: [train]
  - name: web
    owners: [web@example.com]
    projects: [site]
shared_costs:
  - name: Untagged
    untagged: true
    split: even
    teams: [ml-research, web]
",
    )
    .await;
    for on in [day(2026, 10, 15), day(2026, 10, 31)] {
        write(pool, on, bill(on, "100")).await;
    }
}
