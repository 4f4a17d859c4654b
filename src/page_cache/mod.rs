//! Rendered dashboard pages, kept per caller, URL, UTC day and data version.
//!
//! With its data already computed (`page_data::PageDataCache`), the Overview still costs several
//! milliseconds of CPU to render as HTML, and at 32 concurrent viewers that rendering is
//! what fills the two cores. The HTML of the dashboard pages changes only when the data
//! version (bumped by every cost, team, budget and enforcement write), the day, the URL or
//! the caller does, so the rendered page is kept and served again until one of them moves.
//!
//! The one part of a page that must differ per response is its CSP nonce: a stored page is
//! kept in pieces around the nonce, and every hit joins them with a fresh one and sends the
//! matching Content-Security-Policy. Compressing the page would then be most of a hit's
//! cost, so the pieces are also kept gzipped and spliced around the nonce (`gzip`).

mod encoding;
mod gzip;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE, SET_COOKIE, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

use crate::auth::Caller;
use crate::page_data::RequestVersion;

/// Tells tests and operators whether a page came from the cache (`hit`) or was rendered.
pub const CACHE_HEADER: HeaderName = HeaderName::from_static("x-burnrate-page-cache");
/// The stored pages' total size at most; past it, pages of older data versions go first,
/// then everything (a page is re-rendered on its next request).
const MAX_TOTAL_BYTES: usize = 32 << 20;
/// Larger pages are sent but not kept.
const MAX_PAGE_BYTES: usize = 4 << 20;
/// A page body is buffered up to this size; a larger one (no dashboard page comes near it)
/// fails rather than holding the memory.
const MAX_BUFFERED_BYTES: usize = 64 << 20;
/// A page is re-rendered at least this often, so nothing that is not behind the data
/// version (e.g. a new release's assets) outlives a minute.
const MAX_AGE: Duration = Duration::from_secs(60);

/// The stored pages, shared by every request of this process.
#[derive(Clone, Default)]
pub struct PageCache {
    pages: Arc<Mutex<Pages>>,
}

#[derive(Default)]
struct Pages {
    by_key: HashMap<String, Arc<StoredPage>>,
    total_bytes: usize,
}

struct StoredPage {
    version: i64,
    stored_at: Instant,
    headers: HeaderMap,
    /// The body split at every occurrence of the nonce it was rendered with.
    pieces: Vec<Bytes>,
    /// The same pieces deflated, for clients that accept gzip: made at the page's first hit,
    /// so a page nobody views twice never pays for it. `None` inside if deflating failed.
    gzip: OnceLock<Option<gzip::SplicedGzip>>,
    bytes: usize,
}

/// The paths whose HTML depends only on the caller, the URL, the day and the data version.
fn is_cacheable_page(path: &str) -> bool {
    let single_segment = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
    };
    path == "/" || path == "/teams" || single_segment("/teams/") || single_segment("/projects/")
}

/// The cache key of a GET of a dashboard page by a signed-in caller; `None` for anything
/// else. Everything the page shows of the caller (name, email, role, teams) is in the key.
fn cache_key(request: &Request, today: chrono::NaiveDate) -> Option<String> {
    if request.method() != Method::GET || !is_cacheable_page(request.uri().path()) {
        return None;
    }
    let caller = request.extensions().get::<Caller>()?;
    let url = request.uri().path_and_query()?.as_str();
    Some(format!(
        "{}|{}|{}|{}|{:?}|{today}|{url}",
        caller.account_id,
        caller.email,
        caller.display_name,
        caller.role.key(),
        caller.team_ids
    ))
}

/// Serves dashboard pages from the cache, rendering (and storing) them on a miss.
pub async fn serve_cached(State(pages): State<PageCache>, request: Request, next: Next) -> Response {
    let Some(key) = cache_key(&request, chrono::Utc::now().date_naive()) else {
        return next.run(request).await;
    };
    // Read with the session (`auth::sessions::authenticate`); the render's data is read
    // against the same version (`page_data::request_version`).
    let Some(&RequestVersion(version)) = request.extensions().get::<RequestVersion>() else {
        return next.run(request).await;
    };
    let accept_encoding = request.headers().get(ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
    let accepts_gzip = encoding::accepts(accept_encoding, "gzip");
    if let Some(page) = pages.fresh(&key, version) {
        return page.respond(&new_nonce(), accepts_gzip);
    }
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let Some(nonce) = storable(&parts.status, &parts.headers) else {
        return Response::from_parts(parts, body);
    };
    let body = match axum::body::to_bytes(body, MAX_BUFFERED_BYTES).await {
        Ok(body) => body,
        Err(err) => {
            // Too large or broken off: nothing can be sent whole any more.
            tracing::warn!(error = %err, "page body could not be buffered");
            return internal_error();
        }
    };
    if body.len() <= MAX_PAGE_BYTES {
        let page = StoredPage::new(version, &parts.headers, &body, &nonce);
        pages.store(key, page);
    }
    let compressed = accepts_gzip.then(|| encoding::fast_gzip(&body)).flatten();
    let mut response = match compressed {
        Some(compressed) => {
            let mut response = Response::from_parts(parts, Body::from(compressed));
            response.headers_mut().remove(CONTENT_LENGTH);
            mark_encoded(response.headers_mut(), "gzip");
            response
        }
        None => Response::from_parts(parts, Body::from(body)),
    };
    response
        .headers_mut()
        .insert(CACHE_HEADER, HeaderValue::from_static("miss"));
    response
}

/// Labels a body this middleware encoded itself; the compression layer leaves a response
/// that already has an encoding alone.
fn mark_encoded(headers: &mut HeaderMap, coding: &'static str) {
    headers.insert(CONTENT_ENCODING, HeaderValue::from_static(coding));
    headers.append(VARY, HeaderValue::from_static("accept-encoding"));
}

/// The nonce of a response worth storing: a complete HTML page with its CSP nonce, and no
/// cookie (a cookie belongs to one response only).
fn storable(status: &StatusCode, headers: &HeaderMap) -> Option<String> {
    let is_html = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if *status != StatusCode::OK || !is_html || headers.contains_key(SET_COOKIE) {
        return None;
    }
    let csp = headers.get(CONTENT_SECURITY_POLICY)?.to_str().ok()?;
    let (_, after) = csp.split_once("'nonce-")?;
    let (nonce, _) = after.split_once('\'')?;
    (!nonce.is_empty()).then(|| nonce.to_string())
}

fn internal_error() -> Response {
    let mut response = Response::new(Body::from("the page could not be rendered"));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}

/// A fresh CSP nonce: 128 random bits, base64 (the same shape as leptos's own).
fn new_nonce() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl StoredPage {
    fn new(version: i64, headers: &HeaderMap, body: &Bytes, nonce: &str) -> StoredPage {
        let mut headers = headers.clone();
        for dropped in [CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CACHE_HEADER, CONTENT_ENCODING] {
            headers.remove(dropped);
        }
        let mut pieces = Vec::new();
        let mut rest = body.clone();
        let finder = memchr::memmem::Finder::new(nonce.as_bytes());
        while let Some(at) = finder.find(&rest) {
            pieces.push(rest.slice(..at));
            rest = rest.slice(at + nonce.len()..);
        }
        pieces.push(rest);
        StoredPage {
            version,
            stored_at: Instant::now(),
            headers,
            pieces,
            gzip: OnceLock::new(),
            bytes: body.len(),
        }
    }

    fn respond(&self, nonce: &str, accepts_gzip: bool) -> Response {
        let gzipped = accepts_gzip
            .then(|| self.gzipped())
            .flatten()
            .map(|gzip| gzip.with_nonce(&self.pieces, nonce.as_bytes()));
        let is_gzipped = gzipped.is_some();
        let mut response = Response::new(Body::from(match gzipped {
            Some(gzipped) => gzipped,
            None => self.joined(nonce),
        }));
        *response.headers_mut() = self.headers.clone();
        if is_gzipped {
            mark_encoded(response.headers_mut(), "gzip");
        }
        if let Ok(csp) = HeaderValue::from_str(&crate::csp::page_csp(nonce)) {
            response.headers_mut().insert(CONTENT_SECURITY_POLICY, csp);
        }
        response
            .headers_mut()
            .insert(CACHE_HEADER, HeaderValue::from_static("hit"));
        response
    }

    fn gzipped(&self) -> Option<&gzip::SplicedGzip> {
        self.gzip
            .get_or_init(|| {
                gzip::SplicedGzip::new(&self.pieces)
                    .inspect_err(
                        |err| tracing::warn!(error = %err, "cannot gzip a stored page; it is compressed per response"),
                    )
                    .ok()
            })
            .as_ref()
    }

    fn joined(&self, nonce: &str) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.bytes + nonce.len() * self.pieces.len());
        for (i, piece) in self.pieces.iter().enumerate() {
            if i > 0 {
                body.extend_from_slice(nonce.as_bytes());
            }
            body.extend_from_slice(piece);
        }
        body
    }
}

impl PageCache {
    fn fresh(&self, key: &str, version: i64) -> Option<Arc<StoredPage>> {
        let pages = self.pages.lock().ok()?;
        pages
            .by_key
            .get(key)
            .filter(|page| page.version == version && page.stored_at.elapsed() < MAX_AGE)
            .cloned()
    }

    fn store(&self, key: String, page: StoredPage) {
        let Ok(mut pages) = self.pages.lock() else { return };
        if pages.total_bytes + page.bytes > MAX_TOTAL_BYTES {
            let version = page.version;
            pages.by_key.retain(|_, kept| kept.version == version);
            pages.total_bytes = pages.by_key.values().map(|kept| kept.bytes).sum();
        }
        if pages.total_bytes + page.bytes > MAX_TOTAL_BYTES {
            pages.by_key.clear();
            pages.total_bytes = 0;
        }
        pages.total_bytes += page.bytes;
        if let Some(replaced) = pages.by_key.insert(key, Arc::new(page)) {
            pages.total_bytes -= replaced.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dashboard_pages_are_cacheable() {
        for path in ["/", "/teams", "/teams/ml-research", "/projects/llm%20eval"] {
            assert!(is_cacheable_page(path), "{path}");
        }
        for path in [
            "/teams/",
            "/teams/a/b",
            "/budgets",
            "/ingestion",
            "/api/overview",
            "/admin/teams",
            "/projects",
        ] {
            assert!(!is_cacheable_page(path), "{path}");
        }
    }

    #[test]
    fn a_stored_page_is_served_with_a_new_nonce_everywhere_the_old_one_was() {
        let body = Bytes::from_static(b"<script nonce=\"OLD\">a</script><p>OLDx</p><script nonce=\"OLD\">");
        let page = StoredPage::new(1, &HeaderMap::new(), &body, "OLD");
        assert_eq!(page.pieces.len(), 4);
        let response = page.respond("NEW", false);
        let csp = response.headers()[CONTENT_SECURITY_POLICY].to_str().expect("ascii");
        assert!(csp.contains("'nonce-NEW'"), "{csp}");
        let joined: Vec<u8> = page.pieces.iter().flat_map(|p| p.to_vec()).collect();
        assert_eq!(joined, b"<script nonce=\"\">a</script><p>x</p><script nonce=\"\">");
    }

    #[test]
    fn a_client_that_accepts_gzip_gets_the_spliced_gzip_with_the_new_nonce() {
        use std::io::Read;
        let body = Bytes::from_static(b"<script nonce=\"OLD\">a</script><p>text</p>");
        let page = StoredPage::new(1, &HeaderMap::new(), &body, "OLD");
        let response = page.respond("NEW", true);
        assert_eq!(response.headers()[CONTENT_ENCODING], "gzip");
        let gzipped = page.gzipped().expect("gzipped").with_nonce(&page.pieces, b"NEW");
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gzipped[..])
            .read_to_string(&mut text)
            .expect("gzip");
        assert_eq!(text, "<script nonce=\"NEW\">a</script><p>text</p>");
    }

    #[test]
    fn only_whole_html_pages_with_a_nonce_and_no_cookie_are_stored() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        headers.insert(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("script-src 'self' 'nonce-abc+/=' 'wasm-unsafe-eval'"),
        );
        assert_eq!(storable(&StatusCode::OK, &headers).as_deref(), Some("abc+/="));
        assert_eq!(storable(&StatusCode::NOT_FOUND, &headers), None);
        let mut with_cookie = headers.clone();
        with_cookie.insert(SET_COOKIE, HeaderValue::from_static("a=b"));
        assert_eq!(storable(&StatusCode::OK, &with_cookie), None);
        headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'"));
        assert_eq!(storable(&StatusCode::OK, &headers), None);
    }

    #[test]
    fn the_cache_stays_within_its_size_and_drops_older_versions_first() {
        let cache = PageCache::default();
        let big = Bytes::from(vec![b'x'; MAX_TOTAL_BYTES / 2 - 1]);
        cache.store("old".into(), StoredPage::new(1, &HeaderMap::new(), &big, "n"));
        cache.store("new".into(), StoredPage::new(2, &HeaderMap::new(), &big, "n"));
        cache.store("newer".into(), StoredPage::new(2, &HeaderMap::new(), &big, "n"));
        assert!(cache.fresh("old", 1).is_none(), "older version evicted first");
        assert!(cache.fresh("new", 2).is_some());
        assert!(cache.fresh("newer", 2).is_some());
        assert!(cache.fresh("new", 3).is_none(), "a newer data version misses");
        let total_bytes = cache.pages.lock().expect("lock").total_bytes;
        assert!(total_bytes <= MAX_TOTAL_BYTES);
    }
}
