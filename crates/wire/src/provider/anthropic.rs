//! Anthropic Messages: `tool_use` blocks in the assistant message, all of a
//! turn's `tool_result` blocks at the start of the next user message.

use serde_json::{Value, json};

use super::{ViewItem, content_string};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{FinishReason, Session};

/// `stop_reason` for a finish reason.
pub fn stop_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "end_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::Length => "max_tokens",
        FinishReason::ContentFilter => "refusal",
    }
}

fn block_json(block: &Block) -> Option<Value> {
    Some(match block {
        // Anthropic rejects empty text blocks; an empty reply text is omitted.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({"type": "text", "text": &**text}),
        Block::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": &**id, "name": &**name, "input": &**input})
        }
        Block::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut b = json!({"type": "tool_result", "tool_use_id": &**tool_use_id, "content": content_string(content)});
            if *is_error {
                b["is_error"] = json!(true);
            }
            b
        }
    })
}

/// Renders the history as Messages API `messages`.
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    let mut out: Vec<ViewItem> = Vec::new();
    for (i, m) in history.iter().enumerate() {
        let role = match m.role {
            Role::Assistant => "assistant",
            // Tool results travel in user messages.
            Role::User | Role::Tool => "user",
        };
        let blocks: Vec<Value> = m.content.iter().filter_map(block_json).collect();
        // Results of one turn, and any text after them, share one user message.
        if let Some(last) = out.last_mut()
            && m.role == Role::Tool
            && history[last.from.end - 1].role == Role::Tool
        {
            if let Some(arr) = last.json["content"].as_array_mut() {
                arr.extend(blocks);
            }
            last.from.end = i + 1;
            continue;
        }
        let content = match (m.role, m.content.as_slice()) {
            (Role::User, [Block::Text { text }]) => json!(&**text),
            _ => Value::Array(blocks),
        };
        out.push(ViewItem {
            json: json!({"role": role, "content": content}),
            role: role.to_string(),
            from: i..i + 1,
        });
    }
    out
}

/// The Messages API request body for `history`.
pub fn request_body(session: &Session, history: &[Message], model: &str) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": 1024,
        "messages": render(history).into_iter().map(|v| v.json).collect::<Vec<_>>(),
    });
    if let Some(system) = &session.system {
        body["system"] = json!(system);
    }
    if !session.tools.is_empty() {
        body["tools"] = session
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

/// The response body of one reply, as the Messages API returns it.
pub fn response_body(message: &Message) -> Value {
    json!({
        "type": "message",
        "role": "assistant",
        "content": message.content.iter().filter_map(block_json).collect::<Vec<_>>(),
        "stop_reason": message.finish_reason.map(stop_reason),
    })
}
