//! The last Cost Explorer read of owned commitments. A read replaces the previous one whole, in
//! one transaction that makes no AWS call; a failed read keeps the last good figures and
//! records why, for the Savings page to say.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::{AwsPlan, CommitmentUse, Coverage, OwnedRead};
use crate::savings::model::commitments::Offer;

/// The stored read, with the last attempt's problem if it failed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    pub read: OwnedRead,
    pub read_at: Option<DateTime<Utc>>,
    pub problem: Option<String>,
}

/// Whether a read is due: none succeeded in the last `every_hours`, and no attempt failed in
/// the last `retry_hours`. Commitment figures are daily and each request costs USD 0.01, so
/// reading more often buys nothing, and a refused read is not paid for on every ingestion.
pub async fn due(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    every_hours: i64,
    retry_hours: i64,
) -> Result<bool, sqlx::Error> {
    let last: Option<Attempt> = sqlx::query_as("select read_at, problem, attempted_at from commitment_reads")
        .fetch_optional(conn)
        .await?;
    Ok(last.is_none_or(|last| {
        last.read_at
            .is_none_or(|at| now - at >= chrono::Duration::hours(every_hours))
            && (last.problem.is_none() || now - last.attempted_at >= chrono::Duration::hours(retry_hours))
    }))
}

#[derive(sqlx::FromRow)]
struct Attempt {
    read_at: Option<DateTime<Utc>>,
    problem: Option<String>,
    attempted_at: DateTime<Utc>,
}

/// Forgets every read (`BURNRATE_COMMITMENTS=off`): nothing owned is subtracted any more.
pub async fn clear(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query("truncate commitment_reads, commitment_coverage, commitment_use, aws_savings_plan_recommendations")
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn replace(conn: &mut PgConnection, read: &OwnedRead) -> Result<(), sqlx::Error> {
    let Some((from, to)) = read.period else {
        return Ok(());
    };
    let mut tx = sqlx::Connection::begin(conn).await?;
    for table in [
        "commitment_coverage",
        "commitment_use",
        "aws_savings_plan_recommendations",
    ] {
        sqlx::query(&format!("delete from {table}")).execute(&mut *tx).await?;
    }
    for c in &read.coverage {
        sqlx::query(
            "insert into commitment_coverage (offer, sagemaker, scope, covered_usd, on_demand_usd, covered_hours, on_demand_hours)
             values ($1, $2, $3, $4, $5, $6, $7)
             on conflict (offer, sagemaker, scope) do update set
                 covered_usd = commitment_coverage.covered_usd + excluded.covered_usd,
                 on_demand_usd = commitment_coverage.on_demand_usd + excluded.on_demand_usd,
                 covered_hours = commitment_coverage.covered_hours + excluded.covered_hours,
                 on_demand_hours = commitment_coverage.on_demand_hours + excluded.on_demand_hours",
        )
        .bind(c.offer.key())
        .bind(c.sagemaker)
        .bind(&c.scope)
        .bind(c.covered_usd)
        .bind(c.on_demand_usd)
        .bind(c.covered_hours)
        .bind(c.on_demand_hours)
        .execute(&mut *tx)
        .await?;
    }
    for u in &read.uses {
        sqlx::query(
            "insert into commitment_use (offer, id, instance_type, commitment_usd, used_usd, net_savings_usd)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(u.offer.key())
        .bind(&u.id)
        .bind(&u.instance_type)
        .bind(u.commitment_usd)
        .bind(u.used_usd)
        .bind(u.net_savings_usd)
        .execute(&mut *tx)
        .await?;
    }
    for a in &read.aws {
        sqlx::query(
            "insert into aws_savings_plan_recommendations (plan_type, hourly_commitment, monthly_saving, saving_share, lookback_days)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&a.plan_type)
        .bind(a.hourly_commitment)
        .bind(a.monthly_saving)
        .bind(a.saving_share)
        .bind(a.lookback_days as i32)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query(
        "insert into commitment_reads (id, period_from, period_to, read_at, problem, attempted_at, skipped)
         values (true, $1, $2, now(), null, now(), $3)
         on conflict (id) do update set period_from = $1, period_to = $2, read_at = now(), problem = null,
             attempted_at = now(), skipped = $3",
    )
    .bind(from)
    .bind(to)
    .bind(&read.skipped)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Records how many Cost Explorer requests the last read attempt made (the Ingestion page
/// projects the month's bill from it).
pub async fn record_requests(conn: &mut PgConnection, requests: u32) -> Result<(), sqlx::Error> {
    sqlx::query("update commitment_reads set requests = $1")
        .bind(i32::try_from(requests).unwrap_or(i32::MAX))
        .execute(conn)
        .await?;
    Ok(())
}

/// Records why a read failed; the last good figures stay.
pub async fn record_problem(conn: &mut PgConnection, problem: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into commitment_reads (id, problem, attempted_at) values (true, $1, now())
         on conflict (id) do update set problem = $1, attempted_at = now()",
    )
    .bind(problem)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(sqlx::FromRow)]
struct ReadRow {
    period_from: Option<NaiveDate>,
    period_to: Option<NaiveDate>,
    read_at: Option<DateTime<Utc>>,
    problem: Option<String>,
    skipped: Vec<String>,
}

#[derive(sqlx::FromRow)]
struct CoverageRow {
    offer: String,
    sagemaker: bool,
    scope: String,
    covered_usd: Decimal,
    on_demand_usd: Decimal,
    covered_hours: Decimal,
    on_demand_hours: Decimal,
}

#[derive(sqlx::FromRow)]
struct UseRow {
    offer: String,
    id: String,
    instance_type: String,
    commitment_usd: Decimal,
    used_usd: Decimal,
    net_savings_usd: Decimal,
}

#[derive(sqlx::FromRow)]
struct AwsRow {
    plan_type: String,
    hourly_commitment: Decimal,
    monthly_saving: Decimal,
    saving_share: Option<Decimal>,
    lookback_days: i32,
}

fn offer(key: &str) -> Result<Offer, sqlx::Error> {
    Offer::parse(key).ok_or_else(|| sqlx::Error::Decode(format!("unknown commitment offer {key:?}").into()))
}

pub async fn load(pool: &PgPool) -> Result<Stored, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let Some(row) =
        sqlx::query_as::<_, ReadRow>("select period_from, period_to, read_at, problem, skipped from commitment_reads")
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(Stored::default());
    };
    let coverage = sqlx::query_as::<_, CoverageRow>(
        "select offer, sagemaker, scope, covered_usd, on_demand_usd, covered_hours, on_demand_hours
         from commitment_coverage order by offer, sagemaker, scope",
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| {
        Ok(Coverage {
            offer: offer(&r.offer)?,
            sagemaker: r.sagemaker,
            scope: r.scope,
            covered_usd: r.covered_usd,
            on_demand_usd: r.on_demand_usd,
            covered_hours: r.covered_hours,
            on_demand_hours: r.on_demand_hours,
        })
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let uses = sqlx::query_as::<_, UseRow>(
        "select offer, id, instance_type, commitment_usd, used_usd, net_savings_usd from commitment_use order by offer, id",
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| {
        Ok(CommitmentUse {
            offer: offer(&r.offer)?,
            id: r.id,
            instance_type: r.instance_type,
            commitment_usd: r.commitment_usd,
            used_usd: r.used_usd,
            net_savings_usd: r.net_savings_usd,
        })
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let aws = sqlx::query_as::<_, AwsRow>(
        "select plan_type, hourly_commitment, monthly_saving, saving_share, lookback_days
         from aws_savings_plan_recommendations order by plan_type",
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| AwsPlan {
        plan_type: r.plan_type,
        hourly_commitment: r.hourly_commitment,
        monthly_saving: r.monthly_saving,
        saving_share: r.saving_share,
        lookback_days: u32::try_from(r.lookback_days).unwrap_or(0),
    })
    .collect();
    Ok(Stored {
        read: OwnedRead {
            period: row.period_from.zip(row.period_to),
            coverage,
            uses,
            aws,
            skipped: row.skipped,
        },
        read_at: row.read_at,
        problem: row.problem,
    })
}
