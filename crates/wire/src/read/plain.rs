//! A fast path for the plain shape of a request body, for `check` over
//! JSON Lines of them: the line is deserialized straight into typed,
//! borrowed structs (no `serde_json::Value` tree, no hashed maps) and
//! read into the same [`Conversation`] the general reader would give.
//!
//! It takes only what it is sure of: every object it reads must hold
//! exactly the fields it knows, and a top-level key that could make the
//! line another format, a capture record or an older spelling sends the
//! line back. `None` means "read it the general way", never "bad line":
//! the general reader then finds what there is, error or conversation.
//! `tests` holds both readers to the same conversation on every fixture.
//!
//! Why: building a `Value` tree and walking it was two thirds of checking
//! a line, and `check` is measured against jq on 100 MB files.

use std::borrow::Cow;

use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::fingerprint::kept_text;
use super::{BlockSource, Conversation, Detail, ReadNote, Source, ToolSpec, finish_reason_of};
use crate::provider::Format;

/// The line read as `forced` (or as what it is), when it has the plain
/// shape; `None` sends it to the general reader.
pub fn conversation(line: &str, forced: Option<Source>) -> Option<Conversation> {
    // Which shape to try first: a cheap look at the line's first key
    // names; a wrong guess costs one failed attempt, never a wrong answer.
    match forced {
        Some(Source::Provider(Format::Openai)) => chat(line, true),
        Some(Source::Provider(Format::Anthropic)) => anthropic(line),
        Some(_) => None,
        None if line.contains("\"tool_calls\"") || line.contains("\"role\":\"tool\"") => {
            chat(line, false)
        }
        None => anthropic(line).or_else(|| chat(line, false)),
    }
}

/// A field whose presence is all that matters (`null` counts as present,
/// as it does for the general reader's `contains_key`).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d)?;
        Ok(Present(true))
    }
}

/// A field given with any value, `null` included (an `Option` field would
/// take `null` for absent, and the general reader tells them apart).
struct Given<T>(Option<T>);

impl<T> Default for Given<T> {
    fn default() -> Self {
        Given(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Given<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Given(Some(v)))
    }
}

/// Top-level keys that make a body something other than a plain request
/// of the format tried: another provider's fields, an agent log's or a
/// capture record's, or fields the general readers read that this path
/// does not (Chat's older `functions`, Anthropic's `thinking` and MCP
/// servers). Any of them sends the line to the general reader, which
/// tells them apart.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Elsewhere {
    input: Present,
    contents: Present,
    uuid: Present,
    #[serde(rename = "sessionId")]
    session_id: Present,
    info: Present,
    functions: Present,
    thinking: Present,
    mcp_servers: Present,
    #[serde(rename = "toolConfig")]
    tool_config: Present,
    #[serde(rename = "inferenceConfig")]
    inference_config: Present,
    #[serde(rename = "modelId")]
    model_id: Present,
    #[serde(rename = "additionalModelRequestFields")]
    additional_fields: Present,
    loopdbg: Present,
}

impl Elsewhere {
    fn any(&self) -> bool {
        [
            &self.input,
            &self.contents,
            &self.uuid,
            &self.session_id,
            &self.info,
            &self.functions,
            &self.thinking,
            &self.mcp_servers,
            &self.tool_config,
            &self.inference_config,
            &self.model_id,
            &self.additional_fields,
            &self.loopdbg,
        ]
        .iter()
        .any(|p| p.0)
    }
}

/// An OpenAI Chat Completions body of plain messages: string contents,
/// function calls with string arguments, named tool results.
#[derive(Deserialize)]
struct ChatBody<'a> {
    #[serde(borrow)]
    messages: Vec<ChatMessage<'a>>,
    #[serde(default, borrow)]
    tools: Given<Vec<ChatTool<'a>>>,
    #[serde(default)]
    system: Present,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Given<Vec<ChatCall<'a>>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatCall<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(rename = "type", default)]
    _kind: Present,
    #[serde(borrow)]
    function: ChatFunction<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatTool<'a> {
    #[serde(rename = "type", default)]
    _kind: Present,
    #[serde(borrow)]
    function: ChatToolFunction<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatToolFunction<'a> {
    // `strict` is read by the provider, not by loopdbg.
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Given<Value>,
    #[serde(rename = "strict", default)]
    _strict: Present,
}

/// A Chat body in the plain shape, read as `read::openai_chat` reads it.
fn chat(line: &str, forced: bool) -> Option<Conversation> {
    let body: ChatBody = serde_json::from_str(line).ok()?;
    if body.elsewhere.any() || body.system.0 {
        return None;
    }
    let roles_known = body.messages.iter().all(|m| {
        matches!(
            m.role.as_ref(),
            "system" | "developer" | "user" | "assistant" | "tool"
        )
    });
    // What `detect` would say: tool messages or calls (or, short of them,
    // a tool in Chat's shape or a system message) make it Chat; a body
    // with none of these is read as Anthropic.
    let evidence = body
        .messages
        .iter()
        .any(|m| m.role == "tool" || m.tool_calls.0.is_some())
        || body.tools.0.as_ref().is_some_and(|t| !t.is_empty())
        || body
            .messages
            .iter()
            .any(|m| matches!(m.role.as_ref(), "system" | "developer"));
    if !roles_known || !(evidence || forced) {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    for t in body.tools.0.into_iter().flatten() {
        conv.tools.push(ToolSpec {
            name: t.function.name.into_owned(),
            schema: t.function.parameters.0,
            description: t.function.description.map(Cow::into_owned),
        });
    }
    for (i, m) in body.messages.into_iter().enumerate() {
        chat_message(&mut conv, i, m)?;
    }
    Some(conv)
}

/// One message, as `openai_chat::read` reads it; `None` for one it reads
/// by rules this path leaves to it (a result with no call id).
fn chat_message(conv: &mut Conversation, i: usize, m: ChatMessage) -> Option<()> {
    let path = format!("messages[{i}]");
    let at = |p: String| BlockSource {
        path: p.into(),
        ..Default::default()
    };
    let mut content = Vec::new();
    let mut sources = Vec::new();
    let role = match m.role.as_ref() {
        "system" | "developer" => {
            conv.system = m.content.map(Cow::into_owned);
            return Some(());
        }
        "user" => {
            let text = m.content.unwrap_or_default();
            content.push(Block::Text {
                text: kept_text(&text, Detail::Full),
            });
            sources.push(at(format!("{path}.content")));
            Role::User
        }
        "assistant" => {
            if let Some(text) = m.content {
                content.push(Block::Text {
                    text: kept_text(&text, Detail::Full),
                });
                sources.push(at(format!("{path}.content")));
            }
            for (k, c) in m.tool_calls.0.into_iter().flatten().enumerate() {
                let source = at(format!("{path}.tool_calls[{k}]"));
                let input = arguments(&c.function.arguments, &c.id, &source, &mut conv.notes);
                content.push(Block::ToolUse {
                    id: c.id.as_ref().into(),
                    name: c.function.name.as_ref().into(),
                    input,
                });
                sources.push(source);
            }
            Role::Assistant
        }
        _ => {
            content.push(Block::ToolResult {
                tool_use_id: m.tool_call_id?.as_ref().into(),
                content: Json::new(
                    m.content
                        .map_or(Value::Null, |c| Value::String(c.into_owned())),
                ),
                is_error: false,
            });
            sources.push(at(path.clone()));
            Role::Tool
        }
    };
    conv.push(
        Message {
            role,
            content,
            finish_reason: finish_reason_of(None),
        },
        at(path),
        sources,
    );
    Some(())
}

/// An Anthropic Messages body of plain messages: string or block
/// contents of `text`, `tool_use` and `tool_result` blocks.
#[derive(Deserialize)]
struct AnthropicBody<'a> {
    #[serde(borrow)]
    messages: Vec<AnthropicMessage<'a>>,
    #[serde(default, borrow)]
    tools: Given<Vec<AnthropicTool<'a>>>,
    #[serde(default, borrow)]
    system: Option<Cow<'a, str>>,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnthropicMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: AnthropicContent<'a>,
}

/// A message's content: a string, blocks, or nothing (absent or `null`).
#[derive(Default)]
enum AnthropicContent<'a> {
    #[default]
    Empty,
    Text(Cow<'a, str>),
    Blocks(Vec<AnthropicBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for AnthropicContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = AnthropicContent<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of blocks")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(AnthropicContent::Empty)
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(AnthropicContent::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(AnthropicContent::Text(Cow::Owned(s.to_string())))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(AnthropicContent::Blocks(blocks))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// One block, any of the three kinds: which fields count depends on
/// `type`, as in the general reader.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnthropicBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default, borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    is_error: Option<bool>,
    // Read by the provider, not by loopdbg.
    #[serde(rename = "cache_control", default)]
    _cache_control: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnthropicTool<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(default)]
    input_schema: Given<Value>,
    #[serde(rename = "type", default)]
    _kind: Present,
    #[serde(rename = "cache_control", default)]
    _cache_control: Present,
}

/// An Anthropic body in the plain shape, read as `read::anthropic` reads
/// it. Nothing in the shape can make `detect` say another format: no tool
/// message, no `tool_calls`, no Chat-shaped tool, no system role.
fn anthropic(line: &str) -> Option<Conversation> {
    let body: AnthropicBody = serde_json::from_str(line).ok()?;
    if body.elsewhere.any() {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    for t in body.tools.0.into_iter().flatten() {
        conv.tools.push(ToolSpec {
            name: t.name.into_owned(),
            schema: t.input_schema.0,
            description: t.description.map(Cow::into_owned),
        });
    }
    conv.system = body.system.map(Cow::into_owned);
    for (i, m) in body.messages.into_iter().enumerate() {
        let role = match m.role.as_ref() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => return None,
        };
        let path = format!("messages[{i}]");
        let (content, sources) = anthropic_blocks(&path, m.content)?;
        conv.push(
            Message {
                role,
                content,
                finish_reason: finish_reason_of(None),
            },
            BlockSource {
                path: path.into(),
                ..Default::default()
            },
            sources,
        );
    }
    Some(conv)
}

/// A message's blocks and where each stands, as `anthropic::blocks` reads
/// them; `None` for a block this path leaves to it.
fn anthropic_blocks(
    path: &str,
    content: AnthropicContent,
) -> Option<(Vec<Block>, Vec<BlockSource>)> {
    let at = |p: String| BlockSource {
        path: p.into(),
        ..Default::default()
    };
    let blocks = match content {
        AnthropicContent::Empty => return Some((Vec::new(), Vec::new())),
        AnthropicContent::Text(text) => {
            let block = Block::Text {
                text: kept_text(&text, Detail::Full),
            };
            return Some((vec![block], vec![at(format!("{path}.content"))]));
        }
        AnthropicContent::Blocks(blocks) => blocks,
    };
    let mut content = Vec::with_capacity(blocks.len());
    let mut sources = Vec::with_capacity(blocks.len());
    for (k, b) in blocks.into_iter().enumerate() {
        content.push(match b.kind.as_ref() {
            "text" => Block::Text {
                text: kept_text(b.text.as_deref().unwrap_or(""), Detail::Full),
            },
            "tool_use" => Block::ToolUse {
                id: b.id?.as_ref().into(),
                name: b.name?.as_ref().into(),
                input: Json::new(b.input.unwrap_or(Value::Null)),
            },
            "tool_result" => Block::ToolResult {
                tool_use_id: b.tool_use_id?.as_ref().into(),
                content: Json::new(b.content.unwrap_or(Value::Null)),
                is_error: b.is_error.unwrap_or(false),
            },
            _ => return None,
        });
        sources.push(at(format!("{path}.content[{k}]")));
    }
    Some((content, sources))
}

/// A call's `arguments` string parsed, or kept as text with a note, as
/// `read::parse_arguments` does.
fn arguments(raw: &str, id: &str, source: &BlockSource, notes: &mut Vec<ReadNote>) -> Json {
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => Json::new(v),
        Err(e) => {
            notes.push(ReadNote {
                source: source.clone(),
                raw: raw.to_string(),
                id: id.to_string(),
                error: e.to_string(),
            });
            Json::new(Value::String(raw.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn general(line: &str) -> Conversation {
        let doc: Value = serde_json::from_str(line).unwrap();
        let source = super::super::detect(&doc).unwrap();
        super::super::read_owned(doc, source).unwrap()
    }

    #[test]
    fn plain_chat_reads_as_the_general_reader_does() {
        let lines = [
            r#"{"model":"gpt-4.1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{not json"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"temp\":21}"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","required":["city"]},"strict":true}}],"temperature":0}"#,
            r#"{"messages":[{"role":"developer","content":"x"},{"role":"user"}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":null}}]}"#,
            r#"{"messages":[{"role":"assistant","content":"","tool_calls":[]},{"role":"tool","tool_call_id":"x"}]}"#,
            r#"{"model":"claude-sonnet-4-5","max_tokens":9,"system":"Be brief.","messages":[{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":[{"type":"text","text":"One lookup."},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"},"cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"21"}],"is_error":true},{"type":"text"}]},{"role":"assistant","content":null}],"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}"#,
        ];
        for line in lines {
            let plain = conversation(line, None).expect("the plain path takes it");
            assert_eq!(plain, general(line), "{line}");
        }
    }

    #[test]
    fn anything_else_goes_to_the_general_reader() {
        for line in [
            // Thinking, server tools, a call from code, a Cline task store.
            r#"{"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search"}]}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"tool_id":"s"}}]}]}"#,
            r#"{"messages":[{"role":"user","content":"hi","ts":1}]}"#,
            // Bedrock's blocks, keyed by kind.
            r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#,
            // A null call id is paired by position, with a warning.
            r#"{"messages":[{"role":"tool","tool_call_id":null,"content":"x"}]}"#,
            // Content parts, a legacy function call, an unknown field.
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"x"}]}]}"#,
            r#"{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x","name":"f"}]}"#,
            // Another format's keys, a capture record, a bare array.
            r#"{"system":"s","messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#,
            r#"{"loopdbg":"capture","request":{},"messages":[{"role":"tool","tool_call_id":"a"}]}"#,
            r#"[{"role":"tool","tool_call_id":"a","content":"x"}]"#,
            // Duplicate keys: the general reader keeps the last.
            r#"{"messages":[{"role":"user","role":"tool","tool_call_id":"a"}]}"#,
        ] {
            assert!(conversation(line, None).is_none(), "{line}");
        }
        let chat = r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#;
        assert!(conversation(chat, Some(Source::Provider(Format::Anthropic))).is_none());
        assert!(conversation(chat, Some(Source::Provider(Format::Openai))).is_some());
    }
}
