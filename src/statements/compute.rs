//! A month's statement from the allocation: per team, its projects' usage, its shares of
//! shared-cost rules, its credits, refunds and tax, and the total, exact to the last digit.
//! Usage is each allocated row's cost less its credit, refund and tax parts, so the sections
//! add up to the total, and the totals over teams (Unassigned included) to the month's.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Section, StatementLine};
use crate::format::UNASSIGNED_TEAM;
use crate::period::{AwsAccountId, DateRange};

#[derive(sqlx::FromRow)]
struct Part {
    team: String,
    team_id: Option<i64>,
    source: String,
    project: String,
    rule: Option<String>,
    unblended: Decimal,
    amortized: Decimal,
    credit_unblended: Decimal,
    credit_amortized: Decimal,
    refund_unblended: Decimal,
    refund_amortized: Decimal,
    tax_unblended: Decimal,
    tax_amortized: Decimal,
}

/// One team's (section, item, untagged) → (unblended, amortized). Untagged spend is kept
/// apart from a project whose tag value reads like its label.
type TeamLines = BTreeMap<(Section, String, bool), (Decimal, Decimal)>;

/// Every team's lines for `month` (in one linked account when `account` is set), before any
/// adjustment, teams by name and Unassigned last.
pub async fn month_lines(
    conn: &mut PgConnection,
    month: DateRange,
    account: Option<&AwsAccountId>,
) -> Result<Vec<StatementLine>, sqlx::Error> {
    let parts: Vec<Part> = sqlx::query_as(&format!(
        "select coalesce(t.name, $3) as team, a.team_id, a.source, a.project, r.name as rule,
                sum(a.unblended) as unblended, sum(a.amortized) as amortized,
                sum(a.credit_unblended) as credit_unblended, sum(a.credit_amortized) as credit_amortized,
                sum(a.refund_unblended) as refund_unblended, sum(a.refund_amortized) as refund_amortized,
                sum(a.tax_unblended) as tax_unblended, sum(a.tax_amortized) as tax_amortized
         from allocated_daily_costs a
         left join teams t on t.id = a.team_id
         left join allocation_rules r on r.id = a.rule_id
         where a.day >= $1 and a.day < $2{account}
         group by 1, 2, 3, 4, 5",
        account = AwsAccountId::and_in(account, "a.account_id")
    ))
    .bind(month.from)
    .bind(month.to)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(conn)
    .await?;
    let mut teams: BTreeMap<(bool, String, Option<i64>), TeamLines> = BTreeMap::new();
    for part in parts {
        let lines = teams
            .entry((part.team == UNASSIGNED_TEAM, part.team.clone(), part.team_id))
            .or_default();
        let untagged = part.source != "shared" && part.project.is_empty();
        let mut add = |section: Section, item: String, unblended: Decimal, amortized: Decimal| {
            let untagged = untagged && section == Section::Direct;
            let line = lines.entry((section, item, untagged)).or_default();
            line.0 += unblended;
            line.1 += amortized;
        };
        let usage_unblended = part.unblended - part.credit_unblended - part.refund_unblended - part.tax_unblended;
        let usage_amortized = part.amortized - part.credit_amortized - part.refund_amortized - part.tax_amortized;
        match (part.source.as_str(), part.rule) {
            ("shared", Some(rule)) => add(Section::Shared, rule, usage_unblended, usage_amortized),
            _ => add(
                Section::Direct,
                crate::format::tag_label(&part.project).to_string(),
                usage_unblended,
                usage_amortized,
            ),
        }
        add(
            Section::Credit,
            "Credits".into(),
            part.credit_unblended,
            part.credit_amortized,
        );
        add(
            Section::Refund,
            "Refunds".into(),
            part.refund_unblended,
            part.refund_amortized,
        );
        add(Section::Tax, "Tax".into(), part.tax_unblended, part.tax_amortized);
        add(Section::Total, "Total".into(), part.unblended, part.amortized);
    }
    Ok(teams
        .into_iter()
        .flat_map(|((_, team, team_id), lines)| {
            lines.into_iter().map(
                move |((section, item, untagged), (unblended, amortized))| StatementLine {
                    team: team.clone(),
                    team_id,
                    adjusts: None,
                    section,
                    item,
                    untagged,
                    unblended,
                    amortized,
                },
            )
        })
        .collect())
}

/// Teams by name with Unassigned last; within a team, by section then item.
pub fn sort(lines: &mut [StatementLine]) {
    lines.sort_by(|a, b| {
        (a.team == UNASSIGNED_TEAM, &a.team, a.section, &a.item, a.untagged).cmp(&(
            b.team == UNASSIGNED_TEAM,
            &b.team,
            b.section,
            &b.item,
            b.untagged,
        ))
    });
}
