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
use loopdbg_engine::diagnostics::json_span::{JsonPath, PathSeg};
use serde_json::{Value, json};

use std::collections::HashSet;

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
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let bare =
            record.get("payload").is_none() && (record.get("role").is_some() || is_item(&kind));
        let compacted_at = match kind.as_str() {
            "compacted" => record
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(super::conversation::time_of),
            _ => None,
        };
        let item = match (kind.as_str(), record.get_mut("payload")) {
            ("response_item", Some(payload)) => payload.take(),
            ("turn_context", Some(payload)) => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
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
                match payload.get_mut("replacement_history") {
                    Some(Value::Array(kept)) => {
                        for item in kept.drain(..) {
                            next.items.push(item);
                            next.lines.push(line);
                        }
                    }
                    _ => {
                        let summary = payload.get("message").and_then(Value::as_str).unwrap_or("");
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
            let mut doc = json!({ "input": segment.items });
            // Each item is named by the line of the log it came from.
            let on_line = |i: usize| BlockSource {
                path: "payload".into(),
                line: lines.get(i).copied(),
                uuid: None,
            };
            let mut conv = responses::read_items(&mut doc, Detail::Full, &on_line)
                .map_err(|e| relocate_error(e, &lines))?;
            conv.source = Source::Agent(Agent::Codex);
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
    let kind = |item: &Value| {
        item.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let call_id = |item: &Value| {
        item.get("call_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let calls: HashSet<String> = items
        .iter()
        .filter(|i| responses::is_call(&kind(i)))
        .filter_map(call_id)
        .collect();
    let answered: HashSet<String> = items
        .iter()
        .filter(|i| responses::is_output(&kind(i)))
        .filter_map(|i| responses::answered_id(i).map(str::to_string))
        .collect();
    let mut rewrites = Vec::new();
    let on = |line: usize| BlockSource {
        path: "payload".into(),
        line: Some(line),
        uuid: None,
    };
    let mut k = 0;
    while k < items.len() {
        let item_kind = kind(&items[k]);
        if responses::is_output(&item_kind)
            && let Some(id) = responses::answered_id(&items[k]).map(str::to_string)
            && !calls.contains(&id)
        {
            rewrites.push(Rewrite {
                kind: Kind::UnexpectedResult,
                source: on(lines[k]),
                message: format!(
                    "the output for {id} answers a call that is not in the history; Codex drops it before every request (`remove_orphan_outputs`), so the provider never sees it."
                ),
                ids: vec![id],
                harmless: true,
            });
            items.remove(k);
            lines.remove(k);
            continue;
        }
        if responses::is_call(&item_kind)
            && let Some(id) = call_id(&items[k])
            && !answered.contains(&id)
            && items[k + 1..].iter().any(|i| kind(i) == "message")
        {
            let output_type = match item_kind.as_str() {
                "custom_tool_call" => "custom_tool_call_output",
                _ => "function_call_output",
            };
            rewrites.push(Rewrite {
                kind: Kind::UnansweredCall,
                source: on(lines[k]),
                message: format!(
                    "no output answers {id} in the rollout; Codex sends `{ABORTED}` as its output right after the call before every request (`ensure_call_outputs_present`), so the provider never sees it open, but the model gets no real result for it."
                ),
                ids: vec![id.clone()],
                harmless: false,
            });
            items.insert(
                k + 1,
                json!({"type": output_type, "call_id": id, "output": ABORTED}),
            );
            lines.insert(k + 1, lines[k]);
            k += 2;
            continue;
        }
        k += 1;
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
