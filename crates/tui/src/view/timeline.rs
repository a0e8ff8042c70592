//! The phase timeline and the strip of rounds (trips to the model).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::span;
use crate::app::App;
use loopdbg_engine::trace::Phase;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let step = app.trace.step(app.cursor);
    // The whole cycle is 81 columns with its margin: an 80-column
    // terminal drops the margin rather than "Done".
    let margin = if area.width > 80 { " " } else { "" };
    let mut phases: Vec<Span> = vec![span(margin, t.text)];
    for (i, phase) in Phase::ALL.iter().enumerate() {
        if *phase == Phase::Done {
            // The loop goes round before it ends.
            phases.push(span(" → Request … ", t.dim));
            phases.push(span("→ ", t.dim));
        } else if i > 0 {
            phases.push(span(" → ", t.dim));
        }
        let mark = if app.breakpoints.contains(phase) {
            "●"
        } else {
            ""
        };
        let label = format!("{mark}{}", phase.name());
        let style = if *phase == step.phase {
            t.selected
        } else {
            t.text
        };
        phases.push(span(label, style));
    }

    // Rounds: a window around the current one when there are many.
    let total = app.trace.rounds.len().max(step.round as usize);
    let width = area.width.saturating_sub(12) as usize;
    let per = 10usize;
    let fit = (width / per).max(1);
    let current = step.round as usize;
    let start = current
        .saturating_sub(fit / 2)
        .max(1)
        .min(total.saturating_sub(fit) + 1)
        .max(1);
    let end = (start + fit - 1).min(total);
    let mut rounds: Vec<Span> = vec![span(" trips ", t.dim)];
    if start > 1 {
        rounds.push(span("… ", t.dim));
    }
    for n in start..=end {
        let label = match app.trace.round(n as u32) {
            // Later trips stay unlabelled: what the model says next is not known yet.
            _ if n > current => format!("{n}"),
            // A reply cut by max_tokens is "cut" whether the loop took it or,
            // under `robust`, refused it; "refused" is left for a request
            // the provider refused (a replay's trip with no reply).
            Some(r) if r.reply.finish_reason() == loopdbg_engine::session::FinishReason::Length => {
                format!("{n}:cut")
            }
            Some(r)
                if r.reply.finish_reason()
                    == loopdbg_engine::session::FinishReason::ContentFilter =>
            {
                format!("{n}:filtered")
            }
            Some(r) if r.reply_message.is_none() => format!("{n}:refused"),
            Some(r) if !r.reply.tool_calls.is_empty() => format!("{n}:calls"),
            Some(_) => format!("{n}:answer"),
            None => format!("{n}:no reply"),
        };
        let style = if n == current {
            t.selected
        } else if n < current {
            t.text
        } else {
            t.dim
        };
        rounds.push(span(format!(" {label} "), style));
        if n < end {
            rounds.push(span("⇄", t.dim));
        }
    }
    if end < total {
        rounds.push(span(format!(" … {total}"), t.dim));
    }

    // Two rows (a short terminal): the phases and trips without the rule
    // above them, whose row the panes need more.
    let block = match area.height > 2 {
        true => Block::default()
            .borders(Borders::TOP)
            .border_style(t.border)
            .title(span(" loop ", t.title)),
        false => Block::default(),
    };
    Paragraph::new(vec![Line::from(phases), Line::from(rounds)])
        .block(block)
        .render(area, buf);
}
