//! CSV cells, RFC 4180, for every CSV burnrate writes. Tag values come from AWS and are
//! untrusted: a spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` (or TAB or CR,
//! which some strip first) as a formula, so downloads a browser opens prefix such text cells
//! with `'`, as OWASP advises. Numbers and dates are written as they are, so they stay
//! numbers; machines reading `burnrate export` get text verbatim unless they ask.

/// How text cells are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvStyle {
    /// Exactly the value (quoted when needed): for programs.
    Verbatim,
    /// A text cell that a spreadsheet would read as a formula starts with `'`.
    ExcelSafe,
}

/// A text cell: Excel-safe when asked, then quoted if it holds a comma, quote or line break.
pub fn text(value: &str, style: CsvStyle) -> String {
    let formula = value.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let value = if style == CsvStyle::ExcelSafe && formula {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// RFC 4180, text verbatim: for CSV read by programs (`enforce evaluate`).
pub fn csv_field(value: &str) -> String {
    text(value, CsvStyle::Verbatim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_only_when_needed() {
        let v = CsvStyle::Verbatim;
        assert_eq!(text("plain", v), "plain");
        assert_eq!(text("a,b", v), "\"a,b\"");
        assert_eq!(text("say \"hi\"", v), "\"say \"\"hi\"\"\"");
        assert_eq!(text("line\nbreak", v), "\"line\nbreak\"");
        assert_eq!(text("=1+1", v), "=1+1", "verbatim for machines");
    }

    #[test]
    fn formula_cells_are_defused_for_spreadsheets() {
        let safe = CsvStyle::ExcelSafe;
        for (hostile, written) in [
            (
                "=HYPERLINK(\"http://evil.example\",\"x\")",
                "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\"",
            ),
            ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "\"'\r=1\""),
            ("ml-research", "ml-research"),
            ("a=b", "a=b"),
        ] {
            assert_eq!(text(hostile, safe), written, "{hostile:?}");
        }
    }
}
