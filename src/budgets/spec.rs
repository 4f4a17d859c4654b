//! Checking a budget as typed into the form or written in the YAML file. Every problem is
//! reported with its field; nothing is saved unless all of them pass. Whether the scope
//! exists is checked against the database by `store`.

use rust_decimal::Decimal;

use super::{BudgetScope, BudgetSpec, Escalation, Threshold, ThresholdKind};
use crate::error::FieldError;
use crate::format::amount::parse_amount;
use crate::period::BudgetPeriod;
use crate::period::{Credits, Metric};

/// AWS Budgets allows at most 10 notifications per budget; burnrate keeps the same limit so
/// every budget can be synced.
pub const MAX_THRESHOLDS: usize = 10;
/// Extra recipients per budget. AWS takes 10 email subscribers per notification; burnrate's
/// own emails reach the rest.
pub const MAX_RECIPIENTS: usize = 50;

/// A threshold as written: `percent` text, `kind` (`actual` when empty), and the addresses
/// told of this threshold only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThresholdInput {
    pub percent: String,
    pub kind: String,
    pub recipients: Vec<String>,
}

/// A budget as submitted, every field still text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetInput {
    pub name: String,
    pub scope_kind: String,
    pub scope_name: String,
    pub period: String,
    pub amount: String,
    pub metric: String,
    /// `net` or `gross`; empty means net.
    pub credits: String,
    pub thresholds: Vec<ThresholdInput>,
    pub recipients: Vec<String>,
}

/// The form's thresholds box: one per line, `80`, `80%` or `100% forecasted`, optionally
/// followed by the addresses told of that threshold only: `80% director@example.com`.
pub fn threshold_lines(text: &str) -> Vec<ThresholdInput> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut words = recipient_list(line).into_iter();
            let percent = words.next().unwrap_or_default();
            let mut rest: Vec<String> = words.collect();
            // A word without `@` after the percentage is its type; addresses follow.
            let kind = match rest.first() {
                Some(word) if !word.contains('@') => rest.remove(0),
                _ => String::new(),
            };
            ThresholdInput {
                percent,
                kind,
                recipients: rest,
            }
        })
        .collect()
}

/// Addresses separated by commas, spaces or new lines.
pub fn recipient_list(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn validate(input: &BudgetInput) -> Result<BudgetSpec, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = crate::error::checked_name(&input.name).unwrap_or_else(|error| {
        errors.push(error);
        String::new()
    });
    let scope = match (input.scope_kind.trim(), input.scope_name.trim()) {
        ("org", _) => Some(BudgetScope::Org),
        ("team", "") | ("project", "") | ("account", "") => {
            errors.push(FieldError::new(
                "scope",
                format!("name the {} this budget covers", input.scope_kind.trim()),
            ));
            None
        }
        ("team", team) => Some(BudgetScope::Team(team.to_string())),
        // Tag values are kept verbatim, inner spaces included.
        ("project", _) => Some(BudgetScope::Project(input.scope_name.clone())),
        ("account", id) => match crate::period::AwsAccountId::parse(id) {
            Ok(id) => Some(BudgetScope::Account(id)),
            Err(message) => {
                errors.push(FieldError::new("scope", message));
                None
            }
        },
        (other, _) => {
            errors.push(FieldError::new(
                "scope",
                format!("unknown scope {other:?}; expected org, team, project or account"),
            ));
            None
        }
    };
    let period = BudgetPeriod::parse(&input.period);
    if period.is_none() {
        errors.push(FieldError::new("period", "expected monthly, quarterly or annual"));
    }
    let amount = match parse_amount(&input.amount) {
        Ok(amount) => Some(amount),
        Err(message) => {
            errors.push(FieldError::new("amount", message));
            None
        }
    };
    let metric = match Metric::parse(Some(input.metric.trim())) {
        Ok(metric) => Some(metric),
        Err(message) => {
            errors.push(FieldError::new("metric", message));
            None
        }
    };
    let credits = Credits::parse(Some(input.credits.trim())).unwrap_or_else(|message| {
        errors.push(FieldError::new("credits", message));
        Credits::Net
    });
    let (thresholds, escalation) = thresholds(&input.thresholds, &mut errors);
    let recipients = recipients(&input.recipients, "recipients", &mut errors);
    match (scope, period, amount, metric) {
        (Some(scope), Some(period), Some(amount), Some(metric)) if errors.is_empty() => Ok(BudgetSpec {
            key: None,
            name,
            scope,
            period,
            amount,
            metric,
            credits,
            thresholds,
            recipients,
            escalation,
        }),
        _ => Err(errors),
    }
}

fn thresholds(inputs: &[ThresholdInput], errors: &mut Vec<FieldError>) -> (Vec<Threshold>, Vec<Escalation>) {
    let mut thresholds: Vec<Threshold> = Vec::new();
    let mut escalation: Vec<Escalation> = Vec::new();
    if inputs.len() > MAX_THRESHOLDS {
        errors.push(FieldError::new(
            "thresholds",
            format!(
                "at most {MAX_THRESHOLDS} thresholds per budget (AWS Budgets' limit); found {}",
                inputs.len()
            ),
        ));
    }
    for input in inputs {
        let kind = if input.kind.trim().is_empty() {
            Some(ThresholdKind::Actual)
        } else {
            ThresholdKind::parse(&input.kind)
        };
        let Some(kind) = kind else {
            errors.push(FieldError::new(
                "thresholds",
                format!(
                    "unknown threshold type {:?}; expected actual or forecasted",
                    input.kind.trim()
                ),
            ));
            continue;
        };
        let text = input.percent.trim().trim_end_matches('%');
        let percent = text
            .parse::<Decimal>()
            .ok()
            .filter(|p| *p >= Decimal::ONE && *p <= Decimal::from(1000) && p.normalize().scale() <= 2);
        let Some(percent) = percent else {
            errors.push(FieldError::new(
                "thresholds",
                format!(
                    "{:?} is not a percentage from 1 to 1000 (at most 2 decimals)",
                    input.percent.trim()
                ),
            ));
            continue;
        };
        let threshold = Threshold {
            kind,
            percent: percent.normalize(),
        };
        if thresholds.contains(&threshold) {
            errors.push(FieldError::new(
                "thresholds",
                format!("{} is listed twice", threshold.label()),
            ));
            continue;
        }
        thresholds.push(threshold);
        let recipients = recipients(&input.recipients, "thresholds", errors);
        if !recipients.is_empty() {
            escalation.push(Escalation { threshold, recipients });
        }
    }
    thresholds.sort();
    escalation.sort_by_key(|e| e.threshold);
    (thresholds, escalation)
}

/// Addresses checked, lower-cased, sorted and deduplicated; problems blamed on `field`.
fn recipients(inputs: &[String], field: &str, errors: &mut Vec<FieldError>) -> Vec<String> {
    let mut recipients = Vec::new();
    for input in inputs {
        match crate::mail::address::validate_email(input) {
            Ok(email) => recipients.push(email),
            Err(_) => errors.push(FieldError::new(
                field,
                format!("{:?} is not an email address", input.trim()),
            )),
        }
    }
    recipients.sort();
    recipients.dedup();
    if recipients.len() > MAX_RECIPIENTS {
        errors.push(FieldError::new(
            field,
            format!("at most {MAX_RECIPIENTS} extra recipients; use a mailing list for more"),
        ));
    }
    recipients
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> BudgetInput {
        BudgetInput {
            name: "ml-research monthly".into(),
            scope_kind: "team".into(),
            scope_name: "ml-research".into(),
            period: "monthly".into(),
            amount: "25000.00".into(),
            metric: "unblended".into(),
            credits: String::new(),
            thresholds: threshold_lines("50\n80%\n100\n100 forecasted"),
            recipients: recipient_list("Finance@Example.com, cfo@example.com"),
        }
    }

    fn field_errors(input: BudgetInput) -> Vec<(String, String)> {
        validate(&input)
            .expect_err("invalid")
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    #[test]
    fn the_documented_budget_is_valid() {
        let spec = validate(&valid()).expect("valid");
        assert_eq!(spec.scope, BudgetScope::Team("ml-research".into()));
        assert_eq!(spec.amount, Decimal::new(2500000, 2));
        assert_eq!(
            spec.thresholds.iter().map(Threshold::label).collect::<Vec<_>>(),
            ["50%", "80%", "100%", "100% forecasted"]
        );
        assert_eq!(spec.recipients, ["cfo@example.com", "finance@example.com"]);
    }

    #[test]
    fn every_rule_is_reported_with_its_field() {
        let mut input = valid();
        input.name = String::new();
        input.scope_kind = "team".into();
        input.scope_name = " ".into();
        input.period = "weekly".into();
        input.amount = "0".into();
        input.metric = "blended".into();
        input.thresholds = threshold_lines("0\n1001\n80\n80%\n12.345\n90 sometimes");
        input.recipients = vec!["not-an-email".into()];
        let fields: Vec<String> = field_errors(input).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "name",
                "scope",
                "period",
                "amount",
                "metric",
                "thresholds",
                "thresholds",
                "thresholds",
                "thresholds",
                "thresholds",
                "recipients"
            ]
        );
    }

    #[test]
    fn a_threshold_may_name_who_hears_of_it_alone() {
        let mut input = valid();
        input.thresholds =
            threshold_lines("50\n80% Director@Example.com\n100 forecasted finance@example.com, cfo@example.com");
        let spec = validate(&input).expect("valid");
        let eighty = spec.thresholds[1];
        assert_eq!(eighty.label(), "80%");
        assert_eq!(spec.escalation_for(eighty), ["director@example.com"]);
        assert_eq!(spec.escalation_for(spec.thresholds[0]), [] as [String; 0]);
        let forecast = spec.thresholds[2];
        assert_eq!(forecast.label(), "100% forecasted");
        assert_eq!(
            spec.escalation_for(forecast),
            ["cfo@example.com", "finance@example.com"]
        );
        assert_eq!(
            spec.threshold_line(forecast),
            "100% forecasted cfo@example.com finance@example.com"
        );
        // The form shows what it read, so a save without edits changes nothing.
        let shown: String = spec.thresholds.iter().map(|t| spec.threshold_line(*t) + "\n").collect();
        input.thresholds = threshold_lines(&shown);
        assert_eq!(validate(&input).expect("valid"), spec);

        input.thresholds = threshold_lines("80 director");
        assert_eq!(
            field_errors(input),
            [(
                "thresholds".to_string(),
                "unknown threshold type \"director\"; expected actual or forecasted".to_string()
            )]
        );
        let mut input = valid();
        input.thresholds = threshold_lines("80 actual director@");
        assert_eq!(
            field_errors(input),
            [(
                "thresholds".to_string(),
                "\"director@\" is not an email address".to_string()
            )]
        );
    }

    #[test]
    fn at_most_ten_thresholds_and_no_duplicates_per_type() {
        let mut input = valid();
        input.thresholds = threshold_lines(&(1..=11).map(|p| format!("{}\n", p * 10)).collect::<String>());
        let errors = field_errors(input);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].1.contains("at most 10 thresholds"), "{errors:?}");

        let mut input = valid();
        input.thresholds = threshold_lines("100\n100 forecasted\n100.0 actual");
        let errors = field_errors(input);
        assert_eq!(errors, [("thresholds".to_string(), "100% is listed twice".to_string())]);
    }
}
