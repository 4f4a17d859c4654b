//! The demo's owned commitments, as a Cost Explorer read would store them: a Compute Savings
//! Plan used almost fully, a SageMaker Savings Plan bought too large (flagged underused, so
//! no more SageMaker commitment is advised), two g5.12xlarge reservations behind the demo's
//! `HeavyUsage` line, and AWS's own recommendation to set beside burnrate's.

use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::savings::commitments::{AwsPlan, CommitmentUse, Coverage, OwnedRead, store};
use crate::savings::model::commitments::Offer;

fn usd(cents: i64) -> Decimal {
    Decimal::new(cents, 2)
}

/// The 30 days before `until`, as the read after the last ingestion would cover them.
pub async fn insert(conn: &mut PgConnection, until: NaiveDate) -> Result<(), sqlx::Error> {
    let from = until.checked_sub_days(Days::new(30)).unwrap_or(until);
    let coverage = |offer, sagemaker, scope: &str, covered: i64, on_demand: i64, hours: (i64, i64)| Coverage {
        offer,
        sagemaker,
        scope: scope.to_string(),
        covered_usd: usd(covered),
        on_demand_usd: usd(on_demand),
        covered_hours: Decimal::from(hours.0),
        on_demand_hours: Decimal::from(hours.1),
    };
    let read = OwnedRead {
        skipped: Vec::new(),
        period: Some((from, until)),
        coverage: vec![
            coverage(Offer::SavingsPlan, false, "g6", 289_728, 1_120_450, (0, 0)),
            coverage(Offer::SavingsPlan, false, "p4d", 0, 3_161_000, (0, 0)),
            coverage(Offer::SavingsPlan, true, "ml.g5", 101_376, 20_480, (0, 0)),
            coverage(Offer::Reserved, false, "g5.12xlarge", 0, 0, (1_440, 96)),
        ],
        uses: vec![
            CommitmentUse {
                offer: Offer::SavingsPlan,
                id: "COMPUTE_SP".into(),
                instance_type: String::new(),
                commitment_usd: usd(216_000),
                used_usd: usd(211_680),
                net_savings_usd: usd(78_848),
            },
            CommitmentUse {
                offer: Offer::SavingsPlan,
                id: "SAGEMAKER_SP".into(),
                instance_type: String::new(),
                commitment_usd: usd(108_000),
                used_usd: usd(70_200),
                net_savings_usd: usd(-6_800),
            },
            CommitmentUse {
                offer: Offer::Reserved,
                id: "d3f1a7c2-5b8e-4c1a-9e2f-0a6b7c8d9e10".into(),
                instance_type: "g5.12xlarge".into(),
                commitment_usd: usd(308_707),
                used_usd: usd(308_707),
                net_savings_usd: usd(205_805),
            },
        ],
        aws: vec![AwsPlan {
            plan_type: "COMPUTE_SP".into(),
            hourly_commitment: usd(1_850),
            monthly_saving: usd(384_120),
            saving_share: Some(Decimal::new(27, 2)),
            lookback_days: 30,
        }],
    };
    store::replace(conn, &read).await
}
