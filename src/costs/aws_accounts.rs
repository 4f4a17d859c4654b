//! The linked AWS accounts facts are in: their IDs and names as Cost Explorer last named them.

use sqlx::PgConnection;

/// Stores each account's current name; accounts no longer named keep theirs (their facts
/// stay).
pub async fn record(conn: &mut PgConnection, accounts: &[(String, String)]) -> Result<(), sqlx::Error> {
    if accounts.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into aws_accounts (account_id, name)
         select * from unnest($1::text[], $2::text[])
         on conflict (account_id) do update set name = excluded.name, updated_at = now()
         where aws_accounts.name is distinct from excluded.name",
    )
    .bind(accounts.iter().map(|a| a.0.clone()).collect::<Vec<_>>())
    .bind(accounts.iter().map(|a| a.1.clone()).collect::<Vec<_>>())
    .execute(conn)
    .await?;
    Ok(())
}

/// Records accounts known only from their spend (Cost Explorer's listing left them out),
/// with an empty name; an account already known keeps its name.
pub async fn record_unnamed(conn: &mut PgConnection, ids: &[String]) -> Result<(), sqlx::Error> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query("insert into aws_accounts (account_id, name) select unnest($1::text[]), '' on conflict do nothing")
        .bind(ids)
        .execute(conn)
        .await?;
    Ok(())
}

/// Every account Cost Explorer named, for the pages' account filter: ID and name.
pub async fn known(conn: impl sqlx::PgExecutor<'_>) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("select account_id, name from aws_accounts order by name, account_id")
        .fetch_all(conn)
        .await
}
