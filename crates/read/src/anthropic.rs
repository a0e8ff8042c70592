//! Anthropic Messages request bodies (or a bare `messages` array): one
//! message per element, tool_use and tool_result as content blocks. The
//! block reader is shared with the Claude Code log, whose events carry
//! Anthropic messages.
//!
//! Calls the server runs itself (`server_tool_use` answered by a
//! `*_tool_result` block such as `web_search_tool_result`, and the MCP
//! connector's `mcp_tool_use` / `mcp_tool_result`) are kept apart as
//! [`Hosted`] blocks: they never take a client `tool_result`.

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde_json::Value;

use super::fingerprint::kept_text;
use super::{
    BlockSource, Conversation, Detail, Hosted, HostedRole, ReadError, Source, array_at, err,
    finish_reason_of, read_tools, role_of, str_field, system_text, take,
};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    read_tools(doc, &mut conv);
    read_mcp_servers(doc, &mut conv);
    conv.system = system_text(doc.get("system"));
    let thinking = doc.pointer("/thinking/type").and_then(Value::as_str);
    conv.thinking = thinking == Some("enabled");
    conv.thinking_adaptive = thinking == Some("adaptive");
    let (items, base) = array_at(doc, "messages")?;
    let kept = TaskStore::of(items);
    if kept.is_store {
        conv.label = Some("Cline / Roo Code task history".to_string());
    }
    for (i, item) in items.iter_mut().enumerate() {
        if !kept.sends(item) {
            continue;
        }
        let path = super::indexed(&base, "", i);
        // Not `pointer`: it copies each step of the path to unescape it.
        let first_type = item
            .get("content")
            .and_then(|c| c.get(0))
            .and_then(|b| b.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if matches!(first_type, "thinking" | "redacted_thinking") {
            conv.opens_with_thinking.push(conv.messages.len());
        }
        let role = match role_of(item, &path)?.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => {
                conv.system = system_text(item.get("content"));
                continue;
            }
            other => {
                return Err(err(
                    &path,
                    format!("unknown role `{other}` for Anthropic (expected user or assistant)"),
                ));
            }
        };
        let finish_reason = finish_reason_of(item.get("stop_reason"));
        let read = blocks(item.get_mut("content"), &path, detail, |p| BlockSource {
            path: p.into(),
            ..Default::default()
        })?;
        // Roo Code stores other providers' reasoning as content blocks of
        // its own and converts them before it sends.
        let stored_reasoning = |kind: &str| kept.is_store && kind == "a `reasoning` block";
        for (source, kind) in read.unknown.iter().filter(|(_, k)| !stored_reasoning(k)) {
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
        conv.push_read(
            Message {
                role,
                content: read.blocks,
                finish_reason,
            },
            BlockSource {
                path: path.into(),
                ..Default::default()
            },
            read.sources,
            read.hosted,
        );
    }
    if kept.is_store {
        close_interrupted_tail(&mut conv);
    }
    Ok(conv)
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
    is_store: bool,
    condensed: ahash::AHashSet<String>,
    truncated: ahash::AHashSet<String>,
}

impl TaskStore {
    fn of(items: &[Value]) -> TaskStore {
        let is_store = items
            .iter()
            .any(|m| m.get("ts").is_some_and(Value::is_number));
        let ids = |key: &str, marker: Option<&str>| -> ahash::AHashSet<String> {
            if !is_store {
                return Default::default();
            }
            items
                .iter()
                .filter(|m| marker.is_none_or(|k| m.get(k) == Some(&Value::Bool(true))))
                .filter_map(|m| m.get(key)?.as_str().map(str::to_string))
                .collect()
        };
        TaskStore {
            is_store,
            condensed: ids("condenseId", None),
            truncated: ids("truncationId", Some("isTruncationMarker")),
        }
    }

    /// Whether the extension sends this entry.
    fn sends(&self, item: &Value) -> bool {
        if !self.is_store {
            return true;
        }
        let named = |key: &str, set: &ahash::AHashSet<String>| {
            item.get(key)
                .and_then(Value::as_str)
                .is_some_and(|id| set.contains(id))
        };
        let reasoning_item = item.get("role").is_none()
            && item.get("type").and_then(Value::as_str) == Some("reasoning");
        !reasoning_item
            && !named("condenseParent", &self.condensed)
            && !named("truncationParent", &self.truncated)
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
    conv.notices.push(super::Notice {
        kind: crate::finding::Kind::UnansweredCall,
        source,
        ids: missing.clone(),
        message: format!(
            "the task's history stops after calls that have no results ({}): Cline and Roo Code resume it by sending {TASK_INTERRUPTED:?} as each one's result, so the provider never sees them open, but the model gets no real result for them",
            missing.join(", ")
        ),
    });
}

/// MCP connector servers declare tools the request does not list.
fn read_mcp_servers(doc: &Value, conv: &mut Conversation) {
    if let Some(Value::Array(servers)) = doc.get("mcp_servers")
        && !servers.is_empty()
    {
        conv.open_tools = true;
    }
}

/// One message's content, read.
#[derive(Debug, Clone, Default)]
pub(super) struct Blocks {
    pub blocks: Vec<Block>,
    pub sources: Vec<BlockSource>,
    /// Hosted blocks, with `message` still to be set by the caller.
    pub hosted: Vec<Hosted>,
    /// Blocks of a kind the Messages API does not define: where, and the
    /// kind as written (`toolUse` for a Bedrock block, say).
    pub unknown: Vec<(BlockSource, String)>,
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

/// Reads one Anthropic message's content into blocks.
pub(super) fn blocks(
    content: Option<&mut Value>,
    path: &JsonPath,
    detail: Detail,
    mut source: impl FnMut(JsonPath) -> BlockSource,
) -> Result<Blocks, ReadError> {
    let mut read = Blocks {
        blocks: Vec::new(),
        sources: Vec::new(),
        hosted: Vec::new(),
        unknown: Vec::new(),
    };
    match content {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            read.blocks.push(Block::Text {
                text: kept_text(s, detail),
            });
            read.sources.push(source(super::dotted(path, "content")));
        }
        Some(Value::Array(items)) => {
            for (k, b) in items.iter_mut().enumerate() {
                let bpath = super::indexed(path, "content", k);
                let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
                let block = match kind {
                    "text" => Block::Text {
                        text: kept_text(
                            b.get("text").and_then(Value::as_str).unwrap_or(""),
                            detail,
                        ),
                    },
                    "tool_use" => {
                        // Called from code the server runs: that call waits.
                        if let Some(server) = b
                            .get("caller")
                            .and_then(|c| c.get("tool_id"))
                            .and_then(Value::as_str)
                        {
                            read.hosted.push(Hosted {
                                role: HostedRole::Awaits,
                                id: server.to_string(),
                                block: kind.to_string(),
                                name: str_field(b, "name", &bpath)?.to_string(),
                                message: 0,
                                position: k,
                                source: source(bpath.clone()),
                            });
                        }
                        Block::ToolUse {
                            id: str_field(b, "id", &bpath)?.into(),
                            name: str_field(b, "name", &bpath)?.into(),
                            input: Json::new(take(b, "input")),
                        }
                    }
                    "tool_result" => Block::ToolResult {
                        tool_use_id: str_field(b, "tool_use_id", &bpath)?.into(),
                        content: Json::new(take(b, "content")),
                        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                    },
                    "server_tool_use" | "mcp_tool_use" => {
                        read.hosted.push(Hosted {
                            role: HostedRole::Call,
                            id: str_field(b, "id", &bpath)?.to_string(),
                            block: kind.to_string(),
                            name: str_field(b, "name", &bpath)?.to_string(),
                            message: 0,
                            position: k,
                            source: source(bpath),
                        });
                        continue;
                    }
                    // Every server tool's result block: web_search_tool_result,
                    // code_execution_tool_result, tool_search_tool_result, …
                    result if result.ends_with("_tool_result") => {
                        read.hosted.push(Hosted {
                            role: HostedRole::Result,
                            id: str_field(b, "tool_use_id", &bpath)?.to_string(),
                            block: kind.to_string(),
                            name: kind.to_string(),
                            message: 0,
                            position: k,
                            source: source(bpath),
                        });
                        continue;
                    }
                    // Images, thinking and the like carry no pairing.
                    other if OTHER_BLOCKS.contains(&other) => continue,
                    "" => {
                        let kind = b
                            .as_object()
                            .and_then(|o| o.keys().next().cloned())
                            .map_or("an empty block".to_string(), |k| {
                                format!("a block with no `type` (`{k}`)")
                            });
                        read.unknown.push((source(bpath), kind));
                        continue;
                    }
                    other => {
                        read.unknown
                            .push((source(bpath), format!("a `{other}` block")));
                        continue;
                    }
                };
                read.blocks.push(block);
                read.sources.push(source(bpath));
            }
        }
        Some(_) => {
            return Err(err(
                &super::dotted(path, "content"),
                "expected a string or an array of blocks",
            ));
        }
    }
    Ok(read)
}
