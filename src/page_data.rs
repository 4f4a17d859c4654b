//! Computed page data, cached per data version. Every write to facts, totals, rollups, projects,
//! teams, usage types or budgets appends to `data_changes` (a statement trigger; appends
//! never wait on each other), and the version is the weight those rows add up to in the
//! reader's snapshot. A cached entry (`get_or_compute`) is used only while the version it was
//! computed at is current; so pages are never stale, also when another replica wrote. `latest`
//! is the exception, for data too slow to compute on a request (the savings recommendations):
//! it answers the newest complete value, saying whether it is current, while a newer one is
//! computed in the background. Reading the version
//! sums at most a few hundred small rows (old ones are folded into one).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
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
    /// The newest complete value per key of `latest`, whatever its version.
    newest: Arc<Mutex<HashMap<String, Newest>>>,
    /// The background computations running, one per key: each one's end is sent once.
    refreshing: Arc<Mutex<HashMap<String, tokio::sync::watch::Receiver<bool>>>>,
}

/// A value `latest` keeps: what it was computed from, and when.
#[derive(Clone)]
struct Newest {
    version: i64,
    stamp: String,
    computed_at: DateTime<Utc>,
    value: Arc<dyn Any + Send + Sync>,
}

/// A background computation's hold on its key, released when it ends however it ends.
struct Running {
    refreshing: Arc<Mutex<HashMap<String, tokio::sync::watch::Receiver<bool>>>>,
    key: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut refreshing) = self.refreshing.lock() {
            refreshing.remove(&self.key);
        }
    }
}

/// How long `latest` may wait, and for what.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// For a first value only: an older one is answered at once.
    First(std::time::Duration),
    /// For a value of the current data (after the caller's own write).
    Current(std::time::Duration),
}

/// A value computed in the background and served until a newer one is complete.
#[derive(Debug, Clone)]
pub struct Latest<T> {
    pub value: T,
    /// When it was computed.
    pub computed_at: DateTime<Utc>,
    /// Whether it was computed from the current data version (and stamp); when not, a newer
    /// one is being computed.
    pub current: bool,
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

    /// The newest complete value for `key`. When it was computed from another data version or
    /// `stamp` (the day, say), or there is none, `compute` starts in the background (one at a
    /// time per key). With `Wait::First`, an older value is answered at once, and only with
    /// none yet does the caller wait, up to the duration; with `Wait::Current` (after the
    /// caller's own write, so it sees its effect) it waits up to the duration for a value of
    /// the current data, and then answers the newest it has. `None` when there is none by
    /// then (the computation goes on, for the next caller). A failed computation is logged and
    /// tried again by the next caller.
    pub async fn latest<T, F, Fut>(
        &self,
        pool: &PgPool,
        key: &str,
        stamp: String,
        wait: Wait,
        compute: F,
    ) -> Result<Option<Latest<T>>, sqlx::Error>
    where
        T: Clone + Send + Sync + 'static,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>> + Send + 'static,
    {
        // After the caller's own write the version read with its session predates that write:
        // read it afresh.
        let (version, bound, for_current) = match wait {
            Wait::First(bound) => (request_version(pool).await?, bound, false),
            Wait::Current(bound) => (current_version(pool).await?, bound, true),
        };
        let deadline = tokio::time::Instant::now() + bound;
        // A value of this version or a later one (a write between this request's session
        // read and here) is current.
        let is_current = |newest: &Newest| newest.version >= version && newest.stamp == stamp;
        let answer = |newest: Option<Newest>| {
            newest.and_then(|newest| {
                newest.value.downcast_ref::<T>().map(|value| Latest {
                    value: value.clone(),
                    computed_at: newest.computed_at,
                    current: is_current(&newest),
                })
            })
        };
        // Twice at most: a computation of an older version may be running when asked, and
        // the one after it is of the current data.
        for _ in 0..2 {
            let newest = self.newest_of(key);
            let current = newest.as_ref().is_some_and(is_current);
            if current || (newest.is_some() && !for_current) {
                if !current {
                    self.refresh(key, version, stamp.clone(), &compute);
                }
                return Ok(answer(newest));
            }
            let mut done = self.refresh(key, version, stamp.clone(), &compute);
            let _ = tokio::time::timeout_at(deadline, done.wait_for(|finished| *finished)).await;
            if tokio::time::Instant::now() >= deadline {
                break;
            }
        }
        Ok(answer(self.newest_of(key)))
    }

    fn newest_of(&self, key: &str) -> Option<Newest> {
        self.newest.lock().ok().and_then(|newest| newest.get(key).cloned())
    }

    /// Starts `compute` for `key` in the background unless one is running; the receiver says
    /// when the running one ends.
    fn refresh<T, F, Fut>(
        &self,
        key: &str,
        version: i64,
        stamp: String,
        compute: &F,
    ) -> tokio::sync::watch::Receiver<bool>
    where
        T: Clone + Send + Sync + 'static,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>> + Send + 'static,
    {
        let (sender, receiver) = tokio::sync::watch::channel(false);
        {
            let Ok(mut refreshing) = self.refreshing.lock() else {
                return receiver;
            };
            if let Some(running) = refreshing.get(key) {
                return running.clone();
            }
            refreshing.insert(key.to_string(), receiver.clone());
        }
        let (newest, key) = (self.newest.clone(), key.to_string());
        // Whatever ends the computation (a panic too) frees the key for the next one.
        let running = Running {
            refreshing: self.refreshing.clone(),
            key: key.clone(),
        };
        let computation = compute();
        tokio::spawn(async move {
            let _running = running;
            match computation.await {
                Ok(value) => {
                    if let Ok(mut newest) = newest.lock() {
                        // A computation from an older version never replaces a newer one.
                        if newest.get(&key).is_none_or(|n| n.version <= version) {
                            let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
                            newest.insert(
                                key.clone(),
                                Newest {
                                    version,
                                    stamp,
                                    computed_at: Utc::now(),
                                    value,
                                },
                            );
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, key, "computing page data in the background failed; the next view tries again")
                }
            }
            let _ = sender.send(true);
        });
        receiver
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
