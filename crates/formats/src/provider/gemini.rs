//! Gemini API `generateContent`: `contents` of `user` / `model` turns made
//! of parts. A call is a `functionCall` part of a model turn; its answer is
//! a `functionResponse` part, and all the responses to one turn's calls
//! travel together in the next user turn. `response` must be an object, so
//! a string result is wrapped as `{"result": …}` (or `{"error": …}`).

use serde_json::{Value, json};

use super::ViewItem;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{FinishReason, Session};

/// Gemini's `finishReason` for a finish reason.
pub fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP",
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
    }
}

/// The name of the call `id` answers, looked up in the history before it.
fn call_name<'a>(history: &'a [Message], before: usize, id: &str) -> &'a str {
    history[..before]
        .iter()
        .rev()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            Block::ToolUse { id: call, name, .. } if &**call == id => Some(&**name),
            _ => None,
        })
        .unwrap_or("unknown")
}

fn part_json(history: &[Message], at: usize, block: &Block) -> Option<Value> {
    Some(match block {
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({"text": &**text}),
        Block::ToolUse { id, name, input } => {
            json!({"functionCall": {"id": &**id, "name": &**name, "args": &**input}})
        }
        Block::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let response = match (&**content, is_error) {
                (Value::Object(_), false) => (**content).clone(),
                (other, false) => json!({"result": other}),
                (other, true) => json!({"error": other}),
            };
            json!({"functionResponse": {
                "id": &**tool_use_id,
                "name": call_name(history, at, tool_use_id),
                "response": response,
            }})
        }
    })
}

/// Renders the history as `contents`.
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    let mut out: Vec<ViewItem> = Vec::new();
    for (i, m) in history.iter().enumerate() {
        let role = if m.role == Role::Assistant {
            "model"
        } else {
            "user"
        };
        let parts: Vec<Value> = m
            .content
            .iter()
            .filter_map(|b| part_json(history, i, b))
            .collect();
        // The responses to one turn's calls share one user turn.
        if let Some(last) = out.last_mut()
            && m.role == Role::Tool
            && history[last.from.end - 1].role == Role::Tool
        {
            if let Some(arr) = last.json["parts"].as_array_mut() {
                arr.extend(parts);
            }
            last.from.end = i + 1;
            continue;
        }
        out.push(ViewItem {
            json: json!({"role": role, "parts": parts}),
            role: role.to_string(),
            from: i..i + 1,
        });
    }
    out
}

/// The `generateContent` request body for `history` (the model is named in
/// the URL, not the body).
pub fn request_body(session: &Session, history: &[Message]) -> Value {
    let mut body = json!({
        "contents": render(history).into_iter().map(|v| v.json).collect::<Vec<_>>(),
    });
    if let Some(system) = &session.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !session.tools.is_empty() {
        let declarations: Vec<Value> = session
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
    }
    body
}

/// The response body of one reply, as `generateContent` returns it.
pub fn response_body(history: &[Message], message: &Message) -> Value {
    let at = history.len();
    json!({
        "candidates": [{
            "content": {
                "role": "model",
                "parts": message.content.iter().filter_map(|b| part_json(history, at, b)).collect::<Vec<_>>(),
            },
            "finishReason": message.finish_reason.map(finish_reason),
        }],
    })
}
