//! Seed 003's four steps with the one in progress, and the three logs.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{pane_block, span};
use crate::app::{App, Pane};
use loopdbg_lesson::report::{clean, compact, show_text};
use loopdbg_lesson::walkthrough::{self, STEPS, StepState};

/// Rounds of logs 2 and 3 the pane shows.
const LOG_ROUNDS: usize = 40;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    // Only the latest rounds: the logs of a 5000-round spin do not fit anyway.
    let w = walkthrough::recent(&app.trace, app.cursor, LOG_ROUNDS);
    let block = pane_block(
        app,
        Pane::Walkthrough,
        Line::from(span(" walkthrough: two trips ", t.title)),
    );
    let inner = block.inner(area);
    block.render(area, buf);

    let mut lines: Vec<Line> = Vec::new();
    for (i, (text, state)) in STEPS.iter().zip(w.states).enumerate() {
        let (mark, style) = match state {
            StepState::Done => ("✓", t.ok),
            StepState::Active => ("▶", t.selected),
            StepState::Again => ("↻", t.dim),
            StepState::Todo => ("·", t.dim),
        };
        lines.push(Line::from(span(format!("{mark} {} {text}", i + 1), style)));
    }
    lines.push(Line::from(span("log 1 · first response body", t.title)));
    lines.push(Line::from(span(
        w.first_response
            .as_ref()
            .map_or("(not yet)".to_string(), |v| clean(&compact(v))),
        if w.first_response.is_some() {
            t.text
        } else {
            t.dim
        },
    )));
    lines.push(Line::from(span("log 2 · function return values", t.title)));
    if w.earlier > 0 {
        lines.push(Line::from(span(
            format!("… {} earlier entries", w.earlier),
            t.dim,
        )));
    }
    if w.returns.is_empty() {
        lines.push(Line::from(span("(none yet)", t.dim)));
    }
    for r in &w.returns {
        let status = if !r.ran {
            " [refused]"
        } else if r.is_error {
            " [error]"
        } else {
            ""
        };
        lines.push(Line::from(vec![
            span(format!("r{} {}", r.round, clean(&r.name)), t.call),
            span(
                format!(
                    "({}) → {}{status}",
                    clean(&compact(&r.args)),
                    clean(&compact(&r.value))
                ),
                if r.is_error { t.warn } else { t.text },
            ),
        ]));
    }
    lines.push(Line::from(span(
        "log 3 · response text after the results",
        t.title,
    )));
    if w.answers.is_empty() {
        lines.push(Line::from(span("(none yet)", t.dim)));
    }
    for a in &w.answers {
        let note = if a.asks_for_tools {
            "  (asks for tools again)"
        } else {
            ""
        };
        lines.push(Line::from(vec![
            span(format!("r{} ", a.round), t.dim),
            span(show_text(a.text.as_deref()), t.text),
            span(note, t.warn),
        ]));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((app.walkthrough_scroll, 0))
        .render(inner, buf);
}
