//! `/api/v1` and its tokens: who may call what (a role × route matrix, one-team tokens,
//! revoked and expired tokens, the rate limit), the pre-flight verdicts at each edge, and the
//! `burnrate token` and `burnrate check` commands against a running server.

mod approvals;
mod budgets;
mod cli;
mod costs;
mod openapi;
mod preflight;
mod reads;
mod requests;
mod tokens;

use sqlx::PgPool;

use burnrate::auth::Role;
use burnrate::auth::tokens::{Creator, NewToken, create};

/// A token for `email` (an account made here with `role`), limited to `team` if given.
pub async fn token(pool: &PgPool, email: &str, role: Role, team: Option<&str>) -> String {
    let exists: bool = sqlx::query_scalar("select exists (select 1 from accounts where email = $1)")
        .bind(email)
        .fetch_one(pool)
        .await
        .expect("lookup");
    if !exists {
        crate::common::create_account(pool, email, role).await;
    }
    let new = NewToken {
        owner_email: email.into(),
        name: format!("test {}", team.unwrap_or("all")),
        role: None,
        team: team.map(str::to_string),
        expires_days: 30,
        service: false,
    };
    create(pool, Creator::Operator, new).await.expect("token").0
}

/// Two teams: vision (project `detector`, a $1,000 monthly budget with the default 50/80/100 %
/// thresholds, the org's default $1,000 policy) and ml (project `train`, a $1,500 policy).
pub const ORG: &str = "teams:
  - name: vision
    owners: [vision-lead@example.com]
    projects: [detector]
  - name: ml
    owners: [ml-lead@example.com]
    projects: [train]
budgets:
  - name: vision monthly
    scope: {team: vision}
    period: monthly
    amount: \"1000\"
policies:
  - limit: \"1000.00\"
    period: monthly
    actions: [notify, flag]
    mode: dry-run
  - team: ml
    limit: \"1500.00\"
    period: monthly
    actions: [notify]
    mode: dry-run
";
