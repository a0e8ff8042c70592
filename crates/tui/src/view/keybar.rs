//! The key bar, read from the keymap table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use unicode_width::UnicodeWidthStr;

use super::span;
use crate::action::Action;
use crate::app::App;
use crate::keymap::KEYMAP;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    if let Some(query) = app.search() {
        // While a search is typed, the bar is its prompt.
        Paragraph::new(Line::from(vec![
            span(" /", t.title),
            span(loopdbg_lesson::report::clean(query), t.text),
            span("▏", t.selected),
            span("  Enter: select the next match · Esc: cancel", t.dim),
        ]))
        .render(area, buf);
        return;
    }
    // `c` is the first to go on a narrow bar: the tour never asks for it
    // and `?` lists it, while e, s, m and p are what the tour presses.
    let order = KEYMAP
        .iter()
        .filter(|b| b.action != Action::Continue)
        .chain(KEYMAP.iter().filter(|b| b.action == Action::Continue));
    let entries: Vec<(String, &str, bool)> = order
        // A replay has no strategy to change and no model to fork.
        .filter(|b| !(app.replay.is_some() && matches!(b.group, "Strategy" | "Fork")))
        .filter_map(|b| {
            let label = b.bar?;
            // Help and quit are how a user finds everything else: they are
            // kept when the bar is too narrow for every entry.
            let essential = matches!(b.action, Action::Help | Action::Quit);
            Some((format!(" {}", b.keys[0].label()), label, essential))
        })
        .collect();
    let width = |(key, label, _): &(String, &str, bool)| key.width() + 1 + label.width();
    let mut room = (area.width as usize)
        .saturating_sub(entries.iter().filter(|e| e.2).map(width).sum::<usize>());
    let mut spans: Vec<Span> = Vec::new();
    for entry in &entries {
        if !entry.2 {
            let w = width(entry);
            if w > room {
                // Later entries would leave a gap in the order; stop here.
                room = 0;
                continue;
            }
            room -= w;
        }
        spans.push(span(entry.0.clone(), t.title));
        spans.push(span(format!(":{}", entry.1), t.text));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}
