//! Spend anomalies on real PostgreSQL, from facts written as ingestion writes them: a spike
//! caught on its first day with the usage type that drove it, a small project's blip kept
//! quiet by the dollar floor, a new project caught on its first day, and `burnrate
//! anomalies` printing them as its CSV promises.

use burnrate::anomalies::detect::find;
use burnrate::anomalies::rule::{Reason, Thresholds};
use burnrate::anomalies::series::Scope;
use burnrate::costs::store::CostBatch;
use burnrate::period::DateRange;
use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::bills::row;
use crate::common::{self, day};

const P4D: &str = "USE1-BoxUsage:p4d.24xlarge";
const P5: &str = "USE1-BoxUsage:p5.48xlarge";
const EC2: &str = "Amazon Elastic Compute Cloud - Compute";

/// Each day of `days` for `project`: `spend` of `usage_type` by `user`, in every grain.
fn spend(batch: &mut CostBatch, days: &[NaiveDate], project: &str, usage_type: &str, user: &str, spend: &str) {
    for on in days {
        batch.by_usage_type.push(row(*on, project, usage_type, spend));
        batch.by_user.push(row(*on, project, user, spend));
        batch.by_service.push(row(*on, project, EC2, spend));
        batch.by_record_type.push(row(*on, project, "Usage", spend));
    }
}

fn d(text: &str) -> Decimal {
    text.parse().expect("decimal")
}

/// 45 days of history to 2026-11-24, then the day judged, 2026-11-25:
/// - llm-pretrain: $1,500 of p4d by bob and $500 by alice a day; on the 25th $4,000 of p5
///   (a forgotten p5 job, $3,000 of it alice's and $1,000 bob's): ×3 its usual day;
/// - tiny: $100 a day, $150 on the 25th;
/// - fresh: no history, $600 on the 25th.
async fn seed(pool: &PgPool) -> NaiveDate {
    common::import_config(
        pool,
        "teams:
  - name: ml-research
    owners: [ml@example.com]
    projects: [llm-pretrain, tiny, fresh]
",
    )
    .await;
    let judged = day(2026, 11, 25);
    let first = judged - Days::new(45);
    let history: Vec<NaiveDate> = (0..45).map(|i| first + Days::new(i)).collect();
    let mut batch = CostBatch::default();
    for on in &history {
        batch.by_usage_type.push(row(*on, "llm-pretrain", P4D, "2000"));
        batch.by_user.push(row(*on, "llm-pretrain", "bob", "1500"));
        batch.by_user.push(row(*on, "llm-pretrain", "alice", "500"));
        batch.by_service.push(row(*on, "llm-pretrain", EC2, "2000"));
        batch.by_record_type.push(row(*on, "llm-pretrain", "Usage", "2000"));
    }
    batch.by_usage_type.push(row(judged, "llm-pretrain", P4D, "2000"));
    batch.by_usage_type.push(row(judged, "llm-pretrain", P5, "4000"));
    batch.by_user.push(row(judged, "llm-pretrain", "bob", "2500"));
    batch.by_user.push(row(judged, "llm-pretrain", "alice", "3500"));
    batch.by_service.push(row(judged, "llm-pretrain", EC2, "6000"));
    batch.by_record_type.push(row(judged, "llm-pretrain", "Usage", "6000"));
    spend(&mut batch, &history, "tiny", "USE1-BoxUsage:m5.large", "carol", "100");
    spend(&mut batch, &[judged], "tiny", "USE1-BoxUsage:m5.large", "carol", "150");
    spend(&mut batch, &[judged], "fresh", "USE1-BoxUsage:g5.xlarge", "dan", "600");
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(
        &mut tx,
        DateRange {
            from: first,
            to: judged + Days::new(1),
        },
        &batch,
    )
    .await
    .expect("facts");
    tx.commit().await.expect("commit");
    judged
}

#[sqlx::test]
async fn a_spike_is_caught_on_its_first_day_and_explained_and_a_small_blip_is_not(pool: PgPool) {
    let judged = seed(&pool).await;
    let range = DateRange {
        from: judged,
        to: judged + Days::new(1),
    };
    let mut conn = pool.acquire().await.expect("connection");
    let found = find(&mut conn, Scope::Project, range, &Thresholds::default())
        .await
        .expect("found");
    let names: Vec<&str> = found.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["fresh", "llm-pretrain"], "tiny's +$50 is under the $100 floor");

    let fresh = &found[0];
    assert_eq!(
        (fresh.reason, fresh.spend, fresh.excess),
        (Reason::New, d("600"), d("600"))
    );

    // Its usual day is $2,000 every day: the baseline, and $4,000 of excess.
    let spike = &found[1];
    assert_eq!((spike.from, spike.to), (judged, judged + Days::new(1)));
    assert_eq!(spike.reason, Reason::Spike);
    assert_eq!(
        (spike.spend, spike.baseline, spike.excess),
        (d("6000"), d("2000"), d("4000"))
    );
    let driver = spike.driver.as_ref().expect("a driver");
    // p5 rose by all of it ($0 a day before); alice by $3,000, bob by $1,000. (Its instance
    // type rose by as much as the usage type: on a tie the usage type is named.)
    assert_eq!((driver.label(), driver.excess), (format!("usage_type:{P5}"), d("4000")));

    // The team's allocated spend (all three projects) rose with them.
    let teams = find(&mut conn, Scope::Team, range, &Thresholds::default())
        .await
        .expect("teams");
    let team: Vec<(&str, Decimal)> = teams.iter().map(|a| (a.name.as_str(), a.excess)).collect();
    assert_eq!(team, [("ml-research", d("4650"))]);
}

#[sqlx::test]
async fn burnrate_anomalies_prints_the_csv_it_promises(pool: PgPool) {
    let judged = seed(&pool).await;
    let database = common::database_url(&pool).await;
    let anomalies = |scope: &str| {
        common::burnrate_command(&database)
            .args([
                "anomalies",
                "--from",
                "2026-11-25",
                "--to",
                "2026-11-26",
                "--scope",
                scope,
            ])
            .output()
            .expect("ran")
    };
    let output = anomalies("project,user");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let csv = String::from_utf8(output.stdout).expect("utf-8");
    assert_eq!(
        csv,
        format!(
            "from,to,scope,name,spend,baseline,excess,driver,driver_excess\n\
             {judged},2026-11-26,project,fresh,600,0,600,usage_type:USE1-BoxUsage:g5.xlarge,600\n\
             {judged},2026-11-26,project,llm-pretrain,6000,2000,4000,usage_type:{P5},4000\n\
             {judged},2026-11-26,user,alice,3500,500,3000,,\n\
             {judged},2026-11-26,user,bob,2500,1500,1000,,\n\
             {judged},2026-11-26,user,dan,600,0,600,,\n"
        )
    );
    let bad = anomalies("region");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--scope: unknown scope \"region\""),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
