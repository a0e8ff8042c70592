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

/// A JSON-RPC id as a call id: a string as itself, a number as written.
fn call_id(message: &Value) -> Option<String> {
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
pub fn conversation(session: &Session) -> crate::read::Conversation {
    use crate::read::{BlockSource, Conversation, Source, ToolSpec};
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

/// One `tools/call` the agent made, as the capture shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCall {
    /// The JSON-RPC id, as the message writes it.
    pub id: String,
    /// The tool's name on the server.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// The capture line of the request.
    pub line: usize,
    /// The server answered with `isError: true` or a JSON-RPC error.
    pub failed: bool,
}

/// Every answered `tools/call` of the sessions, in order.
pub fn calls(sessions: &[Session]) -> Vec<McpCall> {
    let mut out = Vec::new();
    for session in sessions {
        let conv = conversation(session);
        let lines: HashMap<String, usize> = session
            .messages
            .iter()
            .filter_map(|(line, from, _, m)| {
                let m = m.as_ref()?;
                (*from == Side::Client
                    && m.get("method").and_then(Value::as_str) == Some("tools/call"))
                .then(|| Some((call_id(m)?, *line)))
                .flatten()
            })
            .collect();
        let failed: HashMap<String, bool> = conv
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                loopdbg_engine::message::Block::ToolResult {
                    tool_use_id,
                    is_error,
                    ..
                } => Some((tool_use_id.to_string(), *is_error)),
                _ => None,
            })
            .collect();
        for (id, name, arguments) in conv
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                loopdbg_engine::message::Block::ToolUse { id, name, input } => {
                    Some((id.to_string(), name.to_string(), (**input).clone()))
                }
                _ => None,
            })
        {
            let Some(&failed) = failed.get(&id) else {
                continue;
            };
            out.push(McpCall {
                line: lines.get(&id).copied().unwrap_or(session.line),
                id,
                name,
                arguments,
                failed,
            });
        }
    }
    out
}

/// Whether the model's tool name is the server's: the same, or the
/// server's behind an agent's prefix (`mcp__weather__get_weather`,
/// `weather__get_weather`).
fn names_the_tool(model_name: &str, server_name: &str) -> bool {
    model_name == server_name
        || model_name
            .strip_suffix(server_name)
            .is_some_and(|prefix| prefix.ends_with("__"))
}

/// Each call the model made in `conv` matched to the MCP `tools/call`
/// that ran it (same tool, same arguments, in order, each MCP call used
/// once); a call the server failed whose result the agent sent to the
/// model as an ordinary result is `mcp_error_as_data`.
pub fn correlate(calls: &[McpCall], conv: &crate::read::Conversation) -> Vec<Finding> {
    use loopdbg_engine::message::Block;
    let mut used = vec![false; calls.len()];
    let mut results: HashMap<&str, (bool, usize, usize)> = HashMap::new();
    for (i, m) in conv.messages.iter().enumerate() {
        for (j, b) in m.content.iter().enumerate() {
            if let Block::ToolResult {
                tool_use_id,
                is_error,
                ..
            } = b
            {
                results.insert(tool_use_id, (*is_error, i, j));
            }
        }
    }
    let mut out = Vec::new();
    for m in &conv.messages {
        for b in &m.content {
            let Block::ToolUse { id, name, input } = b else {
                continue;
            };
            let matched = calls.iter().enumerate().position(|(k, c)| {
                !used[k] && names_the_tool(name, &c.name) && c.arguments == **input
            });
            let Some(k) = matched else { continue };
            used[k] = true;
            let call = &calls[k];
            let Some(&(sent_as_error, i, j)) = results.get(&**id) else {
                continue;
            };
            if call.failed && !sent_as_error {
                let source = &conv.block_sources[i][j];
                out.push(Finding {
                    kind: Kind::McpErrorAsData,
                    path: source.path.to_string(),
                    line: source.line,
                    uuid: source.uuid.as_deref().map(str::to_string),
                    ids: vec![id.to_string(), call.id.clone()],
                    message: format!(
                        "the MCP server failed `tools/call` {} ({}, MCP capture line {}), but the result of {id} went to the model as an ordinary result, without its error flag: the model reads the failure as data",
                        call.id, call.name, call.line
                    ),
                    rejected_by_provider: false,
                    severity: Severity::Warning,
                    evidence: None,
                });
            }
        }
    }
    out
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
    fn calls_made_while_others_are_open_are_one_turn_and_errors_stay_errors() {
        let call = |id: u32, name: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"n":{id}}}}}}}"#
            )
        };
        let ok = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
            )
        };
        let lines = [
            (Side::Client, r#"{"jsonrpc":"2.0","id":"t","method":"tools/list"}"#.to_string()),
            (Side::Server, r#"{"jsonrpc":"2.0","id":"t","result":{"tools":[{"name":"f","inputSchema":{"type":"object"}}]}}"#.to_string()),
            (Side::Client, call(1, "f")),
            (Side::Client, call(2, "f")),
            (Side::Server, ok(2)),
            (Side::Server, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#.to_string()),
            (Side::Client, call(3, "g")),
            (Side::Server, r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#.to_string()),
            (Side::Client, call(4, "f")),
        ];
        let borrowed: Vec<(Side, &str)> = lines.iter().map(|(s, l)| (*s, l.as_str())).collect();
        let conv = conversation(&session(&borrowed));
        let roles: Vec<&str> = conv.messages.iter().map(|m| m.role.as_str()).collect();
        // The prompt; calls 1 and 2 as one turn, their results in the
        // order they came; call 3 and its error; call 4, never answered.
        assert_eq!(
            roles,
            [
                "user",
                "assistant",
                "tool",
                "tool",
                "assistant",
                "tool",
                "assistant"
            ]
        );
        assert_eq!(conv.messages[1].content.len(), 2);
        let error = |m: &loopdbg_engine::message::Message| match &m.content[0] {
            loopdbg_engine::message::Block::ToolResult {
                tool_use_id,
                is_error,
                ..
            } => (tool_use_id.to_string(), *is_error),
            _ => panic!("a result"),
        };
        assert_eq!(error(&conv.messages[2]), ("2".to_string(), false));
        assert_eq!(error(&conv.messages[3]), ("1".to_string(), true));
        assert_eq!(error(&conv.messages[5]), ("3".to_string(), true));
        assert_eq!(conv.tools[0].name, "f");
        // The open call is said as MCP says it, not as a provider's 400.
        let findings = crate::check::check(&conv);
        let open: Vec<_> = findings
            .iter()
            .filter(|f| f.kind == Kind::McpUnansweredRequest)
            .collect();
        assert_eq!(open.len(), 1, "{findings:?}");
        assert_eq!(open[0].ids, vec!["4".to_string()]);
        assert!(findings.iter().all(|f| !f.rejected_by_provider));
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
