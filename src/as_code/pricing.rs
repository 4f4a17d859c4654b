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
//!   commitments:                         # quotes; the rest use the defaults
//!     - {instance_type: p3.2xlarge, offer: reserved, term_years: 1, payment: no_upfront, usd_per_hour: 1.82}
//!     - {instance_type: p4d.24xlarge, region: us-west-2, offer: savings_plan, term_years: 3, payment: all_upfront, discount_percent: 52}
//! ```

use rust_decimal::Decimal;
use saphyr::{MarkedYaml, Scalar, YamlData};

use super::number_text;
use super::{Errors, quote, text};
use crate::savings::model::ProjectFacts;
use crate::savings::model::commitments::{Offer, Payment};
use crate::savings::pricing::{CommitmentPrice, PriceOverride, Pricing, TokenPrice};

const KEYS: [&str; 6] = [
    "spot_discount_percent",
    "savings_plan_discount_percent",
    "negotiated_discount_percent",
    "overrides",
    "per_token",
    "commitments",
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
            Some("commitments") => pricing.commitments = entries(value, "commitments", errors, read_commitment_price),
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
            Some("instance_type") => o.instance_type = instance_type(value, errors).unwrap_or_default(),
            Some("region") => o.region = region(value, errors),
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

/// A GPU catalogue type, or an error naming the value.
fn instance_type(value: &MarkedYaml, errors: &mut Errors) -> Option<String> {
    match text(value) {
        Some(t) if crate::catalogue::Catalogue::built_in().get(&t).is_some() => Some(t),
        Some(t) => {
            errors.add(value, format!("{t:?} is not in the GPU catalogue"));
            None
        }
        None => {
            errors.add(value, "`instance_type` must be text such as g5.xlarge");
            None
        }
    }
}

fn region(value: &MarkedYaml, errors: &mut Errors) -> Option<String> {
    match text(value) {
        Some(r) if !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => Some(r),
        _ => {
            errors.add(value, "`region` must be an AWS region such as us-west-2");
            None
        }
    }
}

/// `{instance_type, region?, offer, term_years, payment, usd_per_hour | discount_percent}`.
fn read_commitment_price(node: &MarkedYaml, errors: &mut Errors) -> Option<CommitmentPrice> {
    let YamlData::Mapping(fields) = &node.data else {
        errors.add(
            node,
            "each commitments entry is {instance_type: …, offer: reserved, term_years: 1, payment: no_upfront, usd_per_hour: …}",
        );
        return None;
    };
    let (mut instance, mut place, mut offer, mut years, mut payment) = (None, None, None, None, None);
    let (mut usd_per_hour, mut discount_percent) = (None, None);
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("instance_type") => instance = instance_type(value, errors),
            Some("region") => place = region(value, errors),
            Some("offer") => match text(value).as_deref().and_then(Offer::parse) {
                Some(o) => offer = Some(o),
                None => errors.add(value, "`offer` must be savings_plan or reserved"),
            },
            Some("term_years") => match number_text(value).map(|(t, _)| t) {
                Some(t) if t == "1" || t == "3" => years = t.parse::<u8>().ok(),
                _ => errors.add(value, "`term_years` must be 1 or 3"),
            },
            Some("payment") => match text(value).as_deref().and_then(Payment::parse) {
                Some(p) => payment = Some(p),
                None => errors.add(value, "`payment` must be no_upfront, partial_upfront or all_upfront"),
            },
            Some("usd_per_hour") => usd_per_hour = price(value, "usd_per_hour", errors),
            Some("discount_percent") => discount_percent = percent(value, "discount_percent", errors),
            other => errors.add(
                key,
                format!(
                    "unknown field {:?}; expected instance_type, region, offer, term_years, payment, usd_per_hour, discount_percent",
                    other.unwrap_or("")
                ),
            ),
        }
    }
    let (Some(instance_type), Some(offer), Some(years), Some(payment)) = (instance, offer, years, payment) else {
        errors.add(
            node,
            "a commitments entry needs a valid `instance_type`, `offer`, `term_years` and `payment`",
        );
        return None;
    };
    if usd_per_hour.is_some() == discount_percent.is_some() {
        errors.add(
            node,
            "a commitments entry needs `usd_per_hour` or `discount_percent`, not both",
        );
        return None;
    }
    Some(CommitmentPrice {
        instance_type,
        region: place,
        offer,
        years,
        payment,
        usd_per_hour,
        discount_percent,
    })
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
    out.push_str("  commitments:\n");
    for c in &p.commitments {
        let mut fields = vec![format!("instance_type: {}", quote(&c.instance_type))];
        fields.extend(c.region.as_ref().map(|r| format!("region: {}", quote(r))));
        fields.push(format!("offer: {}", c.offer.key()));
        fields.push(format!("term_years: {}", c.years));
        fields.push(format!("payment: {}", c.payment.key()));
        fields.extend(c.usd_per_hour.map(|v| format!("usd_per_hour: {}", v.normalize())));
        fields.extend(
            c.discount_percent
                .map(|v| format!("discount_percent: {}", v.normalize())),
        );
        out.push_str(&format!("    - {{{}}}\n", fields.join(", ")));
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
    fn commitment_quotes_parse_round_trip_and_name_what_is_wrong() {
        let text = "pricing:\n  commitments:\n    - {instance_type: p3.2xlarge, offer: reserved, term_years: 1, payment: no_upfront, usd_per_hour: 1.82}\n    - {instance_type: p4d.24xlarge, region: us-west-2, offer: savings_plan, term_years: 3, payment: all_upfront, discount_percent: 52}\n";
        let pricing = parse(text).expect("valid").pricing.expect("pricing");
        assert_eq!(pricing.commitments.len(), 2);
        assert_eq!(pricing.commitments[0].offer, Offer::Reserved);
        assert_eq!(pricing.commitments[0].usd_per_hour, Some(Decimal::new(182, 2)));
        assert_eq!(pricing.commitments[1].years, 3);
        assert_eq!(pricing.commitments[1].payment, Payment::AllUpfront);
        assert_eq!(pricing.commitments[1].region.as_deref(), Some("us-west-2"));
        assert_eq!(parse(&render(&pricing)).expect("round trip").pricing, Some(pricing));

        let bad = "pricing:\n  commitments:\n    - {instance_type: p3.2xlarge, offer: lease, term_years: 2, payment: no_upfront, usd_per_hour: 1}\n    - {instance_type: p3.2xlarge, offer: reserved, term_years: 1, payment: all_upfront, usd_per_hour: 1, discount_percent: 5}\n";
        let errors: Vec<String> = parse(bad).expect_err("invalid").iter().map(|e| e.to_string()).collect();
        let errors = errors.join("\n");
        assert!(errors.contains("`offer` must be savings_plan or reserved"), "{errors}");
        assert!(errors.contains("`term_years` must be 1 or 3"), "{errors}");
        assert!(errors.contains("not both"), "{errors}");
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
