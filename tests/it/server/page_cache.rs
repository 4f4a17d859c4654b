//! Rendered dashboard pages are served again until the data, the day, the URL or the
//! caller changes; every response still carries its own CSP nonce.

use crate::common::{TestApp, TestResponse, add_project_costs, spawn_app, today};
use burnrate::auth::Role;
use sqlx::PgPool;

const CACHE: &str = "x-burnrate-page-cache";

/// The nonce the response's Content-Security-Policy allows.
fn csp_nonce(response: &TestResponse) -> String {
    nonce_of(&response.header("content-security-policy"))
}

fn nonce_of(csp: &str) -> String {
    let (_, after) = csp.split_once("'nonce-").expect("the page CSP names a nonce");
    after.split_once('\'').expect("nonce is quoted").0.to_string()
}

fn recent_days() -> (chrono::NaiveDate, chrono::NaiveDate) {
    (today() - chrono::Days::new(40), today())
}

/// A server whose data has one project with recent spend, and an admin's session cookie.
async fn app_with_a_project(pool: PgPool) -> (TestApp, String) {
    add_project_costs(&pool, "probe-alpha", None, recent_days(), "10.00", "10.00").await;
    let app = spawn_app(pool).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    (app, admin)
}

#[sqlx::test]
async fn a_second_view_is_served_from_the_cache_with_its_own_nonce(pool: PgPool) {
    let (app, admin) = app_with_a_project(pool).await;

    let first = app.get_as("/?period=30d", &admin).await;
    let second = app.get_as("/?period=30d", &admin).await;
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.header(CACHE), "miss");
    assert_eq!(second.header(CACHE), "hit");
    assert!(second.body.contains("probe-alpha"), "the cached page is the whole page");

    let (first_nonce, second_nonce) = (csp_nonce(&first), csp_nonce(&second));
    assert_ne!(first_nonce, second_nonce, "a nonce is never served twice");
    assert!(second.body.contains(&format!("nonce=\"{second_nonce}\"")));
    assert!(
        !second.body.contains(&first_nonce),
        "the stored nonce is gone everywhere"
    );
    assert_eq!(
        first.body.replace(&first_nonce, "N"),
        second.body.replace(&second_nonce, "N"),
        "apart from the nonce, the cached page is the rendered one"
    );
}

#[sqlx::test]
async fn a_write_to_the_data_renders_the_page_again(pool: PgPool) {
    let (app, admin) = app_with_a_project(pool.clone()).await;
    assert_eq!(app.get_as("/?period=30d", &admin).await.header(CACHE), "miss");
    assert_eq!(app.get_as("/?period=30d", &admin).await.header(CACHE), "hit");

    add_project_costs(&pool, "probe-beta", None, recent_days(), "99.00", "99.00").await;
    let after = app.get_as("/?period=30d", &admin).await;
    assert_eq!(after.header(CACHE), "miss");
    assert!(after.body.contains("probe-beta"), "the new project shows at once");
}

#[sqlx::test]
async fn callers_and_urls_never_share_a_page(pool: PgPool) {
    let (app, admin) = app_with_a_project(pool).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;

    assert_eq!(app.get_as("/?period=30d", &admin).await.header(CACHE), "miss");
    let viewers_page = app.get_as("/?period=30d", &viewer).await;
    assert_eq!(viewers_page.header(CACHE), "miss");
    assert!(viewers_page.body.contains("viewer@example.com"));
    assert!(!viewers_page.body.contains("admin@example.com"));
    assert_eq!(app.get_as("/?period=90d", &admin).await.header(CACHE), "miss");
    assert_eq!(app.get_as("/projects/probe-alpha", &admin).await.header(CACHE), "miss");
    assert_eq!(app.get_as("/projects/probe-alpha", &admin).await.header(CACHE), "hit");
}

#[sqlx::test]
async fn signed_out_requests_and_other_pages_are_never_cached(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let signed_out = app.get("/").await;
    assert_eq!(signed_out.header(CACHE), "");
    for path in ["/budgets", "/ingestion", "/enforcement", "/no-such-page"] {
        for _ in 0..2 {
            let response = app.get_as(path, &admin).await;
            assert_eq!(response.header(CACHE), "", "{path} {}", response.status);
        }
    }
}

/// `path` as Chromium asks for it, accepting gzip and brotli: the response's headers, the
/// nonce its policy names, and the still-encoded body. An encoded response must say it varies
/// with Accept-Encoding.
async fn fetch_encoded(app: &TestApp, cookie: &str, path: &str) -> (reqwest::header::HeaderMap, String, Vec<u8>) {
    let response = reqwest::Client::new()
        .get(app.url(path))
        .header("cookie", cookie)
        .header("accept-encoding", "gzip, deflate, br, zstd")
        .send()
        .await
        .expect("page");
    let headers = response.headers().clone();
    assert!(
        headers["vary"].to_str().expect("ascii").contains("accept-encoding"),
        "an encoded page varies with Accept-Encoding"
    );
    let nonce = nonce_of(headers["content-security-policy"].to_str().expect("ascii"));
    let body = response.bytes().await.expect("body").to_vec();
    (headers, nonce, body)
}

#[sqlx::test]
async fn a_cached_page_goes_gzipped_to_clients_that_accept_it(pool: PgPool) {
    use std::io::Read;
    let (app, admin) = app_with_a_project(pool).await;
    let plain = app.get_as("/?period=30d", &admin).await;
    let (headers, nonce, gzipped) = fetch_encoded(&app, &admin, "/?period=30d").await;
    assert_eq!(headers[CACHE], "hit");
    assert_eq!(headers["content-encoding"], "gzip");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_string(&mut text)
        .expect("a valid gzip body");
    assert_eq!(text.replace(&nonce, "N"), plain.body.replace(&csp_nonce(&plain), "N"));
}

#[sqlx::test]
async fn a_freshly_rendered_page_goes_gzipped_to_clients_that_accept_it(pool: PgPool) {
    use std::io::Read;
    let (app, admin) = app_with_a_project(pool).await;
    let (headers, nonce, compressed) = fetch_encoded(&app, &admin, "/?period=90d").await;
    assert_eq!(headers[CACHE], "miss");
    assert_eq!(headers["content-encoding"], "gzip");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_string(&mut text)
        .expect("a valid gzip body");
    // The page's script carries the nonce its policy names, and the rendered page follows.
    assert!(
        text.contains(&format!("nonce=\"{nonce}\"")),
        "the body carries the header's nonce"
    );
    let plain = app.get_as("/?period=90d", &admin).await;
    assert_eq!(plain.headers[CACHE], "hit");
    assert_eq!(text.replace(&nonce, "N"), plain.body.replace(&csp_nonce(&plain), "N"));
}

/// Concurrent first views of the same data share one computation (single flight): 32 at
/// once, as a freshly started server sees after a deploy, compute it once; a data change
/// then computes it once more.
#[sqlx::test]
async fn concurrent_first_views_share_one_computation(pool: PgPool) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cache = burnrate::page_data::PageDataCache::default();
    let computed = Arc::new(AtomicUsize::new(0));
    let view = |cache: burnrate::page_data::PageDataCache, pool: PgPool, computed: Arc<AtomicUsize>| async move {
        cache
            .get_or_compute(&pool, "overview?period=mtd".to_string(), async {
                computed.fetch_add(1, Ordering::SeqCst);
                // Slow enough that all 32 arrive while it runs.
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                Ok::<_, sqlx::Error>(computed.load(Ordering::SeqCst))
            })
            .await
            .expect("page data")
    };
    let views: Vec<_> = (0..32)
        .map(|_| tokio::spawn(view(cache.clone(), pool.clone(), computed.clone())))
        .collect();
    for handle in views {
        assert_eq!(handle.await.expect("joined"), 1, "every view got the one computation");
    }
    assert_eq!(computed.load(Ordering::SeqCst), 1);
    sqlx::query("insert into teams (name) values ('a data change')")
        .execute(&pool)
        .await
        .expect("write");
    assert_eq!(view(cache.clone(), pool.clone(), computed.clone()).await, 2);
    assert_eq!(view(cache, pool, computed.clone()).await, 2, "then cached again");
}
