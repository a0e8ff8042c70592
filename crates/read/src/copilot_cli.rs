//! GitHub Copilot CLI session logs: `~/.copilot/session-state/<id>/
//! events.jsonl` (and the older `<id>.jsonl`), one event per line in an
//! envelope `{type, data, id, timestamp, parentId}`. The conversation the
//! CLI sends its Chat Completions backend is rebuilt from four of them:
//! `user.message` (`content`), `assistant.message` (`content`, and
//! `toolRequests[] {toolCallId, name, arguments}`), and
//! `tool.execution_complete` (`toolCallId`, `success`, `result.content` or
//! `error`), one `tool` message per call. `session.model_change` names the
//! model; `session.error` is the provider's refusal. The rest is the CLI's
//! bookkeeping (turns, reasoning, usage, truncation, compaction) and is
//! skipped on purpose; a type loopdbg does not know is said once.
//!
//! Event shapes from public readers of these files (tokentop's and
//! copilot-session-viewer's types, a Go heartbeat reader's structs).

use crate::agent::Agent;
use serde_json::Value;

use super::{BlockSource, Conversation, Notice, ReadError, Source};
use crate::finding::Kind;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;

/// Event types read or skipped on purpose.
pub const EVENT_TYPES: &[&str] = &[
    "session.start",
    "session.resume",
    "session.info",
    "session.model_change",
    "session.error",
    "session.end",
    "session.idle",
    "session.truncation",
    "session.compaction_start",
    "session.compaction_complete",
    "session.usage_info",
    "user.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "assistant.intent",
    "assistant.message",
    "assistant.message_delta",
    "assistant.reasoning",
    "assistant.reasoning_delta",
    "assistant.usage",
    "tool.execution_start",
    "tool.execution_progress",
    "tool.execution_partial_result",
    "tool.execution_complete",
    "tool.user_requested",
];

/// Whether a JSON line is a Copilot CLI event.
pub fn is_event(o: &serde_json::Map<String, Value>) -> bool {
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    o.contains_key("data")
        && o.contains_key("id")
        && o.contains_key("parentId")
        && (EVENT_TYPES.contains(&kind) || kind.contains('.'))
}

/// A Copilot CLI log being read.
#[derive(Debug, Clone, Default)]
pub struct CopilotCliLog {
    /// Boxed: a `Log` holds one reader, and the others are small.
    conv: Option<Box<Conversation>>,
    unknown: Vec<(String, usize)>,
    pub(super) joined: Vec<(usize, usize)>,
}

impl CopilotCliLog {
    fn conv(&mut self) -> &mut Conversation {
        self.conv
            .get_or_insert_with(|| Box::new(Conversation::new(Source::Agent(Agent::CopilotCli))))
    }

    /// Adds the event on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, event: Value) -> Result<(), ReadError> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let data = event.get("data").unwrap_or(&Value::Null);
        let at = |path: &str| BlockSource {
            path: path.to_string().into(),
            line: Some(line),
            uuid: event.get("id").and_then(Value::as_str).map(Into::into),
        };
        match kind {
            "user.message" => {
                let text = data
                    .get("content")
                    .or_else(|| data.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.conv().push(
                    text_message(Role::User, text),
                    at("data"),
                    vec![at("data.content")],
                );
            }
            "assistant.message" => self.assistant(data, &at),
            "tool.execution_complete" => {
                let Some(id) = data.get("toolCallId").and_then(Value::as_str) else {
                    return Ok(());
                };
                let failed = data.get("success").and_then(Value::as_bool) == Some(false);
                let content = data
                    .pointer("/result/content")
                    .or_else(|| data.pointer("/error/message"))
                    .or_else(|| data.get("error"))
                    .cloned()
                    .unwrap_or(Value::Null);
                self.conv().push(
                    Message {
                        role: Role::Tool,
                        content: vec![Block::ToolResult {
                            tool_use_id: id.into(),
                            content: Json::new(content),
                            is_error: failed,
                        }],
                        finish_reason: None,
                    },
                    at("data"),
                    vec![at("data.result")],
                );
            }
            "session.model_change" => {
                let model = data.get("newModel").and_then(Value::as_str);
                self.conv().model = model.map(str::to_string);
            }
            "session.error" => {
                let text = data
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let conv = self.conv();
                let refusal = super::Refusal {
                    at: conv.messages.len(),
                    status: super::gemini_cli::status_of(&text),
                    text,
                    source: at("data.message"),
                };
                conv.refusals.push(refusal);
            }
            known if EVENT_TYPES.contains(&known) => {}
            other => {
                if !self.unknown.iter().any(|(k, _)| k == other) {
                    self.unknown.push((other.to_string(), line));
                }
            }
        }
        Ok(())
    }

    fn assistant(&mut self, data: &Value, at: &dyn Fn(&str) -> BlockSource) {
        let mut content = Vec::new();
        let mut sources = Vec::new();
        if let Some(text) = data.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            content.push(Block::Text { text: text.into() });
            sources.push(at("data.content"));
        }
        let requests = data.get("toolRequests").and_then(Value::as_array);
        for (k, request) in requests.into_iter().flatten().enumerate() {
            let Some(id) = request.get("toolCallId").and_then(Value::as_str) else {
                continue;
            };
            // Arguments as the backend got them: a JSON string, or an
            // object the CLI already parsed.
            let input = match request.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => Value::Null,
            };
            content.push(Block::ToolUse {
                id: id.into(),
                name: request
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .into(),
                input: Json::new(input),
            });
            sources.push(at(&format!("data.toolRequests[{k}]")));
        }
        if content.is_empty() {
            return;
        }
        self.conv().push(
            Message {
                role: Role::Assistant,
                content,
                finish_reason: None,
            },
            at("data"),
            sources,
        );
    }

    /// The conversation read.
    pub fn finish(self) -> Vec<Conversation> {
        let mut out: Vec<Conversation> = self.conv.into_iter().map(|c| *c).collect();
        super::note_joined_lines(&mut out, self.joined);
        if let Some(first) = out.first_mut() {
            for (kind, line) in self.unknown {
                first.notices.push(Notice {
                    kind: Kind::UnknownEvent,
                    source: BlockSource {
                        path: "type".into(),
                        line: Some(line),
                        uuid: None,
                    },
                    message: format!(
                        "event type `{kind}` is new to loopdbg: skipped; the conversation was read without it"
                    ),
                    ids: vec![kind],
                });
            }
        }
        out
    }
}

fn text_message(role: Role, text: &str) -> Message {
    Message {
        role,
        content: vec![Block::Text { text: text.into() }],
        finish_reason: None,
    }
}
