//! Cost Explorer's own account views: each day's spend by `LINKED_ACCOUNT`, and by
//! `LINKED_ACCOUNT` × `RECORD_TYPE`, as AWS answers them unfiltered. AWS rounds every group on
//! its own, so summing the project grains over an account differs from AWS's account figure
//! in the last digits; exports by account read these tables and equal AWS's daily groups to
//! the last digit.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::period::DateRange;

/// One of the two account views, each its own Cost Explorer query and table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsAccountView {
    /// `GroupBy` `LINKED_ACCOUNT`.
    Account,
    /// `GroupBy` `LINKED_ACCOUNT`, `RECORD_TYPE`: which accounts have credits, refunds or tax.
    AccountRecordType,
}

impl AwsAccountView {
    pub const ALL: [AwsAccountView; 2] = [AwsAccountView::Account, AwsAccountView::AccountRecordType];

    pub fn table(self) -> &'static str {
        match self {
            AwsAccountView::Account => "costs_by_account",
            AwsAccountView::AccountRecordType => "costs_by_account_record_type",
        }
    }

    fn staging_table(self) -> &'static str {
        match self {
            AwsAccountView::Account => "staged_costs_by_account",
            AwsAccountView::AccountRecordType => "staged_costs_by_account_record_type",
        }
    }

    /// The Cost Explorer dimensions grouped by, in order.
    pub fn dimensions(self) -> &'static [&'static str] {
        match self {
            AwsAccountView::Account => &["LINKED_ACCOUNT"],
            AwsAccountView::AccountRecordType => &["LINKED_ACCOUNT", "RECORD_TYPE"],
        }
    }

    /// The table's key columns after the day.
    fn key_columns(self) -> &'static str {
        match self {
            AwsAccountView::Account => "account_id",
            AwsAccountView::AccountRecordType => "account_id, record_type",
        }
    }
}

/// One group of an account view's answer: `record_type` is `None` in the account view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsAccountRow {
    pub day: NaiveDate,
    pub account: String,
    pub record_type: Option<String>,
    pub unblended: Decimal,
    pub amortized: Decimal,
    pub usage_quantity: Decimal,
    pub estimated: bool,
}

/// A run's account views gathered page by page in temporary tables on its connection, as
/// the grains are (`costs::store::Staging`): memory does not grow with the window, and only
/// [`ViewStaging::replace_window`], inside the run's transaction, touches the tables.
pub struct ViewStaging(());

impl ViewStaging {
    pub async fn begin(conn: &mut PgConnection) -> Result<ViewStaging, sqlx::Error> {
        for view in AwsAccountView::ALL {
            for sql in [
                format!(
                    "create temp table if not exists {} (like {}) on commit preserve rows",
                    view.staging_table(),
                    view.table()
                ),
                format!("truncate {}", view.staging_table()),
            ] {
                sqlx::query(&sql).execute(&mut *conn).await?;
            }
        }
        Ok(ViewStaging(()))
    }

    /// Appends one page's rows.
    pub async fn append(
        &self,
        conn: &mut PgConnection,
        view: AwsAccountView,
        rows: &[AwsAccountRow],
    ) -> Result<(), sqlx::Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let (record_type, record_type_value) = match view {
            AwsAccountView::Account => ("", ""),
            AwsAccountView::AccountRecordType => (", record_type", ", unnest($7::text[])"),
        };
        let sql = format!(
            "insert into {table} (day, account_id{record_type}, unblended, amortized, usage_quantity, estimated)
             select unnest($1::date[]), unnest($2::text[]){record_type_value}, unnest($3::numeric[]),
                    unnest($4::numeric[]), unnest($5::numeric[]), unnest($6::bool[])",
            table = view.staging_table()
        );
        let column = |f: fn(&AwsAccountRow) -> Decimal| rows.iter().map(f).collect::<Vec<_>>();
        let mut insert = sqlx::query(&sql)
            .bind(rows.iter().map(|r| r.day).collect::<Vec<_>>())
            .bind(rows.iter().map(|r| r.account.as_str()).collect::<Vec<_>>())
            .bind(column(|r| r.unblended))
            .bind(column(|r| r.amortized))
            .bind(column(|r| r.usage_quantity))
            .bind(rows.iter().map(|r| r.estimated).collect::<Vec<_>>());
        if view == AwsAccountView::AccountRecordType {
            insert = insert.bind(
                rows.iter()
                    .map(|r| r.record_type.as_deref().unwrap_or_default())
                    .collect::<Vec<_>>(),
            );
        }
        insert.execute(&mut *conn).await?;
        Ok(())
    }

    /// The first group a view answered twice for one day, named, if any.
    pub async fn duplicate(&self, conn: &mut PgConnection) -> Result<Option<String>, sqlx::Error> {
        for view in AwsAccountView::ALL {
            let twice: Option<(NaiveDate, String)> = sqlx::query_as(&format!(
                "select day, concat_ws(' / ', {keys}) from {table} group by day, {keys}
                 having count(*) > 1 order by 1, 2 limit 1",
                keys = view.key_columns(),
                table = view.staging_table()
            ))
            .fetch_optional(&mut *conn)
            .await?;
            if let Some((day, group)) = twice {
                return Ok(Some(format!(
                    "Cost Explorer returned the group {group:?} twice for {day} in its account view; nothing was stored"
                )));
            }
        }
        Ok(None)
    }

    /// Replaces both views' days in `range` with the staged rows, inside the caller's
    /// transaction.
    pub async fn replace_window(&self, conn: &mut PgConnection, range: DateRange) -> Result<u64, sqlx::Error> {
        let mut written = 0;
        for view in AwsAccountView::ALL {
            delete_window(conn, view, range).await?;
            let columns = format!(
                "day, {}, unblended, amortized, usage_quantity, estimated",
                view.key_columns()
            );
            written += sqlx::query(&format!(
                "insert into {} ({columns}) select {columns} from {}",
                view.table(),
                view.staging_table()
            ))
            .execute(&mut *conn)
            .await?
            .rows_affected();
        }
        Ok(written)
    }

    /// Frees the staged rows (the tables stay for the connection's next run).
    pub async fn clear(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        for view in AwsAccountView::ALL {
            sqlx::query(&format!("truncate {}", view.staging_table()))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

async fn delete_window(conn: &mut PgConnection, view: AwsAccountView, range: DateRange) -> Result<(), sqlx::Error> {
    sqlx::query(&format!("delete from {} where day >= $1 and day < $2", view.table()))
        .bind(range.from)
        .bind(range.to)
        .execute(conn)
        .await
        .map(drop)
}

/// Both views of `range` summed from the project grains: for facts that come from no Cost
/// Explorer answer of their own (the demo's, a test's batch), whose rows are exact. The
/// account view from the service grain (every batch has it), the record types from theirs.
pub async fn derive_window(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    for (view, source) in [
        (AwsAccountView::Account, "costs_by_service"),
        (AwsAccountView::AccountRecordType, "costs_by_record_type"),
    ] {
        delete_window(conn, view, range).await?;
        sqlx::query(&format!(
            "insert into {table} (day, {keys}, unblended, amortized, usage_quantity, estimated)
             select day, {keys}, sum(unblended), sum(amortized), sum(usage_quantity), bool_or(estimated)
             from {source} where day >= $1 and day < $2
             group by day, {keys}",
            table = view.table(),
            keys = view.key_columns(),
        ))
        .bind(range.from)
        .bind(range.to)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
