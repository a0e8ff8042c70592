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
        Format::Openai => chat(line, forced),
        Format::Anthropic => anthropic(line),
        Format::Responses => responses(line),
        Format::Gemini => gemini(line),
        Format::Bedrock => bedrock(line),
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

/// Chat's and Responses' text fields: a string, or parts whose `text`s
/// are joined as `read::text_of_parts` joins them.
type TextParts<'a> = TextOr<'a, TextPart<'a>>;

/// One part of a text field: text, or a part the general reader passes
/// over for its text (a refusal). Anything else (an image) is not plain.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextPart<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "annotations", default)]
    _annotations: Present,
    #[serde(rename = "logprobs", default)]
    _logprobs: Present,
}

impl TextParts<'_> {
    /// Whether every part is Chat's own `text` (or untyped): `detect`
    /// reads a part's type (`input_text` says Responses, `tool_use` or
    /// `thinking` Anthropic), so a body with any other is not plain Chat.
    fn only_text(&self) -> bool {
        match self {
            TextOr::Text(_) => true,
            TextOr::List(parts) => parts
                .iter()
                .all(|p| matches!(p.kind.as_deref(), None | Some("text"))),
        }
    }

    fn joined(self) -> String {
        match self {
            TextOr::Text(text) => text.into_owned(),
            TextOr::List(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }
}

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
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    max_tokens: Present,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<TextParts<'a>>,
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
    // a tool in Chat's shape, a system message, or a model that is not
    // Claude or no `max_tokens`) make it Chat; a body with none of these
    // is read as Anthropic.
    // (A part with no `type` is Bedrock's shape to `detect`, which asks
    // that before it leans.)
    let untyped = body.messages.iter().any(|m| {
        matches!(&m.content, Some(TextOr::List(parts)) if parts.iter().any(|p| p.kind.is_none()))
    });
    let leans = !untyped && super::detect::leans_openai(body.model.as_deref(), body.max_tokens.0);
    let evidence = leans
        || body
            .messages
            .iter()
            .any(|m| m.role == "tool" || m.tool_calls.0.is_some())
        || body.tools.0.as_ref().is_some_and(|t| !t.is_empty())
        || body
            .messages
            .iter()
            .any(|m| matches!(m.role.as_ref(), "system" | "developer"));
    let only_text = body
        .messages
        .iter()
        .all(|m| m.content.as_ref().is_none_or(TextParts::only_text));
    if !roles_known || !only_text || !(evidence || forced) {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    for t in body.tools.0.into_iter().flatten() {
        conv.tools.push(tool(
            t.function.name,
            t.function.parameters.0,
            t.function.description,
        ));
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
    let mut content = Vec::new();
    let mut sources = Vec::new();
    let role = match m.role.as_ref() {
        "system" | "developer" => {
            conv.system = m.content.map(TextParts::joined);
            return Some(());
        }
        "user" => {
            let text = m.content.map(TextParts::joined).unwrap_or_default();
            content.push(Block::Text {
                text: kept_text(&text, Detail::Full),
            });
            sources.push(at(format!("{path}.content")));
            Role::User
        }
        "assistant" => {
            if let Some(text) = m.content.map(TextParts::joined) {
                content.push(Block::Text {
                    text: kept_text(&text, Detail::Full),
                });
                sources.push(at(format!("{path}.content")));
            }
            for (k, c) in m.tool_calls.0.into_iter().flatten().enumerate() {
                let source = at(format!("{path}.tool_calls[{k}]"));
                let input = super::parse_argument_text(
                    &c.function.arguments,
                    &c.id,
                    &source,
                    &mut conv.notes,
                );
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
                // The result is kept as written: parts stay an array.
                content: Json::new(match m.content {
                    None => Value::Null,
                    Some(TextOr::Text(text)) => Value::String(text.into_owned()),
                    Some(TextOr::List(_)) => return None,
                }),
                is_error: false,
            });
            sources.push(at(path.clone()));
            Role::Tool
        }
    };
    push(conv, role, content, path, sources);
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

/// An OpenAI Responses body of plain items: messages with string
/// content, function calls and their outputs.
#[derive(Deserialize)]
struct ResponsesBody<'a> {
    #[serde(borrow)]
    input: Vec<ResponsesItem<'a>>,
    #[serde(default, borrow)]
    tools: Given<Vec<ResponsesTool<'a>>>,
    #[serde(default, borrow)]
    instructions: Option<Cow<'a, str>>,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponsesItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<TextParts<'a>>,
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Given<Cow<'a, str>>,
    #[serde(default)]
    output: Option<Value>,
    // The item's own id and status: read by the provider, not by loopdbg.
    #[serde(rename = "id", default)]
    _id: Present,
    #[serde(rename = "status", default)]
    _status: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponsesTool<'a> {
    #[serde(rename = "type", default)]
    _kind: Present,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Given<Value>,
    #[serde(rename = "strict", default)]
    _strict: Present,
}

/// A Responses body in the plain shape, read as `read::responses` reads
/// it. An `input` array is what `detect` looks at first.
fn responses(line: &str) -> Option<Conversation> {
    let body: ResponsesBody = serde_json::from_str(line).ok()?;
    if body.elsewhere.any() {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Responses));
    for t in body.tools.0.into_iter().flatten() {
        conv.tools.push(tool(t.name, t.parameters.0, t.description));
    }
    conv.system = body.instructions.map(Cow::into_owned);
    for (i, item) in body.input.into_iter().enumerate() {
        responses_item(&mut conv, i, item)?;
    }
    Some(conv)
}

/// One input item, as `responses::read_items` reads it.
fn responses_item(conv: &mut Conversation, i: usize, item: ResponsesItem) -> Option<()> {
    let src = at(format!("input[{i}]"));
    // An item with neither `type` nor `role` may be a stored reference.
    let kind = match (item.kind, &item.role) {
        (None, None) => return None,
        (None, Some(_)) => Cow::Borrowed("message"),
        (Some(kind), _) => kind,
    };
    match kind.as_ref() {
        "message" => {
            let text = item.content.map(TextParts::joined).unwrap_or_default();
            let role = match item.role?.as_ref() {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "system" | "developer" => {
                    conv.system = Some(text);
                    return Some(());
                }
                _ => return None,
            };
            let text = Block::Text {
                text: kept_text(&text, Detail::Full),
            };
            conv.push(plain_message(role, text), src.clone(), vec![src]);
        }
        "function_call" => {
            let id = item.call_id?;
            let name = item.name?;
            let input = match item.arguments.0 {
                Some(raw) => super::parse_argument_text(&raw, &id, &src, &mut conv.notes),
                None => Json::new(Value::Object(Default::default())),
            };
            let call = Block::ToolUse {
                id: id.as_ref().into(),
                name: name.as_ref().into(),
                input,
            };
            // Calls of one turn join the assistant message before them.
            conv.push_joining(Role::Assistant, call, src);
        }
        "function_call_output" => {
            let result = Block::ToolResult {
                tool_use_id: item.call_id?.as_ref().into(),
                content: Json::new(item.output.unwrap_or(Value::Null)),
                is_error: false,
            };
            conv.push(plain_message(Role::Tool, result), src.clone(), vec![src]);
        }
        _ => return None,
    }
    Some(())
}

/// A message of one block and no finish reason.
fn plain_message(role: Role, block: Block) -> Message {
    Message {
        role,
        content: vec![block],
        finish_reason: None,
    }
}

/// A Gemini `generateContent` body of plain turns: text, function calls
/// and function responses.
#[derive(Deserialize)]
struct GeminiBody<'a> {
    #[serde(borrow)]
    contents: Vec<GeminiTurn<'a>>,
    #[serde(default, borrow)]
    tools: Given<Vec<GeminiTools<'a>>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiTurn<'a> {
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parts: Vec<GeminiPart<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiPart<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "functionCall", default, borrow)]
    function_call: Given<GeminiCall<'a>>,
    #[serde(rename = "functionResponse", default, borrow)]
    function_response: Given<GeminiResponse<'a>>,
    #[serde(rename = "thoughtSignature", default)]
    signature: Present,
    #[serde(rename = "thought_signature", default)]
    signature_snake: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiCall<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiResponse<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    response: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiTools<'a> {
    #[serde(rename = "functionDeclarations", borrow)]
    declarations: Vec<GeminiDeclaration<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeminiDeclaration<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Given<Value>,
    #[serde(rename = "parametersJsonSchema", default)]
    json_schema: Given<Value>,
}

/// A Gemini body in the plain shape, read as `read::gemini` reads it.
fn gemini(line: &str) -> Option<Conversation> {
    let body: GeminiBody = serde_json::from_str(line).ok()?;
    if body.elsewhere.any() {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Gemini));
    for f in body
        .tools
        .0
        .into_iter()
        .flatten()
        .flat_map(|t| t.declarations)
    {
        conv.tools.push(tool(
            f.name,
            f.json_schema.0.or(f.parameters.0),
            f.description,
        ));
    }
    conv.model = body.model.map(Cow::into_owned);
    for (i, turn) in body.contents.into_iter().enumerate() {
        gemini_turn(&mut conv, i, turn)?;
    }
    Some(conv)
}

/// One turn, as `read::gemini` reads it.
fn gemini_turn(conv: &mut Conversation, i: usize, turn: GeminiTurn) -> Option<()> {
    let role = match turn.role.as_deref().unwrap_or("user") {
        "model" => Role::Assistant,
        "user" | "function" | "tool" => Role::User,
        _ => return None,
    };
    let path = format!("contents[{i}]");
    let mut content = Vec::new();
    let mut sources = Vec::new();
    let mut first_call = true;
    for (k, part) in turn.parts.into_iter().enumerate() {
        let src = at(format!("{path}.parts[{k}]"));
        let signed = part.signature.0 || part.signature_snake.0;
        conv.signatures += usize::from(signed);
        if let Some(call) = part.function_call.0 {
            let id = call
                .id
                .map_or_else(|| format!("{}#{i}.{k}", call.name), Cow::into_owned);
            if first_call && !signed {
                conv.unsigned.push(id.clone());
            }
            first_call = false;
            content.push(Block::ToolUse {
                id: id.into(),
                name: call.name.as_ref().into(),
                input: Json::new(call.args.unwrap_or(Value::Null)),
            });
        } else if let Some(response) = part.function_response.0 {
            let name = response.name.as_deref().unwrap_or("");
            let id = match response.id {
                Some(id) => id.into_owned(),
                None => {
                    super::gemini::open_call(conv, &content, name).unwrap_or(format!("{name}#?"))
                }
            };
            let answer = response.response.unwrap_or(Value::Null);
            let is_error = answer.get("error").is_some() && answer.get("result").is_none();
            content.push(Block::ToolResult {
                tool_use_id: id.into(),
                content: Json::new(answer),
                is_error,
            });
        } else if let Some(text) = part.text {
            if part.thought == Some(true) {
                continue;
            }
            content.push(Block::Text {
                text: kept_text(&text, Detail::Full),
            });
        } else {
            continue;
        }
        sources.push(src);
    }
    push(conv, role, content, path, sources);
    Some(())
}

/// A Bedrock Converse body of plain messages: blocks keyed by kind
/// (`text`, `toolUse`, `toolResult`, `cachePoint`).
#[derive(Deserialize)]
struct BedrockBody<'a> {
    #[serde(borrow)]
    messages: Vec<BedrockMessage<'a>>,
    #[serde(rename = "toolConfig", default, borrow)]
    tool_config: Option<BedrockToolConfig<'a>>,
    #[serde(default, borrow)]
    system: Option<Vec<BedrockSystem<'a>>>,
    #[serde(rename = "modelId", default, borrow)]
    model_id: Option<Cow<'a, str>>,
    #[serde(rename = "inferenceConfig", default)]
    inference_config: Present,
    #[serde(rename = "additionalModelRequestFields", default)]
    additional_fields: Present,
    #[serde(flatten)]
    elsewhere: Elsewhere,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    content: Vec<BedrockBlock<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockBlock<'a> {
    #[serde(default, borrow)]
    text: Given<Option<Cow<'a, str>>>,
    #[serde(rename = "toolUse", default, borrow)]
    tool_use: Given<BedrockToolUse<'a>>,
    #[serde(rename = "toolResult", default, borrow)]
    tool_result: Given<BedrockToolResult<'a>>,
    #[serde(rename = "cachePoint", default)]
    cache_point: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockToolUse<'a> {
    #[serde(rename = "toolUseId", borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockToolResult<'a> {
    #[serde(rename = "toolUseId", borrow)]
    id: Cow<'a, str>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockSystem<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "cachePoint", default)]
    _cache_point: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockToolConfig<'a> {
    #[serde(default, borrow)]
    tools: Given<Vec<BedrockTool<'a>>>,
    #[serde(rename = "toolChoice", default)]
    _choice: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockTool<'a> {
    #[serde(rename = "toolSpec", default, borrow)]
    spec: Option<BedrockToolSpec<'a>>,
    #[serde(rename = "cachePoint", default)]
    _cache_point: Present,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockToolSpec<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(rename = "inputSchema", default)]
    input_schema: Option<BedrockSchema>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BedrockSchema {
    #[serde(default)]
    json: Given<Value>,
}

/// A Bedrock body in the plain shape, read as `read::bedrock` reads it.
/// `detect` calls it Bedrock for Converse's own top-level fields or for
/// a block keyed by kind; a body with neither is left to it.
fn bedrock(line: &str) -> Option<Conversation> {
    let body: BedrockBody = serde_json::from_str(line).ok()?;
    let converse_fields = body.tool_config.is_some()
        || body.model_id.is_some()
        || body.inference_config.0
        || body.additional_fields.0;
    let blocks = body.messages.iter().any(|m| !m.content.is_empty());
    if body.elsewhere.any() || !(converse_fields || blocks) {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Bedrock));
    let tools = body
        .tool_config
        .and_then(|c| c.tools.0)
        .into_iter()
        .flatten();
    for spec in tools.filter_map(|t| t.spec) {
        conv.tools.push(tool(
            spec.name,
            spec.input_schema.and_then(|s| s.json.0),
            spec.description,
        ));
    }
    conv.system = body.system.map(|parts| {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
        texts.join("\n")
    });
    conv.model = body.model_id.map(Cow::into_owned);
    for (i, m) in body.messages.into_iter().enumerate() {
        let role = match m.role.as_ref() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => return None,
        };
        let path = format!("messages[{i}]");
        let mut content = Vec::with_capacity(m.content.len());
        let mut sources = Vec::with_capacity(m.content.len());
        for (k, b) in m.content.into_iter().enumerate() {
            let block = if let Some(text) = b.text.0 {
                Block::Text {
                    text: kept_text(text.as_deref().unwrap_or(""), Detail::Full),
                }
            } else if let Some(call) = b.tool_use.0 {
                Block::ToolUse {
                    id: call.id.as_ref().into(),
                    name: call.name.as_ref().into(),
                    input: Json::new(call.input.unwrap_or(Value::Null)),
                }
            } else if let Some(result) = b.tool_result.0 {
                Block::ToolResult {
                    tool_use_id: result.id.as_ref().into(),
                    content: Json::new(result.content.unwrap_or(Value::Null)),
                    is_error: result.status.as_deref() == Some("error"),
                }
            } else if b.cache_point.0 {
                continue;
            } else {
                // An empty block: the general reader says so.
                return None;
            };
            content.push(block);
            sources.push(at(format!("{path}.content[{k}]")));
        }
        push(&mut conv, role, content, path, sources);
    }
    Some(conv)
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
            // Responses: a stored reference, a continuation, a custom call.
            r#"{"input":[{"id":"fc_1"}]}"#,
            r#"{"previous_response_id":"r","input":[{"type":"function_call_output","call_id":"a","output":"x"}]}"#,
            r#"{"input":[{"type":"custom_tool_call","call_id":"a","name":"f","input":"x"}]}"#,
            // Gemini: one part given as an object, a snake_case system.
            r#"{"contents":[{"role":"user","parts":{"text":"hi"}}]}"#,
            r#"{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            // Bedrock: an empty block, an image.
            r#"{"messages":[{"role":"user","content":[{}]}]}"#,
            r#"{"messages":[{"role":"user","content":[{"image":{"format":"png"}}]}]}"#,
            // A null call id is paired by position, with a warning.
            r#"{"messages":[{"role":"tool","tool_call_id":null,"content":"x"}]}"#,
            // Another format's parts in a Chat-looking body: detect says
            // Responses, or Anthropic.
            r#"{"messages":[{"role":"assistant","content":[{"type":"output_text","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
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
