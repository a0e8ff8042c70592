//! Amazon Bedrock Converse (`POST /model/{modelId}/converse` and
//! `/converse-stream`): `messages` of `user` / `assistant` turns made of
//! content blocks keyed by their kind, with no `type` field: a call is a
//! `{"toolUse": {toolUseId, name, input}}` block of an assistant turn, its
//! answer a `{"toolResult": {toolUseId, content: [{text}|{json}], status}}`
//! block of the next user turn, and every result of one turn travels in
//! that one user message (as on Anthropic). Tools are declared under
//! `toolConfig.tools[].toolSpec`, the system prompt as `system` blocks.

use serde_json::{Value, json};

use super::ViewItem;
use loopdbg_engine::message::{Block, Message};
use loopdbg_engine::session::{FinishReason, Session};

/// Converse's `stopReason` for a finish reason.
pub fn stop_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "end_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::Length => "max_tokens",
        FinishReason::ContentFilter => "content_filtered",
    }
}

/// A result's content as Converse carries it: a list of `text` or `json`
/// blocks (an object or array as `json`, anything else as text).
fn result_content(content: &Value) -> Value {
    match content {
        Value::String(s) => json!([{"text": s}]),
        Value::Object(_) | Value::Array(_) => json!([{"json": content}]),
        other => json!([{"text": other.to_string()}]),
    }
}

fn block_json(block: &Block) -> Option<Value> {
    Some(match block {
        // Converse rejects a blank text block, as Anthropic does.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({"text": &**text}),
        Block::ToolUse { id, name, input } => {
            json!({"toolUse": {"toolUseId": &**id, "name": &**name, "input": &**input}})
        }
        Block::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut result = json!({
                "toolUseId": &**tool_use_id,
                "content": result_content(content),
            });
            if *is_error {
                result["status"] = json!("error");
            }
            json!({"toolResult": result})
        }
    })
}

/// Renders the history as Converse `messages`: content is always a list
/// of blocks, and a turn's results share one user message.
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    super::grouped_turns(history, block_json, |_, blocks| Value::Array(blocks))
}

/// The Converse request body for `history` (the model is in the path).
pub fn request_body(session: &Session, history: &[Message]) -> Value {
    let mut body = json!({
        "messages": render(history).into_iter().map(|v| v.json).collect::<Vec<_>>(),
        "inferenceConfig": {"maxTokens": 1024},
    });
    if let Some(system) = &session.system {
        body["system"] = json!([{"text": system}]);
    }
    if !session.tools.is_empty() {
        let tools: Vec<Value> = session
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": {"json": t.parameters},
                }})
            })
            .collect();
        body["toolConfig"] = json!({ "tools": tools });
    }
    body
}

/// The Converse response body of one reply.
pub fn response_body(message: &Message) -> Value {
    json!({
        "output": {"message": {
            "role": "assistant",
            "content": message.content.iter().filter_map(block_json).collect::<Vec<_>>(),
        }},
        "stopReason": message.finish_reason.map(stop_reason),
    })
}
