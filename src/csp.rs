//! The Content-Security-Policy headers: one for pages (the inline hydration script is
//! allowed by its nonce, fresh per response) and a strict one for everything else.

/// For responses that carry no page (the page shell sets its own, with a script nonce).
pub const STRICT_CSP: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The Content-Security-Policy of a page whose inline hydration script carries `nonce`.
pub fn page_csp(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}
