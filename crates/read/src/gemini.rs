//! Gemini API `generateContent` request bodies (or a bare `contents`
//! array): `user` / `model` turns of parts. `functionCall` parts are the
//! model's calls and `functionResponse` parts their answers. Calls carry an
//! `id` on newer models; without one, a response answers the first call of
//! the previous turn with its `name` that is still open, and both get the
//! id `name#turn.part` so the rest of loopdbg can pair them.

use serde_json::Value;

use super::fingerprint::kept_text;
use super::{BlockSource, Conversation, Detail, ReadError, Source, ToolSpec, array_at, err, take};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{FinishReason, Json};
use loopdbg_formats::provider::Format;

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Gemini));
    if let Some(Value::Array(tools)) = doc.get("tools") {
        for group in tools {
            let declared = group
                .get("functionDeclarations")
                .or_else(|| group.get("function_declarations"));
            for f in declared.and_then(Value::as_array).into_iter().flatten() {
                if let Some(name) = f.get("name").and_then(Value::as_str) {
                    conv.tools.push(ToolSpec {
                        name: name.to_string(),
                        schema: f
                            .get("parametersJsonSchema")
                            .or_else(|| f.get("parameters"))
                            .cloned(),
                        description: f
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    });
                }
            }
        }
    }
    conv.system = doc
        .get("systemInstruction")
        .or_else(|| doc.get("system_instruction"))
        .and_then(|s| super::joined_text(s.get("parts"), "\n"));
    conv.model = doc.get("model").and_then(Value::as_str).map(str::to_string);
    // Gemini takes one content given as an object for a list of one too.
    if let Some(one) = doc.get_mut("contents").filter(|c| c.is_object()) {
        let content = one.take();
        *one = Value::Array(vec![content]);
    }
    let (items, base) = array_at(doc, "contents")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = base.index(i);
        let role = match item.get("role").and_then(Value::as_str).unwrap_or("user") {
            "model" => Role::Assistant,
            "user" | "function" | "tool" => Role::User,
            other => {
                return Err(err(
                    &path,
                    format!("unknown role `{other}` for Gemini (expected user or model)"),
                ));
            }
        };
        // Gemini takes one part given as an object for a list of one.
        if let Some(part) = item.get_mut("parts").filter(|p| p.is_object()) {
            let one = part.take();
            *part = Value::Array(vec![one]);
        }
        let Some(Value::Array(parts)) = item.get_mut("parts") else {
            return Err(err(&path, "expected a `parts` array"));
        };
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let mut first_call = true;
        for (k, part) in parts.iter_mut().enumerate() {
            let ppath = super::indexed(&path, "parts", k);
            let src = BlockSource {
                path: (&ppath).into(),
                ..Default::default()
            };
            let signed = part
                .get("thoughtSignature")
                .or_else(|| part.get("thought_signature"))
                .is_some();
            conv.signatures += usize::from(signed);
            if let Some(call) = part.get_mut("functionCall") {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(&ppath, "expected a string `functionCall.name`"))?
                    .to_string();
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("{name}#{i}.{k}"), str::to_string);
                if first_call && !signed {
                    conv.unsigned.push(id.clone());
                }
                first_call = false;
                content.push(Block::ToolUse {
                    id: id.into(),
                    name: name.into(),
                    input: Json::new(take(call, "args")),
                });
                sources.push(src);
            } else if let Some(response) = part.get_mut("functionResponse") {
                let name = response
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let id = match response.get("id").and_then(Value::as_str) {
                    Some(id) => id.to_string(),
                    None => open_call(&conv, &content, &name).unwrap_or(format!("{name}#?")),
                };
                let answer = take(response, "response");
                let is_error = answer.get("error").is_some() && answer.get("result").is_none();
                content.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(answer),
                    is_error,
                });
                sources.push(src);
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                content.push(Block::Text {
                    text: kept_text(text, detail),
                });
                sources.push(src);
            }
        }
        let finish_reason = match item.get("finishReason").and_then(Value::as_str) {
            Some("STOP") => Some(FinishReason::Stop),
            Some("MAX_TOKENS") => Some(FinishReason::Length),
            Some("SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII") => {
                Some(FinishReason::ContentFilter)
            }
            _ => None,
        };
        conv.push(
            Message {
                role,
                content,
                finish_reason,
            },
            BlockSource {
                path: path.into(),
                ..Default::default()
            },
            sources,
        );
    }
    Ok(conv)
}

/// The id of the first call named `name` in the previous model turn that
/// no response (already read, or earlier in `reading`) answers.
pub(super) fn open_call(conv: &Conversation, reading: &[Block], name: &str) -> Option<String> {
    let previous = conv.messages.last().filter(|m| m.role == Role::Assistant)?;
    let answered: Vec<&str> = reading
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => Some(&**tool_use_id),
            _ => None,
        })
        .collect();
    previous.content.iter().find_map(|b| match b {
        Block::ToolUse { id, name: n, .. } if &**n == name && !answered.contains(&&**id) => {
            Some(id.to_string())
        }
        _ => None,
    })
}
