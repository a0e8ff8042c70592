//! Anthropic Messages request bodies (or a bare `messages` array): one
//! message per element, tool_use and tool_result as content blocks. The
//! block reader is shared with the Claude Code log, whose events carry
//! Anthropic messages.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source, err, finish_reason_of, str_field, take};
use crate::engine::message::{Block, Message, Role};
use crate::engine::session::Json;
use crate::wire::provider::Format;

use super::{array_at, read_tools, role_of, system_text};

pub(super) fn read(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    read_tools(doc, &mut conv);
    conv.system = system_text(doc.get("system"));
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("{base}[{i}]");
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
        let (content, sources) = blocks(item.get_mut("content"), &path, |p| BlockSource {
            path: p,
            ..Default::default()
        })?;
        conv.push(
            Message {
                role,
                content,
                finish_reason,
            },
            BlockSource {
                path,
                ..Default::default()
            },
            sources,
        );
    }
    Ok(conv)
}

/// Reads one Anthropic message's content into blocks.
pub(super) fn blocks(
    content: Option<&mut Value>,
    path: &str,
    mut source: impl FnMut(String) -> BlockSource,
) -> Result<(Vec<Block>, Vec<BlockSource>), ReadError> {
    let mut blocks = Vec::new();
    let mut sources = Vec::new();
    match content {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            blocks.push(Block::Text {
                text: s.as_str().into(),
            });
            sources.push(source(format!("{path}.content")));
        }
        Some(Value::Array(items)) => {
            for (k, b) in items.iter_mut().enumerate() {
                let bpath = format!("{path}.content[{k}]");
                let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
                let block = match kind {
                    "text" => Block::Text {
                        text: b.get("text").and_then(Value::as_str).unwrap_or("").into(),
                    },
                    "tool_use" | "server_tool_use" => Block::ToolUse {
                        id: str_field(b, "id", &bpath)?.into(),
                        name: str_field(b, "name", &bpath)?.into(),
                        input: Json::new(take(b, "input")),
                    },
                    "tool_result" => Block::ToolResult {
                        tool_use_id: str_field(b, "tool_use_id", &bpath)?.into(),
                        content: Json::new(take(b, "content")),
                        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                    },
                    // Images, thinking and the like carry no pairing.
                    _ => continue,
                };
                blocks.push(block);
                sources.push(source(bpath));
            }
        }
        Some(_) => {
            return Err(err(
                format!("{path}.content"),
                "expected a string or an array of blocks",
            ));
        }
    }
    Ok((blocks, sources))
}
