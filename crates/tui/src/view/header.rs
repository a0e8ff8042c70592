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
    let position = format!(
        "  round {}/{} · {} · step {}/{}",
        step.round,
        s.max_rounds,
        phase,
        app.cursor + 1,
        app.trace.len()
    );
    let strategy = |separator: &str, tight: bool| strategy_text(app, separator, tight);
    let width = |text: &str| unicode_width::UnicodeWidthStr::width(text);
    let room = area.width as usize;
    let wide = strategy(" │ ", false);
    let logo = vec![span(" loopdbg ", t.selected), span(" ", t.text)];
    let lines = if width(&wide) + 3 + width(&check) <= room {
        // Everything on its line: the title, then the strategy and the
        // unpaired count.
        let title = super::clip(&title, room.saturating_sub(46).max(8));
        vec![
            Line::from([logo, vec![span(title, t.title), span(position, t.text)]].concat()),
            Line::from(vec![
                span(format!("{wide} │ "), t.text),
                span(check, check_style),
            ]),
        ]
    } else {
        // A narrow terminal (80 columns): the strategy keeps its own line,
        // whole, and the unpaired count moves up beside the step; the
        // title gives way to both, as it is what the screen needs least.
        // Two spaces between the parts, then one, before anything is cut
        // (an interrupt makes the line 84 columns).
        let narrow = [strategy("  ", true), strategy(" ", true)]
            .into_iter()
            .find(|line| width(line) <= room)
            .unwrap_or_else(|| strategy(" ", true));
        // The count is never cut: the step gives way first, from the round
        // to the phase alone (60 columns).
        let fixed = 10 + width(&check) + 3;
        let tail = [
            position.clone(),
            format!("  {phase} · step {}/{}", app.cursor + 1, app.trace.len()),
            format!("  {phase}"),
        ]
        .into_iter()
        .find(|p| fixed + width(p) <= room)
        .unwrap_or_default();
        let tail = format!("{tail} │ ");
        let title_room = room.saturating_sub(10 + width(&tail) + width(&check) + 1);
        let title = match title_room {
            0..=5 => String::new(),
            n => super::clip(&title, n),
        };
        vec![
            Line::from(
                [
                    logo,
                    vec![
                        span(title, t.title),
                        span(tail, t.text),
                        span(check, check_style),
                    ],
                ]
                .concat(),
            ),
            Line::from(span(super::clip(&narrow, room), t.text)),
        ]
    };
    Paragraph::new(lines).render(area, buf);
}

/// The header's second line: the strategy (or what a replay or live view
/// shows instead), its parts joined by `separator`; `tight`: a narrow
/// terminal's form, an interrupt's time without a space and in whole
/// seconds where it is whole.
fn strategy_text(app: &App, separator: &str, tight: bool) -> String {
    let s = app.strategy();
    match (&app.replay, &app.live) {
        (Some(source), Some(live)) => format!(
            " LIVE {} · {} · {} conversation{}",
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
        (Some(source), None) => format!(" replay of a captured {} conversation", clean(source)),
        (None, _) => format!(
            " extract {}{separator}stop {}{separator}behavior {}{separator}closure {}{}",
            s.extract,
            s.stop,
            clean(&s.behavior),
            s.closure,
            s.interrupt
                .map(|i| match (tight, i.at_ms % 1000) {
                    (true, 0) => format!("{separator}interrupt r{}@{}s", i.round, i.at_ms / 1000),
                    (true, _) => format!("{separator}interrupt r{}@{}ms", i.round, i.at_ms),
                    (false, _) => format!("{separator}interrupt r{} @{}ms", i.round, i.at_ms),
                })
                .unwrap_or_default()
        ),
    }
}
