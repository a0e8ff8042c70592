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

/// Renders the history as Messages API `messages`: a turn's results, and
/// any text after them, share one user message; a user message of one text
/// is a string.
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    super::grouped_turns(history, block_json, |m, blocks| {
        match (m.role, m.content.as_slice()) {
            (Role::User, [Block::Text { text }]) => json!(&**text),
            _ => Value::Array(blocks),
        }
    })
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
