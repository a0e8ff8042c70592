//! Small readers the format readers share: tool lists, texts, finish
//! reasons, arguments.

use serde_json::Value;

use loopdbg_engine::session::{FinishReason, Json};

use crate::conversation::{BlockSource, Conversation, Notice, ReadError, ReadNote, ToolSpec, err};
use crate::lax::{FromMap, Given, Lax, LaxList, LaxStr, StrOrValue, lax_object};
use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde::Deserialize;

lax_object! {
    /// A tool definition as Anthropic, Chat and Responses list it: its
    /// own fields, or Chat's nested under `function` (or `custom`).
    struct ToolDef<'a> {
        "function" => function: Given<Lax<ToolFields<'a>>>,
        "custom" => custom: Given<Lax<ToolFields<'a>>>,
        "name" => name: LaxStr<'a>,
        "input_schema" => input_schema: Given<Value>,
        "parameters" => parameters: Given<Value>,
        "description" => description: LaxStr<'a>,
    }
}

lax_object! {
    /// The fields of a definition nested under `function` or `custom`.
    struct ToolFields<'a> {
        "name" => name: LaxStr<'a>,
        "input_schema" => input_schema: Given<Value>,
        "parameters" => parameters: Given<Value>,
        "description" => description: LaxStr<'a>,
    }
}

/// The tools of a `tools` (or older `functions`) list, as [`read_tools`]
/// reads them from a `Value`: a definition with no string `name` is
/// passed over.
pub(crate) fn push_tools(conv: &mut Conversation, listed: LaxList<Lax<ToolDef>>) {
    for def in listed.0.into_iter().flatten().filter_map(Lax::object) {
        let fields = match (def.function.0, def.custom.0) {
            (Some(nested), _) | (None, Some(nested)) => match nested.object() {
                Some(f) => f,
                None => continue,
            },
            (None, None) => ToolFields {
                name: def.name,
                input_schema: def.input_schema,
                parameters: def.parameters,
                description: def.description,
            },
        };
        if let Some(name) = fields.name.0 {
            conv.tools.push(ToolSpec {
                name: name.into_owned(),
                schema: fields.input_schema.0.or(fields.parameters.0),
                description: fields.description.0.map(std::borrow::Cow::into_owned),
            });
        }
    }
}

/// A request body read from its `Value`: an object as the format's body
/// `B`, a bare array by `bare` (as the body's conversation list), and
/// anything else the error every reader gives, naming `key`.
pub(crate) fn body_of<'de, B: Default + FromMap<'de>>(
    doc: Value,
    key: &str,
    bare: impl FnOnce(Value) -> Result<B, ReadError>,
) -> Result<B, ReadError> {
    match doc {
        Value::Array(_) => bare(doc),
        Value::Object(_) => Ok(from_value::<Lax<B>>(doc)?.object().unwrap_or_default()),
        _ => Err(err(
            &JsonPath::root(),
            format!("expected an object with `{key}`, or an array"),
        )),
    }
}

/// A `Value` as one of the readers' lax types (which take any value, so
/// this fails only on a `Value` serde cannot walk).
pub(crate) fn from_value<'de, T: Deserialize<'de>>(doc: Value) -> Result<T, ReadError> {
    T::deserialize(doc).map_err(|e| err(&JsonPath::root(), e.to_string()))
}

/// The body's conversation list (`messages`, `contents`): `None` when
/// absent, `Some(None)` when not a list, each the error readers give.
pub(crate) fn required_list<T>(
    given: Option<Option<Vec<T>>>,
    key: &str,
) -> Result<Vec<T>, ReadError> {
    match given {
        Some(Some(list)) => Ok(list),
        Some(None) => Err(err(
            &JsonPath::root().key(key.to_string()),
            format!("expected `{key}` to be an array"),
        )),
        None => Err(err(&JsonPath::root(), format!("expected a `{key}` array"))),
    }
}

/// A content field as text: a string, or the `text` of its parts joined by `sep`.
pub fn joined_text(content: Option<&Value>, sep: &str) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(sep),
        ),
        _ => None,
    }
}

/// Anthropic's `stop_reason` (or OpenAI's `finish_reason`) as a finish reason.
pub fn finish_reason_of(value: Option<&Value>) -> Option<FinishReason> {
    finish_reason_named(value?.as_str())
}

/// [`finish_reason_of`] of a reason already read as a string.
pub(crate) fn finish_reason_named(reason: Option<&str>) -> Option<FinishReason> {
    match reason? {
        "end_turn" | "stop" | "stop_sequence" | "pause_turn" => Some(FinishReason::Stop),
        "tool_use" | "tool_calls" => Some(FinishReason::ToolCalls),
        "max_tokens" | "length" | "model_context_window_exceeded" => Some(FinishReason::Length),
        "refusal" | "content_filter" => Some(FinishReason::ContentFilter),
        _ => None,
    }
}

pub(crate) fn text_of_parts(content: Option<&Value>) -> Option<String> {
    joined_text(content, "")
}

/// Parses `arguments` given as a string; on failure keeps the raw text
/// and notes it. Given as anything else, that is the input; absent, `{}`.
pub(crate) fn parse_lax_arguments(
    raw: StrOrValue,
    id: &str,
    source: &BlockSource,
    notes: &mut Vec<ReadNote>,
) -> Json {
    match raw {
        StrOrValue::Str(s) => parse_argument_text(&s, id, source, notes),
        StrOrValue::Value(v) => Json::new(*v),
        StrOrValue::Absent => Json::new(Value::Object(Default::default())),
    }
}

/// [`parse_lax_arguments`] of an `arguments` string.
fn parse_argument_text(
    raw: &str,
    id: &str,
    source: &BlockSource,
    notes: &mut Vec<ReadNote>,
) -> Json {
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

/// The note for a log line that held `count` records joined.
fn joined_notice(line: usize, count: usize) -> Notice {
    Notice {
        kind: crate::finding::Kind::JoinedRecords,
        source: BlockSource {
            path: "".into(),
            line: Some(line),
            uuid: None,
        },
        ids: Vec::new(),
        message: format!(
            "line {line} holds {count} records joined with no newline between them (a write that lost its line end): each was read as a line of its own"
        ),
    }
}

/// The notes for the joined lines of a log, on its first conversation.
pub(crate) fn note_joined_lines(out: &mut [Conversation], joined: Vec<(usize, usize)>) {
    if let Some(first) = out.first_mut() {
        for (line, count) in joined {
            first.notices.push(joined_notice(line, count));
        }
    }
}

/// The records of a line that holds two or more JSON objects written one
/// after the other (`{…}{…}`: an agent's write that lost its newline), or
/// `None` when it is not that.
pub fn joined_records(text: &str) -> Option<Vec<Value>> {
    let mut records = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        records.push(value.ok().filter(Value::is_object)?);
    }
    (records.len() > 1).then_some(records)
}

/// The keys a request body keeps its conversation under, in every format:
/// Anthropic, Chat and Bedrock `messages`, Responses `input`, Gemini
/// `contents`.
pub const CONVERSATION_KEYS: [&str; 3] = ["messages", "input", "contents"];

/// Whether a request body holds a conversation to read (a model list or
/// a token count does not).
pub fn holds_conversation(body: &Value) -> bool {
    match body {
        Value::Object(o) => CONVERSATION_KEYS.iter().any(|k| o.contains_key(*k)),
        Value::Array(_) => true,
        _ => false,
    }
}

/// `prefix[i]` (`messages[3]`), written without `format!`: a reader
/// writes one path per message and per block, and `format!`'s machinery
/// was a tenth of checking a line.
pub(crate) fn element(prefix: &str, i: usize) -> String {
    member_element(prefix, "", i)
}

/// `prefix.field` (`messages[3].content`).
pub(crate) fn member(prefix: &str, field: &str) -> String {
    let mut path = String::with_capacity(prefix.len() + 1 + field.len());
    path.push_str(prefix);
    path.push('.');
    path.push_str(field);
    path
}

/// `prefix.field[i]` (`messages[3].content[1]`), or `prefix[i]` when
/// `field` is empty.
pub(crate) fn member_element(prefix: &str, field: &str, i: usize) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(i);
    let mut path = String::with_capacity(prefix.len() + field.len() + digits.len() + 3);
    path.push_str(prefix);
    if !field.is_empty() {
        path.push('.');
        path.push_str(field);
    }
    path.push('[');
    path.push_str(digits);
    path.push(']');
    path
}

#[cfg(test)]
mod tests {
    use loopdbg_engine::diagnostics::json_span::JsonPath;

    /// The readers write paths with `format!` and build a `JsonPath` only
    /// for an error: both must read the same.
    #[test]
    fn paths_are_spelled_like_format_would() {
        let messages = JsonPath::root().key("messages");
        for i in [0, 7, 10, 99, 123_456, usize::MAX] {
            assert_eq!(messages.index(i).to_string(), format!("messages[{i}]"));
            assert_eq!(
                messages.index(3).key_index("content", i).to_string(),
                format!("messages[3].content[{i}]")
            );
        }
        let input = JsonPath::root().key("input").index(2);
        assert_eq!(input.key("content").to_string(), "input[2].content");
        for i in [0, 9, 10, 4_294_967_296, usize::MAX] {
            assert_eq!(super::element("messages", i), format!("messages[{i}]"));
            assert_eq!(
                super::member_element("messages[3]", "content", i),
                format!("messages[3].content[{i}]")
            );
        }
        assert_eq!(super::member("input[2]", "content"), "input[2].content");
    }
}
