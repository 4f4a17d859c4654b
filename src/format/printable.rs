//! The style every printable document shares (statements, the savings report), and the
//! Content-Security-Policy that allows nothing but it.

pub const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2rem;color:#111}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #999}
table{border-collapse:collapse;width:100%}th,td{padding:.2rem .5rem;border-bottom:1px solid #ddd;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}tr.total td,tr.total th{font-weight:700;border-top:2px solid #111}
.note{color:#555}
@media print{body{margin:0;font-size:11pt}section{break-inside:avoid-page}a{color:inherit;text-decoration:none}.no-print{display:none}}
@page{size:A4;margin:15mm}";

/// The Content-Security-Policy of a printable document: nothing but its own inline style,
/// allowed by the style's hash.
pub fn html_csp() -> String {
    use base64::Engine;
    use sha2::Digest;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(STYLE.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )
}
