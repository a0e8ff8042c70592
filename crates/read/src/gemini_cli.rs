//! Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.jsonl`,
//! and the older whole-file `session-*.json`): a metadata record, then
//! message records (`{id, timestamp, type, content, toolCalls}`) written as
//! an upsert log. A record whose `id` was seen replaces it in place (a
//! message is rewritten as its calls progress); `{"$rewindTo": id}` cuts the
//! history from that message on; `{"$set": {"messages": […]}}` replaces it.
//!
//! The folded history becomes what Gemini CLI sends on resume: each
//! `gemini` message is a model turn (its text and one `functionCall` per
//! tool call) followed by a user turn of the `functionResponse`s of the
//! calls that have a `result`. It is checked by Gemini's rules.

use crate::agent::Agent;
use crate::bounded::Skip;
use crate::lax::{Field, LaxStr};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::Cell;

use super::{BlockSource, Conversation, Detail, ReadError, Source};
use loopdbg_engine::message::{Block, Message, Role, Usage};
use loopdbg_engine::session::Json;

/// Where the latest version of a folded message record is: a line of its
/// own, or an element of a `$set` (or legacy whole-file) `messages` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The line (as the caller numbers them).
    pub line: usize,
    /// The element of that line's `messages` array, when it is one.
    pub element: Option<usize>,
    /// Later elements of the same array with the same id. The CLI keeps
    /// its messages in a map by id (`messagesMap.set`,
    /// chatRecordingService.ts), so they are one record at the first's
    /// place with the last one's value; a failed resume writes such
    /// copies (two `<id>_response` records in one `$set`).
    pub copies: Vec<usize>,
}

/// One message record of the folded history.
#[derive(Debug, Clone)]
pub struct Folded {
    /// Its `id`.
    pub id: String,
    /// Where its latest version is.
    pub place: Place,
    /// Its latest version.
    pub value: Value,
}

/// The message records as Gemini CLI folds its recording when it loads a
/// session: a record whose `id` was seen replaces it in place,
/// `$rewindTo` cuts from a record on, `$set.messages` (or the legacy
/// file's `messages`) replaces them all. The one fold: the reader builds
/// what the CLI sends from it, the doctor edits the places it names.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    /// The records, in the order the CLI keeps them (private: `index`
    /// points into it).
    records: Vec<Folded>,
    /// Where each id is in `records`: a long session updates its records
    /// thousands of times, and finding each by walking them all took three
    /// quarters of `check`'s time on an 8 MB recording (14 MB/s).
    index: std::collections::HashMap<String, usize>,
}

impl Fold {
    /// The records, in the order the CLI keeps them.
    pub fn records(&self) -> &[Folded] {
        &self.records
    }

    /// The records, given up.
    pub fn into_records(self) -> Vec<Folded> {
        self.records
    }

    /// Folds the record on `line` in.
    pub fn push(&mut self, line: usize, mut record: Value) {
        if let Some(target) = record.field("$rewindTo") {
            let target = target.as_str().unwrap_or("");
            let cut = self.index.get(target).copied().unwrap_or(0);
            for gone in self.records.drain(cut..) {
                self.index.remove(&gone.id);
            }
            return;
        }
        if record.field("$set").is_none() && record.field("id").is_some() {
            self.upsert(line, None, record);
            return;
        }
        // A `$set` patch, or the metadata line (the legacy whole-file form
        // carries the messages there).
        let patch = match record.field_mut("$set") {
            Some(patch) => patch,
            None => &mut record,
        };
        if let Some(Value::Array(messages)) = patch.field_mut("messages") {
            let messages = std::mem::take(messages);
            self.records.clear();
            self.index.clear();
            for (e, m) in messages.into_iter().enumerate() {
                self.upsert(line, Some(e), m);
            }
        }
    }

    fn upsert(&mut self, line: usize, element: Option<usize>, value: Value) {
        let Some(id) = value
            .field("id")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        let place = Place {
            line,
            element,
            copies: Vec::new(),
        };
        match self.index.get(&id).map(|&k| &mut self.records[k]) {
            // A copy in the same array: one record at the first's place.
            Some(slot)
                if slot.place.line == line && slot.place.element.is_some() && element.is_some() =>
            {
                slot.place.copies.extend(element);
                slot.value = value;
            }
            Some(slot) => {
                slot.place = place;
                slot.value = value;
            }
            None => {
                self.index.insert(id.clone(), self.records.len());
                self.records.push(Folded { id, place, value });
            }
        }
    }
}

/// The fields of a record the reader reads ([`Fold::push`], [`GeminiCliLog::finish`]):
/// a message record's, and a `$rewindTo` or `$set` patch's. A field read
/// must be named here, or [`parse_line`] leaves it out.
const RECORD_FIELDS: &[&str] = &[
    "id",
    "type",
    "content",
    "model",
    "toolCalls",
    "tokens",
    "$rewindTo",
    "$set",
    "messages",
];

/// The fields of a record's tool call the reader reads ([`model_turn`]).
const CALL_FIELDS: &[&str] = &["id", "name", "args", "status", "result"];

/// Line `text` of a chat recording, as the reader reads it: the record as
/// a value of only the fields it reads ([`RECORD_FIELDS`], and of each
/// tool call [`CALL_FIELDS`]). What the CLI writes for its own screen —
/// a call's `resultDisplay` (for an edit, the file before and after),
/// its `description`, a reply's `thoughts`, the times — is passed over,
/// parsed (so a line the bounded parser refuses is refused) but not
/// built (issue 62: building every record whole was most of reading a
/// chat). What is kept is whole, a record's `content` included, and a
/// call's `result` too unless `detail` is [`Detail::Shape`], which drops
/// results' content once read: then only its [`Outline`] is built (a
/// call's output was half of a chat's bytes, and most of reading one).
/// A line longer than [`crate::bounded::SKIPPED_UP_TO`], or of another
/// shape (not an object, `toolCalls` not a list of objects), is parsed
/// whole by the bounded parser, as is one with an error, so the error is
/// that parser's.
pub(crate) fn parse_line(text: &str, detail: Detail) -> serde_json::Result<Value> {
    if text.len() <= crate::bounded::SKIPPED_UP_TO {
        let limit = crate::bounded::limit_for(text.len());
        let left = Cell::new(limit);
        let mut de = serde_json::Deserializer::from_str(text);
        let read = de::Deserializer::deserialize_any(
            &mut de,
            Kept {
                left: &left,
                limit,
                fields: RECORD_FIELDS,
                detail,
            },
        );
        if let (Ok(value), Ok(())) = (read, de.end()) {
            return Ok(value);
        }
    }
    crate::bounded::value(text)
}

/// An object of which only `fields` are built (`toolCalls` as a list of
/// calls of which only [`CALL_FIELDS`] are); anything else is an error,
/// for the caller to parse the line whole.
#[derive(Clone, Copy)]
struct Kept<'b> {
    left: &'b Cell<usize>,
    limit: usize,
    fields: &'static [&'static str],
    /// Under [`Detail::Shape`], a call's `result` in [`Outline`] only.
    detail: Detail,
}

impl<'de> DeserializeSeed<'de> for Kept<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Kept<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let value = crate::bounded::seed(self.left, self.limit);
        let mut members = Map::new();
        while let Some(key) = map.next_key::<LaxStr<'de>>()? {
            let key = key.0.unwrap_or_default();
            if !self.fields.contains(&&*key) {
                map.next_value::<Skip>()?;
                continue;
            }
            // Only a record keeps `toolCalls` (a call's fields do not name it).
            let member = match &*key {
                "toolCalls" => map.next_value_seed(Calls(Kept {
                    fields: CALL_FIELDS,
                    ..self
                }))?,
                // Only a call keeps `result` (a record's fields do not name it).
                "result" if self.detail == Detail::Shape => map.next_value_seed(Outline(value))?,
                _ => map.next_value_seed(value)?,
            };
            members.insert(key.into_owned(), member);
        }
        Ok(Value::Object(members))
    }
}

/// A call's `result` in outline, for [`Detail::Shape`]: what
/// [`responses_sent`] reads of it is built — its kind, its parts and their
/// `functionResponse`s, and whole (by the seed it holds) the `id` naming
/// the call each answers. Every other string is parsed and left empty, and
/// each `response` parsed and left `null`: that is the content, and
/// [`GeminiCliLog::finish`] drops it under `Shape`. So the conversation is
/// the one the whole result gives, its content dropped (tested both ways,
/// and fuzzed: `agent_lines`).
#[derive(Clone, Copy)]
struct Outline<S>(S);

impl<'de, S: DeserializeSeed<'de, Value = Value> + Copy> DeserializeSeed<'de> for Outline<S> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = Value> + Copy> Visitor<'de> for Outline<S> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::String(String::new()))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let member = match key.as_str() {
                "id" => map.next_value_seed(self.0)?,
                "response" => {
                    map.next_value::<Skip>()?;
                    Value::Null
                }
                _ => map.next_value_seed(self)?,
            };
            members.insert(key, member);
        }
        Ok(Value::Object(members))
    }
}

/// A record's `toolCalls`: a list of calls, each [`Kept`].
struct Calls<'b>(Kept<'b>);

impl<'de> DeserializeSeed<'de> for Calls<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Calls<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of tool calls")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut calls = Vec::new();
        while let Some(call) = seq.next_element_seed(self.0)? {
            calls.push(call);
        }
        Ok(Value::Array(calls))
    }
}

/// Folds a chat recording; [`GeminiCliLog::finish`] gives the conversation.
#[derive(Debug, Clone, Default)]
pub struct GeminiCliLog {
    /// Message records in order, with the line of their latest version.
    fold: Fold,
    /// What is kept: under [`Detail::Shape`] results' content is dropped
    /// (texts and arguments, small in a chat, are kept whole).
    detail: Detail,
    /// Lines that held records joined (a write that lost its newline).
    pub(super) joined: Vec<(usize, usize)>,
}

impl GeminiCliLog {
    /// Keeps only what `detail` says of each record read from now on.
    pub fn keep(&mut self, detail: Detail) {
        self.detail = detail;
    }

    /// What is kept of each record.
    pub fn detail(&self) -> Detail {
        self.detail
    }

    /// Adds the record on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, record: Value) -> Result<(), ReadError> {
        self.fold.push(line, record);
        Ok(())
    }

    /// The conversation the folded history sends.
    pub fn finish(self) -> Vec<Conversation> {
        let mut conv = Conversation::new(Source::Agent(Agent::GeminiCli));
        let joined = self.joined;
        let detail = self.detail;
        for Folded {
            id,
            place: Place { line, .. },
            value: mut record,
        } in self.fold.records
        {
            let src = |path: String| BlockSource {
                path: path.into(),
                line: Some(line),
                uuid: Some(id.as_str().into()),
            };
            match record.field("type").and_then(Value::as_str) {
                Some("user") => {
                    // Gemini CLI skips the user records it would not send
                    // (empty, `/` and `?` commands, its own context
                    // preambles) and sends the rest part for part: the
                    // `functionResponse` records it writes after running
                    // tools (since 0.5x) are sent as well as each call's
                    // `result`.
                    if is_ignored_user_content(record.field("content")) {
                        continue;
                    }
                    let (blocks, sources) = parts_of(record.field_mut("content"), &conv, &src);
                    push_coalesced(
                        &mut conv,
                        Message {
                            role: Role::User,
                            content: blocks,
                            finish_reason: None,
                        },
                        src("message".into()),
                        sources,
                    );
                }
                Some("gemini") => model_turn(&mut conv, &mut record, &src),
                // An error the CLI wrote where the reply would be: the
                // request before it was refused.
                Some("error") => {
                    let text = text_of(record.field("content"));
                    conv.refusals.push(super::Refusal {
                        at: conv.messages.len(),
                        status: status_of(&text),
                        text,
                        source: src("message".into()),
                    });
                }
                // info and warning records are the CLI's own notes.
                _ => {}
            }
        }
        if detail == Detail::Shape {
            for block in conv.messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
                if let Block::ToolResult { content, .. } = block {
                    *content = super::fingerprint::dropped();
                }
            }
        }
        let mut out = if conv.messages.is_empty() {
            Vec::new()
        } else {
            vec![conv]
        };
        super::note_joined_lines(&mut out, joined);
        out
    }
}

/// A `gemini` record as Gemini CLI sends it on resume: a model turn (its
/// text and one `functionCall` per tool call, or the parts of its content
/// when those hold the calls), then a user turn of the calls' `result`s.
///
/// The record is the fold's own, taken apart: its calls' arguments and
/// results are moved into the conversation, not copied (a copy of every
/// result was most of reading a long chat).
fn model_turn(conv: &mut Conversation, record: &mut Value, src: &dyn Fn(String) -> BlockSource) {
    // The model of the latest reply is the one a resumed session asks
    // (Gemini's rules differ by family).
    if let Some(model) = record.field("model").and_then(Value::as_str) {
        conv.model = Some(model.to_string());
    }
    let mut content = Vec::new();
    let mut sources = Vec::new();
    let parts_hold_calls = record
        .field("content")
        .and_then(Value::as_array)
        .is_some_and(|parts| parts.iter().any(|p| p.field("functionCall").is_some()));
    if parts_hold_calls {
        let (blocks, block_sources) = parts_of(record.field_mut("content"), conv, src);
        content = blocks;
        sources = block_sources;
    } else {
        let text = text_of(record.field("content"));
        if !text.is_empty() {
            content.push(Block::Text { text: text.into() });
            sources.push(src("content".into()));
        }
    }
    let calls = record
        .field_mut("toolCalls")
        .and_then(Value::as_array_mut)
        .map(Vec::as_mut_slice)
        .unwrap_or_default();
    let mut results = Vec::new();
    let mut result_sources = Vec::new();
    for (k, call) in calls.iter_mut().enumerate() {
        let name = call.field("name").and_then(Value::as_str).unwrap_or("");
        let call_id = call
            .field("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{name}#{k}"), str::to_string);
        if !parts_hold_calls {
            let name = name.to_string();
            content.push(Block::ToolUse {
                id: call_id.as_str().into(),
                name: name.into(),
                input: Json::new(call.field_mut("args").map_or(Value::Null, Value::take)),
            });
            sources.push(src(format!("toolCalls[{k}]")));
        }
        let status = call.field("status").and_then(Value::as_str);
        let is_error = matches!(status, Some("error" | "cancelled"));
        if let Some(result) = call.field_mut("result").filter(|r| !r.is_null()) {
            for (id, content, path) in responses_sent(result, &call_id, k) {
                results.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(content),
                    is_error,
                });
                result_sources.push(src(path));
            }
        }
    }
    // A record with nothing to send (an empty reply the CLI wrote before
    // its calls arrived) is not sent, and nor are its results.
    if content.is_empty() {
        return;
    }
    push_coalesced(
        conv,
        Message {
            role: Role::Assistant,
            content,
            finish_reason: None,
        },
        src("message".into()),
        sources,
    );
    if let Some(tokens) = record.field("tokens").filter(|t| t.is_object()) {
        // The CLI's copy of Gemini's `usageMetadata`: `input` counts the
        // cached tokens too; thinking is billed as output.
        let count = |key: &str| tokens.get(key).and_then(Value::as_u64).unwrap_or(0);
        let usage = Usage {
            input: count("input").saturating_sub(count("cached")),
            output: count("output") + count("thoughts"),
            cache_read: count("cached"),
            cache_write: 0,
        };
        let message = conv.messages.len() - 1;
        let model = record
            .field("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        match conv.usage.iter_mut().find(|u| u.message == message) {
            Some(trip) => trip.usage.add(&usage),
            None => conv.usage.push(super::TripUsage {
                message,
                usage,
                model,
            }),
        }
    }
    if !results.is_empty() {
        push_coalesced(
            conv,
            Message {
                role: Role::User,
                content: results,
                finish_reason: None,
            },
            src("toolCalls".into()),
            result_sources,
        );
    }
}

/// Pushes `message`, or adds its blocks to the last message when that has
/// the same role: Gemini CLI joins neighbouring turns of one role before
/// it sends the history.
pub(crate) fn push_coalesced(
    conv: &mut Conversation,
    message: Message,
    source: BlockSource,
    blocks: Vec<BlockSource>,
) {
    if conv.messages.last().is_some_and(|m| m.role == message.role) {
        let at = conv.messages.len() - 1;
        conv.messages[at].content.extend(message.content);
        conv.block_sources[at].extend(blocks);
    } else {
        conv.push(message, source, blocks);
    }
}

/// Whether Gemini CLI leaves a user record out of the history it resumes
/// with: its content, as the CLI prints it, is empty, a `/` or `?`
/// command, or one of its own context preambles.
fn is_ignored_user_content(content: Option<&Value>) -> bool {
    let printed = printed_parts(content);
    let printed = printed.trim();
    printed.is_empty()
        || printed.starts_with('/')
        || printed.starts_with('?')
        || printed.starts_with("<session_context>")
        || printed.starts_with("<hook_context>")
}

/// A record's content as Gemini CLI prints it (`partListUnionToString`,
/// verbose): texts, and a tag for calls, responses and data.
fn printed_parts(content: Option<&Value>) -> String {
    let one = |p: &Value| -> String {
        if let Some(s) = p.as_str() {
            return s.to_string();
        }
        if let Some(f) = p.field("functionCall") {
            return format!("[Function Call: {}]", f["name"].as_str().unwrap_or(""));
        }
        if let Some(f) = p.field("functionResponse") {
            return format!("[Function Response: {}]", f["name"].as_str().unwrap_or(""));
        }
        if p.field("inlineData").is_some() || p.field("fileData").is_some() {
            return "[Data]".into();
        }
        p.field("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match content {
        Some(Value::Array(parts)) => parts.iter().map(one).collect(),
        Some(other) => one(other),
        None => String::new(),
    }
}

/// The blocks of a record's parts: texts (thoughts left out, as the CLI
/// strips them), calls and responses.
fn parts_of(
    content: Option<&mut Value>,
    conv: &Conversation,
    src: &dyn Fn(String) -> BlockSource,
) -> (Vec<Block>, Vec<BlockSource>) {
    let mut blocks = Vec::new();
    let mut sources = Vec::new();
    let parts: Vec<&mut Value> = match content {
        Some(Value::Array(parts)) => parts.iter_mut().collect(),
        Some(Value::String(text)) => {
            blocks.push(Block::Text {
                text: std::mem::take(text).into(),
            });
            sources.push(src("content".into()));
            return (blocks, sources);
        }
        Some(other) => vec![other],
        None => Vec::new(),
    };
    for (k, part) in parts.into_iter().enumerate() {
        let path = format!("content[{k}]");
        if let Some(call) = part.field_mut("functionCall") {
            let name = call.field("name").and_then(Value::as_str).unwrap_or("");
            let id = call
                .field("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{name}#{k}"), str::to_string);
            let name = name.to_string();
            blocks.push(Block::ToolUse {
                id: id.into(),
                name: name.into(),
                input: Json::new(call.field_mut("args").map_or(Value::Null, Value::take)),
            });
        } else if let Some(response) = part.field_mut("functionResponse") {
            let name = response.field("name").and_then(Value::as_str).unwrap_or("");
            let id = response
                .field("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| open_call_named(conv, name))
                .unwrap_or_else(|| format!("{name}#?"));
            let answer = response
                .field_mut("response")
                .map_or(Value::Null, Value::take);
            let is_error = answer.field("error").is_some() && answer.field("output").is_none();
            blocks.push(Block::ToolResult {
                tool_use_id: id.into(),
                content: Json::new(answer),
                is_error,
            });
        } else if let Some(text) = part.field("text").and_then(Value::as_str) {
            if part.field("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            blocks.push(Block::Text { text: text.into() });
        } else {
            continue;
        }
        sources.push(src(path));
    }
    (blocks, sources)
}

/// The id of the first call named `name` in the last model turn.
fn open_call_named(conv: &Conversation, name: &str) -> Option<String> {
    let model = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)?;
    model.content.iter().find_map(|b| match b {
        Block::ToolUse { id, name: n, .. } if &**n == name => Some(id.to_string()),
        _ => None,
    })
}

/// The HTTP status an error text gives: Gemini's JSON `"code": 400`, its
/// status names, or a bare `[API Error: 400 …`.
pub(super) fn status_of(text: &str) -> Option<u16> {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(at) = squeezed.find("\"code\":") {
        let digits: String = squeezed[at + 7..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(code) = digits.parse() {
            return Some(code);
        }
    }
    if text.contains("INVALID_ARGUMENT") {
        return Some(400);
    }
    if text.contains("RESOURCE_EXHAUSTED") {
        return Some(429);
    }
    let rest = &text[text.find("API Error: ")? + "API Error: ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() == 3).then(|| digits.parse().ok()).flatten()
}

/// A record's `content`: a string, or parts whose texts are joined.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.field("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Object(part)) => part
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

/// The `functionResponse`s Gemini CLI sends for call `k`'s `result`, as
/// `convertSessionToClientHistory` (packages/core/src/utils/sessionUtils.ts)
/// builds them on resume: a string is the call's `{output}`; an array is
/// sent part for part, *every* part, whichever call it names (a cancelled
/// batch whose resume failed leaves each call's `result` holding the whole
/// batch's responses, and the CLI sends them all); an object is sent as the
/// part it is. Each: the id it answers, its `response`, and where it is.
fn responses_sent(result: &mut Value, call_id: &str, k: usize) -> Vec<(String, Value, String)> {
    let answer = |part: &mut Value| -> Option<(String, Value)> {
        let f = part.field_mut("functionResponse")?;
        let id = f
            .field("id")
            .and_then(Value::as_str)
            .unwrap_or(call_id)
            .to_string();
        Some((id, f.field_mut("response").map_or(Value::Null, Value::take)))
    };
    let whole = format!("toolCalls[{k}].result");
    match result {
        Value::Array(parts) if parts.iter().any(|p| p.field("functionResponse").is_some()) => {
            let count = parts.len();
            parts
                .iter_mut()
                .enumerate()
                .filter_map(|(p, part)| {
                    let (id, response) = answer(part)?;
                    // One part is the call's own answer: named as the
                    // whole `result`, as it always was.
                    let path = match count {
                        1 => whole.clone(),
                        _ => format!("{whole}[{p}]"),
                    };
                    Some((id, response, path))
                })
                .collect()
        }
        Value::String(s) => {
            let output = serde_json::Map::from_iter([(
                "output".to_string(),
                Value::String(std::mem::take(s)),
            )]);
            vec![(call_id.to_string(), Value::Object(output), whole)]
        }
        other => match answer(other) {
            Some((id, response)) => vec![(id, response, whole)],
            None => vec![(call_id.to_string(), other.take(), whole)],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The chat read both ways ([`crate::log::both_ways`]), in full and
    /// in outline (each way's `Shape` must agree with the other's: the
    /// line parser's outline of a result, and the whole result dropped).
    fn both_ways(text: &str) -> [(String, Vec<usize>); 2] {
        let lines = crate::log::both_ways::numbered(text);
        let source = Source::Agent(Agent::GeminiCli);
        let [outlined, dropped] = crate::log::both_ways::read_kept(source, &lines, Detail::Shape);
        assert_eq!(outlined, dropped, "under Shape");
        crate::log::both_ways::read(source, &lines)
    }

    /// Every Gemini CLI chat the project ships, read both ways.
    #[test]
    fn records_built_of_the_fields_read_read_every_chat_as_built_whole() {
        let chats = crate::log::both_ways::fixtures(|path, text| {
            path.extension().is_some_and(|e| e == "jsonl")
                && (text.contains("\"toolCalls\"") || text.contains("\"$set\""))
                && text.contains("\"projectHash\"")
        });
        for (path, text) in &chats {
            let [pruned, whole] = both_ways(text);
            assert_eq!(pruned, whole, "{}", path.display());
        }
        let chats = chats.len();
        assert!(chats >= 7, "{chats} chats");
    }

    /// Lines of every odd shape in one chat, read both ways.
    #[test]
    fn odd_records_read_as_built_whole() {
        let deep = format!(
            r#"{{"id":"d","type":"info","thoughts":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let big = format!(
            r#"{{"id":"g9","type":"gemini","content":"big","toolCalls":[{{"id":"c9","name":"edit","args":{{}},"result":[],"resultDisplay":"{}"}}]}}"#,
            "x".repeat(600 << 10)
        );
        let lines = [
            r#"{"sessionId":"s","projectHash":"p","startTime":"t","lastUpdated":"t","kind":"main"}"#,
            r#"{"id":"u1","timestamp":"t","type":"user","content":[{"text":"go"}]}"#,
            r#"{"id":"g1","timestamp":"t","type":"gemini","content":"","model":"gemini-2.5-pro","thoughts":[{"subject":"s","description":"d"}],"tokens":{"input":9,"output":2,"cached":1,"thoughts":3},"toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"ls"},"status":"success","displayName":"Shell","description":"ls","resultDisplay":{"fileDiff":"@@","originalContent":"a","newContent":"b"},"renderOutputAsMarkdown":false,"result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"ok"}}}]}]}"#,
            r#"{"id":"g2","type":"gemini","content":"x","toolCalls":{"not":"a list"}}"#,
            r#"{"id":"g3","type":"gemini","content":"y","toolCalls":[1,{"id":"c3","name":"n"}]}"#,
            r#"{"id":"g4","type":"gemini","content":"z","toolCalls":[{"id":"c4","name":"n","name":"m","args":{"a":1},"status":"error"}]}"#,
            r#"{"id":"u2","type":"user","type":"user","content":"/help"}"#,
            r#"{"id":"u3","type":"user","content":[{"text":"again"}],"extra":{"toolCalls":[1]}}"#,
            r#"{"id":"g1","type":"gemini","content":"rewritten","toolCalls":[{"id":"c1","name":"run_shell_command","args":{},"status":"cancelled","result":null}]}"#,
            r#"{"$rewindTo":"g4"}"#,
            r#"{"id":"g6","type":"gemini","content":"v","toolCalls":[{"id":"c6","name":"n","args":{},"status":"error","result":[{"functionResponse":{"id":"c6","name":"n","response":{"error":"boom"}}}]}]}"#,
            r#"{"id":"e1","type":"error","content":"[API Error: 400 Bad Request]"}"#,
            r#"{"$set":{"lastUpdated":"t2"}}"#,
            r#"{"id":"g5","type":"gemini","content":"w","toolCalls":[{"id":"c5","name":"n","args":{},"resultDisplay":"\udc00"}]}"#,
            deep.as_str(),
            r#"{"id":"u4","type":"user","content":"joined"}{"id":"u5","type":"user","content":"twice"}"#,
            big.as_str(),
            r#"{"$rewindTo":7}"#,
            r#"{"$set":{"messages":[{"id":"m1","type":"user","content":"kept","displayContent":"x"},{"id":"m2","type":"gemini","content":"r","toolCalls":[{"id":"k1","name":"n","args":{},"description":"d"}]}]}}"#,
            r#"{"id":"u6","type":"user","content":[{"text":"last"}]}"#,
        ];
        let text = lines.join("\n");
        let [pruned, whole] = both_ways(&text);
        assert_eq!(pruned, whole);
        // The surrogate and the nesting are refused, as whole.
        assert_eq!(pruned.1, [14, 15]);
        for (what, line) in [("surrogate", lines[13]), ("deep", lines[14])] {
            assert!(
                parse_line(line, Detail::Full).is_err() && parse_line(line, Detail::Shape).is_err(),
                "{what}"
            );
        }
        // Without the `$set` that replaced them, the records are read.
        let [pruned, whole] = both_ways(&lines[..17].join("\n"));
        assert_eq!(pruned, whole);
        assert!(
            pruned.0.contains("rewritten") && pruned.0.contains("400"),
            "{}",
            pruned.0
        );
        assert!(pruned.0.contains("is_error: true"), "{}", pruned.0);
        // What the screen had is not kept; what is read is.
        let kept = parse_line(lines[2], Detail::Full).unwrap();
        assert_eq!(
            kept["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"],
            "ok"
        );
        assert!(
            kept.get("thoughts").is_none() && kept["toolCalls"][0].get("resultDisplay").is_none()
        );
        assert_eq!(
            parse_line(&big, Detail::Full).unwrap()["toolCalls"][0]["resultDisplay"]
                .as_str()
                .map(str::len),
            Some(600 << 10)
        );
    }

    /// Under `Shape` a result is built in outline: the ids that say whose
    /// answer it is, no content; the chat's conversation keeps the pairing
    /// and drops the content.
    #[test]
    fn under_shape_a_result_is_read_in_outline_and_its_content_dropped() {
        let line = r#"{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"grep","args":{"q":"x"},"status":"success","result":[{"functionResponse":{"id":"c1","name":"grep","response":{"output":"a long output"}}},{"text":"more"}]},{"id":"c2","name":"ls","args":{},"result":"plain"},{"id":"c3","name":"ls","args":{},"result":{"functionResponse":{"id":7,"response":[1]}}}]}"#;
        let outline = parse_line(line, Detail::Shape).unwrap();
        assert_eq!(
            outline["toolCalls"][0]["result"],
            json!([{"functionResponse":{"id":"c1","name":"","response":null}},{"text":""}])
        );
        assert_eq!(outline["toolCalls"][1]["result"], json!(""));
        assert_eq!(
            outline["toolCalls"][2]["result"],
            json!({"functionResponse":{"id":7,"response":null}})
        );
        assert_eq!(outline["toolCalls"][0]["args"], json!({"q":"x"}));
        let read = |detail| {
            let mut log = GeminiCliLog::default();
            log.keep(detail);
            log.push_owned(1, parse_line(line, detail).unwrap())
                .unwrap();
            log.finish().remove(0)
        };
        let (full, shape) = (read(Detail::Full), read(Detail::Shape));
        let results = |c: &Conversation| -> Vec<(String, Value)> {
            c.messages
                .iter()
                .flat_map(|m| &m.content)
                .filter_map(|b| match b {
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => Some((tool_use_id.to_string(), (**content).clone())),
                    _ => None,
                })
                .collect()
        };
        let ids = |r: Vec<(String, Value)>| r.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(results(&full)), ["c1", "c2", "c3"]);
        assert_eq!(ids(results(&shape)), ["c1", "c2", "c3"]);
        assert_eq!(results(&full)[0].1, json!({"output": "a long output"}));
        assert!(results(&shape).iter().all(|(_, c)| c.is_null()));
    }

    fn ids(fold: &Fold) -> Vec<&str> {
        fold.records.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn the_fold_replaces_in_place_cuts_at_a_rewind_and_starts_over_at_a_set() {
        let mut fold = Fold::default();
        for (line, id) in ["a", "b", "c"].iter().enumerate() {
            fold.push(line, json!({"id": id, "v": 1}));
        }
        fold.push(3, json!({"id": "b", "v": 2}));
        assert_eq!(ids(&fold), ["a", "b", "c"]);
        assert_eq!(fold.records[1].value["v"], 2);
        assert_eq!(fold.records[1].place.line, 3);
        // A rewind to b drops b and what follows; b and c come back new.
        fold.push(4, json!({"$rewindTo": "b"}));
        assert_eq!(ids(&fold), ["a"]);
        fold.push(5, json!({"id": "c", "v": 3}));
        fold.push(6, json!({"id": "b", "v": 3}));
        assert_eq!(ids(&fold), ["a", "c", "b"]);
        // A rewind to an id never seen drops everything, as the CLI does.
        fold.push(7, json!({"$rewindTo": "zz"}));
        assert!(fold.records.is_empty());
        fold.push(8, json!({"id": "a", "v": 4}));
        // `$set.messages` replaces them all; a copy in its array is one
        // record at the first's place.
        fold.push(
            9,
            json!({"$set": {"messages": [{"id": "x"}, {"id": "y"}, {"id": "x", "v": 5}]}}),
        );
        assert_eq!(ids(&fold), ["x", "y"]);
        assert_eq!(fold.records[0].place.copies, [2]);
        assert_eq!(fold.records[0].value["v"], 5);
        fold.push(10, json!({"id": "a"}));
        assert_eq!(ids(&fold), ["x", "y", "a"]);
    }
}
