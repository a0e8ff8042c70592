//! OpenAI Chat Completions: `tool_calls` with `arguments` as a JSON string,
//! one `role: "tool"` message per `tool_call_id`.

use serde_json::{Value, json};

use super::{ViewItem, content_string};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Session;

fn message_json(m: &Message) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": m.text().unwrap_or_default()}),
        Role::Assistant => {
            let calls: Vec<Value> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => Some(json!({
                        "id": &**id,
                        "type": "function",
                        "function": {"name": &**name, "arguments": serde_json::to_string(&**input).unwrap_or_default()},
                    })),
                    _ => None,
                })
                .collect();
            let mut v = json!({"role": "assistant", "content": m.text()});
            if !calls.is_empty() {
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        Role::Tool => {
            let (id, content) = m
                .content
                .iter()
                .find_map(|b| match b {
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => Some((tool_use_id.to_string(), content_string(content))),
                    _ => None,
                })
                .unwrap_or_default();
            json!({"role": "tool", "tool_call_id": id, "content": content})
        }
    }
}

/// The response body of one reply, as Chat Completions returns it.
pub fn response_body(message: &Message) -> Value {
    json!({
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": message_json(message),
            "finish_reason": message.finish_reason.map(|f| f.as_str()),
        }],
    })
}

/// Renders the history as Chat Completions `messages` (without the system
/// message, which [`request_body`] adds).
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    history
        .iter()
        .enumerate()
        .map(|(i, m)| ViewItem {
            json: message_json(m),
            role: m.role.as_str().to_string(),
            from: i..i + 1,
        })
        .collect()
}

/// The Chat Completions request body for `history`.
pub fn request_body(session: &Session, history: &[Message], model: &str) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &session.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(render(history).into_iter().map(|v| v.json));
    let mut body = json!({"model": model, "messages": messages});
    if !session.tools.is_empty() {
        body["tools"] = session
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    body
}
