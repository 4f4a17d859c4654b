//! `burnrate export` CSV: exact figures, order, escaping, and reconciliation with the facts.

use crate::common;

use crate::common::bills::row;
use crate::common::{day, load_demo};
use burnrate::costs::export::{Granularity, csv, parse_keys};
use burnrate::costs::store::{CostBatch, CostRow};
use burnrate::period::{DateRange, Metric};
use rust_decimal::Decimal;
use sqlx::PgPool;
use std::str::FromStr;

async fn write(pool: &PgPool, batch: CostBatch) {
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(
        &mut tx,
        DateRange {
            from: day(2026, 1, 1),
            to: day(2026, 1, 3),
        },
        &batch,
    )
    .await
    .expect("write");
    tx.commit().await.expect("commit");
}

#[sqlx::test]
async fn csv_has_exact_costs_sorted_rows_and_escaped_tag_values(pool: PgPool) {
    let by_user = vec![
        row(day(2026, 1, 2), "alpha", "bob", "1.0000000001"),
        row(day(2026, 1, 1), "alpha", "bob", "2.50"),
        row(day(2026, 1, 1), "a,\"quoted\"", "", "0.30"),
        row(day(2026, 1, 1), "", "carol", "4"),
    ];
    // Every grain holds the same spend, as Cost Explorer's answers do.
    let with_dimension = |dimension: &str| -> Vec<CostRow> {
        by_user
            .iter()
            .map(|r| CostRow {
                dimension: dimension.to_string(),
                ..r.clone()
            })
            .collect()
    };
    let batch = CostBatch {
        by_usage_type: with_dimension("USE1-BoxUsage:g5.xlarge"),
        by_service: with_dimension("Amazon Elastic Compute Cloud - Compute"),
        by_user,
        ..CostBatch::default()
    };
    write(&pool, batch).await;
    sqlx::query("insert into teams (name) values ('ml')")
        .execute(&pool)
        .await
        .expect("team");
    sqlx::query("update projects set team_id = (select id from teams) where name = 'alpha'")
        .execute(&pool)
        .await
        .expect("map");

    let range = DateRange {
        from: day(2026, 1, 1),
        to: day(2026, 1, 3),
    };
    let keys = parse_keys("team,project,user").expect("keys");
    let out = csv(&pool, range, &keys, Granularity::Daily, Metric::Unblended)
        .await
        .expect("csv");
    assert_eq!(
        out,
        "date,team,project,user,cost\n\
         2026-01-01,Unassigned,,carol,4\n\
         2026-01-01,Unassigned,\"a,\"\"quoted\"\"\",,0.30\n\
         2026-01-01,ml,alpha,bob,2.50\n\
         2026-01-02,ml,alpha,bob,1.0000000001\n"
    );

    let monthly = csv(
        &pool,
        range,
        &parse_keys("project").expect("keys"),
        Granularity::Monthly,
        Metric::Unblended,
    )
    .await
    .expect("csv");
    assert!(monthly.contains("2026-01-01,alpha,3.5000000001\n"), "{monthly}");
    let outside = DateRange {
        from: day(2026, 1, 3),
        to: day(2026, 1, 9),
    };
    assert_eq!(
        csv(&pool, outside, &keys, Granularity::Daily, Metric::Unblended)
            .await
            .expect("csv"),
        "date,team,project,user,cost\n"
    );
}

fn csv_total(text: &str) -> Decimal {
    text.lines()
        .skip(1)
        .map(|l| Decimal::from_str(l.rsplit(',').next().expect("cost")).expect("decimal"))
        .sum()
}

#[sqlx::test]
async fn every_key_set_reconciles_with_the_facts_to_the_cent(pool: PgPool) {
    load_demo(&pool, day(2026, 2, 10)).await;
    let range = DateRange {
        from: day(2026, 1, 1),
        to: day(2026, 2, 1),
    };
    let truth: Decimal = sqlx::query_scalar(
        "select sum(amortized) from daily_project_costs where day >= '2026-01-01' and day < '2026-02-01'",
    )
    .fetch_one(&pool)
    .await
    .expect("sum");
    for keys in [
        "team",
        "project,user",
        "team,service",
        "project,usage_type",
        "instance_type",
    ] {
        let out = csv(
            &pool,
            range,
            &parse_keys(keys).expect("keys"),
            Granularity::Monthly,
            Metric::Amortized,
        )
        .await
        .expect("csv");
        assert_eq!(csv_total(&out), truth, "{keys}");
    }
}

/// Exports by team without projects read the allocation's rollup per team, step and
/// account: each line, daily and monthly, net and gross, for every team or one, is the
/// allocation's own rows summed.
#[sqlx::test]
async fn exports_by_team_and_account_are_the_allocations_rows_to_the_cent(pool: PgPool) {
    use burnrate::costs::export::{Selection, stream_csv};
    use burnrate::format::csv::CsvStyle;
    use burnrate::period::Credits;
    load_demo(&pool, day(2026, 2, 10)).await;
    let range = DateRange {
        from: day(2026, 1, 1),
        to: day(2026, 2, 1),
    };
    let team_id: i64 = sqlx::query_scalar("select id from teams order by name limit 1")
        .fetch_one(&pool)
        .await
        .expect("a team");
    let mut compared = 0;
    for (keys, columns) in [
        ("team", "coalesce(t.name, 'Unassigned')"),
        ("team,account", "coalesce(t.name, 'Unassigned') || ',' || a.account_id"),
        (
            "account_name,team",
            "coalesce(n.name, '') || ',' || coalesce(t.name, 'Unassigned')",
        ),
    ] {
        for (granularity, date) in [
            (Granularity::Daily, "a.day"),
            (Granularity::Monthly, "date_trunc('month', a.day)::date"),
        ] {
            for (credits, amount) in [
                (Credits::Net, "a.amortized"),
                (Credits::Gross, "a.amortized - a.credit_amortized - a.refund_amortized"),
            ] {
                for team in [None, Some(team_id)] {
                    let mut expected: Vec<String> = sqlx::query_scalar(&format!(
                        "select ({date})::text || ',' || ({columns}) || ',' || sum({amount})::text
                         from allocated_daily_costs a left join teams t on t.id = a.team_id
                         left join aws_accounts n on n.account_id = a.account_id
                         where a.day >= $1 and a.day < $2 and ($3::bigint is null or a.team_id = $3)
                         group by ({date}), ({columns}) having sum({amount}) <> 0"
                    ))
                    .bind(range.from)
                    .bind(range.to)
                    .bind(team)
                    .fetch_all(&pool)
                    .await
                    .expect("oracle");
                    let selection = Selection {
                        granularity,
                        metric: Metric::Amortized,
                        credits,
                        account: None,
                        team,
                    };
                    let mut out = String::new();
                    let tx = pool.begin().await.expect("tx");
                    stream_csv(
                        tx,
                        range,
                        &parse_keys(keys).expect("keys"),
                        &selection,
                        (CsvStyle::Verbatim, None),
                        |chunk| {
                            out.push_str(&chunk);
                            std::future::ready(true)
                        },
                    )
                    .await
                    .expect("export");
                    // Sorted here: the oracle's keys are one string, ordered by another collation.
                    let mut lines: Vec<&str> = out.lines().skip(1).collect();
                    lines.sort_unstable();
                    expected.sort_unstable();
                    let context = format!("{keys}, {granularity:?}, {credits:?}, team {team:?}");
                    assert!(!expected.is_empty(), "{context}");
                    // Sums compared as numbers: the export keeps the scale PostgreSQL gives.
                    assert_eq!(lines.len(), expected.len(), "{context}");
                    for (line, want) in lines.iter().zip(&expected) {
                        let (line_keys, line_cost) = line.rsplit_once(',').expect("cost");
                        let (want_keys, want_cost) = want.rsplit_once(',').expect("cost");
                        assert_eq!(line_keys, want_keys, "{context}");
                        assert_eq!(
                            Decimal::from_str(line_cost).expect("cost"),
                            Decimal::from_str(want_cost).expect("cost"),
                            "{context}: {line}"
                        );
                    }
                    compared += lines.len();
                }
            }
        }
    }
    assert!(compared > 100, "{compared} lines compared");
}

#[sqlx::test]
async fn the_csv_download_is_the_export_and_needs_a_session(pool: PgPool) {
    use burnrate::auth::Role;
    load_demo(&pool, day(2026, 2, 10)).await;
    let app = common::spawn_app(pool.clone()).await;
    let query = "/api/export.csv?from=2026-01-01&to=2026-02-01&group_by=team,project&metric=amortized";
    assert_eq!(app.get(query).await.status, 401);
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let download = app.get_as(query, &viewer).await;
    assert_eq!(download.status, 200);
    assert_eq!(download.header("content-type"), "text/csv; charset=utf-8");
    assert!(
        download
            .header("content-disposition")
            .contains("burnrate-team-project-2026-01-01-2026-01-31.csv")
    );
    let expected = csv(
        &pool,
        DateRange {
            from: day(2026, 1, 1),
            to: day(2026, 2, 1),
        },
        &parse_keys("team,project").expect("keys"),
        Granularity::Daily,
        Metric::Amortized,
    )
    .await
    .expect("csv");
    assert_eq!(download.body, expected);
    for bad in [
        "/api/export.csv?from=2026-02-01&to=2026-01-01&group_by=team",
        "/api/export.csv?from=2026-01-01&to=2026-02-01&group_by=user,service",
        "/api/export.csv?from=2026-01-01&to=2026-02-01&group_by=team&granularity=hourly",
        "/api/export.csv?from=yesterday&to=2026-02-01&group_by=team",
    ] {
        assert_eq!(app.get_as(bad, &viewer).await.status, 400, "{bad}");
    }
}

#[sqlx::test]
async fn downloads_defuse_formulas_while_the_cli_stays_verbatim_unless_asked(pool: PgPool) {
    use burnrate::auth::Role;
    let hostile = "=HYPERLINK(\"http://evil.example\",\"open\")";
    let batch = CostBatch {
        by_user: vec![
            row(day(2026, 1, 1), hostile, "@alice", "12.50"),
            row(day(2026, 1, 1), "-2+3", "bob", "-5.00"),
        ],
        by_usage_type: vec![
            row(day(2026, 1, 1), hostile, "USE1-BoxUsage:g5.xlarge", "12.50"),
            row(day(2026, 1, 1), "-2+3", "USE1-BoxUsage:g5.xlarge", "-5.00"),
        ],
        by_service: vec![
            row(day(2026, 1, 1), hostile, "+cmd", "12.50"),
            row(day(2026, 1, 1), "-2+3", "+cmd", "-5.00"),
        ],
        ..CostBatch::default()
    };
    write(&pool, batch).await;
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let download = app
        .get_as(
            "/api/export.csv?from=2026-01-01&to=2026-01-02&group_by=project,user",
            &viewer,
        )
        .await;
    assert_eq!(download.status, 200);
    // The credit stays a number; text that a spreadsheet would run starts with '.
    assert_eq!(
        download.body,
        "date,project,user,cost\n\
         2026-01-01,'-2+3,bob,-5.00\n\
         2026-01-01,\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"open\"\")\",'@alice,12.50\n"
    );

    let url = common::database_url(&pool).await;
    let export = |extra: &[&str]| {
        let output = crate::common::burnrate_command(&url)
            .args([
                "export",
                "--from",
                "2026-01-01",
                "--to",
                "2026-01-02",
                "--group-by",
                "project,service",
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .output()
            .expect("burnrate runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8")
    };
    assert_eq!(
        export(&[]),
        "date,project,service,cost\n\
         2026-01-01,-2+3,+cmd,-5.00\n\
         2026-01-01,\"=HYPERLINK(\"\"http://evil.example\"\",\"\"open\"\")\",+cmd,12.50\n"
    );
    assert_eq!(
        export(&["--excel-safe"]),
        "date,project,service,cost\n\
         2026-01-01,'-2+3,'+cmd,-5.00\n\
         2026-01-01,\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"open\"\")\",'+cmd,12.50\n"
    );
}

#[sqlx::test]
async fn a_download_larger_than_a_chunk_streams_every_row_in_order(pool: PgPool) {
    use burnrate::auth::Role;
    load_demo(&pool, day(2026, 2, 10)).await;
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let download = app
        .get_as(
            "/api/export.csv?from=2025-03-01&to=2026-02-01&group_by=team,project,user",
            &viewer,
        )
        .await;
    assert_eq!(download.status, 200);
    assert!(
        download.body.len() > 4 * 64 * 1024,
        "several chunks: {} bytes",
        download.body.len()
    );
    let expected = csv(
        &pool,
        DateRange {
            from: day(2025, 3, 1),
            to: day(2026, 2, 1),
        },
        &parse_keys("team,project,user").expect("keys"),
        Granularity::Daily,
        Metric::Unblended,
    )
    .await
    .expect("csv");
    assert_eq!(download.body, expected);
    // Compressed, as a browser asks for it: the stream ends cleanly (the compression layer
    // polls the body once more after its end).
    for encoding in ["br", "gzip"] {
        let compressed = reqwest::Client::new()
            .get(app.url("/api/export.csv?from=2025-03-01&to=2026-02-01&group_by=team,project,user"))
            .header("cookie", &viewer)
            .header("accept-encoding", encoding)
            .send()
            .await
            .expect("response");
        assert_eq!(compressed.headers()["content-encoding"], encoding);
        let bytes = compressed.bytes().await.expect("the whole compressed body arrives");
        assert!(
            bytes.len() > 1000 && bytes.len() < download.body.len(),
            "{encoding}: {} bytes",
            bytes.len()
        );
    }
}

/// A SageMaker usage type says what it is; other spend is what the project declares.
#[sqlx::test]
async fn workload_is_the_sagemaker_use_else_the_declared_one(pool: PgPool) {
    let on = day(2026, 1, 1);
    let usage = vec![
        row(on, "ranker", "USE1-Train:ml.p4d.24xlarge", "300.00"),
        row(on, "ranker", "USE1-Host:ml.g5.xlarge", "20.00"),
        row(on, "ranker", "USE1-Notebk:ml.g5.2xlarge", "5.00"),
        row(on, "ranker", "USE1-BoxUsage:g5.xlarge", "40.00"),
        row(on, "scratch", "USE1-BoxUsage:g5.xlarge", "1.50"),
    ];
    // The other grains hold the same spend, one group per project.
    let per_project = |dimension: &str| {
        vec![
            row(on, "ranker", dimension, "365.00"),
            row(on, "scratch", dimension, "1.50"),
        ]
    };
    let batch = CostBatch {
        by_user: per_project("ann"),
        by_service: per_project("Amazon SageMaker"),
        by_record_type: per_project("Usage"),
        by_usage_type: usage,
        ..CostBatch::default()
    };
    write(&pool, batch).await;
    sqlx::query("update projects set workload = 'batch' where name = 'ranker'")
        .execute(&pool)
        .await
        .expect("declared");
    let csv = csv(
        &pool,
        DateRange {
            from: on,
            to: day(2026, 1, 2),
        },
        &parse_keys("project,workload").expect("keys"),
        Granularity::Daily,
        Metric::Unblended,
    )
    .await
    .expect("csv");
    assert_eq!(
        csv,
        "date,project,workload,cost\n\
         2026-01-01,ranker,batch,40.00\n\
         2026-01-01,ranker,dev,5.00\n\
         2026-01-01,ranker,serving,20.00\n\
         2026-01-01,ranker,training,300.00\n\
         2026-01-01,scratch,unknown,1.50\n"
    );
}
