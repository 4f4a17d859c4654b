//! The export's rows a page at a time, for `GET /api/v1/costs`: the same query as the CSV
//! (same grain, same totals), resumed after the last row a client saw. The cursor is that
//! row's date and keys, so a page never repeats or skips a row while the facts stand still.
//! A page reads the facts from the cursor's day on, not from the window's start: a late page
//! costs no more than an early one.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::export::{ExportError, Key, Selection, select_sql};
use crate::period::DateRange;

/// One row: the day (or the month's first day), the keys' values in order, the cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagedRow {
    pub day: NaiveDate,
    pub keys: Vec<String>,
    pub cost: Decimal,
}

/// Where the next page starts: after the row with this date and these keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub day: NaiveDate,
    pub keys: Vec<String>,
}

impl Cursor {
    /// Opaque to clients: base64url of the JSON `[day, key…]`.
    pub fn encode(&self) -> String {
        let mut parts = vec![self.day.to_string()];
        parts.extend(self.keys.iter().cloned());
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&parts).unwrap_or_default())
    }

    /// A cursor this export gave for the same keys; anything else is refused.
    pub fn decode(text: &str, keys: usize) -> Result<Cursor, String> {
        let refused = || "cursor: not one this API gave for this group_by; start again without it".to_string();
        let bytes = URL_SAFE_NO_PAD.decode(text.trim()).map_err(|_| refused())?;
        let parts: Vec<String> = serde_json::from_slice(&bytes).map_err(|_| refused())?;
        let (day, rest) = parts.split_first().ok_or_else(refused)?;
        if rest.len() != keys {
            return Err(refused());
        }
        Ok(Cursor {
            day: day.parse().map_err(|_| refused())?,
            keys: rest.to_vec(),
        })
    }
}

/// At most `limit` rows after `after`, in the export's order, and the cursor of the next
/// page when more rows follow.
pub async fn page(
    pool: &PgPool,
    range: DateRange,
    keys: &[Key],
    selection: &Selection,
    after: Option<&Cursor>,
    limit: u32,
) -> Result<(Vec<PagedRow>, Option<Cursor>), ExportError> {
    use sqlx::Row;
    let inner = select_sql(keys, selection).map_err(ExportError::Invalid)?;
    let names: Vec<String> = std::iter::once("day".to_string())
        .chain((0..keys.len()).map(|i| format!("k{i}")))
        .collect();
    // Row comparison orders exactly as the inner `order by` does (same columns, collation).
    // There is always at least one key (`export::parse_keys`).
    let resume = after.map_or(String::new(), |_| {
        let params: Vec<String> = (1..=keys.len()).map(|i| format!("${}", i + 3)).collect();
        format!("where ({}) > ($3::date, {})", names.join(", "), params.join(", "))
    });
    let sql = format!(
        "select * from ({inner}) r {resume} order by {order} limit {fetch}",
        order = names.join(", "),
        fetch = u64::from(limit) + 1,
    );
    // Rows are sorted by day first, so nothing before the cursor's day can follow it; a monthly
    // row's day is its month's first, whose facts all lie on or after it.
    let from = after.map_or(range.from, |cursor| range.from.max(cursor.day));
    let mut query = sqlx::query(&sql).bind(from).bind(range.to);
    if let Some(cursor) = after {
        query = query.bind(cursor.day);
        for key in &cursor.keys {
            query = query.bind(key);
        }
    }
    let mut rows = Vec::new();
    for row in query.fetch_all(pool).await? {
        let mut values = Vec::with_capacity(keys.len());
        for i in 0..keys.len() {
            values.push(row.try_get::<String, _>(i + 1)?);
        }
        let cost: String = row.try_get(keys.len() + 1)?;
        rows.push(PagedRow {
            day: row.try_get(0)?,
            keys: values,
            cost: cost
                .parse()
                .map_err(|_| ExportError::Invalid(format!("stored cost {cost:?} is not a decimal")))?,
        });
    }
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = more.then(|| rows.last()).flatten().map(|last| Cursor {
        day: last.day,
        keys: last.keys.clone(),
    });
    Ok((rows, next))
}

#[cfg(test)]
mod tests {
    use super::Cursor;

    #[test]
    fn a_cursor_comes_back_as_it_went_and_a_foreign_one_is_refused() {
        let cursor = Cursor {
            day: "2026-11-03".parse().expect("day"),
            keys: vec!["vision".into(), "a,b\"c".into()],
        };
        assert_eq!(Cursor::decode(&cursor.encode(), 2), Ok(cursor.clone()));
        assert!(Cursor::decode(&cursor.encode(), 1).is_err(), "another group_by");
        assert!(Cursor::decode("not base64!", 2).is_err());
        assert!(Cursor::decode("", 2).is_err());
    }
}
