//! The Statements page's data: months with spend, and whether each is frozen.

use leptos::prelude::*;

use super::model::StatementsPage;
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "statements")]
pub async fn get_statements() -> Result<StatementsPage, AppError> {
    crate::error::with_status(
        async {
            crate::auth::caller()?;
            let pool = crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let months = super::store::months(&mut conn).await?;
            let teams = sqlx::query_scalar("select name from teams order by name")
                .fetch_all(&mut *conn)
                .await?;
            Ok(StatementsPage { months, teams })
        }
        .await,
    )
}
