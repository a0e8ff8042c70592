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
use crate::provider::Format;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    read_tools(doc, &mut conv);
    read_mcp_servers(doc, &mut conv);
    conv.system = system_text(doc.get("system"));
    conv.thinking = matches!(
        doc.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    );
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = super::indexed(&base, "", i);
        let first_type = item
            .pointer("/content/0/type")
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
        for (source, kind) in &read.unknown {
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
    Ok(conv)
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
