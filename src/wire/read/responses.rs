//! OpenAI Responses request bodies: an `input` list of items, where
//! `function_call` and `function_call_output` pair by `call_id`.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source, err, str_field, take};
use crate::engine::message::{Block, Message, Role};
use crate::engine::session::Json;
use crate::wire::provider::Format;

use super::{array_at, parse_arguments, read_tools, role_of, text_of_parts};

pub(super) fn read(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Responses));
    read_tools(doc, &mut conv);
    conv.system = doc
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (items, base) = array_at(doc, "input")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("{base}[{i}]");
        let src = BlockSource {
            path: path.clone(),
            ..Default::default()
        };
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = role_of(item, &path)?;
                let text = text_of_parts(item.get("content")).unwrap_or_default();
                let role = match role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "system" | "developer" => {
                        conv.system = Some(text);
                        continue;
                    }
                    other => return Err(err(&path, format!("unknown role `{other}`"))),
                };
                conv.push(
                    Message {
                        role,
                        content: vec![Block::Text { text: text.into() }],
                        finish_reason: None,
                    },
                    src.clone(),
                    vec![src],
                );
            }
            "function_call" => {
                let id = str_field(item, "call_id", &path)?;
                let name = str_field(item, "name", &path)?;
                let input = parse_arguments(item.get("arguments"), id, &src, &mut conv.notes);
                let block = Block::ToolUse {
                    id: id.into(),
                    name: name.into(),
                    input,
                };
                // Calls of one turn join the assistant message before them.
                match conv.messages.last_mut() {
                    Some(last) if last.role == Role::Assistant => {
                        last.content.push(block);
                        conv.block_sources.last_mut().expect("parallel").push(src);
                    }
                    _ => conv.push(
                        Message {
                            role: Role::Assistant,
                            content: vec![block],
                            finish_reason: None,
                        },
                        src.clone(),
                        vec![src],
                    ),
                }
            }
            "function_call_output" => {
                let id = str_field(item, "call_id", &path)?;
                conv.push(
                    Message {
                        role: Role::Tool,
                        content: vec![Block::ToolResult {
                            tool_use_id: id.into(),
                            content: Json::new(take(item, "output")),
                            is_error: false,
                        }],
                        finish_reason: None,
                    },
                    src.clone(),
                    vec![src],
                );
            }
            // Reasoning items and the like carry no pairing.
            _ => {}
        }
    }
    Ok(conv)
}
