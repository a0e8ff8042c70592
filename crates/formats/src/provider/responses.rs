//! OpenAI Responses: `input` items; a call is a `function_call` item and its
//! result a `function_call_output` item, paired by `call_id`.

use serde_json::{Value, json};

use super::{ViewItem, content_string};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Session;

/// Renders the history as Responses `input` items.
pub fn render(history: &[Message]) -> Vec<ViewItem> {
    let mut out = Vec::new();
    for (i, m) in history.iter().enumerate() {
        let from = i..i + 1;
        match m.role {
            Role::User => out.push(ViewItem {
                json: json!({"role": "user", "content": m.text().unwrap_or_default()}),
                role: "user".into(),
                from,
            }),
            Role::Assistant => {
                if let Some(text) = m.text().filter(|t| !t.is_empty()) {
                    out.push(ViewItem {
                        json: json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
                        role: "assistant".into(),
                        from: from.clone(),
                    });
                }
                for b in &m.content {
                    if let Block::ToolUse { id, name, input } = b {
                        out.push(ViewItem {
                            json: json!({"type": "function_call", "call_id": &**id, "name": &**name, "arguments": serde_json::to_string(&**input).unwrap_or_default()}),
                            role: "function_call".into(),
                            from: from.clone(),
                        });
                    }
                }
            }
            Role::Tool => {
                for b in &m.content {
                    if let Block::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                    {
                        out.push(ViewItem {
                            json: json!({"type": "function_call_output", "call_id": &**tool_use_id, "output": content_string(content)}),
                            role: "function_call_output".into(),
                            from: from.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The Responses request body for `history`.
pub fn request_body(session: &Session, history: &[Message], model: &str) -> Value {
    let mut body = json!({
        "model": model,
        "input": render(history).into_iter().map(|v| v.json).collect::<Vec<_>>(),
    });
    if let Some(system) = &session.system {
        body["instructions"] = json!(system);
    }
    if !session.tools.is_empty() {
        body["tools"] = session
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
    }
    body
}
