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
use super::{BlockSource, Conversation, Detail, Source, ToolSpec};
use loopdbg_formats::provider::Format;

/// The line read as `forced` (or as what it is), when it has the plain
/// shape; `None` sends it to the general reader.
pub fn conversation(line: &str, forced: Option<Source>) -> Option<Conversation> {
    match forced {
        Some(Source::Provider(format)) => read_as(line, format, true),
        Some(_) => None,
        None => guessed(line),
    }
}

/// [`conversation`], trying every shape whatever this thread has seen
/// (see `Seen`): what tests hold to the general reader line by line.
pub fn every_shape(line: &str, forced: Option<Source>) -> Option<Conversation> {
    match forced {
        Some(Source::Provider(format)) => read_as(line, format, true),
        Some(_) => None,
        None => FORMATS.into_iter().find_map(|f| read_as(line, f, false)),
    }
}

/// The formats in the order tried when the line's format is not known.
const FORMATS: [Format; 5] = [
    Format::Anthropic,
    Format::Openai,
    Format::Responses,
    Format::Gemini,
    Format::Bedrock,
];

/// What this thread has seen of the lines so far: the format that read
/// the last one (a file's lines share one, so it is tried first), and
/// how many lines in a row no shape took (a file of capture records or
/// of an agent's events: the path then stands aside for a while, so such
/// files do not pay five failed attempts a line).
#[derive(Clone, Copy)]
struct Seen {
    last: Format,
    misses: u32,
    standing_aside: u32,
}

thread_local! {
    static SEEN: std::cell::Cell<Seen> = const {
        std::cell::Cell::new(Seen { last: Format::Anthropic, misses: 0, standing_aside: 0 })
    };
}

/// Tries each shape, the last one that fitted first. Which one takes a
/// line changes only the time: each takes only what `detect` says is
/// its format, so no two take the same line.
fn guessed(line: &str) -> Option<Conversation> {
    let mut seen = SEEN.get();
    if seen.standing_aside > 0 {
        seen.standing_aside -= 1;
        SEEN.set(seen);
        return None;
    }
    let order = std::iter::once(seen.last).chain(FORMATS.into_iter().filter(|f| *f != seen.last));
    let mut found = None;
    for format in order {
        if let Some(conv) = read_as(line, format, false) {
            seen.last = format;
            found = Some(conv);
            break;
        }
    }
    match found {
        Some(_) => seen.misses = 0,
        None if seen.misses >= 3 => (seen.misses, seen.standing_aside) = (0, 64),
        None => seen.misses += 1,
    }
    SEEN.set(seen);
    found
}

fn read_as(line: &str, format: Format, forced: bool) -> Option<Conversation> {
    match format {
        Format::Openai => crate::openai_chat::plain(line, forced),
        Format::Anthropic => anthropic(line),
        Format::Responses => crate::responses::plain(line),
        Format::Gemini => crate::gemini::plain(line),
        Format::Bedrock => crate::bedrock::plain(line),
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

/// A field written either as a string or as an array of `T` (a message's
/// content in Chat, Responses and Anthropic: text, or parts and blocks).
/// `null` is taken for absent by the `Option` around it, as the general
/// readers take it.
enum TextOr<'a, T> {
    Text(Cow<'a, str>),
    List(Vec<T>),
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for TextOr<'a, T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a, T>(std::marker::PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<'a, T> {
            type Value = TextOr<'a, T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(TextOr::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(TextOr::Text(Cow::Owned(s.to_string())))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(TextOr::List(items))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// The keys of [`Elsewhere`], for the readers that read their top level
/// by hand (Bedrock's): any of them, other than the reader's own, sends
/// the line to the general path.
pub(crate) const ELSEWHERE: &[&str] = &[
    "input",
    "contents",
    "uuid",
    "sessionId",
    "info",
    "functions",
    "thinking",
    "mcp_servers",
    "toolConfig",
    "inferenceConfig",
    "modelId",
    "additionalModelRequestFields",
    "loopdbg",
    "additional_tools",
    "previous_response_id",
    "conversation",
    "systemInstruction",
    "system_instruction",
    "function_declarations",
];

/// Top-level keys that make a body something other than a plain request
/// of the format tried: another provider's fields, an agent log's or a
/// capture record's, or fields the general readers read that this path
/// does not (Chat's older `functions`, Anthropic's `thinking` and MCP
/// servers, Responses' stored continuations, Gemini's system
/// instruction). Any of them sends the line to the general reader, which
/// tells them apart. A body's own fields are taken by the body before
/// these are looked at (`flatten` gets only the keys left over), so a
/// Responses body's `input` is not "elsewhere".
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
    additional_tools: Present,
    previous_response_id: Present,
    conversation: Present,
    #[serde(rename = "systemInstruction")]
    system_instruction: Present,
    #[serde(rename = "system_instruction")]
    system_instruction_snake: Present,
    function_declarations: Present,
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
            &self.additional_tools,
            &self.previous_response_id,
            &self.conversation,
            &self.system_instruction,
            &self.system_instruction_snake,
            &self.function_declarations,
        ]
        .iter()
        .any(|p| p.0)
    }
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
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    max_tokens: Present,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnthropicMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<TextOr<'a, AnthropicBlock<'a>>>,
}

impl AnthropicMessage<'_> {
    /// Whether it holds a block only Anthropic's format has (what `detect`
    /// takes for evidence): a call, a result, thinking.
    fn has_blocks(&self) -> bool {
        matches!(&self.content, Some(TextOr::List(blocks)) if blocks.iter().any(|b| {
            matches!(
                b.kind.as_ref(),
                "tool_use" | "tool_result" | "server_tool_use" | "mcp_tool_use" | "thinking"
                    | "redacted_thinking"
            )
        }))
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
    // A body nothing in it says is Anthropic's, whose model is not Claude
    // (or that lacks `max_tokens`), is Chat's to `detect`: leave it.
    let says_anthropic = body.system.is_some()
        || body.tools.0.as_ref().is_some_and(|t| !t.is_empty())
        || body.messages.iter().any(AnthropicMessage::has_blocks);
    if !says_anthropic && super::detect::leans_openai(body.model.as_deref(), body.max_tokens.0) {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    for t in body.tools.0.into_iter().flatten() {
        conv.tools
            .push(tool(t.name, t.input_schema.0, t.description));
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
        push(&mut conv, role, content, path, sources);
    }
    Some(conv)
}

/// A message's blocks and where each stands, as `anthropic::blocks` reads
/// them; `None` for a block this path leaves to it.
fn anthropic_blocks(
    path: &str,
    content: Option<TextOr<AnthropicBlock>>,
) -> Option<(Vec<Block>, Vec<BlockSource>)> {
    let blocks = match content {
        None => return Some((Vec::new(), Vec::new())),
        Some(TextOr::Text(text)) => {
            let block = Block::Text {
                text: kept_text(&text, Detail::Full),
            };
            return Some((vec![block], vec![at(format!("{path}.content"))]));
        }
        Some(TextOr::List(blocks)) => blocks,
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

/// A tool as the general readers keep it.
fn tool(name: Cow<str>, schema: Option<Value>, description: Option<Cow<str>>) -> ToolSpec {
    ToolSpec {
        name: name.into_owned(),
        schema,
        description: description.map(Cow::into_owned),
    }
}

/// Where a message or a block stands in its body.
fn at(path: String) -> BlockSource {
    BlockSource {
        path: path.into(),
        ..Default::default()
    }
}

/// A message of `content` at `path`, each block at its source.
fn push(
    conv: &mut Conversation,
    role: Role,
    content: Vec<Block>,
    path: String,
    sources: Vec<BlockSource>,
) {
    let message = Message {
        role,
        content,
        finish_reason: None,
    };
    conv.push(message, at(path), sources);
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
    fn plain_bodies_read_as_the_general_readers_do() {
        let lines = [
            r#"{"model":"gpt-4.1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{not json"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"temp\":21}"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","required":["city"]},"strict":true}}],"temperature":0}"#,
            r#"{"messages":[{"role":"developer","content":"x"},{"role":"user"}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":null}}]}"#,
            r#"{"messages":[{"role":"assistant","content":"","tool_calls":[]},{"role":"tool","tool_call_id":"x"}]}"#,
            r#"{"model":"claude-sonnet-4-5","max_tokens":9,"system":"Be brief.","messages":[{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":[{"type":"text","text":"One lookup."},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"},"cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"21"}],"is_error":true},{"type":"text"}]},{"role":"assistant","content":null}],"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}"#,
            // Chat with content parts.
            r#"{"messages":[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
            // Responses as the openai-agents SDK sends it.
            r#"{"include":[],"input":[{"content":"Weather in Paris?","role":"user"},{"id":"fc_1","arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","status":"completed"},{"call_id":"call_1","output":"21","type":"function_call_output"},{"id":"msg_1","content":[{"annotations":[],"text":"21 degrees.","type":"output_text","logprobs":[]}],"role":"assistant","status":"completed","type":"message"}],"instructions":"Be brief.","model":"gpt-4.1","tools":[{"name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":true,"type":"function","description":"Weather."}],"stream":false}"#,
            r#"{"input":[{"role":"developer","content":"x"},{"type":"function_call","call_id":"a","name":"f"},{"type":"function_call","call_id":"b","name":"f","arguments":"{"},{"type":"function_call_output","call_id":"b","output":[{"type":"input_text","text":"x"}]}]}"#,
            // Gemini with and without ids, signed, a thought.
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"no"}}},{"functionResponse":{"name":"f","id":"x","response":{"result":1}}}]},{"parts":[{"text":"ok"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"F","parametersJsonSchema":{"type":"object"},"parameters":{}}]}],"model":"gemini-2.5-flash"}"#,
            // Bedrock with a system prompt, a cache point, an error result.
            r#"{"modelId":"anthropic.claude","system":[{"text":"a"},{"cachePoint":{"type":"default"}},{"text":"b"}],"messages":[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"no"}],"status":"error"}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{"type":"default"}}],"toolChoice":{"auto":{}}},"inferenceConfig":{"maxTokens":9}}"#,
            r#"{"messages":[{"role":"user","content":[{"text":null}]}]}"#,
            // Gemini, Bedrock, Responses and Chat read by one reader each, so the fast
            // path takes their odder shapes too: one part given as an
            // object, a snake_case system, an image block.
            r#"{"contents":[{"role":"user","parts":{"text":"hi"}}]}"#,
            r#"{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            r#"{"messages":[{"role":"user","content":[{"image":{"format":"png"}}]}]}"#,
            // And Responses': a stored reference, a continuation, a
            // custom call, `input` as a string.
            r#"{"input":[{"id":"fc_1"}]}"#,
            r#"{"previous_response_id":"r","input":[{"type":"function_call_output","call_id":"a","output":"x"}]}"#,
            r#"{"input":[{"type":"custom_tool_call","call_id":"a","name":"f","input":"x"}]}"#,
            r#"{"input":"hi","tools":[{"type":"function","name":"f"},{"function":{"name":"g"}}]}"#,
            // And Chat's.
            // A null call id is paired by position, with a warning.
            r#"{"messages":[{"role":"tool","tool_call_id":null,"content":"x"}]}"#,
            // Content parts, a legacy function call, an unknown field.
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"x"}]}]}"#,
            r#"{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x","name":"f"}]}"#,
            // Duplicate keys: the last is kept, as in a `Value`.
            r#"{"messages":[{"role":"user","role":"tool","tool_call_id":"a"}]}"#,
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
            r#"{"messages":[{"role":"user","content":"hi","ts":1}],"max_tokens":1}"#,
            // Responses: a message with no role (an error), `input` as
            // an object (not Responses to `detect`).
            r#"{"input":[{"type":"message","content":"x"}]}"#,
            r#"{"input":{"role":"user"}}"#,
            // Gemini: an unknown role (an error); a body also holding
            // Responses' `input`.
            r#"{"contents":[{"role":"system","parts":[]}]}"#,
            r#"{"input":[],"contents":[{"role":"user","parts":[]}]}"#,
            // Bedrock: an empty block (a notice).
            r#"{"messages":[{"role":"user","content":[{}]}]}"#,
            // Another format's parts in a Chat-looking body: detect says
            // Responses, or Anthropic.
            r#"{"messages":[{"role":"assistant","content":[{"type":"output_text","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
            // Another format's keys, a capture record, a bare array.
            r#"{"system":"s","messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#,
            r#"{"loopdbg":"capture","request":{},"messages":[{"role":"tool","tool_call_id":"a"}]}"#,
            r#"[{"role":"tool","tool_call_id":"a","content":"x"}]"#,
            // Chat: an unknown role (an error).
            r#"{"messages":[{"role":"robot","content":"x"}],"model":"gpt-5"}"#,
        ] {
            // `every_shape`: `conversation` may stand aside after misses.
            assert!(every_shape(line, None).is_none(), "{line}");
        }
        let chat = r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#;
        assert!(conversation(chat, Some(Source::Provider(Format::Anthropic))).is_none());
        assert!(conversation(chat, Some(Source::Provider(Format::Openai))).is_some());
    }
}
