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
        if let Some(payload) = record.field("payload")
            && read_for_nothing(&kind, payload.field("type").and_then(Value::as_str))
        {
            return Ok(());
        }
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
            // the provider reported none); other events returned above.
            ("event_msg", Some(payload)) => {
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

/// Whether line `text` is a record [`CodexRollout::push_owned`] reads
/// nothing from: `session_meta` (half a real rollout's bytes: it carries
/// the base instructions), `world_state`, `token_usage_record`, and every
/// `event_msg` but `token_count`, each with its payload. Found by a
/// borrowing parse of the two types alone (the rest of the line skipped,
/// nothing built), so such a line never becomes a [`Value`] (issue 62:
/// building every record as one made the Codex reader half as fast as
/// Claude Code's). Anything the parse is not sure of — a type that is not
/// a plain string, a key twice, a payload that is not an object, two
/// records on one line — is `false` and read as before, and so is a line
/// the bounded parser could refuse (over 1 MiB, or nested deeper than
/// [`SHALLOW`]), so that a line it would report is still reported.
pub fn reads_nothing(text: &str) -> bool {
    use std::borrow::Cow;
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow)]
        payload: Option<Payload<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Payload<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<Cow<'a, str>>,
    }
    // Under the floor of what any text may take (`bounded`), whatever it
    // holds: a megabyte's values take far less than 64 MiB.
    if text.len() > 1 << 20 || !nested_within(text.as_bytes(), SHALLOW) {
        return false;
    }
    let Ok(Head {
        kind: Some(kind),
        payload: Some(payload),
    }) = serde_json::from_str::<Head>(text)
    else {
        return false;
    };
    read_for_nothing(&kind, payload.kind.as_deref())
}

/// Whether a record of type `kind` with a payload of type `payload_kind`
/// is one [`CodexRollout::push_owned`] knows and reads nothing from: all
/// it knows ([`RECORD_TYPES`]) but response items, turn contexts,
/// compactions and `token_count` events. The one place that says so, for
/// the reader and for [`reads_nothing`].
fn read_for_nothing(kind: &str, payload_kind: Option<&str>) -> bool {
    RECORD_TYPES.contains(&kind)
        && !matches!(
            (kind, payload_kind),
            ("response_item" | "turn_context" | "compacted", _)
                | ("event_msg", Some("token_count"))
        )
}

/// How deep a line passed over may nest: well inside serde_json's limit
/// (128), which the bounded parser keeps and the borrowing parse, which
/// skips what it does not name, does not.
const SHALLOW: usize = 64;

/// Whether the arrays and objects of `json` nest at most `most` deep
/// (brackets inside strings not counted).
fn nested_within(json: &[u8], most: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > most {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on what they set up
    use super::*;
    use crate::log::Log;

    #[test]
    fn only_records_read_for_nothing_are_passed_over() {
        let skipped = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"long"}}"#,
            r#"{"type":"world_state","payload":{"cwd":"/"}}"#,
            r#"{"type":"token_usage_record","payload":{"id":"resp_1"}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}"#,
            r#"{"type":"event_msg","payload":{"type":"turn_aborted"}}"#,
            r#"{"type":"event_msg","payload":{}}"#,
            // An escape is read as its character, as the value would be.
            r#"{"type":"event\u005fmsg","payload":{"type":"user_message"}}"#,
        ];
        for line in skipped {
            assert!(reads_nothing(line), "{line}");
        }
        let read = [
            r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
            r#"{"type":"turn_context","payload":{"model":"gpt-5-codex"}}"#,
            r#"{"type":"compacted","payload":{"message":"summary"}}"#,
            // A bare item of an older rollout, its `type` its own.
            r#"{"type":"message","role":"user","content":[]}"#,
            // Not sure: read as before.
            r#"{"type":"event_msg","payload":"text"}"#,
            r#"{"type":"event_msg","payload":null}"#,
            r#"{"type":"session_meta"}"#,
            r#"{"type":7,"payload":{}}"#,
            r#"{"type":"event_msg","type":"response_item","payload":{"type":"message"}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","type":"agent_message"}}"#,
            r#"{"type":"event_msg","payload":{}}{"type":"response_item","payload":{}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message"}"#,
        ];
        for line in read {
            assert!(!reads_nothing(line), "{line}");
        }
        let deep = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","deep":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(!reads_nothing(&deep));
        let shallow = deep
            .replace(&"[".repeat(200), &"[".repeat(60))
            .replace(&"]".repeat(200), &"]".repeat(60));
        assert!(reads_nothing(&shallow));
        // Brackets in strings are text.
        let quoted = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","text":"{}\"["}}}}"#,
            "[".repeat(200)
        );
        assert!(reads_nothing(&quoted));
        let long = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","text":"{}"}}}}"#,
            "x".repeat(1 << 20)
        );
        assert!(!reads_nothing(&long));
    }

    /// Every Codex rollout the project ships, read through the log's
    /// line parser (records read for nothing not built) and by building
    /// every record: the same conversations, and the same lines refused.
    #[test]
    fn passing_records_over_reads_every_rollout_as_building_them_all() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
        let mut rollouts = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path)
                    && path.extension().is_some_and(|e| e == "jsonl")
                    && text.contains("session_meta")
                {
                    rollouts.push((path, text));
                }
            }
        }
        assert!(rollouts.len() >= 5, "{} rollouts", rollouts.len());
        let mut passed_over = 0;
        for (path, text) in &rollouts {
            let lines: Vec<(usize, &str)> =
                text.lines().enumerate().map(|(n, l)| (n + 1, l)).collect();
            passed_over += lines.iter().filter(|(_, l)| reads_nothing(l)).count();
            let mut log = Log::new(Source::Agent(Agent::Codex)).unwrap();
            let bad = log.push_lines(&lines);
            let mut built = CodexRollout::default();
            let mut built_bad = Vec::new();
            for &(n, line) in &lines {
                if line.trim().is_empty() {
                    continue;
                }
                match crate::bounded::value(line) {
                    Ok(v) => built.push_owned(n, v).unwrap(),
                    Err(_) => built_bad.push(n),
                }
            }
            let got = log.finish();
            assert_eq!(
                format!("{:?}", got),
                format!("{:?}", built.finish()),
                "{}",
                path.display()
            );
            let bad: Vec<usize> = bad.iter().map(|(n, _)| *n).collect();
            assert_eq!(bad, built_bad, "{}", path.display());
        }
        assert!(passed_over >= 10, "only {passed_over} lines passed over");
    }
}
