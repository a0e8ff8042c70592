//! Kimi Code CLI (MoonshotAI/kimi-cli) session context files:
//! `~/.kimi/sessions/<md5 of the work folder>/<session id>/context.jsonl`
//! (`$KIMI_SHARE_DIR` moves `~/.kimi`). One record a line: a message as
//! kosong's `Message.model_dump_json` writes it (`{role, content,
//! tool_calls, tool_call_id}`, Chat Completions' shape, content as a string
//! or parts `{type: text|think|image_url|…}`), or the CLI's own records,
//! whose roles start with `_`: `_system_prompt` (the first line),
//! `_checkpoint` (one a turn: `/undo` reverts to one, rotating the file) and
//! `_usage` (src/kimi_cli/soul/context.py, `Context.restore`).
//!
//! What it sends (src/kimi_cli/soul/kimisoul.py): the messages as they
//! stand, neighbouring user messages joined (`normalize_history`), no
//! pairing repair. A step's assistant message and its tool results are
//! appended together once every tool ended (`_grow_context`, shielded from
//! cancellation), so an interrupt leaves nothing half-written; a process
//! killed between the two appends leaves calls without results, which a
//! resume sends as they are, and the provider refuses.

use serde_json::Value;

use super::{BlockSource, Conversation, ReadError, Source};
use crate::agent::Agent;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;

/// Whether a JSON line is one of Kimi Code's own records: a role that
/// starts with `_` (`_system_prompt`, `_checkpoint`, `_usage`).
pub fn is_record(o: &serde_json::Map<String, Value>) -> bool {
    matches!(
        o.get("role").and_then(Value::as_str),
        Some("_system_prompt" | "_checkpoint" | "_usage")
    )
}

/// A Kimi Code context file being read.
#[derive(Debug, Clone, Default)]
pub struct KimiCodeLog {
    /// Boxed: a `Log` holds one reader, and the others are small.
    conv: Option<Box<Conversation>>,
    pub(super) joined: Vec<(usize, usize)>,
}

impl KimiCodeLog {
    fn conv(&mut self) -> &mut Conversation {
        self.conv
            .get_or_insert_with(|| Box::new(Conversation::new(Source::Agent(Agent::KimiCode))))
    }

    /// Adds the record on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, record: Value) -> Result<(), ReadError> {
        let role = record.get("role").and_then(Value::as_str).unwrap_or("");
        let src = |path: String| BlockSource {
            path: path.into(),
            line: Some(line),
            uuid: None,
        };
        match role {
            "_system_prompt" => {
                let text = record.get("content").and_then(Value::as_str);
                self.conv().system = text.map(str::to_string);
            }
            "user" | "system" => {
                let (blocks, sources) = texts(record.get("content"), &src);
                if blocks.is_empty() {
                    return Ok(());
                }
                // Neighbouring user messages are sent as one.
                crate::gemini_cli::push_coalesced(
                    self.conv(),
                    Message {
                        role: Role::User,
                        content: blocks,
                        finish_reason: None,
                    },
                    src("message".into()),
                    sources,
                );
            }
            "assistant" => {
                let (mut blocks, mut sources) = texts(record.get("content"), &src);
                let calls = record.get("tool_calls").and_then(Value::as_array);
                for (k, call) in calls.into_iter().flatten().enumerate() {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    let arguments = function
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    let input = serde_json::from_str(arguments)
                        .unwrap_or_else(|_| Value::String(arguments.to_string()));
                    blocks.push(Block::ToolUse {
                        id: call.get("id").and_then(Value::as_str).unwrap_or("").into(),
                        name: function
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .into(),
                        input: Json::new(input),
                    });
                    sources.push(src(format!("tool_calls[{k}]")));
                }
                self.conv().push(
                    Message {
                        role: Role::Assistant,
                        content: blocks,
                        finish_reason: None,
                    },
                    src("message".into()),
                    sources,
                );
            }
            "tool" => {
                let id = record
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let content = record.get("content").cloned().unwrap_or(Value::Null);
                self.conv().push(
                    Message {
                        role: Role::Tool,
                        content: vec![Block::ToolResult {
                            tool_use_id: id.into(),
                            content: Json::new(content),
                            is_error: false,
                        }],
                        finish_reason: None,
                    },
                    src("message".into()),
                    vec![src("tool_call_id".into())],
                );
            }
            // `_checkpoint`, `_usage`: the CLI's bookkeeping.
            _ => {}
        }
        Ok(())
    }

    /// The conversation the file's messages send.
    pub fn finish(self) -> Vec<Conversation> {
        let mut out: Vec<Conversation> = self
            .conv
            .into_iter()
            .map(|c| *c)
            .filter(|c| !c.messages.is_empty())
            .collect();
        super::note_joined_lines(&mut out, self.joined);
        out
    }
}

/// A message's texts (a string, or `text` parts; `think` parts are the
/// model's reasoning, which the provider gets back but pairs nothing).
fn texts(
    content: Option<&Value>,
    src: &dyn Fn(String) -> BlockSource,
) -> (Vec<Block>, Vec<BlockSource>) {
    let mut blocks = Vec::new();
    let mut sources = Vec::new();
    match content {
        Some(Value::String(text)) if !text.is_empty() => {
            blocks.push(Block::Text {
                text: text.as_str().into(),
            });
            sources.push(src("content".into()));
        }
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                if part.get("type").and_then(Value::as_str) != Some("text") {
                    continue;
                }
                let text = part.get("text").and_then(Value::as_str).unwrap_or("");
                blocks.push(Block::Text { text: text.into() });
                sources.push(src(format!("content[{k}]")));
            }
        }
        _ => {}
    }
    (blocks, sources)
}
