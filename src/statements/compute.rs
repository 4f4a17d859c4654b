//! A month's statement from the allocation: per team, its projects' usage, its shares of
//! shared-cost rules, its credits, refunds and tax, and the total, exact to the last digit.
//! Usage is each allocated row's cost less its credit, refund and tax parts, so the sections
//! add up to the total, and the totals over teams (Unassigned included) to the month's.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Section, StatementLine};
use crate::format::UNASSIGNED_TEAM;
use crate::period::DateRange;

#[derive(sqlx::FromRow)]
struct Part {
    team: String,
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

/// How an adjustment line's item begins.
const ADJUSTMENT: &str = "adjustment:";

/// One team's (section, item) → (unblended, amortized).
type TeamLines = BTreeMap<(Section, String), (Decimal, Decimal)>;

/// Every team's lines for `month`, before any adjustment, teams by name and Unassigned last.
pub async fn month_lines(conn: &mut PgConnection, month: DateRange) -> Result<Vec<StatementLine>, sqlx::Error> {
    let parts: Vec<Part> = sqlx::query_as(
        "select coalesce(t.name, $3) as team, a.source, a.project, r.name as rule,
                sum(a.unblended) as unblended, sum(a.amortized) as amortized,
                sum(a.credit_unblended) as credit_unblended, sum(a.credit_amortized) as credit_amortized,
                sum(a.refund_unblended) as refund_unblended, sum(a.refund_amortized) as refund_amortized,
                sum(a.tax_unblended) as tax_unblended, sum(a.tax_amortized) as tax_amortized
         from allocated_daily_costs a
         left join teams t on t.id = a.team_id
         left join allocation_rules r on r.id = a.rule_id
         where a.day >= $1 and a.day < $2
         group by 1, 2, 3, 4",
    )
    .bind(month.from)
    .bind(month.to)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(conn)
    .await?;
    let mut teams: BTreeMap<(bool, String), TeamLines> = BTreeMap::new();
    for part in parts {
        let lines = teams
            .entry((part.team == UNASSIGNED_TEAM, part.team.clone()))
            .or_default();
        let mut add = |section: Section, item: String, unblended: Decimal, amortized: Decimal| {
            let line = lines.entry((section, item)).or_default();
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
        .flat_map(|((_, team), lines)| {
            lines
                .into_iter()
                .map(move |((section, item), (unblended, amortized))| StatementLine {
                    team: team.clone(),
                    section,
                    item,
                    unblended,
                    amortized,
                })
        })
        .collect())
}

/// `lines` with an adjustment per team whose total for `previous` (as frozen) differs from
/// its total now, whatever changed it (AWS restating the month, or a mapping or rule change
/// reallocating it): a line in `direct` and the same amount added to the team's total. A
/// team with no line this month gets its adjustment and a total of it. Teams are matched
/// by name, so a team renamed since shows as two adjustments that cancel out.
pub fn with_adjustments(
    mut lines: Vec<StatementLine>,
    previous: &str,
    frozen: &[StatementLine],
    now: &[StatementLine],
) -> Vec<StatementLine> {
    let totals = |lines: &[StatementLine]| -> BTreeMap<String, (Decimal, Decimal)> {
        lines
            .iter()
            .filter(|l| l.section == Section::Total)
            .map(|l| {
                // A frozen total may itself carry an adjustment for the month before it: only
                // the month's own spend is compared.
                let adjusted = lines
                    .iter()
                    .filter(|a| a.team == l.team && a.section == Section::Direct && a.item.starts_with(ADJUSTMENT))
                    .fold((Decimal::ZERO, Decimal::ZERO), |s, a| {
                        (s.0 + a.unblended, s.1 + a.amortized)
                    });
                (l.team.clone(), (l.unblended - adjusted.0, l.amortized - adjusted.1))
            })
            .collect()
    };
    let (was, is) = (totals(frozen), totals(now));
    let teams: std::collections::BTreeSet<&String> = was.keys().chain(is.keys()).collect();
    for team in teams {
        let before = was.get(team).copied().unwrap_or_default();
        let after = is.get(team).copied().unwrap_or_default();
        let change = (after.0 - before.0, after.1 - before.1);
        if change.0.is_zero() && change.1.is_zero() {
            continue;
        }
        lines.push(StatementLine {
            team: team.clone(),
            section: Section::Direct,
            item: format!("adjustment: {previous} changed since frozen"),
            unblended: change.0,
            amortized: change.1,
        });
        match lines
            .iter_mut()
            .find(|l| l.team == *team && l.section == Section::Total)
        {
            Some(total) => {
                total.unblended += change.0;
                total.amortized += change.1;
            }
            None => lines.push(StatementLine {
                team: team.clone(),
                section: Section::Total,
                item: "Total".into(),
                unblended: change.0,
                amortized: change.1,
            }),
        }
    }
    sort(&mut lines);
    lines
}

/// Teams by name with Unassigned last; within a team, by section then item.
pub fn sort(lines: &mut [StatementLine]) {
    lines.sort_by(|a, b| {
        (a.team == UNASSIGNED_TEAM, &a.team, a.section, &a.item).cmp(&(
            b.team == UNASSIGNED_TEAM,
            &b.team,
            b.section,
            &b.item,
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(team: &str, section: Section, item: &str, amount: i64) -> StatementLine {
        StatementLine {
            team: team.into(),
            section,
            item: item.into(),
            unblended: Decimal::new(amount, 2),
            amortized: Decimal::new(amount, 2),
        }
    }

    #[test]
    fn a_restated_month_adds_an_adjustment_line_and_moves_the_total() {
        let frozen = vec![
            line("ml", Section::Direct, "train", 10000),
            line("ml", Section::Total, "Total", 10000),
            line("web", Section::Total, "Total", 5000),
        ];
        // October now reads 100.50 for ml, 50.00 for web: only ml is adjusted.
        let now = vec![
            line("ml", Section::Total, "Total", 10050),
            line("web", Section::Total, "Total", 5000),
        ];
        let november = vec![
            line("ml", Section::Direct, "train", 2000),
            line("ml", Section::Total, "Total", 2000),
        ];
        let lines = with_adjustments(november, "2026-10", &frozen, &now);
        assert_eq!(
            lines,
            [
                line("ml", Section::Direct, "adjustment: 2026-10 changed since frozen", 50),
                line("ml", Section::Direct, "train", 2000),
                line("ml", Section::Total, "Total", 2050),
            ]
        );
        // Comparing the frozen month's own spend: its own adjustment for September is left out.
        let frozen_with_adjustment = vec![
            line("ml", Section::Direct, "adjustment: 2026-09 changed since frozen", 700),
            line("ml", Section::Total, "Total", 10700),
        ];
        let same = vec![line("ml", Section::Total, "Total", 10000)];
        assert!(with_adjustments(vec![], "2026-10", &frozen_with_adjustment, &same).is_empty());
    }
}
