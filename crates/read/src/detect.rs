//! The one detector: what a document or a line holds, from its content.

use crate::agent::Agent;
use serde_json::{Value, json};

use loopdbg_formats::provider::Format;

use crate::conversation::Source;
use crate::signs::leans_openai;
use crate::{codex, copilot_cli, crush, opencode};

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
    let gemini = match doc {
        // A single content given as an object (which Gemini takes) too.
        Value::Object(o) => o
            .get("contents")
            .is_some_and(|c| c.is_array() || c.get("parts").is_some()),
        Value::Array(items) => items.first().is_some_and(|i| i.get("parts").is_some()),
        _ => false,
    };
    if gemini {
        return Some((Source::Provider(Format::Gemini), true));
    }
    if let Value::Object(o) = doc
        && o.contains_key("uuid")
        && o.contains_key("message")
    {
        return Some((Source::Agent(Agent::ClaudeCode), true));
    }
    if let Value::Object(o) = doc
        && o.contains_key("sessionId")
        && o.contains_key("projectHash")
    {
        return Some((Source::Agent(Agent::GeminiCli), true));
    }
    if crush::is_session(doc) {
        return Some((Source::Agent(Agent::Crush), true));
    }
    if opencode::is_export(doc) {
        return Some((Source::Agent(Agent::Opencode), true));
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
    // Still nothing: the model and the fields lean one way without
    // deciding. Anthropic requires `max_tokens`, OpenAI does not; a model
    // that is not Claude is sent in OpenAI's shape (gpt-*, o1-*, and
    // llama3-*, gemini-* and others behind OpenAI-compatible endpoints).
    let lean_openai = !(openai || anthropic || responses)
        && match doc {
            Value::Object(o) => leans_openai(
                o.get("model").and_then(Value::as_str),
                o.contains_key("max_tokens"),
            ),
            _ => false,
        };
    let system_role = items.iter().any(|item| {
        matches!(
            item.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    });
    Some(if responses {
        (Source::Provider(Format::Responses), true)
    } else if (openai || system_role || lean_openai) && !anthropic {
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
    // An array of request bodies or sessions, each with its `messages`: a
    // document of several conversations, read whole, not a line of one.
    if let Value::Array(items) = v
        && !items.is_empty()
        && items
            .iter()
            .all(|i| i.is_object() && crate::CONVERSATION_KEYS.iter().any(|k| i.get(k).is_some()))
    {
        return Evidence::Unknown;
    }
    let Value::Object(o) = v else {
        return match detect(v) {
            Some(s) => Evidence::Decisive(s),
            None => Evidence::Unknown,
        };
    };
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    if o.contains_key("payload") && codex::RECORD_TYPES.contains(&kind) {
        return Evidence::Decisive(Source::Agent(Agent::Codex));
    }
    if o.contains_key("$rewindTo") || o.contains_key("$set") {
        return Evidence::Decisive(Source::Agent(Agent::GeminiCli));
    }
    if o.contains_key("sessionId") && o.contains_key("projectHash") {
        return Evidence::Decisive(Source::Agent(Agent::GeminiCli));
    }
    if matches!(kind, "user" | "assistant") && o.contains_key("message") {
        return Evidence::Decisive(Source::Agent(Agent::ClaudeCode));
    }
    if copilot_cli::is_event(o) {
        return Evidence::Decisive(Source::Agent(Agent::CopilotCli));
    }
    if crate::kimi_code::is_record(o) {
        return Evidence::Decisive(Source::Agent(Agent::KimiCode));
    }
    if matches!(kind, "user" | "gemini" | "info" | "error" | "warning")
        && o.contains_key("id")
        && o.contains_key("content")
        && !o.contains_key("role")
    {
        return Evidence::Decisive(Source::Agent(Agent::GeminiCli));
    }
    if CLAUDE_CODE_BOOKKEEPING.contains(&kind)
        && (o.contains_key("uuid")
            || o.contains_key("sessionId")
            || o.contains_key("leafUuid")
            || o.contains_key("messageId")
            || o.contains_key("snapshot")
            || o.contains_key("operation"))
    {
        return Evidence::Suggests(Source::Agent(Agent::ClaudeCode));
    }
    if (o.contains_key("messages") || o.contains_key("input") || o.contains_key("contents"))
        && let Some(s) = detect(v)
    {
        return Evidence::Decisive(s);
    }
    Evidence::Unknown
}

/// The provider of a request: from its path, else from its body.
pub fn provider_of_request(path: &str, body: Option<&Value>) -> Option<Format> {
    loopdbg_formats::route::provider_of_path(path).or_else(|| match body.and_then(detect) {
        Some(Source::Provider(f)) => Some(f),
        _ => None,
    })
}

/// Whether a document is an OTLP export of traces (`resourceSpans`), or
/// of logs (`resourceLogs`: GenAI events, read as the spans they were
/// emitted in).
pub fn is_traces(doc: &Value) -> bool {
    ["resourceSpans", "resourceLogs"]
        .iter()
        .any(|key| doc.get(*key).is_some_and(Value::is_array))
}

/// A trace store's API answer unwrapped to the OTLP export it holds:
/// Grafana Tempo's `GET /api/traces/{id}` (`{"batches": [...]}`, older
/// versions with `instrumentationLibrarySpans`), its `/api/v2/traces/{id}`
/// (`{"trace": {...}}`) and Jaeger's API v3 (`{"result": {...}}`, as
/// grpc-gateway wraps a streamed answer). `None` for anything else.
pub fn wrapped_traces(doc: &Value) -> Option<Value> {
    let mut export = match doc {
        Value::Object(o) if o.len() == 1 => {
            let (key, inner) = o.iter().next()?;
            match key.as_str() {
                "batches" if inner.is_array() => json!({ "resourceSpans": inner }),
                "trace" | "result" if is_traces(inner) => inner.clone(),
                _ => return None,
            }
        }
        _ => return None,
    };
    // OTLP before 0.15 named a scope an instrumentation library.
    for resource in export["resourceSpans"].as_array_mut()? {
        let Some(r) = resource.as_object_mut() else {
            continue;
        };
        if let Some(spans) = r.remove("instrumentationLibrarySpans") {
            r.insert("scopeSpans".into(), spans);
        }
        for scope in r
            .get_mut("scopeSpans")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if let Some(library) = scope.remove("instrumentationLibrary") {
                scope.insert("scope".into(), library);
            }
        }
    }
    Some(export)
}

/// Whether `bytes` open as an OTLP protobuf export does: field 1
/// (`resource_spans`), length-delimited, and, since a text file may
/// start with a newline (0x0a) too, a control byte no text holds among
/// the first few (protobuf's small length prefixes are such bytes).
pub fn looks_like_protobuf(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(16)];
    bytes.first() == Some(&0x0a)
        && head
            .iter()
            .any(|&b| b < 0x09 || (0x0e..0x20).contains(&b) || b == 0x7f)
}

/// Whether a document is a loopdbg session (a stub scenario): known by
/// its own keys, a `user` prompt and a `model` object of behaviors.
pub fn is_session(doc: &Value) -> bool {
    doc.get("user").is_some() && doc.get("model").is_some_and(Value::is_object)
}

/// How many leading lines the detector may read before it gives up.
pub const SNIFF_LINES: usize = 256;

/// What one line told the detector.
#[derive(Debug, PartialEq)]
pub enum Sniffed {
    /// Nothing decided yet: give it the next line.
    More,
    /// A `loopdbg mcp` capture record: the input is an MCP capture.
    McpCapture,
    /// An OTLP export of traces: the input is a trace file.
    Traces,
    /// Not one JSON value per line: a document to read whole (pretty
    /// JSON, YAML, an httprr trace).
    Document,
}

/// The layout the first lines decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// JSON Lines, one conversation per line.
    Lines,
    /// An agent log: JSON Lines of events, read whole.
    Log(Source),
    /// A single JSON line: one document like any other.
    Document,
}

/// Why the first lines and a forced format disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffing {
    /// `--format` names one thing, the content says another.
    Mismatch {
        /// What was forced.
        forced: Source,
        /// What the content is.
        found: Source,
    },
    /// Nothing but blank lines.
    Empty,
}

/// The detector over an input's first lines: fed one line at a time
/// until it decides (or [`SNIFF_LINES`] have been read), then asked for
/// the layout. Pure; reading the lines is the caller's.
#[derive(Debug, Default)]
pub struct Sniffer {
    json_lines: usize,
    decided: Option<Source>,
    suggested: Option<Source>,
    first_is_capture: Option<bool>,
}

impl Sniffer {
    /// Takes one line (without its line end).
    pub fn feed(&mut self, line: &str) -> Sniffed {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Sniffed::More;
        }
        if self.json_lines == 0 && crate::foreign::is_goose_replay_line(line) {
            return Sniffed::McpCapture;
        }
        match crate::bounded::value(trimmed) {
            Ok(v) if crate::mcp::is_record(&v) => Sniffed::McpCapture,
            Ok(v) if is_traces(&v) => Sniffed::Traces,
            // A Gemini CLI stream-json transcript is read whole.
            Ok(v) if self.json_lines == 0 && crate::foreign::is_gemini_stream_json(&v) => {
                Sniffed::Document
            }
            Ok(v) => {
                self.json_lines += 1;
                let exchange = crate::capture::is_exchange(&v);
                self.first_is_capture.get_or_insert(exchange);
                let v = match exchange {
                    true => crate::capture::request_of(v),
                    false => v,
                };
                match classify_line(&v) {
                    Evidence::Decisive(s) => self.decided = Some(s),
                    Evidence::Suggests(s) => self.suggested = self.suggested.or(Some(s)),
                    Evidence::Unknown => {}
                }
                Sniffed::More
            }
            Err(_) if self.json_lines == 0 => Sniffed::Document,
            Err(_) => Sniffed::More,
        }
    }

    /// True once a line said for sure what wrote the input.
    pub fn is_decided(&self) -> bool {
        self.decided.is_some()
    }

    /// Whether the first JSON line is a proxy capture record.
    pub fn first_is_capture(&self) -> bool {
        self.first_is_capture == Some(true)
    }

    /// The layout, once the lines are read: `ended` when the input ended
    /// within them; `forced` is `--format`, when given.
    pub fn layout(&self, ended: bool, forced: Option<Source>) -> Result<Layout, Sniffing> {
        let log_forced = forced.filter(|f| f.is_log());
        let mismatch = |forced, found| Sniffing::Mismatch { forced, found };
        match (self.decided.or(self.suggested), log_forced) {
            (Some(s), Some(f)) if s.is_log() && s != f => Err(mismatch(f, s)),
            (Some(s), Some(f)) if !s.is_log() => Err(mismatch(f, s)),
            (_, Some(f)) => Ok(Layout::Log(f)),
            (Some(s), None) if s.is_log() => match forced {
                Some(f) => Err(mismatch(f, s)),
                None => Ok(Layout::Log(s)),
            },
            (_, None) if ended && self.json_lines == 1 => Ok(Layout::Document),
            (Some(_), None) => Ok(Layout::Lines),
            (None, None) if forced.is_some() || self.json_lines > 0 => Ok(Layout::Lines),
            (None, None) => Err(Sniffing::Empty),
        }
    }
}
