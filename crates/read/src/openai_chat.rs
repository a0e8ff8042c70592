//! OpenAI Chat Completions request bodies (or a bare `messages` array):
//! `tool_calls` on assistant messages, one `tool` message per result, with
//! arguments as a JSON string. A call is a `function` or a `custom` tool
//! (free-form `input`). The API's older spelling is read too: one
//! `function_call` on the assistant message, answered by a `function`
//! message naming it, with no ids at all.
//!
//! One reader, two ways in (`read` from a `Value`, `plain` from a JSON
//! line), as for Bedrock: one lax model, one conversion.

use std::borrow::Cow;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;

use super::lax::{FromMap, Given, Lax, LaxList, LaxStr, StrOrValue, lax_object, object_or_default};
use super::parse::{ToolDef, finish_reason_named, push_tools};
use super::{BlockSource, Conversation, ReadError, Source, err};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

use super::fingerprint::kept_text;
use super::parse::{body_of, from_value, required_list};
use super::parse::{element, member, member_element, parse_lax_arguments};
use super::{Detail, text_of_parts};

/// The call-type name of a legacy `function_call` (see `Conversation::call_types`).
pub const LEGACY_FUNCTION_CALL: &str = "legacy_function_call";

/// Reads a Chat Completions body (or a bare array of messages) from its
/// `Value`.
pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let doc = std::mem::take(doc);
    let body = body_of(doc, "messages", |doc| {
        let messages = Given(Some(from_value(doc)?));
        Ok(Body {
            messages,
            ..Body::default()
        })
    })?;
    let messages = required_list(body.messages.0.map(|l| l.0), "messages")?;
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    push_tools(&mut conv, body.tools);
    push_tools(&mut conv, body.functions);
    read_messages(&mut conv, 0, messages, detail)?;
    Ok(conv)
}

/// Message `i` of a later request of the same conversation added to
/// `conv` (what that request's messages before it read as): the gate's
/// reading past a shared prefix (`prefix`). `None` when that would not
/// give what reading the whole body gives: a legacy `function_call` pairs
/// by name with state the conversation does not keep.
pub(crate) fn extend(conv: &mut Conversation, i: usize, item: Value, detail: Detail) -> Option<()> {
    if conv
        .call_types
        .iter()
        .any(|(_, kind)| kind == LEGACY_FUNCTION_CALL)
    {
        return None;
    }
    let message = MessageIn::deserialize(item).ok()?;
    read_messages(conv, i, vec![message], detail).ok()
}

/// `check`'s fast path: the line read straight from its text by the same
/// reader, taken when `detect` would call it Chat (see [`Body::is_chat`])
/// and it reads without an error; `None` sends the line to the general
/// path. `forced`: `--format openai`, which a body with nothing of
/// another format in it takes.
pub(crate) fn plain(line: &str, forced: bool) -> Option<Conversation> {
    let body = serde_json::from_str::<Lax<Body>>(line).ok()?.object()?;
    if !body.is_chat(forced) {
        return None;
    }
    let LaxList(Some(messages)) = body.messages.0? else {
        return None;
    };
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    push_tools(&mut conv, body.tools);
    push_tools(&mut conv, body.functions);
    read_messages(&mut conv, 0, messages, Detail::Full).ok()?;
    Some(conv)
}

/// Every message, in order, the first being `messages[first]`.
fn read_messages(
    conv: &mut Conversation,
    first: usize,
    messages: Vec<MessageIn>,
    detail: Detail,
) -> Result<(), ReadError> {
    // Legacy calls carry no id: each is named by where it stands, and a
    // `function` message answers the latest unanswered call of its name.
    let mut open_legacy: Vec<(String, String)> = Vec::new();
    for (i, item) in (first..).zip(messages) {
        let at = || JsonPath::root().key("messages").index(i);
        let path = element("messages", i);
        let src = |p: String| BlockSource {
            path: p.into(),
            ..Default::default()
        };
        let Some(role) = item.role.as_deref() else {
            return Err(err(&at(), "expected a message with a string `role`"));
        };
        let text = || text_of(&item.content);
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let role = match role {
            "system" | "developer" => {
                conv.system = text().map(Cow::into_owned);
                conv.system_messages += 1;
                continue;
            }
            "user" => {
                content.push(Block::Text {
                    text: kept_text(&text().unwrap_or_default(), detail),
                });
                sources.push(src(member(&path, "content")));
                Role::User
            }
            "assistant" => {
                if let Some(text) = text() {
                    content.push(Block::Text {
                        text: kept_text(&text, detail),
                    });
                    sources.push(src(member(&path, "content")));
                }
                let calls = item.tool_calls.0.and_then(|c| c.0);
                for (k, call) in calls.into_iter().flatten().enumerate() {
                    let cpath = || at().key_index("tool_calls", k);
                    let source = src(member_element(&path, "tool_calls", k));
                    let block = read_call(conv, call, cpath, &source)?;
                    content.push(block);
                    sources.push(source);
                }
                if let Some(Lax::Object(f)) = item.function_call.0 {
                    let Some(name) = f.name.0 else {
                        return Err(expected(&at().key("function_call"), "name"));
                    };
                    let id = format!("{name}@{path}");
                    let source = src(member(&path, "function_call"));
                    let input = parse_lax_arguments(f.arguments, &id, &source, &mut conv.notes);
                    conv.call_types
                        .push((id.clone(), LEGACY_FUNCTION_CALL.to_string()));
                    open_legacy.push((name.to_string(), id.clone()));
                    content.push(Block::ToolUse {
                        id: id.into(),
                        name: (*name).into(),
                        input,
                    });
                    sources.push(source);
                }
                Role::Assistant
            }
            kind @ ("tool" | "function") => {
                let id = match (kind, &item.tool_call_id) {
                    // OpenAI-compatible servers take a tool message whose
                    // `tool_call_id` is null and pair it by position: it
                    // answers the first call of the last assistant message
                    // that nothing has answered (said as a warning).
                    ("tool", StrOrValue::Absent) => {
                        unnamed_result(conv, src(member(&path, "tool_call_id")))
                    }
                    ("tool", StrOrValue::Value(v)) if v.is_null() => {
                        unnamed_result(conv, src(member(&path, "tool_call_id")))
                    }
                    ("tool", StrOrValue::Str(id)) => id.to_string(),
                    ("tool", StrOrValue::Value(_)) => return Err(expected(&at(), "tool_call_id")),
                    // A legacy result names its function; with no call of
                    // that name open it gets an id that answers nothing.
                    _ => {
                        let Some(name) = item.name.as_deref() else {
                            return Err(expected(&at(), "name"));
                        };
                        match open_legacy.iter().rposition(|(n, _)| n == name) {
                            Some(at) => open_legacy.remove(at).1,
                            None => format!("{name}@?"),
                        }
                    }
                };
                content.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(item.content.into_value().unwrap_or(Value::Null)),
                    is_error: false,
                });
                sources.push(src(path.clone()));
                Role::Tool
            }
            other => {
                return Err(err(
                    &at(),
                    format!(
                        "unknown role `{other}` for OpenAI Chat (expected system, developer, user, assistant, tool or function)"
                    ),
                ));
            }
        };
        let finish_reason = finish_reason_named(item.finish_reason.as_deref());
        let message = Message {
            role,
            content,
            finish_reason,
        };
        conv.push(message, src(path), sources);
    }
    Ok(())
}

/// One of `tool_calls`: a `function` call (arguments as a JSON string) or
/// a `custom` one (free text).
fn read_call(
    conv: &mut Conversation,
    call: Lax<CallIn>,
    cpath: impl Fn() -> JsonPath,
    source: &BlockSource,
) -> Result<Block, ReadError> {
    let call = call.object().unwrap_or_default();
    let Some(id) = call.id.0 else {
        return Err(expected(&cpath(), "id"));
    };
    let (name, input) = if let Some(f) = call.function.0 {
        let f = f.object().unwrap_or_default();
        let Some(name) = f.name.0 else {
            return Err(expected(&cpath().key("function"), "name"));
        };
        let input = parse_lax_arguments(f.arguments, &id, source, &mut conv.notes);
        (name, input)
    } else if let Some(custom) = call.custom.0 {
        // A custom tool's input is free text, not JSON.
        let custom = custom.object().unwrap_or_default();
        let Some(name) = custom.name.0 else {
            return Err(expected(&cpath().key("custom"), "name"));
        };
        conv.call_types
            .push((id.to_string(), "custom_tool_call".to_string()));
        (
            name,
            Json::new(custom.input.into_value().unwrap_or(Value::Null)),
        )
    } else {
        return Err(err(&cpath(), "expected a `function` or `custom` object"));
    };
    Ok(Block::ToolUse {
        id: (*id).into(),
        name: (*name).into(),
        input,
    })
}

/// A message's text: a string as it stands, or its parts' `text`s joined
/// (`read::text_of_parts`); `None` for no content or another kind.
fn text_of<'a>(content: &'a StrOrValue) -> Option<Cow<'a, str>> {
    match content {
        StrOrValue::Str(text) => Some(Cow::Borrowed(text)),
        StrOrValue::Value(v) => text_of_parts(Some(v)).map(Cow::Owned),
        StrOrValue::Absent => None,
    }
}

/// The error for a field that is not a string.
fn expected(at: &JsonPath, key: &str) -> ReadError {
    err(at, format!("expected a string `{key}`"))
}

/// A Chat Completions body: what the reader reads, and what tells the
/// fast path whether `detect` would call it Chat.
#[derive(Default)]
struct Body<'a> {
    messages: Given<LaxList<MessageIn<'a>>>,
    tools: LaxList<Lax<ToolDef<'a>>>,
    functions: LaxList<Lax<ToolDef<'a>>>,
    model: LaxStr<'a>,
    max_tokens: bool,
    /// A top-level `system`: Anthropic's field, which `detect` leans on.
    system: bool,
    elsewhere: bool,
}

impl<'de: 'a, 'a> FromMap<'de> for Body<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            match key.as_deref().unwrap_or("") {
                "messages" => body.messages = map.next_value()?,
                "tools" => body.tools = map.next_value()?,
                "functions" => body.functions = map.next_value()?,
                "model" => body.model = map.next_value()?,
                key => {
                    body.max_tokens |= key == "max_tokens";
                    body.system |= key == "system";
                    body.elsewhere |=
                        crate::signs::OTHER_FORMATS_KEYS.contains(&key) && key != "functions";
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(body)
    }
}

impl Body<'_> {
    /// Whether `detect` calls this body Chat, asked of the typed body
    /// without a `Value` (or, `forced`, whether `--format openai` holds
    /// for it): nothing in it says another format (a key of one, a part
    /// or block type of Anthropic or Responses, a part without a type,
    /// which is Bedrock's, a tool with an `input_schema`), and something
    /// says Chat (a tool or function message, calls, a tool of Chat's
    /// shape, a system message, or a model and fields that lean to it).
    fn is_chat(&self, forced: bool) -> bool {
        let Some(LaxList(Some(messages))) = &self.messages.0 else {
            return false;
        };
        if self.elsewhere || self.system {
            return false;
        }
        let tools = || {
            self.tools
                .0
                .iter()
                .chain(&self.functions.0)
                .flatten()
                .filter_map(|t| match t {
                    Lax::Object(t) => Some(t),
                    Lax::Other => None,
                })
        };
        if tools().any(|t| t.input_schema.0.is_some()) {
            return false;
        }
        // Only `tools` is looked at for Chat's shape, as `detect` does.
        let chat_tool = |t: &Lax<ToolDef>| matches!(t, Lax::Object(t) if matches!(t.function.0, Some(Lax::Object(_))));
        let mut says_chat = self.tools.0.iter().flatten().any(chat_tool);
        for m in messages {
            // A message that is not an object reads as one with no
            // role: an error, so the line goes to the general path.
            if m.kind.0.is_some() || !m.parts_are_chat() {
                return false;
            }
            says_chat |= matches!(
                m.role.as_deref(),
                Some("tool" | "function" | "system" | "developer")
            ) || m.tool_calls.0.is_some()
                || m.function_call.0.is_some();
        }
        says_chat || forced || crate::signs::leans_openai(self.model.as_deref(), self.max_tokens)
    }
}

lax_object! {
    /// A message of any role.
    struct MessageIn<'a> {
        "role" => role: LaxStr<'a>,
        "content" => content: StrOrValue<'a>,
        "tool_calls" => tool_calls: Given<LaxList<Lax<CallIn<'a>>>>,
        "function_call" => function_call: Given<Lax<FunctionIn<'a>>>,
        "tool_call_id" => tool_call_id: StrOrValue<'a>,
        "name" => name: LaxStr<'a>,
        "finish_reason" => finish_reason: LaxStr<'a>,
        "type" => kind: Given<IgnoredAny>,
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageIn<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object_or_default(d)
    }
}

impl MessageIn<'_> {
    /// Whether every content part is an object of Chat's own `text`
    /// type, or one `detect` reads nothing from (`image_url`, …): a part
    /// with no `type` is Bedrock's shape, a `tool_use` or `thinking`
    /// block Anthropic's, an `input_text` part Responses'.
    fn parts_are_chat(&self) -> bool {
        let StrOrValue::Value(parts) = &self.content else {
            return true;
        };
        let Value::Array(parts) = &**parts else {
            return true;
        };
        parts.iter().all(|p| match p {
            Value::Object(o) => match o.get("type") {
                Some(Value::String(kind)) => !matches!(
                    kind.as_str(),
                    "tool_use"
                        | "tool_result"
                        | "server_tool_use"
                        | "mcp_tool_use"
                        | "thinking"
                        | "redacted_thinking"
                        | "output_text"
                        | "input_text"
                ),
                _ => false,
            },
            _ => true,
        })
    }
}

lax_object! {
    /// One of `tool_calls`.
    struct CallIn<'a> {
        "id" => id: LaxStr<'a>,
        "function" => function: Given<Lax<FunctionIn<'a>>>,
        "custom" => custom: Given<Lax<CustomIn<'a>>>,
    }
}

lax_object! {
    /// A function call: `name` and `arguments` (a JSON string).
    struct FunctionIn<'a> {
        "name" => name: LaxStr<'a>,
        "arguments" => arguments: StrOrValue<'a>,
    }
}

lax_object! {
    /// A custom tool call: `name` and free-text `input`.
    struct CustomIn<'a> {
        "name" => name: LaxStr<'a>,
        "input" => input: StrOrValue<'a>,
    }
}

/// OpenAI-compatible servers take a tool message whose `tool_call_id` is
/// null and pair it by position: it answers the first call of the last
/// assistant message that nothing has answered (said as a warning).
fn unnamed_result(conv: &mut Conversation, source: BlockSource) -> String {
    let answered: Vec<String> = conv
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.to_string()),
            _ => None,
        })
        .collect();
    let open = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .and_then(|m| {
            m.tool_uses()
                .map(|(id, _)| id.to_string())
                .find(|id| !answered.contains(id))
        });
    let id = open.unwrap_or_else(|| "(null)".to_string());
    conv.notices.push(super::Notice {
        kind: crate::finding::Kind::UnnamedResult,
        source,
        ids: vec![id.clone()],
        message: format!(
            "a `tool` message with `tool_call_id: null`, read as the result of {id} (the first call of the last assistant message nothing else answers): OpenAI-compatible servers pair it by position and accept it; anything keyed by id cannot"
        ),
    });
    id
}
