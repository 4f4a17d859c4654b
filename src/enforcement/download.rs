//! `GET /api/enforcement_audit.csv`: the action trail as a download.

/// `GET /api/enforcement_audit.csv`: the whole action trail, oldest first.
pub async fn audit_csv(
    axum::extract::State(pool): axum::extract::State<sqlx::PgPool>,
    caller: Option<axum::Extension<crate::auth::Caller>>,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    if caller.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let body = match pool.acquire().await {
        Ok(mut conn) => super::trail::csv(&mut conn).await,
        Err(e) => Err(e),
    };
    match body {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"burnrate-enforcement-audit.csv\"",
                ),
            ],
            body,
        )
            .into_response(),
        Err(error) if crate::error::is_unavailable(&error) => crate::error::unavailable_response(),
        Err(error) => {
            tracing::error!(%error, "audit CSV failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the export failed; see the server log",
            )
                .into_response()
        }
    }
}
