//! The explain box: one sentence on this phase, the notice of the last
//! toggle; at the end, the run's summary and warnings.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::span;
use crate::app::App;
use crate::explain::explain;
use loopdbg_lesson::report::{clean, show_text};

/// The box's title and lines: the tour's stop first (when touring), then
/// the notice, then what this step does (or the end summary).
fn content(app: &App) -> (&'static str, Vec<Line<'static>>) {
    let t = &app.theme;
    let (title, mut lines) = if app.at_end() {
        (" end summary ", end_summary(app))
    } else {
        (" explain ", this_step(app))
    };
    let notice = app
        .notice
        .as_ref()
        .map(|n| Line::from(span(format!("» {}", clean(n)), t.added)));
    match &app.tour {
        // The tour comes first: it says what to do with everything below;
        // the verdict on an answer right after it, never scrolled away.
        Some(tour) => {
            let mut tour_lines = tour_lines(app, tour);
            tour_lines.extend(notice);
            tour_lines.append(&mut lines);
            lines = tour_lines;
        }
        None => lines.extend(notice),
    }
    (title, lines)
}

/// How many lines the box's text takes at `width` (borders aside).
pub(super) fn wanted_height(app: &App, width: u16) -> u16 {
    let (_, lines) = content(app);
    let height = Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .line_count(width);
    u16::try_from(height).unwrap_or(u16::MAX)
}

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let (title, lines) = content(app);
    let focused = app.focus == crate::app::Pane::Explain;
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(if focused { t.focus_border } else { t.border })
        .title(span(title, t.title));
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: true });
    // Never scroll past the last line: the wrapped height bounds it.
    let height = paragraph.line_count(area.width) as u16;
    let visible = area.height.saturating_sub(1);
    let scroll = app.explain_scroll.min(height.saturating_sub(visible));
    if height > visible {
        let shown = (scroll + visible).min(height);
        let more = match shown < height {
            true => format!(" more ↓ {shown}/{height} "),
            false => format!(" {shown}/{height} "),
        };
        let x = area.right().saturating_sub(more.chars().count() as u16 + 1);
        buf.set_string(x, area.y, more, t.title);
    }
    paragraph.scroll((scroll, 0)).render(area, buf);
}

/// The run's summary and warnings, at its end.
fn end_summary(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines: Vec<Line> = Vec::new();
    let trace = &app.trace;
    let a = app.analysis();
    let unpaired = &a.unpaired;
    lines.push(Line::from(vec![
        span(
            format!(
                "rounds {} · tool runs {} ",
                trace.outcome.requests, a.tool_runs
            ),
            t.text,
        ),
        span(
            if unpaired.is_empty() {
                "· unpaired none ".to_string()
            } else {
                format!(
                    "· unpaired {} ",
                    clean(&loopdbg_engine::ledger::counted_ids(unpaired))
                )
            },
            if unpaired.is_empty() { t.ok } else { t.warn },
        ),
        span(
            format!(
                "· end {} ({})",
                trace.outcome.end.as_str(),
                clean(&trace.outcome.detail)
            ),
            if trace.outcome.end == loopdbg_engine::trace::End::ModelDone {
                t.ok
            } else {
                t.warn
            },
        ),
    ]));
    // A replay's file may end before any answer (a request body, a
    // log cut mid-loop): say so in words, not the seeds' `null`.
    let shown = match trace.outcome.final_text.as_deref() {
        None if trace.is_replay() => {
            let asking = trace
                .messages
                .iter()
                .rev()
                .find(|m| m.role == loopdbg_engine::message::Role::Assistant)
                .is_some_and(|m| m.tool_uses().next().is_some());
            if asking {
                "none yet (the last reply asks for tools; no answer came after it)".to_string()
            } else {
                "none (no answer text in the conversation)".to_string()
            }
        }
        text => show_text(text),
    };
    lines.push(Line::from(vec![
        span("final: ", t.title),
        span(shown, t.text),
    ]));
    // A spinning loop repeats the same 400 every round: say each
    // distinct problem once, with how many requests carried it.
    // Grouped by the ids involved; the latest message of a group says
    // how many calls of each id are left (they pile up in a spin).
    let mut said: Vec<(Vec<&str>, String, usize)> = Vec::new();
    for v in &trace.violations {
        let mut key: Vec<&str> = v.ids.iter().map(String::as_str).collect();
        key.sort_unstable();
        key.dedup();
        match said.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, m, n)) => {
                *m = v.message.clone();
                *n += 1;
            }
            None => said.push((key, v.message.clone(), 1)),
        }
    }
    for (_, message, n) in &said {
        let times = if *n > 1 {
            format!(" (in {n} requests)")
        } else {
            String::new()
        };
        lines.push(Line::from(span(
            format!("⚠ {}{times}", clean(message)),
            t.warn,
        )));
    }
    for w in a.warnings.iter().filter(|w| w.kind != "provider_400") {
        lines.push(Line::from(span(format!("⚠ {}", clean(&w.message)), t.warn)));
    }
    lines
}

/// What this step does, or the provider's words for a request it would
/// reject.
fn this_step(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines: Vec<Line> = Vec::new();
    // A request the provider would reject is said in the provider's
    // own words (for the wire view shown), first, where it is not cut.
    // A replay has no stub, and its findings already carry the
    // provider's words with what the file shows became of the request.
    let format = app
        .view
        .unwrap_or(loopdbg_wire::provider::Format::Anthropic);
    let replay = app.trace.is_replay();
    let rejection = (!replay)
        .then(|| crate::explain::provider_rejection(&app.session, &app.trace, app.cursor, format))
        .flatten();
    match rejection {
        Some(words) => {
            lines.push(Line::from(span(format!("⚠ {words}"), t.warn)));
            lines.push(Line::from(span(
                "The stub accepts it so you can see what the loop does next.",
                t.text,
            )));
        }
        None => lines.push(Line::from(span(
            explain(&app.trace, app.cursor, app.session.tools.len()),
            t.text,
        ))),
    }
    lines
}

/// The tour's stop: its title, the question and how to answer.
fn tour_lines(app: &App, tour: &crate::app::Tour) -> Vec<Line<'static>> {
    let t = &app.theme;
    let stop = &loopdbg_lesson::tour::STOPS[tour.index];
    let solved = if tour.solved.contains(&tour.index) {
        " ✓"
    } else {
        ""
    };
    let prompt = match &app.mode {
        crate::app::Mode::Answer(typed) => vec![
            span("  answer: ", t.title),
            span(format!("{}▏", clean(typed)), t.selected),
            span("  Enter checks · Esc cancels", t.dim),
        ],
        _ => vec![span(
            if tour.solved.contains(&tour.index) {
                "  (a: answer again · T: next stop)"
            } else {
                "  (a: answer · T: next stop)"
            },
            t.dim,
        )],
    };
    let mut question = vec![span("? ", t.warn), span(stop.question, t.text)];
    question.extend(prompt);
    vec![
        Line::from(span(
            format!(
                "tour {}/{}: {}{solved} · press: {}",
                tour.index + 1,
                loopdbg_lesson::tour::STOPS.len(),
                stop.title,
                stop.press
            ),
            t.title,
        )),
        Line::from(question),
    ]
}
