//! Content negotiation for cached pages, and the brotli encoding of a freshly rendered one.
//!
//! A page-cache miss is already buffered whole (to be stored), so it is compressed in one
//! call with a window sized to the page. tower-http's streaming encoder would instead set up
//! brotli's default 4 MB window and zero it for every response: about a third of its cost
//! on a 56–132 KB page.

use brotli::enc::BrotliEncoderParams;

/// The same quality the compression layer uses for every other response.
const QUALITY: i32 = 2;

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

/// `body` as one brotli stream, or None if the encoder fails (the caller then sends the
/// page as it is, for the compression layer).
pub fn brotli(body: &[u8]) -> Option<Vec<u8>> {
    let params = BrotliEncoderParams {
        quality: QUALITY,
        lgwin: window_bits(body.len()),
        size_hint: body.len(),
        ..BrotliEncoderParams::default()
    };
    let mut compressed = Vec::with_capacity(body.len() / 4);
    match brotli::BrotliCompress(&mut &body[..], &mut compressed, &params) {
        Ok(_) => Some(compressed),
        Err(err) => {
            tracing::warn!(error = %err, "cannot brotli-compress a page; sending it to the compression layer");
            None
        }
    }
}

/// The smallest window that holds the whole body, within brotli's 16..=22 bits (a larger
/// window finds no further matches in a body that fits the smaller one).
fn window_bits(len: usize) -> i32 {
    let bits = usize::BITS - len.max(1).next_power_of_two().leading_zeros() - 1;
    i32::try_from(bits).unwrap_or(22).clamp(16, 22)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn unbrotli(data: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        brotli::Decompressor::new(data, 4096)
            .read_to_end(&mut plain)
            .expect("a valid brotli stream");
        plain
    }

    #[test]
    fn a_page_compresses_and_decompresses_to_itself() {
        let page = "<tr><td>team</td><td class=\"num\">$1,234.56</td></tr>".repeat(3_000);
        let compressed = brotli(page.as_bytes()).expect("compressed");
        assert!(
            compressed.len() < page.len() / 20,
            "repetitive markup really compresses"
        );
        assert_eq!(unbrotli(&compressed), page.as_bytes());
        assert_eq!(unbrotli(&brotli(b"").expect("compressed")), b"");
    }

    #[test]
    fn the_window_fits_the_body() {
        assert_eq!(window_bits(0), 16);
        assert_eq!(window_bits(56_000), 16);
        assert_eq!(window_bits(65_537), 17);
        assert_eq!(window_bits(132_000), 18);
        assert_eq!(window_bits(64 << 20), 22);
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
