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

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::{Finding, Severity};
use crate::finding::Kind;

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
        let masked = crate::secrets::mask_shapes(line.trim_end_matches(['\n', '\r']));
        let (message, text) = match serde_json::from_str::<Value>(&masked) {
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
fn id_of(message: &Value) -> Option<String> {
    match message.get("id")? {
        Value::String(s) => Some(format!("{s:?}")),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Finds what went wrong between the two sides of one session: a request
/// never answered (the agent waits on a `tools/call` that never returns,
/// or the session ended with it open), an id answered twice, a response
/// to an id nobody asked with.
pub fn check(session: &Session) -> Vec<Finding> {
    // Requests by (who asked, id): their method and line, and how many
    // responses they got.
    let mut asked: HashMap<(Side, String), (String, usize, usize)> = HashMap::new();
    let mut order: Vec<(Side, String)> = Vec::new();
    let mut out = Vec::new();
    for (line, from, _, message) in &session.messages {
        let Some(message) = message else { continue };
        let Some(id) = id_of(message) else {
            continue; // a notification, or a batch (not in MCP since 2025-06-18)
        };
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            let key = (*from, id);
            if !asked.contains_key(&key) {
                order.push(key.clone());
            }
            asked.insert(key, (method.to_string(), *line, 0));
            continue;
        }
        // A response answers a request the other side made.
        match asked.get_mut(&(from.other(), id.clone())) {
            Some((method, _, answers)) => {
                *answers += 1;
                if *answers == 2 {
                    out.push(found(
                        Kind::McpAnsweredTwice,
                        *line,
                        &id,
                        format!(
                            "{} answered `{method}` {id} a second time: JSON-RPC gives each request one response, and the {} may take either",
                            side_name(*from),
                            side_name(from.other())
                        ),
                    ));
                }
            }
            None => out.push(found(
                Kind::McpUnknownResponse,
                *line,
                &id,
                format!(
                    "{} sent a response to {id}, an id the {} never asked with",
                    side_name(*from),
                    side_name(from.other())
                ),
            )),
        }
    }
    for key in order {
        let (method, line, answers) = &asked[&key];
        if *answers == 0 {
            out.push(found(
                Kind::McpUnansweredRequest,
                *line,
                &key.1,
                format!(
                    "`{method}` {} from the {} never got a response before the session ended{}",
                    key.1,
                    side_name(key.0),
                    match method.as_str() {
                        "tools/call" =>
                            ": the agent waited on this tool call, then gave up or was stopped",
                        _ => "",
                    }
                ),
            ));
        }
    }
    out.sort_by_key(|f| f.line);
    out
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

fn found(kind: Kind, line: usize, id: &str, message: String) -> Finding {
    Finding {
        kind,
        path: format!("id {id}"),
        line: Some(line),
        uuid: None,
        ids: vec![id.to_string()],
        message,
        rejected_by_provider: false,
        severity: Severity::Warning,
        evidence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(lines: &[(Side, &str)]) -> Session {
        let records = std::iter::once(Record::start(&["server".to_string()]))
            .chain(lines.iter().map(|(side, l)| Record::message(*side, 0, l)))
            .enumerate()
            .map(|(i, r)| (i + 1, r));
        sessions(records).remove(0)
    }

    #[test]
    fn a_complete_exchange_is_clean() {
        let s = session(&[
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            ),
            (Side::Server, r#"{"jsonrpc":"2.0","id":0,"result":{}}"#),
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"f"}}"#,
            ),
            (
                Side::Server,
                r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}"#,
            ),
            (Side::Client, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            (
                Side::Server,
                r#"{"jsonrpc":"2.0","id":"a","result":{"content":[]}}"#,
            ),
        ]);
        assert_eq!(check(&s), vec![]);
    }

    #[test]
    fn unanswered_twice_answered_and_unknown_responses_are_found() {
        let s = session(&[
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f"}}"#,
            ),
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            ),
            (Side::Server, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
            (Side::Server, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#),
            (
                Side::Server,
                r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"x"}}"#,
            ),
        ]);
        let kinds: Vec<(&str, Option<usize>, Vec<String>)> = check(&s)
            .iter()
            .map(|f| (f.kind.as_str(), f.line, f.ids.clone()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("mcp_unanswered_request", Some(2), vec!["1".to_string()]),
                ("mcp_answered_twice", Some(5), vec!["2".to_string()]),
                ("mcp_unknown_response", Some(6), vec!["9".to_string()]),
            ]
        );
        // A string id and a number id are different ids.
        let s = session(&[
            (
                Side::Client,
                r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#,
            ),
            (Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        ]);
        assert_eq!(check(&s).len(), 2);
    }

    #[test]
    fn credentials_are_masked_and_text_lines_kept() {
        let key = ["sk-ant-api03-", &"x".repeat(40)].concat();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"arguments":{{"key":"{key}"}}}}}}"#
        );
        let written = Record::message(Side::Client, 3, &line).to_line();
        assert!(!written.contains(&key), "{written}");
        let back: Record = serde_json::from_str(&written).unwrap();
        assert!(matches!(
            back,
            Record::Message {
                message: Some(_),
                ms: 3,
                ..
            }
        ));
        let text = Record::message(Side::Server, 0, "not json\n");
        assert!(matches!(text, Record::Message { text: Some(t), .. } if t == "not json"));
    }
}
