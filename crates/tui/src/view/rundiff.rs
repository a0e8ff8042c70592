//! The `D` popup: this run beside another as two timelines stepped
//! together, round by round, the first divergence marked and the round of
//! the current step pointed at.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::{span, text_popup};
use crate::app::App;
use loopdbg_lesson::diff::{Diff, RoundView};
use loopdbg_lesson::report::clean;

/// One round of one run, in a cell: `2 calls · ran w1 · dropped f1 → continue`.
fn cell(v: Option<&RoundView>) -> String {
    let Some(v) = v else {
        return "—".into();
    };
    let mut parts = Vec::new();
    if v.calls.is_empty() {
        parts.push(match &v.text {
            Some(t) => format!("answer {:?}", clean(t).chars().take(24).collect::<String>()),
            None => "no calls, no text".into(),
        });
    } else {
        parts.push(format!("calls {}", v.calls.join(" ")));
    }
    if !v.dropped.is_empty() {
        parts.push(format!("dropped {}", v.dropped.join(" ")));
    }
    if let Some(d) = &v.decision {
        parts.push(format!("→ {}", d.split(':').next().unwrap_or(d)));
    }
    clean(&parts.join(" · "))
}

pub(super) fn render(
    app: &App,
    other: &str,
    diff: &Diff,
    scroll: u16,
    area: Rect,
    buf: &mut Buffer,
) {
    let t = &app.theme;
    let current = app.trace.step(app.cursor).round;
    let mut lines: Vec<Line> = vec![
        Line::from(vec![
            span("this:  ", t.title),
            span(clean(&diff.left), t.text),
        ]),
        Line::from(vec![
            span("other: ", t.title),
            span(clean(&diff.right), t.text),
        ]),
    ];
    match &diff.first_divergence {
        None => lines.push(Line::from(span(
            "the runs are the same, round by round",
            t.ok,
        ))),
        Some(d) => lines.push(Line::from(span(
            format!("first divergence: round {} — {}", d.round, clean(&d.what)),
            t.warn,
        ))),
    }
    lines.push(Line::from(""));
    let first = diff.first_divergence.as_ref().map(|d| d.round);
    for r in &diff.rounds {
        let here = if r.round == current { "▶" } else { " " };
        let mark = if Some(r.round) == first {
            "✗ parts here"
        } else if r.differences.is_empty() {
            "="
        } else {
            "≠"
        };
        let style = if r.differences.is_empty() {
            t.text
        } else {
            t.warn
        };
        lines.push(Line::from(vec![
            span(format!("{here} round {} ", r.round), t.title),
            span(mark, style),
        ]));
        lines.push(Line::from(vec![
            span("    this  ", t.dim),
            span(cell(r.left.as_ref()), t.text),
        ]));
        lines.push(Line::from(vec![
            span("    other ", t.dim),
            span(cell(r.right.as_ref()), style),
        ]));
    }
    lines.push(Line::from(""));
    for row in &diff.summary {
        if !row.same {
            lines.push(Line::from(vec![
                span(format!("≠ {}: ", row.what), t.warn),
                span(
                    format!("this {} │ other {}", clean(&row.left), clean(&row.right)),
                    t.text,
                ),
            ]));
        }
    }
    let title = format!("this run ↔ {}", clean(other));
    text_popup(app, lines, &title, 110, scroll, area, buf);
}
