//! What `loopdbg mcp` records between an agent and a stdio MCP server, and
//! what `check` finds in it. The stdio transport is JSON-RPC 2.0, one
//! message per line: the client's requests (`initialize`, `tools/list`,
//! `tools/call`, …) and notifications, the server's responses by `id`,
//! and the server's own requests to the client (sampling, roots), which
//! the client answers by `id` in turn.
//!
//! A capture is JSON Lines: a `start` record for each run of the tap (the
//! command it started), then one record per message in the order the tap
//! saw them, with the side that sent it and the milliseconds since the
//! start. A line that is not JSON is recorded as text, as it was sent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The marker of an MCP capture record (`"loopdbg": "mcp"`).
pub const MARKER: &str = "mcp";

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The agent (the MCP client), on the server's standard input.
    Client,
    /// The MCP server, on its standard output.
    Server,
}

impl Side {
    /// The other side, who answers what this side asks.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// One line of an MCP capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Record {
    /// The tap started the server: what it ran.
    Start {
        /// Always [`MARKER`].
        loopdbg: String,
        /// The server's command and arguments.
        command: Vec<String>,
    },
    /// One message, as one side sent it.
    Message {
        /// Always [`MARKER`].
        loopdbg: String,
        /// Who sent it.
        from: Side,
        /// Milliseconds since the tap started.
        ms: u64,
        /// The message, when it was JSON (credentials masked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Value>,
        /// The line as sent, when it was not JSON (credentials masked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

impl Record {
    /// The record of a run of the tap starting `command`.
    pub fn start(command: &[String]) -> Record {
        Record::Start {
            loopdbg: MARKER.to_string(),
            command: command.to_vec(),
        }
    }

    /// The record of one line `from` sent, `ms` after the start, with any
    /// credential-shaped string masked before it is parsed.
    pub fn message(from: Side, ms: u64, line: &str) -> Record {
        let masked = loopdbg_formats::secrets::mask_shapes(line.trim_end_matches(['\n', '\r']));
        let (message, text) = match crate::bounded::value(&masked) {
            Ok(v) => (Some(v), None),
            Err(_) => (None, Some(masked.into_owned())),
        };
        Record::Message {
            loopdbg: MARKER.to_string(),
            from,
            ms,
            message,
            text,
        }
    }

    /// The record as one line of the capture, with its newline.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "a record of strings and JSON values always serializes"
    )]
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a record serializes");
        line.push('\n');
        line
    }
}

/// Whether a parsed line is an MCP capture record.
pub fn is_record(line: &Value) -> bool {
    line.get("loopdbg").and_then(Value::as_str) == Some(MARKER)
        && line.get("event").and_then(Value::as_str).is_some()
}

/// One run of the tap as read back: its command and its messages, each
/// with the capture line it is on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Session {
    /// The server's command line, when the run's start was recorded.
    pub command: Vec<String>,
    /// The capture line of the start record (1-based), or of the first
    /// message when the start was not recorded.
    pub line: usize,
    /// Each message: its line, who sent it, when, and what it was.
    pub messages: Vec<(usize, Side, u64, Option<Value>)>,
}

/// Reads a capture's lines (1-based number, parsed record) into one
/// session per run of the tap.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "pushed just above when empty"
)]
pub fn sessions(records: impl IntoIterator<Item = (usize, Record)>) -> Vec<Session> {
    let mut out: Vec<Session> = Vec::new();
    for (line, record) in records {
        match record {
            Record::Start { command, .. } => out.push(Session {
                command,
                line,
                messages: Vec::new(),
            }),
            Record::Message {
                from, ms, message, ..
            } => {
                if out.is_empty() {
                    out.push(Session {
                        line,
                        ..Default::default()
                    });
                }
                let session = out.last_mut().expect("one session at least");
                session.messages.push((line, from, ms, message));
            }
        }
    }
    out
}

/// A request's id as JSON-RPC allows it (a string or a number), written
/// as the message writes it.
pub fn id_of(message: &Value) -> Option<String> {
    match message.get("id")? {
        Value::String(s) => Some(format!("{s:?}")),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A JSON-RPC id as a call id: a string as itself, a number as written.
pub fn call_id(message: &Value) -> Option<String> {
    match message.get("id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One session as a conversation the debugger replays: the agent's
/// `tools/call` requests are its calls, the server's responses their
/// results (an `isError` result or a JSON-RPC error is an error result).
/// Calls made while others are still open are one turn, as a model's
/// parallel calls are; a call made when none is open starts the next. A
/// call never answered stays open, as the ledger shows it. The tools are
/// those `tools/list` answered with.
pub fn conversation(session: &Session) -> crate::Conversation {
    use crate::{BlockSource, Conversation, Source, ToolSpec};
    use loopdbg_engine::message::{Block, Message, Role};
    let at = |line: usize| BlockSource {
        path: format!("line {line} message").into(),
        line: Some(line),
        uuid: None,
    };
    let mut conv = Conversation::new(Source::Mcp);
    conv.label = (!session.command.is_empty()).then(|| session.command.join(" "));
    let prompt = match &session.command[..] {
        [] => "MCP session".to_string(),
        command => format!("MCP session with `{}`", command.join(" ")),
    };
    conv.push(
        Message::user(&prompt),
        at(session.line),
        vec![at(session.line)],
    );
    // The turn being built: its calls, their lines, and the results so far.
    let mut calls: Vec<(String, Block, usize)> = Vec::new();
    let mut results: Vec<(Message, usize)> = Vec::new();
    let mut listing: Option<String> = None;
    let flush = |conv: &mut Conversation,
                 calls: &mut Vec<(String, Block, usize)>,
                 results: &mut Vec<(Message, usize)>| {
        if calls.is_empty() {
            return;
        }
        let sources = calls.iter().map(|(_, _, l)| at(*l)).collect();
        let content = calls.drain(..).map(|(_, b, _)| b).collect();
        let first = results.first().map_or(session.line, |(_, l)| *l);
        conv.push(
            Message {
                role: Role::Assistant,
                content,
                finish_reason: None,
            },
            at(first),
            sources,
        );
        for (m, line) in results.drain(..) {
            conv.push(m, at(line), vec![at(line)]);
        }
    };
    for (line, from, _, message) in &session.messages {
        let Some(message) = message else { continue };
        let method = message.get("method").and_then(Value::as_str);
        match (from, method, call_id(message)) {
            (Side::Client, Some("tools/list"), Some(id)) => listing = Some(id),
            (Side::Client, Some("tools/call"), Some(id)) => {
                if !calls.is_empty() && results.len() == calls.len() {
                    flush(&mut conv, &mut calls, &mut results);
                }
                let params = message.get("params");
                let name = params
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let input = params
                    .and_then(|p| p.get("arguments"))
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({}));
                let block = Block::ToolUse {
                    id: id.as_str().into(),
                    name: name.into(),
                    input: input.into(),
                };
                calls.push((id, block, *line));
            }
            (Side::Server, None, Some(id)) if listing.as_ref() == Some(&id) => {
                let tools = message.pointer("/result/tools").and_then(Value::as_array);
                conv.tools = tools
                    .into_iter()
                    .flatten()
                    .map(|t| ToolSpec {
                        name: t.get("name").and_then(Value::as_str).unwrap_or("").into(),
                        schema: t.get("inputSchema").cloned(),
                        description: t
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    })
                    .collect();
            }
            (Side::Server, None, Some(id)) if calls.iter().any(|(c, _, _)| *c == id) => {
                let answered = results.iter().any(|(m, _)| {
                    matches!(&m.content[0], Block::ToolResult { tool_use_id, .. } if **tool_use_id == *id)
                });
                if answered {
                    continue; // said by `mcp_answered_twice`
                }
                let (content, is_error) = match (message.get("result"), message.get("error")) {
                    (Some(r), _) => (
                        r.get("content").cloned().unwrap_or_else(|| r.clone()),
                        r.get("isError").and_then(Value::as_bool).unwrap_or(false),
                    ),
                    (None, Some(e)) => (e.clone(), true),
                    (None, None) => (Value::Null, true),
                };
                results.push((
                    Message::tool_result(id.as_str().into(), content.into(), is_error),
                    *line,
                ));
            }
            _ => {}
        }
    }
    flush(&mut conv, &mut calls, &mut results);
    conv
}
