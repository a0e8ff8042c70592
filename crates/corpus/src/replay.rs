//! An input opened for the debugger, `diff`, `run --export` and `record`:
//! read once (a pipe or a FIFO works), told apart as a session to run or
//! captured conversations to replay, and for a capture one conversation
//! picked, judged as its request was sent, and made a trace to step.

use std::io::BufRead;
use std::path::Path;

use loopdbg_engine::{LoadError, Session, Trace};
use loopdbg_read::{Conversation, Source};
use serde_json::Value;

use crate::conversations::{Conversations, Place};
use crate::open::{Layout, Opened, ReadSummary, Replies, read_opened, sniff};

/// What an input turned out to be.
pub enum Opening {
    /// A session (a stub scenario), or a document that is not a capture:
    /// its text, for the session loader, which says what is wrong with it.
    Session {
        /// The name errors use.
        origin: String,
        /// The whole text.
        text: String,
    },
    /// Captured conversations, opened and ready to be read.
    Captured(Opened),
}

/// Opens `path` once and tells what it holds.
pub fn open(path: &Path) -> Result<Opening, LoadError> {
    let mut opened = sniff(path, None)?;
    if let Some(text) = one_line_not_captured(&mut opened) {
        return Ok(Opening::Session {
            origin: opened.origin,
            text,
        });
    }
    Ok(match opened.layout {
        Layout::Unparsed(text, _) => Opening::Session {
            origin: opened.origin,
            text,
        },
        Layout::Document(ref doc, _) if !is_captured(doc) => {
            let Layout::Document(_, text) = opened.layout else {
                unreachable!("matched above")
            };
            Opening::Session {
                origin: opened.origin,
                text,
            }
        }
        _ => Opening::Captured(opened),
    })
}

/// The text of an input of one JSON line that is not a capture (a
/// session written on one line, or `[1, 2]`): the detector reads a line
/// at a time and may have stopped at the first.
fn one_line_not_captured(opened: &mut Opened) -> Option<String> {
    if !matches!(opened.layout, Layout::Lines) {
        return None;
    }
    let mut lines = opened.head.iter().filter(|(_, l)| !l.trim().is_empty());
    let (_, line) = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let doc: Value = serde_json::from_str(line).ok()?;
    let ended = opened
        .rest
        .fill_buf()
        .map_or(true, |b| b.iter().all(u8::is_ascii_whitespace));
    (ended && !is_captured(&doc))
        .then(|| opened.head.iter().map(|(_, l)| format!("{l}\n")).collect())
}

/// Whether a document read whole is a capture rather than a session: a
/// request body (`messages`, `input` or `contents`, whatever else it
/// holds), an array of messages, an HTTP recording, a capture record, a
/// Gemini CLI chat; never a document with a session's own keys.
fn is_captured(doc: &Value) -> bool {
    let captured = match doc {
        Value::Array(items) => items.first().is_some_and(Value::is_object),
        Value::Object(o) => {
            loopdbg_read::holds_conversation(doc)
                || (o.contains_key("sessionId") && o.contains_key("projectHash"))
                || loopdbg_read::recording::is_recording(doc)
                || loopdbg_read::capture::is_exchange(doc)
        }
        _ => false,
    };
    captured && !loopdbg_read::is_session(doc)
}

/// Every request of an opened capture, grouped into conversations.
pub fn conversations(opened: Opened) -> Result<(Conversations, ReadSummary), LoadError> {
    let mut grouped = Conversations::default();
    let read = read_opened(opened, None, Replies::Both, |_, shown, sent| {
        grouped.add(shown, sent)
    })?;
    Ok((grouped, read))
}

/// A captured conversation, ready to step.
pub struct Replay {
    /// The conversation as a session (tools, prompt, the recorded replies).
    pub session: Session,
    /// Its trace, the findings at the step they arise.
    pub trace: Trace,
    /// Where the conversation stands in its file.
    pub place: Place,
    /// What it was read as (`claude-code`, `anthropic`, …).
    pub source: loopdbg_read::Source,
    /// Lines that could not be read and were left out, said as the screen
    /// says it; `None` when everything was read.
    pub left_out: Option<String>,
    /// The conversation, for a caller that frees it off its way.
    pub conversation: Conversation,
}

/// Conversation `which` (1-based; the one of the newest request when
/// `None`) of an opened capture, replayed at its newest request under the
/// title `title` gives its place.
pub fn replay(
    opened: Opened,
    which: Option<usize>,
    title: impl FnOnce(&Place) -> String,
) -> Result<Replay, LoadError> {
    let origin = opened.origin.clone();
    let (grouped, read) = conversations(opened)?;
    let count = grouped.count();
    let Some(taken) = grouped.take(which) else {
        // A line that could not be read may be the one asked for.
        if let Some(e) = read.errors.into_iter().next() {
            return Err(e);
        }
        let reason = match which {
            Some(n) => format!("--conversation {n}: {origin} holds {count} conversation(s)"),
            None => format!("{origin} holds no conversation"),
        };
        return Err(LoadError::Refused { origin, reason });
    };
    let title = title(&taken.place);
    // The conversation is judged while its trace is built: on a long log
    // both take a while, and the first frame waits for them.
    let judged = taken.sent.as_ref().unwrap_or(&taken.shown);
    let (findings, replayed) = crate::cores::join(
        || loopdbg_judge::check::check(judged),
        || loopdbg_export::replay::replayed(&taken.shown),
    );
    let trace = replayed.with_findings(&taken.shown, &findings);
    let session = loopdbg_export::replay::session_for(&taken.shown, &title);
    // Lines that could not be read were left out: the screen says so, as
    // `check` does, rather than show the rest as if it were all.
    let left_out = read.errors.first().map(|first| {
        let more = match read.errors.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        format!("left out, could not be read: {first}{more}")
    });
    Ok(Replay {
        session,
        trace,
        place: taken.place,
        source: taken.shown.source,
        left_out,
        conversation: taken.shown,
    })
}

/// A captured conversation turned into a session that runs its loop again.
pub struct Recorded {
    /// The session and what recording it noticed.
    pub recording: loopdbg_export::record::Recording,
    /// Which conversation (1-based) of how many.
    pub conversation: usize,
    /// How many conversations the capture holds.
    pub count: usize,
    /// Whether the capture kept the tool definitions.
    pub declared_tools: bool,
}

impl Recorded {
    /// What `loopdbg record` says once `capture` is written to `output`:
    /// a summary line, then what recording noticed.
    pub fn summary(&self, capture: &Path, output: &Path) -> Vec<String> {
        let rec = &self.recording;
        let mut lines = vec![format!(
            "recorded {} round(s), {} tool(s) with {} recorded result(s) from {} (conversation {} of {}) → {}",
            rec.rounds,
            rec.session.tools.len(),
            rec.results(),
            capture.display(),
            self.conversation,
            self.count,
            output.display()
        )];
        lines.extend(
            rec.notes(self.declared_tools)
                .into_iter()
                .map(|n| format!("  {n}")),
        );
        lines.push(format!("  step it: loopdbg {}", output.display()));
        lines
    }
}

/// Conversation `which` (1-based; the newest to begin when `None`) of an
/// opened capture, recorded from its newest request, which carries the
/// history before it.
pub fn record(opened: Opened, which: Option<usize>) -> Result<Recorded, LoadError> {
    let origin = opened.origin.clone();
    let refused = |reason: String| LoadError::Refused {
        origin: origin.clone(),
        reason,
    };
    let (grouped, read) = conversations(opened)?;
    let convs = grouped.into_newest();
    let count = convs.len();
    if count == 0 {
        return Err(match read.errors.into_iter().next() {
            Some(e) => e,
            None => refused("holds no conversation to record".into()),
        });
    }
    let n = which.unwrap_or(count);
    let Some(conv) = n.checked_sub(1).and_then(|i| convs.get(i)) else {
        return Err(refused(format!(
            "--conversation {n}: it holds {count} conversation(s)"
        )));
    };
    let title = format!("recorded from {origin}, conversation {n} of {count}");
    let recording = loopdbg_export::record::record(conv, &title).ok_or_else(|| {
        refused(format!(
            "conversation {n}: no user prompt the model answered, to start a session from"
        ))
    })?;
    Ok(Recorded {
        recording,
        conversation: n,
        count,
        declared_tools: !conv.tools.is_empty(),
    })
}

/// Why `loopdbg record` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The capture (or the session written from it) could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Input the command cannot use: a session given as the capture, an
    /// output that exists.
    #[error("{0}")]
    Refused(String),
    /// The output could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The output.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// `loopdbg record`: conversation `which` of `capture` as a session file
/// at `output`, never over a file, and only when it loads back; what to
/// say once written, inert for a terminal.
pub fn record_to_file(
    capture: &Path,
    which: Option<usize>,
    output: &Path,
    redactor: Option<&mut loopdbg_formats::redact::Redactor>,
) -> Result<Vec<String>, RecordError> {
    let opened = match open(capture)? {
        Opening::Captured(opened) => opened,
        Opening::Session { origin, .. } => {
            return Err(RecordError::Refused(format!(
                "{origin} is a session, not a capture: `loopdbg run {origin}` runs it"
            )));
        }
    };
    let recorded = record(opened, which)?;
    let write_error = |source| RecordError::Write {
        path: output.display().to_string(),
        source,
    };
    let mut session =
        serde_json::to_value(&recorded.recording.session).map_err(|e| write_error(e.into()))?;
    // One placeholder per value across the whole session: a table's
    // arguments and the replies that name them stay in step.
    if let Some(r) = redactor {
        r.value(&mut session);
    }
    let mut text = serde_json::to_string_pretty(&session).map_err(|e| write_error(e.into()))?;
    text.push('\n');
    // A session that does not load back is not worth writing.
    Session::parse(&output.display().to_string(), &text)?;
    // Never over a file: a recorded session is the user's to replace.
    let existing = loopdbg_io::files::Existing::Keep;
    loopdbg_io::files::write_file(output, existing, |w| {
        std::io::Write::write_all(w, text.as_bytes())
    })
    .map_err(|e| match e {
        loopdbg_io::files::WriteError::Exists => RecordError::Refused(format!(
            "{} exists: record never overwrites a file; pick another -o",
            output.display()
        )),
        loopdbg_io::files::WriteError::Io(e) => write_error(e),
    })?;
    // Ids and names from the file are shown, never obeyed by a terminal.
    let said = recorded.summary(capture, output);
    Ok(said
        .iter()
        .map(|line| loopdbg_engine::diagnostics::inert::clean(line))
        .collect())
}

/// A large log's newest part, read before the rest: what the debugger's
/// first frame shows while the whole log is read, so the first frame of a
/// week-long session costs what the last megabyte of it costs.
pub struct Preview {
    /// The newest conversation of the part read, from its first prompt,
    /// replayed with the findings within it when it can be judged alone
    /// ([`judged_part`]); the whole log's replay replaces it.
    pub replay: Replay,
    /// How many bytes from the end were read.
    pub read: u64,
    /// The log's size.
    pub size: u64,
}

impl Preview {
    /// What the screen says while the rest is read.
    pub fn banner(&self) -> String {
        format!(
            "showing the newest {} of {} (line numbers count from there); reading the rest…",
            mib(self.read),
            mib(self.size)
        )
    }
}

/// `bytes` in MiB, one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// Logs smaller than this are read whole before the first frame.
pub const PREVIEW_FROM: u64 = 8 << 20;
/// How much of a large log's end the first frame is made from.
pub const PREVIEW_BYTES: u64 = 1 << 20;

/// The [`Preview`] of `opened`, when it is an agent log on disk of at
/// least [`PREVIEW_FROM`] bytes (a pipe, a compressed file or a request
/// file is read whole first, as before).
pub fn preview(path: &Path, opened: &Opened) -> Option<Preview> {
    preview_with(path, opened, PREVIEW_FROM, PREVIEW_BYTES)
}

/// Whether `opened` is large enough that reading it whole keeps the
/// screen waiting (what a [`preview`] is made for).
pub fn is_large(opened: &Opened) -> bool {
    opened.size.is_some_and(|s| s >= PREVIEW_FROM)
}

/// [`preview`] with its thresholds given (tests use small ones).
pub fn preview_with(path: &Path, opened: &Opened, from: u64, bytes: u64) -> Option<Preview> {
    let Layout::Log(source) = opened.layout else {
        return None;
    };
    let size = opened.size.filter(|&s| s >= from)?;
    let tail = loopdbg_io::lines::tail_lines(path, size, bytes).ok()?;
    let newest = newest_of_part(source, &tail.text)?;
    let findings = judged_part(&newest);
    let replayed = loopdbg_export::replay::replayed(&newest);
    let trace = replayed.with_findings(&newest, &findings);
    let session = loopdbg_export::replay::session_for(&newest, "replay");
    Some(Preview {
        replay: Replay {
            session,
            trace,
            place: Place {
                thread: 0,
                count: 1,
                request: 1,
                requests: 1,
            },
            source: newest.source,
            left_out: None,
            conversation: newest,
        },
        read: tail.read,
        size,
    })
}

/// The newest conversation in `text`, a part of a log of `source` (its
/// last lines): read from its first prompt in the part, since results
/// before it answer calls the part does not hold and the pairing pane
/// would call them orphans. The main thread's before a sub-agent's (the
/// whole read shows the main thread): a log's last MiB may be a sub-agent
/// at work. Lines the part cuts or cannot read are left out.
pub fn newest_of_part(source: Source, text: &str) -> Option<Conversation> {
    let numbered: Vec<(usize, &str)> = text.lines().enumerate().map(|(k, l)| (k + 1, l)).collect();
    let newest_from = |first: usize| {
        let mut log = loopdbg_read::Log::new(source)?;
        let _ = log.push_lines(&numbered[first.saturating_sub(1).min(numbered.len())..]);
        log.finish()
            .ok()?
            .into_iter()
            .filter(|c| !c.messages.is_empty())
            .max_by_key(|c| {
                let newest = c.message_sources.iter().filter_map(|s| s.line).max();
                let sub_agent = c
                    .label
                    .as_deref()
                    .is_some_and(|l| l.starts_with("sub-agent"));
                (!sub_agent, newest)
            })
    };
    let newest = newest_from(1)?;
    let prompt = newest
        .messages
        .iter()
        .position(is_prompt)
        .and_then(|k| newest.message_sources.get(k)?.line);
    Some(match prompt {
        Some(line) if line > 1 => newest_from(line).unwrap_or(newest),
        _ => newest,
    })
}

/// The findings on a part's newest conversation ([`newest_of_part`]), when
/// a part can be judged alone: it starts at a prompt (no call before the
/// part waits for a result in it, and no call in it answers one before
/// it), or it says it continues what came before it (a Claude Code log
/// cut where the first event's parent is not in the part: a result whose
/// call is before the cut is then not judged). Otherwise (a part of a
/// Gemini CLI or Codex log cut inside a turn, with no prompt in it) it is
/// not judged: the cut would read as the provider's 400 (a call turn with
/// no user turn before it).
pub fn judged_part(newest: &Conversation) -> Vec<loopdbg_judge::check::Finding> {
    let alone = newest.messages.first().is_some_and(is_prompt) || newest.continues.is_some();
    match alone {
        true => loopdbg_judge::check::check(newest),
        false => Vec::new(),
    }
}

/// A message the user typed: text, and no tool result.
fn is_prompt(m: &loopdbg_engine::message::Message) -> bool {
    use loopdbg_engine::message::{Block, Role};
    m.role == Role::User
        && m.text().is_some_and(|t| !t.trim().is_empty())
        && !m
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

#[cfg(test)]
mod tests {
    use loopdbg_export::replay::{regrow, regrow_placed, trace_of, trace_placed};
    use loopdbg_formats::usage;
    use loopdbg_judge::check::check;
    use loopdbg_lesson::checks::RunAnalysis;
    use loopdbg_read::Conversation;

    /// Every conversation of every transcript fixture, read as the
    /// debugger reads it.
    fn every_conversation() -> Vec<(String, Conversation)> {
        let root = format!(
            "{}/../../tests/fixtures/transcripts",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut dirs = vec![std::path::PathBuf::from(root)];
        let mut out = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if !path
                    .extension()
                    .is_some_and(|e| e == "json" || e == "jsonl")
                {
                    continue;
                }
                let name = path.display().to_string();
                let reader = Box::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
                let Ok(opened) = crate::open::sniff_reader(name.clone(), reader, None) else {
                    continue;
                };
                let Ok((grouped, _)) = super::conversations(opened) else {
                    continue;
                };
                out.extend(grouped.into_newest().into_iter().map(|c| (name.clone(), c)));
            }
        }
        out
    }

    /// The replay of any earlier state of a conversation, grown from where
    /// it changed, is the replay of the conversation made afresh: on every
    /// conversation of every fixture, from every message, from every
    /// earlier length and from a last message that held fewer blocks.
    #[test]
    fn a_regrown_replay_is_the_replay_made_afresh() {
        let mut convs = every_conversation();
        assert!(convs.len() > 100, "{}", convs.len());
        // The same reply after a new prompt is no spin: the prompt before
        // the cut counts.
        let spin = serde_json::json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "same"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "same"},
            {"role": "assistant", "content": "same"},
        ]);
        let format = loopdbg_formats::provider::Format::Anthropic;
        let read = loopdbg_read::read(&spin, loopdbg_read::Source::Provider(format)).unwrap();
        convs.push(("a spin after a prompt".into(), read));
        let mut grown = 0;
        let prices = loopdbg_formats::prices::Prices::builtin();
        for (name, conv) in &convs {
            let findings = check(conv);
            let whole = trace_of(conv, &findings);
            let tokens = usage::of_trace(&whole, &prices);
            let whole_analysis = RunAnalysis::of(&whole);
            let len = conv.messages.len();
            for from in 0..=len {
                let mut earlier: Vec<Conversation> = (from..=len).map(|n| conv.prefix(n)).collect();
                if from < len && conv.messages[from].content.len() > 1 {
                    // The message at `from` before its later blocks came.
                    let mut short = conv.prefix(from + 1);
                    short.messages[from].content.truncate(1);
                    short.block_sources[from].truncate(1);
                    earlier.push(short);
                }
                for e in earlier {
                    let mut trace = trace_of(&e, &check(&e));
                    let kept = usage::of_trace_kept(&trace, &prices);
                    let (_, read) = RunAnalysis::grown(&trace, None);
                    regrow(&mut trace, conv, from, &findings);
                    let (analysis, _) = RunAnalysis::grown(&trace, Some((read, from)));
                    assert_eq!(analysis, whole_analysis, "{name}: end summary from {from}");
                    let summed = usage::regrow(kept, &trace, from, &prices);
                    // Placed from where the findings of the earlier one were.
                    let (mut placed_trace, placed) = trace_placed(&e, &check(&e));
                    regrow_placed(&mut placed_trace, conv, from, &findings, Some(placed));
                    assert!(placed_trace == whole, "{name}: placed from {from}");
                    assert_eq!(summed.map(|(s, _)| s), tokens, "{name}: tokens from {from}");
                    assert!(
                        trace == whole,
                        "{name}: from {from}, grown from {} messages\n{:#?}\n{:#?}",
                        e.messages.len(),
                        trace.steps.iter().zip(&whole.steps).find(|(a, b)| a != b),
                        (&trace.outcome, &whole.outcome)
                    );
                    grown += 1;
                }
            }
        }
        assert!(grown > 1000, "{grown}");
    }

    /// A conversation's tokens and end summary grown with it message by
    /// message, the tallies carried from each to the next (`--follow`),
    /// are those made afresh: on every conversation of every fixture.
    #[test]
    fn tokens_and_end_summary_grown_message_by_message_are_those_made_afresh() {
        let prices = loopdbg_formats::prices::Prices::builtin();
        let (mut summed, mut grown, mut read_grown) = (0, 0, 0);
        let mut convs = every_conversation();
        convs.push(("a long priced loop".into(), priced_loop()));
        for (name, conv) in convs {
            let first = conv.prefix(0);
            let mut trace = trace_of(&first, &check(&first));
            let mut kept = usage::of_trace_kept(&trace, &prices);
            let (_, mut read) = RunAnalysis::grown(&trace, None);
            let mut placed = None;
            for n in 1..=conv.messages.len() {
                let now = conv.prefix(n);
                let findings = check(&now);
                placed = Some(regrow_placed(&mut trace, &now, n - 1, &findings, placed));
                kept = usage::regrow(kept, &trace, n - 1, &prices);
                let made = trace_of(&now, &findings);
                assert!(trace == made, "{name}: placed at {n}");
                let analysis;
                (analysis, read) = RunAnalysis::grown(&trace, Some((read, n - 1)));
                assert_eq!(
                    analysis,
                    RunAnalysis::of(&made),
                    "{name}: end summary at {n}"
                );
                read_grown += usize::from(read.grown() && made.rounds.len() > 3);
                let afresh = usage::of_trace(&made, &prices);
                assert_eq!(
                    kept.as_ref().map(|(s, _)| s),
                    afresh.as_ref(),
                    "{name}: {n}"
                );
                summed += usize::from(afresh.is_some_and(|s| s.trips.len() > 3));
                grown += usize::from(kept.as_ref().is_some_and(|(_, t)| t.grown()));
            }
        }
        assert!(summed > 20, "{summed}");
        assert!(read_grown > 40, "{read_grown}");
        // Grown, not made afresh, each time the last had tokens.
        assert!(grown >= summed, "{grown} of {summed}");
    }

    /// Thirty trips of parallel calls whose results grow the next prompt,
    /// by two models (one the price table does not name, one it does).
    fn priced_loop() -> Conversation {
        let mut msgs = vec![serde_json::json!({"role": "user", "content": "go"})];
        for t in 0..30 {
            let (a, b) = (format!("toolu_{t}a"), format!("toolu_{t}b"));
            let tool = if t % 3 == 0 { "Read" } else { "Grep" };
            msgs.push(serde_json::json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": a, "name": tool, "input": {}},
                {"type": "tool_use", "id": b, "name": "Bash", "input": {}}]}));
            msgs.push(serde_json::json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": a, "content": "x".repeat(10 + t)},
                {"type": "tool_result", "tool_use_id": b, "content": "y".repeat(40)}]}));
        }
        msgs.push(serde_json::json!({"role": "assistant", "content": "done"}));
        let format = loopdbg_formats::provider::Format::Anthropic;
        let mut conv = loopdbg_read::read(
            &serde_json::Value::Array(msgs),
            loopdbg_read::Source::Provider(format),
        )
        .unwrap();
        let replies = (0..conv.messages.len()).filter(|i| i % 2 == 1);
        conv.usage = replies
            .enumerate()
            .map(|(k, message)| loopdbg_read::TripUsage {
                message,
                usage: loopdbg_engine::message::Usage {
                    input: 100 + 37 * k as u64,
                    output: 11 + k as u64 % 7,
                    cache_read: 1000 * k as u64,
                    cache_write: 13,
                },
                model: Some(
                    if k % 4 == 3 {
                        "house-model"
                    } else {
                        "claude-sonnet-4-5"
                    }
                    .into(),
                ),
            })
            .collect();
        conv
    }

    /// A replay's end summary, made without the numbers no replay warns
    /// about and with the unpaired ids read off the index, says what the
    /// run's warnings say: on every conversation of every fixture.
    #[test]
    fn a_replays_end_summary_is_its_warnings() {
        for (name, conv) in every_conversation() {
            let trace = trace_of(&conv, &check(&conv));
            let analysis = loopdbg_lesson::checks::RunAnalysis::of(&trace);
            assert_eq!(
                analysis.warnings,
                loopdbg_lesson::checks::warnings(&trace),
                "{name}"
            );
            let unpaired = trace.pairing.ledger(trace.messages.len(), &[]).unpaired();
            assert_eq!(analysis.unpaired, unpaired, "{name}");
            assert_eq!(analysis.tool_runs, trace.tool_runs().len(), "{name}");
        }
    }
}
