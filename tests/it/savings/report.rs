//! The monthly savings report: realised dollars worked here by hand from seeded spend and
//! decisions, totals that reconcile with the ledger and "Savings available", and the CSV
//! and printable HTML through `serve`, for signed-in callers only.

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{Line, d, insights, seed, team};
use crate::common::spawn_app;
use burnrate::auth::Role;
use burnrate::savings::Kind;

fn on(month: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, month, day).expect("date")
}

/// Every day from `first` to `last` inclusive, `cost` and `hours` each.
fn days<'a>(
    project: &'a str,
    usage_type: &'a str,
    first: NaiveDate,
    last: NaiveDate,
    cost: &str,
    hours: &str,
) -> Vec<Line<'a>> {
    first
        .iter_days()
        .take_while(|day| *day <= last)
        .map(|day| Line(project, usage_type, day, d(cost), d(hours)))
        .collect()
}

/// A trainer that moved to spot on 16 October, a notebook put on a schedule on 20 September,
/// and a serving fleet nobody changed.
async fn seeded(pool: &PgPool) {
    let lines = [
        days(
            "trainer",
            "USE1-BoxUsage:p4d.24xlarge",
            on(9, 1),
            on(10, 15),
            "219.576",
            "10",
        ),
        days(
            "trainer",
            "USE1-SpotUsage:p4d.24xlarge",
            on(10, 16),
            on(10, 31),
            "65.873",
            "10",
        ),
        days(
            "lab",
            "USE1-Notebk:ml.g5.12xlarge",
            on(8, 15),
            on(9, 19),
            "340.32",
            "48",
        ),
        days(
            "lab",
            "USE1-Notebk:ml.g5.12xlarge",
            on(9, 20),
            on(10, 31),
            "120",
            "16.92",
        ),
        days(
            "viewer",
            "USE1-BoxUsage:g5.xlarge",
            on(10, 1),
            on(10, 31),
            "24.144",
            "24",
        ),
        // Undeclared two-day sweeps each week: a spot row resting on an inferred workload.
        days(
            "sweeps",
            "USE1-BoxUsage:g5.12xlarge",
            on(10, 1),
            on(10, 31),
            "1089.024",
            "192",
        )
        .into_iter()
        .filter(|l| l.2.day0() % 7 == 1 || l.2.day0() % 7 == 2)
        .collect(),
    ]
    .concat();
    seed(pool, &lines).await;
    team(pool, "ml", "lead@example.com", &["trainer", "lab"]).await;
    team(pool, "vision", "vision@example.com", &["viewer"]).await;
    team(pool, "research", "research@example.com", &["sweeps"]).await;
    let decide = |kind: &str, project: &str, usage_type: &str, instance_type: &str, saving: &str, on_day: NaiveDate| {
        let key = [kind, project, usage_type, instance_type].join("\u{1f}");
        sqlx::query(
            "insert into savings_decisions (recommendation_key, kind, team, project, usage_type, instance_type,
                 decision, reason, proposed_monthly_saving, compounded_monthly_saving, decided_by, decided_on)
             values ($1, $2, 'ml', $3, $4, $5, 'accepted', 'seeded', $6::numeric, $6::numeric, 'lead@example.com', $7)",
        )
        .bind(key)
        .bind(kind.to_string())
        .bind(project.to_string())
        .bind(usage_type.to_string())
        .bind(instance_type.to_string())
        .bind(saving.to_string())
        .bind(on_day)
        .execute(pool)
    };
    decide(
        "spot",
        "trainer",
        "USE1-BoxUsage:p4d.24xlarge",
        "p4d.24xlarge",
        "4281.73",
        on(10, 16),
    )
    .await
    .expect("spot accepted");
    decide(
        "always_on",
        "lab",
        "USE1-Notebk:ml.g5.12xlarge",
        "g5.12xlarge",
        "6560",
        on(9, 20),
    )
    .await
    .expect("schedule accepted");
}

fn october() -> burnrate::period::DateRange {
    burnrate::period::parse_month("2026-10").expect("month")
}

#[sqlx::test]
async fn a_month_reports_what_was_proposed_accepted_and_realised_by_lever_and_team(pool: PgPool) {
    seeded(&pool).await;
    let found = insights(&pool, 30).await;
    let report = burnrate::savings::report::compute(&pool, &found, october(), on(11, 27))
        .await
        .expect("report");
    assert_eq!((report.spend_to, report.settled_to), (on(11, 1), on(11, 1)));

    // GPU spend in October: the trainer's 15 on-demand and 16 spot days, the lab's 31
    // scheduled days, the viewer's 31 days.
    let ml = d("15") * d("219.576") + d("16") * d("65.873") + d("31") * d("120");
    let vision = d("31") * d("24.144");
    // The sweeps ran on the 2nd, 3rd, 9th, 10th, 16th, 17th, 23rd, 24th, 30th and 31st.
    let research = d("10") * d("1089.024");
    assert_eq!(report.gpu_spend, ml + vision + research);

    // Spot, accepted 16 October: 30 days before at $219.576, then 16 days in October.
    let spot = report.levers.iter().find(|l| l.kind == Kind::Spot).expect("spot lever");
    let spot_before = d("30") * d("219.576");
    let spot_spent = d("16") * d("65.873");
    assert_eq!(spot.accepted, d("4281.73"), "accepted in the month");
    assert_eq!(spot.realised, spot_before * d("16") / d("30") - spot_spent);
    assert_eq!(spot.before, Some(spot_before));
    assert_eq!(spot.after, Some(spot_spent * d("30") / d("16")));
    assert_eq!(
        spot.change().map(|c| c.round_dp(4)),
        Some((d("65.873") / d("219.576") - Decimal::ONE).round_dp(4))
    );

    // The schedule was accepted in September: not accepted in October, but realised on all
    // 31 of its days against its 30 days before 20 September at $340.32.
    let schedule = report
        .levers
        .iter()
        .find(|l| l.kind == Kind::AlwaysOn)
        .expect("always_on lever");
    assert_eq!(schedule.accepted, Decimal::ZERO);
    let schedule_before = d("30") * d("340.32");
    assert_eq!(
        schedule.realised,
        schedule_before * d("31") / d("30") - d("31") * d("120")
    );

    // By team: the decisions are ml's; vision has spend and nothing decided.
    let team = |name: &str| report.teams.iter().find(|t| t.team == name).expect("team row");
    assert_eq!(team("ml").gpu_spend, ml);
    assert_eq!(team("ml").realised, spot.realised + schedule.realised);
    assert_eq!(team("vision").gpu_spend, vision);
    assert_eq!(team("vision").realised, Decimal::ZERO);

    // The totals reconcile: levers and teams each sum to them, accepted is the ledger's
    // decisions of the month, and proposed is what "Savings available" sums.
    let levers = |f: fn(&burnrate::savings::model::LeverRow) -> Decimal| report.levers.iter().map(f).sum::<Decimal>();
    let teams = |f: fn(&burnrate::savings::model::TeamRow) -> Decimal| report.teams.iter().map(f).sum::<Decimal>();
    assert_eq!(report.realised, levers(|l| l.realised));
    assert_eq!(report.realised, teams(|t| t.realised));
    assert_eq!(report.accepted, teams(|t| t.accepted));
    assert_eq!(report.proposed, teams(|t| t.proposed));
    assert_eq!(report.gpu_spend, teams(|t| t.gpu_spend));
    let mut conn = pool.acquire().await.expect("conn");
    let ledger = burnrate::savings::ledger::entries(&mut conn).await.expect("ledger");
    assert_eq!(ledger.len(), 2);
    let accepted_in_october: Decimal = ledger
        .iter()
        .filter(|e| e.decided_on >= on(10, 1) && e.decided_on < on(11, 1))
        .map(|e| e.accepted_monthly_saving)
        .sum();
    assert_eq!(report.accepted, accepted_in_october);
    let available = burnrate::savings::service::available(&pool, &found, None, None)
        .await
        .expect("available");
    assert_eq!(report.proposed, available.monthly_saving);
    // The sweeps' spot row waits for its workload to be confirmed: in no proposed figure.
    assert!(
        found
            .recommendations
            .iter()
            .any(|r| r.project == "sweeps" && r.kind == Kind::Spot && r.inferred.is_some()),
        "{:?}",
        found.recommendations
    );
    assert_eq!(available.to_confirm, 1);
    assert_eq!(team("research").proposed, Decimal::ZERO);
    assert_eq!(team("research").gpu_spend, research);

    // September: the schedule is accepted there, realised on its 11 days from the 20th.
    let september = burnrate::period::parse_month("2026-09").expect("month");
    let report = burnrate::savings::report::compute(&pool, &found, september, on(11, 27))
        .await
        .expect("report");
    let schedule = report
        .levers
        .iter()
        .find(|l| l.kind == Kind::AlwaysOn)
        .expect("always_on lever");
    assert_eq!(schedule.accepted, d("6560"));
    assert_eq!(
        schedule.realised,
        schedule_before * d("11") / d("30") - d("11") * d("120")
    );
}

#[sqlx::test]
async fn the_report_downloads_as_csv_and_printable_html_for_signed_in_callers(pool: PgPool) {
    seeded(&pool).await;
    // Team names are people's text: escaped in the printable report.
    sqlx::query("update teams set name = '<b>vision</b>' where name = 'vision'")
        .execute(&pool)
        .await
        .expect("renamed");
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    assert_eq!(app.get("/api/savings/report.csv?month=2026-10").await.status, 401);
    assert_eq!(app.get("/api/savings/report.html?month=2026-10").await.status, 401);
    let bad = app.get_as("/api/savings/report.csv?month=October", &viewer).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("month"), "{}", bad.body);
    let future = app.get_as("/api/savings/report.csv?month=2099-01", &viewer).await;
    assert_eq!(future.status, 400, "{}", future.body);

    let csv = app.get_as("/api/savings/report.csv?month=2026-10", &viewer).await;
    assert_eq!(csv.status, 200, "{}", csv.body);
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(
        lines[0],
        "month,by,name,gpu_spend,proposed,accepted,realised,before_per_30_days,after_per_30_days"
    );
    // 6587.28 × 16/30 − 1053.968 = 2459.248; 6587.28 before, 1976.19 after (1053.968 × 30/16).
    assert!(
        lines.contains(&"2026-10,lever,spot,,0.00,4281.73,2459.25,6587.28,1976.19"),
        "{}",
        csv.body
    );
    // 10209.6 × 31/30 − 3720 = 10549.92 − 3720 = 6829.92.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("2026-10,lever,always_on,,") && l.contains(",0.00,6829.92,")),
        "{}",
        csv.body
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("2026-10,team,<b>vision</b>,748.46,")),
        "{}",
        csv.body
    );
    assert!(
        lines.last().is_some_and(|l| l.starts_with("2026-10,total,,")),
        "{}",
        csv.body
    );

    let html = app.get_as("/api/savings/report.html?month=2026-10", &viewer).await;
    assert_eq!(html.status, 200);
    assert!(html.body.contains("GPU savings report, 2026-10"), "{}", html.body);
    assert!(html.body.contains("$2,459.25"), "{}", html.body);
    assert!(html.body.contains("&lt;b&gt;vision&lt;/b&gt;"), "{}", html.body);
    assert!(!html.body.contains("<b>vision</b>"), "team names are escaped");

    let page = app.get_as("/savings/report?month=2026-10", &viewer).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("data-testid=\"report-realised\""), "{}", page.body);
    assert!(
        page.body.contains("$9,289.17"),
        "2459.248 + 6829.92 realised:\n{}",
        page.body
    );
}
