//! Linked accounts on the pages: where a Team's or Project's spend is, by account, and what
//! a page reads with `?account=`.

use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::allocation::rollups::FIGURES;
use crate::allocation::spans::Cover;
use crate::dashboard::model::{AwsAccountLine, Scope};
use crate::period::{AwsAccountId, Basis, DateRange};

/// Each account with the scope's spend in `range`, largest first: a team's from the
/// allocation (every step, summed per account in its page rollup), a project's from its
/// daily totals. Spend stored before accounts
/// were has the account ''.
pub async fn by_account(
    pool: &PgPool,
    scope: &Scope,
    range: DateRange,
    basis: Basis,
) -> Result<Vec<AwsAccountLine>, sqlx::Error> {
    let spend = basis.spend_sql("c");
    let sql = match scope {
        Scope::Team(_) => format!(
            "with spend as (select c.account_id, sum({spend}) as spend from team_account_daily_costs c
                            join teams t on t.id = c.team_id
                            where t.name = $3 and c.day >= $1 and c.day < $2 group by 1),
                  mapped as (select m.account_id from team_accounts m join teams t on t.id = m.team_id
                             where t.name = $3)
             select account_id, coalesce(n.name, '') as name, mapped.account_id is not null as mapped,
                    coalesce(spend.spend, 0) as spend
             from spend full join mapped using (account_id)
             left join aws_accounts n using (account_id)
             order by 4 desc, 1"
        ),
        Scope::Project(_) => format!(
            "select c.account_id, coalesce(max(n.name), '') as name, false as mapped, sum({spend}) as spend
             from daily_project_costs c left join aws_accounts n using (account_id)
             where c.project = $3 and c.day >= $1 and c.day < $2
             group by 1 order by 4 desc, 1"
        ),
    };
    sqlx::query_as::<_, (String, String, bool, Decimal)>(&sql)
        .bind(range.from)
        .bind(range.to)
        .bind(scope.name())
        .fetch_all(pool)
        .await
        .map(|rows| {
            rows.into_iter()
                .map(|(id, name, mapped, spend)| AwsAccountLine {
                    id,
                    name,
                    mapped,
                    spend,
                })
                .collect()
        })
}

/// What a page reads its per-team days from, as `alias`: the page rollup, or with
/// `?account=` the rollup by account, that account's rows.
pub fn team_days(account: Option<&AwsAccountId>, alias: &str) -> String {
    match account {
        None => format!("team_daily_costs {alias}"),
        Some(id) => format!(
            "(select day, team_id, source, {figures} from team_account_daily_costs where account_id = {}) {alias}",
            id.sql_literal(),
            figures = FIGURES.join(", ")
        ),
    }
}

/// What a page reads a team's projects from, as `alias` with `span` and `day` columns: the
/// page rollup with its to-date rows, or with `?account=` the allocation's single days in
/// that account. Join it with [`cover`]'s blocks.
pub fn project_spans(account: Option<&AwsAccountId>, alias: &str) -> String {
    match account {
        None => format!("allocated_project_spans {alias}"),
        Some(id) => format!(
            "(select 'day'::text as span, day, team_id, source, rule_id, project, {figures}
              from allocated_daily_costs where account_id = {}) {alias}",
            id.sql_literal(),
            figures = FIGURES.join(", ")
        ),
    }
}

/// The projects of the organisation with their owners, as `r` (`dimension` 'project', `key`
/// the project), like [`project_spans`].
pub fn owned_projects(account: Option<&AwsAccountId>) -> String {
    match account {
        None => "owned_spend_spans r".to_string(),
        Some(id) => format!(
            "(select 'project'::text as dimension, 'day'::text as span, c.day, p.team_id, c.project as key, {figures}
              from daily_project_costs c left join projects p on p.name = c.project
              where c.account_id = {}) r",
            id.sql_literal(),
            figures = FIGURES.join(", ")
        ),
    }
}

/// The blocks that sum each of `ranges` in the tables above: to-date rows in the page
/// rollups, every single day in an account's allocation.
pub fn cover(ranges: &[DateRange], account: Option<&AwsAccountId>) -> Cover {
    match account {
        None => Cover::of(ranges),
        Some(_) => Cover::days_of(ranges),
    }
}
