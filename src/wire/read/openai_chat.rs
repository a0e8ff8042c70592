//! OpenAI Chat Completions request bodies (or a bare `messages` array):
//! `tool_calls` on assistant messages, one `tool` message per result, with
//! arguments as a JSON string.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source, err, finish_reason_of, str_field, take};
use crate::engine::message::{Block, Message, Role};
use crate::engine::session::Json;
use crate::wire::provider::Format;

use super::{array_at, parse_arguments, read_tools, role_of, text_of_parts};

pub(super) fn read(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    read_tools(doc, &mut conv);
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = super::indexed(&base, "", i);
        let src = |p: String| BlockSource {
            path: p.into(),
            ..Default::default()
        };
        let role = role_of(item, &path)?;
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let role = match role.as_str() {
            "system" | "developer" => {
                conv.system = text_of_parts(item.get("content"));
                continue;
            }
            "user" => {
                content.push(Block::Text {
                    text: text_of_parts(item.get("content"))
                        .unwrap_or_default()
                        .into(),
                });
                sources.push(src(super::dotted(&path, "content")));
                Role::User
            }
            "assistant" => {
                if let Some(text) = text_of_parts(item.get("content")) {
                    content.push(Block::Text { text: text.into() });
                    sources.push(src(super::dotted(&path, "content")));
                }
                if let Some(Value::Array(calls)) = item.get("tool_calls") {
                    for (k, c) in calls.iter().enumerate() {
                        let cpath = super::indexed(&path, "tool_calls", k);
                        let id = str_field(c, "id", &cpath)?;
                        let f = c
                            .get("function")
                            .ok_or_else(|| err(&cpath, "expected a `function` object"))?;
                        let name = str_field(f, "name", &format!("{cpath}.function"))?;
                        let source = src(cpath.clone());
                        let input =
                            parse_arguments(f.get("arguments"), id, &source, &mut conv.notes);
                        content.push(Block::ToolUse {
                            id: id.into(),
                            name: name.into(),
                            input,
                        });
                        sources.push(source);
                    }
                }
                Role::Assistant
            }
            "tool" => {
                let id = str_field(item, "tool_call_id", &path)?;
                content.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(take(item, "content")),
                    is_error: false,
                });
                sources.push(src(path.clone()));
                Role::Tool
            }
            other => {
                return Err(err(
                    &path,
                    format!(
                        "unknown role `{other}` for OpenAI Chat (expected system, developer, user, assistant or tool)"
                    ),
                ));
            }
        };
        let finish_reason = finish_reason_of(item.get("finish_reason"));
        conv.push(
            Message {
                role,
                content,
                finish_reason,
            },
            src(path),
            sources,
        );
    }
    Ok(conv)
}
