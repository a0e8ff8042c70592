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
use loopdbg_lesson::code::{CodeLine, loop_code};

/// The title of an agent's loop whose extraction no answered turn shows.
const UNSEEN: &str = "the agent's loop, extraction not seen yet";

/// The strategy the pane shows, and its title: a live view or a replay
/// shows an agent's loop, not a stub's, its extraction as its traffic shows
/// it (the demo agent answers only the first call; the pane said `# all of
/// them`).
fn shown_strategy(app: &App) -> (loopdbg_engine::strategy::Strategy, &'static str) {
    let mut strategy = app.strategy().clone();
    if app.live.is_none() && app.replay.is_none() {
        return (strategy, "the loop's code (◆ set by the strategy)");
    }
    use loopdbg_export::record::{Extraction, extraction_of};
    match extraction_of(&app.trace.messages) {
        Extraction::First { .. } => strategy.extract = Extract::First,
        Extraction::All => strategy.extract = Extract::All,
        // No turn of calls answered yet: the agent's way is not known,
        // and no stub strategy is in force to show instead.
        Extraction::Other { .. } | Extraction::Unknown => {
            return (strategy, UNSEEN);
        }
    }
    (strategy, "the agent's loop, by its traffic")
}

/// Rows (borders included) the folded pane needs: every ◆ line and the
/// one line the phase lights besides them. The layout gives the pane at
/// least this where the screen has it, so a toggle's line is always seen.
pub(super) fn folded_rows(app: &App) -> u16 {
    let (strategy, _) = shown_strategy(app);
    let marked = loop_code(&strategy)
        .iter()
        .filter(|l| l.strategy && !l.continuation)
        .count();
    u16::try_from(marked + 1 + 2).unwrap_or(u16::MAX)
}

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let phase = app.trace.step(app.cursor).phase;
    let (strategy, title) = shown_strategy(app);
    let mut code = loop_code(&strategy);
    // Before the traffic shows how the agent takes calls, its line says
    // so rather than claim `# all of them`.
    if title == UNSEEN {
        for line in code
            .iter_mut()
            .filter(|l| l.strategy && l.phases.contains(&loopdbg_engine::trace::Phase::Extract))
        {
            line.text = "    calls = tool_uses(reply)  # all, or [:1]? not seen yet".into();
        }
    }
    let styled = |l: &CodeLine, text: String| {
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
        Line::from(vec![span(format!("{mark} "), t.title), span(text, style)])
    };
    let whole: Vec<Line> = code.iter().map(|l| styled(l, l.text.clone())).collect();
    let inner_width = area.width.saturating_sub(2);
    let inner_height = area.height.saturating_sub(2);
    let fits = Paragraph::new(whole.clone())
        .wrap(Wrap { trim: false })
        .line_count(inner_width)
        <= usize::from(inner_height);
    // Too short for the whole loop (80×24, a tour stop's box below): the
    // lines that teach stay, the ◆ lines the strategy writes and the line
    // of this phase, one row each, the loop's indent dropped; the rest is
    // folded and the title says so.
    let (lines, title) = match fits {
        true => (whole, format!(" {title} ")),
        false => {
            let room = usize::from(inner_width).saturating_sub(2);
            let keep = folded_lines(&code, phase, usize::from(inner_height));
            // Every line kept (the wrap was what did not fit): one row
            // each, cut at the edge, indented as written.
            let all = keep.iter().all(|k| *k);
            let folded = code
                .iter()
                .enumerate()
                .filter(|(k, _)| keep[*k])
                .map(|(_, l)| {
                    let text = match all {
                        true => &l.text,
                        false => l.text.strip_prefix("    ").unwrap_or(&l.text),
                    };
                    styled(l, super::clip(text, room))
                })
                .collect();
            if all {
                return finish(app, area, buf, folded, format!(" {title} "), false);
            }
            let short = match title.starts_with("the agent's") {
                true => " the agent's loop, folded ",
                false => " the loop's code (◆ strategy), folded ",
            };
            (folded, short.to_string())
        }
    };
    finish(app, area, buf, lines, title, fits);
}

/// Draws the pane: its frame titled `title`, and `lines`, wrapped when
/// `wrap` (the whole loop fits that way), else one row each.
fn finish(app: &App, area: Rect, buf: &mut Buffer, lines: Vec<Line>, title: String, wrap: bool) {
    let block = pane_block(
        app,
        Pane::Walkthrough,
        Line::from(span(title, app.theme.title)),
    );
    let inner = block.inner(area);
    block.render(area, buf);
    let paragraph = Paragraph::new(lines);
    let paragraph = match wrap {
        true => paragraph.wrap(Wrap { trim: false }),
        false => paragraph,
    };
    paragraph
        .scroll((app.walkthrough_scroll, 0))
        .render(inner, buf);
}

/// Which lines a pane of `rows` keeps: every ◆ line (a `raise` under its
/// `if` aside) and the lines of `phase` always; then, while rows are left,
/// the lines nearest the lit one, so the fold shows as much of the loop
/// around the step as fits.
fn folded_lines(code: &[CodeLine], phase: loopdbg_engine::trace::Phase, rows: usize) -> Vec<bool> {
    let mut keep: Vec<bool> = code
        .iter()
        .map(|l| (l.strategy && !l.continuation) || l.phases.contains(&phase))
        .collect();
    let lit = code
        .iter()
        .position(|l| l.phases.contains(&phase))
        .unwrap_or(0);
    let mut left = rows.saturating_sub(keep.iter().filter(|k| **k).count());
    for distance in 1..code.len() {
        for k in [lit.checked_sub(distance), Some(lit + distance)]
            .into_iter()
            .flatten()
            .filter(|&k| k < code.len())
        {
            if left > 0 && !keep[k] {
                keep[k] = true;
                left -= 1;
            }
        }
    }
    keep
}
