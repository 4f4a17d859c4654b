//! The Statements page's data: months with spend, and whether each is frozen.

use leptos::prelude::*;

use super::model::StatementsPage;
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "statements")]
pub async fn get_statements(account: Option<String>) -> Result<StatementsPage, AppError> {
    crate::error::with_status(
        async {
            crate::auth::caller()?;
            let account = crate::period::AccountId::parse_filter(account.as_deref())
                .map_err(|m| AppError::invalid("account", m))?;
            let pool = crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let months = super::store::months(&mut conn, account.as_ref()).await?;
            let teams = sqlx::query_scalar("select name from teams order by name")
                .fetch_all(&mut *conn)
                .await?;
            let accounts = crate::costs::accounts::known(&mut *conn).await?;
            Ok(StatementsPage {
                months,
                teams,
                account: account.map(|a| a.to_string()),
                accounts,
            })
        }
        .await,
    )
}
