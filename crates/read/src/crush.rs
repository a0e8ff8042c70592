//! Crush sessions (charmbracelet/crush), as `crush session show --json ID`
//! prints them, `{meta: {uuid, …}, messages: [{id, role, parts}]}`, or as
//! the scan lifts them from Crush's database (`crush.db`, table
//! `messages`: each row's `parts` column is `[{type, data}]`,
//! internal/message/message.go `marshalParts`). Both spell a part's
//! fields alike but for a call's id (`tool_call_id` in the show, `id` in
//! the database).
//!
//! Read as Crush sends it (internal/agent/agent.go `preparePrompt`, read
//! at charmbracelet/crush 37f36e93): the messages from the session's
//! summary on (`getSessionMessages`: the summary is sent as the user's),
//! a message without parts and an assistant message with neither text,
//! reasoning nor calls left out; a `tool` message's results whose call no
//! assistant message made dropped (`filterOrphanedToolResults`, since
//! v0.57.0); and right after each assistant message, for each of its calls
//! no `tool` message answers anywhere in the session, an error result
//! "tool call was interrupted …" (`syntheticToolResultsForOrphanedCalls`,
//! since v0.59.0, #2622: an interrupted session was refused on every turn
//! before). Each such change is a [`Rewrite`]: a warning where the model
//! gets no real result, a note where nothing is lost.

use serde_json::Value;
use std::collections::HashSet;

use crate::agent::Agent;
use crate::conversation::{BlockSource, Conversation, ReadError, Rewrite, Source, err};
use crate::finding::Kind;
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, FinishReason, Message, Role};
use loopdbg_engine::session::Json;

/// The error Crush sends as the result of a call it never finished.
pub const INTERRUPTED: &str = "tool call was interrupted and did not produce a result, you may retry this call if the result is still needed";

/// Whether `doc` is a Crush session (`crush session show --json`).
pub fn is_session(doc: &Value) -> bool {
    doc.get("meta")
        .is_some_and(|m| m.get("uuid").is_some_and(Value::is_string))
        && doc
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                m.first()
                    .is_none_or(|m| m.get("role").is_some() && m.get("parts").is_some())
            })
}

/// A part's fields: the database nests them under `data`.
fn fields(part: &Value) -> &Value {
    part.get("data").filter(|d| d.is_object()).unwrap_or(part)
}

fn text_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A call part's id, as either spelling has it.
fn call_id(part: &Value) -> Option<&str> {
    let f = fields(part);
    f.get("tool_call_id")
        .or_else(|| f.get("id"))
        .and_then(Value::as_str)
}

fn parts_of(message: &Value) -> &[Value] {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn parts_typed<'a>(message: &'a Value, kind: &'a str) -> impl Iterator<Item = (usize, &'a Value)> {
    parts_of(message)
        .iter()
        .enumerate()
        .filter(move |(_, p)| p.get("type").and_then(Value::as_str) == Some(kind))
}

pub(super) fn read(doc: &Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Agent(Agent::Crush));
    let base = JsonPath::root().key("messages");
    let Some(messages) = doc.get("messages").and_then(Value::as_array) else {
        return Err(err(&base, "expected a `messages` array"));
    };
    // From the summary on, when the session was summarized.
    let summary = doc
        .get("meta")
        .and_then(|m| m.get("summary_message_id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let first = summary
        .and_then(|s| messages.iter().position(|m| text_of(m, "id") == s))
        .unwrap_or(0);
    let sent = &messages[first..];
    let mut calls = HashSet::new();
    let mut answered = HashSet::new();
    for message in sent {
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                calls.extend(parts_typed(message, "tool_call").filter_map(|(_, p)| call_id(p)))
            }
            Some("tool") => {
                answered.extend(parts_typed(message, "tool_result").filter_map(|(_, p)| call_id(p)))
            }
            _ => {}
        }
    }
    for (k, message) in sent.iter().enumerate() {
        let i = first + k;
        let path = base.index(i);
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") if k == 0 && summary.is_some() => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            Some("system") => continue,
            other => {
                return Err(err(
                    &path.key("role"),
                    format!("expected `user`, `assistant` or `tool`, found {other:?}"),
                ));
            }
        };
        if parts_of(message).is_empty() {
            continue;
        }
        match role {
            Role::Tool => tool_message(&mut conv, message, &path, &calls),
            _ => {
                let opened = turn(&mut conv, message, &path, role)?;
                answer_the_unanswered(&mut conv, &opened, &answered, &path);
            }
        }
    }
    Ok(conv)
}

fn src(path: JsonPath) -> BlockSource {
    BlockSource {
        path: path.to_string().into(),
        ..Default::default()
    }
}

/// A user or assistant message as Crush sends it (`ToAIMessage`): its text
/// (trimmed), then its calls. The calls' ids are returned.
fn turn(
    conv: &mut Conversation,
    message: &Value,
    path: &JsonPath,
    role: Role,
) -> Result<Vec<(String, JsonPath)>, ReadError> {
    let text: Vec<&str> = parts_typed(message, "text")
        .map(|(_, p)| text_of(fields(p), "text"))
        .collect();
    let text = text.concat();
    let text = text.trim();
    let reasoned =
        parts_typed(message, "reasoning").any(|(_, p)| !text_of(fields(p), "thinking").is_empty());
    let mut content = Vec::new();
    let mut sources = Vec::new();
    if !text.is_empty() {
        content.push(Block::Text { text: text.into() });
        sources.push(src(path.key("parts")));
    }
    let mut opened = Vec::new();
    if role == Role::Assistant {
        for (k, part) in parts_typed(message, "tool_call") {
            let ppath = path.key("parts").index(k);
            let Some(id) = call_id(part) else {
                return Err(err(&ppath, "expected a tool call with a string id"));
            };
            let f = fields(part);
            // Crush keeps the arguments as the model streamed them: text.
            let input = text_of(f, "input");
            let input = serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.into()));
            content.push(Block::ToolUse {
                id: id.into(),
                name: text_of(f, "name").into(),
                input: Json::new(input),
            });
            sources.push(src(ppath.clone()));
            opened.push((id.to_string(), ppath));
        }
    }
    // An assistant message cancelled before it said anything is not sent.
    if content.is_empty() && !(role == Role::Assistant && reasoned) {
        return Ok(opened);
    }
    let finish_reason = parts_typed(message, "finish")
        .filter_map(|(_, p)| match text_of(fields(p), "reason") {
            "end_turn" => Some(FinishReason::Stop),
            "tool_use" => Some(FinishReason::ToolCalls),
            "max_tokens" => Some(FinishReason::Length),
            "content_filter" => Some(FinishReason::ContentFilter),
            _ => None,
        })
        .last()
        .filter(|_| role == Role::Assistant);
    if content.is_empty() {
        // Reasoning alone: sent, and holds nothing the check pairs.
        return Ok(opened);
    }
    conv.push(
        Message {
            role,
            content,
            finish_reason,
        },
        src(path.clone()),
        sources,
    );
    Ok(opened)
}

/// A `tool` message: its results, those whose call no assistant message
/// made dropped as Crush drops them.
fn tool_message(conv: &mut Conversation, message: &Value, path: &JsonPath, calls: &HashSet<&str>) {
    let mut content = Vec::new();
    let mut sources = Vec::new();
    let mut dropped = Vec::new();
    for (k, part) in parts_typed(message, "tool_result") {
        let ppath = path.key("parts").index(k);
        let id = call_id(part).unwrap_or("");
        if !calls.contains(id) {
            dropped.push(id.to_string());
            continue;
        }
        let f = fields(part);
        content.push(Block::ToolResult {
            tool_use_id: id.into(),
            content: Json::new(Value::String(text_of(f, "content").into())),
            is_error: f.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        });
        sources.push(src(ppath));
    }
    if !dropped.is_empty() {
        conv.rewrites.push(Rewrite {
            kind: Kind::UnexpectedResult,
            source: src(path.clone()),
            ids: dropped.clone(),
            message: format!(
                "results for calls no message in the session made ({}); Crush drops them before every request (`filterOrphanedToolResults`, since v0.57.0), so the provider never sees them",
                dropped.join(", ")
            ),
            harmless: true,
        });
    }
    if !content.is_empty() {
        push_results(conv, content, path, sources);
    }
}

/// A `tool` message of `results`, as Crush sends one.
fn push_results(
    conv: &mut Conversation,
    results: Vec<Block>,
    path: &JsonPath,
    sources: Vec<BlockSource>,
) {
    let message = Message {
        role: Role::Tool,
        content: results,
        finish_reason: None,
    };
    conv.push(message, src(path.clone()), sources);
}

/// Crush's error result, right after the assistant message, for each of
/// its calls that no `tool` message answers.
fn answer_the_unanswered(
    conv: &mut Conversation,
    opened: &[(String, JsonPath)],
    answered: &HashSet<&str>,
    path: &JsonPath,
) {
    let open: Vec<&(String, JsonPath)> = opened
        .iter()
        .filter(|(id, _)| !answered.contains(id.as_str()))
        .collect();
    if open.is_empty() {
        return;
    }
    let content = open
        .iter()
        .map(|(id, _)| Block::ToolResult {
            tool_use_id: id.as_str().into(),
            content: Json::new(Value::String(INTERRUPTED.into())),
            is_error: true,
        })
        .collect();
    let sources = open.iter().map(|(_, p)| src(p.clone())).collect();
    push_results(conv, content, path, sources);
    let ids: Vec<String> = open.iter().map(|(id, _)| id.clone()).collect();
    conv.rewrites.push(Rewrite {
        kind: Kind::UnansweredCall,
        source: src(path.clone()),
        ids: ids.clone(),
        message: format!(
            "no tool_result answers {} in the session; Crush sends the error {INTERRUPTED:?} as each one's result right after the call before every request (`syntheticToolResultsForOrphanedCalls`, since v0.59.0), so the provider never sees them open, but the model gets no real result for them",
            ids.join(", ")
        ),
        harmless: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(conv: &Conversation) -> Vec<(Kind, bool, Vec<String>)> {
        conv.rewrites
            .iter()
            .map(|r| (r.kind, r.harmless, r.ids.clone()))
            .collect()
    }

    #[test]
    fn a_result_whose_call_is_gone_is_dropped_and_an_open_call_answered_after_it() {
        let doc = json!({"meta": {"uuid": "s"}, "messages": [
            {"id": "1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            {"id": "2", "role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "a", "name": "bash", "input": "{}"},
                {"type": "tool_call", "tool_call_id": "b", "name": "bash", "input": "not json"}]},
            {"id": "3", "role": "tool", "parts": [
                {"type": "tool_result", "tool_call_id": "gone", "content": "x"}]},
            {"id": "4", "role": "tool", "parts": [
                {"type": "tool_result", "tool_call_id": "a", "content": "ok"}]},
            // Cancelled before it said anything: not sent.
            {"id": "5", "role": "assistant", "parts": [{"type": "finish", "reason": "canceled"}]}
        ]});
        let conv = read(&doc).unwrap();
        let roles: Vec<Role> = conv.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Tool]);
        assert_eq!(
            kinds(&conv),
            [
                (Kind::UnansweredCall, false, vec!["b".to_string()]),
                (Kind::UnexpectedResult, true, vec!["gone".to_string()]),
            ]
        );
        // The arguments as the model streamed them, JSON or not.
        assert!(matches!(
            &conv.messages[1].content[1],
            Block::ToolUse { input, .. } if **input == Value::String("not json".into())
        ));
    }

    #[test]
    fn a_summarized_session_is_sent_from_its_summary_as_the_users() {
        let doc = json!({"meta": {"uuid": "s", "summary_message_id": "3"}, "messages": [
            {"id": "1", "role": "user", "parts": [{"type": "text", "data": {"text": "go"}}]},
            {"id": "2", "role": "assistant", "parts": [
                {"type": "tool_call", "data": {"id": "a", "name": "bash", "input": "{}"}}]},
            {"id": "3", "role": "assistant", "parts": [{"type": "text", "data": {"text": "Summary."}}]},
            {"id": "4", "role": "user", "parts": [{"type": "text", "data": {"text": "on"}}]}
        ]});
        let conv = read(&doc).unwrap();
        let roles: Vec<Role> = conv.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::User]);
        assert!(conv.rewrites.is_empty());
        assert!(is_session(&doc));
    }
}
