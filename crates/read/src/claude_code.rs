//! Claude Code session logs (`~/.claude/projects/*/<session>.jsonl` and the
//! sub-agent logs under `<session>/subagents/agent-*.jsonl`): JSON Lines of
//! events linked by `uuid` / `parentUuid`.
//!
//! The log is a graph, not a list, so it is read whole and rebuilt the way
//! Claude Code rebuilds it on resume:
//!
//! - The live conversation is the chain from the newest leaf back to its
//!   root. Events on other branches (a rewind, an edited prompt, a resume
//!   that kept one branch) are not part of it; they are reported as an
//!   `off_branch` notice, never as pairing errors of the live conversation.
//! - Streaming writes one assistant event per content block, all sharing
//!   `message.id`, and each tool_result event points at the assistant event
//!   of its own call. With parallel calls the single-parent chain passes
//!   through only one of them, so the sibling blocks and their results are
//!   recovered and spliced in after the chain's last sibling.
//! - A compaction writes an event with `parentUuid: null` and a
//!   `logicalParentUuid`: the chain goes on through it, and the conversation
//!   after it is a new one (its requests no longer carry what came before).
//! - Sidechain events (`isSidechain: true`: a sub-agent's own loop, in this
//!   file or in a log of its own) are separate conversations, labelled as
//!   sub-agents.
//!
//! Bookkeeping events (`file-history-snapshot`, `summary`, `queue-operation`,
//! `progress`, `system`, `attachment`, …) take part in the graph when they
//! carry a uuid and are otherwise ignored.

use crate::agent::Agent;
use ahash::{AHashMap as HashMap, AHashSet as HashSet};
use loopdbg_engine::diagnostics::json_span::JsonPath;
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::anthropic::{Blocks, ContentIn, Payload, read_content};
use super::fingerprint::{dropped, shaped_json};
use super::finish_reason_of;
use super::lax::Boxed;
use super::{BlockSource, Conversation, Detail, Notice, ReadError, Source, fingerprint};
use loopdbg_engine::message::{Block, Message, Role, Usage};
use loopdbg_engine::session::{FinishReason, Json};

mod growing;
pub use growing::{Growing, Grown};

/// Reads a Claude Code session log one event at a time; [`finish`] builds
/// the conversations once every event is in.
///
/// [`finish`]: ClaudeCodeLog::finish
#[derive(Debug, Clone, Default)]
pub struct ClaudeCodeLog {
    events: Vec<Event>,
    detail: Detail,
    /// Event types loopdbg does not know, each with its first line: said
    /// once, as a note (a newer Claude Code writes new bookkeeping).
    unknown: Vec<(Box<str>, usize)>,
    /// Lines that held two or more records joined (a write that lost its
    /// newline), with how many: each record was read, said once.
    pub(super) joined: Vec<(usize, usize)>,
}

/// What one line of the log says, kept small: content is read into blocks
/// at once and the JSON is dropped. A long log holds a hundred thousand of
/// these, so fields most events lack live behind one pointer.
#[derive(Debug, Clone)]
pub struct Event {
    line: u32,
    /// `sessionId`, by its hash (0: none): only ever compared, and a name
    /// kept per event would cost an allocation per line.
    session: u64,
    /// `timestamp` as a number that sorts like it (digits only), or 0.
    time: u64,
    uuid: Option<Arc<str>>,
    /// The uuid's [`uuid_key`] (0: no uuid), taken while lines are read
    /// on every core rather than when the graph is built on one.
    key: u64,
    /// `parentUuid`, by its [`uuid_key`] (0: none): only ever looked up,
    /// and kept as text it would cost an allocation per line.
    parent: u64,
    /// `logicalParentUuid` and `agentId`.
    rare: Option<Box<Rare>>,
    /// The message (boxed: most events of a log carry none).
    body: Option<Box<Body>>,
    sidechain: bool,
    /// True for user and assistant events with a message.
    is_message: bool,
}

/// What an event seldom carries.
#[derive(Debug, Clone, Default)]
struct Rare {
    /// `logicalParentUuid`, by its [`uuid_key`].
    logical_parent: Option<u64>,
    agent: Option<Box<str>>,
    /// An error Claude Code wrote in the model's place.
    refused: Option<Refused>,
    /// A `type` loopdbg does not know (see [`is_known_event`]).
    unknown_type: Option<Box<str>>,
    /// For a compaction's summary (`isCompactSummary`), its first words.
    summary: Option<Box<str>>,
    /// For a compaction's boundary (`compact_boundary`), what it kept.
    boundary: Option<Boundary>,
}

/// A `system` event of subtype `compact_boundary`, and the messages the
/// compaction kept as they were (`compactMetadata.preservedSegment` or
/// `preservedMessages`, Claude Code 2.1): on resume they follow the
/// summary, so the conversation sent after the compaction is the summary,
/// those messages, and what came after them.
#[derive(Debug, Clone, Default)]
struct Boundary {
    kept: Option<Kept>,
}

/// The messages a compaction kept, by [`uuid_key`].
#[derive(Debug, Clone)]
struct Kept {
    /// The summary they follow.
    anchor: u64,
    messages: KeptMessages,
}

#[derive(Debug, Clone)]
enum KeptMessages {
    /// `preservedMessages.uuids`, in order.
    Listed(Vec<u64>),
    /// `preservedSegment`: the chain from `tail` back to `head`.
    Segment { head: u64, tail: u64 },
}

/// A string field borrowed from the line when it holds no escapes.
/// serde borrows a `Cow<str>` field only when that is the field's whole
/// type: an `Option<Cow<str>>` is always copied, which cost an allocation
/// and a copy per field per event (a tenth of `check`'s time on a log).
fn borrowed_str<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Option::<Borrowed<'a>>::deserialize(d).map(|s| s.map(|Borrowed(s)| s))
}

/// `compactMetadata`, as far as the kept messages go.
#[derive(Deserialize, Default)]
struct RawCompact<'a> {
    #[serde(rename = "preservedMessages", borrow, default)]
    listed: Option<RawListed<'a>>,
    #[serde(rename = "preservedSegment", borrow, default)]
    segment: Option<RawSegment<'a>>,
}

#[derive(Deserialize)]
struct RawListed<'a> {
    #[serde(
        rename = "anchorUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    anchor: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuids: Vec<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawSegment<'a> {
    #[serde(
        rename = "anchorUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    anchor: Option<Cow<'a, str>>,
    #[serde(
        rename = "headUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    head: Option<Cow<'a, str>>,
    #[serde(
        rename = "tailUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    tail: Option<Cow<'a, str>>,
}

impl RawCompact<'_> {
    /// What was kept, as Claude Code reads it: the list when there is one
    /// (and it names something), else the segment.
    fn kept(&self) -> Option<Kept> {
        if let Some(listed) = &self.listed {
            let anchor = uuid_key(listed.anchor.as_deref()?);
            let uuids: Vec<u64> = listed.uuids.iter().map(|u| uuid_key(u)).collect();
            return Some(Kept {
                anchor,
                messages: KeptMessages::Listed(uuids),
            });
        }
        let segment = self.segment.as_ref()?;
        Some(Kept {
            anchor: uuid_key(segment.anchor.as_deref()?),
            messages: KeptMessages::Segment {
                head: uuid_key(segment.head.as_deref()?),
                tail: uuid_key(segment.tail.as_deref()?),
            },
        })
    }
}

/// An `isApiErrorMessage` event: the request before it was refused.
#[derive(Debug, Clone)]
struct Refused {
    status: Option<u16>,
    text: Box<str>,
}

impl Refused {
    /// The error of an assistant event, if it is one: flagged
    /// `isApiErrorMessage` (or, in logs older than the flag, written by the
    /// `<synthetic>` model as `API Error: …`). Its status is `apiErrorStatus`
    /// or the number the text gives.
    /// `text` is asked for only then: most events are replies.
    fn of(
        flagged: bool,
        model: Option<&str>,
        status: Option<u64>,
        text: impl FnOnce() -> String,
    ) -> Option<Refused> {
        let synthetic = model == Some("<synthetic>");
        if !flagged && !synthetic {
            return None;
        }
        let text = text();
        if !flagged && !text.starts_with("API Error") {
            return None;
        }
        let status = status
            .and_then(|s| u16::try_from(s).ok())
            .or_else(|| status_in(&text));
        Some(Refused {
            status,
            text: text.into_boxed_str(),
        })
    }
}

/// `400` in `API Error: 400 {…}` (also after a prefix such as `Please run
/// /login · `).
fn status_in(text: &str) -> Option<u16> {
    let rest = &text[text.find("API Error: ")? + "API Error: ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() == 3).then(|| digits.parse().ok()).flatten()
}

impl Rare {
    fn of(
        logical_parent: Option<u64>,
        agent: Option<Box<str>>,
        refused: Option<Refused>,
        unknown_type: Option<Box<str>>,
    ) -> Option<Box<Rare>> {
        (logical_parent.is_some() || agent.is_some() || refused.is_some() || unknown_type.is_some())
            .then(|| {
                Box::new(Rare {
                    logical_parent,
                    agent,
                    refused,
                    unknown_type,
                    summary: None,
                    boundary: None,
                })
            })
    }
}

/// The event types of a Claude Code log that carry the conversation.
pub const MESSAGE_EVENTS: &[&str] = &["user", "assistant"];

/// The event types read on purpose as bookkeeping: linked into the graph
/// when they carry a uuid, otherwise skipped. Claude Code 2.1.332 (run
/// against the fake provider in `tests/agents.rs`) writes `queue-operation`,
/// `atis-latch`, `last-prompt`, `attachment`, `tools-used`, `cost-state`
/// and, for each request, `api-request` with `api-request-shape` and
/// `api-request-blob` (the messages sent, by hash).
pub const BOOKKEEPING_EVENTS: &[&str] = &[
    "system",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "attachment",
    "last-prompt",
    "custom-title",
    "ai-title",
    "mode",
    "atis-latch",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "tools-used",
    "cost-state",
];

/// Whether an event type is one loopdbg reads or skips on purpose.
pub fn is_known_event(kind: &str) -> bool {
    MESSAGE_EVENTS.contains(&kind) || BOOKKEEPING_EVENTS.contains(&kind)
}

/// A uuid (or a `message.id`) as a number to look it up by: two of one log
/// share a key with a chance of about 2⁻⁶⁴ per pair.
fn uuid_key(uuid: &str) -> u64 {
    fingerprint::key(b'u', uuid)
}

/// A `sessionId` as a number: the same name always gives the same one,
/// never 0 (which stands for none).
fn session_key(name: Option<&str>) -> u64 {
    name.map_or(0, |n| fingerprint::key(b's', n))
}

impl Event {
    fn logical_parent(&self) -> Option<u64> {
        self.rare.as_ref()?.logical_parent
    }

    fn boundary(&self) -> Option<&Boundary> {
        self.rare.as_ref()?.boundary.as_ref()
    }

    fn agent(&self) -> Option<&str> {
        self.rare.as_ref()?.agent.as_deref()
    }

    fn refused(&self) -> Option<&Refused> {
        self.rare.as_ref()?.refused.as_ref()
    }

    fn line(&self) -> usize {
        self.line as usize
    }
}

/// A user or assistant event's message.
#[derive(Debug, Clone)]
struct Body {
    role: Role,
    /// `message.id`, by its [`uuid_key`]: only compared.
    message_id: Option<u64>,
    finish: Option<FinishReason>,
    /// Every block is a tool result (read before the blocks move out).
    results_only: bool,
    /// Written by Claude Code in the model's place (`"model":
    /// "<synthetic>"`, "No response requested."): no answer of the provider.
    synthetic: bool,
    /// The reply's `usage` and `model`, for an assistant message.
    usage: Option<(Usage, Option<Box<str>>)>,
    /// The blocks, until the conversation takes them (moved, not copied:
    /// a long log holds a lot of text).
    read: RefCell<Blocks>,
}

impl Body {
    fn new(
        role: Role,
        message_id: Option<u64>,
        finish: Option<FinishReason>,
        read: Blocks,
    ) -> Body {
        let results_only = !read.blocks.is_empty()
            && read
                .blocks
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }));
        Body {
            role,
            message_id,
            finish,
            results_only,
            synthetic: false,
            usage: None,
            read: RefCell::new(read),
        }
    }

    fn only_results(&self) -> bool {
        self.results_only
    }

    /// The tool_use ids, for branch notices (a branch's blocks are never
    /// taken by a conversation).
    fn calls(&self) -> Vec<String> {
        self.read
            .borrow()
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.to_string()),
                _ => None,
            })
            .collect()
    }
}

/// One line as written, read without building a tree for what loopdbg does
/// not use (`toolUseResult`, `usage`, snapshots…): those are skipped.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "borrowed_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    uuid: Option<Cow<'a, str>>,
    #[serde(
        rename = "parentUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    parent: Option<Cow<'a, str>>,
    #[serde(
        rename = "logicalParentUuid",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    logical_parent: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(rename = "agentId", borrow, default, deserialize_with = "borrowed_str")]
    agent: Option<Cow<'a, str>>,
    #[serde(
        rename = "sessionId",
        borrow,
        default,
        deserialize_with = "borrowed_str"
    )]
    session: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    compact_summary: Option<bool>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    subtype: Option<Cow<'a, str>>,
    #[serde(rename = "compactMetadata", borrow, default)]
    compact: Option<Box<RawCompact<'a>>>,
    #[serde(rename = "apiErrorStatus", default)]
    api_status: Option<u64>,
    /// Boxed: the struct is moved several times per line as serde builds
    /// it, and the message is most of its size.
    #[serde(borrow, default)]
    message: Option<Box<RawMessage<'a>>>,
}

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_str")]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: ContentIn<'a, RawPayload<'a>>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

/// Anthropic's `usage`, as Claude Code copies it into each event.
#[derive(Deserialize, Default)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl RawUsage {
    fn usage(&self) -> Usage {
        Usage {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
            cache_write: self.cache_creation_input_tokens.unwrap_or(0),
        }
    }
}

/// A block's `input` or `content` kept as text: read into a `Value` only
/// when the content is kept ([`Payload`]).
#[derive(Default)]
struct RawPayload<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for RawPayload<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&RawValue>::deserialize(d).map(|raw| RawPayload(Some(raw)))
    }
}

impl<'de: 'a, 'a> Payload<'de> for RawPayload<'a> {
    fn input(self, detail: Detail) -> Json {
        match detail {
            Detail::Full => Json::new(value_of(self.0)),
            Detail::Shape => Json::new(shaped_json(self.0)),
        }
    }
    fn content(self, detail: Detail) -> Json {
        match detail {
            Detail::Full => Json::new(value_of(self.0)),
            Detail::Shape => dropped(),
        }
    }
}

/// `message.content[k]`: a path for every block of a long log, so the
/// usual ones are written once, not per block.
fn content_path(k: usize) -> Cow<'static, str> {
    const PATHS: [&str; 8] = [
        "message.content[0]",
        "message.content[1]",
        "message.content[2]",
        "message.content[3]",
        "message.content[4]",
        "message.content[5]",
        "message.content[6]",
        "message.content[7]",
    ];
    match PATHS.get(k) {
        Some(path) => Cow::Borrowed(path),
        None => Cow::Owned(format!("message.content[{k}]")),
    }
}

/// Events in a log are rarely shorter than this (the smallest real ones,
/// bookkeeping without a message, run to about 150 bytes).
const BYTES_PER_EVENT_AT_LEAST: u64 = 128;

/// The most events room is set aside for ahead of time.
const MAX_RESERVED_EVENTS: usize = 8 << 20;

/// A field read as text, as a value (`null` when absent).
fn value_of(raw: Option<&RawValue>) -> Value {
    // serde_json has read this text already, so it parses.
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

/// The blocks as `detail` keeps them, for a line read the lenient way.
fn shape_blocks(read: &mut Blocks, detail: Detail) {
    if detail == Detail::Full {
        return;
    }
    read.blocks.iter_mut().for_each(fingerprint::shape_payload);
}

/// A line number as stored: a log of over four billion lines is far past
/// what is read whole (`MAX_WHOLE_BYTES`), so this never saturates in use.
fn line_number(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// Digits of an ISO 8601 timestamp as one number: they sort as the times do.
fn time_key(ts: Option<&str>) -> u64 {
    let mut key: u64 = 0;
    for b in ts.unwrap_or("").bytes().filter(u8::is_ascii_digit).take(19) {
        key = key * 10 + u64::from(b - b'0');
    }
    key
}

/// A [`time_key`] as a time to read (`2026-12-02 04:27:23 UTC`).
fn time_text(key: u64) -> Option<String> {
    (key > 0).then(|| super::conversation::time_of(&key.to_string()))?
}

/// Why a line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// Not JSON.
    Json(serde_json::Error),
    /// JSON, but not an event loopdbg can read.
    Read(ReadError),
}

impl Event {
    /// Reads one line. Lines are independent, so a log's lines can be read
    /// on every core and pushed in order.
    pub fn parse(line: usize, text: &str, detail: Detail) -> Result<Option<Event>, LineError> {
        match serde_json::from_str::<RawEvent>(text) {
            Ok(raw) => Event::from_raw(line, raw, detail).map_err(LineError::Read),
            // A field of an unexpected type (`message` as a string, say):
            // read the line the lenient way, where such a field is absent.
            Err(_) => {
                let v: Value = crate::bounded::value(text).map_err(LineError::Json)?;
                Event::from_value(line, v, detail).map_err(LineError::Read)
            }
        }
    }

    fn from_raw(line: usize, raw: RawEvent, detail: Detail) -> Result<Option<Event>, ReadError> {
        let kind = raw.kind.as_deref().unwrap_or("");
        let is_message = matches!(kind, "user" | "assistant");
        let unknown_type = (!kind.is_empty() && !is_known_event(kind)).then(|| kind.into());
        if raw.uuid.is_none() && !is_message && unknown_type.is_none() {
            return Ok(None);
        }
        let key = raw.uuid.as_deref().map_or(0, uuid_key);
        let uuid: Option<Arc<str>> = raw.uuid.map(|u| u.into());
        let refused = match (&raw.message, kind) {
            (Some(m), "assistant") => Refused::of(
                raw.api_error == Some(true),
                m.model.as_deref(),
                raw.api_status,
                || m.content.joined_text("\n").unwrap_or_default(),
            ),
            _ => None,
        };
        let summary = match (&raw.message, raw.compact_summary) {
            (Some(m), Some(true)) => {
                super::conversation::first_words(&m.content.joined_text("\n").unwrap_or_default())
            }
            _ => None,
        };
        let body = match raw.message.filter(|_| is_message && refused.is_none()) {
            Some(message) => {
                let message = *message;
                let role = match message.role.as_deref().unwrap_or(kind) {
                    "assistant" => Role::Assistant,
                    _ => Role::User,
                };
                let source = |k: Option<usize>| BlockSource {
                    path: k.map_or(Cow::Borrowed("message.content"), content_path),
                    line: Some(line),
                    uuid: uuid.clone(),
                };
                let synthetic = message.model.as_deref() == Some("<synthetic>");
                let mut body = Body::new(
                    role,
                    message.id.as_deref().map(uuid_key),
                    super::parse::finish_reason_named(message.stop_reason.as_deref()),
                    read_content(message.content, &message_path, detail, source)?,
                );
                body.synthetic = synthetic;
                if role == Role::Assistant && !synthetic {
                    body.usage = message
                        .usage
                        .map(|u| (u.usage(), message.model.map(|m| m.into())));
                }
                Some(Box::new(body))
            }
            // `message` as a string or the like: no API message.
            None => None,
        };
        let mut event = Event {
            line: line_number(line),
            key,
            uuid,
            parent: raw.parent.as_deref().map_or(0, uuid_key),
            // An error takes the model's place in the chain: it ends a
            // request, as a reply does.
            is_message: body.is_some() || refused.is_some(),
            rare: Rare::of(
                raw.logical_parent.as_deref().map(uuid_key),
                raw.agent.map(|a| a.into()),
                refused,
                unknown_type,
            ),
            sidechain: raw.sidechain == Some(true),
            session: session_key(raw.session.as_deref()),
            time: time_key(raw.timestamp.as_deref()),
            body,
        };
        if summary.is_some() {
            event.rare.get_or_insert_with(Default::default).summary = summary.map(Into::into);
        }
        if kind == "system" && raw.subtype.as_deref() == Some("compact_boundary") {
            event.rare.get_or_insert_with(Default::default).boundary = Some(Boundary {
                kept: raw.compact.as_deref().and_then(RawCompact::kept),
            });
        }
        Ok(Some(event))
    }

    fn from_value(
        line: usize,
        mut event: Value,
        detail: Detail,
    ) -> Result<Option<Event>, ReadError> {
        let string_at = |v: &Value, key: &str| -> Option<Box<str>> {
            v.get(key).and_then(Value::as_str).map(Into::into)
        };
        let key_at = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(uuid_key);
        let uuid_at = |v: &Value| -> Option<Arc<str>> {
            v.get("uuid").and_then(Value::as_str).map(Into::into)
        };
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let is_message = matches!(kind, "user" | "assistant");
        let unknown_type: Option<Box<str>> =
            (!kind.is_empty() && !is_known_event(kind)).then(|| kind.into());
        let uuid = uuid_at(&event);
        if uuid.is_none() && !is_message && unknown_type.is_none() {
            return Ok(None);
        }
        let mut ev = Event {
            line: line_number(line),
            parent: key_at(&event, "parentUuid").unwrap_or(0),
            key: event
                .get("uuid")
                .and_then(Value::as_str)
                .map_or(0, uuid_key),
            rare: Rare::of(
                key_at(&event, "logicalParentUuid"),
                string_at(&event, "agentId"),
                None,
                unknown_type,
            ),
            sidechain: event.get("isSidechain").and_then(Value::as_bool) == Some(true),
            session: session_key(event.get("sessionId").and_then(Value::as_str)),
            time: time_key(event.get("timestamp").and_then(Value::as_str)),
            uuid,
            body: None,
            is_message: false,
        };
        if event.get("isCompactSummary") == Some(&Value::Bool(true)) {
            let text = event.get("message").and_then(|m| m.get("content"));
            let text = super::joined_text(text, "\n").unwrap_or_default();
            let summary = super::conversation::first_words(&text);
            ev.rare.get_or_insert_with(Default::default).summary = summary.map(Into::into);
        }
        if kind == "system"
            && event.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
        {
            let compact = event
                .get("compactMetadata")
                .and_then(|m| RawCompact::deserialize(m).ok())
                .unwrap_or_default();
            ev.rare.get_or_insert_with(Default::default).boundary = Some(Boundary {
                kept: compact.kept(),
            });
        }
        let kind = kind.to_string();
        if kind == "assistant"
            && let Some(message) = event.get("message").filter(|m| m.is_object())
            && let Some(refused) = Refused::of(
                event.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true),
                message.get("model").and_then(Value::as_str),
                event.get("apiErrorStatus").and_then(Value::as_u64),
                || super::joined_text(message.get("content"), "\n").unwrap_or_default(),
            )
        {
            ev.is_message = true;
            let rare = ev.rare.get_or_insert_with(Default::default);
            rare.refused = Some(refused);
            return Ok(Some(ev));
        }
        if is_message && let Some(message) = event.get_mut("message").filter(|m| m.is_object()) {
            let role = match message.get("role").and_then(Value::as_str).unwrap_or(&kind) {
                "assistant" => Role::Assistant,
                _ => Role::User,
            };
            let uuid = ev.uuid.clone();
            let content = message
                .get_mut("content")
                .map(Value::take)
                .unwrap_or_default();
            let content = ContentIn::<Boxed>::deserialize(content)
                .map_err(|e| super::err(&message_path(), e.to_string()))?;
            let mut read = read_content(content, &message_path, detail, |k| BlockSource {
                path: k.map_or(Cow::Borrowed("message.content"), content_path),
                line: Some(line),
                uuid: uuid.clone(),
            })?;
            shape_blocks(&mut read, detail);
            ev.is_message = true;
            let mut body = Body::new(
                role,
                message.get("id").and_then(Value::as_str).map(uuid_key),
                finish_reason_of(message.get("stop_reason")),
                read,
            );
            body.synthetic = message.get("model").and_then(Value::as_str) == Some("<synthetic>");
            if role == Role::Assistant && !body.synthetic {
                body.usage = message
                    .get("usage")
                    .and_then(|u| RawUsage::deserialize(u).ok())
                    .map(|u| {
                        let model = message.get("model").and_then(Value::as_str);
                        (u.usage(), model.map(Into::into))
                    });
            }
            ev.body = Some(Box::new(body));
        }
        Ok(Some(ev))
    }
}

impl ClaudeCodeLog {
    /// Keeps only what `detail` says of each event read from now on.
    pub fn keep(&mut self, detail: Detail) {
        self.detail = detail;
    }

    /// What is kept of each event.
    pub fn detail(&self) -> Detail {
        self.detail
    }

    /// Sets aside room for the events of a log of `bytes` bytes. Real
    /// events take a few hundred bytes each; the room is a generous guess
    /// because room never written costs address space, not memory, while
    /// growing past it copies every event read so far.
    pub fn expect_bytes(&mut self, bytes: u64) {
        let guess = usize::try_from(bytes / BYTES_PER_EVENT_AT_LEAST).unwrap_or(usize::MAX);
        self.events.reserve(guess.min(MAX_RESERVED_EVENTS));
    }

    /// Adds the event on 1-based `line`.
    pub fn push(&mut self, line: usize, event: &Value) -> Result<(), ReadError> {
        self.push_owned(line, event.clone())
    }

    /// [`ClaudeCodeLog::push`], taking the event so its contents move.
    pub fn push_owned(&mut self, line: usize, event: Value) -> Result<(), ReadError> {
        if let Some(e) = Event::from_value(line, event, self.detail)? {
            self.push_event(e);
        }
        Ok(())
    }

    /// Adds an event read by `Event::parse` (events come in line order).
    pub fn push_event(&mut self, event: Event) {
        if let Some(kind) = event.rare.as_ref().and_then(|r| r.unknown_type.as_deref()) {
            if !self.unknown.iter().any(|(k, _)| **k == *kind) {
                self.unknown.push((kind.into(), event.line as usize));
            }
            // Without a uuid it takes no part in the graph.
            if event.key == 0 {
                return;
            }
        }
        self.events.push(event);
    }

    /// The conversations read, in the order they start in the file: the
    /// main thread's (one per compaction segment), then each sub-agent's.
    pub fn finish(self) -> Vec<Conversation> {
        self.finish_leaving().0
    }

    /// [`ClaudeCodeLog::finish`], handing back what is left of the
    /// events: on a long log that is a hundred thousand small frees, which
    /// a caller with threads does off its way.
    pub fn finish_leaving(self) -> (Vec<Conversation>, Leftovers) {
        let (out, _) = self.build(BlockFate::Moved);
        (
            out,
            Leftovers {
                _events: self.events,
            },
        )
    }

    /// The conversations of the events so far, with where the main
    /// thread's live chain ends ([`growing`]). `blocks` says whether the
    /// events' blocks move into the conversations or are copied (the log
    /// is kept and built again).
    fn build(&self, blocks: BlockFate) -> (Vec<Conversation>, Option<growing::Live>) {
        let events = &self.events;
        let mut groups: Vec<(Option<String>, Vec<usize>)> = Vec::new();
        // Each agent's group, found by name (a search of the groups per
        // event was quadratic in the number of sub-agents).
        let mut group_of: HashMap<String, usize> = HashMap::new();
        let mut main = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if !e.sidechain {
                main.push(i);
                continue;
            }
            let agent = e.agent().unwrap_or_default();
            match group_of.get(agent) {
                Some(&g) => groups[g].1.push(i),
                None => {
                    group_of.insert(agent.to_string(), groups.len());
                    groups.push((Some(agent.to_string()), vec![i]));
                }
            }
        }
        let thread = Thread::new(events, &main, blocks);
        let (mut out, end) = thread.conversations(None);
        // Kept only by a log that grows (its blocks are copied).
        let live = end
            .filter(|_| blocks == BlockFate::Copied)
            .map(|end| thread.into_live(end));
        for (agent, members) in groups {
            let label = match agent.as_deref() {
                Some("") | None => "sub-agent".to_string(),
                Some(a) => format!("sub-agent {a}"),
            };
            let (convs, _) = Thread::new(events, &members, blocks).conversations(Some(label));
            out.extend(convs);
        }
        super::note_joined_lines(&mut out, self.joined.clone());
        if let Some(first) = out.first_mut() {
            for (kind, line) in &self.unknown {
                first.notices.push(Notice {
                    kind: crate::finding::Kind::UnknownEvent,
                    source: BlockSource {
                        path: "type".into(),
                        line: Some(*line),
                        uuid: None,
                    },
                    ids: vec![kind.to_string()],
                    message: format!(
                        "event type `{kind}` is new to loopdbg: linked into the graph by its uuid if it has one, otherwise skipped; the conversation was read without it"
                    ),
                });
            }
        }
        (out, live)
    }
}

/// Whether building conversations moves the events' blocks into them (a
/// log read once) or copies them (a log kept as it grows, and built again
/// when it changes in a way [`growing`] cannot add).
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockFate {
    Moved,
    Copied,
}

/// Where the main thread's live chain ends once built: what an event
/// appended to it is added with ([`growing`]).
struct LiveEnd {
    /// The conversation (among the log's) that is the chain's last segment.
    at: usize,
    /// The chain's last event, its tip.
    tip: usize,
    /// The tip's time and session, which made it the live chain's.
    time: u64,
    session: u64,
    /// The builder of that conversation.
    builder: Builder,
    /// The `message.id`s an appended event must not carry
    /// ([`Thread::tainted`]).
    tainted: HashSet<u64>,
}

/// What [`Thread::groups`] finds.
#[derive(Default)]
struct Groups {
    siblings: HashMap<u64, Vec<usize>>,
    results_of: HashMap<usize, Vec<usize>>,
}

/// One thread of the log (the main one, or one sub-agent's) as a graph.
/// Events are named by their index in the log; per-event facts live in
/// vectors indexed by it, so walking the graph does no hashing.
struct Thread<'a> {
    events: &'a [Event],
    members: &'a [usize],
    /// Members by [`uuid_key`].
    by_uuid: HashMap<u64, usize>,
    /// The parent of each member, by `parentUuid` ([`NO_PARENT`]: none),
    /// as u32: a log read whole holds far fewer events.
    parent: Vec<u32>,
    /// Replies and results whose parent is not in the file, mid-log (the
    /// event between was dropped), each with the event it was read after.
    relinked: Vec<(usize, usize)>,
    /// The parents of the events the last compaction kept (and of those
    /// that hung from its summary) as the file names them, before
    /// [`Thread::relink_kept`] moved them: the history before that
    /// compaction runs through them.
    written_parent: HashMap<usize, u32>,
    /// The uuid of the summary the newest compaction's kept messages were
    /// moved after, when they were.
    moved_from: Option<u64>,
    /// Whether the chains' blocks move out of the events or are copied.
    blocks: BlockFate,
}

const NONE: usize = usize::MAX;

/// No parent among the thread's members.
const NO_PARENT: u32 = u32::MAX;

impl<'a> Thread<'a> {
    fn new(events: &'a [Event], members: &'a [usize], blocks: BlockFate) -> Thread<'a> {
        let mut by_uuid: HashMap<u64, usize> = HashMap::with_capacity(members.len());
        for &i in members {
            if events[i].key != 0 {
                by_uuid.insert(events[i].key, i);
            }
        }
        let mut parent = vec![NO_PARENT; events.len()];
        for &i in members {
            parent[i] = Some(events[i].parent)
                .filter(|&p| p != 0)
                .and_then(|p| by_uuid.get(&p))
                .and_then(|&p| u32::try_from(p).ok())
                .unwrap_or(NO_PARENT);
        }
        // A reply or a result whose parent is gone, past the first message
        // of the thread, lost the event between (a dropped result): Claude
        // Code resumes it after the message event before it in the file,
        // and so is it read. A user prompt with a parent not here is a
        // start (a log cut at its head, a sub-agent's first prompt).
        let mut relinked = Vec::new();
        let mut previous: Option<usize> = None;
        for &i in members {
            let e = &events[i];
            if !e.is_message {
                continue;
            }
            let reply_or_results = e
                .body
                .as_ref()
                .is_some_and(|b| b.role == Role::Assistant || b.results_only);
            if e.parent != 0
                && parent[i] == NO_PARENT
                && reply_or_results
                && let Some(p) = previous.filter(|&p| events[p].session == e.session)
                && let Ok(p32) = u32::try_from(p)
            {
                parent[i] = p32;
                relinked.push((i, p));
            }
            previous = Some(i);
        }
        let mut thread = Thread {
            events,
            members,
            by_uuid,
            parent,
            relinked,
            written_parent: HashMap::default(),
            moved_from: None,
            blocks,
        };
        thread.relink_kept();
        thread
    }

    /// What is kept of the main thread's graph once its conversations are
    /// built, so events appended to its live chain (`end`) can be added
    /// alone ([`growing`]).
    fn into_live(self, end: LiveEnd) -> growing::Live {
        // Every uuid the graph looked for and did not find: an event that
        // brings one links something older, and changes the graph.
        let mut dangling = HashSet::new();
        let mut missing = |key: u64| {
            if key != 0 && !self.by_uuid.contains_key(&key) {
                dangling.insert(key);
            }
        };
        for &i in self.members {
            let e = &self.events[i];
            missing(e.parent);
            if let Some(p) = e.logical_parent() {
                missing(p);
            }
            if let Some(kept) = e.boundary().and_then(|b| b.kept.as_ref()) {
                missing(kept.anchor);
                match &kept.messages {
                    KeptMessages::Listed(uuids) => uuids.iter().for_each(|&u| missing(u)),
                    KeptMessages::Segment { head, tail } => {
                        missing(*head);
                        missing(*tail);
                    }
                }
            }
        }
        growing::Live {
            end,
            by_uuid: self.by_uuid,
            dangling,
            moved_from: self.moved_from,
        }
    }

    /// What Claude Code 2.1 does on resume with the messages the newest
    /// compaction kept as they were: the first now hangs from the summary,
    /// each next one from the one before, and whatever hung from the
    /// summary hangs from the last. Only the newest boundary counts, and
    /// only when every kept message is in the file (else Claude Code
    /// leaves the chain as written, and so is it read).
    fn relink_kept(&mut self) {
        let newest = self
            .members
            .iter()
            .copied()
            .rfind(|&i| self.events[i].boundary().is_some());
        let Some(kept) = newest.and_then(|i| self.events[i].boundary()?.kept.as_ref()) else {
            return;
        };
        let Some(&anchor) = self.by_uuid.get(&kept.anchor) else {
            return;
        };
        let order: Vec<usize> = match &kept.messages {
            KeptMessages::Listed(uuids) => {
                match uuids.iter().map(|u| self.by_uuid.get(u).copied()).collect() {
                    Some(order) => order,
                    None => return,
                }
            }
            KeptMessages::Segment { head, tail } => {
                let mut order = Vec::new();
                let mut walked = vec![false; self.events.len()];
                let mut at = self.by_uuid.get(tail).copied();
                let mut reached = false;
                while let Some(i) = at {
                    if walked[i] {
                        break;
                    }
                    walked[i] = true;
                    order.push(i);
                    if self.events[i].key == *head {
                        reached = true;
                        break;
                    }
                    at = self.parent_of(i);
                }
                if !reached {
                    return;
                }
                order.reverse();
                order
            }
        };
        let Some(&last) = order.last() else {
            return;
        };
        let mut kept_here = vec![false; self.events.len()];
        for &i in &order {
            kept_here[i] = true;
        }
        let to_u32 = |i: usize| u32::try_from(i).unwrap_or(NO_PARENT);
        let mut moves: Vec<(usize, u32)> = Vec::new();
        let mut before = anchor;
        for &i in &order {
            moves.push((i, to_u32(before)));
            before = i;
        }
        for &i in self.members {
            if !kept_here[i] && self.parent_of(i) == Some(anchor) {
                moves.push((i, to_u32(last)));
            }
        }
        for (i, parent) in moves {
            self.written_parent.entry(i).or_insert(self.parent[i]);
            self.parent[i] = parent;
        }
        self.moved_from = Some(kept.anchor);
    }

    /// The parent the file names for `i`, before any relink.
    fn written_parent_of(&self, i: usize) -> Option<usize> {
        let p = self
            .written_parent
            .get(&i)
            .copied()
            .unwrap_or(self.parent[i]);
        (p != NO_PARENT).then_some(p as usize)
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        Some(self.parent[i])
            .filter(|&p| p != NO_PARENT)
            .map(|p| p as usize)
    }

    fn is_message(&self, i: usize) -> bool {
        self.events[i].is_message
    }

    /// Every conversation of the thread. The newest leaf's chain first; what
    /// it leaves out is a branch (a notice) when it shares the live chain's
    /// root or session, and otherwise another session written into the same
    /// file (read the same way, on its own).
    /// For the main thread, where its live chain ends (the first tip's).
    fn conversations(&self, label: Option<String>) -> (Vec<Conversation>, Option<LiveEnd>) {
        let mut visited = vec![false; self.events.len()];
        let mut threads: Vec<(usize, Vec<Conversation>)> = Vec::new();
        // Each with the line it forks from (none: a new first prompt).
        let mut branches: Vec<(Option<usize>, Notice)> = Vec::new();
        let roots = self.roots();
        let candidates: Vec<usize> = self
            .members
            .iter()
            .copied()
            .filter(|&i| self.is_message(i))
            .collect();
        // Every step below takes whole trees (all the message events of
        // a root): a leaf stays a leaf, so the tips are found once, newest
        // first, and each tree's events are listed once. Finding them
        // again among what was left, per tree, made a log of a thousand
        // sub-agent trees quadratic.
        let mut tips = self.leaves(&candidates);
        tips.sort_by_key(|&i| std::cmp::Reverse((self.events[i].time, i)));
        let mut trees: HashMap<usize, Vec<usize>> = HashMap::new();
        for &i in &candidates {
            trees.entry(roots[i]).or_default().push(i);
        }
        // How many message events are not yet on a chain or a branch.
        let mut left = candidates.len();
        let mut is_candidate = vec![false; self.events.len()];
        for &i in &candidates {
            is_candidate[i] = true;
        }
        let visit = |i: usize, visited: &mut Vec<bool>, left: &mut usize| {
            if !visited[i] {
                visited[i] = true;
                if is_candidate[i] {
                    *left -= 1;
                }
            }
        };
        // The message events of `tree_roots` not yet visited, in file
        // order.
        let mut take = |tree_roots: &[usize], visited: &[bool]| {
            let mut off: Vec<usize> = tree_roots
                .iter()
                .filter_map(|r| trees.remove(r))
                .flatten()
                .filter(|&i| !visited[i])
                .collect();
            off.sort_unstable();
            off
        };
        let groups = self.groups();
        // Marks for one chain at a time, cleared after each use: one per
        // event and tree made the work grow with trees times events.
        let mut scratch = vec![false; self.events.len()];
        let mut live_session: Option<u64> = None;
        // The live chain's end, and the first line of its thread.
        let mut live: Option<(LiveEnd, usize)> = None;
        let mut tips = tips.into_iter();
        while let Some(tip) = tips.find(|&i| !visited[i]) {
            let session = self.events[tip].session;
            // A sub-agent is never rewound: another tree in a sidechain
            // thread is another sub-agent (logs before `agentId` wrote
            // them all into the main file, unnamed).
            if label.is_none() && live_session.is_some_and(|live| live == session) {
                // An unlinked start in the live session: a rewind to the
                // first prompt left this tree behind.
                let off = take(&[roots[tip]], &visited);
                branches.extend(self.branch_notices(&off, &visited));
                for &i in &off {
                    visit(i, &mut visited, &mut left);
                }
                continue;
            }
            let first_tip = live_session.is_none();
            live_session.get_or_insert(session);
            let chain = self.chain(tip, &mut scratch);
            // Only a log kept as it grows adds to its live chain.
            let grows = self.blocks == BlockFate::Copied;
            let tainted = match first_tip && label.is_none() && grows {
                true => self.tainted(&chain, &groups, &mut scratch),
                false => HashSet::new(),
            };
            let chain = self.recover_parallel(chain, &visited, &groups, &mut scratch);
            for &i in &chain {
                visit(i, &mut visited, &mut left);
            }
            let mut chain_roots: Vec<usize> = chain.iter().map(|&i| roots[i]).collect();
            chain_roots.sort_unstable();
            chain_roots.dedup();
            // Message events of the same trees not on the chain are branches.
            let off = take(&chain_roots, &visited);
            branches.extend(self.branch_notices(&off, &visited));
            for &i in &off {
                visit(i, &mut visited, &mut left);
            }
            let first = chain.first().map_or(0, |&i| self.events[i].line());
            let label = match label.as_deref() {
                Some("sub-agent") if !threads.is_empty() || left > 0 => {
                    Some(format!("sub-agent from line {first}"))
                }
                other => other.map(str::to_string),
            };
            let (segments, builder) = self.segments(&chain, label.as_deref());
            if let Some(builder) = builder.filter(|_| first_tip && label.is_none()) {
                let end = LiveEnd {
                    at: segments.len() - 1,
                    tip,
                    time: self.events[tip].time,
                    session,
                    builder,
                    tainted,
                };
                live = Some((end, first));
            }
            threads.push((first, segments));
        }
        threads.sort_by_key(|(first, _)| *first);
        // The live chain's last segment, among all the thread's.
        let live = live.map(|(mut end, first)| {
            end.at += threads
                .iter()
                .take_while(|(line, _)| *line != first)
                .map(|(_, c)| c.len())
                .sum::<usize>();
            end
        });
        let mut out: Vec<Conversation> = threads.into_iter().flat_map(|(_, c)| c).collect();
        // The first conversation holding each line, as a message (`true`)
        // or a block: a search of every conversation for each branch made
        // a log with a rewind every few hundred turns quadratic. Lines are
        // dense, so this is a table by line (a hash map of every block's
        // line was a tenth of a rewound log's peak memory), built only
        // when a notice needs it.
        let holding = if self.relinked.is_empty() && branches.is_empty() {
            Holding::default()
        } else {
            Holding::of(&out, self.events.iter().map(Event::line).max())
        };
        for &(i, after) in &self.relinked {
            let (line, was) = (self.events[i].line(), self.events[after].line());
            let notice = Notice {
                kind: crate::finding::Kind::BrokenLink,
                source: BlockSource {
                    path: "parentUuid".into(),
                    line: Some(line),
                    uuid: self.events[i].uuid.clone(),
                },
                ids: Vec::new(),
                message: format!(
                    "the event on line {line} names a parent event this file does not hold (dropped from the log): read after line {was}, the message event before it, as Claude Code resumes it; what the dropped event held is missing from the history"
                ),
            };
            let holds = |c: &Conversation| c.message_sources.iter().any(|s| s.line == Some(line));
            let at = match holding.get(line) {
                Some((at, true)) => Some(at),
                // Held as a block first: a later conversation may hold it
                // as a message.
                Some(_) => out.iter().position(holds),
                None => None,
            };
            if let Some(at) = at {
                out[at].notices.push(notice);
            }
        }
        // A branch is told with the conversation it forks from (before or
        // after a compaction); a new start, with the last one.
        for (fork, notice) in branches {
            let held = fork.and_then(|line| holding.get(line)).map(|(at, _)| at);
            let at = held.or(out.len().checked_sub(1));
            if let Some(at) = at {
                out[at].notices.push(notice);
            }
        }
        (out, live)
    }

    /// The root of every member (following `parentUuid` only), so chains
    /// can tell a branch of theirs from an unrelated start.
    fn roots(&self) -> Vec<usize> {
        let mut root = vec![NONE; self.events.len()];
        let mut on_path = vec![false; self.events.len()];
        for &start in self.members {
            let mut path = Vec::new();
            let mut at = start;
            let found = loop {
                if root[at] != NONE {
                    break root[at];
                }
                path.push(at);
                on_path[at] = true;
                match self.parent_of(at) {
                    // A cycle ends the walk where it closes.
                    Some(p) if !on_path[p] => at = p,
                    _ => break at,
                }
            };
            for p in path {
                root[p] = found;
                on_path[p] = false;
            }
        }
        root
    }

    /// The leaves among `candidates`: the message events no other
    /// candidate descends from.
    fn leaves(&self, candidates: &[usize]) -> Vec<usize> {
        let mut pool = vec![false; self.events.len()];
        for &i in candidates {
            pool[i] = true;
        }
        let mut has_child = vec![false; self.events.len()];
        for &i in candidates {
            let mut at = self.parent_of(i);
            let mut steps = 0;
            while let Some(p) = at {
                if pool[p] || steps > self.members.len() {
                    has_child[p] = true;
                    break;
                }
                at = self.parent_of(p);
                steps += 1;
            }
        }
        candidates
            .iter()
            .copied()
            .filter(|&i| !has_child[i])
            .collect()
    }

    /// Root → `tip`, through compaction boundaries (`logicalParentUuid`).
    /// The messages the newest compaction kept are on it once, after its
    /// summary: no request before the compaction carried them (it ran
    /// before they were sent), the ones after it do.
    /// `seen` is all false, and is left so.
    fn chain(&self, tip: usize, seen: &mut [bool]) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut at = Some(tip);
        while let Some(i) = at {
            if seen[i] {
                break;
            }
            seen[i] = true;
            chain.push(i);
            let e = &self.events[i];
            at = match e.parent {
                0 => {
                    // The history before it goes on from its last message
                    // that was not kept.
                    let mut before = e
                        .logical_parent()
                        .and_then(|p| self.by_uuid.get(&p).copied());
                    // Bounded: written parents may form a cycle (a file
                    // written by hand, or by a fuzzer).
                    let mut steps = 0;
                    while let Some(b) = before.filter(|&b| seen[b]) {
                        steps += 1;
                        before = match steps > self.members.len() {
                            true => None,
                            false => self.written_parent_of(b),
                        };
                    }
                    before
                }
                _ => self.parent_of(i),
            };
        }
        for &i in &chain {
            seen[i] = false;
        }
        chain.reverse();
        chain
    }

    /// The thread's assistant events by their reply's `message.id`, and
    /// its result events by their parent, each in file order: what
    /// [`Thread::recover_parallel`] looks up for every chain.
    fn groups(&self) -> Groups {
        let mut groups = Groups::default();
        for &i in self.members {
            if let Some(id) = self.reply_id(i) {
                groups.siblings.entry(id).or_default().push(i);
            } else if self.events[i]
                .body
                .as_ref()
                .is_some_and(|b| b.role == Role::User && b.only_results())
                && let Some(p) = self.parent_of(i)
            {
                groups.results_of.entry(p).or_default().push(i);
            }
        }
        groups
    }

    /// The `message.id`s an event appended to the live `chain` must not
    /// carry to be added to it alone: those of replies with a part off the
    /// chain (a parallel sibling, a branch, another tree) or answered off
    /// it, which [`Thread::recover_parallel`] splices in after the group's
    /// last event on the chain. `on_chain` is all false, and is left so.
    fn tainted(&self, chain: &[usize], groups: &Groups, on_chain: &mut [bool]) -> HashSet<u64> {
        for &i in chain {
            on_chain[i] = true;
        }
        let mut tainted = HashSet::new();
        for (&id, members) in &groups.siblings {
            if members.iter().any(|&i| !on_chain[i]) {
                tainted.insert(id);
            }
        }
        for (&p, results) in &groups.results_of {
            if let Some(id) = self.reply_id(p)
                && results.iter().any(|&r| !on_chain[r])
            {
                tainted.insert(id);
            }
        }
        for &i in chain {
            on_chain[i] = false;
        }
        tainted
    }

    /// The `message.id` of an assistant event.
    fn reply_id(&self, i: usize) -> Option<u64> {
        self.events[i]
            .body
            .as_ref()
            .filter(|b| b.role == Role::Assistant)
            .and_then(|b| b.message_id)
    }

    /// Splices in the parallel siblings of the chain's assistant messages
    /// (same `message.id`, other uuid) and the tool results that answer any
    /// of them, right after the group's last event on the chain.
    /// `on_chain` is all false, and is left so.
    fn recover_parallel(
        &self,
        chain: Vec<usize>,
        taken: &[bool],
        groups: &Groups,
        on_chain: &mut [bool],
    ) -> Vec<usize> {
        for &i in &chain {
            on_chain[i] = true;
        }
        let free = |i: usize| !on_chain[i] && !taken[i];
        // The last event of each message.id group on the chain: the group's
        // off-chain members and results go in after it.
        let mut anchor: HashMap<u64, usize> = HashMap::new();
        for &i in &chain {
            if let Some(id) = self.reply_id(i) {
                anchor.insert(id, i);
            }
        }
        // Per group: its off-chain members, and the off-chain results
        // answering any member (on the chain or recovered).
        let mut work: Vec<(u64, Vec<usize>, Vec<usize>)> = Vec::new();
        for (&id, _) in &anchor {
            let members = groups.siblings.get(&id).map_or(&[][..], Vec::as_slice);
            let found: Vec<usize> = members.iter().copied().filter(|&i| free(i)).collect();
            let results: Vec<usize> = members
                .iter()
                .filter(|&&p| on_chain[p] || free(p))
                .filter_map(|p| groups.results_of.get(p))
                .flatten()
                .copied()
                .filter(|&i| free(i))
                .collect();
            work.push((id, found, results));
        }
        for &i in &chain {
            on_chain[i] = false;
        }
        let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
        for (id, mut found, mut results) in work {
            if found.is_empty() && results.is_empty() {
                continue;
            }
            found.sort_unstable();
            results.sort_unstable();
            found.extend(results);
            inserts.insert(anchor[&id], found);
        }
        if inserts.is_empty() {
            return chain;
        }
        let mut out = Vec::with_capacity(chain.len());
        for i in chain {
            out.push(i);
            if let Some(extra) = inserts.remove(&i) {
                out.extend(extra);
            }
        }
        out
    }

    /// One notice per branch: the off-chain message events under one fork,
    /// with the fork's line.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "a group has at least one member"
    )]
    fn branch_notices(&self, off: &[usize], on: &[bool]) -> Vec<(Option<usize>, Notice)> {
        // Where each off-chain event leaves the chain, memoized: events come
        // in file order, so a parent is usually resolved before its child.
        let mut fork_of: HashMap<usize, Option<usize>> = HashMap::new();
        let mut by_fork: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
        // Where each fork's group is in `by_fork`, which keeps the forks'
        // first-seen order: a log rewound every few prompts has thousands
        // of forks, and looking each up along the list was quadratic.
        let mut group_of: HashMap<Option<usize>, usize> = HashMap::new();
        let mut path = Vec::new();
        let mut on_path = HashSet::new();
        for &i in off {
            path.clear();
            on_path.clear();
            let mut at = i;
            let fork = loop {
                if let Some(&f) = fork_of.get(&at) {
                    break f;
                }
                path.push(at);
                on_path.insert(at);
                match self.parent_of(at) {
                    Some(p) if on[p] => break Some(p),
                    Some(p) if !on_path.contains(&p) => at = p,
                    _ => break None,
                }
            };
            for &p in &path {
                fork_of.insert(p, fork);
            }
            match group_of.get(&fork) {
                Some(&g) => by_fork[g].1.push(i),
                None => {
                    group_of.insert(fork, by_fork.len());
                    by_fork.push((fork, vec![i]));
                }
            }
        }
        by_fork
            .into_iter()
            .map(|(fork, members)| {
                let lines: Vec<usize> = members.iter().map(|&i| self.events[i].line()).collect();
                let (lo, hi) = (
                    *lines.iter().min().expect("non-empty"),
                    *lines.iter().max().expect("non-empty"),
                );
                let ids: Vec<String> = members
                    .iter()
                    .filter_map(|&i| self.events[i].body.as_ref())
                    .flat_map(|b| b.calls())
                    .collect();
                let first = members[0];
                let from = match fork {
                    Some(f) => format!(
                        "branch off line {} (uuid {})",
                        self.events[f].line(),
                        self.events[f].uuid.as_deref().unwrap_or("?")
                    ),
                    None => "start over from a new first prompt".to_string(),
                };
                let notice = Notice {
                    kind: crate::finding::Kind::OffBranch,
                    source: BlockSource {
                        path: "message".into(),
                        line: Some(self.events[first].line()),
                        uuid: self.events[first].uuid.clone(),
                    },
                    ids,
                    message: format!(
                        "{} message event(s) on lines {lo}–{hi} {from} and are not part of the live conversation (a rewind, an edited prompt or a resume left them behind); they were never sent with it, so they are not checked as part of it",
                        members.len()
                    ),
                };
                (fork.map(|f| self.events[f].line()), notice)
            })
            .collect()
    }

    /// The chain cut at each compaction into conversations of API messages,
    /// and the builder of the last one when it was kept (it holds a
    /// message): what an event appended to the chain is added with.
    fn segments(
        &self,
        chain: &[usize],
        label: Option<&str>,
    ) -> (Vec<Conversation>, Option<Builder>) {
        let mut out = Vec::new();
        let mut conv = Conversation::new(Source::Agent(Agent::ClaudeCode));
        conv.label = label.map(str::to_string);
        // The chain starts at an event whose parent is not in the file (a
        // log cut at its head, or one a tool trimmed): what came before it
        // was sent, but is not here to check against.
        if let Some(&first) = chain.first() {
            let e = &self.events[first];
            let linked = e.parent == 0 || self.parent_of(first).is_some();
            if !linked {
                conv.continues = Some(format!(
                    "events before line {} (its parentUuid is not in this file)",
                    e.line()
                ));
            }
        }
        // At most one message per event: room set aside and never used
        // costs address space only, while growing copies them all.
        conv.reserve(chain.len());
        let mut builder = Builder::default();
        let mut compactions = 0;
        // Where each compaction was: the line and time of its boundary.
        let mut cuts = Vec::new();
        for (k, &i) in chain.iter().enumerate() {
            let e = &self.events[i];
            // Past the first event, a null parent is a compaction the chain
            // was bridged through.
            if k > 0 && e.parent == 0 && !conv.messages.is_empty() {
                compactions += 1;
                let mut next = Conversation::new(Source::Agent(Agent::ClaudeCode));
                next.label = Some(match label {
                    Some(l) => format!("{l}, after compaction {compactions}"),
                    None => format!("after compaction {compactions}"),
                });
                out.push(std::mem::replace(&mut conv, next));
                // The summary is the boundary itself (older logs) or an
                // event just after it.
                let summary = chain[k..]
                    .iter()
                    .take(3)
                    .find_map(|&j| self.events[j].rare.as_ref()?.summary.as_deref());
                cuts.push((e.line(), time_text(e.time), summary.map(str::to_string)));
                builder = Builder::default();
            }
            builder.add_event(&mut conv, e, self.blocks);
        }
        let kept = !conv.messages.is_empty();
        if kept {
            out.push(conv);
        }
        for (k, (line, time, summary)) in cuts.into_iter().enumerate() {
            if let [before, after, ..] = &mut out[k..] {
                super::conversation::Compaction::mark(before, after, line, time, summary);
            }
        }
        (out, kept.then_some(builder))
    }
}

/// For each line, the first conversation holding it and whether as a
/// message (`true`) or only as a block.
#[derive(Default)]
struct Holding(Vec<(u32, bool)>);

impl Holding {
    const NONE: u32 = u32::MAX;

    fn of(out: &[Conversation], last_line: Option<usize>) -> Holding {
        let mut by_line = vec![(Holding::NONE, false); last_line.map_or(0, |l| l + 1)];
        for (at, c) in out.iter().enumerate() {
            let at = u32::try_from(at).unwrap_or(Holding::NONE - 1);
            for line in c.message_sources.iter().filter_map(|s| s.line) {
                if let Some(slot) = by_line.get_mut(line) {
                    if slot.0 == Holding::NONE {
                        *slot = (at, true);
                    } else {
                        slot.1 |= slot.0 == at;
                    }
                }
            }
            for line in c.block_sources.iter().flatten().filter_map(|s| s.line) {
                if let Some(slot) = by_line.get_mut(line)
                    && slot.0 == Holding::NONE
                {
                    *slot = (at, false);
                }
            }
        }
        Holding(by_line)
    }

    fn get(&self, line: usize) -> Option<(usize, bool)> {
        let &(at, as_message) = self.0.get(line)?;
        (at != Holding::NONE).then_some((at as usize, as_message))
    }
}

/// Rebuilds API messages from message events in chain order.
#[derive(Default, Clone)]
struct Builder {
    /// The last assistant message's index and `message.id`.
    last_assistant: Option<(usize, u64)>,
}

impl Builder {
    /// Adds chain event `e` to `conv`: its message, or the refusal it
    /// records. Gives the index of the message it added to or made (a
    /// refusal's: the message it comes before), if any.
    fn add_event(
        &mut self,
        conv: &mut Conversation,
        e: &Event,
        blocks: BlockFate,
    ) -> Option<usize> {
        if let Some(body) = &e.body {
            let read = match blocks {
                BlockFate::Moved => body.read.take(),
                BlockFate::Copied => body.read.borrow().clone(),
            };
            return Some(self.add(conv, e, body, read));
        }
        let refused = e.refused()?;
        conv.refusals.push(super::Refusal {
            at: conv.messages.len(),
            status: refused.status,
            text: refused.text.to_string(),
            source: BlockSource {
                path: "message".into(),
                line: Some(e.line()),
                uuid: e.uuid.clone(),
            },
        });
        Some(conv.messages.len())
    }

    /// Adds `body`'s blocks, `read`, to `conv`; gives the message's index.
    fn add(&mut self, conv: &mut Conversation, e: &Event, body: &Body, mut read: Blocks) -> usize {
        let hosted = read.take_hosted();
        let target = match body.role {
            // Blocks of one streamed message join it, even when tool results
            // of its earlier calls were written between them.
            Role::Assistant => self
                .last_assistant
                .as_ref()
                .filter(|(at, id)| {
                    body.message_id == Some(*id)
                        && conv.messages[at + 1..]
                            .iter()
                            .all(|m| m.role == Role::User && only_results(m))
                })
                .map(|(at, _)| *at),
            _ => conv.messages.len().checked_sub(1).filter(|&last| {
                body.only_results()
                    && conv.messages[last].role == Role::User
                    && only_results(&conv.messages[last])
            }),
        };
        let at = match target {
            Some(at) => {
                // Positions only order blocks within a message: the later
                // event's blocks come after every earlier one.
                let offset = 1 + conv
                    .hosted
                    .iter()
                    .filter(|h| h.message == at)
                    .map(|h| h.position)
                    .max()
                    .unwrap_or(0)
                    .max(conv.messages[at].content.len());
                // Exactly: a message usually gains one block at a time, and
                // growth would leave room for four in each of thousands.
                let m = &mut conv.messages[at];
                m.content.reserve_exact(read.blocks.len());
                m.content.extend(read.blocks);
                if body.finish.is_some() {
                    m.finish_reason = body.finish;
                }
                conv.block_sources[at].reserve_exact(read.sources.len());
                conv.block_sources[at].extend(read.sources);
                // Each event of a streamed message copies its usage; the
                // latest has the final count.
                record_usage(conv, at, body);
                conv.hosted
                    .extend(hosted.into_iter().map(|h| super::Hosted {
                        message: at,
                        position: h.position + offset,
                        ..h
                    }));
                at
            }
            None => {
                let at = conv.messages.len();
                conv.push_read(
                    Message {
                        role: body.role,
                        content: read.blocks,
                        finish_reason: body.finish,
                    },
                    BlockSource {
                        path: "message".into(),
                        line: Some(e.line()),
                        uuid: e.uuid.clone(),
                    },
                    read.sources,
                    hosted,
                );
                if body.role == Role::Assistant {
                    record_usage(conv, at, body);
                    self.last_assistant = body.message_id.map(|id| (at, id));
                    if body.synthetic {
                        conv.synthetic.push(at);
                    }
                }
                at
            }
        };
        if body.role == Role::User && !body.only_results() {
            self.last_assistant = None;
        }
        at
    }
}

/// Keeps `body`'s usage as that of the reply at `at`.
fn record_usage(conv: &mut Conversation, at: usize, body: &Body) {
    let Some((usage, model)) = &body.usage else {
        return;
    };
    let trip = super::TripUsage {
        message: at,
        usage: *usage,
        model: model.as_deref().map(str::to_string),
    };
    // Replies come in order: the slot, if there is one, is nearly always
    // the last (a search from the front made a 50,000-turn log quadratic:
    // 75 % of `check`'s time on 400,000 events).
    match conv.usage.last_mut() {
        Some(last) if last.message == at => *last = trip,
        Some(last) if last.message < at => conv.usage.push(trip),
        None => conv.usage.push(trip),
        Some(_) => match conv.usage.iter_mut().rev().find(|u| u.message == at) {
            Some(slot) => *slot = trip,
            None => conv.usage.push(trip),
        },
    }
}

fn only_results(m: &Message) -> bool {
    !m.content.is_empty()
        && m.content
            .iter()
            .all(|b| matches!(b, Block::ToolResult { .. }))
}
/// What is left of a finished log's events: drop it where it costs least.
pub struct Leftovers {
    _events: Vec<Event>,
}

/// Where an event's message stands, for an error in it.
fn message_path() -> JsonPath {
    JsonPath::root().key("message")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_strings_are_borrowed_from_the_line_unless_escaped() {
        let line = r#"{"type":"user","uuid":"e\u0031","parentUuid":"e0","sessionId":"s","message":{"role":"user","content":"hi"}}"#;
        let raw: RawEvent = serde_json::from_str(line).unwrap();
        assert!(matches!(raw.kind, Some(Cow::Borrowed("user"))));
        assert!(matches!(raw.parent, Some(Cow::Borrowed("e0"))));
        assert!(matches!(raw.session, Some(Cow::Borrowed("s"))));
        // An escape cannot be borrowed: it is unescaped into a copy.
        assert!(matches!(&raw.uuid, Some(Cow::Owned(u)) if u == "e1"));
        assert!(raw.logical_parent.is_none());
        // A field of another kind still fails the strict reading, so the
        // line is read the lenient way, as before.
        assert!(serde_json::from_str::<RawEvent>(r#"{"uuid":7}"#).is_err());
        let null: RawEvent = serde_json::from_str(r#"{"uuid":null}"#).unwrap();
        assert!(null.uuid.is_none());
    }
}
