//! What `check` finds in an MCP capture: requests never answered,
//! answered twice, responses to ids nobody asked with; and the model's
//! calls matched to the MCP calls that ran them (`check --mcp`).

use std::collections::HashMap;

use serde_json::Value;

use crate::check::{Finding, Severity};
use loopdbg_read::finding::Kind;
use loopdbg_read::mcp::{Session, Side, call_id, conversation, id_of};

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
pub fn correlate(calls: &[McpCall], conv: &loopdbg_read::Conversation) -> Vec<Finding> {
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
        severity: Severity::Warning,
        evidence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_read::mcp::{Record, sessions};

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
        assert!(findings.iter().all(|f| !f.rejected_by_provider()));
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
