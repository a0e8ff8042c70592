//! The provider-neutral message model: what the loop appends to its history.
//!
//! One `tool` message per result (as OpenAI Chat has it); provider views
//! regroup them (Anthropic puts a turn's results in one `user` message).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Shared, immutable text: cloned by reference count, so recording a long
/// run does not copy every id and reply.
pub type Text = std::sync::Arc<str>;

/// Shared, immutable JSON, for the same reason as [`Text`].
pub type Json = std::sync::Arc<Value>;

/// A scripted model reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// The reply's text: a string, `""` or `null` (stop rules tell them apart).
    #[serde(default)]
    pub text: Option<Text>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped; defaults to `tool_calls` with calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// The tokens the provider counted for this trip, when known (a
    /// recorded reply's `usage`, or a scripted one that states it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The model that wrote it, when known: what its tokens are priced as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Text>,
}

/// The tokens of one trip, as the providers count them. `input` is the
/// prompt tokens billed at the full rate: without the cache reads and
/// writes, which are counted apart (Anthropic reports them so; OpenAI's and
/// Gemini's cached counts are taken out of their prompt totals).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens read at the full rate.
    #[serde(default)]
    pub input: u64,
    /// Tokens the model wrote (reasoning included).
    #[serde(default)]
    pub output: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write: u64,
}

impl Usage {
    /// Every prompt token of the trip: full rate, cache reads and writes.
    pub fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// The sum, field by field.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

impl Reply {
    /// The finish reason, with the documented default filled in.
    pub fn finish_reason(&self) -> FinishReason {
        self.finish_reason.unwrap_or(if self.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        })
    }

    /// True when the text is present and not empty.
    pub fn has_text(&self) -> bool {
        self.text.as_deref().is_some_and(|t| !t.is_empty())
    }
}

/// A tool call inside a reply.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call id a result must quote.
    pub id: Text,
    /// The tool's name (may name a tool the session does not define).
    pub name: Text,
    /// The arguments, any JSON.
    #[serde(default = "empty_object")]
    pub args: Json,
    /// The arguments as the raw string a model sent (OpenAI style); when
    /// present it replaces `args`, and text that is not JSON reaches the
    /// executor as a string it will refuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

fn empty_object() -> Json {
    Json::new(Value::Object(Default::default()))
}

/// Why a reply ended, in OpenAI's words (Anthropic's are accepted as aliases).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer (`end_turn`).
    #[serde(alias = "end_turn")]
    Stop,
    /// The model wants tools run (`tool_use`).
    #[serde(alias = "tool_use")]
    ToolCalls,
    /// The reply was cut by the output limit (`max_tokens`).
    #[serde(alias = "max_tokens")]
    Length,
    /// The reply was withheld by a filter (`refusal`).
    #[serde(alias = "refusal")]
    ContentFilter,
}

impl FinishReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
        }
    }
}

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result sent back by the loop.
    Tool,
}

impl Role {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: Text,
    },
    /// A call the model asks for.
    ToolUse {
        /// The call id.
        id: Text,
        /// The tool name.
        name: Text,
        /// The arguments.
        input: Json,
    },
    /// The answer to one call.
    ToolResult {
        /// The id of the call it answers.
        tool_use_id: Text,
        /// What the function returned (or the error text).
        content: Json,
        /// True when the call failed or was refused.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// One message of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who it is from.
    pub role: Role,
    /// Its blocks, in order.
    pub content: Vec<Block>,
    /// For assistant messages: why the reply ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

impl Message {
    /// The user's prompt.
    pub fn user(text: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
            finish_reason: None,
        }
    }

    /// An assistant message carrying a stub reply. A `null` text gives no
    /// text block; `""` gives an empty one, so the difference survives.
    pub fn assistant(reply: &Reply) -> Message {
        let mut content = Vec::with_capacity(reply.tool_calls.len() + 1);
        if let Some(text) = &reply.text {
            content.push(Block::Text { text: text.clone() });
        }
        content.extend(reply.tool_calls.iter().map(|c| Block::ToolUse {
            id: c.id.clone(),
            name: c.name.clone(),
            input: c.args.clone(),
        }));
        Message {
            role: Role::Assistant,
            content,
            finish_reason: Some(reply.finish_reason()),
        }
    }

    /// A tool message with one result.
    pub fn tool_result(tool_use_id: Text, content: Json, is_error: bool) -> Message {
        Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            }],
            finish_reason: None,
        }
    }

    /// The concatenated text blocks, `None` when there are none.
    pub fn text(&self) -> Option<String> {
        let mut out: Option<String> = None;
        for b in &self.content {
            if let Block::Text { text } = b {
                out.get_or_insert_with(String::new).push_str(text);
            }
        }
        out
    }

    /// The tool_use blocks as `(id, name)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((&**id, &**name)),
            _ => None,
        })
    }

    /// The ids this message's tool_result blocks answer.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => Some(&**tool_use_id),
            _ => None,
        })
    }
}
