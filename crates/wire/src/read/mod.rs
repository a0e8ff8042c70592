//! Reading captured conversations: Anthropic and OpenAI request bodies or
//! bare message arrays, Responses `input` arrays, and Claude Code session
//! logs. Each becomes a [`Conversation`]: canonical messages that keep the
//! provider's own grouping (an Anthropic user message may hold several
//! tool_result blocks), with the source of every block, so a finding can
//! name `messages[3].content[1]` or the log line and uuid.
//!
//! Pure: values in, conversations out. Reading files and lines is the
//! binary's job.

mod anthropic;
pub mod bedrock;
pub mod cassettes;
mod claude_code;
mod codex;
pub mod copilot_cli;
mod fingerprint;
mod gemini;
mod gemini_cli;
pub(crate) mod openai_chat;
pub mod opencode;
pub mod otlp;
pub mod plain;
pub mod recording;
pub mod responses;
pub mod yaml_depth;

pub use claude_code::{
    BOOKKEEPING_EVENTS, ClaudeCodeLog, LineError, MESSAGE_EVENTS, is_known_event,
};
pub use codex::{CodexRollout, RECORD_TYPES as CODEX_RECORD_TYPES};
pub use gemini_cli::GeminiCliLog;

use serde_json::Value;

use crate::provider::Format;
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, Message};
use loopdbg_engine::session::{FinishReason, Json};

/// What a file holds, as detected or forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One of the provider formats.
    Provider(Format),
    /// A Claude Code session log (JSON Lines of events).
    ClaudeCode,
    /// A Codex CLI rollout (`{timestamp, type, payload}` records).
    Codex,
    /// A Gemini CLI chat recording (an upsert log of message records).
    GeminiCli,
    /// A GitHub Copilot CLI session log (`events.jsonl`).
    CopilotCli,
    /// An opencode session as `opencode export` prints it.
    Opencode,
    /// A `loopdbg mcp` capture: the agent's MCP tool calls and the
    /// server's results (read by `crate::mcp`, never forced).
    Mcp,
}

impl Source {
    /// The name used in reports and `--format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Provider(f) => f.as_str(),
            Source::ClaudeCode => "claude-code",
            Source::Codex => "codex",
            Source::GeminiCli => "gemini-cli",
            Source::CopilotCli => "copilot-cli",
            Source::Opencode => "opencode",
            Source::Mcp => "mcp",
        }
    }

    /// The provider whose rules apply.
    pub fn provider(self) -> Format {
        match self {
            Source::Provider(f) => f,
            Source::ClaudeCode => Format::Anthropic,
            Source::Codex => Format::Responses,
            Source::GeminiCli => Format::Gemini,
            // Copilot's backend speaks Chat Completions.
            Source::CopilotCli => Format::Openai,
            // opencode sends each call's result right after it, whatever
            // the provider; Chat's rules say the same of that shape.
            Source::Opencode => Format::Openai,
            // Each result after the turn of calls it answers.
            Source::Mcp => Format::Anthropic,
        }
    }

    /// True for agent logs, which are read whole as JSON Lines of events.
    pub fn is_log(self) -> bool {
        !matches!(self, Source::Provider(_) | Source::Opencode | Source::Mcp)
    }

    /// Every name `--format` takes.
    pub const NAMES: &'static str = "anthropic, openai, responses, gemini, bedrock, claude-code, codex, gemini-cli, copilot-cli, opencode";
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "claude-code" | "claude_code" => Ok(Source::ClaudeCode),
            "codex" | "codex-cli" => Ok(Source::Codex),
            "gemini-cli" | "gemini_cli" => Ok(Source::GeminiCli),
            "copilot-cli" | "copilot_cli" | "copilot" => Ok(Source::CopilotCli),
            "opencode" => Ok(Source::Opencode),
            other => other
                .parse::<Format>()
                .map(Source::Provider)
                .map_err(|_| format!("unknown format `{s}` (expected one of: {})", Source::NAMES)),
        }
    }
}

/// Where a block came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockSource {
    /// JSON path inside its document (`messages[3].content[1]`).
    pub path: std::borrow::Cow<'static, str>,
    /// For logs: the 1-based line of the event.
    pub line: Option<usize>,
    /// For logs: the event's uuid (shared by every block of the event).
    pub uuid: Option<std::sync::Arc<str>>,
}

impl std::fmt::Display for BlockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.line, &self.uuid) {
            (Some(line), Some(uuid)) => write!(f, "line {line} (uuid {uuid}) {}", self.path),
            (Some(line), None) => write!(f, "line {line} {}", self.path),
            _ => f.write_str(&self.path),
        }
    }
}

/// A tool the request declared.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// The JSON Schema of its arguments, when given.
    pub schema: Option<Value>,
    /// What the request told the model the tool does, when it did.
    pub description: Option<String>,
}

/// A problem found while reading, before any pairing check (for example
/// arguments that are not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadNote {
    /// Where.
    pub source: BlockSource,
    /// The raw arguments text.
    pub raw: String,
    /// The call id.
    pub id: String,
    /// The parser's complaint.
    pub error: String,
}

/// One captured conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// What it was read as.
    pub source: Source,
    /// Messages in the provider's grouping.
    pub messages: Vec<Message>,
    /// Path of each message.
    pub message_sources: Vec<BlockSource>,
    /// Source of each block of each message.
    pub block_sources: Vec<Vec<BlockSource>>,
    /// Tools the request declared (empty when unknown).
    pub tools: Vec<ToolSpec>,
    /// The system prompt, when given.
    pub system: Option<String>,
    /// Arguments that did not parse as JSON.
    pub notes: Vec<ReadNote>,
    /// Calls the provider runs itself (Anthropic server tools, the MCP
    /// connector) and their result blocks: they pair among themselves and
    /// never need a client `tool_result`.
    pub hosted: Vec<Hosted>,
    /// What the reader noticed that is not a pairing problem of this
    /// conversation (a branch of a log left behind, a continuation whose
    /// earlier items are stored elsewhere).
    pub notices: Vec<Notice>,
    /// Set when the request continues a stored response or conversation
    /// (`previous_response_id`, `conversation`): its calls live on the
    /// server, so outputs for calls not in the request cannot be checked.
    pub continues: Option<String>,
    /// What this conversation is within its file, when that needs saying:
    /// `sub-agent agent-a1b2`, `after compaction 2`.
    pub label: Option<String>,
    /// True when the request can call tools it does not list (MCP connector
    /// servers), so a name missing from `tools` is not an unknown tool.
    pub open_tools: bool,
    /// Call ids whose item is not a plain function call, with the item type
    /// (`custom_tool_call`, `local_shell_call`, …), for the provider's wording.
    pub call_types: Vec<(String, String)>,
    /// The model the request names, when it does (Gemini 3 models require
    /// thought signatures on calls).
    pub model: Option<String>,
    /// Gemini: ids of the first call of a model turn sent without its
    /// `thoughtSignature`.
    pub unsigned: Vec<String>,
    /// Gemini: how many parts carry a `thoughtSignature`.
    pub signatures: usize,
    /// Requests the log says the provider refused: an agent writes the
    /// error in the model's place (Claude Code's `isApiErrorMessage`
    /// events). Evidence for the checker, never a message of the history.
    pub refusals: Vec<Refusal>,
    /// What the provider answered this very request, when a recording of
    /// the exchange says (an API test's cassette, a HAR file).
    pub answer: Option<Answer>,
    /// Assistant messages the agent wrote itself, in the model's place
    /// (Claude Code's `<synthetic>` ones): no evidence that a request
    /// was answered.
    pub synthetic: Vec<usize>,
    /// The tokens the provider counted for replies, as the file recorded
    /// them, by the reply's message.
    pub usage: Vec<TripUsage>,
    /// Anthropic: the request enables extended thinking (`thinking.type`
    /// `enabled`): every reply then opens with a thinking block.
    pub thinking: bool,
    /// Anthropic: `thinking.type` `adaptive`: the model thinks when it
    /// chooses, so a reply may have no thinking block to keep.
    pub thinking_adaptive: bool,
    /// Anthropic: the messages whose content opens with a `thinking` or
    /// `redacted_thinking` block.
    pub opens_with_thinking: Vec<usize>,
}

/// The tokens of the trip whose reply is message `message`.
#[derive(Debug, Clone, PartialEq)]
pub struct TripUsage {
    /// The reply's index in [`Conversation::messages`].
    pub message: usize,
    /// Its tokens.
    pub usage: loopdbg_engine::message::Usage,
    /// The model that wrote it, when the file says.
    pub model: Option<String>,
}

/// The provider's answer to a recorded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// For an error, what the provider said (its `error.message`); empty
    /// when the recording keeps the body compressed.
    pub text: String,
    /// Where the response is in the recording.
    pub source: BlockSource,
    /// What kind of file keeps it, for the words that cite it.
    pub kept_in: Keeper,
}

/// What kind of file recorded a provider's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keeper {
    /// An HTTP recording or a proxy capture.
    #[default]
    Recording,
    /// A span of an OpenTelemetry trace.
    Trace,
}

impl Keeper {
    /// The noun a finding cites it by.
    pub fn noun(self) -> &'static str {
        match self {
            Keeper::Recording => "recording",
            Keeper::Trace => "trace",
        }
    }
}

/// A request the provider refused, as an agent log recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// How many messages of the conversation the refused request carried.
    pub at: usize,
    /// The HTTP status, when the log gives it (`apiErrorStatus`, or the
    /// number in `API Error: 400 …`).
    pub status: Option<u16>,
    /// What the agent wrote (`API Error: 400 {"type":"error",…}`).
    pub text: String,
    /// Where.
    pub source: BlockSource,
}

/// Whether a hosted block asks for a call or answers one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostedRole {
    /// `server_tool_use`, `mcp_tool_use`.
    Call,
    /// `web_search_tool_result`, `code_execution_tool_result`,
    /// `mcp_tool_result`, …: names its call by `tool_use_id`.
    Result,
    /// A client `tool_use` made from inside the hosted call `id`
    /// (programmatic tool calling: `caller.tool_id`). That call waits for
    /// the client's result, so its own result comes in a later turn.
    Awaits,
}

/// One block of a call the provider runs itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosted {
    /// Call or result.
    pub role: HostedRole,
    /// The call id (`srvtoolu_…`, `mcptoolu_…`).
    pub id: String,
    /// The block type as written (`server_tool_use`, `web_search_tool_result`).
    pub block: String,
    /// For calls: the tool name (`web_search`); for results: the block type.
    pub name: String,
    /// The message it sits in.
    pub message: usize,
    /// Its position in that message's content as written.
    pub position: usize,
    /// Where it is.
    pub source: BlockSource,
}

/// Something the reader noticed, reported as a warning.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// A stable kind ([`OffBranch`](crate::finding::Kind::OffBranch), …).
    pub kind: crate::finding::Kind,
    /// Where.
    pub source: BlockSource,
    /// The ids involved.
    pub ids: Vec<String>,
    /// What it means.
    pub message: String,
}

/// An input that cannot be read as a conversation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{path}: {message}", line.map(|l| format!("line {l} ")).unwrap_or_default())]
pub struct ReadError {
    /// For logs read line by line: the line the document came from.
    pub line: Option<usize>,
    /// Where in the document reading failed.
    pub path: JsonPath,
    /// What was expected.
    pub message: String,
}

pub(crate) fn err(path: &JsonPath, message: impl Into<String>) -> ReadError {
    ReadError {
        line: None,
        path: path.clone(),
        message: message.into(),
    }
}

impl Conversation {
    pub(crate) fn new(source: Source) -> Conversation {
        Conversation {
            source,
            messages: Vec::new(),
            message_sources: Vec::new(),
            block_sources: Vec::new(),
            tools: Vec::new(),
            system: None,
            notes: Vec::new(),
            hosted: Vec::new(),
            notices: Vec::new(),
            continues: None,
            label: None,
            open_tools: false,
            call_types: Vec::new(),
            model: None,
            unsigned: Vec::new(),
            signatures: 0,
            refusals: Vec::new(),
            answer: None,
            synthetic: Vec::new(),
            usage: Vec::new(),
            thinking: false,
            thinking_adaptive: false,
            opens_with_thinking: Vec::new(),
        }
    }

    /// Takes on the tokens `older` (an earlier request of the same
    /// conversation, whose history this one extends) recorded for the
    /// replies both hold: a capture records each trip's tokens with its
    /// own request, and the newest request replays them all.
    pub fn carry_usage_from(&mut self, older: &Conversation) {
        for trip in &older.usage {
            if trip.message < self.messages.len() && self.usage_of(trip.message).is_none() {
                self.usage.push(trip.clone());
            }
        }
        self.usage.sort_by_key(|t| t.message);
    }

    /// The tokens of the reply that is message `i`, when recorded.
    pub fn usage_of(&self, i: usize) -> Option<&TripUsage> {
        self.usage.iter().find(|u| u.message == i)
    }

    /// Pushes a message with hosted blocks read alongside it.
    pub(crate) fn push_read(
        &mut self,
        message: Message,
        source: BlockSource,
        blocks: Vec<BlockSource>,
        hosted: Vec<Hosted>,
    ) {
        let at = self.messages.len();
        self.hosted
            .extend(hosted.into_iter().map(|h| Hosted { message: at, ..h }));
        self.push(message, source, blocks);
    }

    /// Room for `messages` more messages.
    pub(crate) fn reserve(&mut self, messages: usize) {
        self.messages.reserve(messages);
        self.message_sources.reserve(messages);
        self.block_sources.reserve(messages);
    }

    pub(crate) fn push(&mut self, message: Message, source: BlockSource, blocks: Vec<BlockSource>) {
        debug_assert_eq!(message.content.len(), blocks.len());
        self.messages.push(message);
        self.message_sources.push(source);
        self.block_sources.push(blocks);
    }
}

/// `base[i]`, or `base.field[i]` with a field.
pub(crate) fn indexed(base: &JsonPath, field: &'static str, i: usize) -> JsonPath {
    match field {
        "" => base.index(i),
        field => base.key_index(field, i),
    }
}

/// `base.field`.
pub(crate) fn dotted(base: &JsonPath, field: &'static str) -> JsonPath {
    base.key(field)
}

/// Guesses what a single JSON document holds.
pub fn detect(doc: &Value) -> Option<Source> {
    detect_with_evidence(doc).map(|(source, _)| source)
}

/// What a document holds, only when something in it says so (tool blocks,
/// `tool_calls`, input items, parts). A document of plain text messages
/// fits every format, so any forced `--format` is taken for it.
pub fn evidence(doc: &Value) -> Option<Source> {
    detect_with_evidence(doc).and_then(|(source, sure)| sure.then_some(source))
}

/// [`detect`] and whether the content said so (see [`evidence`]), in one pass.
pub fn detect_with_evidence(doc: &Value) -> Option<(Source, bool)> {
    let (messages, input) = match doc {
        Value::Object(o) => (o.get("messages"), o.get("input")),
        Value::Array(_) => (Some(doc), None),
        _ => return None,
    };
    if matches!(input, Some(Value::Array(_) | Value::String(_))) {
        return Some((Source::Provider(Format::Responses), true));
    }
    let gemini_items = match doc {
        Value::Object(o) => o.get("contents").and_then(Value::as_array),
        Value::Array(items) => {
            Some(items).filter(|items| items.first().is_some_and(|i| i.get("parts").is_some()))
        }
        _ => None,
    };
    if gemini_items.is_some() {
        return Some((Source::Provider(Format::Gemini), true));
    }
    if let Value::Object(o) = doc
        && o.contains_key("uuid")
        && o.contains_key("message")
    {
        return Some((Source::ClaudeCode, true));
    }
    if let Value::Object(o) = doc
        && o.contains_key("sessionId")
        && o.contains_key("projectHash")
    {
        return Some((Source::GeminiCli, true));
    }
    if opencode::is_export(doc) {
        return Some((Source::Opencode, true));
    }
    if let Some(sure) = bedrock_evidence(doc) {
        return Some((Source::Provider(Format::Bedrock), sure));
    }
    let items = messages?.as_array()?;
    let mut openai = false;
    let mut anthropic = false;
    let mut responses = false;
    for item in items {
        // The first sign decides: a conversation does not mix formats.
        if openai || anthropic || responses {
            break;
        }
        let role = item.get("role").and_then(Value::as_str);
        let kind = item.get("type").and_then(Value::as_str);
        if matches!(kind, Some("function_call" | "function_call_output")) {
            responses = true;
        }
        if matches!(role, Some("tool" | "function"))
            || item.get("tool_calls").is_some()
            || item.get("function_call").is_some()
        {
            openai = true;
        }
        if let Some(Value::Array(blocks)) = item.get("content") {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some(
                        "tool_use" | "tool_result" | "server_tool_use" | "mcp_tool_use"
                        | "thinking" | "redacted_thinking",
                    ) => anthropic = true,
                    Some("output_text" | "input_text") => responses = true,
                    _ => {}
                }
            }
        }
    }
    // Nothing in the messages says which (a first request is often one
    // user message): the tools' shape and a top-level `system` do.
    if !(openai || anthropic || responses)
        && let Value::Object(o) = doc
    {
        let tools = o.get("tools").and_then(Value::as_array);
        let any_tool = |f: &dyn Fn(&Value) -> bool| tools.is_some_and(|t| t.iter().any(f));
        if any_tool(&|t| t.get("function").is_some_and(Value::is_object)) {
            openai = true;
        } else if any_tool(&|t| t.get("input_schema").is_some()) || o.contains_key("system") {
            anthropic = true;
        }
    }
    let system_role = items.iter().any(|item| {
        matches!(
            item.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    });
    Some(if responses {
        (Source::Provider(Format::Responses), true)
    } else if (openai || system_role) && !anthropic {
        (Source::Provider(Format::Openai), openai)
    } else {
        (Source::Provider(Format::Anthropic), anthropic)
    })
}

/// Whether a document is a Bedrock Converse request, and whether its
/// content says so for sure: blocks keyed by kind with no `type`
/// (`{"toolUse": …}`, `{"text": …}`), or Converse's own top-level fields
/// (`toolConfig`, `inferenceConfig`, `modelId`). `None` when it is not.
fn bedrock_evidence(doc: &Value) -> Option<bool> {
    let (messages, top) = match doc {
        Value::Object(o) => (o.get("messages")?.as_array()?, Some(o)),
        Value::Array(items) => (items, None),
        _ => return None,
    };
    let converse_fields = top.is_some_and(|o| {
        [
            "toolConfig",
            "inferenceConfig",
            "modelId",
            "additionalModelRequestFields",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
    });
    let mut untyped = false;
    for block in messages
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .filter_map(Value::as_object)
    {
        if block.contains_key("type") {
            return None;
        }
        if block.contains_key("toolUse") || block.contains_key("toolResult") {
            return Some(true);
        }
        untyped = true;
    }
    match (converse_fields, untyped) {
        (true, _) => Some(true),
        (false, true) => Some(false),
        (false, false) => None,
    }
}

/// Reads a single document (request body or bare array) as `source`.
pub fn read(doc: &Value, source: Source) -> Result<Conversation, ReadError> {
    read_owned(doc.clone(), source)
}

/// [`read`], taking the document so its contents move into the
/// conversation instead of being copied (what `check` does per line).
pub fn read_owned(doc: Value, source: Source) -> Result<Conversation, ReadError> {
    read_owned_as(doc, source, Detail::Full)
}

/// [`read_owned`], keeping what `detail` keeps. Under [`Detail::Shape`]
/// texts are fingerprinted as they are found instead of copied (arguments
/// and results move out of `doc` whole: the schema check reads them):
/// checking a body then holds it about once (the proxy's gate held a
/// 250 MB request four times over).
pub fn read_owned_as(
    mut doc: Value,
    source: Source,
    detail: Detail,
) -> Result<Conversation, ReadError> {
    let doc = &mut doc;
    match source {
        Source::Provider(Format::Anthropic) => anthropic::read(doc, detail),
        Source::Provider(Format::Openai) => openai_chat::read(doc, detail),
        Source::Provider(Format::Responses) => responses::read(doc, detail),
        Source::Provider(Format::Gemini) => gemini::read(doc, detail),
        Source::Provider(Format::Bedrock) => bedrock::read(doc, detail),
        Source::Opencode => opencode::read(doc),
        Source::Mcp => Err(err(
            &JsonPath::root(),
            "an MCP capture is JSON Lines of records; read it with `mcp::sessions`",
        )),
        Source::GeminiCli => {
            // The legacy whole-file recording: metadata with its messages.
            let mut log = GeminiCliLog::default();
            log.push_owned(1, std::mem::take(doc))?;
            log.finish().into_iter().next().ok_or_else(|| {
                err(
                    &JsonPath::root().key("messages"),
                    "expected at least one message record",
                )
            })
        }
        Source::ClaudeCode | Source::Codex | Source::CopilotCli => Err(err(
            &JsonPath::root(),
            "an agent log is JSON Lines of events; read it with `Log`",
        )),
    }
}

/// A Responses request that continues a stored response whose calls are
/// `calls` (see [`crate::chain`]): read as if those calls stood before its
/// input, each located where the stored response has it
/// (`previous_response_id resp_… output[k]`), so an output missing for
/// one is found as it is in a request that carries the call itself.
pub fn read_continuing(
    mut doc: Value,
    response_id: &str,
    calls: &[crate::chain::StoredCall],
    detail: Detail,
) -> Result<Conversation, ReadError> {
    let Some(body) = doc.as_object_mut() else {
        return read_owned_as(doc, Source::Provider(Format::Responses), detail);
    };
    let stored = calls.len();
    let mut items: Vec<Value> = calls.iter().map(|c| c.item.clone()).collect();
    let mut text_input = false;
    match body.remove("input") {
        Some(Value::Array(rest)) => items.extend(rest),
        Some(Value::String(text)) => {
            text_input = true;
            items.push(serde_json::json!({"role": "user", "content": text}));
        }
        Some(other) => {
            body.insert("input".into(), other);
            return read_owned_as(doc, Source::Provider(Format::Responses), detail);
        }
        None => {}
    }
    body.insert("input".into(), Value::Array(items));
    let located = |i: usize, _: &JsonPath| {
        let path = match i.checked_sub(stored) {
            None => crate::chain::stored_path(response_id, calls[i].output_index),
            Some(_) if text_input => "input".to_string(),
            Some(k) => JsonPath::root().key("input").index(k).to_string(),
        };
        BlockSource {
            path: path.into(),
            ..Default::default()
        }
    };
    responses::read_items(&mut doc, detail, &located)
}

/// The conversation's array and the name paths use for it (`messages` or
/// `input`, also for a bare array, so paths read the same either way).
pub(crate) fn array_at<'a>(
    doc: &'a mut Value,
    key: &'static str,
) -> Result<(&'a mut Vec<Value>, JsonPath), ReadError> {
    let at = JsonPath::root().key(key);
    match doc {
        Value::Array(items) => Ok((items, at)),
        Value::Object(o) => match o.get_mut(key) {
            Some(Value::Array(items)) => Ok((items, at)),
            Some(_) => Err(err(&at, format!("expected `{key}` to be an array"))),
            None => Err(err(&JsonPath::root(), format!("expected a `{key}` array"))),
        },
        _ => Err(err(
            &JsonPath::root(),
            format!("expected an object with `{key}`, or an array"),
        )),
    }
}

pub(crate) fn read_tools(doc: &Value, conv: &mut Conversation) {
    // `functions` is the Chat API's older spelling (before `tools`).
    let listed = ["tools", "functions"]
        .iter()
        .filter_map(|key| doc.get(*key).and_then(Value::as_array))
        .flatten();
    for t in listed {
        // Chat nests a definition under its type: `function`, or `custom`.
        let f = t.get("function").or_else(|| t.get("custom")).unwrap_or(t);
        if let Some(name) = f.get("name").and_then(Value::as_str) {
            let schema = f
                .get("input_schema")
                .or_else(|| f.get("parameters"))
                .cloned();
            conv.tools.push(ToolSpec {
                name: name.to_string(),
                schema,
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
}

pub(crate) fn role_of(item: &Value, path: &JsonPath) -> Result<String, ReadError> {
    item.get("role")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| err(path, "expected a message with a string `role`"))
}

/// A content field as text: a string, or the `text` of its parts joined by `sep`.
pub(crate) fn joined_text(content: Option<&Value>, sep: &str) -> Option<String> {
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

pub(crate) fn system_text(content: Option<&Value>) -> Option<String> {
    joined_text(content, "\n")
}

/// Anthropic's `stop_reason` (or OpenAI's `finish_reason`) as a finish reason.
pub fn finish_reason_of(value: Option<&Value>) -> Option<FinishReason> {
    match value?.as_str()? {
        "end_turn" | "stop" | "stop_sequence" | "pause_turn" => Some(FinishReason::Stop),
        "tool_use" | "tool_calls" => Some(FinishReason::ToolCalls),
        "max_tokens" | "length" | "model_context_window_exceeded" => Some(FinishReason::Length),
        "refusal" | "content_filter" => Some(FinishReason::ContentFilter),
        _ => None,
    }
}

/// Moves a field's value out (the document is discarded after reading).
pub(crate) fn take(v: &mut Value, key: &str) -> Value {
    v.get_mut(key).map(Value::take).unwrap_or(Value::Null)
}

pub(crate) fn str_field<'a>(
    v: &'a Value,
    key: &str,
    path: &JsonPath,
) -> Result<&'a str, ReadError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, format!("expected a string `{key}`")))
}

pub(crate) fn text_of_parts(content: Option<&Value>) -> Option<String> {
    joined_text(content, "")
}

/// Parses an `arguments` string; on failure keeps the raw text and notes it.
pub(crate) fn parse_arguments(
    raw: Option<&Value>,
    id: &str,
    source: &BlockSource,
    notes: &mut Vec<ReadNote>,
) -> Json {
    match raw {
        Some(Value::String(s)) => parse_argument_text(s, id, source, notes),
        Some(other) => Json::new(other.clone()),
        None => Json::new(Value::Object(Default::default())),
    }
}

/// [`parse_arguments`] of an `arguments` string.
pub(crate) fn parse_argument_text(
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

/// Ids of a message's tool_use blocks with their block index.
pub fn tool_uses(m: &Message) -> impl Iterator<Item = (usize, &str, &str)> {
    m.content.iter().enumerate().filter_map(|(k, b)| match b {
        Block::ToolUse { id, name, .. } => Some((k, &**id, &**name)),
        _ => None,
    })
}

/// Ids of a message's tool_result blocks with their block index.
pub fn tool_results(m: &Message) -> impl Iterator<Item = (usize, &str)> {
    m.content.iter().enumerate().filter_map(|(k, b)| match b {
        Block::ToolResult { tool_use_id, .. } => Some((k, &**tool_use_id)),
        _ => None,
    })
}

/// How much of a log's content a reader keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Detail {
    /// Everything: what replay shows and `--fix` writes back.
    #[default]
    Full,
    /// What pairing and the other checks read: ids, names, roles and the
    /// order of blocks. Texts and arguments are kept as fingerprints that
    /// compare as they do (see `fingerprint`), and results' content is
    /// dropped, so `check` holds a long log in a fraction of the memory.
    Shape,
}

/// An agent log read whole: events in, conversations out.
#[derive(Debug, Clone)]
pub enum Log {
    /// A Claude Code session log.
    ClaudeCode(ClaudeCodeLog),
    /// A Codex CLI rollout.
    Codex(CodexRollout),
    /// A Gemini CLI chat recording.
    GeminiCli(GeminiCliLog),
    /// A GitHub Copilot CLI session log.
    CopilotCli(copilot_cli::CopilotCliLog),
}

impl Log {
    /// An empty reader for `source`, when it is a log.
    pub fn new(source: Source) -> Option<Log> {
        match source {
            Source::ClaudeCode => Some(Log::ClaudeCode(ClaudeCodeLog::default())),
            Source::Codex => Some(Log::Codex(CodexRollout::default())),
            Source::GeminiCli => Some(Log::GeminiCli(GeminiCliLog::default())),
            Source::CopilotCli => Some(Log::CopilotCli(Default::default())),
            Source::Provider(_) | Source::Opencode | Source::Mcp => None,
        }
    }

    /// Keeps only what [`Detail`] says (Claude Code logs; the other logs
    /// are small and always read in full).
    pub fn keep(&mut self, detail: Detail) {
        if let Log::ClaudeCode(log) = self {
            log.keep(detail);
        }
    }

    /// Tells the reader how large the log is, so it can set aside room
    /// for its events once instead of growing (and copying) as they come.
    pub fn expect_bytes(&mut self, bytes: u64) {
        if let Log::ClaudeCode(log) = self {
            log.expect_bytes(bytes);
        }
    }

    /// Adds the event on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, event: Value) -> Result<(), ReadError> {
        match self {
            Log::ClaudeCode(log) => log.push_owned(line, event),
            Log::Codex(log) => log.push_owned(line, event),
            Log::GeminiCli(log) => log.push_owned(line, event),
            Log::CopilotCli(log) => log.push_owned(line, event),
        }
    }

    /// Reads a chunk of lines, in order; blank lines are skipped. Claude
    /// Code lines are independent until the log is finished, so they are
    /// read on every core. A line that cannot be read is left out and
    /// returned with why, and the rest is read: agents skip such a line
    /// when they resume a log, and a log still being written ends in half
    /// a line.
    pub fn push_lines(&mut self, lines: &[(usize, &str)]) -> Vec<(usize, LineError)> {
        use rayon::prelude::*;
        let mut bad = Vec::new();
        match self {
            Log::ClaudeCode(log) => {
                let detail = log.detail();
                let parsed: Vec<(usize, Result<Option<claude_code::Event>, LineError>)> = lines
                    .par_iter()
                    .map(|&(n, text)| {
                        let event = if text.trim().is_empty() {
                            Ok(None)
                        } else {
                            claude_code::Event::parse(n, text, detail)
                        };
                        (n, event)
                    })
                    .collect();
                for ((n, event), &(_, text)) in parsed.into_iter().zip(lines) {
                    match event {
                        Ok(Some(e)) => log.push_event(e),
                        Ok(None) => {}
                        Err(e) => match joined_records(text) {
                            Some(records) => {
                                log.joined.push((n, records.len()));
                                for record in records {
                                    if let Ok(Some(e)) =
                                        claude_code::Event::parse(n, &record.to_string(), detail)
                                    {
                                        log.push_event(e);
                                    }
                                }
                            }
                            None => bad.push((n, e)),
                        },
                    }
                }
            }
            other => {
                for &(n, text) in lines {
                    if text.trim().is_empty() {
                        continue;
                    }
                    let values = match serde_json::from_str::<Value>(text) {
                        Ok(v) => vec![v],
                        Err(e) => match joined_records(text) {
                            Some(records) => {
                                other.note_joined(n, records.len());
                                records
                            }
                            None => {
                                bad.push((n, LineError::Json(e)));
                                continue;
                            }
                        },
                    };
                    for v in values {
                        if let Err(e) = other.push_owned(n, v) {
                            bad.push((n, LineError::Read(e)));
                        }
                    }
                }
            }
        }
        bad
    }

    /// Notes that `line` held `count` records joined (each was read).
    fn note_joined(&mut self, line: usize, count: usize) {
        match self {
            Log::ClaudeCode(log) => log.joined.push((line, count)),
            Log::Codex(log) => log.joined.push((line, count)),
            Log::GeminiCli(log) => log.joined.push((line, count)),
            Log::CopilotCli(log) => log.joined.push((line, count)),
        }
    }

    /// The conversations the log holds.
    pub fn finish(self) -> Result<Vec<Conversation>, ReadError> {
        match self {
            Log::ClaudeCode(log) => Ok(log.finish()),
            Log::Codex(log) => log.finish(),
            Log::GeminiCli(log) => Ok(log.finish()),
            Log::CopilotCli(log) => Ok(log.finish()),
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
fn note_joined_lines(out: &mut [Conversation], joined: Vec<(usize, usize)>) {
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

/// What one JSON line says about the file it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// Only this format writes such a line.
    Decisive(Source),
    /// Bookkeeping that this format writes, but that holds no message.
    Suggests(Source),
    /// Nothing to go on.
    Unknown,
}

/// Claude Code's bookkeeping event types.
const CLAUDE_CODE_BOOKKEEPING: &[&str] = &[
    "file-history-snapshot",
    "summary",
    "queue-operation",
    "system",
    "progress",
    "attachment",
    "custom-title",
    "ai-title",
    "last-prompt",
    "permission-mode",
    "mode",
    "tag",
    "agent-name",
    "pr-link",
    "worktree-state",
];

/// Classifies one line of a JSON Lines file.
pub fn classify_line(v: &Value) -> Evidence {
    let Value::Object(o) = v else {
        return match detect(v) {
            Some(s) => Evidence::Decisive(s),
            None => Evidence::Unknown,
        };
    };
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    if o.contains_key("payload") && codex::RECORD_TYPES.contains(&kind) {
        return Evidence::Decisive(Source::Codex);
    }
    if o.contains_key("$rewindTo") || o.contains_key("$set") {
        return Evidence::Decisive(Source::GeminiCli);
    }
    if o.contains_key("sessionId") && o.contains_key("projectHash") {
        return Evidence::Decisive(Source::GeminiCli);
    }
    if matches!(kind, "user" | "assistant") && o.contains_key("message") {
        return Evidence::Decisive(Source::ClaudeCode);
    }
    if copilot_cli::is_event(o) {
        return Evidence::Decisive(Source::CopilotCli);
    }
    if matches!(kind, "user" | "gemini" | "info" | "error" | "warning")
        && o.contains_key("id")
        && o.contains_key("content")
        && !o.contains_key("role")
    {
        return Evidence::Decisive(Source::GeminiCli);
    }
    if CLAUDE_CODE_BOOKKEEPING.contains(&kind)
        && (o.contains_key("uuid")
            || o.contains_key("sessionId")
            || o.contains_key("leafUuid")
            || o.contains_key("messageId")
            || o.contains_key("snapshot")
            || o.contains_key("operation"))
    {
        return Evidence::Suggests(Source::ClaudeCode);
    }
    if (o.contains_key("messages") || o.contains_key("input") || o.contains_key("contents"))
        && let Some(s) = detect(v)
    {
        return Evidence::Decisive(s);
    }
    Evidence::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_spelled_like_format_would() {
        let messages = JsonPath::root().key("messages");
        for i in [0, 7, 10, 99, 123_456, usize::MAX] {
            assert_eq!(
                indexed(&messages, "", i).to_string(),
                format!("messages[{i}]")
            );
            assert_eq!(
                indexed(&messages.index(3), "content", i).to_string(),
                format!("messages[3].content[{i}]")
            );
        }
        let input = JsonPath::root().key("input").index(2);
        assert_eq!(dotted(&input, "content").to_string(), "input[2].content");
    }

    /// The proxy's gate checks requests read as `Shape`: for every request
    /// body the project ships, that finds what reading it whole finds.
    #[test]
    fn a_body_read_as_shape_is_judged_as_read_in_full() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/transcripts"
        );
        let mut judged = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Some(source @ Source::Provider(_)) = detect(&doc) else {
                continue;
            };
            let full = read_owned(doc.clone(), source).map(|c| crate::check::check(&c));
            let shape = read_owned_as(doc, source, Detail::Shape).map(|c| crate::check::check(&c));
            match (full, shape) {
                (Ok(full), Ok(shape)) => {
                    let words = |f: &[crate::check::Finding]| {
                        f.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>()
                    };
                    assert_eq!(words(&full), words(&shape), "{}", path.display());
                    judged += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{}: {a:?} / {b:?}", path.display()),
            }
        }
        assert!(judged >= 25, "only {judged} bodies judged");
    }
}
