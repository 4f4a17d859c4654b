//! Chargeback statements on real Postgres: exact sections that add up to each team's total
//! and the teams to the month's, credits, refunds and tax apart, freezing once the month is
//! final, a later restatement shown as an adjustment on the next month, and the HTTP and
//! CLI forms.

use crate::common::bills::{bill, d, row, seed, write};
use crate::common::{day, spawn_app};
use burnrate::auth::Role;
use burnrate::costs::store::CostBatch;
use burnrate::statements::render::csv;
use burnrate::statements::store::statement;
use rust_decimal::Decimal;
use sqlx::PgPool;

const OCTOBER: &str = "month,team,section,item,unblended,amortized
2026-10,ml-research,direct,train,200.00,200.00
2026-10,ml-research,shared,Untagged,30.00,30.00
2026-10,ml-research,credit,Credits,-20.00,-20.00
2026-10,ml-research,refund,Refunds,0.00,0.00
2026-10,ml-research,tax,Tax,3.00,3.00
2026-10,ml-research,total,Total,213.00,213.00
2026-10,web,direct,site,40.00,40.00
2026-10,web,shared,Untagged,30.00,30.00
2026-10,web,credit,Credits,0.00,0.00
2026-10,web,refund,Refunds,0.00,0.00
2026-10,web,tax,Tax,3.00,3.00
2026-10,web,total,Total,73.00,73.00
";

#[sqlx::test]
async fn a_final_month_is_exact_frozen_and_restated_only_on_the_next_statement(pool: PgPool) {
    seed(&pool).await;
    let mut conn = pool.acquire().await.expect("connection");
    // On 31 October the month has not ended: provisional, not frozen.
    let early = statement(&mut conn, day(2026, 10, 1), day(2026, 10, 31))
        .await
        .expect("statement");
    assert_eq!(early.frozen_at, None);
    // Ended, but AWS still calls its last day Estimated: not frozen either.
    sqlx::query("update daily_project_costs set estimated = true where day = '2026-10-31'")
        .execute(&pool)
        .await
        .expect("estimated");
    let settling = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 2))
        .await
        .expect("statement");
    assert_eq!(settling.frozen_at, None);
    assert_eq!(csv(&settling, None, burnrate::format::csv::CsvStyle::Verbatim), OCTOBER);
    sqlx::query("update daily_project_costs set estimated = false")
        .execute(&pool)
        .await
        .expect("settled");
    let version: i64 = sqlx::query_scalar("select version from data_version")
        .fetch_one(&pool)
        .await
        .expect("version");
    let october = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 5))
        .await
        .expect("statement");
    assert!(october.frozen_at.is_some(), "ended with no Estimated day: frozen");
    let text = csv(&october, None, burnrate::format::csv::CsvStyle::Verbatim);
    assert_eq!(text, OCTOBER);
    // The teams' totals are the month's, to the cent.
    let month: Decimal = sqlx::query_scalar("select sum(unblended) from daily_project_costs")
        .fetch_one(&pool)
        .await
        .expect("month");
    let totals: Decimal = october
        .lines
        .iter()
        .filter(|l| l.section == burnrate::statements::model::Section::Total)
        .map(|l| l.unblended)
        .sum();
    assert_eq!(totals, month);

    // AWS restates 31 October upwards in November; the frozen statement does not move...
    write(&pool, day(2026, 10, 31), bill(day(2026, 10, 31), "112.50")).await;
    write(&pool, day(2026, 11, 2), bill(day(2026, 11, 2), "100")).await;
    let again = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 5))
        .await
        .expect("statement");
    assert_eq!(csv(&again, None, burnrate::format::csv::CsvStyle::Verbatim), OCTOBER);
    // ...and November's carries the difference as an adjustment in ml-research's total.
    let november = statement(&mut conn, day(2026, 11, 1), day(2026, 11, 5))
        .await
        .expect("statement");
    assert_eq!(november.frozen_at, None);
    let ml: Vec<String> = november
        .lines
        .iter()
        .filter(|l| l.team == "ml-research" && matches!(l.section.key(), "direct" | "total"))
        .map(|l| format!("{} {} {}", l.section.key(), l.item, l.unblended))
        .collect();
    assert_eq!(
        ml,
        [
            "direct adjustment: 2026-10 changed since frozen 12.50",
            "direct train 100",
            "total Total 119.00"
        ]
    );
    let frozen_version: i64 = sqlx::query_scalar("select data_version from statements where month = '2026-10-01'")
        .fetch_one(&pool)
        .await
        .expect("frozen with its data version");
    assert_eq!(
        frozen_version, version,
        "frozen with the data version its lines were read at"
    );
    let rules: serde_json::Value = sqlx::query_scalar("select rules from statements where month = '2026-10-01'")
        .fetch_one(&pool)
        .await
        .expect("rules");
    assert_eq!(rules[0]["name"], "Untagged", "the rules in force are kept with it");
}

/// A month freezes when Cost Explorer stops calling its days Estimated (its bill closed), not
/// when they leave the restatement window: late tax and invoice-time credits still land on
/// it until then. The run-rate keeps reading days past the window as settled.
#[sqlx::test]
async fn a_month_stays_open_while_cost_explorer_calls_it_estimated_then_freezes(pool: PgPool) {
    seed(&pool).await;
    sqlx::query("update daily_project_costs set estimated = true where day < '2026-11-01'")
        .execute(&pool)
        .await
        .expect("estimated");
    let mut conn = pool.acquire().await.expect("connection");
    // Ingestion ran on 20 November: October's days are long past the 3-day restatement window.
    burnrate::costs::settlement::record_fetch(&mut conn, day(2026, 11, 20), 3)
        .await
        .expect("fetch recorded");
    let run_rate = burnrate::costs::forecast::settled_before(&mut *conn, day(2026, 11, 20))
        .await
        .expect("settled");
    assert_eq!(
        run_rate.last_day,
        Some(day(2026, 10, 31)),
        "the run-rate reads October as settled"
    );
    let open = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 20))
        .await
        .expect("statement");
    assert_eq!(open.frozen_at, None, "October's bill is still open");
    let frozen: i64 = sqlx::query_scalar("select count(*) from statements")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(frozen, 0);

    // AWS closes October's bill: the next fetch stores its days without Estimated.
    sqlx::query("update daily_project_costs set estimated = false where day < '2026-11-01'")
        .execute(&pool)
        .await
        .expect("closed");
    let closed = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 21))
        .await
        .expect("statement");
    assert!(closed.frozen_at.is_some(), "the bill closed: frozen");
    assert_eq!(csv(&closed, None, burnrate::format::csv::CsvStyle::Verbatim), OCTOBER);
}

/// A team's direct and total lines as `section item unblended`.
fn team_lines(statement: &burnrate::statements::model::Statement, team: &str) -> Vec<String> {
    statement
        .lines
        .iter()
        .filter(|l| l.team == team && matches!(l.section.key(), "direct" | "total"))
        .map(|l| format!("{} {} {}", l.section.key(), l.item, l.unblended))
        .collect()
}

#[sqlx::test]
async fn a_restatement_of_any_frozen_month_is_booked_once_on_the_next_statement_even_after_a_rename(pool: PgPool) {
    seed(&pool).await;
    let mut conn = pool.acquire().await.expect("connection");
    let october = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 5))
        .await
        .expect("statement");
    assert!(october.frozen_at.is_some());
    for on in [day(2026, 11, 2), day(2026, 11, 30)] {
        write(&pool, on, bill(on, "100")).await;
    }
    let november = statement(&mut conn, day(2026, 11, 1), day(2026, 12, 5))
        .await
        .expect("statement");
    assert!(november.frozen_at.is_some(), "November froze with nothing to adjust");
    assert!(!november.lines.iter().any(|l| l.item.starts_with("adjustment")));

    // ml-research is renamed (its id stays), then AWS restates 31 October, two months back.
    sqlx::query("update teams set name = 'machine-learning' where name = 'ml-research'")
        .execute(&pool)
        .await
        .expect("renamed");
    write(&pool, day(2026, 10, 31), bill(day(2026, 10, 31), "112.50")).await;
    for on in [day(2026, 12, 1), day(2026, 12, 31)] {
        write(&pool, on, bill(on, "100")).await;
    }
    let december = statement(&mut conn, day(2026, 12, 1), day(2026, 12, 5))
        .await
        .expect("statement");
    assert_eq!(
        team_lines(&december, "machine-learning"),
        [
            "direct adjustment: 2026-10 changed since frozen 12.50",
            "direct train 200",
            "total Total 225.50"
        ]
    );
    assert_eq!(
        team_lines(&december, "ml-research"),
        Vec::<String>::new(),
        "one team, not two"
    );
    assert!(!team_lines(&december, "web").iter().any(|l| l.contains("adjustment")));

    // December freezes with it; a second restatement of October books only what is new.
    let frozen = statement(&mut conn, day(2026, 12, 1), day(2027, 1, 5))
        .await
        .expect("statement");
    assert!(frozen.frozen_at.is_some());
    write(&pool, day(2026, 10, 31), bill(day(2026, 10, 31), "115")).await;
    write(&pool, day(2027, 1, 2), bill(day(2027, 1, 2), "100")).await;
    let january = statement(&mut conn, day(2027, 1, 1), day(2027, 1, 5))
        .await
        .expect("statement");
    assert_eq!(
        team_lines(&january, "machine-learning"),
        [
            "direct adjustment: 2026-10 changed since frozen 2.50",
            "direct train 100",
            "total Total 109.00"
        ]
    );
}

#[sqlx::test]
async fn months_frozen_out_of_order_or_without_spend_never_book_a_change_twice(pool: PgPool) {
    seed(&pool).await;
    let mut conn = pool.acquire().await.expect("connection");
    let adjustments = |statement: &burnrate::statements::model::Statement| -> Vec<String> {
        statement
            .lines
            .iter()
            .filter(|l| l.adjusts.is_some())
            .map(|l| format!("{} {} {}", l.team, l.item, l.unblended))
            .collect()
    };
    let october = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 5))
        .await
        .expect("statement");
    assert!(october.frozen_at.is_some());
    for on in [day(2026, 11, 2), day(2026, 11, 30), day(2026, 12, 1), day(2026, 12, 31)] {
        write(&pool, on, bill(on, "100")).await;
    }
    write(&pool, day(2026, 10, 31), bill(day(2026, 10, 31), "112.50")).await;
    // December is opened first: November, with spend, lies between, so it is not December's
    // to book; and once December is frozen, November (before it) books nothing either.
    let january_5th = day(2027, 1, 5);
    let december = statement(&mut conn, day(2026, 12, 1), january_5th)
        .await
        .expect("statement");
    assert!(december.frozen_at.is_some());
    assert_eq!(adjustments(&december), Vec::<String>::new());
    let november = statement(&mut conn, day(2026, 11, 1), january_5th)
        .await
        .expect("statement");
    assert!(november.frozen_at.is_some());
    assert_eq!(adjustments(&november), Vec::<String>::new());
    // A month without spend carries nothing, and is not frozen.
    let empty = statement(&mut conn, day(2027, 3, 1), day(2027, 5, 1))
        .await
        .expect("statement");
    assert!(empty.lines.is_empty() && empty.frozen_at.is_none());
    // The next month with spend books October's change, once.
    write(&pool, day(2027, 1, 2), bill(day(2027, 1, 2), "100")).await;
    let january = statement(&mut conn, day(2027, 1, 1), january_5th)
        .await
        .expect("statement");
    assert_eq!(
        adjustments(&january),
        ["ml-research adjustment: 2026-10 changed since frozen 12.50"]
    );
}

#[sqlx::test]
async fn the_statement_is_served_as_csv_and_printable_html_to_signed_in_users(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    assert_eq!(app.get("/api/statement?month=2026-10").await.status, 401);
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let csv_response = app.get_as("/api/statement?month=2026-10&team=web", &viewer).await;
    assert_eq!(csv_response.status, 200);
    assert!(
        csv_response
            .body
            .starts_with("month,team,section,item,unblended,amortized\n2026-10,web,direct,site,")
    );
    assert!(csv_response.body.lines().skip(1).all(|l| l.contains(",web,")));
    let html = app.get_as("/api/statement?month=2026-10&format=html", &viewer).await;
    assert_eq!(html.status, 200);
    assert!(html.body.contains("<h2>ml-research</h2>") && html.body.contains("@media print"));
    let csp = html.header("content-security-policy");
    assert!(csp.starts_with("default-src 'none'; style-src 'sha256-"), "{csp}");
    // The Statements page lists each month with its total, and says which are frozen.
    let page = app.post_form_as("/api/statements", "", &viewer).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let listed: burnrate::statements::model::StatementsData = serde_json::from_str(&page.body).expect("json");
    let months: Vec<(String, Decimal, bool)> = listed
        .months
        .iter()
        .map(|m| (m.month.clone(), m.total, m.frozen_at.is_some()))
        .collect();
    assert_eq!(
        months,
        [("2026-10".to_string(), d("286.00"), true)],
        "frozen by the first request above"
    );
    assert_eq!(listed.teams, ["ml-research", "web"]);
    let bad = app.get_as("/api/statement?month=October", &viewer).await;
    assert_eq!(
        (bad.status, bad.body.as_str()),
        (400, "month: \"October\" is not a month such as 2026-10")
    );
}

/// Two callers opening a final month at once: one freezes it, the other reads that frozen
/// statement (PostgreSQL refuses its own insert, and it tries again).
#[sqlx::test]
async fn concurrent_first_requests_freeze_a_month_once(pool: PgPool) {
    seed(&pool).await;
    let open = |pool: PgPool| async move {
        let mut conn = pool.acquire().await.expect("connection");
        statement(&mut conn, day(2026, 10, 1), day(2026, 11, 5))
            .await
            .expect("statement")
    };
    let (a, b, c) = tokio::join!(open(pool.clone()), open(pool.clone()), open(pool.clone()));
    assert!(a.frozen_at.is_some() && b.frozen_at.is_some() && c.frozen_at.is_some());
    assert_eq!((&a.lines, &a.frozen_at), (&b.lines, &b.frozen_at));
    assert_eq!((&a.lines, &a.frozen_at), (&c.lines, &c.frozen_at));
    let frozen: i64 = sqlx::query_scalar("select count(*) from statements")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(frozen, 1);
}

/// `burnrate statement`: the contract's CSV for one team, the printable HTML, and clear
/// exits for a bad month (2) and a team with no spend (1).
#[sqlx::test]
async fn the_cli_writes_the_contracted_csv_and_names_bad_input(pool: PgPool) {
    seed(&pool).await;
    let url = crate::common::database_url(&pool).await;
    let run = |args: &[&str]| {
        crate::common::burnrate_command(&url)
            .arg("statement")
            .args(args)
            .env("RUST_LOG", "warn")
            .output()
            .expect("burnrate runs")
    };
    let web = run(&["--month", "2026-10", "--team", "web"]);
    assert!(web.status.success(), "{}", String::from_utf8_lossy(&web.stderr));
    let expected: String = OCTOBER
        .lines()
        .filter(|l| l.starts_with("month,") || l.contains(",web,"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(String::from_utf8_lossy(&web.stdout), expected);
    let html = run(&["--month", "2026-10", "--format", "html"]);
    assert!(html.status.success());
    assert!(String::from_utf8_lossy(&html.stdout).starts_with("<!DOCTYPE html>"));
    let bad = run(&["--month", "2026-13"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--month: \"2026-13\" is not a month such as 2026-10"));
    let nobody = run(&["--month", "2026-10", "--team", "nobody"]);
    assert_eq!(nobody.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no spend of team \"nobody\" in 2026-10"));
}

/// A project whose tag value is literally `(untagged)` keeps its own line, apart from the
/// spend that carried no project tag, though both read `(untagged)`.
#[sqlx::test]
async fn a_project_called_untagged_is_not_merged_with_untagged_spend(pool: PgPool) {
    let on = day(2026, 10, 15);
    let batch = CostBatch {
        by_usage_type: vec![
            row(on, "(untagged)", "USE1-BoxUsage:g5.xlarge", "5"),
            row(on, "", "USE1-NatGateway-Hours", "30"),
        ],
        by_user: vec![row(on, "(untagged)", "", "5"), row(on, "", "", "30")],
        by_service: vec![
            row(on, "(untagged)", "Amazon Elastic Compute Cloud - Compute", "5"),
            row(on, "", "EC2 - Other", "30"),
        ],
        by_record_type: vec![row(on, "(untagged)", "Usage", "5"), row(on, "", "Usage", "30")],
        ..CostBatch::default()
    };
    write(&pool, on, batch).await;
    let mut conn = pool.acquire().await.expect("connection");
    let october = statement(&mut conn, day(2026, 10, 1), day(2026, 11, 10))
        .await
        .expect("statement");
    let direct: Vec<(String, bool, Decimal)> = october
        .lines
        .iter()
        .filter(|l| l.section.key() == "direct")
        .map(|l| (l.item.clone(), l.untagged, l.unblended))
        .collect();
    assert_eq!(
        direct,
        [
            ("(untagged)".to_string(), false, d("5")),
            ("(untagged)".to_string(), true, d("30"))
        ]
    );
    let html = burnrate::statements::render::html(&october, None);
    assert!(
        html.contains("<em title=\"spend that carried no project tag\">(untagged)</em>"),
        "{html}"
    );
}
