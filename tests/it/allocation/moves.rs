//! A mapping change rewrites the allocation of only the days it moves spend on, and leaves
//! it exactly as a rewrite of every day would.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{self, day};
use burnrate::audit_log::Actor;
use chrono::NaiveDate;
use sqlx::PgPool;

type Row = (
    String,
    i64,
    String,
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// Every allocated row, exactly.
async fn allocation(pool: &PgPool) -> Vec<Row> {
    sqlx::query_as(
        "select day::text, coalesce(team_id, 0), source, coalesce(rule_id, 0), project, user_name,
                unblended::text, amortized::text, credit_unblended::text, refund_unblended::text, tax_unblended::text
         from allocated_daily_costs order by 1, 2, 3, 4, 5, 6",
    )
    .fetch_all(pool)
    .await
    .expect("allocation")
}

/// Each day's row versions: a rewritten day's rows are new ones.
async fn versions(pool: &PgPool) -> BTreeMap<NaiveDate, Vec<String>> {
    let rows: Vec<(NaiveDate, String)> =
        sqlx::query_as("select day, xmin::text from allocated_daily_costs order by 1, 2")
            .fetch_all(pool)
            .await
            .expect("versions");
    let mut days: BTreeMap<NaiveDate, Vec<String>> = BTreeMap::new();
    for (day, xmin) in rows {
        days.entry(day).or_default().push(xmin);
    }
    days
}

fn rewritten(
    before: &BTreeMap<NaiveDate, Vec<String>>,
    after: &BTreeMap<NaiveDate, Vec<String>>,
) -> BTreeSet<NaiveDate> {
    before
        .keys()
        .chain(after.keys())
        .filter(|d| before.get(d) != after.get(d))
        .copied()
        .collect()
}

async fn days_of(pool: &PgPool, sql: &str, value: &str) -> BTreeSet<NaiveDate> {
    sqlx::query_scalar::<_, NaiveDate>(sql)
        .bind(value)
        .fetch_all(pool)
        .await
        .expect("days")
        .into_iter()
        .collect()
}

#[sqlx::test]
async fn a_mapping_change_rewrites_only_the_days_it_moves_spend_on_and_matches_a_full_rewrite(pool: PgPool) {
    common::load_demo(&pool, day(2026, 11, 20)).await;
    let all_days: i64 = sqlx::query_scalar("select count(distinct day) from allocated_daily_costs")
        .fetch_one(&pool)
        .await
        .expect("days");
    // The tagged project with the fewest days of spend moves to a team that does not own it.
    let (project, team): (String, String) = sqlx::query_as(
        "select r.project, (select name from teams where id is distinct from p.team_id order by name limit 1)
         from daily_project_costs r left join projects p on p.name = r.project
         where r.project <> '' group by r.project, p.team_id order by count(*), r.project limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("a project");
    let before = versions(&pool).await;
    burnrate::teams::edit::assign(&pool, &Actor::system("test"), "project", &project, &team)
        .await
        .expect("moved");
    let spent = days_of(
        &pool,
        "select distinct day from daily_project_costs where project = $1",
        &project,
    )
    .await;
    assert!(
        (spent.len() as i64) < all_days,
        "{project} has spend on {} of {all_days} days",
        spent.len()
    );
    assert_eq!(rewritten(&before, &versions(&pool).await), spent, "{project} to {team}");

    // A user tag moved to another team: the days that user has spend on.
    let (user, team): (String, String) = sqlx::query_as(
        "select c.user_name, (select name from teams where id is distinct from u.team_id order by name limit 1)
         from costs_by_user c left join tagged_users u on u.name = c.user_name
         where c.user_name <> '' group by 1, u.team_id order by count(distinct c.day), 1 limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("a user");
    let before = versions(&pool).await;
    burnrate::teams::edit::assign(&pool, &Actor::system("test"), "user", &user, &team)
        .await
        .expect("mapped");
    let spent = days_of(
        &pool,
        "select distinct day from costs_by_user where user_name = $1",
        &user,
    )
    .await;
    assert_eq!(rewritten(&before, &versions(&pool).await), spent, "{user} to {team}");

    // An empty team imported while the demo's rule splits among every team in proportion
    // to their own spend: it has none, so it takes no share and no day is rewritten.
    let before = versions(&pool).await;
    let mut file = burnrate::as_code::parse(&burnrate::as_code::export(&pool).await.expect("export")).expect("parses");
    file.teams
        .as_mut()
        .expect("teams")
        .insert("empty-team".into(), Default::default());
    let applied = burnrate::as_code::apply_reporting(&pool, &Actor::system("test"), &file, false)
        .await
        .expect("imported");
    assert_eq!(applied.changes, ["create team \"empty-team\""]);
    assert_eq!(applied.rewrite.map(|r| r.0), Some(0), "no day rewritten");
    assert!(rewritten(&before, &versions(&pool).await).is_empty());
    // Deleting it again moves nothing either.
    burnrate::teams::edit::delete(&pool, &Actor::system("test"), "empty-team")
        .await
        .expect("deleted");
    assert!(rewritten(&before, &versions(&pool).await).is_empty());

    // One import moves a project from its team to no team and changes a rule: every day's
    // allocation, and the owned-spend rows of the project's old owner and of no team.
    let (owner, project): (String, String) = sqlx::query_as(
        "select t.name, p.name from projects p join teams t on t.id = p.team_id
         where exists (select 1 from daily_project_costs r where r.project = p.name) order by 2 limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("an owned project with spend");
    let mut file = burnrate::as_code::parse(&burnrate::as_code::export(&pool).await.expect("export")).expect("parses");
    let teams = file.teams.as_mut().expect("teams");
    assert!(teams.get_mut(&owner).expect("owner").projects.remove(&project));
    let rule = &mut file.shared_costs.as_mut().expect("rules")[0].rule;
    assert_eq!(rule.split, burnrate::allocation::SplitKind::Proportional);
    rule.split = burnrate::allocation::SplitKind::Even;
    let changes = burnrate::as_code::apply(&pool, &Actor::system("test"), &file, false)
        .await
        .expect("imported");
    assert_eq!(changes.len(), 2, "{changes:?}");

    // With an even split among every team, a new team takes a share of every day...
    let before = versions(&pool).await;
    let edit = burnrate::teams::edit::TeamEdit {
        original: None,
        name: "new-team".into(),
        mapping: Default::default(),
        keep_accounts: false,
    };
    burnrate::teams::edit::save(&pool, &Actor::system("test"), edit)
        .await
        .expect("created");
    assert_eq!(rewritten(&before, &versions(&pool).await).len() as i64, all_days);
    // ...and deleting it rewrites only the days it had a share on.
    let shared = days_of(
        &pool,
        "select distinct day from allocated_daily_costs where team_id = (select id from teams where name = $1)",
        "new-team",
    )
    .await;
    assert!(!shared.is_empty());
    let before = versions(&pool).await;
    burnrate::teams::edit::delete(&pool, &Actor::system("test"), "new-team")
        .await
        .expect("deleted");
    assert_eq!(rewritten(&before, &versions(&pool).await), shared);

    // A rule change rewrites the allocation of every day, and no owned-spend rollup row: they
    // follow the facts and the projects' owners only.
    let (owned_before, allocated_before) = (owned_versions(&pool).await, allocated_versions(&pool).await);
    burnrate::allocation::edit::apply(
        &pool,
        &Actor::system("test"),
        burnrate::allocation::edit::RuleEdit::Delete {
            name: "Network, snapshots and tax".into(),
        },
    )
    .await
    .expect("rule deleted");
    assert_eq!(
        owned_versions(&pool).await,
        owned_before,
        "a rule change left them as they were"
    );
    assert_ne!(
        allocated_versions(&pool).await,
        allocated_before,
        "and rewrote the allocation's"
    );

    // What the targeted rewrites left is what a rewrite of every day makes, the page rollups
    // of every owner included.
    let targeted = (allocation(&pool).await, rollups(&pool).await);
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::store::refresh_all(&mut tx)
        .await
        .expect("full rewrite");
    tx.commit().await.expect("commit");
    let full = (allocation(&pool).await, rollups(&pool).await);
    assert_eq!(full.0, targeted.0);
    for (table, (count, rows)) in &full.1 {
        let (kept_count, kept) = &targeted.1[table];
        let missing: Vec<&String> = rows.difference(kept).take(3).collect();
        let extra: Vec<&String> = kept.difference(rows).take(3).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{table}: missing {missing:?}, extra {extra:?}"
        );
        assert_eq!(kept_count, count, "{table}: no row twice");
    }
}

/// Every row of each page rollup, as text, with their count.
async fn rollups(pool: &PgPool) -> BTreeMap<&'static str, (usize, BTreeSet<String>)> {
    let mut tables = BTreeMap::new();
    for table in [
        "team_daily_costs",
        "team_account_daily_costs",
        "allocated_project_spans",
        "owned_spend_spans",
        "record_type_days",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(&format!("select r::text from {table} r"))
            .fetch_all(pool)
            .await
            .expect("rollup rows");
        assert!(!rows.is_empty(), "{table} has rows");
        tables.insert(table, (rows.len(), rows.into_iter().collect()));
    }
    tables
}

/// The row versions of the owned-spend rollup: a rewritten row is a new one.
async fn owned_versions(pool: &PgPool) -> Vec<String> {
    row_versions(pool, "owned_spend_spans").await
}

async fn allocated_versions(pool: &PgPool) -> Vec<String> {
    row_versions(pool, "allocated_project_spans").await
}

async fn row_versions(pool: &PgPool, table: &str) -> Vec<String> {
    sqlx::query_scalar(&format!("select xmin::text || ctid::text from {table} order by 1"))
        .fetch_all(pool)
        .await
        .expect("versions")
}
