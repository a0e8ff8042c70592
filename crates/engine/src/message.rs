//! The provider-neutral message model: what the loop appends to its history.
//!
//! One `tool` message per result (as OpenAI Chat has it); provider views
//! regroup them (Anthropic puts a turn's results in one `user` message).

use serde::{Deserialize, Serialize};

use crate::session::{FinishReason, Json, Reply, Text};

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
