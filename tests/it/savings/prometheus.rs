//! Utilisation from a real Prometheus (the Debian package, started here on loopback),
//! loaded with DCGM exporter series through `promtool tsdb create-blocks-from openmetrics`.
//! The series come from `tests/fixtures/dcgm_workloads.py`, one GPU per workload shape
//! measured on a real H100 (bursty serving, a spinning kernel, a resident idle model, bf16
//! training, a cluster idle every night, memory pressure).

use std::time::Duration;

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{d, daily, declare, seed, team};
use crate::common::prometheus::{start, workloads};
use burnrate::config::PrometheusSettings;
use burnrate::savings::insights::{Insights, Sources};
use burnrate::savings::model::ActivityMetric;
use burnrate::savings::{Kind, Recommendation};

fn prometheus_only(settings: &PrometheusSettings) -> Sources<'_> {
    Sources {
        prometheus: Some(settings),
        cloudwatch: None,
        aws: None,
    }
}

/// Ten days of one GPU a day around the clock at $1.006/h (an ml.g5.xlarge-like rate), so
/// each project's $ per GPU-hour is 1.006.
fn one_gpu(project: &'static str) -> Vec<super::Line<'static>> {
    daily(project, "USE1-BoxUsage:g5.xlarge", 0, 10, "24.144", "24")
}

fn rows(found: &Insights, kind: Kind, project: &str) -> Vec<Recommendation> {
    found
        .recommendations
        .iter()
        .filter(|r| r.kind == kind && r.project == project)
        .cloned()
        .collect()
}

fn within(value: Decimal, low: Decimal, high: Decimal) -> bool {
    value >= low && value <= high
}

#[sqlx::test]
async fn each_workload_shape_gets_the_verdict_its_counters_support(pool: PgPool) {
    let mut lines = Vec::new();
    for project in ["chat", "stuck", "stuck-util", "trainer", "cluster", "llm"] {
        lines.extend(one_gpu(project));
    }
    // The notebook's project bills 8 GPUs 10 hours a day (800 GPU-hours at $2.7447), but
    // only one of its GPUs reports, for 6 hours.
    lines.extend(daily("notebook", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"));
    seed(&pool, &lines).await;
    declare(&pool, "chat", "serving", None).await;
    declare(&pool, "trainer", "training", None).await;
    team(
        &pool,
        "ml",
        "lead@example.com",
        &["chat", "trainer", "notebook", "cluster"],
    )
    .await;

    let end = chrono::Utc::now().timestamp() - 5;
    let shapes = [
        ("bursty_serving", "chat"),
        ("spinning_kernel", "stuck"),
        ("spinning_kernel_util_only", "stuck-util"),
        ("resident_idle", "notebook"),
        ("training", "trainer"),
        ("nightly_idle", "cluster"),
        ("vram_pressure", "llm"),
    ];
    let prometheus = start(workloads(end, &shapes)).await;
    let settings = PrometheusSettings {
        url: format!("http://127.0.0.1:{}", prometheus.port),
        project_label: "project".into(),
        timeout: Duration::from_secs(60),
    };
    let found = burnrate::savings::insights::compute(&pool, 30, prometheus_only(&settings), chrono::Utc::now())
        .await
        .expect("insights");
    assert_eq!(found.utilisation_note, None);
    let project = |name: &str| super::utilisation_of(&found, name);
    let gpu = |name: &str| {
        found
            .gpus
            .iter()
            .find(|g| g.project == name)
            .unwrap_or_else(|| panic!("{name}: {:?}", found.gpus))
            .clone()
    };
    let rate = d("1.006");
    // The billing window and the utilisation range are 10 days: savings scale by 3.
    let scale = d("3");

    // Bursty serving: point samples are 0 or 99, but the five-minute step means sit near
    // 18 %, so even the p95 of steps is far below 40 %: underused, by GPU_UTIL.
    let chat = project("chat");
    assert!(within(chat.mean, d("16"), d("20.5")), "{chat:?}");
    assert!(chat.p95 < d("40"), "step means, not point samples: {chat:?}");
    assert_eq!(chat.judged_by, "GPU util");
    assert!(chat.band.starts_with("overprovisioned"), "{}", chat.band);
    assert_eq!(
        chat.idle_gpu_hours,
        Decimal::ZERO,
        "bursts every few minutes are not idle"
    );
    // Underused, but one GPU: nothing can be given back whole (a fraction of a GPU is no
    // saving), so no underused row; the verdict above says it.
    assert!(rows(&found, Kind::Underused, "chat").is_empty());

    // The spinning kernel: busy but ineffective where SM activity is published, with both
    // figures; honestly busy where only GPU_UTIL is.
    let stuck = gpu("stuck");
    assert_eq!(stuck.judged_by, ActivityMetric::SmActive);
    assert!(stuck.busy_but_ineffective);
    assert_eq!(
        (stuck.gpu_util_mean, stuck.sm_active_mean),
        (Some(d("100")), Some(d("0.8")))
    );
    assert_eq!(stuck.busy_but_ineffective_figures, Some((d("99"), d("0.8"))));
    assert!(
        stuck
            .verdict
            .contains("busy but ineffective: kernels running 99.0% of the time, SM activity 0.8%"),
        "{}",
        stuck.verdict
    );
    assert_eq!(stuck.idle_hours, Decimal::ZERO, "a kernel ran: not idle");
    assert!(
        rows(&found, Kind::Underused, "stuck").is_empty(),
        "underused by SM activity, but its one GPU cannot be given back in part"
    );
    let util_only = gpu("stuck-util");
    assert_eq!(util_only.judged_by, ActivityMetric::GpuUtil);
    assert!(!util_only.busy_but_ineffective);
    assert_eq!(util_only.mean, d("100"));
    assert!(project("stuck-util").band.starts_with("scale out"));
    assert!(rows(&found, Kind::Underused, "stuck-util").is_empty());
    assert!(rows(&found, Kind::IdleGpu, "stuck-util").is_empty());

    // A 14 GB model resident with no work is idle: memory in use is not use.
    let notebook = gpu("notebook");
    assert_eq!(notebook.peak_memory_used_mib, Some(d("14336")));
    assert!(within(notebook.idle_hours, d("5.9"), d("6.1")), "{notebook:?}");
    assert!(notebook.idle_since.is_some(), "idle now");
    // One idle GPU reporting for a project with eight billed: the saving is its own idle
    // hours at the project's $ per GPU-hour, counted once, and the coverage says so.
    let idle = rows(&found, Kind::IdleGpu, "notebook");
    assert_eq!(idle.len(), 1);
    let notebook_rate = d("219.576") / d("80");
    let (low, high) = (d("5.9") * notebook_rate * scale, d("6.1") * notebook_rate * scale);
    assert!(
        within(idle[0].monthly_saving, low, high),
        "{idle:?} not in {low}..{high}"
    );
    assert!(
        rows(&found, Kind::Underused, "notebook").is_empty(),
        "idle is not also underused"
    );
    let coverage = project("notebook").coverage.expect("billed");
    assert!(
        within(coverage, d("0.7"), d("0.8")),
        "about 6 of 800 GPU-hours: {coverage}"
    );

    // bf16 GEMM training: healthy against seed 003's 70 % target, judged by SM activity.
    let trainer = project("trainer");
    assert_eq!(trainer.judged_by, "SM activity");
    assert_eq!(trainer.mean, d("95"));
    assert!(trainer.band.starts_with("healthy for training"), "{}", trainer.band);
    assert_eq!(gpu("trainer").tensor_active_mean, Some(d("92")));
    assert!(rows(&found, Kind::Underused, "trainer").is_empty());
    assert!(rows(&found, Kind::IdleGpu, "trainer").is_empty());

    // Idle 8 hours each night for 3 days: those 24 hours count, not only the last half hour.
    let cluster = gpu("cluster");
    assert!(within(cluster.idle_hours, d("23.75"), d("24.25")), "{cluster:?}");
    let idle = rows(&found, Kind::IdleGpu, "cluster");
    let (low, high) = (d("23.75") * rate * scale, d("24.25") * rate * scale);
    assert!(
        within(idle[0].monthly_saving, low, high),
        "{idle:?} not in {low}..{high}"
    );
    assert!(
        rows(&found, Kind::Underused, "cluster").is_empty(),
        "80 % by day is not underused"
    );

    // Memory above 85 % for an hour is a risk, not a saving.
    let llm = gpu("llm");
    assert!(within(llm.memory_pressure_hours, d("0.9"), d("1.1")), "{llm:?}");
    assert!(llm.verdict.contains("memory above 85 %"), "{}", llm.verdict);
    assert!(found.recommendations.iter().all(|r| r.project != "llm"));

    // An unlabelled host is priced at the organisation's rate, under its own key.
    let host = found
        .recommendations
        .iter()
        .find(|r| r.kind == Kind::IdleGpu && r.host == "orphan-1")
        .expect("unmapped host");
    assert!(host.detail.contains("unmapped host orphan-1"));
    assert!(host.project.is_empty());

    // Never more than the spend: each project's utilisation rows stay within its GPU spend.
    for u in &found.utilisation {
        let saved: Decimal = found
            .recommendations
            .iter()
            .filter(|r| r.project == u.project && matches!(r.kind, Kind::IdleGpu | Kind::Underused))
            .map(|r| r.monthly_saving)
            .sum();
        if let Some(billed) = u.billed_gpu_hours {
            let spend = billed * u.usd_per_gpu_hour.expect("rate") * scale;
            assert!(saved <= spend, "{}: {saved} > {spend}", u.project);
        }
    }

    // An unreachable Prometheus leaves the billing rules working and says why.
    drop(prometheus);
    let found = burnrate::savings::insights::compute(&pool, 30, prometheus_only(&settings), chrono::Utc::now())
        .await
        .expect("insights without utilisation");
    assert!(
        found
            .utilisation_note
            .is_some_and(|n| n.contains("could not be reached"))
    );
    assert!(found.recommendations.iter().any(|r| r.kind == Kind::Spot));
}
