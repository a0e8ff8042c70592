//! Anthropic Messages request bodies (or a bare `messages` array): one
//! message per element, tool_use and tool_result as content blocks. The
//! block reader is shared with the Claude Code log, whose events carry
//! Anthropic messages.
//!
//! Calls the server runs itself (`server_tool_use` answered by a
//! `*_tool_result` block such as `web_search_tool_result`, and the MCP
//! connector's `mcp_tool_use` / `mcp_tool_result`) are kept apart as
//! [`Hosted`] blocks: they never take a client `tool_result`.

use std::borrow::Cow;
use std::marker::PhantomData;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::fingerprint::kept_text;
use super::lax::{
    Boxed, FromMap, Given, IsTrue, Lax, LaxList, LaxStr, NonEmptyList, Texts, drain_map,
    lax_object, object_or_default, take_strings_as,
};
use super::parse::{ToolDef, finish_reason_named, push_tools};
use super::parse::{body_of, from_value, required_list};
use super::parse::{element, member, member_element};
use super::{BlockSource, Conversation, Detail, Hosted, HostedRole, ReadError, Source, err};
use crate::agent::Agent;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{Json, Text};
use loopdbg_formats::provider::Format;

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    read_as(doc, detail, None)
}

/// [`read`], as the task store of `agent` when given (a scan of its store,
/// or `--format cline`); without it, a history is taken for a task store
/// by its own fields, or, a bare array, by what only the extensions write.
pub(super) fn read_as(
    doc: &mut Value,
    detail: Detail,
    agent: Option<Agent>,
) -> Result<Conversation, ReadError> {
    let doc = std::mem::take(doc);
    let bare = doc.is_array();
    let breakpoints = (!bare).then(|| cache_breakpoints(&doc));
    let body = body_of(doc, "messages", |doc| {
        let messages = Given(Some(from_value(doc)?));
        Ok(Body {
            messages,
            ..Body::default()
        })
    })?;
    let mut conv = read_body(body, detail, Place { bare, agent })?;
    conv.cache_breakpoints = breakpoints;
    Ok(conv)
}

/// Message `i` of a later request of the same conversation added to
/// `conv` (what that request's messages before it read as, in a Messages
/// body): the gate's reading past a shared prefix (`prefix`). `None` when
/// that would not give what reading the whole body gives: an entry with a
/// task store's own fields makes the whole history a store, read otherwise.
pub(crate) fn extend(conv: &mut Conversation, i: usize, item: Value, detail: Detail) -> Option<()> {
    let breakpoints = cache_breakpoints(&item);
    let message = MessageIn::deserialize(item).ok()?;
    let kept = TaskStore::of(std::slice::from_ref(&message), Place::default());
    if kept.is_store() {
        return None;
    }
    read_message(conv, i, message, &kept, detail).ok()?;
    conv.cache_breakpoints = Some(conv.cache_breakpoints? + breakpoints);
    Some(())
}

/// The `cache_control` keys of a Messages body that are not `null`, as the
/// API counts its cache breakpoints (on tools, system blocks, content
/// blocks and a result's own blocks). Counted as keys wherever they are,
/// the same from a `Value` and from the text of a line (where a key is
/// `"cache_control"` followed by `:`; a user's text holding those words
/// has its quotes escaped), so both ways in agree.
fn cache_breakpoints(doc: &Value) -> usize {
    match doc {
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| usize::from(k == "cache_control" && !v.is_null()) + cache_breakpoints(v))
            .sum(),
        Value::Array(items) => items.iter().map(cache_breakpoints).sum(),
        _ => 0,
    }
}

/// [`cache_breakpoints`] of a body's JSON text.
fn cache_breakpoints_in(text: &str) -> usize {
    const KEY: &str = "\"cache_control\"";
    text.match_indices(KEY)
        .filter(|(at, _)| {
            let rest = text[at + KEY.len()..].trim_start();
            rest.strip_prefix(':')
                .is_some_and(|value| !value.trim_start().starts_with("null"))
        })
        .count()
}

/// How a body was given: a bare array (as the task stores keep a
/// history), and the agent whose store it is, when that is known.
#[derive(Debug, Clone, Copy, Default)]
struct Place {
    bare: bool,
    agent: Option<Agent>,
}

/// `check`'s fast path: the line read straight from its text by the same
/// reader, taken when `detect` would call it Anthropic (see
/// [`Body::is_anthropic`]) and it reads without an error or a notice;
/// `None` sends the line to the general path.
pub(crate) fn plain(line: &str, forced: bool) -> Option<Conversation> {
    let body = serde_json::from_str::<Lax<Body>>(line).ok()?.object()?;
    if !body.is_anthropic(forced) {
        return None;
    }
    let mut conv = read_body(body, Detail::Full, Place::default()).ok()?;
    conv.cache_breakpoints = Some(cache_breakpoints_in(line));
    conv.notices.is_empty().then_some(conv)
}

/// The body read: its tools, system prompt, thinking and messages.
fn read_body(body: Body, detail: Detail, place: Place) -> Result<Conversation, ReadError> {
    let mut items = required_list(body.messages.0.map(|l| l.0), "messages")?;
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    push_tools(&mut conv, body.tools);
    push_tools(&mut conv, body.functions);
    // MCP connector servers declare tools the request does not list.
    if body.mcp_servers.0 {
        conv.open_tools = true;
    }
    conv.system = body.system.joined("\n");
    let thinking = body.thinking.0.and_then(Lax::object).and_then(|t| t.kind.0);
    conv.thinking = thinking.as_deref() == Some("enabled");
    conv.thinking_adaptive = thinking.as_deref() == Some("adaptive");
    let kept = TaskStore::of(&items, place);
    if let Some(agent) = kept.agent {
        conv.source = Source::Agent(agent);
        conv.label = Some(format!("{} task history", agent.name()));
    }
    for (i, item) in items.drain(..).enumerate() {
        if !kept.sends(&item) {
            continue;
        }
        read_message(&mut conv, i, item, &kept, detail)?;
    }
    // What each extension does to the history before it sends it.
    match kept.agent {
        Some(Agent::Cline) => {
            crate::cline::ensure_results_follow_calls(&mut conv);
            close_interrupted_tail(&mut conv);
        }
        Some(Agent::RooCode | Agent::KiloCode) => close_interrupted_tail(&mut conv),
        Some(
            Agent::ClaudeCode
            | Agent::Codex
            | Agent::GeminiCli
            | Agent::CopilotCli
            | Agent::Opencode
            | Agent::Crush
            | Agent::KimiCode,
        )
        | None => {}
    }
    Ok(conv)
}

/// One message of the body: `messages[i]`.
fn read_message(
    conv: &mut Conversation,
    i: usize,
    item: MessageIn,
    kept: &TaskStore,
    detail: Detail,
) -> Result<(), ReadError> {
    let at = || JsonPath::root().key("messages").index(i);
    if matches!(
        item.content.first_type(),
        Some("thinking" | "redacted_thinking")
    ) {
        conv.opens_with_thinking.push(conv.messages.len());
    }
    if matches!(&item.content, ContentIn::Blocks(b) if b.is_empty()) {
        conv.written_empty.push(conv.messages.len());
    }
    let role = match item.role.0.as_ref().and_then(LaxStr::as_deref) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => {
            conv.system = item.content.joined_text("\n");
            conv.system_messages += 1;
            return Ok(());
        }
        Some(other) => {
            return Err(err(
                &at(),
                format!("unknown role `{other}` for Anthropic (expected user or assistant)"),
            ));
        }
        None => return Err(err(&at(), "expected a message with a string `role`")),
    };
    let finish_reason = finish_reason_named(item.stop_reason.as_deref());
    let path = element("messages", i);
    let mut read = read_content(item.content, &at, detail, |k| BlockSource {
        path: match k {
            Some(k) => member_element(&path, "content", k).into(),
            None => member(&path, "content").into(),
        },
        ..Default::default()
    })?;
    // Roo Code stores other providers' reasoning as content blocks of
    // its own and converts them before it sends.
    let stored_reasoning = |kind: &str| kept.is_store() && kind == "a `reasoning` block";
    for (source, kind) in read.unknown().iter().filter(|(_, k)| !stored_reasoning(k)) {
        conv.notices.push(super::Notice {
            kind: crate::finding::Kind::UnknownBlock,
            source: source.clone(),
            ids: Vec::new(),
            message: format!(
                "{kind} is not a content block the Anthropic Messages API defines: it was not read, so what it carries is not checked, and Anthropic refuses a block it does not know{}",
                if kind.contains("toolUse") || kind.contains("toolResult") {
                    " (`toolUse` / `toolResult` are Bedrock Converse blocks: check the body with --format bedrock)"
                } else {
                    ""
                }
            ),
        });
    }
    let hosted = read.take_hosted();
    let message = Message {
        role,
        content: read.blocks,
        finish_reason,
    };
    let source = BlockSource {
        path: path.into(),
        ..Default::default()
    };
    conv.push_read(message, source, read.sources, hosted);
    Ok(())
}

/// A Cline / Roo Code / Kilo Code `api_conversation_history.json`: an
/// Anthropic `MessageParam[]` whose entries carry the extension's own
/// fields (`ts`, Roo's `isSummary`, `condenseId` / `condenseParent`,
/// `truncationId` / `truncationParent`, and reasoning items stored as
/// entries of `type: "reasoning"` with no role). Roo sends the history
/// without the reasoning items, without the messages a condense summary
/// replaced (their `condenseParent` names a summary that exists) and
/// without those a truncation marker hides: so are they read here.
/// Entries keep their index, so a finding names the file's own place.
struct TaskStore {
    /// Whose store: Roo Code when it holds Roo's own fields (condensing,
    /// truncation markers, reasoning items), Cline otherwise, unless the
    /// caller knows.
    agent: Option<Agent>,
    condensed: ahash::AHashSet<String>,
    truncated: ahash::AHashSet<String>,
}

impl TaskStore {
    fn of(items: &[MessageIn], place: Place) -> TaskStore {
        let stores = || items.iter().filter_map(|m| m.store.as_deref());
        let extension = place
            .agent
            .filter(|a| matches!(a, Agent::Cline | Agent::RooCode | Agent::KiloCode));
        let is_store = extension.is_some()
            || stores().any(|s| s.ts)
            || (place.bare
                && crate::cline::looks_like_task(
                    items
                        .iter()
                        .filter(|m| m.role.0.as_ref().and_then(LaxStr::as_deref) == Some("user"))
                        .map(|m| m.content.joined_text("\n").unwrap_or_default()),
                ));
        let ids = |id: for<'m> fn(&'m StoreFields) -> Option<&'m str>,
                   marked: fn(&StoreFields) -> bool| {
            if !is_store {
                return Default::default();
            }
            stores()
                .filter(|s| marked(s))
                .filter_map(|s| id(s).map(str::to_string))
                .collect()
        };
        let roo_fields = stores().any(|s| {
            s.condense_id.0.is_some()
                || s.condense_parent.0.is_some()
                || s.truncation_id.0.is_some()
                || s.truncation_parent.0.is_some()
                || s.truncation_marker.0
        }) || items
            .iter()
            .any(|m| m.role.0.is_none() && m.kind.as_deref() == Some("reasoning"));
        let agent = match (is_store, extension) {
            (_, Some(agent)) => Some(agent),
            (true, None) if roo_fields => Some(Agent::RooCode),
            (true, None) => Some(Agent::Cline),
            (false, None) => None,
        };
        TaskStore {
            agent,
            condensed: ids(|s| s.condense_id.as_deref(), |_| true),
            truncated: ids(|s| s.truncation_id.as_deref(), |s| s.truncation_marker.0),
        }
    }

    /// Whether the history is an extension's task store.
    fn is_store(&self) -> bool {
        self.agent.is_some()
    }

    /// Whether the extension sends this entry.
    fn sends(&self, item: &MessageIn) -> bool {
        if !self.is_store() {
            return true;
        }
        let named =
            |id: Option<&str>, set: &ahash::AHashSet<String>| id.is_some_and(|id| set.contains(id));
        let reasoning_item = item.role.0.is_none() && item.kind.as_deref() == Some("reasoning");
        let store = item.store.as_deref();
        !reasoning_item
            && !named(
                store.and_then(|s| s.condense_parent.as_deref()),
                &self.condensed,
            )
            && !named(
                store.and_then(|s| s.truncation_parent.as_deref()),
                &self.truncated,
            )
    }
}

/// What Cline and Roo Code send for a call the task never finished.
pub const TASK_INTERRUPTED: &str = "Task was interrupted before this tool call could be completed.";

/// Cline and Roo Code resume a task whose history ends with calls that have
/// no results (the extension closed mid-tool) by sending a result for each,
/// "Task was interrupted before this tool call could be completed."
/// (`resumeTaskFromHistory`): the history ending so is what they store, not
/// what they send. The results are added as they send them, with a warning:
/// the model gets no real result.
fn close_interrupted_tail(conv: &mut Conversation) {
    let n = conv.messages.len();
    let Some(at) = (0..n)
        .rev()
        .find(|&i| conv.messages[i].role == Role::Assistant)
    else {
        return;
    };
    let answered: Vec<&str> = conv.messages[at + 1..]
        .iter()
        .flat_map(|m| super::tool_results(m).map(|(_, id)| id))
        .collect();
    let missing: Vec<String> = super::tool_uses(&conv.messages[at])
        .map(|(_, id, _)| id)
        .filter(|id| !answered.contains(id))
        .map(str::to_string)
        .collect();
    if missing.is_empty() || at + 2 < n {
        return;
    }
    let results: Vec<Block> = missing
        .iter()
        .map(|id| Block::ToolResult {
            tool_use_id: id.as_str().into(),
            content: Json::new(Value::String(TASK_INTERRUPTED.to_string())),
            is_error: false,
        })
        .collect();
    let source = conv.message_sources[at].clone();
    let sources = vec![source.clone(); results.len()];
    if at + 1 < n {
        // The resumed user message: the results go first, as they must.
        let last = n - 1;
        let mut content = results;
        content.append(&mut conv.messages[last].content);
        conv.messages[last].content = content;
        let mut block_sources = sources;
        block_sources.append(&mut conv.block_sources[last]);
        conv.block_sources[last] = block_sources;
    } else {
        conv.push(
            Message {
                role: Role::User,
                content: results,
                finish_reason: None,
            },
            source.clone(),
            sources,
        );
    }
    let agent = conv.source.agent().map_or("the extension", Agent::name);
    conv.rewrites.push(super::Rewrite {
        kind: crate::finding::Kind::UnansweredCall,
        source,
        ids: missing.clone(),
        message: format!(
            "the task's history stops after calls that have no results ({}): {agent} resumes it by sending {TASK_INTERRUPTED:?} as each one's result (`resumeTaskFromHistory`), so the provider never sees them open, but the model gets no real result for them",
            missing.join(", ")
        ),
        harmless: false,
    });
}

/// One message's content, read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Blocks {
    pub blocks: Vec<Block>,
    pub sources: Vec<BlockSource>,
    /// What few messages have, behind one pointer: a long log holds one
    /// of these per event until its conversation is built.
    rare: Option<Box<RareBlocks>>,
}

#[derive(Debug, Clone, Default)]
struct RareBlocks {
    /// Hosted blocks, with `message` still to be set by the caller.
    hosted: Vec<Hosted>,
    /// Blocks of a kind the Messages API does not define: where, and the
    /// kind as written (`toolUse` for a Bedrock block, say).
    unknown: Vec<(BlockSource, String)>,
}

impl Blocks {
    fn rare(&mut self) -> &mut RareBlocks {
        self.rare.get_or_insert_with(Default::default)
    }

    /// Hosted blocks, with `message` still to be set by the caller.
    pub(crate) fn take_hosted(&mut self) -> Vec<Hosted> {
        self.rare
            .as_mut()
            .map(|r| std::mem::take(&mut r.hosted))
            .unwrap_or_default()
    }

    /// Blocks of a kind the Messages API does not define: where, and the
    /// kind as written.
    pub(crate) fn unknown(&self) -> &[(BlockSource, String)] {
        self.rare.as_ref().map_or(&[], |r| &r.unknown)
    }
}

/// Content block types of the Messages API that carry no call or result
/// (tool calls and results, server tools' and the MCP connector's, are
/// read apart).
pub const OTHER_BLOCKS: &[&str] = &[
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "container_upload",
    "compaction",
    "tool_reference",
];

/// A block's `input` or `content`, as a reader of text or of a `Value`
/// holds it until the block is read: a `Value` (Anthropic's requests),
/// or the text itself (Claude Code's log, whose results are not parsed
/// unless kept).
pub(crate) trait Payload<'de>: Deserialize<'de> + Default {
    /// A call's input, as `detail` keeps it.
    fn input(self, detail: Detail) -> Json;
    /// A result's content, as `detail` keeps it.
    fn content(self, detail: Detail) -> Json;
}

/// A payload read into a `Value` (moved out whole under any detail: the
/// schema check reads it).
impl<'de> Payload<'de> for Boxed {
    fn input(self, _: Detail) -> Json {
        Json::new(self.0.map_or(Value::Null, |v| *v))
    }
    fn content(self, _: Detail) -> Json {
        Json::new(self.0.map_or(Value::Null, |v| *v))
    }
}

/// Reads one Anthropic message's content into blocks: the one block
/// reader of Anthropic requests and of Claude Code's log. `message` is
/// the message's path (for errors), `source(Some(k))` where block `k`
/// stands and `source(None)` where a string content stands.
pub(super) fn read_content<'de, P: Payload<'de>>(
    content: ContentIn<'de, P>,
    message: &dyn Fn() -> JsonPath,
    detail: Detail,
    mut source: impl FnMut(Option<usize>) -> BlockSource,
) -> Result<Blocks, ReadError> {
    let mut read = Blocks::default();
    let items = match content {
        ContentIn::Missing => return Ok(read),
        ContentIn::Text(text) => {
            // One block: a first push would make room for four.
            read.blocks.reserve_exact(1);
            read.sources.reserve_exact(1);
            read.blocks.push(Block::Text {
                text: kept_text(&text, detail),
            });
            read.sources.push(source(None));
            return Ok(read);
        }
        ContentIn::Blocks(items) => items,
        ContentIn::Other => {
            return Err(err(
                &message().key("content"),
                "expected a string or an array of blocks",
            ));
        }
    };
    read.blocks.reserve_exact(items.len());
    read.sources.reserve_exact(items.len());
    for (k, b) in items.into_iter().enumerate() {
        let need = |field: Option<Cow<str>>, name: &str| {
            field.map(Cow::into_owned).ok_or_else(|| {
                let at = message().key_index("content", k);
                err(&at, format!("expected a string `{name}`"))
            })
        };
        // An id or name as shared text, copied once from the line (not
        // into a `String` first).
        let need_text = |field: Option<Cow<str>>, name: &str| match field {
            Some(f) => Ok(Text::from(&*f)),
            None => need(None, name).map(|s| s.into()),
        };
        let kind = b.kind.as_deref().unwrap_or("");
        let block = match kind {
            "text" => Block::Text {
                text: kept_text(b.text.as_deref().unwrap_or(""), detail),
            },
            "tool_use" => {
                // Called from code the server runs: that call waits.
                let server = b.caller.0.and_then(Lax::object).and_then(|c| c.tool_id.0);
                if let Some(server) = server {
                    read.rare().hosted.push(Hosted {
                        role: HostedRole::Awaits,
                        id: server.into_owned(),
                        block: kind.to_string(),
                        name: need(b.name.0.clone(), "name")?,
                        message: 0,
                        position: k,
                        source: source(Some(k)),
                    });
                }
                Block::ToolUse {
                    id: need_text(b.id.0, "id")?,
                    name: need_text(b.name.0, "name")?,
                    input: b.input.input(detail),
                }
            }
            "tool_result" => Block::ToolResult {
                tool_use_id: need_text(b.tool_use_id.0, "tool_use_id")?,
                content: b.content.content(detail),
                is_error: b.is_error.0,
            },
            "server_tool_use" | "mcp_tool_use" => {
                read.rare().hosted.push(Hosted {
                    role: HostedRole::Call,
                    id: need(b.id.0, "id")?,
                    block: kind.to_string(),
                    name: need(b.name.0, "name")?,
                    message: 0,
                    position: k,
                    source: source(Some(k)),
                });
                continue;
            }
            // Every server tool's result block: web_search_tool_result,
            // code_execution_tool_result, tool_search_tool_result, …
            result if result.ends_with("_tool_result") => {
                read.rare().hosted.push(Hosted {
                    role: HostedRole::Result,
                    id: need(b.tool_use_id.0, "tool_use_id")?,
                    block: kind.to_string(),
                    name: kind.to_string(),
                    message: 0,
                    position: k,
                    source: source(Some(k)),
                });
                continue;
            }
            // Images, thinking and the like carry no pairing.
            other if OTHER_BLOCKS.contains(&other) => continue,
            "" => {
                let kind = b.first_key.map_or("an empty block".to_string(), |k| {
                    format!("a block with no `type` (`{k}`)")
                });
                read.rare().unknown.push((source(Some(k)), kind));
                continue;
            }
            other => {
                read.rare()
                    .unknown
                    .push((source(Some(k)), format!("a `{other}` block")));
                continue;
            }
        };
        read.blocks.push(block);
        read.sources.push(source(Some(k)));
    }
    Ok(read)
}

/// A message's `content`: absent (or `null`), a string, blocks, or
/// another kind (an error when read).
#[derive(Default)]
pub(crate) enum ContentIn<'a, P> {
    #[default]
    Missing,
    Text(Cow<'a, str>),
    Blocks(Vec<BlockIn<'a, P>>),
    Other,
}

impl<P> ContentIn<'_, P> {
    /// The first block's `type`.
    fn first_type(&self) -> Option<&str> {
        match self {
            ContentIn::Blocks(blocks) => blocks.first()?.kind.as_deref(),
            _ => None,
        }
    }

    /// The text of a string, or of every block's `text` joined by `sep`
    /// (what `read::joined_text` reads from a `Value`).
    pub(crate) fn joined_text(&self, sep: &str) -> Option<String> {
        match self {
            ContentIn::Text(text) => Some(text.to_string()),
            ContentIn::Blocks(blocks) => {
                let texts: Vec<&str> = blocks.iter().filter_map(|b| b.text.as_deref()).collect();
                Some(texts.join(sep))
            }
            ContentIn::Missing | ContentIn::Other => None,
        }
    }
}

impl<'de: 'a, 'a, P: Deserialize<'de> + Default> Deserialize<'de> for ContentIn<'a, P> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a, P>(PhantomData<(&'a (), P)>);
        impl<'de: 'a, 'a, P: Deserialize<'de> + Default> Visitor<'de> for Visit<'a, P> {
            type Value = ContentIn<'a, P>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            take_strings_as!(ContentIn::Text);
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(ContentIn::Missing)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(ContentIn::Missing)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                LaxList::visit(seq).map(ContentIn::Blocks)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                drain_map(map).map(|()| ContentIn::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ContentIn::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ContentIn::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ContentIn::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ContentIn::Other)
            }
        }
        d.deserialize_any(Visit(PhantomData))
    }
}

/// One content block: the fields pairing and replay read, whatever its
/// type; `input` and `content` held as `P`.
#[derive(Default)]
pub(crate) struct BlockIn<'a, P> {
    kind: LaxStr<'a>,
    text: LaxStr<'a>,
    id: LaxStr<'a>,
    name: LaxStr<'a>,
    tool_use_id: LaxStr<'a>,
    input: P,
    content: P,
    is_error: IsTrue,
    caller: Given<Lax<Caller<'a>>>,
    /// Whether it has a `type` key (of any value).
    typed: bool,
    /// The first key, to name a block with no `type`.
    first_key: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a, P: Deserialize<'de> + Default> Deserialize<'de> for BlockIn<'a, P> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object_or_default(d)
    }
}

impl<'de: 'a, 'a, P: Deserialize<'de> + Default> FromMap<'de> for BlockIn<'a, P> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut block = BlockIn::default();
        while let Some(LaxStr(key)) = map.next_key::<LaxStr>()? {
            let key = key.unwrap_or_default();
            match &*key {
                "type" => {
                    block.typed = true;
                    block.kind = map.next_value()?;
                }
                "text" => block.text = map.next_value()?,
                "id" => block.id = map.next_value()?,
                "name" => block.name = map.next_value()?,
                "tool_use_id" => block.tool_use_id = map.next_value()?,
                "input" => block.input = map.next_value()?,
                "content" => block.content = map.next_value()?,
                "is_error" => block.is_error = map.next_value()?,
                "caller" => block.caller = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            block.first_key.get_or_insert(key);
        }
        Ok(block)
    }
}

lax_object! {
    /// Who made a `tool_use`: `{"type":"direct"}`, or code a server tool
    /// runs (`tool_id` names that call).
    struct Caller<'a> {
        "tool_id" => tool_id: LaxStr<'a>,
    }
}

lax_object! {
    /// `thinking {type}`.
    struct Thinking<'a> {
        "type" => kind: LaxStr<'a>,
    }
}

/// A message. Kept small (it is moved a few times per message): what a
/// Cline / Roo Code task store adds is boxed, and only when present.
#[derive(Default)]
struct MessageIn<'a> {
    role: Given<LaxStr<'a>>,
    content: ContentIn<'a, Boxed>,
    stop_reason: LaxStr<'a>,
    kind: LaxStr<'a>,
    /// `tool_calls` or `function_call` (Chat's) is present.
    chat_calls: bool,
    store: Option<Box<StoreFields<'a>>>,
}

/// The fields a task store's entries carry.
#[derive(Default)]
struct StoreFields<'a> {
    /// `ts` is a number.
    ts: bool,
    condense_id: LaxStr<'a>,
    condense_parent: LaxStr<'a>,
    truncation_id: LaxStr<'a>,
    truncation_parent: LaxStr<'a>,
    truncation_marker: IsTrue,
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageIn<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object_or_default(d)
    }
}

impl<'de: 'a, 'a> FromMap<'de> for MessageIn<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut m = MessageIn::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            let key = key.as_deref().unwrap_or("");
            match key {
                "role" => m.role = map.next_value()?,
                "content" => m.content = map.next_value()?,
                "stop_reason" => m.stop_reason = map.next_value()?,
                "type" => m.kind = map.next_value()?,
                "tool_calls" | "function_call" => {
                    m.chat_calls = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "ts" | "condenseId" | "condenseParent" | "truncationId" | "truncationParent"
                | "isTruncationMarker" => {
                    let store = m.store.get_or_insert_with(Default::default);
                    match key {
                        "ts" => store.ts = matches!(map.next_value::<Value>()?, Value::Number(_)),
                        "condenseId" => store.condense_id = map.next_value()?,
                        "condenseParent" => store.condense_parent = map.next_value()?,
                        "truncationId" => store.truncation_id = map.next_value()?,
                        "truncationParent" => store.truncation_parent = map.next_value()?,
                        _ => store.truncation_marker = map.next_value()?,
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(m)
    }
}

/// A Messages body: what the reader reads, and what tells the fast path
/// whether `detect` would call it Anthropic.
#[derive(Default)]
struct Body<'a> {
    messages: Given<LaxList<MessageIn<'a>>>,
    tools: LaxList<Lax<ToolDef<'a>>>,
    functions: LaxList<Lax<ToolDef<'a>>>,
    system: Texts<'a>,
    thinking: Given<Lax<Thinking<'a>>>,
    /// `mcp_servers` is a list of at least one server.
    mcp_servers: NonEmptyList,
    model: LaxStr<'a>,
    /// Whether `system` and `max_tokens` are given (whatever they hold).
    has_system: bool,
    max_tokens: bool,
    elsewhere: bool,
}

impl<'de: 'a, 'a> FromMap<'de> for Body<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            match key.as_deref().unwrap_or("") {
                "messages" => body.messages = map.next_value()?,
                "tools" => body.tools = map.next_value()?,
                "functions" => body.functions = map.next_value()?,
                "system" => {
                    body.has_system = true;
                    body.system = map.next_value()?;
                }
                "thinking" => body.thinking = map.next_value()?,
                "mcp_servers" => body.mcp_servers = map.next_value()?,
                "model" => body.model = map.next_value()?,
                key => {
                    body.max_tokens |= key == "max_tokens";
                    body.elsewhere |= crate::signs::OTHER_FORMATS_KEYS.contains(&key);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(body)
    }
}

impl Body<'_> {
    /// Whether `detect` calls this body Anthropic, asked of the typed
    /// body (or, `forced`, whether `--format anthropic` holds for it):
    /// nothing in it says another format (a key of one, a tool or
    /// function message, calls in Chat's shape, a Responses item or
    /// part, a block with no `type`, which is Bedrock's), and Chat is not
    /// what its tools, system messages, model or fields lean to.
    fn is_anthropic(&self, forced: bool) -> bool {
        let Some(LaxList(Some(messages))) = &self.messages.0 else {
            return false;
        };
        if self.elsewhere {
            return false;
        }
        let mut signs = false;
        let mut system_role = false;
        for m in messages {
            // A message that is not an object reads as one with no role:
            // an error, so the line goes to the general path.
            let role = m.role.0.as_ref().and_then(LaxStr::as_deref);
            if matches!(role, Some("tool" | "function"))
                || m.chat_calls
                || matches!(
                    m.kind.as_deref(),
                    Some("function_call" | "function_call_output")
                )
            {
                return false;
            }
            system_role |= matches!(role, Some("system" | "developer"));
            if let ContentIn::Blocks(blocks) = &m.content {
                for b in blocks {
                    // Untyped (or not an object): Bedrock's shape to `detect`.
                    if !b.typed {
                        return false;
                    }
                    match b.kind.as_deref() {
                        Some("output_text" | "input_text") => return false,
                        Some(
                            "tool_use" | "tool_result" | "server_tool_use" | "mcp_tool_use"
                            | "thinking" | "redacted_thinking",
                        ) => signs = true,
                        _ => {}
                    }
                }
            }
        }
        if signs {
            return true;
        }
        let tools = || {
            self.tools.0.iter().flatten().filter_map(|t| match t {
                Lax::Object(t) => Some(t),
                Lax::Other => None,
            })
        };
        if tools().any(|t| matches!(t.function.0, Some(Lax::Object(_)))) {
            return false;
        }
        forced
            || tools().any(|t| t.input_schema.0.is_some())
            || self.has_system
            || !(system_role || crate::signs::leans_openai(self.model.as_deref(), self.max_tokens))
    }
}
