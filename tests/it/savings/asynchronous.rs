//! An asynchronous-inference endpoint: AWS publishes `InvocationsProcessed` and
//! `ApproximateBacklogSize` for it, never `Invocations`
//! (<https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html>), so one
//! busy all day with no `Invocations` gets no idle row, no schedule and no idle alert.

use sqlx::PgPool;

use super::cloudwatch::{insights_csv, settings};
use super::{Line, d, day, seed, team};
use crate::common::cloudwatch_front::{fixture, front, python};
use crate::common::moto;
use burnrate::savings::cloudwatch;
use burnrate::savings::gpu_series::Grid;

fn seed_asynchronous(endpoint: &str, cloudwatch: &str, now: i64) {
    let out = std::process::Command::new(python())
        .arg(fixture("seed_gpu_fleet.py"))
        .args(["--endpoint", endpoint, "--cloudwatch", cloudwatch])
        .args(["--now", &now.to_string(), "--asynchronous"])
        .output()
        .expect("the seeding script runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[sqlx::test]
async fn an_asynchronous_endpoint_busy_all_day_is_never_called_idle(pool: PgPool) {
    let moto = moto::start().await;
    let now = chrono::Utc::now().timestamp();
    let front = front(&moto, 100_800, 0).await;
    seed_asynchronous(&moto.direct, &front.direct, now);

    let sdk = crate::common::aws_config_at(&front.endpoint, "testing").await;
    let read = cloudwatch::read(&sdk, &settings(), Grid::ending(now, 15, 300))
        .await
        .expect("read");
    let queue = read
        .endpoints
        .iter()
        .find(|e| e.name == "queue-ep")
        .unwrap_or_else(|| panic!("{:?}", read.endpoints));
    assert!(queue.asynchronous, "{queue:?}");
    // Judged by what AWS publishes for it: 40 requests processed an hour for 14 days.
    assert_eq!(queue.recent_invocations, 40.0 * 24.0 * 14.0);
    assert!(!queue.idle_for_two_weeks(now));
    assert!(!queue.idle_off_hours());
    assert_eq!(queue.quiet_since, None);

    // Its hosting billed $20 a day for the 15 days: no saving is claimed on it.
    let lines: Vec<Line> = (0..15)
        .map(|n| Line("queue", "USE1-Host:ml.g4dn.xlarge", day(n), d("20"), d("24")))
        .collect();
    seed(&pool, &lines).await;
    team(&pool, "ml", "lead@example.com", &["queue"]).await;
    let stdout = insights_csv(&pool, &front).await;
    let kinds: Vec<&str> = stdout
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(2) == Some("queue"))
        .filter_map(|l| l.split(',').next())
        .collect();
    for idle in ["idle_endpoint", "idle_gpu", "always_on"] {
        assert!(
            !kinds.contains(&idle),
            "{idle} for a busy asynchronous endpoint:\n{stdout}"
        );
    }
}
