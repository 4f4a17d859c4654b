//! Computed page data, cached per data version. Every write to facts, totals, rollups, projects,
//! teams, usage types or budgets appends to `data_changes` (a statement trigger; appends
//! never wait on each other), and the version is the weight those rows add up to in the
//! reader's snapshot. A cached entry is used only while the version it was computed at is
//! current; so pages are never stale, also when another replica wrote. Reading the version
//! sums at most a few hundred small rows (old ones are folded into one).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlx::PgPool;

/// Entries kept at most; on overflow the whole map is dropped (keys include the date and
/// the filters, so old ones would never be asked for again anyway).
const CAPACITY: usize = 512;

type Entry = (i64, Arc<dyn Any + Send + Sync>);

/// The data version now: what cached pages and page data are checked against.
pub async fn current_version(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select version from data_version")
        .fetch_one(pool)
        .await
}

/// The data version read with the request's session (`auth::sessions::authenticate`), a
/// request extension: the page cache and the page's data both use it, so a page view reads
/// the version once, in the statement it needs anyway.
#[derive(Clone, Copy, Debug)]
pub struct RequestVersion(pub i64);

/// The version this request's page data is read against: the one read with its session,
/// else (outside a signed-in request) a fresh read.
pub async fn request_version(pool: &PgPool) -> Result<i64, sqlx::Error> {
    let known = leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<RequestVersion>().copied());
    match known {
        Some(RequestVersion(version)) => Ok(version),
        None => current_version(pool).await,
    }
}

/// How long a request waits for another's computation of the same data before computing
/// it itself: as long as one statement may run (the pool's default bound), so a slow
/// computation is still shared; it only matters when that one is stuck.
const FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone, Default)]
pub struct PageDataCache {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    /// One lock per key being computed: concurrent first views of the same data wait for
    /// one computation (single flight) instead of each running the same SQL.
    flights: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl PageDataCache {
    /// The value for `key` at the current data version, computing it on a miss.
    pub async fn get_or_compute<T, F>(&self, pool: &PgPool, key: String, compute: F) -> Result<T, sqlx::Error>
    where
        T: Clone + Send + Sync + 'static,
        F: Future<Output = Result<T, sqlx::Error>>,
    {
        let version = request_version(pool).await?;
        if let Some(value) = self.cached::<T>(&key, version) {
            return Ok(value);
        }
        let flight = self.flights.lock().ok().map(|mut flights| {
            if flights.len() >= CAPACITY {
                // Holders keep their own handle; only the map's is dropped.
                flights.clear();
            }
            flights.entry(key.clone()).or_default().clone()
        });
        let _turn = match &flight {
            Some(flight) => tokio::time::timeout(FLIGHT_WAIT, flight.lock()).await.ok(),
            None => None,
        };
        // Whoever held the turn before us may have computed it.
        if let Some(value) = self.cached::<T>(&key, version) {
            return Ok(value);
        }
        let value = compute.await?;
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= CAPACITY {
                entries.clear();
            }
            entries.insert(key.clone(), (version, Arc::new(value.clone())));
        }
        // Later arrivals find the value; those already waiting hold their own handle.
        if let Ok(mut flights) = self.flights.lock() {
            flights.remove(&key);
        }
        Ok(value)
    }

    fn cached<T: Clone + 'static>(&self, key: &str, version: i64) -> Option<T> {
        let hit = self.entries.lock().ok().and_then(|entries| {
            entries
                .get(key)
                .filter(|(v, _)| *v == version)
                .map(|(_, value)| value.clone())
        });
        hit.and_then(|value| value.downcast_ref::<T>().cloned())
    }
}
