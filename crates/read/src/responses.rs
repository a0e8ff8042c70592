//! OpenAI Responses request bodies: `input` as a plain string (one user
//! message) or a list of items. Calls the client runs pair with their
//! outputs by `call_id` (`function_call` / `function_call_output`,
//! `custom_tool_call` / `custom_tool_call_output`, `local_shell_call`,
//! `shell_call`, `apply_patch_call`, `computer_call`); items the server runs
//! and answers itself (`web_search_call`, `mcp_call`, `tool_search_call`, …)
//! and `reasoning` items are read and kept, with no pairing to check.
//!
//! A request that continues a stored response (`previous_response_id`) or
//! conversation (`conversation`), or that points at stored items
//! (`item_reference`), may answer calls it does not contain.
//!
//! One reader, two ways in (`read` / [`read_items`] from a `Value`,
//! `plain` from a JSON line), as for Bedrock: one lax model, one
//! conversion.

use std::borrow::Cow;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;

use super::fingerprint::kept_text;
use super::lax::{
    Boxed, FromMap, Given, Lax, LaxList, LaxStr, StrOrValue, TextOrList, Texts, lax_object,
    object_or_default,
};
use super::parse::element;
use super::parse::parse_lax_arguments;
use super::parse::{ToolDef, push_tools};
use super::parse::{body_of, from_value};
use super::{BlockSource, Conversation, Detail, Notice, ReadError, Source, ToolSpec, err};
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use loopdbg_formats::provider::Format;

/// Client-run call items and the output item type that answers each.
pub const CALLS: &[(&str, &str)] = &[
    ("function_call", "function_call_output"),
    ("custom_tool_call", "custom_tool_call_output"),
    ("local_shell_call", "local_shell_call_output"),
    ("shell_call", "shell_call_output"),
    ("apply_patch_call", "apply_patch_call_output"),
    ("computer_call", "computer_call_output"),
];

/// True for an item type that asks the client to run something.
pub fn is_call(kind: &str) -> bool {
    CALLS.iter().any(|(c, _)| *c == kind)
}

/// True for an item type that answers a client-run call.
pub fn is_output(kind: &str) -> bool {
    CALLS.iter().any(|(_, o)| *o == kind)
}

/// The id an output item answers: `call_id`, or `id` for the older
/// `local_shell_call_output`.
pub fn answered_id(item: &Value) -> Option<&str> {
    item.get("call_id")
        .or_else(|| item.get("id"))
        .and_then(Value::as_str)
}

/// Reads a Responses body from its `Value`.
pub(super) fn read(doc: &mut Value, detail: Detail) -> Result<Conversation, ReadError> {
    read_items(doc, detail, &|i| BlockSource {
        path: element("input", i).into(),
        ..Default::default()
    })
}

/// `read`, with where each input item came from: by default its path
/// (`input[i]`); a Codex rollout names the line of its log instead.
pub fn read_items(
    doc: &mut Value,
    detail: Detail,
    item_source: &dyn Fn(usize) -> BlockSource,
) -> Result<Conversation, ReadError> {
    let doc = std::mem::take(doc);
    let root = JsonPath::root();
    let body = body_of(doc, "input", |doc| {
        let input = Given(Some(from_value(doc)?));
        Ok(Body {
            input,
            ..Body::default()
        })
    })?;
    let (mut conv, input) = read_top(body);
    match input {
        Some(TextOrList::Text(text)) => push_text(&mut conv, &text, detail),
        Some(TextOrList::List(items)) => read_input(&mut conv, items, detail, item_source)?,
        Some(TextOrList::Other) => {
            return Err(err(&root.key("input"), "expected `input` to be an array"));
        }
        None => return Err(err(&root, "expected a `input` array")),
    }
    Ok(conv)
}

/// `check`'s fast path: the line read straight from its text by the same
/// reader, taken when `detect` would call it Responses (an `input` string
/// or list, nothing of another format) and it reads without an error;
/// `None` sends the line to the general path.
pub(crate) fn plain(line: &str) -> Option<Conversation> {
    let body = serde_json::from_str::<Lax<Body>>(line).ok()?.object()?;
    if body.elsewhere {
        return None;
    }
    let (mut conv, input) = read_top(body);
    match input? {
        TextOrList::Text(text) => push_text(&mut conv, &text, Detail::Full),
        TextOrList::List(items) => {
            let at = |i: usize| BlockSource {
                path: element("input", i).into(),
                ..Default::default()
            };
            read_input(&mut conv, items, Detail::Full, &at).ok()?;
        }
        TextOrList::Other => return None,
    }
    Some(conv)
}

/// The keys of a Responses body its reader reads (`Body`), beside those
/// of other formats that say it is not Responses.
const READ_KEYS: &[&str] = &[
    "input",
    "tools",
    "functions",
    "additional_tools",
    "instructions",
    "previous_response_id",
    "conversation",
];

/// Whether two ends of Responses bodies, each from the `]` closing
/// `input` on, read the same: the same keys the reader reads (and of
/// other formats), with the same values; keys it does not read (Codex's
/// `client_metadata`, naming each turn) may differ. Two bodies alike up to
/// their history arrays whose ends read alike read as the same body but
/// for those arrays (`prefix`).
pub(crate) fn tails_read_alike(a: &[u8], b: &[u8]) -> bool {
    let read = |tail: &[u8]| -> Option<serde_json::Map<String, Value>> {
        let mut text = Vec::with_capacity(tail.len() + 10);
        text.extend_from_slice(b"{\"input\":[");
        text.extend_from_slice(tail);
        let Value::Object(mut top) = crate::bounded::value_of_slice(&text).ok()? else {
            return None;
        };
        top.retain(|k, _| {
            READ_KEYS.contains(&k.as_str())
                || crate::signs::OTHER_FORMATS_KEYS.contains(&k.as_str())
        });
        Some(top)
    };
    matches!((read(a), read(b)), (Some(a), Some(b)) if a == b)
}

/// The conversation begun with the body's tools, instructions and what it
/// continues, and its `input`.
fn read_top<'a>(body: Body<'a>) -> (Conversation, Option<TextOrList<'a, Item<'a>>>) {
    let mut conv = Conversation::new(Source::Provider(Format::Responses));
    push_tools(&mut conv, body.tools);
    push_tools(&mut conv, body.functions);
    // Tools loaded by tool search arrive as `additional_tools`.
    if let Some(Value::Array(extra)) = &body.additional_tools.0 {
        conv.tools.extend(extra.iter().filter_map(tool_spec));
    }
    conv.system = body.instructions.0.map(Cow::into_owned);
    conv.continues = [
        ("previous_response_id", body.previous_response_id.0),
        ("conversation", body.conversation.0),
    ]
    .into_iter()
    .find_map(|(k, v)| match v? {
        Value::String(id) => Some(format!("{k} {id}")),
        Value::Object(o) => o
            .get("id")
            .and_then(Value::as_str)
            .map(|id| format!("{k} {id}")),
        _ => None,
    });
    (conv, body.input.0)
}

/// `input` given as a string: one user message.
fn push_text(conv: &mut Conversation, text: &str, detail: Detail) {
    let src = BlockSource {
        path: "input".into(),
        ..Default::default()
    };
    let text = Block::Text {
        text: kept_text(text, detail),
    };
    conv.push(one_block(Role::User, text), src.clone(), vec![src]);
}

/// A message of one block.
fn one_block(role: Role, block: Block) -> Message {
    Message {
        role,
        content: vec![block],
        finish_reason: None,
    }
}

/// Every input item, in order.
fn read_input(
    conv: &mut Conversation,
    items: Vec<Item>,
    detail: Detail,
    item_source: &dyn Fn(usize) -> BlockSource,
) -> Result<(), ReadError> {
    for (i, item) in items.into_iter().enumerate() {
        read_item(conv, i, item, detail, item_source)?;
    }
    Ok(())
}

/// Input item `i` of a later request of the same conversation added to
/// `conv` (what that request's items before it read as): the gate's
/// reading past a shared prefix (`prefix`). `None` when that would not
/// give what reading the whole body gives: an item that changes what a
/// request continues (a reference to a stored item) or the tools it may
/// call (a tool search's output) sets what the prefix does not go back
/// to, so such a request is read whole.
pub(crate) fn extend(conv: &mut Conversation, i: usize, item: Value, detail: Detail) -> Option<()> {
    let item = Item::deserialize(item).ok()?;
    let bare_reference = item.kind.0.is_none() && item.role.0.is_none() && item.id.0.is_some();
    if bare_reference || matches!(item.kind(), Some("item_reference" | "tool_search_output")) {
        return None;
    }
    let at = |i: usize| BlockSource {
        path: element("input", i).into(),
        ..Default::default()
    };
    read_item(conv, i, item, detail, &at).ok()
}

/// Reads input item `i` into `conv`.
///
/// A reasoning item must come with the item after it (OpenAI: "Item
/// 'rs_…' of type 'reasoning' was provided without its required
/// following item.", continuedev/continue#8933, #10163, #11174;
/// openai/openai-agents-python#1611): the assistant's message or a call.
/// It is said to be without one as soon as it is read, and that notice is
/// taken back when the next item follows it: so what waits is in the
/// conversation, and a request can be read an item at a time (`extend`).
/// (Codex's rollouts are read through here too; its reader takes these
/// out, as what it sends is its own rewrite.)
fn read_item(
    conv: &mut Conversation,
    i: usize,
    item: Item,
    detail: Detail,
    item_source: &dyn Fn(usize) -> BlockSource,
) -> Result<(), ReadError> {
    let path = || JsonPath::root().key("input").index(i);
    // A bare `{"id": "fc_…"}` (no `type`, no `role`) is a reference to
    // a stored item, as `item_reference` is: OpenAI answers it.
    let bare_reference = item.kind.0.is_none() && item.role.0.is_none() && item.id.0.is_some();
    let kind = match bare_reference {
        true => "item_reference",
        false => item
            .kind
            .0
            .as_ref()
            .and_then(LaxStr::as_deref)
            .unwrap_or("message"),
    };
    let follows = kind.ends_with("_call")
        || (kind == "message"
            && item.role.0.as_ref().and_then(LaxStr::as_deref) == Some("assistant"));
    if follows
        && let Some(before) = i.checked_sub(1)
        && conv.notices.last().is_some_and(|n| {
            n.kind == crate::finding::Kind::ReasoningWithoutItem && n.source == item_source(before)
        })
    {
        conv.notices.pop();
    }
    if kind == "reasoning" {
        let id = item.id.as_deref().unwrap_or("?").to_string();
        conv.notices.push(Notice {
            kind: crate::finding::Kind::ReasoningWithoutItem,
            source: item_source(i),
            ids: vec![id.clone()],
            message: format!(
                "Item '{id}' of type 'reasoning' was provided without its required following item."
            ),
        });
    }
    match kind {
        "message" => {
            let Some(role) = item.role.0.as_ref().and_then(LaxStr::as_deref) else {
                return Err(err(&path(), "expected a message with a string `role`"));
            };
            let text = item.content.joined("").unwrap_or_default();
            let role = match role {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "system" | "developer" => {
                    conv.system = Some(text);
                    conv.system_messages += 1;
                    return Ok(());
                }
                other => return Err(err(&path(), format!("unknown role `{other}`"))),
            };
            let text = Block::Text {
                text: kept_text(&text, detail),
            };
            let src = item_source(i);
            conv.push(one_block(role, text), src.clone(), vec![src]);
        }
        "item_reference" => {
            conv.continues.get_or_insert_with(|| {
                let id = item.id.as_deref().unwrap_or("?");
                format!("item_reference {id}")
            });
        }
        call if is_call(call) => {
            let call = call.to_string();
            read_call(conv, item, &call, &path, item_source(i))?;
        }
        // A tool search the client runs (`execution: "client"`) is a
        // call like a function's: it waits for an output with its
        // `call_id` (a `tool_search_output`, or a `function_call_output`,
        // which OpenAI also takes). One the server runs pairs with
        // nothing here.
        "tool_search_call" if item.is_client() && item.call_id.0.is_some() => {
            read_call(conv, item, "tool_search_call", &path, item_source(i))?;
        }
        output if is_output(output) => {
            let Some(id) = item.call_or_item_id() else {
                return Err(err(&path(), "expected a string `call_id`"));
            };
            let result = Block::ToolResult {
                tool_use_id: id.into(),
                content: Json::new(item.output.into_value().unwrap_or(Value::Null)),
                is_error: false,
            };
            let src = item_source(i);
            conv.push(one_block(Role::Tool, result), src.clone(), vec![src]);
        }
        "tool_search_output" => {
            // Tools found by a search become callable.
            if let Some(Value::Array(found)) = item.tools.0.as_deref() {
                conv.tools.extend(found.iter().filter_map(tool_spec));
            }
            if item.is_client()
                && let Some(Some(id)) = item.call_id.0.as_ref().map(LaxStr::as_deref)
            {
                let answer = item.tools.0.as_deref().cloned().unwrap_or(Value::Null);
                let result = Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(answer),
                    is_error: false,
                };
                let src = item_source(i);
                conv.push(one_block(Role::Tool, result), src.clone(), vec![src]);
            }
        }
        // Reasoning, and items the server ran and answered itself
        // (web_search_call, file_search_call, mcp_call, tool_search_call,
        // code_interpreter_call, image_generation_call, …): nothing to pair.
        _ => {}
    }
    Ok(())
}

/// A call item (`function_call`, `custom_tool_call`, or a built-in tool
/// run by the client such as `computer_call`): a tool_use block joining the
/// assistant message before it.
fn read_call(
    conv: &mut Conversation,
    item: Item,
    call: &str,
    path: &dyn Fn() -> JsonPath,
    src: BlockSource,
) -> Result<(), ReadError> {
    let string =
        |field: &Given<LaxStr>, key: &str| match field.0.as_ref().and_then(LaxStr::as_deref) {
            Some(s) => Ok(s.to_string()),
            None => Err(err(&path(), format!("expected a string `{key}`"))),
        };
    let id = string(&item.call_id, "call_id")?;
    let name = match call {
        "function_call" | "custom_tool_call" => string(&item.name, "name")?,
        "tool_search_call" => "tool_search".to_string(),
        other => other.trim_end_matches("_call").to_string(),
    };
    let input = match call {
        "function_call" => parse_lax_arguments(item.arguments, &id, &src, &mut conv.notes),
        "custom_tool_call" => Json::new(item.input.or_null()),
        "tool_search_call" => Json::new(item.arguments.into_value().unwrap_or(Value::Null)),
        _ => Json::new(item.action.or_null()),
    };
    let block = Block::ToolUse {
        id: id.as_str().into(),
        name: name.into(),
        input,
    };
    if call != "function_call" {
        conv.call_types.push((id, call.to_string()));
    }
    // Calls of one turn join the assistant message before them.
    conv.push_joining(Role::Assistant, block, src);
    Ok(())
}

/// A Responses body: what the reader reads, and whether a key of another
/// format (see `plain`'s list) says `detect` may not call it Responses.
#[derive(Default)]
struct Body<'a> {
    input: Given<TextOrList<'a, Item<'a>>>,
    tools: LaxList<Lax<ToolDef<'a>>>,
    functions: LaxList<Lax<ToolDef<'a>>>,
    additional_tools: Given<Value>,
    instructions: LaxStr<'a>,
    previous_response_id: Given<Value>,
    conversation: Given<Value>,
    elsewhere: bool,
}

impl<'de: 'a, 'a> FromMap<'de> for Body<'a> {
    /// A key read here is one of [`READ_KEYS`] (a request read past its
    /// history compares the rest by them).
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<LaxStr>()? {
            match key.as_deref().unwrap_or("") {
                "input" => body.input = map.next_value()?,
                "tools" => body.tools = map.next_value()?,
                "functions" => body.functions = map.next_value()?,
                "additional_tools" => body.additional_tools = map.next_value()?,
                "instructions" => body.instructions = map.next_value()?,
                "previous_response_id" => body.previous_response_id = map.next_value()?,
                "conversation" => body.conversation = map.next_value()?,
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
    /// An input item: a message, a call, an output, a reference, or an
    /// item the server ran. Kept small (it is moved a few times per
    /// item): strings borrowed, other values boxed.
    #[derive(Clone, Debug)]
    struct Item<'a> {
        "type" => kind: Given<LaxStr<'a>>,
        "role" => role: Given<LaxStr<'a>>,
        "id" => id: LaxStr<'a>,
        "content" => content: Texts<'a>,
        "call_id" => call_id: Given<LaxStr<'a>>,
        "name" => name: Given<LaxStr<'a>>,
        "arguments" => arguments: StrOrValue<'a>,
        "input" => input: Boxed,
        "action" => action: Boxed,
        "output" => output: StrOrValue<'a>,
        "execution" => execution: LaxStr<'a>,
        "tools" => tools: Boxed,
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object_or_default(d)
    }
}

impl Item<'_> {
    /// Whether a tool search item is one the client runs.
    fn is_client(&self) -> bool {
        self.execution.as_deref() == Some("client")
    }

    /// The item owned, to outlive the text it was read from (a Codex
    /// rollout keeps its items until the log is read whole).
    pub(crate) fn into_owned(self) -> Item<'static> {
        let given = |s: Given<LaxStr>| Given(s.0.map(LaxStr::into_owned));
        Item {
            kind: given(self.kind),
            role: given(self.role),
            id: self.id.into_owned(),
            content: self.content.into_owned(),
            call_id: given(self.call_id),
            name: given(self.name),
            arguments: self.arguments.into_owned(),
            input: self.input,
            action: self.action,
            output: self.output.into_owned(),
            execution: self.execution.into_owned(),
            tools: self.tools,
        }
    }

    /// The item's `type`, when it is a string.
    pub(crate) fn kind(&self) -> Option<&str> {
        self.kind.0.as_ref().and_then(LaxStr::as_deref)
    }

    /// The id a call or an output carries: `call_id`, or `id` when there
    /// is no `call_id` (the older `local_shell_call_output`); `None` when
    /// the one there is not a string.
    pub(crate) fn call_or_item_id(&self) -> Option<&str> {
        match &self.call_id.0 {
            Some(call_id) => call_id.as_deref(),
            None => self.id.as_deref(),
        }
    }
}

/// The conversation of `items`, as a body with nothing but these as its
/// `input` would be read (a Codex rollout's items, each read from its
/// line as it came).
pub(crate) fn read_item_list(
    items: Vec<Item>,
    detail: Detail,
    item_source: &dyn Fn(usize) -> BlockSource,
) -> Result<Conversation, ReadError> {
    let body = Body {
        input: Given(Some(TextOrList::List(items))),
        ..Body::default()
    };
    let (mut conv, input) = read_top(body);
    if let Some(TextOrList::List(items)) = input {
        read_input(&mut conv, items, detail, item_source)?;
    }
    Ok(conv)
}

fn tool_spec(t: &Value) -> Option<ToolSpec> {
    let f = t.get("function").unwrap_or(t);
    let name = f.get("name").and_then(Value::as_str)?;
    Some(ToolSpec {
        name: name.to_string(),
        schema: f.get("parameters").cloned(),
        description: f
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}
