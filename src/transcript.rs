//! Reading captured conversations: Anthropic and OpenAI request bodies or
//! bare message arrays, Responses `input` arrays, and Claude Code session
//! logs. Each becomes a [`Conversation`]: canonical messages that keep the
//! provider's own grouping (an Anthropic user message may hold several
//! tool_result blocks), with the source of every block, so a finding can
//! name `messages[3].content[1]` or the log line and uuid.
//!
//! Pure: values in, conversations out. Reading files and lines is the
//! binary's job.

use serde_json::Value;

use crate::message::{Block, Message, Role};
use crate::provider::Format;
use crate::session::{FinishReason, Json};

/// What a file holds, as detected or forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One of the provider formats.
    Provider(Format),
    /// A Claude Code session log (JSON Lines of events).
    ClaudeCode,
}

impl Source {
    /// The name used in reports and `--format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Provider(f) => f.as_str(),
            Source::ClaudeCode => "claude-code",
        }
    }

    /// The provider whose rules apply.
    pub fn provider(self) -> Format {
        match self {
            Source::Provider(f) => f,
            Source::ClaudeCode => Format::Anthropic,
        }
    }
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "claude-code" | "claude_code" => Ok(Source::ClaudeCode),
            other => other.parse::<Format>().map(Source::Provider).map_err(|_| {
                format!(
                    "unknown format `{s}` (expected one of: anthropic, openai, responses, claude-code)"
                )
            }),
        }
    }
}

/// Where a block came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockSource {
    /// JSON path inside its document (`messages[3].content[1]`).
    pub path: String,
    /// For logs: the 1-based line of the event.
    pub line: Option<usize>,
    /// For logs: the event's uuid.
    pub uuid: Option<String>,
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
}

/// An input that cannot be read as a conversation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ReadError {
    /// JSON path where reading failed.
    pub path: String,
    /// What was expected.
    pub message: String,
}

fn err(path: impl Into<String>, message: impl Into<String>) -> ReadError {
    ReadError {
        path: path.into(),
        message: message.into(),
    }
}

impl Conversation {
    fn new(source: Source) -> Conversation {
        Conversation {
            source,
            messages: Vec::new(),
            message_sources: Vec::new(),
            block_sources: Vec::new(),
            tools: Vec::new(),
            system: None,
            notes: Vec::new(),
        }
    }

    fn push(&mut self, message: Message, source: BlockSource, blocks: Vec<BlockSource>) {
        debug_assert_eq!(message.content.len(), blocks.len());
        self.messages.push(message);
        self.message_sources.push(source);
        self.block_sources.push(blocks);
    }
}

/// Guesses what a single JSON document holds.
pub fn detect(doc: &Value) -> Option<Source> {
    let (messages, input) = match doc {
        Value::Object(o) => (o.get("messages"), o.get("input")),
        Value::Array(_) => (Some(doc), None),
        _ => return None,
    };
    if let Some(Value::Array(items)) = input {
        let _ = items;
        return Some(Source::Provider(Format::Responses));
    }
    if let Value::Object(o) = doc
        && o.contains_key("uuid")
        && o.contains_key("message")
    {
        return Some(Source::ClaudeCode);
    }
    let items = messages?.as_array()?;
    let mut openai = false;
    let mut anthropic = false;
    let mut responses = false;
    for item in items {
        let role = item.get("role").and_then(Value::as_str);
        let kind = item.get("type").and_then(Value::as_str);
        if matches!(kind, Some("function_call" | "function_call_output")) {
            responses = true;
        }
        if matches!(role, Some("tool" | "system" | "developer")) || item.get("tool_calls").is_some()
        {
            openai = true;
        }
        if let Some(Value::Array(blocks)) = item.get("content") {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_use" | "tool_result") => anthropic = true,
                    Some("output_text" | "input_text") => responses = true,
                    _ => {}
                }
            }
        }
    }
    Some(Source::Provider(if responses {
        Format::Responses
    } else if openai && !anthropic {
        Format::Openai
    } else {
        Format::Anthropic
    }))
}

/// Reads a single document (request body or bare array) as `source`.
pub fn read(doc: &Value, source: Source) -> Result<Conversation, ReadError> {
    read_owned(doc.clone(), source)
}

/// [`read`], taking the document so its contents move into the
/// conversation instead of being copied (what `check` does per line).
pub fn read_owned(mut doc: Value, source: Source) -> Result<Conversation, ReadError> {
    let doc = &mut doc;
    match source {
        Source::Provider(Format::Anthropic) => read_anthropic(doc),
        Source::Provider(Format::Openai) => read_openai(doc),
        Source::Provider(Format::Responses) => read_responses(doc),
        Source::ClaudeCode => Err(err(
            "",
            "a Claude Code log is JSON Lines of events; read it with ClaudeCodeLog",
        )),
    }
}

/// The conversation's array and the name paths use for it (`messages` or
/// `input`, also for a bare array, so paths read the same either way).
fn array_at<'a>(doc: &'a mut Value, key: &str) -> Result<(&'a mut Vec<Value>, String), ReadError> {
    match doc {
        Value::Array(items) => Ok((items, key.to_string())),
        Value::Object(o) => match o.get_mut(key) {
            Some(Value::Array(items)) => Ok((items, key.to_string())),
            Some(_) => Err(err(key, format!("expected `{key}` to be an array"))),
            None => Err(err("", format!("expected a `{key}` array"))),
        },
        _ => Err(err(
            "",
            format!("expected an object with `{key}`, or an array"),
        )),
    }
}

fn read_tools(doc: &Value, conv: &mut Conversation) {
    let Some(Value::Array(tools)) = doc.get("tools") else {
        return;
    };
    for t in tools {
        let f = t.get("function").unwrap_or(t);
        if let Some(name) = f.get("name").and_then(Value::as_str) {
            let schema = f
                .get("input_schema")
                .or_else(|| f.get("parameters"))
                .cloned();
            conv.tools.push(ToolSpec {
                name: name.to_string(),
                schema,
            });
        }
    }
}

fn role_of(item: &Value, path: &str) -> Result<String, ReadError> {
    item.get("role")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| err(path, "expected a message with a string `role`"))
}

/// A content field as text: a string, or the `text` of its parts joined by `sep`.
fn joined_text(content: Option<&Value>, sep: &str) -> Option<String> {
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

fn system_text(content: Option<&Value>) -> Option<String> {
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

/// Reads one Anthropic message's content into blocks.
fn anthropic_blocks(
    content: Option<&mut Value>,
    path: &str,
    mut source: impl FnMut(String) -> BlockSource,
) -> Result<(Vec<Block>, Vec<BlockSource>), ReadError> {
    let mut blocks = Vec::new();
    let mut sources = Vec::new();
    match content {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            blocks.push(Block::Text {
                text: s.as_str().into(),
            });
            sources.push(source(format!("{path}.content")));
        }
        Some(Value::Array(items)) => {
            for (k, b) in items.iter_mut().enumerate() {
                let bpath = format!("{path}.content[{k}]");
                let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
                let block = match kind {
                    "text" => Block::Text {
                        text: b.get("text").and_then(Value::as_str).unwrap_or("").into(),
                    },
                    "tool_use" | "server_tool_use" => Block::ToolUse {
                        id: str_field(b, "id", &bpath)?.into(),
                        name: str_field(b, "name", &bpath)?.into(),
                        input: Json::new(take(b, "input")),
                    },
                    "tool_result" => Block::ToolResult {
                        tool_use_id: str_field(b, "tool_use_id", &bpath)?.into(),
                        content: Json::new(take(b, "content")),
                        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                    },
                    // Images, thinking and the like carry no pairing.
                    _ => continue,
                };
                blocks.push(block);
                sources.push(source(bpath));
            }
        }
        Some(_) => {
            return Err(err(
                format!("{path}.content"),
                "expected a string or an array of blocks",
            ));
        }
    }
    Ok((blocks, sources))
}

/// Moves a field's value out (the document is discarded after reading).
fn take(v: &mut Value, key: &str) -> Value {
    v.get_mut(key).map(Value::take).unwrap_or(Value::Null)
}

fn str_field<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a str, ReadError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| err(path, format!("expected a string `{key}`")))
}

fn read_anthropic(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Anthropic));
    read_tools(doc, &mut conv);
    conv.system = system_text(doc.get("system"));
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("{base}[{i}]");
        let role = match role_of(item, &path)?.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => {
                conv.system = system_text(item.get("content"));
                continue;
            }
            other => {
                return Err(err(
                    &path,
                    format!("unknown role `{other}` for Anthropic (expected user or assistant)"),
                ));
            }
        };
        let finish_reason = finish_reason_of(item.get("stop_reason"));
        let (content, sources) =
            anthropic_blocks(item.get_mut("content"), &path, |p| BlockSource {
                path: p,
                ..Default::default()
            })?;
        conv.push(
            Message {
                role,
                content,
                finish_reason,
            },
            BlockSource {
                path,
                ..Default::default()
            },
            sources,
        );
    }
    Ok(conv)
}

fn text_of_parts(content: Option<&Value>) -> Option<String> {
    joined_text(content, "")
}

/// Parses an `arguments` string; on failure keeps the raw text and notes it.
fn parse_arguments(
    raw: Option<&Value>,
    id: &str,
    source: &BlockSource,
    notes: &mut Vec<ReadNote>,
) -> Json {
    match raw {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) => Json::new(v),
            Err(e) => {
                notes.push(ReadNote {
                    source: source.clone(),
                    raw: s.clone(),
                    id: id.to_string(),
                    error: e.to_string(),
                });
                Json::new(Value::String(s.clone()))
            }
        },
        Some(other) => Json::new(other.clone()),
        None => Json::new(Value::Object(Default::default())),
    }
}

fn read_openai(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Openai));
    read_tools(doc, &mut conv);
    let (items, base) = array_at(doc, "messages")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("{base}[{i}]");
        let src = |p: String| BlockSource {
            path: p,
            ..Default::default()
        };
        let role = role_of(item, &path)?;
        let mut content = Vec::new();
        let mut sources = Vec::new();
        let role = match role.as_str() {
            "system" | "developer" => {
                conv.system = text_of_parts(item.get("content"));
                continue;
            }
            "user" => {
                content.push(Block::Text {
                    text: text_of_parts(item.get("content"))
                        .unwrap_or_default()
                        .into(),
                });
                sources.push(src(format!("{path}.content")));
                Role::User
            }
            "assistant" => {
                if let Some(text) = text_of_parts(item.get("content")) {
                    content.push(Block::Text { text: text.into() });
                    sources.push(src(format!("{path}.content")));
                }
                if let Some(Value::Array(calls)) = item.get("tool_calls") {
                    for (k, c) in calls.iter().enumerate() {
                        let cpath = format!("{path}.tool_calls[{k}]");
                        let id = str_field(c, "id", &cpath)?;
                        let f = c
                            .get("function")
                            .ok_or_else(|| err(&cpath, "expected a `function` object"))?;
                        let name = str_field(f, "name", &format!("{cpath}.function"))?;
                        let source = src(cpath.clone());
                        let input =
                            parse_arguments(f.get("arguments"), id, &source, &mut conv.notes);
                        content.push(Block::ToolUse {
                            id: id.into(),
                            name: name.into(),
                            input,
                        });
                        sources.push(source);
                    }
                }
                Role::Assistant
            }
            "tool" => {
                let id = str_field(item, "tool_call_id", &path)?;
                content.push(Block::ToolResult {
                    tool_use_id: id.into(),
                    content: Json::new(take(item, "content")),
                    is_error: false,
                });
                sources.push(src(path.clone()));
                Role::Tool
            }
            other => {
                return Err(err(
                    &path,
                    format!(
                        "unknown role `{other}` for OpenAI Chat (expected system, developer, user, assistant or tool)"
                    ),
                ));
            }
        };
        let finish_reason = finish_reason_of(item.get("finish_reason"));
        conv.push(
            Message {
                role,
                content,
                finish_reason,
            },
            src(path),
            sources,
        );
    }
    Ok(conv)
}

fn read_responses(doc: &mut Value) -> Result<Conversation, ReadError> {
    let mut conv = Conversation::new(Source::Provider(Format::Responses));
    read_tools(doc, &mut conv);
    conv.system = doc
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (items, base) = array_at(doc, "input")?;
    for (i, item) in items.iter_mut().enumerate() {
        let path = format!("{base}[{i}]");
        let src = BlockSource {
            path: path.clone(),
            ..Default::default()
        };
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = role_of(item, &path)?;
                let text = text_of_parts(item.get("content")).unwrap_or_default();
                let role = match role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "system" | "developer" => {
                        conv.system = Some(text);
                        continue;
                    }
                    other => return Err(err(&path, format!("unknown role `{other}`"))),
                };
                conv.push(
                    Message {
                        role,
                        content: vec![Block::Text { text: text.into() }],
                        finish_reason: None,
                    },
                    src.clone(),
                    vec![src],
                );
            }
            "function_call" => {
                let id = str_field(item, "call_id", &path)?;
                let name = str_field(item, "name", &path)?;
                let input = parse_arguments(item.get("arguments"), id, &src, &mut conv.notes);
                let block = Block::ToolUse {
                    id: id.into(),
                    name: name.into(),
                    input,
                };
                // Calls of one turn join the assistant message before them.
                match conv.messages.last_mut() {
                    Some(last) if last.role == Role::Assistant => {
                        last.content.push(block);
                        conv.block_sources.last_mut().expect("parallel").push(src);
                    }
                    _ => conv.push(
                        Message {
                            role: Role::Assistant,
                            content: vec![block],
                            finish_reason: None,
                        },
                        src.clone(),
                        vec![src],
                    ),
                }
            }
            "function_call_output" => {
                let id = str_field(item, "call_id", &path)?;
                conv.push(
                    Message {
                        role: Role::Tool,
                        content: vec![Block::ToolResult {
                            tool_use_id: id.into(),
                            content: Json::new(take(item, "output")),
                            is_error: false,
                        }],
                        finish_reason: None,
                    },
                    src.clone(),
                    vec![src],
                );
            }
            // Reasoning items and the like carry no pairing.
            _ => {}
        }
    }
    Ok(conv)
}

/// Builds a Claude Code session log into conversations, one event at a time.
///
/// Assistant events that share `message.id` are one API message (Claude Code
/// writes one event per content block); consecutive user events holding only
/// tool results are one user message. An event with `parentUuid: null` after
/// the first starts a new segment (a compaction or a new session), whose
/// requests no longer carry the messages before it.
#[derive(Debug)]
pub struct ClaudeCodeLog {
    current: Conversation,
    last_assistant_id: Option<String>,
    last_was_results: bool,
    done: Vec<Conversation>,
    events: usize,
}

impl Default for ClaudeCodeLog {
    fn default() -> Self {
        ClaudeCodeLog {
            current: Conversation::new(Source::ClaudeCode),
            last_assistant_id: None,
            last_was_results: false,
            done: Vec::new(),
            events: 0,
        }
    }
}

impl ClaudeCodeLog {
    /// Adds the event on 1-based `line`.
    pub fn push(&mut self, line: usize, event: &Value) -> Result<(), ReadError> {
        self.push_owned(line, event.clone())
    }

    /// [`ClaudeCodeLog::push`], taking the event so its contents move.
    pub fn push_owned(&mut self, line: usize, mut event: Value) -> Result<(), ReadError> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "user" | "assistant") {
            return Ok(());
        }
        // Sub-agent conversations are logged in the same file; they are
        // separate API conversations.
        if event.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let kind = kind.to_string();
        let uuid = event
            .get("uuid")
            .and_then(Value::as_str)
            .map(str::to_string);
        let starts_segment = event.get("parentUuid").is_some_and(Value::is_null);
        let Some(message) = event.get_mut("message") else {
            return Ok(());
        };
        if self.events > 0 && starts_segment {
            let finished =
                std::mem::replace(&mut self.current, Conversation::new(Source::ClaudeCode));
            if !finished.messages.is_empty() {
                self.done.push(finished);
            }
            self.last_assistant_id = None;
            self.last_was_results = false;
        }
        self.events += 1;
        let role = match message.get("role").and_then(Value::as_str).unwrap_or(&kind) {
            "assistant" => Role::Assistant,
            _ => Role::User,
        };
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let finish = finish_reason_of(message.get("stop_reason"));
        let (blocks, sources) =
            anthropic_blocks(message.get_mut("content"), "message", |p| BlockSource {
                path: p,
                line: Some(line),
                uuid: uuid.clone(),
            })?;
        let only_results =
            !blocks.is_empty() && blocks.iter().all(|b| matches!(b, Block::ToolResult { .. }));
        let conv = &mut self.current;
        let merge = match role {
            Role::Assistant => {
                message_id.is_some()
                    && message_id == self.last_assistant_id
                    && conv
                        .messages
                        .last()
                        .is_some_and(|m| m.role == Role::Assistant)
            }
            _ => {
                only_results
                    && self.last_was_results
                    && conv.messages.last().is_some_and(|m| m.role == Role::User)
            }
        };
        if merge {
            let last = conv.messages.last_mut().expect("checked");
            last.content.extend(blocks);
            if finish.is_some() {
                last.finish_reason = finish;
            }
            conv.block_sources
                .last_mut()
                .expect("parallel")
                .extend(sources);
        } else {
            conv.push(
                Message {
                    role,
                    content: blocks,
                    finish_reason: finish,
                },
                BlockSource {
                    path: "message".into(),
                    line: Some(line),
                    uuid,
                },
                sources,
            );
        }
        self.last_assistant_id = if role == Role::Assistant {
            message_id
        } else {
            None
        };
        self.last_was_results = role == Role::User && only_results;
        Ok(())
    }

    /// The conversations read, in order.
    pub fn finish(mut self) -> Vec<Conversation> {
        if !self.current.messages.is_empty() {
            self.done.push(self.current);
        }
        self.done
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
