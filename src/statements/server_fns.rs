//! The Statements page's data: months with spend, and whether each is frozen.

use leptos::prelude::*;

use super::model::StatementsData;
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "statements")]
pub async fn get_statements(account: Option<String>) -> Result<StatementsData, AppError> {
    crate::auth::caller()?;
    let account =
        crate::period::AwsAccountId::parse_filter(account.as_deref()).map_err(|m| AppError::invalid("account", m))?;
    let pool = crate::ctx::pool()?;
    let mut conn = pool.acquire().await?;
    Ok(super::store::page(&mut conn, account.as_ref()).await?)
}
