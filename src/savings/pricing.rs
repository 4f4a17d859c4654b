//! Prices as this organisation pays them: the catalogue's us-east-1 list prices, with the
//! `pricing:` section of the config file on top (per-region prices, negotiated discounts,
//! the default spot and Savings Plan discounts, quoted commitment prices, and managed
//! per-token prices).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;

use crate::catalogue::{self, Catalogue, InstanceType};
use crate::savings::model::commitments::{Offer, Payment};

/// The `pricing:` section, as stored (JSON) and as written back on export.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Pricing {
    /// Used where the organisation's own data shows no spot price for a type.
    pub spot_discount_percent: Option<Decimal>,
    /// 1-year no-upfront Savings Plan discount against on-demand.
    pub savings_plan_discount_percent: Option<Decimal>,
    /// An enterprise discount applied to every on-demand list price.
    pub negotiated_discount_percent: Option<Decimal>,
    #[serde(default)]
    pub overrides: Vec<PriceOverride>,
    #[serde(default)]
    pub per_token: Vec<TokenPrice>,
    /// Quoted commitment prices per instance type (and region).
    #[serde(default)]
    pub commitments: Vec<CommitmentPrice>,
}

/// A quoted commitment price for one instance type, in one region or everywhere: the
/// effective $/h (upfront spread over the term plus the hourly bill), or a discount off
/// on-demand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitmentPrice {
    pub instance_type: String,
    /// `None`: every region.
    pub region: Option<String>,
    pub offer: Offer,
    pub years: u8,
    pub payment: Payment,
    pub usd_per_hour: Option<Decimal>,
    pub discount_percent: Option<Decimal>,
}

/// A price for one instance type, in one region or everywhere: an hourly price that
/// replaces the list price, or a discount off it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceOverride {
    pub instance_type: String,
    /// `None`: every region.
    pub region: Option<String>,
    pub usd_per_hour: Option<Decimal>,
    pub discount_percent: Option<Decimal>,
}

/// A managed model's price per million tokens, for the what-if comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenPrice {
    pub name: String,
    pub usd_per_million_tokens: Decimal,
}

impl Pricing {
    pub fn spot_discount(&self) -> Decimal {
        self.spot_discount_percent
            .unwrap_or(Decimal::from(catalogue::DEFAULT_SPOT_DISCOUNT_PERCENT))
            / Decimal::ONE_HUNDRED
    }

    pub fn savings_plan_discount(&self) -> Decimal {
        self.savings_plan_discount_percent
            .unwrap_or(Decimal::from(catalogue::DEFAULT_SAVINGS_PLAN_DISCOUNT_PERCENT))
            / Decimal::ONE_HUNDRED
    }

    /// What one hour of `instance_type` costs on demand in `region` (SageMaker's `ml.`
    /// price when `sagemaker`), or `None` when the catalogue does not know the type.
    pub fn hourly(&self, instance_type: &str, region: &str, sagemaker: bool) -> Option<Decimal> {
        let listed = Catalogue::built_in().get(instance_type)?;
        Some(self.price_of(listed, region, sagemaker))
    }

    /// An override's `usd_per_hour` is the EC2 price you pay there, final (no negotiated
    /// discount on top) and not a SageMaker price; its `discount_percent` comes off the list
    /// price (EC2 or SageMaker) instead of the negotiated one.
    pub fn price_of(&self, listed: &InstanceType, region: &str, sagemaker: bool) -> Decimal {
        let matching = |o: &&PriceOverride| o.instance_type == listed.name;
        // A regional override wins over one for every region.
        let chosen = self
            .overrides
            .iter()
            .filter(matching)
            .find(|o| o.region.as_deref() == Some(region))
            .or_else(|| self.overrides.iter().filter(matching).find(|o| o.region.is_none()));
        let percent_off =
            |price: Decimal, percent: Decimal| price * (Decimal::ONE_HUNDRED - percent) / Decimal::ONE_HUNDRED;
        match chosen {
            Some(PriceOverride {
                usd_per_hour: Some(price),
                discount_percent,
                ..
            }) if !sagemaker => percent_off(*price, discount_percent.unwrap_or(Decimal::ZERO)),
            Some(PriceOverride {
                discount_percent: Some(percent),
                ..
            }) => percent_off(listed.list_price(sagemaker), *percent),
            _ => percent_off(
                listed.list_price(sagemaker),
                self.negotiated_discount_percent.unwrap_or(Decimal::ZERO),
            ),
        }
    }

    /// The per-token prices, or the built-in example when the file sets none.
    pub fn token_prices(&self) -> Vec<TokenPrice> {
        if self.per_token.is_empty() {
            vec![TokenPrice {
                name: "managed model (example price; set pricing.per_token)".into(),
                usd_per_million_tokens: Decimal::from(3),
            }]
        } else {
            self.per_token.clone()
        }
    }
}

/// The stored pricing, or the defaults when none was imported.
pub async fn load(conn: &mut PgConnection) -> Result<Pricing, sqlx::Error> {
    let stored: Option<sqlx::types::Json<Pricing>> = sqlx::query_scalar("select document from pricing_settings")
        .fetch_optional(conn)
        .await?;
    Ok(stored.map(|json| json.0).unwrap_or_default())
}

/// Replaces the stored pricing (`None` removes it). Returns whether anything changed.
pub async fn save(conn: &mut PgConnection, pricing: Option<&Pricing>) -> Result<bool, sqlx::Error> {
    let current = load(&mut *conn).await?;
    let exists: bool = sqlx::query_scalar("select exists (select 1 from pricing_settings)")
        .fetch_one(&mut *conn)
        .await?;
    match pricing {
        Some(p) if exists && *p == current => Ok(false),
        Some(p) => {
            sqlx::query(
                "insert into pricing_settings (id, document) values (true, $1)
                 on conflict (id) do update set document = excluded.document, updated_at = now()",
            )
            .bind(sqlx::types::Json(p))
            .execute(conn)
            .await?;
            Ok(true)
        }
        None if exists => {
            sqlx::query("delete from pricing_settings").execute(conn).await?;
            Ok(true)
        }
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    #[test]
    fn list_prices_apply_until_overridden_per_region_or_discounted() {
        let mut pricing = Pricing::default();
        let list = Catalogue::built_in().get("g5.xlarge").map(|t| t.on_demand_usd_hour);
        assert_eq!(pricing.hourly("g5.xlarge", "us-east-1", false), list);
        pricing.negotiated_discount_percent = Some(d("10"));
        assert_eq!(
            pricing.hourly("g5.xlarge", "us-east-1", false),
            list.map(|p| p * d("0.9"))
        );
        pricing.overrides = vec![
            PriceOverride {
                instance_type: "g5.xlarge".into(),
                region: Some("eu-west-1".into()),
                usd_per_hour: Some(d("1.20")),
                discount_percent: None,
            },
            PriceOverride {
                instance_type: "g5.xlarge".into(),
                region: None,
                usd_per_hour: None,
                discount_percent: Some(d("20")),
            },
        ];
        // The regional price is what is paid there: no negotiated discount on top, and not
        // a SageMaker price (that one still gets the negotiated discount).
        assert_eq!(pricing.hourly("g5.xlarge", "eu-west-1", false), Some(d("1.20")));
        let sagemaker = Catalogue::built_in()
            .get("g5.xlarge")
            .and_then(|t| t.sagemaker_usd_hour);
        assert_eq!(
            pricing.hourly("g5.xlarge", "eu-west-1", true),
            sagemaker.map(|p| p * d("0.9"))
        );
        // Elsewhere the every-region override's own discount replaces the negotiated one.
        assert_eq!(
            pricing.hourly("g5.xlarge", "us-west-2", false),
            list.map(|p| p * d("0.8"))
        );
        assert_eq!(pricing.hourly("m5.large", "us-east-1", false), None);
    }

    #[test]
    fn defaults_are_the_catalogues() {
        let pricing = Pricing::default();
        assert_eq!(pricing.spot_discount(), d("0.65"));
        assert_eq!(pricing.savings_plan_discount(), d("0.28"));
        assert_eq!(pricing.token_prices().len(), 1);
    }
}
