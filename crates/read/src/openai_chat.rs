//! OpenAI Chat Completions request bodies (or a bare `messages` array):
//! `tool_calls` on assistant messages, one `tool` message per result, with
//! arguments as a JSON string. A call is a `function` or a `custom` tool
//! (free-form `input`). The API's older spelling is read too: one
//! `function_call` on the assistant message, answered by a `function`
//! message naming it, with no ids at all.

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source, err, finish_reason_of, str_field, take};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

use super::fingerprint::kept_text;
use super::{Detail, array_at, parse_arguments, read_tools, role_of, text_of_parts};

/// The call-type name of a legacy `function_call` (see `Conversation::call_types`).
pub const LEGACY_FUNCTION_CALL: &str = "legacy_function_call";

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    read_tools(doc, &mut conv);
    // Legacy calls carry no id: each is named by where it stands, and a
    // `function` message answers the latest unanswered call of its name.
    let mut open_legacy: Vec<(String, String)> = Vec::new();
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = super::indexed(&base, "", i);
        let src = |p: JsonPath| BlockSource {
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
                    text: kept_text(
                        &text_of_parts(item.get("content")).unwrap_or_default(),
                        detail,
                    ),
                });
                sources.push(src(super::dotted(&path, "content")));
                Role::User
            }
            "assistant" => {
                if let Some(text) = text_of_parts(item.get("content")) {
                    content.push(Block::Text {
                        text: kept_text(&text, detail),
                    });
                    sources.push(src(super::dotted(&path, "content")));
                }
                if let Some(Value::Array(calls)) = item.get("tool_calls") {
                    for (k, c) in calls.iter().enumerate() {
                        let cpath = super::indexed(&path, "tool_calls", k);
                        let id = str_field(c, "id", &cpath)?;
                        let source = src(cpath.clone());
                        let (name, input) = if let Some(f) = c.get("function") {
                            let name = str_field(f, "name", &cpath.key("function"))?;
                            let input =
                                parse_arguments(f.get("arguments"), id, &source, &mut conv.notes);
                            (name, input)
                        } else if let Some(custom) = c.get("custom") {
                            // A custom tool's input is free text, not JSON.
                            let name = str_field(custom, "name", &cpath.key("custom"))?;
                            conv.call_types
                                .push((id.to_string(), "custom_tool_call".to_string()));
                            let input = custom.get("input").cloned().unwrap_or(Value::Null);
                            (name, Json::new(input))
                        } else {
                            return Err(err(&cpath, "expected a `function` or `custom` object"));
                        };
                        content.push(Block::ToolUse {
                            id: id.into(),
                            name: name.into(),
                            input,
                        });
                        sources.push(source);
                    }
                }
                if let Some(f) = item.get("function_call").filter(|f| f.is_object()) {
                    let cpath = super::dotted(&path, "function_call");
                    let name = str_field(f, "name", &cpath)?;
                    let id = format!("{name}@{path}");
                    let source = src(cpath.clone());
                    let input = parse_arguments(f.get("arguments"), &id, &source, &mut conv.notes);
                    conv.call_types
                        .push((id.clone(), LEGACY_FUNCTION_CALL.to_string()));
                    open_legacy.push((name.to_string(), id.clone()));
                    content.push(Block::ToolUse {
                        id: id.into(),
                        name: name.into(),
                        input,
                    });
                    sources.push(source);
                }
                Role::Assistant
            }
            kind @ ("tool" | "function") => {
                let id = match kind {
                    // OpenAI-compatible servers take a tool message whose
                    // `tool_call_id` is null and pair it by position: it
                    // answers the first call of the last assistant message
                    // that nothing has answered (said as a warning).
                    "tool" if item.get("tool_call_id").is_none_or(Value::is_null) => {
                        unnamed_result(&mut conv, src(super::dotted(&path, "tool_call_id")))
                    }
                    "tool" => str_field(item, "tool_call_id", &path)?.to_string(),
                    // A legacy result names its function; with no call of
                    // that name open it gets an id that answers nothing.
                    _ => {
                        let name = str_field(item, "name", &path)?;
                        match open_legacy.iter().rposition(|(n, _)| n == name) {
                            Some(at) => open_legacy.remove(at).1,
                            None => format!("{name}@?"),
                        }
                    }
                };
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
                        "unknown role `{other}` for OpenAI Chat (expected system, developer, user, assistant, tool or function)"
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

/// OpenAI-compatible servers take a tool message whose `tool_call_id` is
/// null and pair it by position: it answers the first call of the last
/// assistant message that nothing has answered (said as a warning).
fn unnamed_result(conv: &mut Conversation, source: BlockSource) -> String {
    let answered: Vec<String> = conv
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.to_string()),
            _ => None,
        })
        .collect();
    let open = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| {
            m.tool_uses()
                .map(|(id, _)| id.to_string())
                .find(|id| !answered.contains(id))
        });
    let id = open.unwrap_or_else(|| "(null)".to_string());
    conv.notices.push(super::Notice {
        kind: crate::finding::Kind::UnnamedResult,
        source,
        ids: vec![id.clone()],
        message: format!(
            "a `tool` message with `tool_call_id: null`, read as the result of {id} (the first call of the last assistant message nothing else answers): OpenAI-compatible servers pair it by position and accept it; anything keyed by id cannot"
        ),
    });
    id
}
