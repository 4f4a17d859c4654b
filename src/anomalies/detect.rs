//! Anomalies over a range of days: each series of a scope judged day by day ([`rule`]), the
//! consecutive days that count joined into one anomaly, and what drove it.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::rule::{self, Finding, PERCENTILE_DAYS, Reason, Thresholds};
use super::series::{self, Scope};
use crate::format::UNASSIGNED_TEAM;
use crate::period::DateRange;

/// Consecutive days of one series that count, in one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anomaly {
    pub scope: Scope,
    pub name: String,
    /// The first day that counts.
    pub from: NaiveDate,
    /// The day after the last.
    pub to: NaiveDate,
    /// The days' spend, their baselines' sum and the difference (negative for a drop).
    pub spend: Decimal,
    pub baseline: Decimal,
    pub excess: Decimal,
    pub peak_day: NaiveDate,
    /// Why the first day counted.
    pub reason: Reason,
    pub driver: Option<Driver>,
}

/// The usage type, user tag or instance type whose own rise explains most of the excess.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    /// `usage_type`, `user` or `instance_type`.
    pub kind: &'static str,
    pub value: String,
    /// Its spend over the anomaly's days less its own baseline (the median day of the 14
    /// before the anomaly) on each of them.
    pub excess: Decimal,
}

impl Driver {
    /// As the CSV writes it: `usage_type:…`, `user:…` or `instance_type:…`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.kind, self.value)
    }
}

/// Days of a driver's own baseline.
const DRIVER_BASELINE_DAYS: u64 = 14;

/// Every anomaly of `scope` whose days fall in `range`, each series judged on its history
/// before each day (up to 90 days before `range`), by scope, name and first day.
pub async fn find(
    conn: &mut PgConnection,
    scope: Scope,
    range: DateRange,
    thresholds: &Thresholds,
) -> Result<Vec<Anomaly>, sqlx::Error> {
    let start = range.from - chrono::Days::new(PERCENTILE_DAYS as u64);
    let all = series::read(
        conn,
        scope,
        DateRange {
            from: start,
            to: range.to,
        },
    )
    .await?;
    let offset = usize::try_from((range.from - start).num_days()).unwrap_or_default();
    let mut found = Vec::new();
    for (name, values) in all {
        let findings = rule::scan(start, &values, offset, thresholds);
        for run in runs(&findings) {
            found.push(anomaly(scope, &name, run));
        }
    }
    for anomaly in &mut found {
        anomaly.driver = driver(conn, anomaly).await?;
    }
    Ok(found)
}

/// Findings split where a day is missing or the direction turns.
fn runs(findings: &[Finding]) -> Vec<&[Finding]> {
    let mut out = Vec::new();
    let mut begin = 0;
    for i in 1..=findings.len() {
        let ends = i == findings.len() || {
            let (a, b) = (&findings[i - 1], &findings[i]);
            b.day != a.day + chrono::Days::new(1) || (a.excess < Decimal::ZERO) != (b.excess < Decimal::ZERO)
        };
        if ends && begin < i {
            out.push(&findings[begin..i]);
            begin = i;
        }
    }
    out
}

fn anomaly(scope: Scope, name: &str, run: &[Finding]) -> Anomaly {
    let sum = |f: fn(&Finding) -> Decimal| run.iter().map(f).sum::<Decimal>();
    let peak = run.iter().max_by_key(|f| f.excess.abs()).unwrap_or(&run[0]);
    Anomaly {
        scope,
        name: name.to_string(),
        from: run[0].day,
        to: run[run.len() - 1].day + chrono::Days::new(1),
        spend: sum(|f| f.spend),
        baseline: sum(|f| f.baseline),
        excess: sum(|f| f.excess),
        peak_day: peak.day,
        reason: run[0].reason,
        driver: None,
    }
}

/// The facts behind a scope's series, as a condition on `c` with the name bound as `$3`:
/// a team's are its projects' (what it owns; its allocated shares of other spend have no
/// usage type). Users and services have no drivers: the facts do not break them down by
/// usage type.
fn facts_of(scope: Scope, name: &str) -> Option<String> {
    match scope {
        Scope::Org => Some("$3::text is not null".into()),
        Scope::Project => Some("c.project = $3".into()),
        Scope::Account => Some("c.account_id = $3".into()),
        Scope::Team if name == UNASSIGNED_TEAM => Some(
            "$3::text is not null and c.project not in (select name from projects where team_id is not null)".into(),
        ),
        Scope::Team => Some(
            "c.project in (select p.name from projects p join teams t on t.id = p.team_id where t.name = $3)".into(),
        ),
        Scope::User | Scope::Service => None,
    }
}

/// The largest rise over its own baseline among the anomaly's usage types, user tags and
/// instance types, if any rose (for a drop, the largest fall), in that order on a tie.
async fn driver(conn: &mut PgConnection, anomaly: &Anomaly) -> Result<Option<Driver>, sqlx::Error> {
    let Some(facts) = facts_of(anomaly.scope, &anomaly.name) else {
        return Ok(None);
    };
    let since = anomaly.from - chrono::Days::new(DRIVER_BASELINE_DAYS);
    let dimensions = [
        ("usage_type", "c.usage_type", "costs_by_usage_type c"),
        (
            "instance_type",
            "u.instance_type",
            "costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.instance_type is not null",
        ),
        ("user", "c.user_name", "costs_by_user c"),
    ];
    let mut best: Option<Driver> = None;
    for (kind, key, from) in dimensions {
        let sql = format!(
            "select {key} as key, c.day, sum(c.unblended) as spend from {from}
             where c.day >= $1 and c.day < $2 and {facts} group by 1, 2"
        );
        let rows: Vec<(String, NaiveDate, Decimal)> = sqlx::query_as(&sql)
            .bind(since)
            .bind(anomaly.to)
            .bind(&anomaly.name)
            .fetch_all(&mut *conn)
            .await?;
        // A rise drives a spike, a fall a drop; the first dimension wins a tie.
        let toward = if anomaly.excess < Decimal::ZERO {
            -Decimal::ONE
        } else {
            Decimal::ONE
        };
        for (value, excess) in rises(&rows, since, anomaly.from, anomaly.to) {
            if excess * toward > Decimal::ZERO && best.as_ref().is_none_or(|b| excess * toward > b.excess * toward) {
                best = Some(Driver { kind, value, excess });
            }
        }
    }
    Ok(best)
}

/// Each key's spend on the days `from..to` less its median day of `since..from` (a day
/// without a row is 0) on each of them.
fn rises(
    rows: &[(String, NaiveDate, Decimal)],
    since: NaiveDate,
    from: NaiveDate,
    to: NaiveDate,
) -> Vec<(String, Decimal)> {
    let mut keys: std::collections::BTreeMap<&str, (Vec<Decimal>, Decimal)> = Default::default();
    let before = usize::try_from((from - since).num_days()).unwrap_or_default();
    let during = Decimal::from((to - from).num_days());
    for (key, day, spend) in rows {
        let entry = keys
            .entry(key.as_str())
            .or_insert_with(|| (vec![Decimal::ZERO; before], Decimal::ZERO));
        match usize::try_from((*day - since).num_days()) {
            Ok(i) if i < before => entry.0[i] += *spend,
            _ => entry.1 += *spend,
        }
    }
    keys.into_iter()
        .map(|(key, (history, spend))| {
            let baseline = rule::median(&history).unwrap_or_default();
            (key.to_string(), spend - baseline * during)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(day: u32, excess: i64) -> Finding {
        Finding {
            day: NaiveDate::from_ymd_opt(2026, 11, day).expect("date"),
            spend: Decimal::from(excess + 100),
            baseline: Decimal::from(100),
            excess: Decimal::from(excess),
            reason: if excess < 0 { Reason::Drop } else { Reason::Spike },
        }
    }

    #[test]
    fn days_join_while_consecutive_and_in_one_direction() {
        let days = [
            finding(1, 500),
            finding(2, 300),
            finding(4, 200),
            finding(5, -150),
            finding(6, -90),
        ];
        let lengths: Vec<usize> = runs(&days).iter().map(|r| r.len()).collect();
        assert_eq!(lengths, [2, 1, 2]);
        let first = anomaly(Scope::Project, "p", runs(&days)[0]);
        assert_eq!((first.excess, first.peak_day), (Decimal::from(800), days[0].day));
        assert_eq!(first.to, days[1].day + chrono::Days::new(1));
        assert!(runs(&[]).is_empty());
    }

    #[test]
    fn a_rise_is_each_keys_spend_less_its_median_day_before() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let rows = vec![
            ("a".to_string(), day(1), Decimal::from(10)),
            ("a".to_string(), day(2), Decimal::from(30)),
            ("a".to_string(), day(3), Decimal::from(20)),
            ("a".to_string(), day(4), Decimal::from(100)),
            ("a".to_string(), day(5), Decimal::from(120)),
            ("b".to_string(), day(5), Decimal::from(7)),
        ];
        // a: 220 over two days less its median day (20) twice; b: new, all of its 7.
        assert_eq!(
            rises(&rows, day(1), day(4), day(6)),
            [
                ("a".to_string(), Decimal::from(180)),
                ("b".to_string(), Decimal::from(7))
            ]
        );
    }
}
