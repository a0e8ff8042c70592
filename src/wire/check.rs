//! Validating captured conversations: what each provider would reject, in
//! its own words, and what no server checks but breaks loops anyway.
//!
//! Pure: a [`Conversation`] in, [`Finding`]s out.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::engine::message::{Block, Message, Role};
use crate::wire::provider::Format;
use crate::wire::read::{BlockSource, Conversation, tool_results, tool_uses};

/// One problem in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// A stable kind (see [`KINDS`]).
    pub kind: &'static str,
    /// The JSON path inside the conversation (`messages[3].content[1]`).
    pub path: String,
    /// For logs: the event's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// For logs: the event's uuid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The ids involved.
    pub ids: Vec<String>,
    /// What the provider would answer (or, for checks no server makes, why it matters).
    pub message: String,
    /// True when the provider's API rejects the request (a 400); false for
    /// problems only loopdbg reports.
    pub rejected_by_provider: bool,
}

/// Every finding kind, with a one-line description.
pub const KINDS: &[(&str, &str)] = &[
    ("unanswered_call", "a tool call without its result"),
    (
        "results_not_first",
        "Anthropic: the results do not open the next user message",
    ),
    (
        "unexpected_result",
        "a result for a call the previous turn did not make",
    ),
    ("duplicate_id", "two calls share one id"),
    ("invalid_id", "an id with characters Anthropic refuses"),
    (
        "unknown_tool",
        "a call to a tool the request does not declare",
    ),
    ("invalid_arguments", "arguments that are not JSON"),
    (
        "schema_violation",
        "arguments that break the tool's JSON Schema",
    ),
    (
        "truncated_turn_executed",
        "calls run from a turn cut by max_tokens / length",
    ),
    (
        "repeated_turn",
        "the same assistant turn again: a spinning loop",
    ),
];

fn finding(
    kind: &'static str,
    src: &BlockSource,
    ids: Vec<String>,
    message: String,
    rejected: bool,
) -> Finding {
    Finding {
        kind,
        path: src.path.clone(),
        line: src.line,
        uuid: src.uuid.clone(),
        ids,
        message,
        rejected_by_provider: rejected,
    }
}

/// All findings for `conv` under its provider's rules.
pub fn check(conv: &Conversation) -> Vec<Finding> {
    let mut out = match conv.source.provider() {
        Format::Anthropic => anthropic(conv),
        Format::Openai => openai(conv),
        Format::Responses => responses(conv),
    };
    duplicates(conv, &mut out);
    beyond_servers(conv, &mut out);
    out
}

fn join(ids: &[String]) -> String {
    ids.join(", ")
}

fn anthropic(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let msgs = &conv.messages;
    for (i, m) in msgs.iter().enumerate() {
        // Results must answer the turn right before them.
        if m.role != Role::Assistant {
            let previous: HashSet<&str> = match i.checked_sub(1).map(|p| &msgs[p]) {
                Some(p) if p.role == Role::Assistant => tool_uses(p).map(|(_, id, _)| id).collect(),
                _ => HashSet::new(),
            };
            for (k, id) in tool_results(m) {
                if !previous.contains(id) {
                    out.push(finding(
                        "unexpected_result",
                        &conv.block_sources[i][k],
                        vec![id.to_string()],
                        format!(
                            "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ),
                        true,
                    ));
                }
            }
        }
        let calls: Vec<String> = tool_uses(m).map(|(_, id, _)| id.to_string()).collect();
        if m.role != Role::Assistant || calls.is_empty() {
            continue;
        }
        for (k, id, _) in tool_uses(m) {
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                out.push(finding(
                    "invalid_id",
                    &conv.block_sources[i][k],
                    vec![id.to_string()],
                    format!(
                        "{}.id: String should match pattern '^[a-zA-Z0-9_-]+$' (found {id:?})",
                        conv.block_sources[i][k].path
                    ),
                    true,
                ));
            }
        }
        let next = msgs.get(i + 1).filter(|n| n.role != Role::Assistant);
        let answered: HashSet<&str> = next
            .map(|n| tool_results(n).map(|(_, id)| id).collect())
            .unwrap_or_default();
        let missing: Vec<String> = calls
            .iter()
            .filter(|id| !answered.contains(id.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let message = if msgs.get(i + 1).is_none() {
                format!(
                    "the conversation ends with `tool_use` ids that have no `tool_result` blocks: {}. The next request must begin with their results (Each `tool_use` block must have a corresponding `tool_result` block in the next message.)",
                    join(&missing)
                )
            } else {
                format!(
                    "`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    join(&missing)
                )
            };
            // In a log, name the event that holds the first dangling call.
            let at = tool_uses(m)
                .find(|(_, id, _)| missing.iter().any(|x| x == id))
                .map(|(k, _, _)| &conv.block_sources[i][k])
                .filter(|s| s.line.is_some())
                .unwrap_or(&conv.message_sources[i]);
            out.push(finding("unanswered_call", at, missing, message, true));
        }
        if let Some(n) = next {
            let leading = n
                .content
                .iter()
                .take_while(|b| matches!(b, Block::ToolResult { .. }))
                .count();
            let results_for_calls = tool_results(n)
                .filter(|(_, id)| calls.iter().any(|c| c == id))
                .count();
            if results_for_calls > leading {
                out.push(finding(
                    "results_not_first",
                    &conv.message_sources[i + 1],
                    calls.clone(),
                    format!(
                        "Did not find {} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
                        calls.len()
                    ),
                    true,
                ));
            }
        }
    }
    out
}

fn openai(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let msgs = &conv.messages;
    let mut expecting: HashSet<&str> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        match m.role {
            Role::Tool => {
                for (k, id) in tool_results(m) {
                    if !expecting.remove(id) {
                        out.push(finding(
                            "unexpected_result",
                            &conv.block_sources[i][k],
                            vec![id.to_string()],
                            format!(
                                "Messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id {id})."
                            ),
                            true,
                        ));
                    }
                }
            }
            _ => {
                expecting.clear();
                let calls: Vec<&str> = tool_uses(m).map(|(_, id, _)| id).collect();
                if m.role != Role::Assistant || calls.is_empty() {
                    continue;
                }
                // The tool messages right after must answer every call.
                let answered: HashSet<&str> = msgs[i + 1..]
                    .iter()
                    .take_while(|n| n.role == Role::Tool)
                    .flat_map(|n| tool_results(n).map(|(_, id)| id))
                    .collect();
                let missing: Vec<String> = calls
                    .iter()
                    .filter(|id| !answered.contains(**id))
                    .map(|s| s.to_string())
                    .collect();
                if !missing.is_empty() {
                    out.push(finding(
                        "unanswered_call",
                        &conv.message_sources[i],
                        missing.clone(),
                        format!(
                            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                            join(&missing)
                        ),
                        true,
                    ));
                }
                expecting = calls.into_iter().collect();
            }
        }
    }
    out
}

fn responses(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut called: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for m in &conv.messages {
        for (_, id) in tool_results(m) {
            answered.insert(id);
        }
    }
    for (i, m) in conv.messages.iter().enumerate() {
        for (k, id, _) in tool_uses(m) {
            called.insert(id);
            if !answered.contains(id) {
                out.push(finding(
                    "unanswered_call",
                    &conv.block_sources[i][k],
                    vec![id.to_string()],
                    format!("No tool output found for function call {id}."),
                    true,
                ));
            }
        }
        for (k, id) in tool_results(m) {
            if !called.contains(id) {
                out.push(finding(
                    "unexpected_result",
                    &conv.block_sources[i][k],
                    vec![id.to_string()],
                    format!("No tool call found for function call output with call_id {id}."),
                    true,
                ));
            }
        }
    }
    out
}

fn duplicates(conv: &Conversation, out: &mut Vec<Finding>) {
    let mut seen: HashMap<&str, &BlockSource> = HashMap::new();
    let provider = conv.source.provider();
    for (i, m) in conv.messages.iter().enumerate() {
        for (k, id, _) in tool_uses(m) {
            let src = &conv.block_sources[i][k];
            if let Some(first) = seen.get(id) {
                let message = match provider {
                    Format::Anthropic => format!(
                        "`tool_use` ids must be unique: {id} is used again (first at {first})"
                    ),
                    _ => format!(
                        "tool call id {id} is used again (first at {first}); results cannot be told apart"
                    ),
                };
                out.push(finding(
                    "duplicate_id",
                    src,
                    vec![id.to_string()],
                    message,
                    provider == Format::Anthropic,
                ));
            } else {
                seen.insert(id, src);
            }
        }
    }
}

/// What no server checks: names, arguments, truncated turns, spins.
fn beyond_servers(conv: &Conversation, out: &mut Vec<Finding>) {
    for note in &conv.notes {
        out.push(finding(
            "invalid_arguments",
            &note.source,
            vec![note.id.clone()],
            format!(
                "arguments are not valid JSON ({}): {:?}",
                note.error,
                clip(&note.raw, 80)
            ),
            false,
        ));
    }
    let validators: HashMap<&str, Option<jsonschema::Validator>> = conv
        .tools
        .iter()
        .map(|t| {
            let v = t
                .schema
                .as_ref()
                .and_then(|s| jsonschema::validator_for(s).ok());
            (t.name.as_str(), v)
        })
        .collect();
    let noted: HashSet<&str> = conv.notes.iter().map(|n| n.id.as_str()).collect();
    let answered: HashSet<&str> = conv
        .messages
        .iter()
        .flat_map(|m| tool_results(m).map(|(_, id)| id))
        .collect();
    let mut previous_turn: Option<usize> = None;
    let mut run = 1;
    for (i, m) in conv.messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        for (k, id, name) in tool_uses(m) {
            let src = &conv.block_sources[i][k];
            if !conv.tools.is_empty() {
                match validators.get(name) {
                    None => out.push(finding(
                        "unknown_tool",
                        src,
                        vec![id.to_string()],
                        format!(
                            "`{name}` is not among the request's tools ({})",
                            conv.tools
                                .iter()
                                .map(|t| t.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        false,
                    )),
                    Some(Some(validator)) if !noted.contains(id) => {
                        if let Block::ToolUse { input, .. } = &m.content[k] {
                            let errors: Vec<String> = validator
                                .iter_errors(input)
                                .take(3)
                                .map(|e| {
                                    let at = e.instance_path().to_string();
                                    if at.is_empty() {
                                        e.to_string()
                                    } else {
                                        format!("{at}: {e}")
                                    }
                                })
                                .collect();
                            if !errors.is_empty() {
                                out.push(finding(
                                    "schema_violation",
                                    src,
                                    vec![id.to_string()],
                                    format!(
                                        "arguments of `{name}` do not satisfy its schema: {}",
                                        errors.join("; ")
                                    ),
                                    false,
                                ));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        if matches!(
            m.finish_reason,
            Some(crate::engine::session::FinishReason::Length)
        ) {
            let ran: Vec<String> = tool_uses(m)
                .filter(|(_, id, _)| answered.contains(id))
                .map(|(_, id, _)| id.to_string())
                .collect();
            if !ran.is_empty() {
                out.push(finding(
                    "truncated_turn_executed",
                    &conv.message_sources[i],
                    ran,
                    "this turn was cut by max_tokens / length, yet its calls were executed: their arguments may be incomplete; raise the limit and retry instead".to_string(),
                    false,
                ));
            }
        }
        match previous_turn {
            Some(p) if same_turn(&conv.messages[p], m) => {
                run += 1;
                if run == 2 {
                    out.push(finding(
                        "repeated_turn",
                        &conv.message_sources[i],
                        tool_uses(m).map(|(_, id, _)| id.to_string()).collect(),
                        format!(
                            "this assistant turn repeats the previous one (same text and calls); a loop that gets the same reply again is spinning (first at {})",
                            conv.message_sources[p]
                        ),
                        false,
                    ));
                }
            }
            _ => run = 1,
        }
        previous_turn = Some(i);
    }
}

/// True when two assistant turns say the same and make the same calls
/// (by name and arguments: a repeated plan often comes back with fresh ids).
fn same_turn(a: &Message, b: &Message) -> bool {
    let mut any = false;
    let mut left = turn_essence(a);
    let mut right = turn_essence(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return any,
            (Some(x), Some(y)) if x == y => any = true,
            _ => return false,
        }
    }
}

/// A turn's non-empty text and its calls by name and arguments.
type Essence<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a Value>);

fn turn_essence(m: &Message) -> impl Iterator<Item = Essence<'_>> {
    m.content.iter().filter_map(|blk| match blk {
        Block::Text { text } if !text.is_empty() => Some((Some(&**text), None, None)),
        Block::ToolUse { name, input, .. } => Some((None, Some(&**name), Some(&**input))),
        _ => None,
    })
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}
