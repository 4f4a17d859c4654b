//! The rows of long tables, written as escaped HTML text instead of built as views.
//!
//! A Team page lists up to 100 projects and 100 users, the Teams page's chart table a row
//! per day and team. Built as views, each cell is a type-erased element with its attributes
//! and hydration markers: those rows were about a third of a Team render's CPU, and a render
//! is what a flood of never-seen URLs waits for (docs/PERFORMANCE.md). Written as text they
//! cost little more than the formatting of their numbers.
//!
//! The text goes into its `<tbody>` with `inner_html`. Hydration keeps rows the server
//! wrote, and new data (a filter change) replaces them whole, as it would replace the views.
//! Links are plain anchors, which the router turns into client-side navigation like any
//! other. Every text and attribute is escaped here: tag values come from AWS untrusted.

use rust_decimal::Decimal;

use crate::format::{escape_html, usd};

/// The rows of one table body.
#[derive(Default)]
pub struct Rows {
    html: String,
}

/// One row's cells, in order.
pub struct Row<'a> {
    html: &'a mut String,
    /// The `data-testid` of the next cell written ([`Row::marked`]).
    testid: Option<&'a str>,
}

impl Rows {
    /// Adds a `<tr data-testid=…>` whose cells `cells` writes.
    pub fn row(&mut self, testid: &str, cells: impl FnOnce(&mut Row<'_>)) {
        self.html.push_str("<tr data-testid=\"");
        escape_html(&mut self.html, testid);
        self.html.push_str("\">");
        cells(&mut Row {
            html: &mut self.html,
            testid: None,
        });
        self.html.push_str("</tr>");
    }

    pub fn into_html(self) -> String {
        self.html
    }
}

impl<'a> Row<'a> {
    /// Gives the next cell a `data-testid`, for the browser tests.
    pub fn marked(&mut self, testid: &'a str) -> &mut Self {
        self.testid = Some(testid);
        self
    }

    /// The row's heading cell, linking to `href`.
    pub fn heading_link(&mut self, href: &str, label: &str) {
        self.open("th scope=\"row\"");
        self.html.push_str("><a href=\"");
        escape_html(self.html, href);
        self.html.push_str("\">");
        escape_html(self.html, label);
        self.html.push_str("</a></th>");
    }

    /// The row's heading cell, as text.
    pub fn heading(&mut self, label: &str) {
        self.text_cell("th scope=\"row\"", "</th>", label);
    }

    /// A text cell.
    pub fn text(&mut self, text: &str) {
        self.text_cell("td", "</td>", text);
    }

    /// An amount shown as `$1,234.57`, with its exact value in `data-value`.
    pub fn money(&mut self, amount: Decimal) {
        self.open("td class=\"num\"");
        self.html.push_str(" data-value=\"");
        self.html.push_str(&amount.to_string());
        self.html.push_str("\">");
        self.html.push_str(&usd(amount));
        self.html.push_str("</td>");
    }

    /// A figure already formatted (a share, a change), right-aligned.
    pub fn figure(&mut self, text: &str) {
        self.text_cell("td class=\"num\"", "</td>", text);
    }

    /// A cell holding `text`, escaped.
    fn text_cell(&mut self, tag_and_attributes: &str, close: &str, text: &str) {
        self.open(tag_and_attributes);
        self.html.push('>');
        escape_html(self.html, text);
        self.html.push_str(close);
    }

    /// Writes `<tag attributes…` and the pending test id if there is one; the caller adds
    /// any further attributes and the closing `>`.
    fn open(&mut self, tag_and_attributes: &str) {
        self.html.push('<');
        self.html.push_str(tag_and_attributes);
        if let Some(testid) = self.testid.take() {
            self.html.push_str(" data-testid=\"");
            escape_html(self.html, testid);
            self.html.push('"');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_written_in_order_with_exact_amounts() {
        let mut rows = Rows::default();
        rows.row("by-user-row", |row| {
            row.heading_link("/projects/train", "train");
            row.marked("spend").money(Decimal::new(1_234_567, 3));
            row.figure("12.5%");
            row.text("2026-11-01");
        });
        assert_eq!(
            rows.into_html(),
            "<tr data-testid=\"by-user-row\"><th scope=\"row\"><a href=\"/projects/train\">train</a></th>\
             <td class=\"num\" data-testid=\"spend\" data-value=\"1234.567\">$1,234.57</td><td class=\"num\">12.5%</td>\
             <td>2026-11-01</td></tr>"
        );
    }

    #[test]
    fn tag_values_stay_text_in_cells_and_links() {
        let hostile = "<img src=x onerror=alert(1)>\"'&";
        let mut rows = Rows::default();
        rows.row("r", |row| {
            row.heading_link(hostile, hostile);
            row.heading(hostile);
            row.text(hostile);
        });
        let html = rows.into_html();
        assert!(!html.contains("<img"), "{html}");
        assert_eq!(
            html.matches("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;")
                .count(),
            4,
            "{html}"
        );
    }
}
