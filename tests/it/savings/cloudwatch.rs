//! Utilisation from CloudWatch with the real AWS SDK on the wire. moto holds the EC2
//! instances, SageMaker endpoints and metrics, seeded with boto3 (`PutMetricData` and the
//! rest) by `tests/fixtures/seed_gpu_fleet.py`. aws-sdk-cloudwatch speaks Smithy RPC v2 CBOR,
//! which moto 5.2.5 lacks, so `tests/fixtures/cloudwatch_rpcv2.py` fronts moto: it translates
//! the protocol, pages `GetMetricData` as AWS documents (moto returns every point at once),
//! lists each metric once, and can throttle; other services pass through to moto.

use std::process::Command;

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{Line, d, day, seed, team};
use crate::common::cloudwatch_front::{Front, fixture, front, python};
use crate::common::moto::{self, Moto};
use crate::common::{aws_config_at, burnrate_command, database_url};
use burnrate::config::CloudWatchSettings;
use burnrate::savings::Kind;
use burnrate::savings::cloudwatch;
use burnrate::savings::gpu_series::Grid;
use burnrate::savings::insights::{self, Sources};
use burnrate::savings::model::Decision;

/// Seeds moto's fleet, and its metrics in the front, as of `now`; returns (vision, batch)
/// instance IDs.
fn seed_fleet(moto: &Moto, front: &Front, now: i64) -> (String, String) {
    let out = Command::new(python())
        .arg(fixture("seed_gpu_fleet.py"))
        .args([
            "--endpoint",
            &moto.direct,
            "--cloudwatch",
            &front.direct,
            "--now",
            &now.to_string(),
        ])
        .output()
        .expect("the seeding script runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ids: serde_json::Value = serde_json::from_slice(&out.stdout).expect("instance IDs");
    (
        ids["vision"].as_str().unwrap_or_default().to_string(),
        ids["batch"].as_str().unwrap_or_default().to_string(),
    )
}

pub(super) fn settings() -> CloudWatchSettings {
    CloudWatchSettings {
        regions: vec!["us-east-1".into(), "us-west-2".into()],
        project_tag: "project".into(),
        timeout: std::time::Duration::from_secs(120),
    }
}

#[tokio::test]
async fn endpoints_and_agent_gpus_are_read_across_two_regions_through_every_page() {
    let moto = moto::start().await;
    let now = chrono::Utc::now().timestamp();
    let front = front(&moto, 500, 0).await;
    let (vision, batch) = seed_fleet(&moto, &front, now);
    // 500 points a page: us-east-1's 2,173 points (360 × 3 for chat-ep, 180 for idle-ep,
    // 360 × 2 for multi-ep, 96 × 2 + 1 for vision) take five pages; us-west-2's 913 (96 × 2
    // + 1 for batch, 360 × 2 for its chat-ep) two.
    let sdk = aws_config_at(&front.endpoint, "testing").await;
    let grid = Grid::ending(now, 15, 300);
    let read = cloudwatch::read(&sdk, &settings(), grid).await.expect("read");

    let endpoint = |name: &str| {
        read.endpoints
            .iter()
            .find(|e| e.name == name && e.region == "us-east-1")
            .unwrap_or_else(|| panic!("{name}: {:?}", read.endpoints))
    };
    let chat = endpoint("chat-ep");
    assert_eq!(
        (chat.project.as_deref(), chat.instance_type.as_str(), chat.instances),
        (Some("chat"), "ml.g4dn.xlarge", 1)
    );
    assert_eq!(
        chat.recent_invocations,
        2.0 * 14.0 * 1440.0,
        "Sum over the last 14 days, two a minute"
    );
    assert!(!chat.idle_for_two_weeks(now));
    // Traffic every minute, nights and weekends too: every off-hours step of a week (108 h
    // of 12 steps) or more is busy, so no business-hours schedule for it.
    assert!(chat.off_hours_busy >= 108 * 12, "{chat:?}");
    assert!(!chat.idle_off_hours());
    let idle = endpoint("idle-ep");
    assert_eq!(idle.recent_invocations, 0.0);
    assert!(
        idle.idle_for_two_weeks(now),
        "zero invocations every minute while it ran 15 days: {idle:?}"
    );
    assert!(idle.quiet_since.is_some_and(|t| t <= now - 14 * 86_400));
    // 15 days hold more than a week of off-hours (108 h), all without an invocation.
    assert!(idle.off_hours_seen >= 108 && idle.idle_off_hours(), "{idle:?}");

    let gpu = |host: &str| {
        read.series
            .gpus
            .iter()
            .find(|(g, _)| g.host == host)
            .unwrap_or_else(|| panic!("{host}: {:?}", read.series.gpus.keys()))
    };
    let (vision_gpu, vision_reading) = gpu(&vision);
    assert_eq!(
        vision_gpu.project.as_deref(),
        Some("vision"),
        "the instance's project tag"
    );
    assert_eq!(vision_reading.means.memory_total_mib, Some(23028.0));
    assert_eq!(vision_reading.means.peak_memory_used_mib, Some(14336.0));
    // CloudWatch labels a period by its start; the grid labels a step by its end. The newest
    // point (in the period just before now) is the grid's last step, and 96 points fill
    // exactly the last 96 steps.
    let steps = &vision_reading.activity;
    assert_eq!(steps.iter().filter(|v| !v.is_nan()).count(), 96, "8 hours of steps");
    assert!(!steps[grid.steps - 1].is_nan() && !steps[grid.steps - 96].is_nan());
    assert!(steps[grid.steps - 97].is_nan());
    let (batch_gpu, batch_reading) = gpu(&batch);
    assert_eq!(batch_gpu.project.as_deref(), Some("batch"), "found in us-west-2");
    assert_eq!(batch_reading.means.gpu_util, Some(80.0));
    // Endpoint GPU utilisation is per GPU in percent (g4dn.xlarge has one T4).
    let (chat_gpu, chat_reading) = gpu("endpoint us-east-1/chat-ep/AllTraffic");
    assert_eq!(chat_gpu.project.as_deref(), Some("chat"));
    assert_eq!(chat_reading.means.gpu_util, Some(30.0));
    assert_eq!(
        chat_reading.resource.as_deref(),
        Some("endpoint/us-east-1/chat-ep/AllTraffic")
    );
    // The same endpoint name in another region is another endpoint.
    let (west_gpu, west_reading) = gpu("endpoint us-west-2/chat-ep/AllTraffic");
    assert_eq!(west_gpu.project.as_deref(), Some("chat-west"));
    assert_eq!(west_reading.means.gpu_util, Some(45.0));
    // 0–100 × the instance's GPUs: 200 on a g4dn.12xlarge (4 T4s) is 50 % each, for 4 GPUs.
    let (_, multi_reading) = gpu("endpoint us-east-1/multi-ep/AllTraffic");
    assert_eq!((multi_reading.gpus, multi_reading.means.gpu_util), (4, Some(50.0)));
    assert_eq!(endpoint("multi-ep").gpus_per_instance, 4);

    // Per region one batch over the whole grid (12 and 6 queries fit 100,800 points) and one
    // by the minute over the last 15 days less an hour, each followed through pages of 500
    // points; CloudWatch bills every query of every page.
    // - us-east-1, whole grid: the agent GPU's 96 + 96 + 1 points; chat-ep's GPU 360, memory
    //   360 and five-minute Invocations 4,321 (15 days of minutes, the oldest in the period
    //   before the grid's first step); idle-ep's 180 + 4,321; multi-ep's 360 + 4,321: 14,416
    //   points, 29 pages of 12 queries.
    // - us-east-1 by the minute: 3 endpoints × 21,540 minutes (15 days less the hour, the
    //   last minute ending at the grid's end) = 64,620 points, 130 pages of 3 queries.
    // - us-west-2: 193 + 360 + 4,321 = 4,874 points, 10 pages of 6; by the minute 21,540, 44
    //   pages of 1.
    assert_eq!(read.get_metric_data_calls, 29 + 130 + 10 + 44, "pages followed");
    assert_eq!(read.metrics_requested, 29 * 12 + 130 * 3 + 10 * 6 + 44);

    // Read a step later, CloudWatch has nothing yet for the newest five minutes (its points
    // arrive late): the endpoint's quiet stretch still runs to now.
    let later = cloudwatch::read(&sdk, &settings(), Grid::ending(now + 300, 15, 300))
        .await
        .expect("read");
    let idle_later = later.endpoints.iter().find(|e| e.name == "idle-ep").expect("idle-ep");
    assert!(idle_later.idle_for_two_weeks(now + 300), "{idle_later:?}");
}

#[tokio::test]
async fn throttling_on_every_third_call_still_reads_everything() {
    let moto = moto::start().await;
    let now = chrono::Utc::now().timestamp();
    let front = front(&moto, 100_800, 3).await;
    seed_fleet(&moto, &front, now);
    // As burnrate's own configuration: SDK retries off, so only the reader's own retry
    // settings can carry it through.
    let sdk = aws_config_at(&front.endpoint, "testing")
        .await
        .to_builder()
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .build();
    let read = cloudwatch::read(&sdk, &settings(), Grid::ending(now, 15, 300))
        .await
        .expect("throttled calls are retried with backoff");
    assert_eq!(read.endpoints.len(), 4);
    assert_eq!(read.series.gpus.len(), 6, "two agent GPUs and four endpoint variants");
    assert!(read.failed_regions.is_empty());
}

/// Fifteen settled days of each project's GPU spend.
/// `burnrate insights --days 15` with CloudWatch read through `front`: its CSV, the command
/// having succeeded.
pub(super) async fn insights_csv(pool: &PgPool, front: &Front) -> String {
    let mut command = burnrate_command(&database_url(pool).await);
    command
        .args(["insights", "--days", "15"])
        .env("BURNRATE_CLOUDWATCH", "on")
        .env("BURNRATE_AWS_REGIONS", "us-east-1,us-west-2")
        .env("AWS_ENDPOINT_URL", &front.endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing");
    let out = tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// 15 days of each project's GPU spend; chat-idle's hosting in moto's account, whose
/// endpoints the read sees (traffic read there judges only that account's spend).
fn billing() -> Vec<(&'static str, Line<'static>)> {
    let (ours, moto) = ("111122223333", "123456789012");
    let each_day = [
        (ours, "chat", "USE1-Host:ml.g4dn.xlarge", "17.6736"),
        (moto, "chat-idle", "USE1-Host:ml.g4dn.xlarge", "20"),
        (ours, "vision", "USE1-BoxUsage:g5.xlarge", "24.144"),
        (ours, "batch", "USW2-BoxUsage:g5.xlarge", "24.144"),
    ];
    (0..15)
        .flat_map(|n| {
            each_day.iter().map(move |(account, project, usage_type, cost)| {
                (*account, Line(project, usage_type, day(n), d(cost), d("24")))
            })
        })
        .collect()
}

#[sqlx::test]
async fn insights_from_cloudwatch_price_the_idle_endpoint_and_idle_gpu(pool: PgPool) {
    super::seed_accounts(&pool, &billing()).await;
    team(
        &pool,
        "ml",
        "lead@example.com",
        &["chat", "chat-idle", "vision", "batch"],
    )
    .await;
    let moto = moto::start().await;
    let now = chrono::Utc::now().timestamp();
    let front = front(&moto, 100_800, 0).await;
    seed_fleet(&moto, &front, now);
    let stdout = insights_csv(&pool, &front).await;
    let rows: Vec<Vec<String>> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let find = |kind: &str, project: &str| {
        rows.iter()
            .find(|r| r[0] == kind && r[2] == project)
            .unwrap_or_else(|| panic!("{kind} {project} in\n{stdout}"))
    };
    let saving = |row: &Vec<String>| -> Decimal { row[9].parse().expect("monthly_saving") };
    // The idle endpoint's whole cost: 1 × ml.g4dn.xlarge at $0.7364 × 720 hours.
    let idle_endpoint = find("idle_endpoint", "chat-idle");
    assert_eq!(saving(idle_endpoint), d("530.21"));
    assert_eq!(idle_endpoint[1], "ml");
    // Vision's GPU idle its last 8 hours: 8 GPU-hours at $1.006, scaled from 15 days to 30.
    let idle_gpu = find("idle_gpu", "vision");
    let (low, high) = (d("7.9") * d("1.006") * d("2"), d("8.1") * d("1.006") * d("2"));
    assert!(saving(idle_gpu) >= low && saving(idle_gpu) <= high, "{idle_gpu:?}");
    assert!(
        !rows.iter().any(|r| r[2] == "batch"),
        "80 % busy is neither idle nor underused:\n{stdout}"
    );
    // Its schedule row compounds after it: both together stay within the hosting spend
    // ($20 a day, $600 per 30 days), and the schedule says what it was counted after.
    let schedule = find("always_on", "chat-idle");
    assert!(
        schedule[10..].join(",").contains("counted after idle_endpoint"),
        "{schedule:?}"
    );
    assert!(saving(idle_endpoint) + saving(schedule) <= d("600"), "{stdout}");
    assert!(
        schedule[10..]
            .join(",")
            .contains("CloudWatch saw no request to idle-ep"),
        "{schedule:?}"
    );
    // The endpoint serving traffic at night and at weekends runs around the clock too, and
    // is never told to keep business hours.
    assert!(
        !rows.iter().any(|r| r[0] == "always_on" && r[2] == "chat"),
        "a production endpoint with off-hours traffic gets no schedule:\n{stdout}"
    );
    assert!(
        !rows
            .iter()
            .any(|r| r[2] == "chat-idle" && matches!(r[0].as_str(), "idle_gpu" | "underused")),
        "an idle endpoint's GPUs are not judged again:\n{stdout}"
    );

    // It can be accepted like any recommendation, and the ledger measures the project's
    // hosting on that type: $20 a day over the 15 days.
    let sdk = aws_config_at(&front.endpoint, "testing").await;
    let settings = settings();
    let sources = Sources {
        prometheus: None,
        cloudwatch: Some(&settings),
        aws: Some(&sdk),
    };
    let found = insights::compute(&pool, 15, sources, chrono::Utc::now())
        .await
        .expect("insights");
    let idle = found
        .recommendations
        .iter()
        .find(|r| r.kind == Kind::IdleEndpoint)
        .expect("idle endpoint");
    assert_eq!(idle.host, "endpoint/us-east-1/idle-ep/AllTraffic");
    let mut tx = pool.begin().await.expect("tx");
    let actor = burnrate::audit_log::Actor::system("test");
    burnrate::savings::store::decide(&mut tx, &actor, idle, Decision::Accepted, "deleting it", (day(20), 0))
        .await
        .expect("an idle endpoint is accepted");
    tx.commit().await.expect("commit");
    let mut conn = pool.acquire().await.expect("connection");
    let accepted = burnrate::savings::store::accepted(&mut conn).await.expect("accepted");
    let cells = burnrate::savings::store::measured_cells(&mut conn, &accepted[0], day(0), day(15))
        .await
        .expect("cells");
    let measured = burnrate::savings::store::cells_spend(&mut conn, &cells, false, day(0), day(15))
        .await
        .expect("measured");
    assert_eq!(measured, d("300"));
}

/// The insights over `days` with CloudWatch read in us-east-1 through `front`, afresh.
pub(super) async fn insights_in_us_east_1(
    pool: &PgPool,
    front: &Front,
    days: u32,
    now: chrono::DateTime<chrono::Utc>,
) -> insights::Insights {
    let sdk = aws_config_at(&front.endpoint, "testing").await;
    let settings = CloudWatchSettings {
        regions: vec!["us-east-1".into()],
        project_tag: "project".into(),
        timeout: std::time::Duration::from_secs(120),
    };
    let sources = Sources {
        prometheus: None,
        cloudwatch: Some(&settings),
        aws: Some(&sdk),
    };
    insights::compute(pool, days, sources, now).await.expect("insights")
}

/// Seeds one agent GPU per workload shape (tests/fixtures/seed_gpu_fleet.py --shapes).
fn seed_shapes(moto: &Moto, front: &Front, now: i64) {
    let out = Command::new(python())
        .arg(fixture("seed_gpu_fleet.py"))
        .args(["--endpoint", &moto.direct, "--cloudwatch", &front.direct])
        .args(["--now", &now.to_string(), "--shapes"])
        .output()
        .expect("the seeding script runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[sqlx::test]
async fn each_workload_shape_read_from_cloudwatch_gets_its_verdict(pool: PgPool) {
    // Three settled days of each shape's project on one GPU at $1.006 an hour.
    let mut lines = Vec::new();
    for project in [
        "bursty_serving",
        "spinning_kernel",
        "resident_idle",
        "training",
        "nightly_idle",
    ] {
        for n in 0..3 {
            lines.push(Line(project, "USE1-BoxUsage:g5.xlarge", day(n), d("24.144"), d("24")));
        }
    }
    seed(&pool, &lines).await;
    super::declare(&pool, "training", "training", None).await;
    let moto = moto::start().await;
    let now = chrono::Utc::now();
    let front = front(&moto, 100_800, 0).await;
    seed_shapes(&moto, &front, now.timestamp());
    let found = insights_in_us_east_1(&pool, &front, 30, now).await;
    assert_eq!(found.utilisation_note, None);
    let project = |name: &str| super::utilisation_of(&found, name);
    let rows = |kind: Kind, name: &str| {
        found
            .recommendations
            .iter()
            .filter(|r| r.kind == kind && r.project == name)
            .count()
    };
    // CloudWatch's five-minute Average of the agent's one-minute samples: 18 %, underused.
    let bursty = project("bursty_serving");
    assert!(bursty.mean >= d("16") && bursty.mean <= d("20.5"), "{bursty:?}");
    assert_eq!(bursty.judged_by, "GPU util");
    // Underused, but its one GPU cannot be given back in part: no row.
    assert_eq!(rows(Kind::Underused, "bursty_serving"), 0);
    // The agent publishes no SM activity: the spinning kernel honestly reads busy.
    let spinning = project("spinning_kernel");
    assert_eq!(spinning.mean, d("100"));
    assert_eq!(spinning.busy_but_ineffective, 0);
    assert!(spinning.band.starts_with("scale out"), "{}", spinning.band);
    // Resident but idle is idle: 6 hours of it, 14 GB in memory.
    let resident = project("resident_idle");
    assert_eq!(resident.idle_gpu_hours, d("6"), "{resident:?}");
    assert_eq!(resident.peak_memory_used_mib, Some(d("14336")));
    assert_eq!(rows(Kind::IdleGpu, "resident_idle"), 1);
    assert_eq!(rows(Kind::Underused, "resident_idle"), 0, "idle is not also underused");
    // Training at 98 % is healthy against the 70 % target.
    assert!(project("training").band.starts_with("healthy for training"));
    assert_eq!(rows(Kind::Underused, "training") + rows(Kind::IdleGpu, "training"), 0);
    // Idle 8 hours a night for three nights: 24 idle GPU-hours, idle now.
    let nightly = project("nightly_idle");
    assert_eq!(nightly.idle_gpu_hours, d("24"), "{nightly:?}");
    assert_eq!(nightly.idle_gpus_now, 1);
    assert!(found.idle_now.iter().any(|i| i.project == "nightly_idle"));
}
