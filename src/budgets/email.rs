//! The alert email: plain text and HTML with the same figures. Tag values and names come
//! from AWS and users, so the HTML escapes every one of them.

use super::{BudgetStatus, Threshold, ThresholdKind};
use crate::format::{tag_label, usd};
use crate::mail::compose::{Body, escape, facts_message, one_line};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertMessage {
    pub subject: String,
    pub text: String,
    pub html: String,
}

pub fn compose(
    status: &BudgetStatus,
    threshold: Threshold,
    top_projects: &[super::model::ProjectSpend],
    public_url: Option<&str>,
) -> AlertMessage {
    let spec = &status.budget.spec;
    let compared = match threshold.kind {
        ThresholdKind::Actual => "actual spend",
        ThresholdKind::Forecasted => "forecast spend",
    };
    let subject = format!(
        "[burnrate] {}: {} reached {} of its {} budget",
        one_line(&spec.name),
        compared,
        threshold.label().replace(" forecasted", ""),
        usd(spec.amount)
    );
    let link = public_url.map(|url| format!("{}/budgets/{}", url.trim_end_matches('/'), status.budget.id));
    let facts: Vec<(&str, String)> = vec![
        ("Budget", spec.name.clone()),
        ("Scope", spec.scope.label()),
        (
            "Period",
            format!(
                "{} {} to {}",
                spec.period.key(),
                status.period.from,
                status.period.last_day()
            ),
        ),
        ("Budget amount", format!("{} ({})", usd(spec.amount), spec.counts())),
        ("Spend so far", usd(status.spend)),
        ("Used", status.percent_used()),
        (
            "Threshold",
            format!("{} ({})", threshold.label(), usd(threshold.trigger_amount(spec.amount))),
        ),
        ("Forecast to period end", usd(status.forecast)),
    ];
    let top: Vec<(String, String)> = top_projects
        .iter()
        .map(|p| (tag_label(&p.project).to_string(), usd(p.spend)))
        .collect();

    let Body { mut text, mut html } = facts_message(&subject, &facts);
    text.push_str("\nTop projects driving spend:\n");
    for (project, spend) in &top {
        text.push_str(&format!("  - {project}: {spend}\n"));
    }
    if let Some(link) = &link {
        text.push_str(&format!("\nOpen the budget: {link}\n"));
    }
    text.push_str("\nYou receive this because you own the budget's team or are listed as a recipient.\n");

    html.push_str("<h2>Top projects driving spend</h2><ol>");
    for (project, spend) in &top {
        html.push_str(&format!("<li>{}: {}</li>", escape(project), escape(spend)));
    }
    html.push_str("</ol>");
    if let Some(link) = &link {
        html.push_str(&format!("<p><a href=\"{0}\">{0}</a></p>", escape(link)));
    }
    html.push_str("</body></html>");
    AlertMessage { subject, text, html }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budgets::{Budget, BudgetScope, BudgetSpec};
    use crate::period::BudgetPeriod;
    use crate::period::{DateRange, Metric};
    use chrono::NaiveDate;
    use rust_decimal::Decimal;

    #[test]
    fn the_email_states_the_figures_and_escapes_tag_values() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let status = BudgetStatus {
            budget: Budget {
                id: 7,
                spec: BudgetSpec {
                    key: None,
                    name: "ml <b>monthly</b>".into(),
                    scope: BudgetScope::Team("ml-research".into()),
                    period: BudgetPeriod::Monthly,
                    amount: Decimal::new(2500000, 2),
                    metric: Metric::Unblended,
                    credits: crate::period::Credits::Gross,
                    thresholds: Threshold::defaults(),
                    recipients: vec![],
                    escalation: vec![],
                },
            },
            period: DateRange {
                from: day(1),
                to: NaiveDate::from_ymd_opt(2026, 12, 1).expect("date"),
            },
            spend: Decimal::new(2012345, 2),
            forecast: Decimal::new(3100000, 2),
            crossed: vec![],
        };
        let threshold = Threshold {
            kind: ThresholdKind::Actual,
            percent: Decimal::from(80),
        };
        let top = [
            crate::budgets::model::ProjectSpend {
                project: "<img src=x onerror=alert(1)>".to_string(),
                spend: Decimal::new(1500000, 2),
            },
            crate::budgets::model::ProjectSpend {
                project: String::new(),
                spend: Decimal::ONE,
            },
        ];
        let message = compose(&status, threshold, &top, Some("https://costs.example.com/"));
        assert_eq!(
            message.subject,
            "[burnrate] ml <b>monthly</b>: actual spend reached 80% of its $25,000.00 budget"
        );
        for expected in [
            "Spend so far: $20,123.45",
            "Budget amount: $25,000.00 (unblended, before credits and refunds)",
            "Used: 80.5%",
            "80% ($20,000.00)",
            "$31,000.00",
            "2026-11-01 to 2026-11-30",
            "(untagged): $1.00",
            "https://costs.example.com/budgets/7",
        ] {
            assert!(
                message.text.contains(expected),
                "{expected} missing from {}",
                message.text
            );
        }
        assert!(
            message.html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{}",
            message.html
        );
        assert!(!message.html.contains("<img"), "{}", message.html);
        assert!(!message.html.contains("<b>"), "{}", message.html);
    }
}
