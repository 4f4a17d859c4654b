//! The demo's dry-run stops show what a stop would touch, without AWS: each open proposal
//! gets a listing as discovery records one, with the skipped resources and their reasons
//! from the same rules (instance store, a controller's tag). With AWS settings, `serve`'s
//! lister replaces it with what the account really runs.

use chrono::{Duration, Utc};
use sqlx::PgPool;

use crate::enforcement::resources::discover::managed_by;
use crate::enforcement::resources::instance_store::erasing;
use crate::enforcement::resources::{Found, Kind, store};

/// The region the demo's resources run in.
const REGION: &str = "us-east-1";

/// Lists every open dry-run resource stop that has no listing yet; returns how many.
pub async fn record(pool: &PgPool) -> Result<usize, sqlx::Error> {
    let open: Vec<(i64, String)> = sqlx::query_as(
        "select a.id, v.project from enforcement_actions a join violations v on v.id = a.violation_id
         where a.action = 'stop' and a.status = 'proposed' and a.mode = 'dry-run'
           and not exists (select 1 from enforcement_resources r where r.action_id = a.id)
         order by a.id",
    )
    .fetch_all(pool)
    .await?;
    let mut tx = pool.begin().await?;
    for (id, project) in &open {
        store::record_listing(&mut tx, *id, &resources(project), Duration::zero()).await?;
    }
    tx.commit().await?;
    Ok(open.len())
}

/// What the demo says `project` runs: a training box a stop would stop, a notebook, an
/// instance whose NVMe data a stop would erase and one a Karpenter node pool runs (both left
/// running, with why). IDs are stable per project.
fn resources(project: &str) -> Vec<Found> {
    let seed = project.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let now = Utc::now();
    let found = |kind, id: String, instance_type: &str, days: i64, user: &str| Found {
        account: String::new(),
        region: REGION.into(),
        kind,
        id,
        instance_type: instance_type.into(),
        instances: 1,
        launched_at: Some(now - Duration::days(days)),
        user: Some(user.into()),
        skip: None,
        warning: None,
        tags: Vec::new(),
        restore_from: None,
    };
    let instance = |n: u64| format!("i-0{:016x}", seed.wrapping_add(n) & 0x0fff_ffff_ffff_ffff);
    let karpenter = |key: &str| (key == "karpenter.sh/nodepool").then(|| "gpu-training".to_string());
    vec![
        found(Kind::Ec2, instance(1), "p3.8xlarge", 3, "ana@example.com"),
        Found {
            skip: erasing(8000, false).0,
            ..found(Kind::Ec2, instance(2), "p4d.24xlarge", 9, "ben@example.com")
        },
        Found {
            skip: managed_by(karpenter, &[]),
            ..found(Kind::Ec2, instance(3), "g5.12xlarge", 1, "ana@example.com")
        },
        found(
            Kind::Notebook,
            format!("lab-{:06x}", seed & 0xff_ffff),
            "ml.g5.xlarge",
            14,
            "chen@example.com",
        ),
    ]
}
