//! Claude Code session logs: JSON Lines of events, each assistant content
//! block its own event, rebuilt into the API messages they were.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source, finish_reason_of};
use crate::engine::message::{Block, Message, Role};

/// Builds a Claude Code session log into conversations, one event at a time.
///
/// Assistant events that share `message.id` are one API message (Claude Code
/// writes one event per content block); consecutive user events holding only
/// tool results are one user message. An event with `parentUuid: null` after
/// the first starts a new segment (a compaction or a new session), whose
/// requests no longer carry the messages before it.
#[derive(Debug)]
pub struct ClaudeCodeLog {
    current: Conversation,
    last_assistant_id: Option<String>,
    last_was_results: bool,
    done: Vec<Conversation>,
    events: usize,
}

impl Default for ClaudeCodeLog {
    fn default() -> Self {
        ClaudeCodeLog {
            current: Conversation::new(Source::ClaudeCode),
            last_assistant_id: None,
            last_was_results: false,
            done: Vec::new(),
            events: 0,
        }
    }
}

impl ClaudeCodeLog {
    /// Adds the event on 1-based `line`.
    pub fn push(&mut self, line: usize, event: &Value) -> Result<(), ReadError> {
        self.push_owned(line, event.clone())
    }

    /// [`ClaudeCodeLog::push`], taking the event so its contents move.
    pub fn push_owned(&mut self, line: usize, mut event: Value) -> Result<(), ReadError> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "user" | "assistant") {
            return Ok(());
        }
        // Sub-agent conversations are logged in the same file; they are
        // separate API conversations.
        if event.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let kind = kind.to_string();
        let uuid = event
            .get("uuid")
            .and_then(Value::as_str)
            .map(str::to_string);
        let starts_segment = event.get("parentUuid").is_some_and(Value::is_null);
        let Some(message) = event.get_mut("message") else {
            return Ok(());
        };
        if self.events > 0 && starts_segment {
            let finished =
                std::mem::replace(&mut self.current, Conversation::new(Source::ClaudeCode));
            if !finished.messages.is_empty() {
                self.done.push(finished);
            }
            self.last_assistant_id = None;
            self.last_was_results = false;
        }
        self.events += 1;
        let role = match message.get("role").and_then(Value::as_str).unwrap_or(&kind) {
            "assistant" => Role::Assistant,
            _ => Role::User,
        };
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let finish = finish_reason_of(message.get("stop_reason"));
        let (blocks, sources) =
            super::anthropic::blocks(message.get_mut("content"), "message", |p| BlockSource {
                path: p,
                line: Some(line),
                uuid: uuid.clone(),
            })?;
        let only_results =
            !blocks.is_empty() && blocks.iter().all(|b| matches!(b, Block::ToolResult { .. }));
        let conv = &mut self.current;
        let merge = match role {
            Role::Assistant => {
                message_id.is_some()
                    && message_id == self.last_assistant_id
                    && conv
                        .messages
                        .last()
                        .is_some_and(|m| m.role == Role::Assistant)
            }
            _ => {
                only_results
                    && self.last_was_results
                    && conv.messages.last().is_some_and(|m| m.role == Role::User)
            }
        };
        if merge {
            let last = conv.messages.last_mut().expect("checked");
            last.content.extend(blocks);
            if finish.is_some() {
                last.finish_reason = finish;
            }
            conv.block_sources
                .last_mut()
                .expect("parallel")
                .extend(sources);
        } else {
            conv.push(
                Message {
                    role,
                    content: blocks,
                    finish_reason: finish,
                },
                BlockSource {
                    path: "message".into(),
                    line: Some(line),
                    uuid,
                },
                sources,
            );
        }
        self.last_assistant_id = if role == Role::Assistant {
            message_id
        } else {
            None
        };
        self.last_was_results = role == Role::User && only_results;
        Ok(())
    }

    /// The conversations read, in order.
    pub fn finish(mut self) -> Vec<Conversation> {
        if !self.current.messages.is_empty() {
            self.done.push(self.current);
        }
        self.done
    }
}
