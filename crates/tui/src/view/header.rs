//! Title, round, phase and the live strategy.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::span;
use crate::app::App;
use loopdbg_lesson::report::clean;

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let step = app.trace.step(app.cursor);
    let s = app.strategy();
    let title = if app.session.title.is_empty() {
        clean(&app.origin)
    } else {
        clean(&app.session.title)
    };
    let title = if app.parent.is_some() {
        format!(
            "{title} (sub-agent, depth {}, read-only; < returns)",
            app.depth()
        )
    } else {
        title
    };
    let title = match app.forks.get(app.fork).filter(|_| app.fork > 0) {
        // Which run this is comes first: the title may be cut, never that.
        Some(f) => format!(
            "fork {} (from step {}: {}) · {title}",
            app.fork,
            f.at_step + 1,
            clean(&f.label)
        ),
        None => title,
    };
    // The title gives way to the round and phase on narrow terminals.
    let title = super::clip(&title, (area.width as usize).saturating_sub(46).max(8));
    let phase = match (step.phase, step.execution) {
        // Calls of a turn end in their own order: Execute steps count the
        // endings (1, 2, …), not the calls' positions.
        (loopdbg_engine::trace::Phase::Execute, Some(_)) => {
            let start = app.trace.first_step_of_round(step.round).unwrap_or(0);
            let n = app.trace.steps[start..=app.cursor]
                .iter()
                .filter(|s| s.phase == loopdbg_engine::trace::Phase::Execute)
                .count();
            format!("{} {n}", step.phase.name())
        }
        (_, Some(e)) => format!("{} {}", step.phase.name(), e + 1),
        (_, None) => step.phase.name().to_string(),
    };
    let (check, check_style) = if step.unpaired == 0 {
        ("unpaired: none".to_string(), t.ok)
    } else {
        (
            format!("unpaired: {} · a request now → 400", step.unpaired),
            t.warn,
        )
    };
    let strategy = match (&app.replay, &app.live) {
        (Some(source), Some(live)) => format!(
            " LIVE {} · {} · {} conversation{} │ ",
            if live.follow {
                "following"
            } else {
                "paused, f follows"
            },
            clean(&live.from),
            clean(source),
            live.in_flight
                .as_deref()
                .map(|what| format!(" · {}", clean(what)))
                .unwrap_or_default(),
        ),
        (Some(source), None) => format!(" replay of a captured {} conversation │ ", clean(source)),
        (None, _) => format!(
            " extract {} │ stop {} │ behavior {} │ closure {}{} │ ",
            s.extract,
            s.stop,
            clean(&s.behavior),
            s.closure,
            s.interrupt
                .map(|i| format!(" │ interrupt r{} @{}ms", i.round, i.at_ms))
                .unwrap_or_default()
        ),
    };
    // The unpaired count is the fact that matters most: on a narrow
    // terminal the strategy gives way to it, never the reverse.
    let room =
        (area.width as usize).saturating_sub(unicode_width::UnicodeWidthStr::width(check.as_str()));
    let strategy = if unicode_width::UnicodeWidthStr::width(strategy.as_str()) > room {
        format!(
            "{} │ ",
            super::clip(strategy.trim_end_matches(" │ "), room.saturating_sub(3))
        )
    } else {
        strategy
    };
    let lines = vec![
        Line::from(vec![
            span(" loopdbg ", t.selected),
            span(" ", t.text),
            span(title, t.title),
            span(
                format!(
                    "  round {}/{} · {} · step {}/{}",
                    step.round,
                    s.max_rounds,
                    phase,
                    app.cursor + 1,
                    app.trace.len()
                ),
                t.text,
            ),
        ]),
        Line::from(vec![span(strategy, t.text), span(check, check_style)]),
    ];
    Paragraph::new(lines).render(area, buf);
}
