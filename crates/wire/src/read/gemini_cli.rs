//! Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.jsonl`,
//! and the older whole-file `session-*.json`): a metadata record, then
//! message records (`{id, timestamp, type, content, toolCalls}`) written as
//! an upsert log. A record whose `id` was seen replaces it in place (a
//! message is rewritten as its calls progress); `{"$rewindTo": id}` cuts the
//! history from that message on; `{"$set": {"messages": […]}}` replaces it.
//!
//! The folded history becomes what Gemini CLI sends on resume: each
//! `gemini` message is a model turn (its text and one `functionCall` per
//! tool call) followed by a user turn of the `functionResponse`s of the
//! calls that have a `result`. It is checked by Gemini's rules.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;

/// Folds a chat recording; [`GeminiCliLog::finish`] gives the conversation.
#[derive(Debug, Clone, Default)]
pub struct GeminiCliLog {
    /// Message records in order, with the line of their latest version.
    records: Vec<(String, usize, Value)>,
}

impl GeminiCliLog {
    /// Adds the record on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, mut record: Value) -> Result<(), ReadError> {
        if let Some(target) = record.get("$rewindTo") {
            let target = target.as_str().unwrap_or("");
            let cut = self
                .records
                .iter()
                .position(|(id, _, _)| id == target)
                .unwrap_or(0);
            self.records.truncate(cut);
            return Ok(());
        }
        if record.get("$set").is_none() && record.get("id").is_some() {
            self.upsert(line, record);
            return Ok(());
        }
        // A `$set` patch, or the metadata line (the legacy whole-file form
        // carries the messages there).
        let patch = match record.get_mut("$set") {
            Some(patch) => patch,
            None => &mut record,
        };
        if let Some(Value::Array(messages)) = patch.get_mut("messages") {
            let messages = std::mem::take(messages);
            self.records.clear();
            for m in messages {
                self.upsert(line, m);
            }
        }
        Ok(())
    }

    fn upsert(&mut self, line: usize, record: Value) {
        let Some(id) = record.get("id").and_then(Value::as_str).map(str::to_string) else {
            return;
        };
        match self.records.iter_mut().find(|(seen, _, _)| *seen == id) {
            Some(slot) => *slot = (id, line, record),
            None => self.records.push((id, line, record)),
        }
    }

    /// The conversation the folded history sends.
    pub fn finish(self) -> Vec<Conversation> {
        let mut conv = Conversation::new(Source::GeminiCli);
        for (id, line, record) in self.records {
            let src = |path: String| BlockSource {
                path: path.into(),
                line: Some(line),
                uuid: Some(id.as_str().into()),
            };
            match record.get("type").and_then(Value::as_str) {
                Some("user") => {
                    let text = text_of(record.get("content"));
                    conv.push(
                        Message {
                            role: Role::User,
                            content: vec![Block::Text { text: text.into() }],
                            finish_reason: None,
                        },
                        src("message".into()),
                        vec![src("content".into())],
                    );
                }
                Some("gemini") => {
                    let mut content = Vec::new();
                    let mut sources = Vec::new();
                    let text = text_of(record.get("content"));
                    if !text.is_empty() {
                        content.push(Block::Text { text: text.into() });
                        sources.push(src("content".into()));
                    }
                    let calls = record
                        .get("toolCalls")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let mut results = Vec::new();
                    let mut result_sources = Vec::new();
                    for (k, call) in calls.iter().enumerate() {
                        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
                        let call_id = call
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("{name}#{k}"), str::to_string);
                        content.push(Block::ToolUse {
                            id: call_id.as_str().into(),
                            name: name.into(),
                            input: Json::new(call.get("args").cloned().unwrap_or(Value::Null)),
                        });
                        sources.push(src(format!("toolCalls[{k}]")));
                        if let Some(result) = call.get("result").filter(|r| !r.is_null()) {
                            let status = call.get("status").and_then(Value::as_str);
                            results.push(Block::ToolResult {
                                tool_use_id: call_id.into(),
                                content: Json::new(response_of(result)),
                                is_error: matches!(status, Some("error" | "cancelled")),
                            });
                            result_sources.push(src(format!("toolCalls[{k}].result")));
                        }
                    }
                    conv.push(
                        Message {
                            role: Role::Assistant,
                            content,
                            finish_reason: None,
                        },
                        src("message".into()),
                        sources,
                    );
                    if !results.is_empty() {
                        conv.push(
                            Message {
                                role: Role::User,
                                content: results,
                                finish_reason: None,
                            },
                            src("toolCalls".into()),
                            result_sources,
                        );
                    }
                }
                // An error the CLI wrote where the reply would be: the
                // request before it was refused.
                Some("error") => {
                    let text = text_of(record.get("content"));
                    conv.refusals.push(super::Refusal {
                        at: conv.messages.len(),
                        status: status_of(&text),
                        text,
                        source: src("message".into()),
                    });
                }
                // info and warning records are the CLI's own notes.
                _ => {}
            }
        }
        if conv.messages.is_empty() {
            Vec::new()
        } else {
            vec![conv]
        }
    }
}

/// The HTTP status an error text gives: Gemini's JSON `"code": 400`, its
/// status names, or a bare `[API Error: 400 …`.
fn status_of(text: &str) -> Option<u16> {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(at) = squeezed.find("\"code\":") {
        let digits: String = squeezed[at + 7..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(code) = digits.parse() {
            return Some(code);
        }
    }
    if text.contains("INVALID_ARGUMENT") {
        return Some(400);
    }
    if text.contains("RESOURCE_EXHAUSTED") {
        return Some(429);
    }
    let rest = &text[text.find("API Error: ")? + "API Error: ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() == 3).then(|| digits.parse().ok()).flatten()
}

/// A record's `content`: a string, or parts whose texts are joined.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(Value::Object(part)) => part
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

/// The `response` of a result's `functionResponse` part, or the result.
fn response_of(result: &Value) -> Value {
    let first = match result {
        Value::Array(parts) => parts.first(),
        other => Some(other),
    };
    first
        .and_then(|p| p.get("functionResponse"))
        .and_then(|f| f.get("response"))
        .cloned()
        .unwrap_or_else(|| result.clone())
}
