//! OpenAI Responses request bodies: `input` as a plain string (one user
//! message) or a list of items. Calls the client runs pair with their
//! outputs by `call_id` (`function_call` / `function_call_output`,
//! `custom_tool_call` / `custom_tool_call_output`, `local_shell_call`,
//! `shell_call`, `apply_patch_call`, `computer_call`); items the server runs
//! and answers itself (`web_search_call`, `mcp_call`, `tool_search_call`, …)
//! and `reasoning` items are read and kept, with no pairing to check.
//!
//! A request that continues a stored response (`previous_response_id`) or
//! conversation (`conversation`), or that points at stored items
//! (`item_reference`), may answer calls it does not contain.

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde_json::Value;

use super::fingerprint::kept_text;
use super::{
    BlockSource, Conversation, Detail, ReadError, Source, ToolSpec, array_at, err, parse_arguments,
    read_tools, role_of, str_field, take, text_of_parts,
};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

/// Client-run call items and the output item type that answers each.
pub const CALLS: &[(&str, &str)] = &[
    ("function_call", "function_call_output"),
    ("custom_tool_call", "custom_tool_call_output"),
    ("local_shell_call", "local_shell_call_output"),
    ("shell_call", "shell_call_output"),
    ("apply_patch_call", "apply_patch_call_output"),
    ("computer_call", "computer_call_output"),
];

/// True for an item type that asks the client to run something.
pub fn is_call(kind: &str) -> bool {
    CALLS.iter().any(|(c, _)| *c == kind)
}

/// True for an item type that answers a client-run call.
pub fn is_output(kind: &str) -> bool {
    CALLS.iter().any(|(_, o)| *o == kind)
}

/// The id an output item answers: `call_id`, or `id` for the older
/// `local_shell_call_output`.
pub fn answered_id(item: &Value) -> Option<&str> {
    item.get("call_id")
        .or_else(|| item.get("id"))
        .and_then(Value::as_str)
}

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    read_items(doc, detail, &|_, path| BlockSource {
        path: path.into(),
        ..Default::default()
    })
}

/// `read`, with where each input item came from: by default its path
/// (`input[i]`); a Codex rollout names the line of its log instead.
pub fn read_items(
    doc: &mut Value,
    detail: Detail,
    item_source: &dyn Fn(usize, &JsonPath) -> BlockSource,
) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Responses));
    read_tools(doc, &mut conv);
    // Tools loaded by tool search arrive as `additional_tools`.
    if let Some(Value::Array(extra)) = doc.get("additional_tools") {
        conv.tools.extend(extra.iter().filter_map(tool_spec));
    }
    conv.system = doc
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    conv.continues = ["previous_response_id", "conversation"]
        .iter()
        .find_map(|k| match doc.get(*k) {
            Some(Value::String(id)) => Some(format!("{k} {id}")),
            Some(Value::Object(o)) => o
                .get("id")
                .and_then(Value::as_str)
                .map(|id| format!("{k} {id}")),
            _ => None,
        });
    if let Some(Value::String(text)) = doc.get("input") {
        let src = BlockSource {
            path: "input".into(),
            ..Default::default()
        };
        conv.push(
            Message {
                role: Role::User,
                content: vec![Block::Text {
                    text: kept_text(text, detail),
                }],
                finish_reason: None,
            },
            src.clone(),
            vec![src],
        );
        return Ok(conv);
    }
    let (items, base) = array_at(doc, "input")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = super::indexed(&base, "", i);
        let src = item_source(i, &path);
        // A bare `{"id": "fc_…"}` (no `type`, no `role`) is a reference to
        // a stored item, as `item_reference` is: OpenAI answers it.
        let bare_reference = item.get("type").is_none()
            && item.get("role").is_none()
            && item.get("id").and_then(Value::as_str).is_some();
        let kind = match bare_reference {
            true => "item_reference".to_string(),
            false => item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message")
                .to_string(),
        };
        match kind.as_str() {
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
                        content: vec![Block::Text {
                            text: kept_text(&text, detail),
                        }],
                        finish_reason: None,
                    },
                    src.clone(),
                    vec![src],
                );
            }
            "item_reference" => {
                conv.continues.get_or_insert_with(|| {
                    let id = item.get("id").and_then(Value::as_str).unwrap_or("?");
                    format!("item_reference {id}")
                });
            }
            call if is_call(call) => read_call(&mut conv, item, call, &path, src)?,
            // A tool search the client runs (`execution: "client"`) is a
            // call like a function's: it waits for an output with its
            // `call_id` (a `tool_search_output`, or a `function_call_output`,
            // which OpenAI also takes). One the server runs pairs with
            // nothing here.
            "tool_search_call" if is_client(item) && item.get("call_id").is_some() => {
                read_call(&mut conv, item, "tool_search_call", &path, src)?;
            }
            output if is_output(output) => {
                let id = answered_id(item)
                    .ok_or_else(|| err(&path, "expected a string `call_id`"))?
                    .to_string();
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
            "tool_search_output" => {
                // Tools found by a search become callable.
                if let Some(Value::Array(found)) = item.get("tools") {
                    conv.tools.extend(found.iter().filter_map(tool_spec));
                }
                if is_client(item)
                    && let Some(id) = item.get("call_id").and_then(Value::as_str)
                {
                    let answer = item.get("tools").cloned().unwrap_or(Value::Null);
                    conv.push(
                        Message {
                            role: Role::Tool,
                            content: vec![Block::ToolResult {
                                tool_use_id: id.into(),
                                content: Json::new(answer),
                                is_error: false,
                            }],
                            finish_reason: None,
                        },
                        src.clone(),
                        vec![src],
                    );
                }
            }
            // Reasoning, and items the server ran and answered itself
            // (web_search_call, file_search_call, mcp_call, tool_search_call,
            // code_interpreter_call, image_generation_call, …): nothing to pair.
            _ => {}
        }
    }
    Ok(conv)
}

/// A call item (`function_call`, `custom_tool_call`, or a built-in tool
/// run by the client such as `computer_call`): a tool_use block joining the
/// assistant message before it.
fn read_call(
    conv: &mut Conversation,
    item: &mut Value,
    call: &str,
    path: &JsonPath,
    src: BlockSource,
) -> Result<(), ReadError> {
    let id = str_field(item, "call_id", path)?.to_string();
    let name = match call {
        "function_call" | "custom_tool_call" => str_field(item, "name", path)?.to_string(),
        "tool_search_call" => "tool_search".to_string(),
        other => other.trim_end_matches("_call").to_string(),
    };
    let input = match call {
        "function_call" => parse_arguments(item.get("arguments"), &id, &src, &mut conv.notes),
        "custom_tool_call" => Json::new(take(item, "input")),
        "tool_search_call" => Json::new(take(item, "arguments")),
        _ => Json::new(take(item, "action")),
    };
    let block = Block::ToolUse {
        id: id.as_str().into(),
        name: name.into(),
        input,
    };
    if call != "function_call" {
        conv.call_types.push((id, call.to_string()));
    }
    // Calls of one turn join the assistant message before them.
    conv.push_joining(Role::Assistant, block, src);
    Ok(())
}

/// Whether a tool search item is one the client runs.
fn is_client(item: &Value) -> bool {
    item.get("execution").and_then(Value::as_str) == Some("client")
}

fn tool_spec(t: &Value) -> Option<ToolSpec> {
    let f = t.get("function").unwrap_or(t);
    let name = f.get("name").and_then(Value::as_str)?;
    Some(ToolSpec {
        name: name.to_string(),
        schema: f.get("parameters").cloned(),
        description: f
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}
