//! Content negotiation for cached pages, and the encoding of a freshly rendered one.
//!
//! A page-cache miss is a render, and on two cores what a render costs decides how many a
//! flood of never-seen URLs gets through. brotli at quality 2 (what the compression layer
//! uses) took 0.7 ms for the 99 KB Team page, a fifth of a render's CPU; gzip at level 1
//! takes 0.09 ms for a body about a third larger (14 KB instead of 10.6 KB;
//! docs/PERFORMANCE.md). The miss is already buffered whole (to be stored), so it is
//! compressed in one call.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// True when the request's Accept-Encoding allows `coding` (by name or `*`, with q above 0).
pub fn accepts(accept_encoding: Option<&str>, coding: &str) -> bool {
    accept_encoding.unwrap_or("").split(',').any(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        let refused = parts.any(|param| {
            param
                .trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        (name.eq_ignore_ascii_case(coding) || name == "*") && !refused
    })
}

/// `body` as one gzip stream at level 1, or None if the encoder fails (the caller then
/// sends the page as it is, for the compression layer).
pub fn fast_gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 6), Compression::fast());
    match encoder.write_all(body).and_then(|()| encoder.finish()) {
        Ok(compressed) => Some(compressed),
        Err(err) => {
            tracing::warn!(error = %err, "cannot gzip a page; sending it to the compression layer");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_cache::gzip::tests::gunzip;

    #[test]
    fn a_page_compresses_and_decompresses_to_itself() {
        let page = "<tr><td>team</td><td class=\"num\">$1,234.56</td></tr>".repeat(3_000);
        let compressed = fast_gzip(page.as_bytes()).expect("compressed");
        assert!(
            compressed.len() < page.len() / 20,
            "repetitive markup really compresses"
        );
        assert_eq!(gunzip(&compressed), page.as_bytes());
        assert_eq!(gunzip(&fast_gzip(b"").expect("compressed")), b"");
    }

    #[test]
    fn a_coding_is_used_only_when_the_client_accepts_it() {
        assert!(accepts(Some("gzip, deflate, br, zstd"), "gzip"));
        assert!(accepts(Some("gzip, deflate, br, zstd"), "br"));
        assert!(accepts(Some("br;q=1.0, GZIP;q=0.5"), "gzip"));
        assert!(accepts(Some("*"), "br"));
        assert!(!accepts(Some("br"), "gzip"));
        assert!(!accepts(Some("gzip, deflate"), "br"));
        assert!(!accepts(Some("gzip;q=0, br"), "gzip"));
        assert!(!accepts(Some("identity"), "gzip"));
        assert!(!accepts(None, "br"));
    }
}
