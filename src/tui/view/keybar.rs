//! The key bar, read from the keymap table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::span;
use crate::tui::app::App;
use crate::tui::keymap::KEYMAP;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut spans: Vec<Span> = Vec::new();
    for b in KEYMAP.iter() {
        let Some(label) = b.bar else { continue };
        // A replay has no strategy to change.
        if app.replay.is_some() && b.group == "Strategy" {
            continue;
        }
        spans.push(span(format!(" {}", b.keys[0].label()), t.title));
        spans.push(span(format!(":{label}"), t.text));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}
