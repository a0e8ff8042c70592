//! The loop's code beside its state: the line of the current phase is lit,
//! and the lines the strategy writes are marked, so a toggle shows what it
//! changes in the code.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{pane_block, span};
use crate::app::{App, Pane};
use loopdbg_engine::strategy::Extract;
use loopdbg_lesson::code::loop_code;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let phase = app.trace.step(app.cursor).phase;
    // A live view or a replay shows an agent's loop, not a stub's: its
    // extraction is what its traffic shows (the demo agent answers only
    // the first call; the pane said `# all of them`).
    let observed = match app.live.is_some() || app.replay.is_some() {
        true => {
            use loopdbg_export::record::{Extraction, extraction_of};
            match extraction_of(&app.trace.messages) {
                Extraction::First { .. } => Some(Extract::First),
                Extraction::All => Some(Extract::All),
                Extraction::Other { .. } | Extraction::Unknown => None,
            }
        }
        false => None,
    };
    let mut strategy = app.strategy().clone();
    let title = match observed {
        Some(extract) => {
            strategy.extract = extract;
            " the agent's loop, by its traffic "
        }
        None => " the loop's code (◆ set by the strategy) ",
    };
    let block = pane_block(app, Pane::Walkthrough, Line::from(span(title, t.title)));
    let inner = block.inner(area);
    block.render(area, buf);
    let lines: Vec<Line> = loop_code(&strategy)
        .into_iter()
        .map(|l| {
            let here = l.phases.contains(&phase);
            let mark = match (here, l.strategy) {
                (true, _) => "▶",
                (false, true) => "◆",
                (false, false) => " ",
            };
            let style = if here {
                t.selected
            } else if l.strategy {
                t.call
            } else {
                t.text
            };
            Line::from(vec![span(format!("{mark} "), t.title), span(l.text, style)])
        })
        .collect();
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((app.walkthrough_scroll, 0))
        .render(inner, buf);
}
