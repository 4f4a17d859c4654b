//! Endpoints judged by their traffic as AWS publishes it (`tests/fixtures/seed_gpu_fleet.py
//! --traffic`): a real-time endpoint is idle only over stretches CloudWatch shows without
//! invocations at one-minute resolution; an asynchronous one by `InvocationsProcessed` and
//! `ApproximateBacklogSize`; a metric absent for the whole window is unknown, never idle;
//! serverless variants are left out, saying why.

use std::process::Command;

use sqlx::PgPool;

use super::{Line, d, day, seed_in, team};
use crate::common::cloudwatch_front::{fixture, front, python};
use crate::common::moto;
use burnrate::savings::Kind;

/// moto's account: the endpoints' ARNs name it.
const MOTO_ACCOUNT: &str = "123456789012";

#[sqlx::test]
async fn traffic_decides_idle_only_where_cloudwatch_shows_none(pool: PgPool) {
    let projects = ["pulse20", "pulse40", "silent", "drained", "serverless"];
    let mut lines = Vec::new();
    for project in projects {
        for n in 0..15 {
            lines.push(Line(project, "USE1-Host:ml.g4dn.xlarge", day(n), d("20"), d("24")));
        }
    }
    seed_in(&pool, MOTO_ACCOUNT, &lines).await;
    team(&pool, "ml", "lead@example.com", &projects).await;
    let moto = moto::start().await;
    let now = chrono::Utc::now();
    let front = front(&moto, 100_800, 0).await;
    let out = Command::new(python())
        .arg(fixture("seed_gpu_fleet.py"))
        .args(["--endpoint", &moto.direct, "--cloudwatch", &front.direct])
        .args(["--now", &now.timestamp().to_string(), "--traffic"])
        .output()
        .expect("the seeding script runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found = super::cloudwatch::insights_in_us_east_1(&pool, &front, 15, now).await;
    let kinds = |project: &str| -> Vec<Kind> {
        found
            .recommendations
            .iter()
            .filter(|r| r.project == project)
            .map(|r| r.kind)
            .collect()
    };
    let idle_kinds = [Kind::IdleEndpoint, Kind::IdleGpu, Kind::AlwaysOn];

    // Quiet the last 20 minutes of every hour, by the minute: a pause, never idle.
    let pulse20 = super::utilisation_of(&found, "pulse20");
    assert_eq!(pulse20.idle_gpu_hours, d("0"), "{pulse20:?}");
    assert!(
        !kinds("pulse20").iter().any(|k| idle_kinds.contains(k)),
        "{:?}",
        found.recommendations
    );
    // Quiet 40 minutes of every hour: those 40 minutes are idle, 8 five-minute steps an hour
    // for 48 hours = 32 GPU-hours, and nothing else.
    let pulse40 = super::utilisation_of(&found, "pulse40");
    assert_eq!(pulse40.idle_gpu_hours, d("32"), "{pulse40:?}");
    assert!(kinds("pulse40").contains(&Kind::IdleGpu));

    // No Invocations point in the whole window: unknown, so no idle row, schedule or alert,
    // and the page says why.
    assert!(
        !kinds("silent").iter().any(|k| idle_kinds.contains(k)),
        "{:?}",
        found.recommendations
    );
    assert!(
        !found.idle_now.iter().any(|i| i.project == "silent"),
        "{:?}",
        found.idle_now
    );
    let note = found.utilisation_note.clone().unwrap_or_default();
    assert!(
        note.contains("endpoint/us-east-1/silent-ep/AllTraffic is not judged: CloudWatch shows no Invocations"),
        "{note}"
    );

    // An asynchronous endpoint that processed nothing and queued nothing for 15 days is
    // idle, by the metrics AWS publishes for it.
    let drained = found
        .recommendations
        .iter()
        .find(|r| r.project == "drained" && r.kind == Kind::IdleEndpoint)
        .unwrap_or_else(|| panic!("{:?}", found.recommendations));
    assert!(drained.detail.contains("InvocationsProcessed"), "{}", drained.detail);

    // A serverless variant is left out, saying why.
    assert!(kinds("serverless").is_empty(), "{:?}", found.recommendations);
    assert!(
        note.contains("endpoint/us-east-1/serverless-ep/AllTraffic is not judged: serverless"),
        "{note}"
    );
}
