//! Cost Explorer's own account views: each day's spend by `LINKED_ACCOUNT`, and by
//! `LINKED_ACCOUNT` × `RECORD_TYPE`, as AWS answers them unfiltered. AWS rounds every group on
//! its own, so summing the project grains over an account differs from AWS's account figure
//! in the last digits; exports by account read these tables and equal AWS's to the last one.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::period::DateRange;

/// One of the two account views, each its own Cost Explorer query and table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountView {
    /// `GroupBy` `LINKED_ACCOUNT`.
    Account,
    /// `GroupBy` `LINKED_ACCOUNT`, `RECORD_TYPE`: which accounts have credits, refunds or tax.
    AccountRecordType,
}

impl AccountView {
    pub const ALL: [AccountView; 2] = [AccountView::Account, AccountView::AccountRecordType];

    pub fn table(self) -> &'static str {
        match self {
            AccountView::Account => "costs_by_account",
            AccountView::AccountRecordType => "costs_by_account_record_type",
        }
    }

    /// The Cost Explorer dimensions grouped by, in order.
    pub fn dimensions(self) -> &'static [&'static str] {
        match self {
            AccountView::Account => &["LINKED_ACCOUNT"],
            AccountView::AccountRecordType => &["LINKED_ACCOUNT", "RECORD_TYPE"],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AccountView::Account => "account",
            AccountView::AccountRecordType => "account × record type",
        }
    }
}

/// One group of an account view's answer: `record_type` is `None` in the account view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    pub day: NaiveDate,
    pub account: String,
    pub record_type: Option<String>,
    pub unblended: Decimal,
    pub amortized: Decimal,
    pub usage_quantity: Decimal,
    pub estimated: bool,
}

/// Replaces `view`'s days in `range` with `rows`, inside the caller's transaction (the
/// ingestion's, which writes the project grains too). A view holds a few rows per account
/// and day, so one statement carries them.
pub async fn replace_window(
    conn: &mut PgConnection,
    range: DateRange,
    view: AccountView,
    rows: &[AccountRow],
) -> Result<u64, sqlx::Error> {
    sqlx::query(&format!("delete from {} where day >= $1 and day < $2", view.table()))
        .bind(range.from)
        .bind(range.to)
        .execute(&mut *conn)
        .await?;
    let column = |f: fn(&AccountRow) -> Decimal| rows.iter().map(f).collect::<Vec<_>>();
    let (record_type, record_type_value) = match view {
        AccountView::Account => ("", ""),
        AccountView::AccountRecordType => (", record_type", ", unnest($7::text[])"),
    };
    let sql = format!(
        "insert into {table} (day, account_id{record_type}, unblended, amortized, usage_quantity, estimated)
         select unnest($1::date[]), unnest($2::text[]){record_type_value}, unnest($3::numeric[]),
                unnest($4::numeric[]), unnest($5::numeric[]), unnest($6::bool[])",
        table = view.table()
    );
    let mut insert = sqlx::query(&sql)
        .bind(rows.iter().map(|r| r.day).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.account.clone()).collect::<Vec<_>>())
        .bind(column(|r| r.unblended))
        .bind(column(|r| r.amortized))
        .bind(column(|r| r.usage_quantity))
        .bind(rows.iter().map(|r| r.estimated).collect::<Vec<_>>());
    if view == AccountView::AccountRecordType {
        insert = insert.bind(
            rows.iter()
                .map(|r| r.record_type.clone().unwrap_or_default())
                .collect::<Vec<_>>(),
        );
    }
    Ok(insert.execute(&mut *conn).await?.rows_affected())
}

/// Both views of `range` summed from the record-type grain: for facts that come from no
/// Cost Explorer answer of their own (the demo's, a test's batch), whose rows are exact.
pub async fn derive_window(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    for view in AccountView::ALL {
        let record_type = match view {
            AccountView::Account => "",
            AccountView::AccountRecordType => ", record_type",
        };
        for sql in [
            format!("delete from {} where day >= $1 and day < $2", view.table()),
            format!(
                "insert into {table} (day, account_id{record_type}, unblended, amortized, usage_quantity, estimated)
                 select day, account_id{record_type}, sum(unblended), sum(amortized), sum(usage_quantity),
                        bool_or(estimated)
                 from costs_by_record_type where day >= $1 and day < $2
                 group by day, account_id{record_type}",
                table = view.table()
            ),
        ] {
            sqlx::query(&sql)
                .bind(range.from)
                .bind(range.to)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}
