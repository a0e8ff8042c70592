//! Amazon Bedrock Converse request bodies (or a bare `messages` array of
//! Converse messages). A content block is an object with one key naming
//! its kind (`text`, `toolUse`, `toolResult`, `image`, `document`, …) and
//! no `type`. `toolUse {toolUseId, name, input}` is a call;
//! `toolResult {toolUseId, content, status}` its answer, at the start of
//! the next user turn. Blocks that carry no pairing (images, documents,
//! reasoning, cache points, guard content) are passed over; a block of a
//! kind Converse does not define is said, never read past in silence.

use serde_json::Value;

use super::fingerprint::kept_text;
use super::{
    BlockSource, Conversation, Detail, Notice, ReadError, Source, ToolSpec, array_at, err,
};
use crate::finding::Kind;
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

pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Bedrock));
    read_tool_config(doc, &mut conv);
    conv.system = super::joined_text(doc.get("system"), "\n");
    conv.model = doc
        .get("modelId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = base.index(i);
        let role = match super::role_of(item, &path)?.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(err(
                    &path,
                    format!(
                        "unknown role `{other}` for Bedrock Converse (expected user or assistant)"
                    ),
                ));
            }
        };
        let Some(Value::Array(blocks)) = item.get_mut("content") else {
            return Err(err(
                &super::dotted(&path, "content"),
                "expected an array of content blocks",
            ));
        };
        let mut content = Vec::new();
        let mut sources = Vec::new();
        for (k, b) in blocks.iter_mut().enumerate() {
            let bpath = super::indexed(&path, "content", k);
            let src = BlockSource {
                path: (&bpath).into(),
                ..Default::default()
            };
            let Some(block) = read_block(b, &bpath, detail, &src, &mut conv)? else {
                continue;
            };
            content.push(block);
            sources.push(src);
        }
        conv.push(
            Message {
                role,
                content,
                finish_reason: None,
            },
            BlockSource {
                path: (&path).into(),
                ..Default::default()
            },
            sources,
        );
    }
    Ok(conv)
}

/// One content block: `Some` for what pairs or reads as text.
fn read_block(
    b: &mut Value,
    bpath: &loopdbg_engine::diagnostics::json_span::JsonPath,
    detail: Detail,
    src: &BlockSource,
    conv: &mut Conversation,
) -> Result<Option<Block>, ReadError> {
    let Value::Object(o) = b else {
        return Err(err(bpath, "expected a content block object"));
    };
    if let Some(text) = o.get("text") {
        return Ok(Some(Block::Text {
            text: kept_text(text.as_str().unwrap_or(""), detail),
        }));
    }
    if let Some(call) = o.get_mut("toolUse") {
        let at = bpath.key("toolUse");
        return Ok(Some(Block::ToolUse {
            id: super::str_field(call, "toolUseId", &at)?.into(),
            name: super::str_field(call, "name", &at)?.into(),
            input: Json::new(super::take(call, "input")),
        }));
    }
    if let Some(result) = o.get_mut("toolResult") {
        let at = bpath.key("toolResult");
        let is_error = result.get("status").and_then(Value::as_str) == Some("error");
        return Ok(Some(Block::ToolResult {
            tool_use_id: super::str_field(result, "toolUseId", &at)?.into(),
            content: Json::new(super::take(result, "content")),
            is_error,
        }));
    }
    if o.keys().any(|k| OTHER_BLOCKS.contains(&k.as_str())) {
        return Ok(None);
    }
    let kind = o
        .get("type")
        .and_then(Value::as_str)
        .map(|t| format!("a block of `type` `{t}`"))
        .or_else(|| o.keys().next().map(|k| format!("a `{k}` block")))
        .unwrap_or_else(|| "an empty block".to_string());
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

/// `toolConfig.tools[].toolSpec {name, description, inputSchema.json}`.
fn read_tool_config(doc: &Value, conv: &mut Conversation) {
    let tools = doc.pointer("/toolConfig/tools").and_then(Value::as_array);
    for spec in tools
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("toolSpec"))
    {
        if let Some(name) = spec.get("name").and_then(Value::as_str) {
            conv.tools.push(ToolSpec {
                name: name.to_string(),
                schema: spec.pointer("/inputSchema/json").cloned(),
                description: spec
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
}
