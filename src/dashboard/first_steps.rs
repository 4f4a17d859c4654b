//! The Overview's first steps for an admin: connect AWS, keep teams as code, set budgets,
//! review violations. Each line says what to do next and goes once its step is done, read
//! from what the database holds (a successful ingestion from AWS, a team change by a person,
//! a budget a person created, no enforcement action waiting), so there is nothing to dismiss.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The steps not done yet, in the order to do them. Empty for a viewer or a lead: the steps
/// are an admin's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstSteps {
    pub connect_aws: bool,
    pub teams_as_code: bool,
    pub set_budgets: bool,
    /// Enforcement actions waiting for an admin (manual mode), and proposed in dry-run.
    pub awaiting_approval: i64,
    pub proposed: i64,
}

impl FirstSteps {
    pub fn review_violations(&self) -> bool {
        self.awaiting_approval + self.proposed > 0
    }

    pub fn any(&self) -> bool {
        self.connect_aws || self.teams_as_code || self.set_budgets || self.review_violations()
    }
}

/// The IAM policy the role burnrate runs as needs, for pasting: Cost Explorer reads (costs and
/// owned commitments, `BURNRATE_COMMITMENTS`), AWS Budgets sync, the budget actions behind `stop` (which passes the
/// execution role), and `burnrate doctor`'s questions to IAM's policy simulator about the role itself.
pub const IAM_POLICY: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    { "Sid": "ReadCosts", "Effect": "Allow", "Action": ["ce:GetCostAndUsage", "ce:GetDimensionValues"], "Resource": "*" },
    { "Sid": "ReadCommitments", "Effect": "Allow",
      "Action": ["ce:GetSavingsPlansCoverage", "ce:GetSavingsPlansUtilization", "ce:GetReservationCoverage",
                 "ce:GetReservationUtilization", "ce:GetSavingsPlansPurchaseRecommendation"],
      "Resource": "*" },
    { "Sid": "SyncBudgets", "Effect": "Allow", "Action": ["budgets:ViewBudget", "budgets:ModifyBudget"], "Resource": "*" },
    { "Sid": "StopActions", "Effect": "Allow",
      "Action": ["budgets:CreateBudgetAction", "budgets:DescribeBudgetAction", "budgets:DescribeBudgetActionHistories",
                 "budgets:DescribeBudgetActionsForBudget", "budgets:ExecuteBudgetAction", "budgets:DeleteBudgetAction"],
      "Resource": "*" },
    { "Sid": "PassTheBudgetsExecutionRole", "Effect": "Allow", "Action": ["iam:PassRole"],
      "Resource": "arn:aws:iam::ACCOUNT_ID:role/BUDGETS_EXECUTION_ROLE" },
    { "Sid": "DoctorAsksThePolicySimulator", "Effect": "Allow",
      "Action": ["iam:SimulatePrincipalPolicy", "iam:GetRole"],
      "Resource": "arn:aws:iam::ACCOUNT_ID:role/BURNRATE_ROLE" }
  ]
}"#;

#[server(prefix = "/api", endpoint = "first_steps")]
pub async fn get_first_steps() -> Result<FirstSteps, AppError> {
    let caller = crate::auth::caller()?;
    if caller.role != crate::auth::Role::Admin {
        return Ok(FirstSteps::default());
    }
    let pool = crate::ctx::pool()?;
    Ok(reads::first_steps(&pool).await?)
}

#[cfg(feature = "ssr")]
mod reads {
    use super::FirstSteps;

    /// `demo` is the actor of everything the demo wrote; anything else is a person (or the
    /// CLI run by one).
    pub async fn first_steps(pool: &sqlx::PgPool) -> Result<FirstSteps, sqlx::Error> {
        let (connected, teams, budgets, awaiting_approval, proposed): (bool, bool, bool, i64, i64) = sqlx::query_as(
            "select exists (select 1 from ingestion_runs where trigger <> 'demo' and status = 'succeeded'),
                    exists (select 1 from audit_log where action like 'team.%' and actor <> 'demo'),
                    exists (select 1 from audit_log where action = 'budget.create' and actor <> 'demo'),
                    (select count(*) from enforcement_actions where status = 'awaiting_approval'),
                    (select count(*) from enforcement_actions where status = 'proposed' and mode = 'dry-run')",
        )
        .fetch_one(pool)
        .await?;
        Ok(FirstSteps {
            connect_aws: !connected,
            teams_as_code: !teams,
            set_budgets: !budgets,
            awaiting_approval,
            proposed,
        })
    }
}
