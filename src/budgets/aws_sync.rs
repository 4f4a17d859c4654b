//! Keeping AWS Budgets in step with burnrate (`burnrate budgets sync`, the admins' button).
//!
//! Each burnrate budget becomes the AWS budget `burnrate-<id>`: the same limit, period and
//! cost type, a FilterExpression on the project tag (a team budget lists the team's
//! projects), and one notification per threshold emailing up to 10 recipients. AWS budgets
//! whose names do not start with `burnrate-` are never touched.
//!
//! AWS cannot list a notification's subscribers back, so each sync stores a fingerprint of
//! what it wrote. A budget whose fingerprint and AWS state both match is left alone (a
//! second sync writes nothing); one that differs is replaced (deleted and created), which
//! needs only the calls every Budgets implementation has.

use aws_sdk_budgets::types::{
    Budget as AwsBudget, BudgetType, ComparisonOperator, Dimension, Expression, ExpressionDimensionValues,
    Metric as AwsMetric, Notification, NotificationType, NotificationWithSubscribers, Spend, Subscriber,
    SubscriptionType, ThresholdType, TimeUnit,
};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::aws::budgets::AwsBudgets;
use crate::aws::budgets::SyncError;

use super::model::AwsBudgetRow;
use super::{Budget, BudgetScope, ThresholdKind, evaluate, store};
use crate::format::{count, usd};
use crate::period::BudgetPeriod;
use crate::period::{Credits, Metric};

/// The prefix that marks AWS budgets as burnrate's to manage.
pub const NAME_PREFIX: &str = "burnrate-";
/// AWS allows at most 10 email subscribers per notification.
pub const MAX_SUBSCRIBERS: usize = 10;

/// What a sync did, by AWS budget name.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncReport {
    pub created: Vec<String>,
    pub replaced: Vec<String>,
    pub unchanged: Vec<String>,
    pub deleted: Vec<String>,
    /// (burnrate budget, why it was not synced)
    pub skipped: Vec<(String, String)>,
}

impl std::fmt::Display for SyncReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AWS Budgets: {} created, {} replaced, {} unchanged, {} deleted, {} skipped",
            count(self.created.len()),
            count(self.replaced.len()),
            count(self.unchanged.len()),
            count(self.deleted.len()),
            count(self.skipped.len())
        )?;
        for (name, why) in &self.skipped {
            write!(f, "\n  skipped {name:?}: {why}")?;
        }
        Ok(())
    }
}

/// Every budget in the account as the UI lists it, by name.
pub async fn summaries(aws: &AwsBudgets) -> Result<Vec<AwsBudgetRow>, SyncError> {
    let mut list: Vec<AwsBudgetRow> = aws
        .list()
        .await?
        .iter()
        .map(|b| AwsBudgetRow {
            name: b.budget_name().to_string(),
            // Dollars as every page shows them; another unit as AWS gives it.
            limit: b
                .budget_limit()
                .map(|l| match (l.amount().parse::<Decimal>(), l.unit()) {
                    (Ok(amount), "USD") => usd(amount),
                    _ => format!("{} {}", l.amount(), l.unit()),
                })
                .unwrap_or_else(|| "planned limits".into()),
            time_unit: b.time_unit().as_str().to_string(),
            managed: b.budget_name().starts_with(NAME_PREFIX),
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(list)
}

/// What one burnrate budget should look like in AWS.
struct Desired {
    budget: AwsBudget,
    notifications: Vec<NotificationWithSubscribers>,
    fingerprint: String,
}

/// The AWS form of `budget`, or why it cannot have one.
fn desired(budget: &Budget, projects: &[String], recipients: &[String], tag_key: &str) -> Result<Desired, String> {
    let spec = &budget.spec;
    let build_err = |e: aws_sdk_budgets::error::BuildError| format!("building the AWS request: {e}");
    let filter = match &spec.scope {
        BudgetScope::Org => None,
        // Cost Explorer's LINKED_ACCOUNT dimension, as the Expression page documents it
        // (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_Expression.html).
        BudgetScope::Account(id) => Some(
            Expression::builder()
                .dimensions(
                    ExpressionDimensionValues::builder()
                        .key(Dimension::LinkedAccount)
                        .set_values(Some(vec![id.to_string()]))
                        .build()
                        .map_err(build_err)?,
                )
                .build(),
        ),
        _ if projects.is_empty() => return Err("the team has no projects, so no tag filter can express it".into()),
        _ => Some(crate::aws::budgets::tag_filter(tag_key, projects)),
    };
    // Before credits: AWS leaves the Credit and Refund record types out, as burnrate does.
    let filter = match spec.credits {
        Credits::Net => filter,
        Credits::Gross => {
            let no_credits = Expression::builder()
                .not(
                    Expression::builder()
                        .dimensions(
                            ExpressionDimensionValues::builder()
                                .key(Dimension::RecordType)
                                .set_values(Some(vec!["Credit".to_string(), "Refund".to_string()]))
                                .build()
                                .map_err(build_err)?,
                        )
                        .build(),
                )
                .build();
            Some(match filter {
                None => no_credits,
                Some(scope) => Expression::builder().and(scope).and(no_credits).build(),
            })
        }
    };
    let time_unit = match spec.period {
        BudgetPeriod::Monthly => TimeUnit::Monthly,
        BudgetPeriod::Quarterly => TimeUnit::Quarterly,
        BudgetPeriod::Annual => TimeUnit::Annually,
    };
    let aws_budget = AwsBudget::builder()
        .budget_name(aws_name(budget.id))
        .budget_type(BudgetType::Cost)
        .time_unit(time_unit)
        .budget_limit(
            Spend::builder()
                .amount(format!("{:.2}", spec.amount))
                .unit("USD")
                .build()
                .map_err(build_err)?,
        )
        .metrics(match spec.metric {
            Metric::Amortized => AwsMetric::AmortizedCost,
            Metric::Unblended => AwsMetric::UnblendedCost,
        })
        .set_filter_expression(filter)
        .build()
        .map_err(build_err)?;
    let mut notifications = Vec::new();
    for threshold in &spec.thresholds {
        // The escalation ladder in AWS too: each notification emails its own threshold's
        // addresses first (AWS takes 10), then everyone's.
        let mut addresses: Vec<&String> = spec.escalation_for(*threshold).iter().collect();
        addresses.extend(
            recipients
                .iter()
                .filter(|r| !spec.escalation_for(*threshold).contains(r)),
        );
        let subscribers: Vec<Subscriber> = addresses
            .into_iter()
            .take(MAX_SUBSCRIBERS)
            .map(|address| {
                Subscriber::builder()
                    .subscription_type(SubscriptionType::Email)
                    .address(address)
                    .build()
                    .map_err(build_err)
            })
            .collect::<Result<_, _>>()?;
        // AWS requires a subscriber per notification; a threshold nobody hears of is left out.
        if !subscribers.is_empty() {
            let notification = Notification::builder()
                .notification_type(match threshold.kind {
                    ThresholdKind::Actual => NotificationType::Actual,
                    ThresholdKind::Forecasted => NotificationType::Forecasted,
                })
                .comparison_operator(ComparisonOperator::GreaterThan)
                // AWS's API takes a double; percentages have at most 2 decimals.
                .threshold(threshold.percent.to_f64().unwrap_or(100.0))
                .threshold_type(ThresholdType::Percentage)
                .build()
                .map_err(build_err)?;
            notifications.push(
                NotificationWithSubscribers::builder()
                    .notification(notification)
                    .set_subscribers(Some(subscribers))
                    .build()
                    .map_err(build_err)?,
            );
        }
    }
    let fingerprint = format!(
        "{:x}",
        Sha256::digest(format!("{aws_budget:?}|{notifications:?}").as_bytes())
    );
    Ok(Desired {
        budget: aws_budget,
        notifications,
        fingerprint,
    })
}

/// `burnrate-<id>`: a budget this sync manages. Enforcement's `burnrate-enforce-…` budgets
/// carry stop actions and are not the sync's to delete.
fn is_synced_name(name: &str) -> bool {
    name.strip_prefix(NAME_PREFIX)
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

pub fn aws_name(id: i64) -> String {
    format!("{NAME_PREFIX}{id}")
}

/// What makes two notifications the same: type, operator, threshold and threshold type
/// (AWS's default, PERCENTAGE, when absent). AWS adds `NotificationState` (OK or ALARM,
/// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_Notification.html>),
/// which is AWS's state, not the budget's definition.
type NotificationKey = (String, String, u64, String);

fn notification_key(n: &Notification) -> NotificationKey {
    (
        n.notification_type().as_str().to_string(),
        n.comparison_operator().as_str().to_string(),
        n.threshold().to_bits(),
        n.threshold_type().map_or("PERCENTAGE", |t| t.as_str()).to_string(),
    )
}

/// True when AWS holds what `desired` describes (limit, period, cost type, filter and the
/// notification set); subscribers are covered by the stored fingerprint.
fn matches(actual: &AwsBudget, notifications: &[Notification], desired: &Desired) -> bool {
    let amount = |b: &AwsBudget| b.budget_limit().and_then(|l| l.amount().parse::<Decimal>().ok());

    let mut have: Vec<NotificationKey> = notifications.iter().map(notification_key).collect();
    let mut want: Vec<NotificationKey> = desired
        .notifications
        .iter()
        .filter_map(|n| n.notification())
        .map(notification_key)
        .collect();
    have.sort();
    want.sort();
    amount(actual) == amount(&desired.budget)
        && actual.time_unit() == desired.budget.time_unit()
        && actual.metrics() == desired.budget.metrics()
        && actual.filter_expression() == desired.budget.filter_expression()
        && have == want
}

/// Makes AWS match every burnrate budget; removes `burnrate-` budgets that no longer exist.
pub async fn sync(pool: &PgPool, aws: &AwsBudgets, tag_key: &str) -> Result<SyncReport, SyncError> {
    let mut conn = pool.acquire().await?;
    let budgets = store::list(&mut conn).await?;
    let existing = aws.list().await?;
    let mut report = SyncReport::default();
    for budget in &budgets {
        let name = aws_name(budget.id);
        let projects: Vec<String> =
            match &budget.spec.scope {
                BudgetScope::Org | BudgetScope::Account(_) => Vec::new(),
                BudgetScope::Project(project) => vec![project.clone()],
                BudgetScope::Team(team) => sqlx::query_scalar(
                    "select p.name from projects p join teams t on t.id = p.team_id where t.name = $1 order by p.name",
                )
                .bind(team)
                .fetch_all(&mut *conn)
                .await?,
            };
        let recipients = evaluate::recipients(&mut conn, budget).await?;
        let desired = match desired(budget, &projects, &recipients, tag_key) {
            Ok(desired) => desired,
            Err(why) => {
                report.skipped.push((budget.spec.name.clone(), why));
                continue;
            }
        };
        let stored: Option<String> = sqlx::query_scalar("select fingerprint from budget_aws_sync where budget_id = $1")
            .bind(budget.id)
            .fetch_optional(&mut *conn)
            .await?;
        match existing.iter().find(|b| b.budget_name() == name) {
            Some(actual) => {
                let notifications = aws.notifications(&name).await?;
                if stored.as_deref() == Some(desired.fingerprint.as_str()) && matches(actual, &notifications, &desired)
                {
                    report.unchanged.push(name);
                    continue;
                }
                aws.delete(&name).await?;
                aws.create(&desired.budget, &desired.notifications).await?;
                report.replaced.push(name.clone());
            }
            None => {
                aws.create(&desired.budget, &desired.notifications).await?;
                report.created.push(name.clone());
            }
        }
        sqlx::query(
            "insert into budget_aws_sync (budget_id, aws_name, fingerprint) values ($1, $2, $3)
             on conflict (budget_id) do update set aws_name = $2, fingerprint = $3, synced_at = now()",
        )
        .bind(budget.id)
        .bind(&name)
        .bind(&desired.fingerprint)
        .execute(&mut *conn)
        .await?;
    }
    let kept: Vec<String> = budgets.iter().map(|b| aws_name(b.id)).collect();
    for actual in &existing {
        let name = actual.budget_name();
        if is_synced_name(name) && !kept.iter().any(|k| k == name) {
            aws.delete(name).await?;
            report.deleted.push(name.to_string());
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_notification_emails_everyone_plus_its_own_step_of_the_ladder() {
        use crate::budgets::spec::{BudgetInput, recipient_list, threshold_lines, validate};
        let spec = validate(&BudgetInput {
            name: "org".into(),
            scope_kind: "org".into(),
            period: "monthly".into(),
            amount: "1000".into(),
            metric: "unblended".into(),
            thresholds: threshold_lines("50\n80 director@example.com\n100 finance@example.com"),
            recipients: recipient_list("cfo@example.com"),
            ..BudgetInput::default()
        })
        .expect("valid");
        let budget = Budget { id: 3, spec };
        let owners = vec!["admin@example.com".to_string(), "cfo@example.com".to_string()];
        let desired = desired(&budget, &[], &owners, "project").expect("expressible");
        let emailed: Vec<(f64, Vec<&str>)> = desired
            .notifications
            .iter()
            .map(|n| {
                (
                    n.notification().map_or(0.0, |n| n.threshold()),
                    n.subscribers().iter().map(|s| s.address()).collect(),
                )
            })
            .collect();
        assert_eq!(
            emailed,
            [
                (50.0, vec!["admin@example.com", "cfo@example.com"]),
                (
                    80.0,
                    vec!["director@example.com", "admin@example.com", "cfo@example.com"]
                ),
                (
                    100.0,
                    vec!["finance@example.com", "admin@example.com", "cfo@example.com"]
                ),
            ]
        );
    }

    #[test]
    fn a_budget_before_credits_leaves_the_credit_and_refund_record_types_out_in_aws() {
        use crate::budgets::spec::{BudgetInput, threshold_lines, validate};
        let spec = |scope_kind: &str, credits: &str| {
            validate(&BudgetInput {
                name: "b".into(),
                scope_kind: scope_kind.into(),
                scope_name: match scope_kind {
                    "team" => "ml",
                    "account" => "012345678901",
                    _ => "",
                }
                .into(),
                period: "monthly".into(),
                amount: "1000".into(),
                metric: "unblended".into(),
                credits: credits.into(),
                thresholds: threshold_lines("80"),
                ..BudgetInput::default()
            })
            .expect("valid")
        };
        let filter = |scope_kind: &str, credits: &str| {
            let budget = Budget {
                id: 1,
                spec: spec(scope_kind, credits),
            };
            desired(&budget, &["train".to_string()], &[], "project")
                .expect("expressible")
                .budget
                .filter_expression()
                .cloned()
        };
        let no_credits = |e: &Expression| {
            e.not()
                .and_then(|n| n.dimensions())
                .is_some_and(|d| d.key() == &Dimension::RecordType && d.values() == ["Credit", "Refund"])
        };
        assert_eq!(filter("org", "net"), None, "net is AWS's own default");
        assert!(filter("org", "gross").is_some_and(|e| no_credits(&e)));
        let team = filter("team", "gross").expect("a filter");
        assert_eq!(team.and().len(), 2, "{team:?}");
        assert!(team.and()[0].tags().is_some(), "the team's projects");
        assert!(no_credits(&team.and()[1]));
        assert!(filter("team", "net").is_some_and(|e| e.tags().is_some()));
        // An account's budget: Cost Explorer's LINKED_ACCOUNT dimension, the ID as written.
        let account = filter("account", "net")
            .and_then(|e| e.dimensions().cloned())
            .expect("a dimension");
        assert_eq!(
            (account.key(), account.values()),
            (&Dimension::LinkedAccount, ["012345678901".to_string()].as_slice())
        );
        let gross = filter("account", "gross").expect("a filter");
        assert!(gross.and()[0].dimensions().is_some() && no_credits(&gross.and()[1]));
    }

    #[test]
    fn sync_deletes_only_its_own_numbered_budgets() {
        assert!(is_synced_name("burnrate-7"));
        assert!(is_synced_name(&aws_name(123)));
        // Enforcement's stop budgets carry live budget actions: never the sync's to delete.
        assert!(!is_synced_name("burnrate-enforce-7"));
        assert!(!is_synced_name("burnrate-"));
        assert!(!is_synced_name("team-ml-monthly"));
    }
}
