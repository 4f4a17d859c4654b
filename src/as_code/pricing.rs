//! The `pricing:` section: how this organisation pays, on top of the GPU catalogue's
//! us-east-1 list prices.
//!
//! ```yaml
//! pricing:
//!   spot_discount_percent: 65            # where your own data shows no spot price
//!   savings_plan_discount_percent: 28    # 1-year no-upfront
//!   negotiated_discount_percent: 5       # off every on-demand price
//!   overrides:
//!     - {instance_type: g5.xlarge, region: eu-west-1, usd_per_hour: 1.2}
//!     - {instance_type: p4d.24xlarge, discount_percent: 12}
//!   per_token:
//!     - {name: "Llama 3.3 70B on Bedrock", usd_per_million_tokens: 0.72}
//! ```

use rust_decimal::Decimal;
use saphyr::{MarkedYaml, Scalar, YamlData};

use super::number_text;
use super::{Errors, quote, text};
use crate::savings::model::ProjectFacts;
use crate::savings::pricing::{PriceOverride, Pricing, TokenPrice};

const KEYS: [&str; 5] = [
    "spot_discount_percent",
    "savings_plan_discount_percent",
    "negotiated_discount_percent",
    "overrides",
    "per_token",
];

pub(super) fn read(node: &MarkedYaml, errors: &mut Errors) -> Pricing {
    let mut pricing = Pricing::default();
    let fields = match &node.data {
        YamlData::Mapping(fields) => fields,
        YamlData::Value(Scalar::Null) => return pricing,
        _ => {
            errors.add(node, "`pricing` must be a mapping such as {spot_discount_percent: 65}");
            return pricing;
        }
    };
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("spot_discount_percent") => {
                pricing.spot_discount_percent = percent(value, "spot_discount_percent", errors)
            }
            Some("savings_plan_discount_percent") => {
                pricing.savings_plan_discount_percent = percent(value, "savings_plan_discount_percent", errors);
            }
            Some("negotiated_discount_percent") => {
                pricing.negotiated_discount_percent = percent(value, "negotiated_discount_percent", errors);
            }
            Some("overrides") => pricing.overrides = entries(value, "overrides", errors, read_override),
            Some("per_token") => pricing.per_token = entries(value, "per_token", errors, read_token_price),
            other => errors.add(
                key,
                format!(
                    "unknown field {:?}; expected one of: {}",
                    other.unwrap_or(""),
                    KEYS.join(", ")
                ),
            ),
        }
    }
    pricing
}

fn entries<T>(
    node: &MarkedYaml,
    field: &str,
    errors: &mut Errors,
    read: fn(&MarkedYaml, &mut Errors) -> Option<T>,
) -> Vec<T> {
    match &node.data {
        YamlData::Sequence(items) => items.iter().filter_map(|item| read(item, errors)).collect(),
        YamlData::Value(Scalar::Null) => Vec::new(),
        _ => {
            errors.add(node, format!("`{field}` must be a list"));
            Vec::new()
        }
    }
}

/// A number in [0, 100).
fn percent(node: &MarkedYaml, field: &str, errors: &mut Errors) -> Option<Decimal> {
    match number_text(node).and_then(|(t, _)| t.parse::<Decimal>().ok()) {
        Some(p) if p >= Decimal::ZERO && p < Decimal::ONE_HUNDRED => Some(p),
        _ => {
            errors.add(node, format!("`{field}` must be a percentage from 0 to below 100"));
            None
        }
    }
}

fn price(node: &MarkedYaml, field: &str, errors: &mut Errors) -> Option<Decimal> {
    match number_text(node).and_then(|(t, _)| t.parse::<Decimal>().ok()) {
        Some(p) if p > Decimal::ZERO && p < Decimal::from(100_000) => Some(p),
        _ => {
            errors.add(node, format!("`{field}` must be a price in USD above 0"));
            None
        }
    }
}

fn read_override(node: &MarkedYaml, errors: &mut Errors) -> Option<PriceOverride> {
    let YamlData::Mapping(fields) = &node.data else {
        errors.add(
            node,
            "each override is {instance_type: …, region: …, usd_per_hour: …} or with discount_percent",
        );
        return None;
    };
    let mut o = PriceOverride {
        instance_type: String::new(),
        region: None,
        usd_per_hour: None,
        discount_percent: None,
    };
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("instance_type") => match text(value) {
                Some(t) if crate::catalogue::Catalogue::built_in().get(&t).is_some() => o.instance_type = t,
                Some(t) => errors.add(value, format!("{t:?} is not in the GPU catalogue")),
                None => errors.add(value, "`instance_type` must be text such as g5.xlarge"),
            },
            Some("region") => match text(value) {
                Some(r) if !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
                    o.region = Some(r)
                }
                _ => errors.add(value, "`region` must be an AWS region such as us-west-2"),
            },
            Some("usd_per_hour") => o.usd_per_hour = price(value, "usd_per_hour", errors),
            Some("discount_percent") => o.discount_percent = percent(value, "discount_percent", errors),
            other => errors.add(
                key,
                format!(
                    "unknown field {:?}; expected instance_type, region, usd_per_hour, discount_percent",
                    other.unwrap_or("")
                ),
            ),
        }
    }
    if o.instance_type.is_empty() {
        errors.add(node, "this override has no valid `instance_type`");
        return None;
    }
    if o.usd_per_hour.is_none() && o.discount_percent.is_none() {
        errors.add(node, "an override needs `usd_per_hour`, `discount_percent` or both");
        return None;
    }
    Some(o)
}

fn read_token_price(node: &MarkedYaml, errors: &mut Errors) -> Option<TokenPrice> {
    let YamlData::Mapping(fields) = &node.data else {
        errors.add(node, "each per_token entry is {name: …, usd_per_million_tokens: …}");
        return None;
    };
    let (mut name, mut usd) = (None, None);
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("name") => match text(value).filter(|n| !n.trim().is_empty() && n.len() <= 200) {
                Some(n) => name = Some(n),
                None => errors.add(value, "`name` must be text of at most 200 characters"),
            },
            Some("usd_per_million_tokens") => usd = price(value, "usd_per_million_tokens", errors),
            other => errors.add(
                key,
                format!(
                    "unknown field {:?}; expected name, usd_per_million_tokens",
                    other.unwrap_or("")
                ),
            ),
        }
    }
    match (name, usd) {
        (Some(name), Some(usd_per_million_tokens)) => Some(TokenPrice {
            name,
            usd_per_million_tokens,
        }),
        _ => {
            errors.add(node, "a per_token entry needs `name` and `usd_per_million_tokens`");
            None
        }
    }
}

/// The section as YAML `read` accepts unchanged.
pub(super) fn render(p: &Pricing) -> String {
    let mut out = String::from("pricing:\n");
    let mut number = |key: &str, value: Option<Decimal>| {
        if let Some(v) = value {
            out.push_str(&format!("  {key}: {}\n", v.normalize()));
        }
    };
    number("spot_discount_percent", p.spot_discount_percent);
    number("savings_plan_discount_percent", p.savings_plan_discount_percent);
    number("negotiated_discount_percent", p.negotiated_discount_percent);
    out.push_str("  overrides:\n");
    for o in &p.overrides {
        let mut fields = vec![format!("instance_type: {}", quote(&o.instance_type))];
        fields.extend(o.region.as_ref().map(|r| format!("region: {}", quote(r))));
        fields.extend(o.usd_per_hour.map(|v| format!("usd_per_hour: {}", v.normalize())));
        fields.extend(
            o.discount_percent
                .map(|v| format!("discount_percent: {}", v.normalize())),
        );
        out.push_str(&format!("    - {{{}}}\n", fields.join(", ")));
    }
    out.push_str("  per_token:\n");
    for t in &p.per_token {
        out.push_str(&format!(
            "    - {{name: {}, usd_per_million_tokens: {}}}\n",
            quote(&t.name),
            t.usd_per_million_tokens.normalize()
        ));
    }
    out
}

/// `serving, model 7B bf16` for the import's list of changes.
pub(super) fn describe(facts: &ProjectFacts) -> String {
    match facts.model {
        Some(m) => format!(
            "{}, model {}B {}",
            facts.workload.key(),
            m.params_b.normalize(),
            m.precision.key()
        ),
        None => facts.workload.key().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::as_code::parse;

    #[test]
    fn the_documented_section_parses_and_round_trips() {
        let text = "pricing:\n  spot_discount_percent: 70\n  savings_plan_discount_percent: 30\n  negotiated_discount_percent: 5\n  overrides:\n    - {instance_type: g5.xlarge, region: eu-west-1, usd_per_hour: 1.2}\n    - {instance_type: p4d.24xlarge, discount_percent: 12}\n  per_token:\n    - {name: \"Llama 3.3 70B on Bedrock\", usd_per_million_tokens: 0.72}\n";
        let pricing = parse(text).expect("valid").pricing.expect("pricing");
        assert_eq!(pricing.spot_discount_percent, Some(Decimal::from(70)));
        assert_eq!(pricing.overrides.len(), 2);
        assert_eq!(pricing.per_token[0].usd_per_million_tokens, Decimal::new(72, 2));
        assert_eq!(parse(&render(&pricing)).expect("round trip").pricing, Some(pricing));
    }

    #[test]
    fn bad_prices_are_named_with_their_line() {
        let text = "pricing:\n  spot_discount_percent: 120\n  overrides:\n    - {instance_type: z9.huge, usd_per_hour: 1}\n    - {instance_type: g5.xlarge}\n  per_token:\n    - {name: x, usd_per_million_tokens: -1}\n";
        let errors = crate::as_code::error_lines(text);
        assert_eq!(
            errors,
            [
                "line 2: `spot_discount_percent` must be a percentage from 0 to below 100",
                "line 4: \"z9.huge\" is not in the GPU catalogue",
                "line 4: this override has no valid `instance_type`",
                "line 5: an override needs `usd_per_hour`, `discount_percent` or both",
                "line 7: `usd_per_million_tokens` must be a price in USD above 0",
                "line 7: a per_token entry needs `name` and `usd_per_million_tokens`",
            ]
        );
    }
}
