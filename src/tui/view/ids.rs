//! The pairing ledger at this step: pending, paired, unpaired, duplicate
//! ids and orphan results, with where each sits. Ids whose state changed at
//! this step are marked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{pane_block, span};
use crate::ledger::{IdEntry, IdState, Ledger};
use crate::report::clean;
use crate::tui::app::{App, Pane};

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let ledger = app.trace.ledger_at(app.cursor);
    let before = if app.cursor == 0 {
        Ledger::default()
    } else {
        app.trace.ledger_at(app.cursor - 1)
    };
    let c = ledger.counts();
    let title = Line::from(vec![
        span(" ids ", t.title),
        span(
            format!(
                "pending {} · paired {} · unpaired {} ",
                c.pending, c.paired, c.unpaired
            ),
            if c.unpaired > 0 { t.warn } else { t.dim },
        ),
    ]);
    let block = pane_block(app, Pane::Ids, title);
    let inner = block.inner(area);
    block.render(area, buf);

    let mut lines: Vec<Line> = Vec::new();
    let sections = [
        (IdState::Pending, "pending · called, being handled", t.call),
        (IdState::Paired, "paired · has its tool_result", t.ok),
        (
            IdState::Unpaired,
            "unpaired · no result, not handled",
            t.warn,
        ),
    ];
    for (state, heading, style) in sections {
        let entries: Vec<&IdEntry> = ledger.ids_in(state).collect();
        lines.push(Line::from(span(
            format!("{} {heading}", entries.len()),
            if entries.is_empty() { t.dim } else { style },
        )));
        for e in entries {
            let was = before
                .entries
                .iter()
                .find(|b| b.id == e.id)
                .map(|b| b.state);
            let change = match was {
                Some(w) if w != e.state => format!("  ← was {}", w.as_str()),
                None => "  ← new".to_string(),
                _ => String::new(),
            };
            let whereabouts = match e.first_result {
                Some(result) => format!("{} → messages[{}]", e.first_call, result.message),
                None => e.first_call.to_string(),
            };
            let row_style = if change.is_empty() { t.text } else { t.added };
            lines.push(Line::from(vec![
                span(format!("  {} ", clean(&e.id)), row_style),
                span(format!("{} ", clean(&e.name)), t.call),
                span(whereabouts, t.dim),
                span(change, t.added),
            ]));
        }
    }
    let dups: Vec<&IdEntry> = ledger.duplicates().collect();
    if !dups.is_empty() {
        lines.push(Line::from(span(
            format!("duplicate ids (one id, several tool_use): {}", dups.len()),
            t.warn,
        )));
        for e in dups {
            lines.push(Line::from(span(
                format!("  {} ×{} ({})", clean(&e.id), e.calls, clean(&e.name)),
                t.text,
            )));
        }
    }
    if !ledger.orphans.is_empty() {
        lines.push(Line::from(span(
            format!("orphan results (answer no call): {}", ledger.orphans.len()),
            t.warn,
        )));
        for o in &ledger.orphans {
            lines.push(Line::from(span(
                format!("  {} at {}", clean(&o.tool_use_id), o.at),
                t.text,
            )));
        }
    }
    let max_scroll = (lines.len() as u16).saturating_sub(inner.height);
    Paragraph::new(lines)
        .scroll((app.ids_scroll.min(max_scroll), 0))
        .render(inner, buf);
}
