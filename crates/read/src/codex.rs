//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`):
//! one `{timestamp, type, payload}` record per line. `response_item`
//! payloads are the Responses API items Codex sent and received
//! (`message`, `function_call` / `function_call_output`,
//! `custom_tool_call` / `custom_tool_call_output`, `local_shell_call`,
//! `reasoning`, …), so the conversation is read by the Responses reader and
//! checked by its rules. A `compacted` record replaces the history: the
//! conversation after it is a new one. `session_meta`, `turn_context` and
//! `event_msg` records carry no items.

use crate::agent::Agent;
use crate::lax::Field;
use loopdbg_engine::diagnostics::json_span::{JsonPath, PathSeg};
use serde_json::{Value, json};

use super::{BlockSource, Conversation, Detail, ReadError, Source, responses};
use crate::conversation::Rewrite;
use crate::finding::Kind;

/// Reads a rollout one record at a time; [`CodexRollout::finish`] gives the
/// conversations.
#[derive(Debug, Clone, Default)]
pub struct CodexRollout {
    segments: Vec<Segment>,
    /// The model the latest `turn_context` names.
    model: Option<String>,
    /// Record types loopdbg does not know, each with its first line.
    unknown: Vec<(String, usize)>,
    /// Lines that held records joined (a write that lost its newline).
    pub(super) joined: Vec<(usize, usize)>,
}

#[derive(Debug, Clone, Default)]
struct Segment {
    items: Vec<Value>,
    lines: Vec<usize>,
    /// `token_count` events: the line, the trip's tokens and the model of
    /// the turn.
    usage: Vec<(usize, loopdbg_engine::message::Usage, Option<String>)>,
    /// For a segment a `compacted` record began: its line and time, and
    /// the summary it wrote.
    compacted: Option<(usize, Option<String>)>,
    summary: Option<String>,
}

/// Record types of a rollout, for detection.
pub const RECORD_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    // Codex 0.171 writes the environment it saw at the start of a turn.
    "world_state",
    // … and each response's tokens with its id (the same counts as the
    // `token_count` event, which is what is read).
    "token_usage_record",
];

impl CodexRollout {
    /// Adds the record on 1-based `line`.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "pushed just above when empty"
    )]
    pub fn push_owned(&mut self, line: usize, mut record: Value) -> Result<(), ReadError> {
        let kind = record
            .field("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let bare =
            record.field("payload").is_none() && (record.field("role").is_some() || is_item(&kind));
        let compacted_at = match kind.as_str() {
            "compacted" => record
                .field("timestamp")
                .and_then(Value::as_str)
                .and_then(super::conversation::time_of),
            _ => None,
        };
        let item = match (kind.as_str(), record.field_mut("payload")) {
            ("response_item", Some(payload)) => payload.take(),
            ("turn_context", Some(payload)) => {
                if let Some(model) = payload.field("model").and_then(Value::as_str) {
                    self.model = Some(model.to_string());
                }
                return Ok(());
            }
            // The tokens of the request just answered (`info` is null when
            // the provider reported none).
            ("event_msg", Some(payload)) if payload["type"] == "token_count" => {
                if let Some(last) = payload
                    .pointer("/info/last_token_usage")
                    .filter(|u| u.is_object())
                {
                    let usage = loopdbg_formats::usage::responses(last);
                    let model = self.model.clone();
                    if let Some(segment) = self.segments.last_mut() {
                        segment.usage.push((line, usage, model));
                    }
                }
                return Ok(());
            }
            ("compacted", Some(payload)) => {
                // The history is replaced: by the items Codex kept, or by
                // the summary it wrote.
                let mut next = Segment {
                    compacted: Some((line, compacted_at)),
                    ..Segment::default()
                };
                match payload.field_mut("replacement_history") {
                    Some(Value::Array(kept)) => {
                        for item in kept.drain(..) {
                            next.items.push(item);
                            next.lines.push(line);
                        }
                    }
                    _ => {
                        let summary = payload
                            .field("message")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        next.summary = Some(summary.to_string());
                        next.items.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}));
                        next.lines.push(line);
                    }
                }
                self.segments.push(next);
                return Ok(());
            }
            // Older rollouts wrote bare items, one per line.
            (_, None) if bare => record,
            _ => {
                if !RECORD_TYPES.contains(&kind.as_str())
                    && !self.unknown.iter().any(|(k, _)| *k == kind)
                {
                    self.unknown.push((kind, line));
                }
                return Ok(());
            }
        };
        if self.segments.is_empty() {
            self.segments.push(Segment::default());
        }
        let segment = self.segments.last_mut().expect("one segment");
        segment.items.push(item);
        segment.lines.push(line);
        Ok(())
    }

    /// The conversations read: one per compaction segment.
    pub fn finish(self) -> Result<Vec<Conversation>, ReadError> {
        let count = self.segments.len();
        let mut out = Vec::new();
        for (n, mut segment) in self.segments.into_iter().enumerate() {
            if segment.items.is_empty() {
                continue;
            }
            let rewrites = normalize(&mut segment.items, &mut segment.lines);
            let lines = segment.lines;
            // The items moved in, not `json!`: the macro serialises its
            // arguments into a new value, a deep copy of the whole rollout
            // (a third of reading an 8 MB one).
            let mut doc = Value::Object(serde_json::Map::from_iter([(
                "input".to_string(),
                Value::Array(segment.items),
            )]));
            // Each item is named by the line of the log it came from.
            let on_line = |i: usize| BlockSource {
                path: "payload".into(),
                line: lines.get(i).copied(),
                uuid: None,
            };
            let mut conv = responses::read_items(&mut doc, Detail::Full, &on_line)
                .map_err(|e| relocate_error(e, &lines))?;
            conv.source = Source::Agent(Agent::Codex);
            // What Codex sends of its reasoning items is its own rewrite of
            // the rollout; the request bodies' rule is not its verdict.
            conv.notices
                .retain(|n| n.kind != crate::finding::Kind::ReasoningWithoutItem);
            conv.rewrites = rewrites;
            for (line, usage, model) in segment.usage {
                // The reply the count is for: the last one written before it.
                let reply = (0..conv.messages.len()).rev().find(|&m| {
                    conv.messages[m].role == loopdbg_engine::message::Role::Assistant
                        && conv.message_sources[m].line.is_some_and(|l| l < line)
                });
                if let Some(message) = reply
                    && conv.usage_of(message).is_none()
                {
                    conv.usage.push(super::TripUsage {
                        message,
                        usage,
                        model,
                    });
                }
            }
            if n > 0 && count > 1 {
                conv.label = Some(format!("after compaction {n}"));
            }
            if let (Some((line, time)), Some(before)) = (segment.compacted, out.last_mut()) {
                let summary = segment
                    .summary
                    .as_deref()
                    .and_then(super::conversation::first_words);
                super::conversation::Compaction::mark(before, &mut conv, line, time, summary);
            }
            out.push(conv);
        }
        super::note_joined_lines(&mut out, self.joined);
        if let Some(first) = out.first_mut() {
            for (kind, line) in self.unknown {
                first.notices.push(super::Notice {
                    kind: crate::finding::Kind::UnknownEvent,
                    source: BlockSource {
                        path: "type".into(),
                        line: Some(line),
                        uuid: None,
                    },
                    message: format!(
                        "record type `{kind}` is new to loopdbg: skipped; the conversation was read without it"
                    ),
                    ids: vec![kind],
                });
            }
        }
        Ok(out)
    }
}

/// What Codex does to its history before every request
/// (codex-rs/core/src/context_manager/normalize.rs, `for_prompt`):
/// `remove_orphan_outputs` drops each output whose call is not in the
/// history, and `ensure_call_outputs_present` gives each call that has no
/// output the output `aborted`, right after the call. Applied to the items
/// of one segment (`lines` kept beside them); a call with nothing but
/// calls, outputs and reasoning after it is still running when the log
/// ends (its output is not written yet), and is left as it is. Returns
/// what it changed.
fn normalize(items: &mut Vec<Value>, lines: &mut Vec<usize>) -> Vec<Rewrite> {
    /// What an item is to the pairing, read once (each field asked of a
    /// `Value` hashes its key: asked again per rule, it was 6 % of
    /// checking a rollout).
    enum Item<'a> {
        Call(&'a str, &'a str),
        Output(&'a str),
        Message,
        Other,
    }
    let read: Vec<Item> = items
        .iter()
        .map(|item| {
            let kind = item.field("type").and_then(Value::as_str).unwrap_or("");
            let id = || {
                item.field("call_id")
                    .or_else(|| item.field("id"))
                    .and_then(Value::as_str)
            };
            match kind {
                "message" => Item::Message,
                _ if responses::is_call(kind) => {
                    id().map_or(Item::Other, |id| Item::Call(kind, id))
                }
                _ if responses::is_output(kind) => id().map_or(Item::Other, Item::Output),
                _ => Item::Other,
            }
        })
        .collect();
    let mut calls: ahash::AHashSet<&str> = ahash::AHashSet::new();
    let mut answered: ahash::AHashSet<&str> = ahash::AHashSet::new();
    for item in &read {
        match item {
            Item::Call(_, id) => {
                calls.insert(id);
            }
            Item::Output(id) => {
                answered.insert(id);
            }
            _ => {}
        }
    }
    // A call before the last message was followed by a request.
    let last_message = read.iter().rposition(|i| matches!(i, Item::Message));
    let on = |line: usize| BlockSource {
        path: "payload".into(),
        line: Some(line),
        uuid: None,
    };
    let mut rewrites = Vec::new();
    // What to do at each item: drop it, or add Codex's output after it.
    let mut dropped = Vec::new();
    let mut aborted = Vec::new();
    for (k, item) in read.iter().enumerate() {
        match *item {
            Item::Output(id) if !calls.contains(id) => {
                rewrites.push(Rewrite {
                    kind: Kind::UnexpectedResult,
                    source: on(lines[k]),
                    message: format!(
                        "the output for {id} answers a call that is not in the history; Codex drops it before every request (`remove_orphan_outputs`), so the provider never sees it."
                    ),
                    ids: vec![id.to_string()],
                    harmless: true,
                });
                dropped.push(k);
            }
            Item::Call(kind, id)
                if !answered.contains(id) && last_message.is_some_and(|m| m > k) =>
            {
                let output_type = match kind {
                    "custom_tool_call" => "custom_tool_call_output",
                    _ => "function_call_output",
                };
                rewrites.push(Rewrite {
                    kind: Kind::UnansweredCall,
                    source: on(lines[k]),
                    message: format!(
                        "no output answers {id} in the rollout; Codex sends `{ABORTED}` as its output right after the call before every request (`ensure_call_outputs_present`), so the provider never sees it open, but the model gets no real result for it."
                    ),
                    ids: vec![id.to_string()],
                    harmless: false,
                });
                aborted.push((
                    k,
                    json!({"type": output_type, "call_id": id, "output": ABORTED}),
                ));
            }
            _ => {}
        }
    }
    drop((read, calls, answered));
    if dropped.is_empty() && aborted.is_empty() {
        return rewrites;
    }
    // One pass, so a log of many changes is not rebuilt once for each.
    let old_items = std::mem::take(items);
    let old_lines = std::mem::take(lines);
    let (mut dropped, mut aborted) = (
        dropped.into_iter().peekable(),
        aborted.into_iter().peekable(),
    );
    for (k, (item, line)) in old_items.into_iter().zip(old_lines).enumerate() {
        if dropped.next_if_eq(&k).is_none() {
            items.push(item);
            lines.push(line);
        }
        if let Some((_, output)) = aborted.next_if(|(at, _)| *at == k) {
            items.push(output);
            lines.push(line);
        }
    }
    rewrites
}

/// The output Codex sends for a call that has none.
pub const ABORTED: &str = "aborted";

fn is_item(kind: &str) -> bool {
    responses::is_call(kind)
        || responses::is_output(kind)
        || matches!(kind, "message" | "reasoning" | "web_search_call")
}

/// An error at `input[i].rest` of the document read, as the log has it:
/// `payload.rest` on the line item `i` came from.
fn relocate_error(e: ReadError, lines: &[usize]) -> ReadError {
    match e.path.segments() {
        [PathSeg::Key(input), PathSeg::Index(i), rest @ ..] if input == "input" => ReadError {
            line: lines.get(*i).copied(),
            path: JsonPath::root()
                .key("payload")
                .join(&JsonPath::from(rest.to_vec())),
            message: e.message,
        },
        _ => e,
    }
}
