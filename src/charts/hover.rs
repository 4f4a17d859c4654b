//! Hover titles: an invisible target over each bar or point carrying a `<title>` (date,
//! series and exact amount), which browsers show as a tooltip and screen readers read.
//! plotters draws no titles, so the targets are added over its output.

/// Targets collected while drawing, in pixels.
#[derive(Debug, Default)]
pub struct Targets {
    markup: String,
}

impl Targets {
    /// A rectangle from corner `a` to corner `b`.
    pub fn rect(&mut self, a: (i32, i32), b: (i32, i32), title: &str) {
        let (x, y) = (a.0.min(b.0), a.1.min(b.1));
        let (width, height) = ((a.0 - b.0).abs().max(2), (a.1 - b.1).abs().max(2));
        self.markup.push_str(&format!(
            r#"<rect class="hover" x="{x}" y="{y}" width="{width}" height="{height}" fill="transparent"><title>"#
        ));
        crate::format::escape_html(&mut self.markup, title);
        self.markup.push_str("</title></rect>");
    }

    /// A circle around a point.
    pub fn point(&mut self, at: (i32, i32), title: &str) {
        self.markup.push_str(&format!(
            r#"<circle class="hover" cx="{}" cy="{}" r="6" fill="transparent"><title>"#,
            at.0, at.1
        ));
        crate::format::escape_html(&mut self.markup, title);
        self.markup.push_str("</title></circle>");
    }

    /// `svg` with the targets on top (last drawn), just before its end.
    pub fn add_to(self, svg: String) -> String {
        match svg.rfind("</svg>") {
            Some(end) => format!("{}{}{}", &svg[..end], self.markup, &svg[end..]),
            None => svg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_escaped_and_targets_go_last() {
        let mut targets = Targets::default();
        targets.rect((10, 50), (20, 30), "2026-11-02 · <b>&team</b>: $1.00");
        targets.point((5, 5), "o'clock");
        let svg = targets.add_to("<svg><rect/></svg>".into());
        assert_eq!(
            svg,
            "<svg><rect/><rect class=\"hover\" x=\"10\" y=\"30\" width=\"10\" height=\"20\" fill=\"transparent\">\
             <title>2026-11-02 · &lt;b&gt;&amp;team&lt;/b&gt;: $1.00</title></rect>\
             <circle class=\"hover\" cx=\"5\" cy=\"5\" r=\"6\" fill=\"transparent\"><title>o&#39;clock</title></circle></svg>"
        );
    }
}
