//! Budgets as their form would send them, for the tests of every feature that judges one.

use burnrate::audit_log::Actor;
use burnrate::budgets::BudgetSpec;
use burnrate::budgets::spec::{BudgetInput, recipient_list, threshold_lines, validate};
use sqlx::PgPool;

/// A monthly budget on unblended spend net of credits: `scope` is the form's (kind, name),
/// `thresholds` one per line (`80`, `90 forecasted`), `recipients` comma-separated.
pub fn input(name: &str, scope: (&str, &str), amount: &str, thresholds: &str, recipients: &str) -> BudgetInput {
    BudgetInput {
        name: name.into(),
        scope_kind: scope.0.into(),
        scope_name: scope.1.into(),
        period: "monthly".into(),
        amount: amount.into(),
        metric: "unblended".into(),
        credits: String::new(),
        thresholds: threshold_lines(thresholds),
        recipients: recipient_list(recipients),
    }
}

/// [`input`], validated.
pub fn spec(name: &str, scope: (&str, &str), amount: &str, thresholds: &str, recipients: &str) -> BudgetSpec {
    validate(&input(name, scope, amount, thresholds, recipients)).expect("valid budget")
}

/// Saves a new budget as the system would; its id.
pub async fn save(pool: &PgPool, spec: &BudgetSpec) -> i64 {
    let mut conn = pool.acquire().await.expect("connection");
    burnrate::budgets::store::save(&mut conn, &Actor::system("test"), None, spec)
        .await
        .expect("budget saved")
}
