//! Pieces every burnrate email is built from: a subject on one line, and a list of facts
//! as text and as HTML with every value escaped (tag values come from AWS).

/// An email's body, as plain text and as HTML.
pub struct Body {
    pub text: String,
    pub html: String,
}

/// The start of an email: the subject, then one `label: value` line (text) or table row
/// (HTML, every value escaped) per fact. Callers append the rest and close the HTML body.
pub fn facts_message(subject: &str, facts: &[(&str, String)]) -> Body {
    let mut text = format!("{subject}\n\n");
    let mut html = format!("<!DOCTYPE html><html><body><h1>{}</h1><table>", escape(subject));
    for (label, value) in facts {
        text.push_str(&format!("{label}: {value}\n"));
        html.push_str(&format!(
            "<tr><th align=\"left\">{}</th><td>{}</td></tr>",
            escape(label),
            escape(value)
        ));
    }
    html.push_str("</table>");
    Body { text, html }
}

/// Header values must be one line.
pub fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    crate::format::escape_html(&mut out, text);
    out
}
