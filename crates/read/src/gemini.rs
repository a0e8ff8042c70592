//! Gemini API `generateContent` request bodies (or a bare `contents`
//! array): `user` / `model` turns of parts. `functionCall` parts are the
//! model's calls and `functionResponse` parts their answers. Calls carry an
//! `id` on newer models; without one, a response answers the first call of
//! the previous turn with its `name` that is still open, and both get the
//! id `name#turn.part` so the rest of loopdbg can pair them.
//!
//! One reader, two ways in (`read` from a `Value`, `plain` from a JSON
//! line), as for Bedrock: one lax model, one conversion.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;

use super::fingerprint::kept_text;
use super::lax::{
    Boxed, FromMap, Given, IsTrue, Lax, LaxList, LaxStr, OneOrList, Texts, lax_object,
};
use super::parse::{body_of, from_value, required_list};
use super::parse::{element, member_element};
use super::{BlockSource, Conversation, Detail, ReadError, Source, ToolSpec, err};
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{FinishReason, Json};
use loopdbg_formats::provider::Format;

/// Reads a `generateContent` body (or a bare array of contents) from its
/// `Value`.
pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let doc = std::mem::take(doc);
    let body = body_of(doc, "contents", |doc| {
        let contents = Some(from_value(doc)?);
        Ok(Body {
            contents,
            ..Body::default()
        })
    })?;
    let contents = required_list(body.contents.map(OneOrList::into_list), "contents")?;
    let mut conv = Conversation::new(Source::Provider(Format::Gemini));
    read_top(&mut conv, body.tools, body.system, body.model);
    read_contents(&mut conv, 0, contents, detail)?;
    Ok(conv)
}

/// Turn `i` of a later request of the same conversation added to `conv`
/// (what that request's turns before it read as): the gate's reading past
/// a shared prefix (`prefix`). A turn reads only the conversation before
/// it (a response without an id answers the open call of its name), so
/// any turn can be read so.
pub(crate) fn extend(conv: &mut Conversation, i: usize, item: Value, detail: Detail) -> Option<()> {
    let turn = Lax::<Turn>::deserialize(item).ok()?;
    read_contents(conv, i, vec![turn], detail).ok()
}

/// `check`'s fast path: the line read straight from its text by the same
/// reader, taken when `detect` would call it Gemini (a `contents` list,
/// nothing of another format) and it reads without an error; `None`
/// sends the line to the general path.
pub(crate) fn plain(line: &str) -> Option<Conversation> {
    let body = serde_json::from_str::<Lax<Body>>(line).ok()?.object()?;
    if body.elsewhere {
        return None;
    }
    let Some(OneOrList::List(contents)) = body.contents else {
        return None;
    };
    let mut conv = Conversation::new(Source::Provider(Format::Gemini));
    read_top(&mut conv, body.tools, body.system, body.model);
    read_contents(&mut conv, 0, contents, Detail::Full).ok()?;
    Some(conv)
}

/// The declared functions, the system instruction and the model.
fn read_top(
    conv: &mut Conversation,
    tools: LaxList<Lax<ToolGroup>>,
    system: System,
    model: LaxStr,
) {
    for group in tools.0.into_iter().flatten().filter_map(Lax::object) {
        let declared = group.declarations.0.or(group.declarations_snake.0);
        for f in declared
            .and_then(|d| d.0)
            .into_iter()
            .flatten()
            .filter_map(Lax::object)
        {
            if let Some(name) = f.name.0 {
                conv.tools.push(ToolSpec {
                    name: name.into_owned(),
                    schema: f.json_schema.0.or(f.parameters.0),
                    description: f.description.0.map(Cow::into_owned),
                });
            }
        }
    }
    // The camelCase field first, whatever it holds, as Gemini reads it.
    let system = system.camel.0.or(system.snake.0);
    conv.system = system
        .and_then(Lax::object)
        .and_then(|s| s.parts.joined("\n"));
    conv.model = model.0.map(Cow::into_owned);
}

/// Every turn: a role (user when none) and its parts.
fn read_contents(
    conv: &mut Conversation,
    first: usize,
    contents: Vec<Lax<Turn>>,
    detail: Detail,
) -> Result<(), ReadError> {
    let at = |i: usize| JsonPath::root().key("contents").index(i);
    for (i, item) in (first..).zip(contents) {
        let item = item.object().unwrap_or_default();
        let role = match item.role.as_deref().unwrap_or("user") {
            "model" => Role::Assistant,
            "user" | "function" | "tool" => Role::User,
            // A client that speaks OpenAI's roles to Gemini: read as the
            // model's turn, so the rest of the history is checked, and
            // said as Gemini refuses it ("Please use a valid role: user,
            // model.": mem0ai/mem0#6756, the-open-agent/openagent#1666).
            "assistant" => {
                conv.notices.push(crate::Notice {
                    kind: crate::finding::Kind::InvalidRole,
                    source: BlockSource {
                        path: element("contents", i).into(),
                        ..Default::default()
                    },
                    ids: Vec::new(),
                    message: "Please use a valid role: user, model. (the turn's role is `assistant`, OpenAI's word for the model's turn; Gemini takes only `user` and `model`)".to_string(),
                });
                Role::Assistant
            }
            other => {
                return Err(err(
                    &at(i),
                    format!("unknown role `{other}` for Gemini (expected user or model)"),
                ));
            }
        };
        let Some(parts) = item.parts.0.and_then(OneOrList::into_list) else {
            return Err(err(&at(i), "expected a `parts` array"));
        };
        let path = element("contents", i);
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let mut first_call = true;
        for (k, part) in parts.into_iter().enumerate() {
            let part = part.object().unwrap_or_default();
            let src = BlockSource {
                path: member_element(&path, "parts", k).into(),
                ..Default::default()
            };
            let signed = part.signature.0.is_some() || part.signature_snake.0.is_some();
            conv.signatures += usize::from(signed);
            if let Some(call) = part.function_call.0 {
                let call = call.object().unwrap_or_default();
                let Some(name) = call.name.0 else {
                    let ppath = at(i).key_index("parts", k);
                    return Err(err(&ppath, "expected a string `functionCall.name`"));
                };
                let id = call
                    .id
                    .0
                    .map_or_else(|| format!("{name}#{i}.{k}"), Cow::into_owned);
                if first_call && !signed {
                    conv.unsigned.push(id.clone());
                }
                first_call = false;
                content.push(Block::ToolUse {
                    id: id.into(),
                    name: (*name).into(),
                    input: Json::new(call.args.or_null()),
                });
            } else if let Some(response) = part.function_response.0 {
                let response = response.object().unwrap_or_default();
                let name = response.name.as_deref().unwrap_or("");
                let id = match response.id.0 {
                    Some(id) => id.into_owned(),
                    None => open_call(conv, &content, name).unwrap_or(format!("{name}#?")),
                };
                let answer = response.response.or_null();
                let is_error = answer.get("error").is_some() && answer.get("result").is_none();
                content.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(answer),
                    is_error,
                });
            } else if let Some(text) = part.text.0 {
                if part.thought.0 {
                    continue;
                }
                content.push(Block::Text {
                    text: kept_text(&text, detail),
                });
            } else {
                continue;
            }
            sources.push(src);
        }
        let finish_reason = match item.finish_reason.as_deref() {
            Some("STOP") => Some(FinishReason::Stop),
            Some("MAX_TOKENS") => Some(FinishReason::Length),
            Some("SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII") => {
                Some(FinishReason::ContentFilter)
            }
            _ => None,
        };
        let message = Message {
            role,
            content,
            finish_reason,
        };
        let source = BlockSource {
            path: path.into(),
            ..Default::default()
        };
        conv.push(message, source, sources);
    }
    Ok(())
}

/// A `generateContent` body: what the reader reads, and whether a key of
/// another format (see `plain`'s list) says `detect` may not call it
/// Gemini.
#[derive(Default)]
struct Body<'a> {
    /// `None` when absent.
    contents: Option<OneOrList<Turn<'a>>>,
    tools: LaxList<Lax<ToolGroup<'a>>>,
    system: System<'a>,
    model: LaxStr<'a>,
    elsewhere: bool,
}

/// `systemInstruction`, or its snake_case spelling.
#[derive(Default)]
struct System<'a> {
    camel: Given<Lax<SystemParts<'a>>>,
    snake: Given<Lax<SystemParts<'a>>>,
}

impl<'de: 'a, 'a> FromMap<'de> for Body<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            match key.as_deref().unwrap_or("") {
                "contents" => body.contents = Some(map.next_value()?),
                "tools" => body.tools = map.next_value()?,
                "systemInstruction" => body.system.camel = map.next_value()?,
                "system_instruction" => body.system.snake = map.next_value()?,
                "model" => body.model = map.next_value()?,
                key => {
                    body.elsewhere |= crate::signs::OTHER_FORMATS_KEYS.contains(&key);
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(body)
    }
}

lax_object! {
    /// `{parts: [{text}]}`.
    struct SystemParts<'a> {
        "parts" => parts: Texts<'a>,
    }
}

lax_object! {
    /// A turn: its role, its parts, and why the model stopped.
    struct Turn<'a> {
        "role" => role: LaxStr<'a>,
        "parts" => parts: Given<OneOrList<Part<'a>>>,
        "finishReason" => finish_reason: LaxStr<'a>,
    }
}

lax_object! {
    /// A part: a call, a response, a text (or a thought), signed or not.
    struct Part<'a> {
        "functionCall" => function_call: Given<Lax<Call<'a>>>,
        "functionResponse" => function_response: Given<Lax<Response<'a>>>,
        "text" => text: LaxStr<'a>,
        "thought" => thought: IsTrue,
        "thoughtSignature" => signature: Given<IgnoredAny>,
        "thought_signature" => signature_snake: Given<IgnoredAny>,
    }
}

lax_object! {
    /// `functionCall {name, id, args}`.
    struct Call<'a> {
        "name" => name: LaxStr<'a>,
        "id" => id: LaxStr<'a>,
        "args" => args: Boxed,
    }
}

lax_object! {
    /// `functionResponse {name, id, response}`.
    struct Response<'a> {
        "name" => name: LaxStr<'a>,
        "id" => id: LaxStr<'a>,
        "response" => response: Boxed,
    }
}

lax_object! {
    /// `tools[] {functionDeclarations}` (or snake_case).
    struct ToolGroup<'a> {
        "functionDeclarations" => declarations: Given<LaxList<Lax<Declaration<'a>>>>,
        "function_declarations" => declarations_snake: Given<LaxList<Lax<Declaration<'a>>>>,
    }
}

lax_object! {
    /// A declared function.
    struct Declaration<'a> {
        "name" => name: LaxStr<'a>,
        "description" => description: LaxStr<'a>,
        "parametersJsonSchema" => json_schema: Given<Value>,
        "parameters" => parameters: Given<Value>,
    }
}

/// The id of the first call named `name` in the previous model turn that
/// no response (already read, or earlier in `reading`) answers.
/// Consecutive function response turns are one to Gemini (three parallel
/// calls answered in three turns of one response each were accepted, and
/// the reply used all three): a response in the second or third of them
/// answers the call turn before the run, after the run's earlier ones.
pub(super) fn open_call(conv: &Conversation, reading: &[Block], name: &str) -> Option<String> {
    let results = |blocks: &'_ [Block]| -> Vec<String> {
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.to_string()),
                _ => None,
            })
            .collect()
    };
    let mut answered = results(reading);
    let mut turns = conv.messages.iter().rev();
    let previous = loop {
        let m = turns.next()?;
        if m.role == Role::Assistant {
            break m;
        }
        let only_results = !m.content.is_empty()
            && m.content
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }));
        if !only_results {
            return None;
        }
        answered.extend(results(&m.content));
    };
    let answered: Vec<&str> = answered.iter().map(String::as_str).collect();
    previous.content.iter().find_map(|b| match b {
        Block::ToolUse { id, name: n, .. } if &**n == name && !answered.contains(&&**id) => {
            Some(id.to_string())
        }
        _ => None,
    })
}
