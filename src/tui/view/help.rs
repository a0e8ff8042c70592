//! The `?` popup: every binding of the keymap table, by group.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{centered, popup_frame, span};
use crate::tui::app::App;
use crate::tui::keymap::{KEYMAP, keys_label};

/// The help text, one line per binding under its group heading.
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let mut group = "";
    for b in KEYMAP.iter() {
        if b.group != group {
            group = b.group;
            if !lines.is_empty() {
                lines.push(Line::from(""));
            }
            lines.push(Line::from(span(group.to_string(), t.title)));
        }
        lines.push(Line::from(vec![
            span(format!("  {:<22}", keys_label(b)), t.call),
            span(b.description.to_string(), t.text),
        ]));
    }
    lines
}

pub(super) fn render(app: &App, scroll: u16, area: Rect, buf: &mut Buffer) {
    let lines = help_lines(app);
    let rect = centered(area, 86, lines.len() as u16 + 2);
    let inner = popup_frame(app, rect, "keys", buf);
    let max = (lines.len() as u16).saturating_sub(inner.height);
    Paragraph::new(lines)
        .scroll((scroll.min(max), 0))
        .render(inner, buf);
}
