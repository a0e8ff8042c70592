//! The `?` popup: every binding of the keymap tables, by group (the
//! panes' keys, then the keys a popup takes first).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{centered, popup_frame, span};
use crate::app::App;
use crate::keymap::{KEYMAP, POPUP_KEYMAP, keys_label};

/// The help text, one line per binding under its group heading.
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let mut group = "";
    for b in KEYMAP.iter().chain(POPUP_KEYMAP.iter()) {
        // A replay has no strategy to change: its keys would only say so.
        if app.replay.is_some() && b.group == "Strategy" {
            continue;
        }
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
    // As wide as the longest line (the screen allows); narrower screens wrap.
    let widest = lines.iter().map(Line::width).max().unwrap_or(0) as u16;
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let width = (widest + 2).min(area.width);
    let height = paragraph.line_count(width.saturating_sub(2)) as u16;
    let rect = centered(area, width, height + 2);
    let inner = popup_frame(app, rect, "keys", buf);
    let max = height.saturating_sub(inner.height);
    paragraph.scroll((scroll.min(max), 0)).render(inner, buf);
}
