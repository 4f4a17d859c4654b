//! The Prometheus text exposition format (version 0.0.4), written by hand: a `# HELP` and a
//! `# TYPE` line per family, then one line per series. Label values come from AWS tags and
//! team names, so each is escaped as the format requires (backslash, double quote, newline).

use std::fmt::Write as _;

/// The text of one scrape, family after family.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts a family: `kind` is `gauge`, `counter` or `histogram`.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(
            self.text,
            "# HELP {name} {}",
            help.replace('\\', "\\\\").replace('\n', "\\n")
        );
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One series of the family just started (or, for a histogram, one of its lines).
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape(value));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// Families written before, as text (cached ones).
    pub fn append(&mut self, text: &str) {
        self.text.push_str(text);
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A decimal amount as a sample value: exact digits, no exponent (Prometheus reads them as a
/// float; the text keeps every cent).
pub fn decimal(value: rust_decimal::Decimal) -> String {
    value.normalize().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_families_are_typed() {
        let mut out = Exposition::default();
        out.family("burnrate_x_usd", "gauge", "What \\ it is\nover lines");
        out.sample("burnrate_x_usd", &[("team", "a\"b\\c\nd"), ("kind", "k")], "1.5");
        out.sample("burnrate_x_usd", &[], 2);
        assert_eq!(
            out.into_text(),
            "# HELP burnrate_x_usd What \\\\ it is\\nover lines\n# TYPE burnrate_x_usd gauge\n\
             burnrate_x_usd{team=\"a\\\"b\\\\c\\nd\",kind=\"k\"} 1.5\nburnrate_x_usd 2\n"
        );
        assert_eq!(decimal("12.50".parse().expect("decimal")), "12.5");
    }
}
