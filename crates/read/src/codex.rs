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
use crate::lax::{Field, LaxStr};
use crate::responses::Item;
use loopdbg_engine::diagnostics::json_span::{JsonPath, PathSeg};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};
use std::cell::Cell;

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
    /// The response items, each read as the Responses reader reads an
    /// input item (not kept as a `Value`: building one per record and
    /// reading the item from it was most of reading a rollout).
    items: Vec<Item<'static>>,
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

/// What the reader reads of a record of a given type: the one place that
/// says so, for [`CodexRollout::push_owned`] and for [`parse_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// Its payload, an item of the conversation (`response_item`).
    Item,
    /// Its payload: a turn context, a compaction.
    Payload,
    /// Nothing (`session_meta`, half a real rollout's bytes with its base
    /// instructions; `world_state`; `token_usage_record`).
    Nothing,
    /// Its payload when the payload's own `type` is this one, else
    /// nothing (`event_msg`: only `token_count` is read).
    PayloadOfType(&'static str),
    /// A type loopdbg does not know (or an older rollout's bare item).
    Unknown,
}

fn wanted(kind: &str) -> Wanted {
    match kind {
        "response_item" => Wanted::Item,
        "turn_context" | "compacted" => Wanted::Payload,
        "event_msg" => Wanted::PayloadOfType("token_count"),
        _ if RECORD_TYPES.contains(&kind) => Wanted::Nothing,
        _ => Wanted::Unknown,
    }
}

/// Whether a record of type `kind` with a payload of type `payload_kind`
/// is one the reader knows and reads nothing from.
fn read_for_nothing(kind: &str, payload_kind: Option<&str>) -> bool {
    match wanted(kind) {
        Wanted::Nothing => true,
        Wanted::PayloadOfType(read) => payload_kind != Some(read),
        Wanted::Item | Wanted::Payload | Wanted::Unknown => false,
    }
}

/// An item from a value: a rollout's items are read the same way from
/// a line's text ([`parse_line`]) and from a record already built (a
/// line of joined records, a compaction's kept history).
fn item_of(value: Value) -> Item<'static> {
    // Lax: every value is an item (a non-object one an item of nothing,
    // as the Responses reader takes it), so this never fails.
    Item::deserialize(value).unwrap_or_default()
}

impl CodexRollout {
    /// Adds the record on 1-based `line`.
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
                            next.items.push(item_of(item));
                            next.lines.push(line);
                        }
                    }
                    _ => {
                        let summary = payload
                            .field("message")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        next.summary = Some(summary.to_string());
                        next.items.push(item_of(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]})));
                        next.lines.push(line);
                    }
                }
                self.segments.push(next);
                return Ok(());
            }
            // Older rollouts wrote bare items, one per line.
            (_, None) if bare => record,
            _ => {
                if wanted(&kind) == Wanted::Unknown && !self.unknown.iter().any(|(k, _)| *k == kind)
                {
                    self.unknown.push((kind, line));
                }
                return Ok(());
            }
        };
        self.push_item(line, item_of(item));
        Ok(())
    }

    /// Adds the response item of the record on 1-based `line`.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "pushed just above when empty"
    )]
    pub(crate) fn push_item(&mut self, line: usize, item: Item<'static>) {
        if self.segments.is_empty() {
            self.segments.push(Segment::default());
        }
        let segment = self.segments.last_mut().expect("one segment");
        segment.items.push(item);
        segment.lines.push(line);
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
            // Each item is named by the line of the log it came from.
            let on_line = |i: usize| BlockSource {
                path: "payload".into(),
                line: lines.get(i).copied(),
                uuid: None,
            };
            let mut conv = responses::read_item_list(segment.items, Detail::Full, &on_line)
                .map_err(|e| relocate_error(e, &lines))?;
            conv.source = Source::Agent(Agent::Codex);
            // What Codex sends of its reasoning items is its own rewrite of
            // the rollout; the request bodies' rule is not its verdict.
            conv.notices
                .retain(|n| n.kind != crate::finding::Kind::ReasoningWithoutItem);
            conv.rewrites = rewrites;
            attach_usage(&mut conv, segment.usage);
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

/// Gives each `token_count` (its line, its tokens, the turn's model) to
/// the reply it counts: the last one written before it, unless that reply
/// has its count. A rollout's messages and counts come in the order of
/// their lines, so one pass with a cursor finds each; searching back from
/// the end for each count, and through the counts for each reply, was a
/// quarter of reading a long rollout (quadratic). What is not in that
/// order (nothing Codex writes) is searched as before.
fn attach_usage(
    conv: &mut Conversation,
    counts: Vec<(usize, loopdbg_engine::message::Usage, Option<String>)>,
) {
    use loopdbg_engine::message::Role;
    let lines = |m: usize| conv.message_sources[m].line;
    let in_order = conv.usage.is_empty()
        && (0..conv.messages.len()).all(|m| lines(m).is_some())
        && (1..conv.messages.len()).all(|m| lines(m - 1) <= lines(m))
        && counts.windows(2).all(|w| w[0].0 <= w[1].0);
    if !in_order {
        attach_usage_searching(conv, counts);
        return;
    }
    let (mut next, mut reply) = (0, None);
    for (line, usage, model) in counts {
        while next < conv.messages.len() && lines(next).is_some_and(|l| l < line) {
            if conv.messages[next].role == Role::Assistant {
                reply = Some(next);
            }
            next += 1;
        }
        // Replies only move forward: one counted already is the last.
        if let Some(message) = reply
            && conv.usage.last().is_none_or(|u| u.message != message)
        {
            conv.usage.push(super::TripUsage {
                message,
                usage,
                model,
            });
        }
    }
}

/// [`attach_usage`] by searching, for each count, back from the last
/// message.
fn attach_usage_searching(
    conv: &mut Conversation,
    counts: Vec<(usize, loopdbg_engine::message::Usage, Option<String>)>,
) {
    for (line, usage, model) in counts {
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
fn normalize(items: &mut Vec<Item<'static>>, lines: &mut Vec<usize>) -> Vec<Rewrite> {
    /// What an item is to the pairing, read once.
    enum Pairing<'a> {
        Call(&'a str, &'a str),
        Output(&'a str),
        Message,
        Other,
    }
    let read: Vec<Pairing> = items
        .iter()
        .map(|item| {
            let kind = item.kind().unwrap_or("");
            let id = item.call_or_item_id();
            match kind {
                "message" => Pairing::Message,
                _ if responses::is_call(kind) => {
                    id.map_or(Pairing::Other, |id| Pairing::Call(kind, id))
                }
                _ if responses::is_output(kind) => id.map_or(Pairing::Other, Pairing::Output),
                _ => Pairing::Other,
            }
        })
        .collect();
    let mut calls: ahash::AHashSet<&str> = ahash::AHashSet::new();
    let mut answered: ahash::AHashSet<&str> = ahash::AHashSet::new();
    for item in &read {
        match item {
            Pairing::Call(_, id) => {
                calls.insert(id);
            }
            Pairing::Output(id) => {
                answered.insert(id);
            }
            _ => {}
        }
    }
    // A call before the last message was followed by a request.
    let last_message = read.iter().rposition(|i| matches!(i, Pairing::Message));
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
            Pairing::Output(id) if !calls.contains(id) => {
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
            Pairing::Call(kind, id)
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
                    item_of(json!({"type": output_type, "call_id": id, "output": ABORTED})),
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

/// A rollout line as the reader takes it, from one pass over its text.
#[derive(Debug)]
pub(crate) enum Line {
    /// A record the reader reads nothing from ([`read_for_nothing`]):
    /// passed over, nothing of it built.
    Unread,
    /// A `response_item`'s item, read straight from the text.
    Item(Box<Item<'static>>),
    /// Any other record (or why the line is not one), as a value.
    Value(serde_json::Result<Value>),
}

/// Up to how long a line is read in one pass. Past it, the line is
/// parsed whole by the bounded parser, which charges every value it
/// builds: what the pass skips and an item's values are not charged.
const ONE_PASS_UP_TO: usize = crate::bounded::SKIPPED_UP_TO;

/// Line `text` of a rollout, read in one pass (issue 62): a record's
/// `type` comes before its `payload` in everything Codex writes, so by
/// the payload the reader knows what it wants of it. A response item is
/// read as the Responses reader's item straight from the text (building
/// a `Value` of it and reading the item from that was most of reading a
/// rollout); a payload the reader reads nothing from (`session_meta`,
/// `world_state`, `token_usage_record`, every event but `token_count`)
/// is passed over; anything else is built as a value, as the bounded
/// parser would. A line the pass is not sure of — a key twice, a payload
/// before its type, not an object, not JSON, longer than
/// [`ONE_PASS_UP_TO`], one with a lone surrogate escape or nested deeper
/// than [`SHALLOW`] — is parsed whole by the bounded parser and read as a
/// value, so its error, if it has one, is that parser's.
pub(crate) fn parse_line(text: &str) -> Line {
    // An item's fields the reader does not name are skipped, and serde_json
    // skips without decoding a `\u` escape's surrogates or counting how
    // deep it nests: a line the bounded parser would refuse for either is
    // left to it (found by the `plain` fuzz target for the check's fast
    // path, which does the same).
    let refusable =
        || !crate::plain::surrogates_are_paired(text) || !nested_within(text.as_bytes(), SHALLOW);
    if text.len() <= ONE_PASS_UP_TO && !refusable() {
        let limit = crate::bounded::limit_for(text.len());
        let left = Cell::new(limit);
        let mut de = serde_json::Deserializer::from_str(text);
        let read = de::Deserializer::deserialize_any(&mut de, Record { left: &left, limit });
        if let (Ok(Some(line)), Ok(())) = (read, de.end()) {
            return line;
        }
    }
    Line::Value(crate::bounded::value(text))
}

/// How deep a line read in one pass may nest: inside serde_json's limit
/// (128), which the bounded parser keeps and a skip does not.
const SHALLOW: usize = 120;

/// Whether the arrays and objects of `json` nest at most `most` deep
/// (brackets inside strings not counted). A line with fewer brackets
/// than that, nearly every line, is answered by counting them.
fn nested_within(json: &[u8], most: usize) -> bool {
    if json.iter().filter(|&&b| b == b'[' || b == b'{').count() <= most {
        return true;
    }
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

/// A record's top level, read key by key; `None` when unsure.
struct Record<'b> {
    left: &'b Cell<usize>,
    limit: usize,
}

/// What became of a record's payload.
enum Payload {
    /// Read as an item (boxed as the line hands it on).
    Item(Box<Item<'static>>),
    /// Passed over; its own `type`, when it was read.
    Passed(Option<String>),
    /// Built, among the record's members.
    Built,
}

impl<'de> Visitor<'de> for Record<'_> {
    type Value = Option<Line>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a rollout record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Line>, A::Error> {
        let value = crate::bounded::seed(self.left, self.limit);
        let mut members = Map::new();
        let mut payload = None;
        while let Some(key) = map.next_key::<LaxStr<'de>>()? {
            let key = key.0.unwrap_or_default();
            if members.contains_key(&*key) || (key == "payload" && payload.is_some()) {
                // A key twice: the later one counts; not worth a second
                // way of saying so.
                return Ok(None);
            }
            if key != "payload" {
                members.insert(key.into_owned(), map.next_value_seed(value)?);
                continue;
            }
            let kind = members.get("type").and_then(Value::as_str);
            payload = Some(match kind.map(wanted) {
                Some(Wanted::Item) => {
                    Payload::Item(Box::new(map.next_value::<Item>()?.into_owned()))
                }
                Some(Wanted::Nothing) => {
                    map.next_value::<crate::bounded::Skip>()?;
                    Payload::Passed(None)
                }
                Some(Wanted::PayloadOfType(read)) => {
                    match map.next_value_seed(EventPayload { value, read })? {
                        Event::Passed(kind) => Payload::Passed(kind),
                        Event::Built(built) => {
                            members.insert(key.into_owned(), built);
                            Payload::Built
                        }
                    }
                }
                _ => {
                    members.insert(key.into_owned(), map.next_value_seed(value)?);
                    Payload::Built
                }
            });
        }
        Ok(Some(match payload {
            Some(Payload::Item(item)) => Line::Item(item),
            Some(Payload::Passed(payload_kind)) => {
                let kind = members.get("type").and_then(Value::as_str).unwrap_or("");
                if !read_for_nothing(kind, payload_kind.as_deref()) {
                    return Ok(None);
                }
                Line::Unread
            }
            Some(Payload::Built) | None => Line::Value(Ok(Value::Object(members))),
        }))
    }
}

/// What became of an event's payload.
enum Event {
    /// Passed over; its `type`, when it had one.
    Passed(Option<String>),
    /// Built: its `type` was the one read, or not its first key.
    Built(Value),
}

/// An event's payload: passed over when its `type`, its first key as
/// Codex writes it, is not the one read; else built.
struct EventPayload<S> {
    value: S,
    read: &'static str,
}

impl<'de, S: DeserializeSeed<'de, Value = Value> + Copy> DeserializeSeed<'de> for EventPayload<S> {
    type Value = Event;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = Value> + Copy> Visitor<'de> for EventPayload<S> {
    type Value = Event;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Map::new();
        let mut passing = None;
        while let Some(key) = map.next_key::<LaxStr<'de>>()? {
            let key = key.0.unwrap_or_default();
            if passing.is_some() {
                if key == "type" {
                    return Err(de::Error::custom("a payload's type twice"));
                }
                map.next_value::<crate::bounded::Skip>()?;
                continue;
            }
            let member = map.next_value_seed(self.value)?;
            if members.is_empty() && key == "type" {
                match member.as_str() {
                    Some(kind) if kind != self.read => {
                        passing = Some(kind.to_string());
                        continue;
                    }
                    _ => {}
                }
            }
            members.insert(key.into_owned(), member);
        }
        Ok(match passing {
            Some(kind) => Event::Passed(Some(kind)),
            None => Event::Built(Value::Object(members)),
        })
    }

    // A payload that is not an object has no type: an event of nothing.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<crate::bounded::Skip>()?.is_some() {}
        Ok(Event::Passed(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Event::Passed(None))
    }
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

    fn unread(line: &str) -> bool {
        matches!(parse_line(line), Line::Unread)
    }

    #[test]
    fn only_records_read_for_nothing_are_passed_over() {
        let skipped = [
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"long"}}"#,
            r#"{"type":"world_state","payload":{"cwd":"/"}}"#,
            r#"{"type":"token_usage_record","payload":{"id":"resp_1"}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}"#,
            r#"{"type":"event_msg","payload":{"type":"turn_aborted"}}"#,
            r#"{"type":"event_msg","payload":"text"}"#,
            r#"{"type":"event_msg","payload":null}"#,
            r#"{"type":"session_meta","payload":[1,{"a":[]}]}"#,
            // An escape is read as its character, as the value would be.
            r#"{"type":"event\u005fmsg","payload":{"type":"user_message"}}"#,
        ];
        for line in skipped {
            assert!(unread(line), "{line}");
        }
        let item =
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#;
        assert!(matches!(parse_line(item), Line::Item(_)));
        let read = [
            r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"turn_context","payload":{"model":"gpt-5-codex"}}"#,
            r#"{"type":"compacted","payload":{"message":"summary"}}"#,
            // A bare item of an older rollout, its `type` its own.
            r#"{"type":"message","role":"user","content":[]}"#,
            // Not sure: built, and read from the value as before.
            r#"{"type":"event_msg","payload":{}}"#,
            r#"{"type":"session_meta"}"#,
            r#"{"type":7,"payload":{}}"#,
            r#"{"payload":{"type":"agent_message"},"type":"event_msg"}"#,
            r#"{"type":"event_msg","type":"response_item","payload":{"type":"message"}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","type":"agent_message"}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","type":"token_count"}}"#,
            r#"{"type":"event_msg","payload":{}}{"type":"response_item","payload":{}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message"}"#,
        ];
        for line in read {
            assert!(!unread(line), "{line}");
        }
        // What the bounded parser refuses in a payload passed over is
        // refused, in its words: nesting past serde_json's limit, a lone
        // surrogate.
        let deep = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","deep":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let surrogate = r#"{"type":"session_meta","payload":{"text":"\ud800"}}"#;
        // … and in a field of an item the reader does not name.
        let item_surrogate = r#"{"type":"response_item","payload":{"type":"reasoning","encrypted_content":"\udc00"}}"#;
        let item_deep = deep.replace("event_msg", "response_item");
        for line in [deep.as_str(), surrogate, item_surrogate, &item_deep] {
            let Line::Value(Err(e)) = parse_line(line) else {
                panic!("{line} was read");
            };
            assert_eq!(
                e.to_string(),
                crate::bounded::value(line).unwrap_err().to_string()
            );
        }
        let shallow = deep
            .replace(&"[".repeat(200), &"[".repeat(60))
            .replace(&"]".repeat(200), &"]".repeat(60));
        assert!(unread(&shallow));
        // Brackets in strings are text.
        let quoted = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","text":"{}\"["}}}}"#,
            "[".repeat(200)
        );
        assert!(unread(&quoted));
        // Past half a megabyte, the bounded parser reads the line whole,
        // and refuses what it would refuse for its size.
        let long = format!(
            r#"{{"type":"event_msg","payload":{{"type":"x","text":"{}"}}}}"#,
            "x".repeat(1 << 20)
        );
        assert!(matches!(parse_line(&long), Line::Value(Ok(_))));
        let numbers = format!(
            r#"{{"type":"session_meta","payload":[{}0]}}"#,
            "0,".repeat(1 << 19)
        );
        assert!(matches!(parse_line(&numbers), Line::Value(Err(_))));
    }

    /// Lines of every odd shape in one rollout, read in one pass and by
    /// building every record: the same conversations, the same lines
    /// refused.
    #[test]
    fn odd_lines_read_in_one_pass_as_built_whole() {
        let lines = [
            r#"{"type":"session_meta","payload":{"id":"x"}}"#,
            r#"{"type":"turn_context","payload":{"model":"gpt-5-codex"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go \u00e9"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c1","arguments":"{\"command\":[\"ls\"]}"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c2","arguments":{"command":["ls"]}}}"#,
            r#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c3","input":"*** Begin Patch"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":{"content":"ok","success":true}}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":"orphan"}}"#,
            r#"{"type":"response_item","payload":{"type":"local_shell_call_output","id":"c4","output":"x"}}"#,
            r#"{"payload":{"type":"function_call","name":"shell","call_id":"c5","arguments":"{}"},"type":"response_item"}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"reply"}]}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":2}}}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"reply"}]}}"#,
            r#"{"type":"event_msg","payload":{"info":{"last_token_usage":{"input_tokens":9}},"type":"token_count"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"reply"}]}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","type":"token_count","info":{"last_token_usage":{"input_tokens":1}}}}"#,
            r#"{"type":"new_kind","payload":{}}"#,
            r#"{"type":"function_call","name":"shell","call_id":"c6","arguments":"{}"}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}{"type":"event_msg","payload":{"type":"x"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":"again"}}"#,
            r#"{"type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"kept"}]},{"type":"function_call","name":"shell","call_id":"k1","arguments":"{}"}]}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}}"#,
            r#"{"type":"response_item""#,
            r#"{"type":"response_item","payload":{"type":"message","role":"robot"}}"#,
        ];
        let numbered: Vec<(usize, &str)> =
            lines.iter().enumerate().map(|(n, l)| (n + 1, *l)).collect();
        let [(got, got_bad), (built, built_bad)] = both(&numbered);
        assert_eq!(got, built);
        assert_eq!(got_bad, built_bad);
        assert_eq!(got_bad, [23]);
        // The reader refuses the last segment for its odd item, in the
        // same words; without it, the conversations are read.
        assert!(got.contains("unknown role `robot`"), "{got}");
        let [(got, _), (built, _)] = both(&numbered[..numbered.len() - 1]);
        assert_eq!(got, built);
        assert!(
            got.starts_with("Ok(") && got.contains("c5") && got.contains("kept"),
            "{got}"
        );
        // Each of the three counts is read, the one whose type was given
        // twice included (the later one counts).
        assert_eq!(got.matches("TripUsage").count(), 3, "{got}");
        // Items the Responses reader refuses, each alone.
        for (item, error) in [
            (
                r#"{"type":"response_item","payload":"not an item"}"#,
                "a string `role`",
            ),
            (
                r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","call_id":7}}"#,
                "a string `call_id`",
            ),
            (
                r#"{"type":"response_item","payload":{"type":"function_call_output"}}"#,
                "a string `call_id`",
            ),
        ] {
            let [(got, _), (built, _)] = both(&[(1, item)]);
            assert_eq!(got, built);
            assert!(got.contains(error), "{got}");
        }
    }

    /// Counts given to replies in one pass, as by searching for each: on
    /// every shipped rollout's conversations, with counts on every line,
    /// every other line and in runs.
    #[test]
    fn counts_given_in_one_pass_as_by_searching() {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/transcripts"
        );
        let mut convs = Vec::new();
        for path in [
            format!("{root}/usage/codex.jsonl"),
            format!("{root}/codex/rollout-2026-12-02T04-27-23-dropped-output.jsonl"),
        ] {
            let text = std::fs::read_to_string(path).unwrap();
            let lines = crate::log::both_ways::numbered(&text);
            let mut log = Log::new(Source::Agent(Agent::Codex)).unwrap();
            log.push_lines(&lines);
            convs.extend(log.finish().unwrap());
        }
        assert!(convs.iter().any(|c| !c.usage.is_empty()));
        let usage = |k: usize| loopdbg_engine::message::Usage {
            input: k as u64,
            ..Default::default()
        };
        for mut conv in convs {
            conv.usage.clear();
            let last = conv
                .message_sources
                .iter()
                .filter_map(|s| s.line)
                .max()
                .unwrap_or(0)
                + 2;
            for pick in [1, 2, 3] {
                let counts: Vec<_> = (0..=last)
                    .filter(|l| l % pick == 0 || l % 7 == 1)
                    .map(|l| (l, usage(l), Some(format!("m{l}"))))
                    .collect();
                let (mut fast, mut searched) = (conv.clone(), conv.clone());
                attach_usage(&mut fast, counts.clone());
                attach_usage_searching(&mut searched, counts);
                assert!(!fast.usage.is_empty());
                assert_eq!(format!("{:?}", fast.usage), format!("{:?}", searched.usage));
            }
        }
    }

    /// The rollout read both ways ([`crate::log::both_ways`]).
    fn both(lines: &[(usize, &str)]) -> [(String, Vec<usize>); 2] {
        crate::log::both_ways::read(Source::Agent(Agent::Codex), lines)
    }

    /// Every Codex rollout the project ships, read through the log's
    /// line parser (in one pass) and by building every record: the same
    /// conversations, and the same lines refused.
    #[test]
    fn passing_records_over_reads_every_rollout_as_building_them_all() {
        let rollouts = crate::log::both_ways::fixtures(|path, text| {
            path.extension().is_some_and(|e| e == "jsonl") && text.contains("session_meta")
        });
        assert!(rollouts.len() >= 5, "{} rollouts", rollouts.len());
        let mut passed_over = 0;
        for (path, text) in &rollouts {
            let lines = crate::log::both_ways::numbered(text);
            passed_over += lines.iter().filter(|(_, l)| unread(l)).count();
            let [(got, bad), (built, built_bad)] = both(&lines);
            assert_eq!(got, built, "{}", path.display());
            assert_eq!(bad, built_bad, "{}", path.display());
        }
        assert!(passed_over >= 10, "only {passed_over} lines passed over");
    }
}
