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
        // What just happened (an alarm, what a key did) before the
        // summary: a long log's end summary runs past the box, and an
        // alarm after it was scrolled out of sight.
        None => {
            if let Some(notice) = notice {
                lines.insert(0, notice);
            }
        }
    }
    (title, lines)
}

/// The box's text, one line per line it holds (unwrapped): what `y`
/// copies when the box has the focus.
pub fn box_text(app: &App) -> String {
    let (_, lines) = content(app);
    let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
    lines.join("\n")
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
    // Never scroll past the last line: the wrapped text's height bounds it
    // (the border line is not text).
    let height = wanted_height(app, area.width);
    let visible = area.height.saturating_sub(1);
    let scroll = app.explain_scroll.min(height.saturating_sub(visible));
    // The marker goes on the border after the paragraph drew it.
    paragraph.scroll((scroll, 0)).render(area, buf);
    if height > visible {
        let shown = (scroll + visible).min(height);
        let more = match shown < height {
            // The key that scrolls it whatever has the focus, named
            // where the cut is seen (Tab to the box then j was unseen).
            true => format!(" J: more ↓ {shown}/{height} "),
            false => format!(" {shown}/{height} "),
        };
        let x = area.right().saturating_sub(more.chars().count() as u16 + 1);
        buf.set_string(x, area.y, more, t.title);
    }
}

/// The run's summary and warnings, at its end.
fn end_summary(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    // Before any traffic there is nothing to judge: no "end", no warning.
    if let Some(waiting) = app.live.as_ref().and_then(|l| l.waiting.as_ref()) {
        return vec![Line::from(vec![
            span("nothing to judge yet ", t.title),
            span(clean(waiting), t.dim),
        ])];
    }
    let mut lines: Vec<Line> = Vec::new();
    let trace = &app.trace;
    let a = app.analysis();
    let unpaired = &a.unpaired;
    // The answer and what is wrong with it first: they are what the run
    // was for, and on a small screen (a tour at 80×24) the first lines
    // are the ones seen.
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
    for w in a
        .warnings
        .iter()
        .filter(|w| w.kind != loopdbg_lesson::checks::WarningKind::Provider400)
    {
        lines.push(Line::from(span(format!("⚠ {}", clean(&w.message)), t.warn)));
    }
    // Then the counts: what a small screen can scroll to.
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
    if let Some(tokens) = app.tokens() {
        lines.push(Line::from(vec![
            span("tokens: ", t.title),
            span(
                format!(
                    "{} over {} trip(s){}",
                    tokens_line(&tokens.total, tokens.cost),
                    tokens.trips.len(),
                    priced_note(tokens)
                ),
                t.text,
            ),
        ]));
        for tool in tokens.tools.iter().take(5) {
            lines.push(Line::from(span(
                format!(
                    "  {} × {}: {} out to call it, {} in for its results{}",
                    clean(&tool.name),
                    tool.calls,
                    thousands(tool.output),
                    thousands(tool.results),
                    tool.cost
                        .map(|c| format!(" · {}", dollars(c)))
                        .unwrap_or_default()
                ),
                t.text,
            )));
        }
    }
    lines
}

/// `12,345 in · 1,200 cached · 300 out · $0.0123`: what a trip or a run
/// read and wrote, and its cost when priced.
pub(super) fn tokens_line(u: &loopdbg_engine::message::Usage, cost: Option<f64>) -> String {
    let mut parts = vec![format!("{} in", thousands(u.input))];
    if u.cache_read > 0 {
        parts.push(format!("{} cached", thousands(u.cache_read)));
    }
    if u.cache_write > 0 {
        parts.push(format!("{} to cache", thousands(u.cache_write)));
    }
    parts.push(format!("{} out", thousands(u.output)));
    if let Some(c) = cost {
        parts.push(dollars(c));
    }
    parts.join(" · ")
}

/// Which prices the cost is at, and which models had none.
fn priced_note(tokens: &loopdbg_formats::usage::Summary) -> String {
    match (tokens.cost, tokens.unpriced.is_empty()) {
        (Some(_), true) => format!(" (prices of {})", tokens.prices_as_of),
        (Some(_), false) => format!(
            " (prices of {}; no price for {}: --prices FILE)",
            tokens.prices_as_of,
            clean(&tokens.unpriced.join(", "))
        ),
        (None, _) => format!(
            " (no price for {}: --prices FILE)",
            clean(&tokens.unpriced.join(", "))
        ),
    }
}

/// A count with thousands separators.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars, to four places below a dollar.
pub(super) fn dollars(c: f64) -> String {
    if c < 1.0 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
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
        .unwrap_or(loopdbg_formats::provider::Format::Anthropic);
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
    lines.extend(trip_tokens(app));
    lines
}

/// Once a reply is in: the tokens its trip took, and the run's so far.
fn trip_tokens(app: &App) -> Option<Line<'static>> {
    let t = &app.theme;
    let step = app.trace.step(app.cursor);
    if step.phase == loopdbg_engine::trace::Phase::Request {
        return None;
    }
    let round = app
        .trace
        .rounds
        .get((step.round as usize).checked_sub(1)?)?;
    let usage = round.reply.usage?;
    let cost = |model: Option<&str>, u: &loopdbg_engine::message::Usage| {
        model.and_then(|m| app.prices.cost(m, u))
    };
    let (so_far, so_far_cost) = app.tokens_so_far(step.round as usize);
    let model = round
        .reply
        .model
        .as_deref()
        .map(|m| format!(" ({})", clean(m)))
        .unwrap_or_default();
    Some(Line::from(vec![
        span("tokens: ", t.title),
        span(
            format!(
                "this trip {}{model}; so far {}",
                tokens_line(&usage, cost(round.reply.model.as_deref(), &usage)),
                tokens_line(&so_far, so_far_cost)
            ),
            t.text,
        ),
    ]))
}

/// The tour's stop: its title, what to do, the question and how to
/// answer; once every stop is solved, what to do next.
fn tour_lines(app: &App, tour: &crate::app::Tour) -> Vec<Line<'static>> {
    let t = &app.theme;
    let stops = loopdbg_lesson::tour::STOPS;
    let stop = &stops[tour.index];
    let (words, chrome) = (stop.words(tour.lang), tour.lang.chrome());
    let solved = tour.solved.contains(&tour.index);
    let title = span(
        format!(
            "{} {}/{} · {}{}",
            chrome.tour,
            tour.index + 1,
            stops.len(),
            words.title,
            if solved { " ✓" } else { "" }
        ),
        t.title,
    );
    let keys = span(
        match solved {
            true => chrome.keys_solved,
            false => chrome.keys,
        },
        t.dim,
    );
    let mut question = vec![span("? ", t.warn), span(words.question, t.text)];
    if let crate::app::Mode::Answer(typed) = &app.mode {
        question.extend([
            span(chrome.answer, t.title),
            span(format!("{}▏", clean(typed)), t.selected),
            span(chrome.answer_keys, t.dim),
        ]);
    }
    // Where `press` asks to go, said once there (a newcomer overshot it).
    let here = app.cursor == (stop.at)(&app.trace);
    let doing = match here {
        true => span(chrome.here, t.ok),
        false => span(chrome.doing, t.title),
    };
    let mut lines = vec![
        Line::from(vec![title, keys]),
        Line::from(vec![doing, span(words.press, t.text)]),
        Line::from(question),
    ];
    if tour.solved.len() == stops.len() {
        let indent = " ".repeat(unicode_width::UnicodeWidthStr::width(chrome.next));
        for (i, next) in chrome.what_next.iter().enumerate() {
            let head = if i == 0 {
                chrome.next.to_string()
            } else {
                indent.clone()
            };
            lines.push(Line::from(vec![span(head, t.title), span(*next, t.text)]));
        }
    }
    lines
}

/// How many lines the tour's own text and the notice take at `width`:
/// the part of the box that must never be scrolled away.
pub(super) fn tour_height(app: &App, width: u16) -> u16 {
    let Some(tour) = &app.tour else {
        return 0;
    };
    let mut lines = tour_lines(app, tour);
    lines.extend(
        app.notice
            .as_ref()
            .map(|n| Line::from(format!("» {}", clean(n)))),
    );
    let height = Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .line_count(width);
    u16::try_from(height).unwrap_or(u16::MAX)
}
