//! The pairing ledger at this step: pending, paired, unpaired, duplicate
//! ids and orphan results, with where each sits. Ids whose state changed at
//! this step are marked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{pane_block, span};
use crate::app::{App, Pane, SpansAt};
use loopdbg_engine::ledger::{IdEntry, IdState, Orphan};
use loopdbg_lesson::report::clean;

/// One line of the pane, before it is drawn: the pane lists every id, but
/// only the rows on screen become text.
#[derive(Clone)]
enum Row<'a> {
    Heading(String, Style),
    Entry(IdEntry),
    Duplicate(IdEntry),
    Orphan(&'a Orphan),
}

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let in_flight = app.in_flight();
    let ledger = app.ledger(&in_flight);
    let c = ledger.counts();
    let counts_fit = area.width >= 44;
    let title = Line::from(vec![
        span(" ids ", t.title),
        span(
            // Unpaired first when there are any; a narrow pane keeps only
            // them (its lines below give every count).
            if !counts_fit {
                match c.unpaired {
                    0 => String::new(),
                    n => format!("unpaired {n} "),
                }
            } else if c.unpaired > 0 {
                format!(
                    "unpaired {} · pending {} · paired {} ",
                    c.unpaired, c.pending, c.paired
                )
            } else {
                format!(
                    "pending {} · paired {} · unpaired {} ",
                    c.pending, c.paired, c.unpaired
                )
            },
            if c.unpaired > 0 { t.warn } else { t.dim },
        ),
    ]);
    let block = pane_block(app, Pane::Ids, title);
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = rows(app, &ledger, &c);
    // What each visible id was one step earlier, to mark what changed.
    let previous = app
        .cursor
        .checked_sub(1)
        .map(|k| (app.trace.step(k).history_len, app.trace.in_flight_at(k)));
    let was = |call: loopdbg_engine::ledger::Position| -> Option<IdState> {
        let (len, in_flight) = previous.as_ref()?;
        app.trace.pairing.state_of(call, *len, in_flight)
    };
    let links = app.links();
    // Locations follow the messages pane: canonical, or as the provider
    // view spells them.
    let history = app.trace.history_at(app.cursor);
    let spans = app.view_spans();
    let place = |p: loopdbg_engine::ledger::Position| -> String {
        app.view
            .zip(spans.as_ref().map(SpansAt::uncut))
            .and_then(|(format, spans)| {
                loopdbg_formats::provider::block_path(format, history, spans, p.message, p.block)
            })
            .unwrap_or_else(|| p.to_string())
    };
    let total: usize = rows.iter().map(Part::len).sum();
    let scroll = (app.ids_scroll as usize).min(total.saturating_sub(inner.height as usize));
    let lines: Vec<Line> = window(&ledger, &rows, scroll, inner.height as usize)
        .iter()
        .map(|row| match row {
            Row::Heading(text, style) => Line::from(span(text.clone(), *style)),
            Row::Entry(e) => {
                let change = match was(e.first_call) {
                    Some(w) if w != e.state => format!("  ← was {}", w.as_str()),
                    None => "  ← new".to_string(),
                    _ => String::new(),
                };
                let whereabouts = match (e.first_result, app.view) {
                    (Some(result), None) => {
                        format!("{} → messages[{}]", e.first_call, result.message)
                    }
                    (Some(result), Some(_)) => {
                        format!("{} → {}", place(e.first_call), place(result))
                    }
                    (None, _) => place(e.first_call),
                };
                let row_style = if change.is_empty() { t.text } else { t.added };
                let mut line = vec![
                    span(format!("  {} ", clean(&e.id)), row_style),
                    span(format!("{} ", clean(&e.name)), t.call),
                ];
                if let Some(state) = call_state(app, e) {
                    line.push(span(format!("{state} "), t.warn));
                }
                line.push(span(whereabouts, t.dim));
                line.push(span(change, t.added));
                if links.calls.contains(&e.first_call) {
                    Line::from(line).patch_style(t.linked)
                } else {
                    Line::from(line)
                }
            }
            Row::Duplicate(e) => Line::from(span(
                format!("  {} ×{} ({})", clean(&e.id), e.calls, clean(&e.name)),
                t.text,
            )),
            Row::Orphan(o) => Line::from(span(
                format!("  {} at {}", clean(&o.tool_use_id), place(o.at)),
                t.text,
            )),
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// A run of the pane's rows: one row, or the ids in one state, in order
/// of first call (which become rows only when on screen: a log of 450,000
/// calls built a row for each at every step).
enum Part<'a> {
    One(Row<'a>),
    InState(IdState, usize),
}

impl Part<'_> {
    fn len(&self) -> usize {
        match self {
            Part::One(_) => 1,
            Part::InState(_, n) => *n,
        }
    }
}

/// The rows `skip..skip + take` of `parts`.
fn window<'a>(
    ledger: &loopdbg_engine::ledger::LedgerAt<'a>,
    parts: &'a [Part<'a>],
    mut skip: usize,
    take: usize,
) -> Vec<Row<'a>> {
    let mut rows: Vec<Row> = Vec::with_capacity(take);
    for part in parts {
        if rows.len() == take {
            break;
        }
        if skip >= part.len() {
            skip -= part.len();
            continue;
        }
        match part {
            Part::One(row) => rows.push(row.clone()),
            Part::InState(state, _) => {
                let room = take - rows.len();
                rows.extend(ledger.ids_in(*state).skip(skip).take(room).map(Row::Entry));
            }
        }
        skip = 0;
    }
    rows
}

/// The ledger's rows. Problems come first (unpaired ids, duplicates,
/// orphans): when the pane is short they are the last rows to fall off its
/// bottom.
fn rows<'a>(
    app: &'a App,
    ledger: &loopdbg_engine::ledger::LedgerAt<'a>,
    counts: &loopdbg_engine::ledger::LedgerCounts,
) -> Vec<Part<'a>> {
    let t = &app.theme;
    let mut problems: Vec<Part> = Vec::new();
    let mut rest: Vec<Part> = Vec::new();
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
        let n = match state {
            IdState::Pending => counts.pending,
            IdState::Paired => counts.paired,
            IdState::Unpaired => counts.unpaired,
        };
        let heading = Row::Heading(format!("{n} {heading}"), if n == 0 { t.dim } else { style });
        let rows = if state == IdState::Unpaired && n > 0 {
            &mut problems
        } else {
            &mut rest
        };
        rows.push(Part::One(heading));
        rows.push(Part::InState(state, n));
    }
    let dups = ledger.duplicates();
    if !dups.is_empty() {
        problems.push(Part::One(Row::Heading(
            format!("duplicate ids (one id, several tool_use): {}", dups.len()),
            t.warn,
        )));
        problems.extend(dups.into_iter().map(|e| Part::One(Row::Duplicate(e))));
    }
    // Results for calls made in what the file does not hold (a stored
    // response, a log cut at its head) are unchecked, not wrong.
    let (unchecked, orphans): (Vec<&Orphan>, Vec<&Orphan>) =
        ledger.orphans().iter().partition(|o| {
            app.trace
                .unverifiable
                .iter()
                .any(|id| **id == *o.tool_use_id)
        });
    if !orphans.is_empty() {
        problems.push(Part::One(Row::Heading(
            format!("orphan results (answer no call): {}", orphans.len()),
            t.warn,
        )));
        problems.extend(orphans.into_iter().map(|o| Part::One(Row::Orphan(o))));
    }
    if !unchecked.is_empty() {
        rest.push(Part::One(Row::Heading(
            format!(
                "{} answer calls not in this file (unchecked)",
                unchecked.len()
            ),
            t.dim,
        )));
        if let Some(before) = &app.trace.continues {
            rest.push(Part::One(Row::Heading(
                format!(
                    "  made in {}",
                    loopdbg_engine::diagnostics::inert::clean(before)
                ),
                t.dim,
            )));
        }
        rest.extend(unchecked.into_iter().map(|o| Part::One(Row::Orphan(o))));
    }
    problems.append(&mut rest);
    problems
}

/// The round whose reply is message `message`: found where the history
/// first holds it (steps grow the history in order), which a scan of the
/// rounds did for each row on screen (450,000 rounds at the end of a 1 GB
/// log); by the scan when the steps do not say.
fn round_replying_with(
    trace: &loopdbg_engine::trace::Trace,
    message: usize,
) -> Option<&loopdbg_engine::trace::Round> {
    round_by_steps(trace, message).or_else(|| {
        trace
            .rounds
            .iter()
            .find(|r| r.reply_message == Some(message))
    })
}

/// [`round_replying_with`] by the steps alone.
fn round_by_steps(
    trace: &loopdbg_engine::trace::Trace,
    message: usize,
) -> Option<&loopdbg_engine::trace::Round> {
    let appended = trace.steps.partition_point(|s| s.history_len <= message);
    let step = trace.steps.get(appended)?;
    trace
        .round(step.round)
        .filter(|r| r.reply_message == Some(message))
}

/// What the loop is doing with a call at this step: running, or how it
/// ended (a placeholder result is said to be one).
fn call_state(app: &App, e: &IdEntry) -> Option<String> {
    let step = app.trace.step(app.cursor);
    let round = round_replying_with(&app.trace, e.first_call.message)?;
    let message = app.trace.messages.get(e.first_call.message)?;
    let call = message.content[..e.first_call.block]
        .iter()
        .filter(|b| matches!(b, loopdbg_engine::message::Block::ToolUse { .. }))
        .count();
    let index = round.executions.iter().position(|x| x.call == call)?;
    let ex = &round.executions[index];
    let placeholder = ex.synthetic && !ex.outcome.ran;
    Some(match e.state {
        IdState::Pending => {
            use loopdbg_engine::trace::{CallStatus, Phase};
            let ended = app.trace.has_ended_at(app.cursor, round.number, index);
            match (ex.status, ended, step.phase) {
                (CallStatus::Dropped, _, _) => "[dropped]".to_string(),
                (status, true, _) => format!("[{}]", status.as_str()),
                (_, false, Phase::Execute) => "[running]".to_string(),
                (_, false, _) => "[to run]".to_string(),
            }
        }
        IdState::Paired if placeholder || ex.synthetic => {
            format!("[placeholder: {}]", ex.status.as_str())
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use loopdbg_engine::ledger::PairingIndex;
    use loopdbg_engine::message::{Message, Reply, ToolCall};

    /// A turn calling `id` and, when `answered`, its result.
    fn turn(id: &str, answered: bool) -> Vec<Message> {
        let call = ToolCall {
            id: id.into(),
            name: "Bash".into(),
            args: serde_json::json!({}).into(),
            arguments: None,
        };
        let reply = Reply {
            tool_calls: vec![call],
            ..Reply::default()
        };
        let mut turn = vec![Message::assistant(&reply)];
        if answered {
            turn.push(Message::tool_result(
                id.into(),
                serde_json::json!("ok").into(),
                false,
            ));
        }
        turn.push(Message::user("next"));
        turn
    }

    /// The round found by the steps alone is the one a scan of the rounds
    /// finds, for every message of every shipped session's run (the scan
    /// is only the fallback).
    #[test]
    fn the_round_replying_with_a_message_is_found_by_the_steps() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let mut traces = Vec::new();
        for entry in std::fs::read_dir(format!("{root}/sessions")).unwrap() {
            let path = entry.unwrap().path();
            // (`sessions/en/` holds companions that run as these do.)
            if path.is_dir() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let Ok(session) = loopdbg_engine::Session::parse(&path.display().to_string(), &text)
            else {
                continue;
            };
            let strategy = loopdbg_engine::Strategy::for_session(&session);
            traces.push(loopdbg_engine::run(&session, &strategy));
        }
        // Replays too: Claude Code logs with parallel calls, an interrupt
        // and a refused request.
        for name in [
            "parallel",
            "answered_after_interrupt",
            "refused_400",
            "api_errors",
        ] {
            let path = format!("{root}/tests/fixtures/transcripts/claude_code_v2/{name}.jsonl");
            let text = std::fs::read_to_string(&path).unwrap();
            let mut log = loopdbg_read::Log::new(loopdbg_read::Source::Agent(
                loopdbg_read::Agent::ClaudeCode,
            ))
            .unwrap();
            for (k, line) in text.lines().enumerate() {
                log.push_owned(k + 1, serde_json::from_str(line).unwrap())
                    .unwrap();
            }
            for conv in log.finish().unwrap() {
                traces.push(loopdbg_export::replay::trace_of(&conv, &[]));
            }
        }
        let mut checked = 0;
        for trace in traces {
            for m in 0..trace.messages.len() {
                let scanned = trace.rounds.iter().find(|r| r.reply_message == Some(m));
                let found = round_by_steps(&trace, m);
                assert_eq!(found.map(|r| r.number), scanned.map(|r| r.number));
                checked += usize::from(found.is_some());
            }
        }
        assert!(checked > 20, "{checked}");
    }

    /// What a row says, to compare rows.
    fn said(row: &Row) -> String {
        match row {
            Row::Heading(text, _) => text.clone(),
            Row::Entry(e) => format!("entry {}", e.id),
            Row::Duplicate(e) => format!("duplicate {}", e.id),
            Row::Orphan(o) => format!("orphan {}", o.tool_use_id),
        }
    }

    /// The rows on screen are those of every row built, at any scroll and
    /// height: the ids of one state become rows only when shown.
    #[test]
    fn a_window_of_the_rows_is_the_rows_in_it() {
        let mut history = vec![Message::user("go")];
        for k in 0..40 {
            history.extend(turn(&format!("toolu_{k:02}"), k % 7 != 3));
        }
        let index = PairingIndex::new(&history);
        let ledger = index.at(history.len(), &[]);
        let c = ledger.counts();
        assert_eq!((c.paired, c.unpaired), (34, 6));
        let style = Style::default();
        let parts = vec![
            Part::One(Row::Heading("unpaired".into(), style)),
            Part::InState(IdState::Unpaired, c.unpaired),
            Part::One(Row::Heading("pending".into(), style)),
            Part::InState(IdState::Pending, c.pending),
            Part::One(Row::Heading("paired".into(), style)),
            Part::InState(IdState::Paired, c.paired),
            Part::One(Row::Heading("end".into(), style)),
        ];
        let mut every: Vec<String> = Vec::new();
        for part in &parts {
            match part {
                Part::One(row) => every.push(said(row)),
                Part::InState(state, _) => {
                    every.extend(ledger.ids_in(*state).map(|e| format!("entry {}", e.id)));
                }
            }
        }
        let total: usize = parts.iter().map(Part::len).sum();
        assert_eq!(total, every.len());
        for skip in 0..=total + 2 {
            for take in [0, 1, 3, 10, 50] {
                let shown: Vec<String> = window(&ledger, &parts, skip, take)
                    .iter()
                    .map(said)
                    .collect();
                let expected: Vec<String> = every.iter().skip(skip).take(take).cloned().collect();
                assert_eq!(shown, expected, "skip {skip}, take {take}");
            }
        }
    }
}
