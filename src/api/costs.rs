//! `GET /api/v1/costs`: the export's figures as JSON, a page at a time: the same group-by
//! keys, days, granularity, metric, credits and account as `burnrate export` and the CSV
//! downloads, so totals equal the dashboard's and Cost Explorer's. A token limited to one
//! team reads that team's spend only.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::{Extension, Json};
use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::costs::download;
use crate::costs::paged::{self, Cursor};

/// Rows a page holds unless `limit` says otherwise, and at most.
const DEFAULT_LIMIT: u32 = 1000;
const MAX_LIMIT: u32 = 10_000;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CostsQuery {
    /// First day, YYYY-MM-DD (UTC).
    #[param(required = true, value_type = String, format = Date)]
    pub from: Option<String>,
    /// Day after the last (exclusive, as in Cost Explorer).
    #[param(required = true, value_type = String, format = Date)]
    pub to: Option<String>,
    /// Comma-separated: team, project, user, service, usage_type, instance_type, workload,
    /// record_type, account, account_name. user, service, usage_type/instance_type/workload
    /// and record_type exclude each other (Cost Explorer's two-dimension limit).
    #[param(
        required = true,
        example = "team,project",
        pattern = r"^(team|project|user|service|usage_type|instance_type|workload|record_type|account|account_name)(,(team|project|user|service|usage_type|instance_type|workload|record_type|account|account_name))*$"
    )]
    pub group_by: Option<String>,
    /// `daily` (default) or `monthly` (rows dated the 1st).
    #[param(pattern = "^(daily|monthly)$")]
    pub granularity: Option<String>,
    /// `unblended` (default) or `amortized`.
    #[param(pattern = "^(unblended|amortized)$")]
    pub metric: Option<String>,
    /// `net` (default: credits and refunds subtracted) or `gross` (before them; team,
    /// project, record_type, account and account_name keys only).
    #[param(pattern = "^(net|gross)$")]
    pub credits: Option<String>,
    /// One linked account (12 digits), or every one.
    #[param(pattern = "^[0-9]{12}$")]
    pub account: Option<String>,
    /// `next_cursor` of the page before; absent for the first page.
    pub cursor: Option<String>,
    /// Rows per page, 1 to 10,000 (default 1,000).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 10000)]
    pub limit: Option<String>,
}

impl CostsQuery {
    /// The export's parameters by name, as `download::parse` reads them.
    fn field(&self, name: &str) -> Option<&str> {
        match name {
            "from" => self.from.as_deref(),
            "to" => self.to.as_deref(),
            "group_by" => self.group_by.as_deref(),
            "granularity" => self.granularity.as_deref(),
            "metric" => self.metric.as_deref(),
            "credits" => self.credits.as_deref(),
            "account" => self.account.as_deref(),
            _ => None,
        }
    }
}

/// One row: its day (the month's first day when monthly), its keys, its cost.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CostRow {
    pub date: NaiveDate,
    /// The group-by keys' values by key name ('' for untagged).
    pub keys: BTreeMap<String, String>,
    pub cost: Decimal,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CostsPage {
    pub rows: Vec<CostRow>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// The spend grouped by the keys asked for, a page at a time, sorted by date then keys.
#[utoipa::path(
    get,
    path = "/api/v1/costs",
    operation_id = "listCosts",
    tag = "costs",
    params(CostsQuery),
    responses(
        (status = 200, description = "A page of rows", body = CostsPage),
        (status = 400, response = super::responses::Invalid),
        super::responses::EveryCall,
    )
)]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    query: Result<Query<CostsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<CostsPage>, Problem> {
    let Query(query) = query.map_err(|rejection| Problem::invalid("query", rejection.body_text()))?;
    let download::Request {
        range,
        keys,
        mut selection,
    } = download::parse(&|name| query.field(name)).map_err(|(field, message)| Problem::invalid(field, message))?;
    selection.team = api.only_team;
    let limit = match query.limit.as_deref().map(str::trim) {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| Problem::invalid("limit", "limit: a whole number from 1 to 10000"))?,
    };
    let after = match query.cursor.as_deref() {
        None => None,
        Some(text) => Some(Cursor::decode(text, keys.len()).map_err(|m| Problem::invalid("cursor", m))?),
    };
    let (rows, next) = paged::page(&pool, range, &keys, &selection, after.as_ref(), limit)
        .await
        .map_err(|error| match error {
            crate::costs::export::ExportError::Invalid(message) => Problem::invalid("group_by", message),
            crate::costs::export::ExportError::Sql(error) => Problem::from(error),
        })?;
    Ok(Json(CostsPage {
        rows: rows
            .into_iter()
            .map(|row| CostRow {
                date: row.day,
                keys: keys.iter().map(|k| k.name().to_string()).zip(row.keys).collect(),
                cost: row.cost,
            })
            .collect(),
        next_cursor: next.map(|c| c.encode()),
    }))
}
