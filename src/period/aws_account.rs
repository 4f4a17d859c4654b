//! `?account=`: one linked AWS account, as a filter and as a budget's scope.

use serde::{Deserialize, Serialize};

/// An AWS account ID as AWS writes it: exactly 12 ASCII digits, a leading zero kept. Only
/// digits, so it can stand in SQL as a literal ([`AwsAccountId::sql_literal`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AwsAccountId(String);

impl AwsAccountId {
    pub fn parse(text: &str) -> Result<AwsAccountId, String> {
        let id = text.trim();
        if id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit()) {
            Ok(AwsAccountId(id.to_string()))
        } else {
            Err(format!(
                "{id:?} is not an AWS account ID (12 digits, e.g. 111122223333)"
            ))
        }
    }

    /// `?account=`: none when absent or empty.
    pub fn parse_filter(value: Option<&str>) -> Result<Option<AwsAccountId>, String> {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(id) => AwsAccountId::parse(id).map(Some),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The ID as a SQL string literal. Safe to splice into a statement: the constructor
    /// admits 12 ASCII digits and nothing else.
    pub fn sql_literal(&self) -> String {
        format!("'{}'", self.0)
    }

    /// ` and {column} = 'ID'` narrowing a statement's rows to `account`; nothing for every
    /// account.
    pub fn and_in(account: Option<&AwsAccountId>, column: &str) -> String {
        account.map_or(String::new(), |id| format!(" and {column} = {}", id.sql_literal()))
    }
}

impl TryFrom<String> for AwsAccountId {
    type Error = String;

    fn try_from(text: String) -> Result<AwsAccountId, String> {
        AwsAccountId::parse(&text)
    }
}

impl From<AwsAccountId> for String {
    fn from(id: AwsAccountId) -> String {
        id.0
    }
}

impl std::fmt::Display for AwsAccountId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_twelve_digits_are_an_account_and_nothing_else_reaches_sql() {
        assert_eq!(
            AwsAccountId::parse(" 012345678901 ").map(|a| a.sql_literal()),
            Ok("'012345678901'".to_string())
        );
        for bad in [
            "12345678901",
            "1234567890123",
            "11112222333x",
            "'; drop table x; --",
            "１２３４５６７８９０１２",
        ] {
            assert!(AwsAccountId::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(AwsAccountId::parse_filter(Some("")), Ok(None));
        assert!(serde_json::from_str::<AwsAccountId>("\"abc\"").is_err());
    }
}
