//! The `?` popup: every binding of the keymap tables, by group (the
//! panes' keys, then the keys a popup takes first).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{centered, popup_frame, span};
use crate::app::App;
use crate::keymap::{KEYMAP, POPUP_KEYMAP, keys_label};

/// Where a binding's description starts: after the keys' column.
const KEYS_COLUMN: usize = 24;

/// The help text, one line per binding under its group heading; a
/// description longer than `width` goes on under itself, not at column 0.
pub fn help_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let mut group = "";
    let room = width.saturating_sub(KEYS_COLUMN).max(20);
    let entry = |lines: &mut Vec<Line<'static>>, keys: String, text: &str| {
        for (i, part) in wrapped(text, room).into_iter().enumerate() {
            let keys = if i == 0 { keys.clone() } else { String::new() };
            lines.push(Line::from(vec![
                span(format!("  {keys:<w$}", w = KEYS_COLUMN - 2), t.call),
                span(part, t.text),
            ]));
        }
    };
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
        entry(&mut lines, keys_label(b), b.description);
    }
    lines.push(Line::from(""));
    lines.push(Line::from(span("Mouse and typing", t.title)));
    entry(
        &mut lines,
        "wheel".into(),
        "scroll the pane or popup under the pointer",
    );
    entry(
        &mut lines,
        "typing".into(),
        "while a search (/) or a tour answer (a) is typed, keys are text: Enter submits, Esc cancels, Backspace erases",
    );
    lines
}

/// `text` in lines of at most `width` columns, broken at spaces.
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let used = unicode_width::UnicodeWidthStr::width(line.as_str());
        if used > 0 && used + 1 + unicode_width::UnicodeWidthStr::width(word) > width {
            lines.push(std::mem::take(&mut line));
        } else if used > 0 {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

pub(super) fn render(app: &App, scroll: u16, area: Rect, buf: &mut Buffer) {
    // As wide as the longest line (the screen allows); on a narrower
    // screen the descriptions wrap under themselves.
    let widest = help_lines(app, usize::MAX)
        .iter()
        .map(Line::width)
        .max()
        .unwrap_or(0) as u16;
    let width = (widest + 2).min(area.width);
    let lines = help_lines(app, usize::from(width.saturating_sub(2)));
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let height = paragraph.line_count(width.saturating_sub(2)) as u16;
    let rect = centered(area, width, height + 2);
    let inner = popup_frame(app, rect, "keys", buf);
    let max = height.saturating_sub(inner.height);
    paragraph.scroll((scroll.min(max), 0)).render(inner, buf);
}
