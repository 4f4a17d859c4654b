//! The credits switch: every cost page's figures net of credits and refunds (the default,
//! as the bill counts them) or before them, and budgets that count either way.
//!
//! The bill (`statements::seed`) has two October days, each: `train` (ml-research) 100 of
//! usage less a 10 credit; untagged 30 of NAT gateway and 3 of tax, shared evenly by
//! ml-research and web; `site` (web) 20.

use crate::common::bills::{d, seed};
use crate::common::{self, day};
use burnrate::auth::Role;
use burnrate::budgets::spec::{BudgetInput, validate};
use burnrate::dashboard::model::Scope;
use burnrate::dashboard::reads::{breakdown, overview};
use burnrate::period::{Basis, Credits, Metric, Period};
use rust_decimal::Decimal;
use sqlx::PgPool;

const NET: Basis = Basis {
    metric: Metric::Unblended,
    credits: Credits::Net,
};
const GROSS: Basis = Basis {
    metric: Metric::Unblended,
    credits: Credits::Gross,
};

fn october() -> Period {
    Period::Month(day(2026, 10, 1))
}

fn today() -> chrono::NaiveDate {
    day(2026, 11, 5)
}

#[sqlx::test]
async fn the_overview_and_teams_leave_credits_out_before_credits(pool: PgPool) {
    seed(&pool).await;
    let net = overview::overview(&pool, october(), NET, today(), None)
        .await
        .expect("net");
    let gross = overview::overview(&pool, october(), GROSS, today(), None)
        .await
        .expect("gross");
    // Two days of 90 + 33 + 20 net; the 10 credit a day back in before credits.
    assert_eq!(net.total, d("286"));
    assert_eq!(gross.total, d("306"));
    assert_eq!(gross.credits, Credits::Gross);
    let train = |o: &burnrate::dashboard::model::OverviewData| {
        o.top_projects
            .iter()
            .find(|p| p.project == "train")
            .expect("train")
            .spend
    };
    assert_eq!(train(&net), d("180"));
    assert_eq!(train(&gross), d("200"));
    // The record types add up to each total: before credits, the credit line is left out.
    assert!(net.record_types.iter().any(|l| l.key == "Credit"));
    assert!(!gross.record_types.iter().any(|l| l.key == "Credit"));
    for view in [&net, &gross] {
        assert_eq!(view.record_types.iter().map(|l| l.spend).sum::<Decimal>(), view.total);
    }
    // A team's Overview and the Teams table follow the switch; web has no credits.
    let ml = overview::overview(&pool, october(), GROSS, today(), Some("ml-research"))
        .await
        .expect("team");
    assert_eq!(ml.total, d("233"));
    let teams = breakdown::teams(&pool, october(), GROSS, today()).await.expect("teams");
    let spend = |name: &str| teams.teams.iter().find(|t| t.team == name).expect(name).spend;
    assert_eq!(spend("ml-research"), d("233"));
    assert_eq!(spend("web"), d("73"));
    assert_eq!(
        teams.total, gross.total,
        "the teams add up to the organisation before credits too"
    );
    let net_teams = breakdown::teams(&pool, october(), NET, today()).await.expect("teams");
    assert_eq!(net_teams.total, net.total);
}

#[sqlx::test]
async fn team_and_project_pages_switch_their_totals_and_projects_only(pool: PgPool) {
    seed(&pool).await;
    for (scope, net_total, gross_total) in [
        (Scope::Team("ml-research".into()), "213", "233"),
        (Scope::Project("train".into()), "180", "200"),
    ] {
        let net = breakdown::scope(&pool, scope.clone(), october(), NET, today())
            .await
            .expect("net");
        let gross = breakdown::scope(&pool, scope.clone(), october(), GROSS, today())
            .await
            .expect("gross");
        assert_eq!(net.total, d(net_total), "{scope:?}");
        assert_eq!(gross.total, d(gross_total), "{scope:?}");
        let train =
            |lines: &[burnrate::dashboard::model::Line]| lines.iter().find(|l| l.key == "train").expect("train").spend;
        assert_eq!(train(&net.by_project), d("180"));
        assert_eq!(train(&gross.by_project), d("200"));
        // Cost Explorer reports credits inside the user grain: it stays net either way.
        assert_eq!(net.by_user, gross.by_user);
    }
    // The team's allocation parts follow the switch too.
    let gross = breakdown::scope(&pool, Scope::Team("ml-research".into()), october(), GROSS, today())
        .await
        .expect("gross");
    assert_eq!(gross.parts.iter().map(|p| p.spend).sum::<Decimal>(), d("233"));
}

#[sqlx::test]
async fn the_server_functions_take_credits_and_name_a_bad_value(pool: PgPool) {
    seed(&pool).await;
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let gross = app
        .post_form_as("/api/teams", "period=2026-10&metric=unblended&credits=gross", &viewer)
        .await;
    assert_eq!(gross.status, 200, "{}", gross.body);
    assert!(gross.body.contains("\"credits\":\"Gross\""), "{}", gross.body);
    assert!(gross.body.contains("\"total\":\"306"), "{}", gross.body);
    // The cached page data of one setting is never served for the other.
    let net = app
        .post_form_as("/api/teams", "period=2026-10&metric=unblended", &viewer)
        .await;
    assert!(net.body.contains("\"total\":\"286"), "{}", net.body);
    let bad = app
        .post_form_as("/api/overview", "period=2026-10&credits=after", &viewer)
        .await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.body
            .contains("unknown credits \\\"after\\\"; expected net or gross"),
        "{}",
        bad.body
    );
    let page = app.get_as("/teams?period=2026-10&credits=gross", &viewer).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("before credits and refunds"),
        "the table says what it counts"
    );
}

#[sqlx::test]
async fn a_budget_counts_spend_net_or_before_credits_as_it_says(pool: PgPool) {
    seed(&pool).await;
    let mut conn = pool.acquire().await.expect("connection");
    let mut standing = Vec::new();
    for credits in ["net", "gross"] {
        let spec = validate(&BudgetInput {
            credits: credits.into(),
            ..crate::common::budgets::input(&format!("ml {credits}"), ("team", "ml-research"), "1000", "50", "")
        })
        .expect("valid");
        let id = burnrate::budgets::store::save(&mut conn, &burnrate::audit_log::Actor::system("test"), None, &spec)
            .await
            .expect("saved");
        let budget = burnrate::budgets::store::get(&mut conn, id)
            .await
            .expect("read")
            .expect("budget");
        assert_eq!(budget.spec.credits.key(), credits, "stored and read back");
        let period = burnrate::period::DateRange {
            from: day(2026, 10, 1),
            to: day(2026, 11, 1),
        };
        let status = burnrate::budgets::evaluate::status_in(&mut conn, &budget, period, today())
            .await
            .expect("status");
        standing.push(status.status.spend);
    }
    assert_eq!(standing, [d("213"), d("233")]);
    let refused = validate(&BudgetInput {
        name: "bad".into(),
        scope_kind: "org".into(),
        period: "monthly".into(),
        amount: "10".into(),
        metric: "unblended".into(),
        credits: "after".into(),
        ..BudgetInput::default()
    })
    .expect_err("an unknown setting");
    assert!(refused.iter().any(|e| e.field == "credits"), "{refused:?}");
}

#[sqlx::test]
async fn a_refund_is_left_out_before_credits_as_a_credit_is(pool: PgPool) {
    seed(&pool).await;
    // 20 October: the usual bill, but site (web) is refunded 5 of its 20.
    let on = day(2026, 10, 20);
    let mut batch = crate::common::bills::bill(on, "100");
    for rows in [&mut batch.by_usage_type, &mut batch.by_user, &mut batch.by_service] {
        for row in rows.iter_mut().filter(|r| r.project == "site") {
            row.unblended = d("15");
            row.amortized = d("15");
        }
    }
    batch
        .by_record_type
        .push(crate::common::bills::row(on, "site", "Refund", "-5"));
    crate::common::bills::write(&pool, on, batch).await;
    let net = breakdown::teams(&pool, october(), NET, today()).await.expect("net");
    let gross = breakdown::teams(&pool, october(), GROSS, today()).await.expect("gross");
    let web =
        |view: &burnrate::dashboard::model::TeamsData| view.teams.iter().find(|t| t.team == "web").expect("web").spend;
    // web: 20 + 20 + 15 of site and 3 × 16.50 of the shared untagged spend.
    assert_eq!(web(&net), d("104.5"));
    assert_eq!(web(&gross), d("109.5"));
    assert_eq!(gross.total - net.total, d("35"), "three 10 credits and the 5 refund");
    let site = breakdown::scope(&pool, Scope::Project("site".into()), october(), GROSS, today())
        .await
        .expect("site");
    assert_eq!(site.total, d("60"));
    let amortized = Basis {
        metric: Metric::Amortized,
        credits: Credits::Gross,
    };
    let site = breakdown::scope(&pool, Scope::Project("site".into()), october(), amortized, today())
        .await
        .expect("site amortized");
    assert_eq!(site.total, d("60"), "amortized leaves the refund out too");
}

/// A credit on one user's tag, ingested from the Cost Explorer fake: an unowned project
/// where alice (ml-research) used 100 and was credited 100, and bob (web) used 100. Split by
/// net spend, bob's team would receive alice's credit; split by its own user amounts, it
/// stays hers, and each team's spend before credits is the usage its user ran.
#[sqlx::test]
async fn a_credit_on_one_users_tag_is_that_users_team_s(pool: PgPool) {
    use crate::common::ce_fake::{CostExplorerFake, LineItem};
    let on = day(2026, 11, 10);
    let line = |user: &str, record_type: &str, amount: &str| LineItem {
        day: on,
        account: crate::common::ce_fake::SAMPLE_ACCOUNT.into(),
        project: Some("sandbox".into()),
        user: Some(user.into()),
        usage_type: "USE1-BoxUsage:g5.xlarge".into(),
        service: "Amazon Elastic Compute Cloud - Compute".into(),
        record_type: record_type.into(),
        unblended: d(amount),
        amortized: d(amount),
        quantity: Decimal::ONE,
    };
    let fake = CostExplorerFake::start(vec![
        line("alice", "Usage", "100"),
        line("alice", "Credit", "-100"),
        line("bob", "Usage", "100"),
    ])
    .await;
    fake.with(|s| s.today = Some(day(2026, 11, 20)));
    let file = burnrate::as_code::parse(
        "teams:
  - name: ml-research
    users: [alice]
  - name: web
    users: [bob]
",
    )
    .expect("valid");
    burnrate::as_code::apply(&pool, &burnrate::audit_log::Actor::system("test"), &file, false)
        .await
        .expect("teams");
    let ce = common::cost_explorer_at(&fake.endpoint(), "AKIDTEST").await;
    let options = burnrate::ingestion::run::RunOptions {
        settings: burnrate::config::IngestSettings::default(),
        window: Some(burnrate::period::DateRange {
            from: on,
            to: on + chrono::Days::new(1),
        }),
        today: day(2026, 11, 20),
        backoff: common::FAST_BACKOFF,
    };
    burnrate::ingestion::run::run(&pool, &ce, burnrate::ingestion::run::Trigger::Cli, &options)
        .await
        .expect("ingested");
    // The credit was asked for by user, on its own.
    let filtered: Vec<Option<Vec<String>>> = fake.with(|s| s.requests.iter().map(|r| r.record_types.clone()).collect());
    // In its one account, under And with the account (the account views aside, which group
    // by the account).
    let accounts: Vec<Option<Vec<String>>> = fake.with(|s| {
        s.requests
            .iter()
            .filter(|r| r.operation == "GetCostAndUsage" && r.group_by[0] != "DIMENSION:LINKED_ACCOUNT")
            .map(|r| r.accounts.clone())
            .collect()
    });
    assert!(
        accounts
            .iter()
            .all(|a| a.as_deref() == Some(&["111122223333".to_string()][..])),
        "{accounts:?}"
    );
    assert!(filtered.contains(&Some(vec!["Credit".to_string()])), "{filtered:?}");
    // And each user's GPU spend, on its own: the account's one GPU usage type.
    let gpu_filters: Vec<Vec<String>> =
        fake.with(|s| s.requests.iter().filter_map(|r| r.usage_types.clone()).collect());
    assert_eq!(gpu_filters, [vec!["USE1-BoxUsage:g5.xlarge".to_string()]]);
    // The credit, and the GPU spend it nets, are alice's: web's GPU spend is bob's whole 100
    // (it was 50 when the project's net GPU spend was divided by gross usage).
    let teams: Vec<(String, Decimal, Decimal, Decimal)> = sqlx::query_as(
        "select t.name, sum(a.unblended), sum(a.credit_unblended), sum(a.gpu_unblended)
         from allocated_daily_costs a join teams t on t.id = a.team_id group by 1 order by 1",
    )
    .fetch_all(&pool)
    .await
    .expect("allocation");
    assert_eq!(
        teams,
        [
            ("ml-research".to_string(), d("0"), d("-100"), d("0")),
            ("web".to_string(), d("100"), d("0"), d("100"))
        ]
    );
}
