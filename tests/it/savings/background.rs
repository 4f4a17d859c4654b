//! The recommendations are computed in the background, once per data version (#54): after a
//! change a request is answered at once from the last complete set, marked as being computed
//! again, and a later one from the new set.

use std::time::Duration;

use sqlx::PgPool;

use super::{Line, d, day, declare, seed};
use burnrate::page_data::{PageDataCache, Wait};
use burnrate::savings::Kind;
use burnrate::savings::service::latest_insights;

/// `cost` a day, 24 hours, on `usage_type`, for `days` days from `first`.
fn lines<'a>(project: &'a str, usage_type: &'a str, first: u32, days: u32, cost: &str) -> Vec<Line<'a>> {
    (first..first + days)
        .map(|n| Line(project, usage_type, day(n), d(cost), d("24")))
        .collect()
}

#[sqlx::test]
async fn a_change_is_answered_from_the_last_set_while_the_next_is_computed(pool: PgPool) {
    seed(&pool, &lines("trainer", "USE1-BoxUsage:g5.xlarge", 0, 30, "24.144")).await;
    declare(&pool, "trainer", "training", None).await;
    let cache = PageDataCache::default();
    let config = burnrate::config::Config::from_lookup(|_| None).expect("config");
    let latest = || latest_insights(&pool, &cache, &config, chrono::Utc::now());
    let has_spot = |set: &burnrate::savings::insights::Insights, project: &str| {
        set.recommendations
            .iter()
            .any(|r| r.kind == Kind::Spot && r.project == project)
    };

    // The first set after a start is waited for.
    let first = latest().await.expect("first set");
    assert!(first.current);
    assert!(has_spot(&first.value, "trainer"));
    assert!(!has_spot(&first.value, "tuner"));

    // Spend moves: the next request gets the same set at once, marked as being recomputed.
    // (`seed` rewrites the window: both projects' lines.)
    let both = [
        lines("trainer", "USE1-BoxUsage:g5.xlarge", 0, 30, "24.144"),
        lines("tuner", "USE1-BoxUsage:g5.2xlarge", 0, 30, "29.088"),
    ]
    .concat();
    seed(&pool, &both).await;
    declare(&pool, "tuner", "training", None).await;
    let stale = latest().await.expect("stale set");
    assert!(!stale.current);
    assert!(
        std::sync::Arc::ptr_eq(&stale.value, &first.value),
        "the last complete set"
    );
    assert_eq!(stale.computed_at, first.computed_at);

    // The new set arrives without anyone waiting for it (polled, bounded: no timing asserted).
    let mut fresh = None;
    for _ in 0..600 {
        let now = latest().await.expect("set");
        if now.current {
            fresh = Some(now);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fresh = fresh.expect("the set of the current data");
    let kinds: Vec<(Kind, String)> = fresh
        .value
        .recommendations
        .iter()
        .map(|r| (r.kind, r.project.clone()))
        .collect();
    assert!(
        has_spot(&fresh.value, "tuner") && has_spot(&fresh.value, "trainer"),
        "{kinds:?}"
    );
    assert!(fresh.computed_at >= first.computed_at);
    // And it stays the answer while nothing moves.
    let again = latest().await.expect("set");
    assert!(again.current && std::sync::Arc::ptr_eq(&again.value, &fresh.value));

    // After one's own change (tuner declared serving now: no spot), the set of it is waited for, so
    // the page reloaded next shows it at once.
    declare(&pool, "tuner", "serving", None).await;
    burnrate::savings::service::settle_insights(&pool, &cache, &config)
        .await
        .expect("settled");
    let settled = latest().await.expect("set");
    assert!(settled.current);
    assert!(has_spot(&settled.value, "trainer") && !has_spot(&settled.value, "tuner"));
}

/// The cache under the set, with computations of our own: a first view that is not ready
/// within its wait gets nothing (and the computation goes on), a failed computation is tried
/// again by the next caller, and one computation runs per key however many ask.
#[sqlx::test]
async fn the_first_set_is_waited_for_within_bounds_and_a_failure_is_tried_again(pool: PgPool) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cache = PageDataCache::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let slow = |runs: Arc<AtomicUsize>, fail: bool| {
        move || {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                match fail {
                    true => Err(sqlx::Error::Protocol("a failure of the test's own".into())),
                    false => Ok(42u32),
                }
            }
        }
    };
    // Not ready within no wait at all: nothing, and the computation is under way; asked again
    // while it runs: nothing, and no second computation.
    for _ in 0..2 {
        let answer = cache
            .latest(
                &pool,
                "k",
                "day".into(),
                Wait::First(Duration::ZERO),
                slow(runs.clone(), true),
            )
            .await
            .expect("version read");
        assert!(answer.is_none());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // It fails; the next caller starts another, which succeeds.
    let mut value = None;
    for _ in 0..200 {
        let answer = cache
            .latest(
                &pool,
                "k",
                "day".into(),
                Wait::First(Duration::from_secs(5)),
                slow(runs.clone(), false),
            )
            .await
            .expect("version read");
        if let Some(answer) = answer {
            value = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let value = value.expect("the retried computation");
    assert_eq!((value.value, value.current), (42, true));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one failed run and one that succeeded");
}
