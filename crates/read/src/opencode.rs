//! opencode sessions as `opencode export SESSION` prints them:
//! `{info, messages: [{info: {id, role, providerID, modelID, …}, parts}],
//! todos}`. A user message's `text` parts are its prompt; an assistant
//! message's `text` parts are its reply and each `tool` part (`callID`,
//! `tool`, `state {status, input, output | error}`) is a call whose result
//! travels in the next request, as opencode's `toModelMessages` sends it:
//! `completed` with its output, `error` with its error. A call still
//! `pending` or `running` (opencode stopped mid-tool) is sent with the
//! error `[Tool execution was interrupted]` (opencode fills it in when it
//! replays the history): said as a warning, since the model gets no real
//! result. Reasoning, step, patch, file and snapshot parts carry no
//! pairing.

use crate::agent::Agent;
use serde_json::Value;

use super::{BlockSource, Conversation, Notice, ReadError, Source, err};
use crate::finding::Kind;
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;

/// What opencode sends for a call it never finished.
pub const INTERRUPTED: &str = "[Tool execution was interrupted]";

/// Whether `doc` is an `opencode export`.
pub fn is_export(doc: &Value) -> bool {
    doc.get("info").is_some_and(Value::is_object)
        && doc
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                m.first()
                    .is_some_and(|m| m.get("info").is_some() && m.get("parts").is_some())
            })
}

pub(super) fn read(doc: &Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Agent(Agent::Opencode));
    let base = JsonPath::root().key("messages");
    let Some(messages) = doc.get("messages").and_then(Value::as_array) else {
        return Err(err(&base, "expected a `messages` array"));
    };
    for (i, message) in messages.iter().enumerate() {
        let path = base.index(i);
        let info = message.get("info").unwrap_or(&Value::Null);
        let role = match info.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => {
                return Err(err(
                    &path.key("info").key("role"),
                    format!("expected `user` or `assistant`, found {other:?}"),
                ));
            }
        };
        if role == Role::Assistant
            && let Some(model) = info.get("modelID").and_then(Value::as_str)
        {
            conv.model = Some(model.to_string());
        }
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let src = |p: JsonPath| BlockSource {
            path: p.to_string().into(),
            ..Default::default()
        };
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let mut results = Vec::new();
        let mut result_sources = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let ppath = path.key("parts").index(k);
            match part.get("type").and_then(Value::as_str) {
                Some("text")
                    if part.get("synthetic") != Some(&Value::Bool(true)) || role == Role::User =>
                {
                    content.push(Block::Text {
                        text: part
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .into(),
                    });
                    sources.push(src(ppath));
                }
                Some("tool") if role == Role::Assistant => {
                    let (call, result) = tool_part(part, &ppath, &mut conv)?;
                    content.push(call);
                    sources.push(src(ppath.clone()));
                    results.push(result);
                    result_sources.push(src(ppath.key("state")));
                }
                _ => {}
            }
        }
        if content.is_empty() {
            continue;
        }
        conv.push(
            Message {
                role,
                content,
                finish_reason: None,
            },
            src(path.clone()),
            sources,
        );
        // One step's results, as the next request carries them.
        if !results.is_empty() {
            conv.push(
                Message {
                    role: Role::Tool,
                    content: results,
                    finish_reason: None,
                },
                src(path.key("parts")),
                result_sources,
            );
        }
    }
    Ok(conv)
}

/// A `tool` part: the call, and the result opencode sends for it.
fn tool_part(
    part: &Value,
    path: &JsonPath,
    conv: &mut Conversation,
) -> Result<(Block, Block), ReadError> {
    let id = part
        .get("callID")
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, "expected a tool part with a string `callID`"))?;
    let state = part.get("state").unwrap_or(&Value::Null);
    let call = Block::ToolUse {
        id: id.into(),
        name: part
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        input: Json::new(state.get("input").cloned().unwrap_or(Value::Null)),
    };
    let status = state.get("status").and_then(Value::as_str).unwrap_or("");
    let (content, is_error) = match status {
        "completed" => (state.get("output").cloned().unwrap_or(Value::Null), false),
        "error" => (state.get("error").cloned().unwrap_or(Value::Null), true),
        _ => {
            conv.notices.push(Notice {
                kind: Kind::UnansweredCall,
                source: BlockSource {
                    path: path.key("state").to_string().into(),
                    ..Default::default()
                },
                ids: vec![id.to_string()],
                message: format!(
                    "the call {id} is still `{status}` (opencode stopped while it ran): opencode sends it with the error result {INTERRUPTED:?} when it replays the history, so the provider never sees it open, but the model gets no real result for it"
                ),
            });
            (Value::String(INTERRUPTED.to_string()), true)
        }
    };
    let result = Block::ToolResult {
        tool_use_id: id.into(),
        content: Json::new(content),
        is_error,
    };
    Ok((call, result))
}
