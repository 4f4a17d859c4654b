//! Anomalies as CSV, the columns `burnrate anomalies` promises:
//! `from,to,scope,name,spend,baseline,excess,driver,driver_excess`. `to` is the day after the
//! last, as in every burnrate CSV; figures are exact decimals; a series or driver name is a
//! tag value (untrusted) and written as [`crate::format::csv::text`] writes text.

use crate::format::csv::{CsvStyle, text};

use super::detect::Anomaly;

pub const HEADER: &str = "from,to,scope,name,spend,baseline,excess,driver,driver_excess\n";

/// One line per anomaly, in the order given, after the header.
pub fn write(anomalies: &[Anomaly], style: CsvStyle) -> String {
    let mut out = String::from(HEADER);
    for a in anomalies {
        let (driver, driver_excess) = match &a.driver {
            Some(d) => (text(&d.label(), style), d.excess.normalize().to_string()),
            None => (String::new(), String::new()),
        };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{driver},{driver_excess}\n",
            a.from,
            a.to,
            a.scope.key(),
            text(&a.name, style),
            a.spend.normalize(),
            a.baseline.normalize(),
            a.excess.normalize(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anomalies::detect::Driver;
    use crate::anomalies::rule::Reason;
    use crate::anomalies::series::Scope;
    use chrono::NaiveDate;

    #[test]
    fn each_anomaly_is_one_line_with_exact_figures_and_its_names_escaped() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let anomaly = Anomaly {
            scope: Scope::Project,
            name: "=HYPERLINK(\"x\"),y".into(),
            from: day(26),
            to: day(28),
            spend: "4120.50".parse().expect("d"),
            baseline: "2000.25".parse().expect("d"),
            excess: "2120.25".parse().expect("d"),
            peak_day: day(27),
            reason: Reason::Spike,
            driver: Some(Driver {
                kind: "usage_type",
                value: "USE1-BoxUsage:p5.48xlarge".into(),
                excess: "1980.10".parse().expect("d"),
            }),
        };
        let quiet = Anomaly {
            driver: None,
            scope: Scope::User,
            name: "alice".into(),
            ..anomaly.clone()
        };
        assert_eq!(
            write(&[anomaly, quiet], CsvStyle::ExcelSafe),
            format!(
                "{HEADER}2026-11-26,2026-11-28,project,\"'=HYPERLINK(\"\"x\"\"),y\",4120.5,2000.25,2120.25,\
                 usage_type:USE1-BoxUsage:p5.48xlarge,1980.1\n\
                 2026-11-26,2026-11-28,user,alice,4120.5,2000.25,2120.25,,\n"
            )
        );
    }
}
