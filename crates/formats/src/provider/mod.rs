//! Provider views: the canonical history rendered exactly as each provider
//! receives it, and read back from what each provider sends.
//!
//! Rendering is pure (history in, JSON out). The same grouping rules are
//! used by the TUI's `w` view, `loopdbg run --emit` and the round-trip tests.

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod openai;
pub mod responses;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use loopdbg_engine::message::Message;
use loopdbg_engine::session::Session;

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Anthropic Messages: content blocks; a turn's tool results in one user message.
    Anthropic,
    /// OpenAI Chat Completions: `tool_calls`, one `tool` message per result.
    Openai,
    /// OpenAI Responses: `function_call` / `function_call_output` input items.
    Responses,
    /// Gemini `generateContent`: `functionCall` / `functionResponse` parts.
    Gemini,
    /// Amazon Bedrock Converse: `toolUse` / `toolResult` content blocks.
    Bedrock,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 5] = [
        Format::Anthropic,
        Format::Openai,
        Format::Responses,
        Format::Gemini,
        Format::Bedrock,
    ];

    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Anthropic => "anthropic",
            Format::Openai => "openai",
            Format::Responses => "responses",
            Format::Gemini => "gemini",
            Format::Bedrock => "bedrock",
        }
    }

    /// A title for panes.
    pub fn title(self) -> &'static str {
        match self {
            Format::Anthropic => "Anthropic Messages",
            Format::Openai => "OpenAI Chat",
            Format::Responses => "OpenAI Responses",
            Format::Gemini => "Gemini generateContent",
            Format::Bedrock => "Bedrock Converse",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "anthropic" => Ok(Format::Anthropic),
            "openai" | "openai-chat" | "chat" => Ok(Format::Openai),
            "responses" | "openai-responses" => Ok(Format::Responses),
            "gemini" | "google" => Ok(Format::Gemini),
            "bedrock" | "bedrock-converse" | "converse" => Ok(Format::Bedrock),
            _ => Err(format!(
                "unknown format `{s}` (expected one of: anthropic, openai, responses, gemini, bedrock)"
            )),
        }
    }
}

/// One provider message (or input item) and the canonical messages it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewItem {
    /// The provider JSON.
    pub json: Value,
    /// Its role as the provider names it (`user`, `assistant`, `tool`, or the
    /// item type for Responses: `function_call`, `function_call_output`).
    pub role: String,
    /// The canonical messages it renders.
    pub from: std::ops::Range<usize>,
}

/// Where one provider message (or input item) comes from, found without
/// rendering any JSON: the debugger lists thousands of these per frame and
/// renders only the ones on screen.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewSpan {
    /// The provider's role (or Responses item type).
    pub role: &'static str,
    /// The canonical messages it renders.
    pub from: std::ops::Range<usize>,
    /// Which of the items those messages render (Responses splits one
    /// assistant message into a text item and one item per call).
    pub part: usize,
}

/// The items `format` would render for `history`, cheaply.
pub fn spans(format: Format, history: &[Message]) -> Vec<ViewSpan> {
    use loopdbg_engine::message::{Block, Role};
    let mut out: Vec<ViewSpan> = Vec::with_capacity(history.len());
    for (i, m) in history.iter().enumerate() {
        match format {
            Format::Anthropic | Format::Gemini | Format::Bedrock => {
                let joins = m.role == Role::Tool && i > 0 && history[i - 1].role == Role::Tool;
                let assistant = match format {
                    Format::Gemini => "model",
                    _ => "assistant",
                };
                match out.last_mut() {
                    Some(last) if joins => last.from.end = i + 1,
                    _ => out.push(ViewSpan {
                        role: if m.role == Role::Assistant {
                            assistant
                        } else {
                            "user"
                        },
                        from: i..i + 1,
                        part: 0,
                    }),
                }
            }
            Format::Openai => out.push(ViewSpan {
                role: m.role.as_str(),
                from: i..i + 1,
                part: 0,
            }),
            Format::Responses => {
                let mut part = 0;
                let mut push = |role: &'static str| {
                    out.push(ViewSpan {
                        role,
                        from: i..i + 1,
                        part,
                    });
                    part += 1;
                };
                match m.role {
                    Role::User => push("user"),
                    Role::Assistant => {
                        if m.text().is_some_and(|t| !t.is_empty()) {
                            push("assistant");
                        }
                        for b in &m.content {
                            if matches!(b, Block::ToolUse { .. }) {
                                push("function_call");
                            }
                        }
                    }
                    Role::Tool => {
                        for b in &m.content {
                            if matches!(b, Block::ToolResult { .. }) {
                                push("function_call_output");
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Renders the one item `span` describes.
pub fn render_span(format: Format, history: &[Message], span: &ViewSpan) -> Option<ViewItem> {
    let start = span.from.start;
    // Gemini names the call a response answers, which lies before the span.
    if format == Format::Gemini {
        let mut item = gemini::render(&history[..span.from.end])
            .into_iter()
            .find(|item| item.from == span.from)?;
        item.from = span.from.clone();
        return Some(item);
    }
    let mut item = render(format, history.get(span.from.clone())?)
        .into_iter()
        .nth(span.part)?;
    item.from = (item.from.start + start)..(item.from.end + start);
    Some(item)
}

/// Where the tool_use or tool_result block at canonical `message`/`block`
/// sits in `format`'s view of `history`, spelled as that provider's body
/// spells it (`input[3]`, `contents[1].parts[2]`,
/// `messages[2].tool_calls[1]`). `spans` are [`spans`] of the same history,
/// computed once by a caller that asks for many blocks. `None` when the
/// block is neither a call nor a result.
pub fn block_path(
    format: Format,
    history: &[Message],
    spans: &[ViewSpan],
    message: usize,
    block: usize,
) -> Option<String> {
    use loopdbg_engine::message::Block;
    let (is_call, id) = match history.get(message)?.content.get(block)? {
        Block::ToolUse { id, .. } => (true, id),
        Block::ToolResult { tool_use_id, .. } => (false, tool_use_id),
        _ => return None,
    };
    // The same id may be reused; count the blocks of this kind and id that
    // come before this one in the messages one provider message joins.
    let same = |b: &Block| match b {
        Block::ToolUse { id: other, .. } => is_call && other == id,
        Block::ToolResult { tool_use_id, .. } => !is_call && tool_use_id == id,
        _ => false,
    };
    let (first, item) = spans
        .iter()
        .enumerate()
        .find(|(_, s)| s.from.contains(&message))?;
    let mut earlier: usize = history[item.from.start..message]
        .iter()
        .map(|m| m.content.iter().filter(|b| same(b)).count())
        .sum();
    earlier += history[message].content[..block]
        .iter()
        .filter(|b| same(b))
        .count();
    let id: &str = id;
    let matches = |v: &Value| -> bool {
        let field = |k: &str| v.get(k).and_then(Value::as_str) == Some(id);
        match (format, is_call) {
            (Format::Anthropic, true) => v["type"] == "tool_use" && field("id"),
            (Format::Anthropic, false) => v["type"] == "tool_result" && field("tool_use_id"),
            (Format::Openai, _) => field("id"),
            (Format::Gemini, true) => v["functionCall"]["id"].as_str() == Some(id),
            (Format::Gemini, false) => v["functionResponse"]["id"].as_str() == Some(id),
            (Format::Bedrock, true) => v["toolUse"]["toolUseId"].as_str() == Some(id),
            (Format::Bedrock, false) => v["toolResult"]["toolUseId"].as_str() == Some(id),
            (Format::Responses, _) => false,
        }
    };
    let nth_in = |list: &Value| {
        list.as_array()?
            .iter()
            .enumerate()
            .filter(|(_, v)| matches(v))
            .nth(earlier)
            .map(|(j, _)| j)
    };
    match format {
        Format::Anthropic | Format::Bedrock => {
            let json = render_span(format, history, item)?.json;
            Some(format!(
                "messages[{first}].content[{}]",
                nth_in(&json["content"])?
            ))
        }
        Format::Gemini => {
            let json = render_span(format, history, item)?.json;
            Some(format!(
                "contents[{first}].parts[{}]",
                nth_in(&json["parts"])?
            ))
        }
        Format::Openai if is_call => {
            let json = render_span(format, history, item)?.json;
            Some(format!(
                "messages[{first}].tool_calls[{}]",
                nth_in(&json["tool_calls"])?
            ))
        }
        Format::Openai => Some(format!("messages[{first}]")),
        Format::Responses => {
            let kind = if is_call {
                "function_call"
            } else {
                "function_call_output"
            };
            let (index, _) = spans
                .iter()
                .enumerate()
                .skip(first)
                .take_while(|(_, s)| s.from.start == message)
                .filter(|(_, s)| s.role == kind)
                .filter(|(_, s)| {
                    render_span(format, history, s)
                        .is_some_and(|i| i.json["call_id"].as_str() == Some(id))
                })
                .nth(earlier)?;
            Some(format!("input[{index}]"))
        }
    }
}

/// Renders `history` as `format`'s message list.
pub fn render(format: Format, history: &[Message]) -> Vec<ViewItem> {
    match format {
        Format::Anthropic => anthropic::render(history),
        Format::Openai => openai::render(history),
        Format::Responses => responses::render(history),
        Format::Gemini => gemini::render(history),
        Format::Bedrock => bedrock::render(history),
    }
}

/// The request body `format` receives for `history` under `session`'s tools.
pub fn request_body(format: Format, session: &Session, history: &[Message], model: &str) -> Value {
    match format {
        Format::Anthropic => anthropic::request_body(session, history, model),
        Format::Openai => openai::request_body(session, history, model),
        Format::Responses => responses::request_body(session, history, model),
        Format::Gemini => gemini::request_body(session, history),
        Format::Bedrock => bedrock::request_body(session, history),
    }
}

/// The response body the provider returned for an assistant message (with
/// its `stop_reason` / `finish_reason`), when the format has one. `before`
/// is the history the message replied to (Gemini names calls from it).
pub fn response_body(format: Format, before: &[Message], message: &Message) -> Option<Value> {
    match format {
        Format::Anthropic => Some(anthropic::response_body(message)),
        Format::Openai => Some(openai::response_body(message)),
        Format::Responses => None,
        Format::Gemini => Some(gemini::response_body(before, message)),
        Format::Bedrock => Some(bedrock::response_body(message)),
    }
}

/// A tool result's content as the string providers carry: strings as they
/// are, anything else as compact JSON.
pub fn content_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Messages API-like views (Anthropic, Bedrock Converse): one message per
/// canonical message, `role` `user` or `assistant`, the blocks `block_json`
/// renders, except that the results of one turn share one user message.
/// `content_of` turns a message's rendered blocks into its `content`.
pub(crate) fn grouped_turns(
    history: &[Message],
    block_json: impl Fn(&loopdbg_engine::message::Block) -> Option<Value>,
    content_of: impl Fn(&Message, Vec<Value>) -> Value,
) -> Vec<ViewItem> {
    use loopdbg_engine::message::Role;
    let mut out: Vec<ViewItem> = Vec::new();
    for (i, m) in history.iter().enumerate() {
        let role = match m.role {
            Role::Assistant => "assistant",
            // Tool results travel in user messages.
            Role::User | Role::Tool => "user",
        };
        let blocks: Vec<Value> = m.content.iter().filter_map(&block_json).collect();
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
        out.push(ViewItem {
            json: serde_json::json!({"role": role, "content": content_of(m, blocks)}),
            role: role.to_string(),
            from: i..i + 1,
        });
    }
    out
}

/// The default model name for pasted request bodies.
pub fn default_model(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "claude-sonnet-4-5",
        Format::Openai | Format::Responses => "gpt-4.1",
        Format::Gemini => "gemini-2.5-flash",
        Format::Bedrock => "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    }
}
