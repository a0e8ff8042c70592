//! Amazon Bedrock Converse request bodies (or a bare `messages` array of
//! Converse messages). A content block is an object with one key naming
//! its kind (`text`, `toolUse`, `toolResult`, `image`, `document`, …) and
//! no `type`. `toolUse {toolUseId, name, input}` is a call;
//! `toolResult {toolUseId, content, status}` its answer, at the start of
//! the next user turn. Blocks that carry no pairing (images, documents,
//! reasoning, cache points, guard content) are passed over; a block of a
//! kind Converse does not define is said, never read past in silence.
//!
//! One reader, two ways in: `read` from a `Value` (everything that
//! detects a document first) and `plain` straight from a JSON line
//! (`check`'s fast path). Both deserialize the same lax model and go
//! through the same conversion, so they cannot read a body two ways.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;

use super::fingerprint::kept_text;
use super::lax::{Boxed, FromMap, Given, Lax, LaxList, LaxStr, Texts, lax_object};
use super::parse::{body_of, from_value, required_list};
use super::parse::{element, member_element};
use super::{BlockSource, Conversation, Detail, Notice, ReadError, Source, ToolSpec, err};
use crate::finding::Kind;
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

/// The content block kinds of Converse's `ContentBlock` union that carry
/// no call or result (Bedrock API reference, `ContentBlock`).
pub const OTHER_BLOCKS: &[&str] = &[
    "image",
    "document",
    "video",
    "audio",
    "reasoningContent",
    "cachePoint",
    "guardContent",
    "citationsContent",
    "searchResult",
];

/// Reads a Converse body (or a bare array of messages) from its `Value`.
pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let doc = std::mem::take(doc);
    let body = body_of(doc, "messages", |doc| {
        let messages = Some(from_value(doc)?);
        Ok(Body {
            messages,
            ..Body::default()
        })
    })?;
    let messages = required_list(body.messages.map(|l| l.0), "messages")?;
    let mut conv = Conversation::new(Source::Provider(Format::Bedrock));
    read_top(&mut conv, body.tool_config, body.system, body.model_id);
    read_messages(&mut conv, messages, detail)?;
    Ok(conv)
}

/// `check`'s fast path: the line read straight from its text by the same
/// reader, taken only when `detect` would call it Bedrock (Converse's own
/// fields, or blocks keyed by kind, and nothing of another format) and
/// when it reads without an error or a notice; `None` sends the line to
/// the general path, which says what there is.
pub(crate) fn plain(line: &str) -> Option<Conversation> {
    let body: Body = serde_json::from_str(line).ok()?;
    let LaxList(Some(messages)) = body.messages? else {
        return None;
    };
    let mut blocks = false;
    for block in messages
        .iter()
        .filter_map(|m| match m {
            Lax::Object(m) => m.content.0.as_ref(),
            Lax::Other => None,
        })
        .flatten()
    {
        match block {
            Lax::Object(b) if b.typed => return None,
            Lax::Object(_) => blocks = true,
            Lax::Other => {}
        }
    }
    if body.elsewhere || !(body.converse_fields || blocks) {
        return None;
    }
    let mut conv = Conversation::new(Source::Provider(Format::Bedrock));
    read_top(&mut conv, body.tool_config, body.system, body.model_id);
    read_messages(&mut conv, messages, Detail::Full).ok()?;
    conv.notices.is_empty().then_some(conv)
}

/// The body's tools, system prompt and model.
fn read_top(
    conv: &mut Conversation,
    tool_config: Option<Lax<ToolConfig>>,
    system: Texts,
    model_id: LaxStr,
) {
    let tools = tool_config.and_then(Lax::object).and_then(|c| c.tools.0);
    for spec in tools.into_iter().flatten().filter_map(Lax::object) {
        let Some(Lax::Object(spec)) = spec.spec.0 else {
            continue;
        };
        if let Some(name) = spec.name.0 {
            conv.tools.push(ToolSpec {
                name: name.into_owned(),
                schema: spec
                    .input_schema
                    .0
                    .and_then(Lax::object)
                    .and_then(|s| s.json.0),
                description: spec.description.0.map(Cow::into_owned),
            });
        }
    }
    conv.system = system.joined("\n");
    conv.model = model_id.0.map(Cow::into_owned);
}

/// Every message: a role (user or assistant) and an array of blocks.
fn read_messages(
    conv: &mut Conversation,
    messages: Vec<Lax<MessageIn>>,
    detail: Detail,
) -> Result<(), ReadError> {
    let at = |i: usize| JsonPath::root().key("messages").index(i);
    for (i, item) in messages.into_iter().enumerate() {
        let item = item.object().unwrap_or_default();
        let role = match item.role.as_deref() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some(other) => {
                return Err(err(
                    &at(i),
                    format!(
                        "unknown role `{other}` for Bedrock Converse (expected user or assistant)"
                    ),
                ));
            }
            None => return Err(err(&at(i), "expected a message with a string `role`")),
        };
        let Some(blocks) = item.content.0 else {
            return Err(err(
                &at(i).key("content"),
                "expected an array of content blocks",
            ));
        };
        if blocks.is_empty() {
            conv.written_empty.push(conv.messages.len());
        }
        let path = element("messages", i);
        let mut content = Vec::with_capacity(blocks.len());
        let mut sources = Vec::with_capacity(blocks.len());
        for (k, b) in blocks.into_iter().enumerate() {
            let src = BlockSource {
                path: member_element(&path, "content", k).into(),
                ..Default::default()
            };
            let bpath = || at(i).key_index("content", k);
            let Some(block) = read_block(b, bpath, detail, &src, conv)? else {
                continue;
            };
            content.push(block);
            sources.push(src);
        }
        let message = Message {
            role,
            content,
            finish_reason: None,
        };
        let source = BlockSource {
            path: path.into(),
            ..Default::default()
        };
        conv.push(message, source, sources);
    }
    Ok(())
}

/// One content block: `Some` for what pairs or reads as text.
fn read_block(
    b: Lax<BlockIn>,
    bpath: impl Fn() -> JsonPath,
    detail: Detail,
    src: &BlockSource,
    conv: &mut Conversation,
) -> Result<Option<Block>, ReadError> {
    let Lax::Object(b) = b else {
        return Err(err(&bpath(), "expected a content block object"));
    };
    if let Some(text) = b.text {
        return Ok(Some(Block::Text {
            text: kept_text(text.as_deref().unwrap_or(""), detail),
        }));
    }
    if let Some(call) = b.tool_use {
        let call = call.object().unwrap_or_default();
        let id = call
            .id
            .0
            .ok_or_else(|| expected(&bpath().key("toolUse"), "toolUseId"))?;
        let name = call
            .name
            .0
            .ok_or_else(|| expected(&bpath().key("toolUse"), "name"))?;
        return Ok(Some(Block::ToolUse {
            id: (*id).into(),
            name: (*name).into(),
            input: Json::new(call.input.or_null()),
        }));
    }
    if let Some(result) = b.tool_result {
        let result = result.object().unwrap_or_default();
        let is_error = result.status.as_deref() == Some("error");
        let id = result
            .id
            .0
            .ok_or_else(|| expected(&bpath().key("toolResult"), "toolUseId"))?;
        return Ok(Some(Block::ToolResult {
            tool_use_id: (*id).into(),
            content: Json::new(result.content.or_null()),
            is_error,
        }));
    }
    if b.other_block {
        return Ok(None);
    }
    let kind = match (b.kind.0, b.first_key) {
        (Some(t), _) => format!("a block of `type` `{t}`"),
        (None, Some(k)) => format!("a `{k}` block"),
        (None, None) => "an empty block".to_string(),
    };
    conv.notices.push(Notice {
        kind: Kind::UnknownBlock,
        source: src.clone(),
        ids: Vec::new(),
        message: format!(
            "{kind} is not a content block Bedrock Converse defines (text, toolUse, toolResult, {}): it was not read, so what it carries is not checked, and Bedrock refuses a block it does not know",
            OTHER_BLOCKS.join(", ")
        ),
    });
    Ok(None)
}

/// The error for a field that is not a string.
fn expected(at: &JsonPath, key: &str) -> ReadError {
    err(at, format!("expected a string `{key}`"))
}

/// A Converse body: what the reader reads, and what tells the fast path
/// whether `detect` would call it Bedrock.
#[derive(Default)]
struct Body<'a> {
    /// `None` when absent.
    messages: Option<LaxList<Lax<MessageIn<'a>>>>,
    tool_config: Option<Lax<ToolConfig<'a>>>,
    system: Texts<'a>,
    model_id: LaxStr<'a>,
    /// `toolConfig`, `inferenceConfig`, `modelId` or
    /// `additionalModelRequestFields`: Converse's own.
    converse_fields: bool,
    /// A key that says another format, a log or a capture record (see
    /// `plain`'s list).
    elsewhere: bool,
}

impl<'de: 'a, 'a> FromMap<'de> for Body<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            let key = key.as_deref().unwrap_or("");
            match key {
                "messages" => body.messages = Some(map.next_value()?),
                "toolConfig" => body.tool_config = Some(map.next_value()?),
                "system" => body.system = map.next_value()?,
                "modelId" => body.model_id = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            match key {
                "toolConfig" | "inferenceConfig" | "modelId" | "additionalModelRequestFields" => {
                    body.converse_fields = true;
                }
                key if crate::signs::OTHER_FORMATS_KEYS.contains(&key) => body.elsewhere = true,
                _ => {}
            }
        }
        Ok(body)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Body<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Lax::<Body>::deserialize(d)? {
            Lax::Object(body) => Ok(body),
            Lax::Other => Ok(Body::default()),
        }
    }
}

lax_object! {
    /// A message: its role and its blocks (`None` when not an array).
    struct MessageIn<'a> {
        "role" => role: LaxStr<'a>,
        "content" => content: LaxList<Lax<BlockIn<'a>>>,
    }
}

/// A content block, keyed by its kind.
#[derive(Default)]
pub(crate) struct BlockIn<'a> {
    text: Option<LaxStr<'a>>,
    tool_use: Option<Lax<CallIn<'a>>>,
    tool_result: Option<Lax<ResultIn<'a>>>,
    /// A key of [`OTHER_BLOCKS`].
    other_block: bool,
    /// Its `type` when a string, and whether it has one at all (a block
    /// with a `type` is never Bedrock's to `detect`).
    kind: LaxStr<'a>,
    typed: bool,
    first_key: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> FromMap<'de> for BlockIn<'a> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut block = BlockIn::default();
        while let Some(LaxStr(key)) = map.next_key::<LaxStr>()? {
            let key = key.unwrap_or_default();
            match &*key {
                "text" => block.text = Some(map.next_value()?),
                "toolUse" => block.tool_use = Some(map.next_value()?),
                "toolResult" => block.tool_result = Some(map.next_value()?),
                "type" => {
                    block.typed = true;
                    block.kind = map.next_value()?;
                }
                other => {
                    block.other_block |= OTHER_BLOCKS.contains(&other);
                    map.next_value::<IgnoredAny>()?;
                }
            }
            block.first_key.get_or_insert(key);
        }
        Ok(block)
    }
}

lax_object! {
    /// `toolUse {toolUseId, name, input}`.
    struct CallIn<'a> {
        "toolUseId" => id: LaxStr<'a>,
        "name" => name: LaxStr<'a>,
        "input" => input: Boxed,
    }
}

lax_object! {
    /// `toolResult {toolUseId, content, status}`.
    struct ResultIn<'a> {
        "toolUseId" => id: LaxStr<'a>,
        "content" => content: Boxed,
        "status" => status: LaxStr<'a>,
    }
}

lax_object! {
    /// `toolConfig {tools: [{toolSpec {name, description, inputSchema {json}}}]}`.
    struct ToolConfig<'a> {
        "tools" => tools: LaxList<Lax<ToolEntry<'a>>>,
    }
}

lax_object! {
    /// One of `toolConfig.tools`.
    struct ToolEntry<'a> {
        "toolSpec" => spec: Given<Lax<ToolSpecIn<'a>>>,
    }
}

lax_object! {
    /// `toolSpec {name, description, inputSchema}`.
    struct ToolSpecIn<'a> {
        "name" => name: LaxStr<'a>,
        "description" => description: LaxStr<'a>,
        "inputSchema" => input_schema: Given<Lax<Schema>>,
    }
}

lax_object! {
    /// `inputSchema {json}`.
    struct Schema {
        "json" => json: Given<Value>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader from a `Value`, as every path but `check`'s fast one
    /// calls it.
    fn general(line: &str) -> Result<Conversation, ReadError> {
        let mut doc: Value = serde_json::from_str(line).unwrap();
        read(&mut doc, Detail::Full)
    }

    #[test]
    fn odd_shapes_are_said_in_the_readers_own_words_at_their_path() {
        let said = |line: &str| {
            general(line)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        for (line, words) in [
            (r#""x""#, "expected an object with `messages`, or an array"),
            (r#"{}"#, "expected a `messages` array"),
            (
                r#"{"messages":{}}"#,
                "messages: expected `messages` to be an array",
            ),
            (
                r#"[1]"#,
                "messages[0]: expected a message with a string `role`",
            ),
            (
                r#"[{"role":"system","content":[]}]"#,
                "unknown role `system` for Bedrock",
            ),
            (
                r#"[{"role":"user","content":"hi"}]"#,
                "messages[0].content: expected an array",
            ),
            (
                r#"[{"role":"user","content":["x"]}]"#,
                "messages[0].content[0]: expected a content block object",
            ),
            (
                r#"[{"role":"user","content":[{"toolUse":"x"}]}]"#,
                "messages[0].content[0].toolUse: expected a string `toolUseId`",
            ),
            (
                r#"[{"role":"user","content":[{"toolUse":{"toolUseId":"t","name":1}}]}]"#,
                "toolUse: expected a string `name`",
            ),
            (
                r#"[{"role":"user","content":[{"toolResult":{"status":"error"}}]}]"#,
                "toolResult: expected a string `toolUseId`",
            ),
        ] {
            assert!(said(line).contains(words), "{line}: {}", said(line));
            assert!(plain(line).is_none(), "{line}");
        }
    }

    #[test]
    fn the_fast_path_reads_what_it_takes_as_the_reader_from_a_value_does() {
        for line in [
            r#"{"messages":[{"role":"user","content":[{"image":{"format":"png"}},{"text":5,"toolUse":{}}]}]}"#,
            r#"{"modelId":"m","system":"s","messages":[{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"f","input":null,"input":{"a":"\u00e9"}},"extra":1}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t"}}]}]}"#,
            r#"{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":null}}},{"toolSpec":"x"},3]},"system":[{"text":"a"},"b",{"text":2}],"messages":[]}"#,
            r#"{"inferenceConfig":{},"messages":[{"role":"user","content":[],"role":"assistant"}]}"#,
        ] {
            let fast = plain(line).unwrap_or_else(|| panic!("the fast path takes {line}"));
            assert_eq!(fast, general(line).unwrap(), "{line}");
        }
        // A block the reader says is unknown, with a `type` (Anthropic's
        // to detect) or another format's key: the general path's.
        for line in [
            r#"{"messages":[{"role":"user","content":[{}]}]}"#,
            r#"{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}"#,
            r#"{"contents":[],"messages":[{"role":"user","content":[{"text":"x"}]}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        ] {
            assert!(plain(line).is_none(), "{line}");
        }
        let unknown = general(r#"{"messages":[{"role":"user","content":[{"guess":1}]}]}"#).unwrap();
        assert!(
            unknown.notices[0]
                .message
                .starts_with("a `guess` block is not a content block")
        );
    }
}
