//! Turning Cost Explorer pages into fact rows. Everything here is AWS data and untrusted:
//! amounts are parsed exactly or rejected, never coerced, and odd shapes are errors.

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;

use aws_sdk_costexplorer::types::{Group, MetricValue, ResultByTime};
use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::IngestError;
use crate::config::IngestSettings;
use crate::costs::aws_account_views::{AwsAccountRow, AwsAccountView};
use crate::costs::store::{CostRow, Grain};

/// How to read a group's two keys: the project tag's `key$` prefix, and the second key's
/// prefix (a tag's) or none (a dimension's raw value); and the linked account the request was
/// filtered to, which every row of its answer is in.
#[derive(Debug, Clone)]
pub struct GroupKeys {
    project_prefix: String,
    second_prefix: Option<String>,
    account: String,
}

impl GroupKeys {
    pub fn for_grain(grain: Grain, settings: &IngestSettings, account: &str) -> GroupKeys {
        GroupKeys {
            project_prefix: format!("{}$", settings.tag_project),
            second_prefix: grain.by_user_tag().then(|| format!("{}$", settings.tag_user)),
            account: account.to_string(),
        }
    }
}

/// What one group-by pair's pages said about each day, gathered page by page while the
/// rows themselves go straight to the database: the days Cost Explorer answered for,
/// whether each was Estimated, and each day's unblended and amortized totals.
#[derive(Debug, Default)]
pub struct GrainSummary {
    pub days: BTreeMap<NaiveDate, bool>,
    pub totals: BTreeMap<NaiveDate, (Decimal, Decimal)>,
    pub rows: u64,
}

impl GrainSummary {
    /// Parses one page into rows and adds them to the day totals. Duplicate groups are
    /// caught by the fact tables' primary keys when the window is written.
    pub fn add_page(&mut self, results: &[ResultByTime], keys: &GroupKeys) -> Result<Vec<CostRow>, IngestError> {
        self.add_groups(
            results,
            |day, estimated, group| parse_group(day, estimated, group.keys(), group.metrics(), keys),
            |row| (row.unblended, row.amortized),
        )
    }

    /// Parses one page of an account view (`LINKED_ACCOUNT`, then `RECORD_TYPE` when the
    /// view has it) into rows and adds them to the day totals.
    pub fn add_account_page(
        &mut self,
        results: &[ResultByTime],
        view: AwsAccountView,
    ) -> Result<Vec<AwsAccountRow>, IngestError> {
        self.add_groups(
            results,
            |day, estimated, group| parse_account_group(day, estimated, group.keys(), group.metrics(), view),
            |row| (row.unblended, row.amortized),
        )
    }

    fn add_groups<R>(
        &mut self,
        results: &[ResultByTime],
        parse: impl Fn(NaiveDate, bool, &Group) -> Result<R, IngestError>,
        amounts: fn(&R) -> (Decimal, Decimal),
    ) -> Result<Vec<R>, IngestError> {
        let mut rows = Vec::new();
        for result in results {
            let day = result_day(result)?;
            let estimated = self.days.entry(day).or_insert(false);
            *estimated |= result.estimated();
            let total = self.totals.entry(day).or_default();
            for group in result.groups() {
                let row = parse(day, result.estimated(), group).map_err(|e| IngestError::InResult {
                    day,
                    source: Box::new(e),
                })?;
                let (unblended, amortized) = amounts(&row);
                total.0 += unblended;
                total.1 += amortized;
                rows.push(row);
            }
        }
        self.rows += rows.len() as u64;
        Ok(rows)
    }
}

/// With DAILY granularity each result covers exactly one day, `End` exclusive.
fn result_day(result: &ResultByTime) -> Result<NaiveDate, IngestError> {
    let period = result
        .time_period()
        .ok_or_else(|| IngestError::malformed("Cost Explorer returned a result without a TimePeriod"))?;
    let parse = |text: &str| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| IngestError::malformed(format!("Cost Explorer returned an invalid date {text:?}")))
    };
    let (start, end) = (parse(period.start())?, parse(period.end())?);
    if start.succ_opt() != Some(end) {
        return Err(IngestError::malformed(format!(
            "Cost Explorer returned a period {start} to {end} where one day was expected"
        )));
    }
    Ok(start)
}

fn parse_group(
    day: NaiveDate,
    estimated: bool,
    group_keys: &[String],
    metrics: Option<&HashMap<String, MetricValue>>,
    keys: &GroupKeys,
) -> Result<CostRow, IngestError> {
    let [first, second] = group_keys else {
        return Err(IngestError::malformed(format!(
            "a group has {} keys where 2 were expected",
            group_keys.len()
        )));
    };
    let project = strip_tag(first, &keys.project_prefix)?;
    let dimension = match &keys.second_prefix {
        Some(prefix) => strip_tag(second, prefix)?,
        None => checked_text(second)?,
    };
    let metrics = metrics.ok_or_else(|| IngestError::malformed("a group has no Metrics"))?;
    Ok(CostRow {
        day,
        unblended: amount(metrics, "UnblendedCost", true)?,
        amortized: amount(metrics, "AmortizedCost", true)?,
        usage_quantity: amount(metrics, "UsageQuantity", false)?,
        estimated,
        project,
        dimension,
        account: keys.account.clone(),
    })
}

fn parse_account_group(
    day: NaiveDate,
    estimated: bool,
    group_keys: &[String],
    metrics: Option<&HashMap<String, MetricValue>>,
    view: AwsAccountView,
) -> Result<AwsAccountRow, IngestError> {
    let wanted = view.dimensions().len();
    if group_keys.len() != wanted {
        return Err(IngestError::malformed(format!(
            "a group has {} keys where {wanted} were expected",
            group_keys.len()
        )));
    }
    let account = &group_keys[0];
    if !is_account_id(account) {
        return Err(IngestError::malformed(format!(
            "Cost Explorer named a linked account {account:?}, not a 12-digit account ID"
        )));
    }
    let record_type = group_keys.get(1).map(|t| checked_text(t)).transpose()?;
    let metrics = metrics.ok_or_else(|| IngestError::malformed("a group has no Metrics"))?;
    Ok(AwsAccountRow {
        day,
        account: account.clone(),
        record_type,
        unblended: amount(metrics, "UnblendedCost", true)?,
        amortized: amount(metrics, "AmortizedCost", true)?,
        usage_quantity: amount(metrics, "UsageQuantity", false)?,
        estimated,
    })
}

/// Cost Explorer's LINKED_ACCOUNT values are 12-digit account IDs.
pub fn is_account_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit())
}

/// `project$alpha` is `alpha`; `project$` is untagged spend, kept as "".
fn strip_tag(key: &str, prefix: &str) -> Result<String, IngestError> {
    let value = key
        .strip_prefix(prefix)
        .ok_or_else(|| IngestError::malformed(format!("group key {key:?} does not start with {prefix:?}")))?;
    checked_text(value)
}

/// Tag values are stored verbatim; only NUL, which PostgreSQL text cannot hold, is refused.
fn checked_text(value: &str) -> Result<String, IngestError> {
    if value.contains('\0') {
        return Err(IngestError::malformed(format!(
            "group key {value:?} contains a NUL character"
        )));
    }
    Ok(value.to_string())
}

fn amount(metrics: &HashMap<String, MetricValue>, name: &str, money: bool) -> Result<Decimal, IngestError> {
    let value = metrics
        .get(name)
        .ok_or_else(|| IngestError::malformed(format!("metric {name} is missing")))?;
    let text = value
        .amount()
        .ok_or_else(|| IngestError::malformed(format!("metric {name} has no Amount")))?;
    if money && value.unit() != Some("USD") {
        return Err(IngestError::malformed(format!(
            "metric {name} is in {:?}, not USD",
            value.unit().unwrap_or("")
        )));
    }
    parse_amount(text).ok_or_else(|| IngestError::malformed(format!("metric {name} has a malformed Amount {text:?}")))
}

/// An exact decimal: plain (`12.3400000001`) or scientific (`1.5E-7`), which Cost Explorer
/// uses for tiny amounts. Anything that would lose digits, or is not a number, is `None`.
pub fn parse_amount(text: &str) -> Option<Decimal> {
    let text = text.trim();
    let plain = text
        .strip_prefix('-')
        .unwrap_or(text)
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.');
    if plain {
        return Decimal::from_str_exact(text).ok();
    }
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let mantissa = Decimal::from_str_exact(mantissa).ok()?;
    let exponent: i32 = exponent.strip_prefix('+').unwrap_or(exponent).parse().ok()?;
    let scaled = if exponent < 0 {
        let scale = mantissa.scale().checked_add(exponent.unsigned_abs())?;
        (scale <= 28).then(|| Decimal::from_i128_with_scale(mantissa.mantissa(), scale))?
    } else {
        let factor = Decimal::from_str(&format!("1{}", "0".repeat(exponent as usize))).ok()?;
        mantissa.checked_mul(factor)?
    };
    Some(scaled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_exact_or_rejected() {
        let d = |s: &str| Decimal::from_str(s).expect("decimal");
        assert_eq!(parse_amount("12.3400000001"), Some(d("12.3400000001")));
        assert_eq!(parse_amount("-0.01"), Some(d("-0.01")));
        assert_eq!(parse_amount("0"), Some(Decimal::ZERO));
        assert_eq!(parse_amount("1.5E-7"), Some(d("0.00000015")));
        assert_eq!(parse_amount("2.5e+3"), Some(d("2500")));
        for bad in [
            "", "abc", "1,000.00", "NaN", "Infinity", "1.2.3", "1e", "--1", "0x10", "1E-40",
        ] {
            assert_eq!(parse_amount(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tag_keys_keep_their_value_verbatim_and_empty_means_untagged() {
        assert_eq!(strip_tag("project$alpha", "project$").expect("ok"), "alpha");
        assert_eq!(strip_tag("project$", "project$").expect("ok"), "");
        assert_eq!(
            strip_tag("project$<img src=x onerror=alert(1)> $ü", "project$").expect("ok"),
            "<img src=x onerror=alert(1)> $ü"
        );
        assert!(strip_tag("team$alpha", "project$").is_err());
        assert!(strip_tag("project$a\0b", "project$").is_err());
    }
}
