//! A fake provider on 127.0.0.1 for the proxy's end-to-end tests. It
//! speaks Anthropic Messages, OpenAI Chat Completions, Responses, Gemini
//! `generateContent` and Bedrock Converse, plain and streamed with the real
//! event shapes (Bedrock's in AWS's binary event stream framing), and it
//! enforces the pairing rules itself (written here from the providers'
//! documented behavior, not with loopdbg's checker), answering violations
//! with each provider's real error body: calls left without results and
//! results that answer no call (Anthropic's client and server tools,
//! Chat's tool messages, Responses' outputs, Gemini's response turns),
//! a request that ends on calls, and call ids off the provider's pattern.
//! [`refusal`] gives the same verdict without a server; tests/fake_agrees.rs
//! holds it equal to what `check` predicts on every request-body fixture.
//!
//! Its model is scripted: to a prompt it answers with the calls the prompt
//! asks for (`weather` → get_weather, `fx` → get_fx_rate); once every call
//! has its result it answers "北京 18°C, USD/CNY 7.12". A prompt with `break`
//! on its first line makes a streamed answer stop mid-stream with a broken
//! connection. The
//! header `x-fake-pace-ms: FIRST,EACH` paces a streamed answer as a model
//! writes it: the first event after FIRST ms, each next one EACH ms later.
//! A request carrying `x-load-sent-ns` (when the load generator sent it,
//! in nanoseconds of the system clock) is answered with
//! `x-fake-transit-us`: how long it took to arrive whole, in microseconds,
//! which through a gateway is what the gateway holds it (the gateway
//! bench; the clock is the machine's own on both ends).
#![allow(dead_code)]
#![forbid(unsafe_code)]
// A fake provider for tests: a panic on what it set up itself is a
// failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod bodies;

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

/// What the fake saw and sent.
#[derive(Default)]
pub struct Log {
    /// Every request body, in order.
    pub requests: Vec<Value>,
    /// The headers of every request.
    pub headers: Vec<HeaderMap>,
    /// The exact bytes of every request body.
    pub bodies: Vec<Vec<u8>>,
    /// The exact bytes of every answer body.
    pub answers: Vec<Vec<u8>>,
}

/// A running fake provider.
pub struct Fake {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// What it saw.
    pub log: Arc<Mutex<Log>>,
    /// A stream asked to break (`break` in the prompt) breaks when told.
    pub breaker: Arc<tokio::sync::Notify>,
}

#[derive(Clone)]
struct Shared {
    log: Arc<Mutex<Log>>,
    /// Whether `log` is written (a bench's thousands of requests would
    /// grow it, and the fake's every answer with it).
    logged: bool,
    breaker: Arc<tokio::sync::Notify>,
    /// Responses answers by id (`resp_fake_N`), as OpenAI stores them for
    /// the requests that continue them with `previous_response_id`.
    stored: Arc<Mutex<Vec<Value>>>,
    /// Requests served, logged or not: `GET /__fake/requests` tells a
    /// test in another process whether anything reached the fake.
    served: Arc<std::sync::atomic::AtomicU64>,
    /// The pace of streamed answers whose request names none.
    pace: Option<(u64, u64)>,
}

/// Starts the fake on the current runtime.
pub async fn start() -> Fake {
    start_with(true).await
}

/// Starts the fake with an empty log that stays empty, for benches.
#[allow(dead_code)]
pub async fn start_unlogged() -> Fake {
    start_with(false).await
}

async fn start_with(logged: bool) -> Fake {
    try_start_with(logged)
        .await
        .expect("the fake listens on 127.0.0.1")
}

/// Starts the fake with an empty log, or says why it could not listen:
/// `loopdbg demo` runs it, where a panic is not an answer.
pub async fn try_start_unlogged() -> std::io::Result<Fake> {
    try_start_with(false).await
}

/// Starts the fake with an empty log whose streamed answers are paced as
/// `x-fake-pace-ms: FIRST,EACH` would pace them, for requests that carry
/// no such header: a gateway under test (LiteLLM) does not pass the
/// agent's headers on.
pub async fn try_start_unlogged_paced(pace: (u64, u64)) -> std::io::Result<Fake> {
    try_start(false, Some(pace)).await
}

async fn try_start_with(logged: bool) -> std::io::Result<Fake> {
    try_start(logged, None).await
}

async fn try_start(logged: bool, pace: Option<(u64, u64)>) -> std::io::Result<Fake> {
    let log = Arc::new(Mutex::new(Log::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let breaker = Arc::new(tokio::sync::Notify::new());
    let app = axum::Router::new().fallback(handle).with_state(Shared {
        log: log.clone(),
        logged,
        breaker: breaker.clone(),
        stored: Arc::default(),
        served: Arc::default(),
        pace,
    });
    tokio::spawn(async move {
        // It serves until the runtime ends; an accept error ends it early.
        let _ = axum::serve(listener, app).await;
    });
    Ok(Fake { url, log, breaker })
}

const ANSWER: &str = "北京 18°C, USD/CNY 7.12";

/// The calls a prompt asks for: (name, arguments).
fn wanted(prompt: &str) -> Vec<(&'static str, Value)> {
    let mut calls = Vec::new();
    if prompt.contains("weather") {
        calls.push(("get_weather", json!({"city": "北京"})));
    }
    if prompt.contains("fx") {
        calls.push(("get_fx_rate", json!({"pair": "USD/CNY"})));
    }
    calls
}

/// A message id of its own for each answer: agents merge consecutive
/// assistant messages that share one (Claude Code rebuilt two turns as one
/// when every answer was `msg_fake`).
fn message_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!(
        "msg_fake_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn id_for(prefix: &str, name: &str) -> String {
    format!("{prefix}_{}1", &name[4..5])
}

/// Now, in nanoseconds since the Unix epoch (`x-load-sent-ns`).
pub fn unix_nanos() -> Option<u128> {
    let now = std::time::SystemTime::now();
    Some(now.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let log = shared.log;
    let path = request.uri().path().to_string();
    if path == "/__fake/requests" {
        let n = shared.served.load(std::sync::atomic::Ordering::SeqCst);
        return axum::response::IntoResponse::into_response(axum::Json(json!({"requests": n})));
    }
    shared
        .served
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let headers = request.headers().clone();
    let pace = headers
        .get("x-fake-pace-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(','))
        .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
        .or(shared.pace);
    let bytes = axum::body::to_bytes(request.into_body(), 64 << 20)
        .await
        .unwrap();
    let transit = headers
        .get("x-load-sent-ns")
        .and_then(|v| v.to_str().ok()?.parse::<u128>().ok())
        .and_then(|sent| Some((unix_nanos()?.checked_sub(sent)? / 1000).to_string()));
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if shared.logged {
        let mut l = log.lock().unwrap();
        l.requests.push(body.clone());
        l.headers.push(headers);
        l.bodies.push(bytes.to_vec());
    }
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false)
        || path.contains(":streamGenerateContent");
    if path.ends_with("/converse") || path.ends_with("/converse-stream") {
        let streamed = path.ends_with("/converse-stream");
        let (status, chunks) = bedrock(&body, streamed);
        if shared.logged {
            log.lock().unwrap().answers.push(chunks.concat());
        }
        let content_type = match (streamed, status) {
            (true, 200) => "application/vnd.amazon.eventstream",
            _ => "application/json",
        };
        let items: Vec<Result<Bytes, std::io::Error>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        let mut response = Response::new(Body::from_stream(futures::stream::iter(items)));
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
        let h = response.headers_mut();
        h.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
        if status == 400 {
            h.insert(
                "x-amzn-errortype",
                "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
                    .parse()
                    .unwrap(),
            );
        }
        h.insert("x-fake-provider", "yes".parse().unwrap());
        return response;
    }
    // Bedrock's InvokeModel with Claude: an Anthropic Messages body.
    let (status, chunks, broken): (u16, Vec<String>, bool) = if path.ends_with("/v1/messages")
        || (path.starts_with("/model/") && path.ends_with("/invoke"))
    {
        anthropic(&body, stream)
    } else if path.ends_with("/chat/completions") {
        openai(&body, stream)
    } else if path.ends_with("/responses") {
        responses(&body, stream, &shared.stored)
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        // `/v1beta/models/MODEL:generateContent`: Gemini's rules differ
        // by model family.
        let model = path
            .rsplit_once("models/")
            .map_or("", |(_, m)| m.split(':').next().unwrap_or(""));
        gemini(&body, stream, model)
    } else {
        (404, vec![json!({"error": "not found"}).to_string()], false)
    };
    if shared.logged {
        log.lock()
            .unwrap()
            .answers
            .push(chunks.concat().into_bytes());
    }
    let content_type = if stream && status == 200 {
        "text/event-stream"
    } else {
        "application/json"
    };
    let items: Vec<Result<Bytes, std::io::Error>> =
        chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
    use futures::StreamExt;
    let body = if let Some((first, each)) = pace.filter(|_| stream) {
        let paced = futures::stream::iter(items.into_iter().enumerate()).then(
            move |(k, item)| async move {
                let wait = if k == 0 { first } else { each };
                tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                item
            },
        );
        Body::from_stream(paced)
    } else if broken {
        // What was sent reaches the other side before the break.
        let breaker = shared.breaker.clone();
        let tail = futures::stream::once(async move {
            breaker.notified().await;
            Err(std::io::Error::other("the fake breaks the stream"))
        });
        Body::from_stream(futures::stream::iter(items).chain(tail))
    } else {
        Body::from_stream(futures::stream::iter(items))
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type.parse().unwrap());
    if let Some(us) = transit.and_then(|t| t.parse().ok()) {
        response.headers_mut().insert("x-fake-transit-us", us);
    }
    response
        .headers_mut()
        .insert("x-fake-provider", "yes".parse().unwrap());
    response
}

/// The user's prompt (the first user text) and whether every call made so
/// far has its result.
fn prompt_of(texts: impl Iterator<Item = String>) -> String {
    texts.take(1).collect()
}

/// Tokens, as the fake counts them: a quarter of the bytes (about what
/// the providers' tokenizers give for English and JSON). Deterministic,
/// so a test can add up what a log or capture should report.
pub fn tokens_in(value: &Value) -> u64 {
    (value.to_string().len() as u64).div_ceil(4)
}

/// The prompt tokens of an Anthropic request, split as Anthropic reports
/// them: the system prompt is read from the cache when the request marks
/// a `cache_control` breakpoint (Claude Code does), the rest at full rate.
fn anthropic_prompt_tokens(body: &Value) -> (u64, u64) {
    let all = tokens_in(body);
    let cached = match body.to_string().contains("cache_control") {
        true => tokens_in(&body["system"]).min(all),
        false => 0,
    };
    (all - cached, cached)
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

// ------------------------------------------------------------- Real agents

/// The words that turn on the scripted agent loop: a prompt holding them
/// is answered as a model driving a real agent (Claude Code, Codex, Gemini
/// CLI) through its own shell tool would answer it.
pub const E2E: &str = "loopdbg e2e";

/// The final text of the scripted agent loop: the outputs of the three
/// commands the agent ran, as the model read them back.
pub const E2E_ANSWER: &str = "loopdbg e2e: one two three";

/// The words that ask the scripted model to use loopdbg's MCP server: with
/// a tool named `…__check_request` among the request's tools (Claude Code
/// names an MCP tool `mcp__SERVER__TOOL`), it calls that tool on
/// [`mcp_checked_body`], then answers `loopdbg said: ` and the first line
/// of what the tool returned.
pub const MCP_CHECK: &str = "loopdbg mcp check";

/// The request body the scripted model asks loopdbg's MCP server about:
/// two parallel calls, one result.
pub fn mcp_checked_body() -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
        {"role": "user", "content": "weather and fx"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_weather", "name": "get_weather", "input": {}},
            {"type": "tool_use", "id": "toolu_fx", "name": "get_fx_rate", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_weather", "content": "18C"}]}]})
}

/// The scripted model's turn when a prompt asks [`MCP_CHECK`] and the
/// server's tool is offered: the call, or (its result back) the answer.
fn mcp_check_turn(messages: &[Value], tool: &str) -> (Vec<Value>, &'static str) {
    let result = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_mcp_check");
    match result {
        Some(result) => {
            let said = result_text(&result["content"]);
            let first = said.lines().next().unwrap_or_default();
            (
                vec![json!({"type": "text", "text": format!("loopdbg said: {first}")})],
                "end_turn",
            )
        }
        None => (
            vec![
                json!({"type": "tool_use", "id": "toolu_mcp_check", "name": tool,
                "input": {"body": mcp_checked_body()}}),
            ],
            "tool_use",
        ),
    }
}

/// One turn of the scripted agent loop, from the tool results the
/// conversation holds so far: a shell call (`echo loopdbg-one`), then two
/// in parallel (`two`, `three`), then the answer naming what the commands
/// printed, in the order the results came.
enum AgentTurn {
    /// Shell commands to run, with the call ids to give them.
    Calls(Vec<(String, String)>),
    /// The answer.
    Answer(String),
}

/// With `break` after the words, the model's first call carries an id
/// the provider refuses (`toolu_e2e.1`): the agent runs it, and the
/// request that sends its result back gets the provider's 400.
pub const E2E_BREAK: &str = "loopdbg e2e break";

/// With `stall FIFO` after the words, the second turn's second call
/// writes a line to the named FIFO, then reads `FIFO.hold` until no one
/// holds it open: a test reads the line, knows the tool is running, kills
/// the agent there, and lets the command end by closing `FIFO.hold`.
pub const E2E_STALL: &str = "loopdbg e2e stall";

/// Which scripted loop a prompt asks for.
#[derive(Debug, Clone, PartialEq)]
enum Script {
    Plain,
    Break,
    /// The FIFO the stalling call writes to.
    Stall(String),
}

fn agent_turn(results: &[String], script: &Script) -> AgentTurn {
    match results.len() {
        0 if *script == Script::Break => {
            AgentTurn::Calls(vec![("e2e.1".into(), "echo loopdbg-one".into())])
        }
        0 => AgentTurn::Calls(vec![("e2e_1".into(), "echo loopdbg-one".into())]),
        1 => {
            let third = match script {
                Script::Stall(fifo) => {
                    format!("echo loopdbg-stalled > {fifo}; cat {fifo}.hold > /dev/null")
                }
                _ => "echo loopdbg-three".into(),
            };
            AgentTurn::Calls(vec![
                ("e2e_2".into(), "echo loopdbg-two".into()),
                ("e2e_3".into(), third),
            ])
        }
        _ => {
            // In the order the commands were given: an agent may list
            // parallel results in the order they finished.
            let said: Vec<&str> = ["one", "two", "three"]
                .into_iter()
                .filter(|w| results.iter().any(|r| r.contains(&format!("loopdbg-{w}"))))
                .collect();
            AgentTurn::Answer(format!("loopdbg e2e: {}", said.join(" ")))
        }
    }
}

/// Which scripted loop the user texts of `texts` ask for, if any.
/// A stalling script stalls only while its prompt is the newest: a
/// session resumed with another prompt runs the plain script.
fn asks_e2e<'a>(texts: impl Iterator<Item = &'a str>) -> Option<Script> {
    let mut asked = None;
    let mut newest_stalls = false;
    for t in texts {
        if t.contains(E2E_BREAK) {
            return Some(Script::Break);
        }
        newest_stalls = false;
        if let Some(rest) = t.split(E2E_STALL).nth(1) {
            let fifo = rest.split_whitespace().next().unwrap_or_default();
            let fifo = fifo.trim_end_matches([':', ',', '.']);
            asked = Some(Script::Stall(fifo.to_string()));
            newest_stalls = true;
        } else if t.contains(E2E) {
            asked = Some(Script::Plain);
        }
    }
    match asked {
        Some(Script::Stall(_)) if !newest_stalls => Some(Script::Plain),
        other => other,
    }
}

/// A tool result's content as text, however the agent wrote it.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i["text"]
                    .as_str()
                    .map_or_else(|| i.to_string(), str::to_string)
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// The smallest value a JSON Schema (Gemini's spelling, `OBJECT`, or the
/// standard one) accepts: required properties filled, strings "fake".
fn value_for(schema: &Value) -> Value {
    match schema["type"]
        .as_str()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("object") => {
            let mut out = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = name.as_str() {
                    out.insert(name.into(), value_for(&schema["properties"][name]));
                }
            }
            Value::Object(out)
        }
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("string") => json!(schema["enum"].get(0).cloned().unwrap_or(json!("fake"))),
        _ => Value::Null,
    }
}

// ---------------------------------------------------------------- Anthropic

/// What the fake refuses `body` with, sent as `format` (`anthropic`,
/// `openai`, `responses`, `gemini`, `bedrock`): the provider's error body,
/// or `None` when it would answer. A Responses body that continues a
/// stored response is judged on its own input. What `check` predicts is
/// compared with this on every fixture (tests/fake_agrees.rs).
pub fn refusal(format: &str, body: &Value) -> Option<String> {
    let list = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    match format {
        "anthropic" => anthropic_refusal(&list("messages"))
            .or_else(|| cache_limit_refusal(body))
            .or_else(|| anthropic_blank_refusal(&list("messages")).map(anthropic_error))
            .map(|(_, b, _)| b.concat()),
        "openai" => openai_refusal(&list("messages")).map(|b| b.to_string()),
        "responses" => {
            let input = match &body["input"] {
                Value::Array(a) => a.clone(),
                _ => Vec::new(),
            };
            let (calls, outputs, references) = responses_pairs(&input);
            let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
            let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
            responses_refusal(&calls, &outputs, references)
                .or_else(|| reasoning_refusal(&input))
                .map(|b| b.to_string())
        }
        "gemini" => {
            gemini_refusal(&list("contents"), body["model"].as_str()).map(|b| b.to_string())
        }
        "bedrock" => {
            bedrock_refusal(&list("messages")).or_else(|| bedrock_blank_refusal(&list("messages")))
        }
        _ => None,
    }
}

fn anthropic_error(message: String) -> (u16, Vec<String>, bool) {
    let body =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
    (400, vec![body.to_string()], false)
}

/// Anthropic's 400 for more than four `cache_control` blocks (tools,
/// system and content blocks count alike). Counted here apart from the
/// reader's count on purpose: the fake answers as the provider does, and
/// tests/fake_agrees.rs compares it with what `check` predicts.
fn cache_limit_refusal(body: &Value) -> Option<(u16, Vec<String>, bool)> {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| usize::from(k == "cache_control" && !v.is_null()) + count(v))
                .sum(),
            Value::Array(a) => a.iter().map(count).sum(),
            _ => 0,
        }
    }
    let found = count(body);
    (found > 4).then(|| {
        anthropic_error(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {found}."
        ))
    })
}

/// Anthropic's 400 for a message without content (but the final
/// assistant message, a prefill) or a text block empty or of whitespace.
fn anthropic_blank_refusal(messages: &[Value]) -> Option<String> {
    for (i, m) in messages.iter().enumerate() {
        let prefill = i + 1 == messages.len() && m["role"] == "assistant";
        let nothing = match &m["content"] {
            Value::String(text) => text.is_empty(),
            Value::Array(blocks) => blocks.is_empty(),
            _ => false,
        };
        if nothing && !prefill {
            return Some(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
        let texts = match &m["content"] {
            Value::String(text) => vec![text.as_str()],
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| b["text"].as_str().unwrap_or(""))
                .collect(),
            _ => Vec::new(),
        };
        for text in texts {
            if text.is_empty() && !nothing {
                return Some("messages: text content blocks must be non-empty".into());
            }
            if !text.is_empty() && text.trim().is_empty() {
                return Some(
                    "messages: text content blocks must contain non-whitespace text".into(),
                );
            }
        }
    }
    None
}

/// Bedrock's `ValidationException` for a message without content or a
/// text block that is blank.
fn bedrock_blank_refusal(messages: &[Value]) -> Option<String> {
    for (i, m) in messages.iter().enumerate() {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        if blocks.is_empty() {
            return Some(format!(
                "The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the content field and try again."
            ));
        }
        for (k, b) in blocks.iter().enumerate() {
            if b["text"].as_str().is_some_and(|t| t.trim().is_empty()) {
                return Some(format!(
                    "The text field in the ContentBlock object at messages.{i}.content.{k} is blank. Add text to the text field, and try again."
                ));
            }
        }
    }
    None
}

/// The 400 Anthropic answers a history with: a call id off its pattern, or
/// a `tool_use` not answered in the very next message.
fn anthropic_refusal(messages: &[Value]) -> Option<(u16, Vec<String>, bool)> {
    // Call ids must match Anthropic's pattern.
    for (i, m) in messages.iter().enumerate() {
        for (k, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let id = b["id"].as_str().unwrap_or("");
            let valid = !id.is_empty()
                && id
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
            if b["type"] == "tool_use" && !valid {
                return Some(anthropic_error(format!(
                    "messages.{i}.content.{k}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                )));
            }
        }
    }
    // Every tool_use must be answered by a tool_result in the very next message.
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let ids: Vec<&str> = m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        let next = messages.get(i + 1);
        let answered: Vec<&str> = next
            .and_then(|n| n["content"].as_array())
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str())
            .collect();
        let missing: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !answered.contains(id))
            .collect();
        // A request that ends on calls is refused too: it names the
        // calls' own message (the results would have to follow it).
        if !missing.is_empty() {
            let at = if next.is_some() { i + 1 } else { i };
            return Some(anthropic_error(format!(
                "messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                missing.join(", ")
            )));
        }
    }
    // A server tool's result block (`web_search_tool_result`,
    // `advisor_tool_result`, `mcp_tool_result`, …) answers a call the
    // server ran earlier in the request: compaction that keeps the result
    // and drops its call is refused (claude-code#56515).
    let mut server_calls: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        for (k, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let kind = b["type"].as_str().unwrap_or("");
            if matches!(kind, "server_tool_use" | "mcp_tool_use") {
                server_calls.extend(b["id"].as_str());
            } else if kind.ends_with("_tool_result") && kind != "tool_result" {
                let id = b["tool_use_id"].as_str().unwrap_or("");
                if !server_calls.contains(&id) {
                    let call = match kind {
                        "mcp_tool_result" => "mcp_tool_use",
                        _ => "server_tool_use",
                    };
                    return Some(anthropic_error(format!(
                        "messages.{i}.content.{k}: unexpected `tool_use_id` found in `{kind}` blocks: {id}. Each `{kind}` block must have a corresponding `{call}` block before it."
                    )));
                }
            }
        }
    }
    // Every tool_result must answer a tool_use of the message before it.
    for (i, m) in messages.iter().enumerate() {
        let asked: Vec<&str> = i
            .checked_sub(1)
            .and_then(|p| messages[p]["content"].as_array())
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        for (k, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let Some(id) = b["tool_use_id"]
                .as_str()
                .filter(|_| b["type"] == "tool_result")
            else {
                continue;
            };
            if !asked.contains(&id) {
                return Some(anthropic_error(format!(
                    "messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                )));
            }
        }
    }
    None
}

fn anthropic(body: &Value, stream: bool) -> (u16, Vec<String>, bool) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(refused) = anthropic_refusal(&messages).or_else(|| cache_limit_refusal(body)) {
        return refused;
    }
    let prompt = prompt_of(
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| {
                m["content"].as_str().map(str::to_string).or_else(|| {
                    m["content"]
                        .as_array()?
                        .iter()
                        .find_map(|b| b["text"].as_str().map(str::to_string))
                })
            }),
    );
    let last_has_results = messages.last().is_some_and(|m| {
        m["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    });
    let blocks = || {
        messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
    };
    let user_texts = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| {
            m["content"].as_str().into_iter().chain(
                m["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str()),
            )
        });
    // Claude Code's shell tool is `Bash`, opencode's `bash`.
    let shell = body["tools"].as_array().and_then(|tools| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|name| matches!(*name, "Bash" | "bash"))
    });
    let mcp_check = body["tools"].as_array().and_then(|tools| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|name| name.ends_with("__check_request"))
    });
    // Claude Code may put its reminders before the prompt: any user text.
    let asks_mcp = messages.iter().filter(|m| m["role"] == "user").any(|m| {
        m["content"].as_str().is_some_and(|t| t.contains(MCP_CHECK))
            || m["content"].as_array().is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b["text"].as_str().is_some_and(|t| t.contains(MCP_CHECK)))
            })
    });
    let (content, stop) = if let Some(tool) = mcp_check.filter(|_| asks_mcp) {
        mcp_check_turn(&messages, tool)
    } else if let Some((script, shell)) =
        asks_e2e(user_texts).and_then(|script| Some((script, shell?)))
    {
        let results: Vec<String> = blocks()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| result_text(&b["content"]))
            .collect();
        match agent_turn(&results, &script) {
            AgentTurn::Calls(calls) => (
                calls
                    .into_iter()
                    .map(|(id, command)| json!({"type": "tool_use", "id": format!("toolu_{id}"), "name": shell,
                        "input": {"command": command, "description": "Print a word for the loopdbg e2e test"}}))
                    .collect(),
                "tool_use",
            ),
            AgentTurn::Answer(text) => (vec![json!({"type": "text", "text": text})], "end_turn"),
        }
    } else if last_has_results || wanted(&prompt).is_empty() {
        (vec![json!({"type": "text", "text": ANSWER})], "end_turn")
    } else {
        let calls = wanted(&prompt)
            .into_iter()
            .map(|(name, args)| json!({"type": "tool_use", "id": id_for("toolu", name), "name": name, "input": args}))
            .collect();
        (calls, "tool_use")
    };
    let id = message_id();
    let model = body["model"].as_str().unwrap_or("fake");
    let (input, cached) = anthropic_prompt_tokens(body);
    let output = tokens_in(&Value::from(content.clone()));
    let message = json!({"id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0, "output_tokens": output}});
    if !stream {
        return (200, vec![message.to_string()], false);
    }
    let mut chunks = vec![sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
    )];
    for (i, block) in message["content"].as_array().unwrap().iter().enumerate() {
        if block["type"] == "text" {
            chunks.push(sse(Some("content_block_start"), &json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})));
            let text = block["text"].as_str().unwrap();
            let cut = text.char_indices().nth(3).map_or(text.len(), |(b, _)| b);
            for piece in [&text[..cut], &text[cut..]] {
                chunks.push(sse(Some("content_block_delta"), &json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}})));
            }
        } else {
            chunks.push(sse(Some("content_block_start"), &json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
            let args = block["input"].to_string();
            let (a, b) = args.split_at(args.len() / 2);
            for piece in [a, b] {
                chunks.push(sse(Some("content_block_delta"), &json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}})));
            }
        }
        chunks.push(sse(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": i}),
        ));
    }
    chunks.push(sse(Some("message_delta"), &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})));
    chunks.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    // Asked on the prompt's first line: a compaction's summary, which
    // begins the conversation after it, may say "break" further down.
    if prompt.lines().next().is_some_and(|l| l.contains("break")) {
        chunks.truncate(3);
        return (200, chunks, true);
    }
    (200, chunks, false)
}

// ------------------------------------------------------------- OpenAI Chat

fn openai(body: &Value, stream: bool) -> (u16, Vec<String>, bool) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(body) = openai_refusal(&messages) {
        return (400, vec![body.to_string()], false);
    }
    openai_answer(body, &messages, stream)
}

/// Chat Completions' 400 for a history: calls not answered by the tool
/// messages right after them, or a tool message that answers no call.
fn openai_refusal(messages: &[Value]) -> Option<Value> {
    let mut asked: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "tool" {
            // A null id is paired by position (accepted); a named one must
            // answer a call of the message before the run.
            let Some(id) = m["tool_call_id"].as_str() else {
                // Paired by position: it answers the first call not
                // answered yet.
                if !asked.is_empty() {
                    asked.remove(0);
                }
                continue;
            };
            if let Some(at) = asked.iter().position(|a| *a == id) {
                asked.remove(at);
            } else {
                return Some(json!({"error": {
                    "message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    "type": "invalid_request_error", "param": format!("messages.[{i}].role"), "code": null}}));
            }
            continue;
        }
        asked.clear();
        let ids: Vec<&str> = m["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["id"].as_str())
            .collect();
        asked.extend(&ids);
        if ids.is_empty() {
            continue;
        }
        let answered: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        let by_position = messages[i + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter(|n| n["tool_call_id"].is_null())
            .count();
        let missing: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !answered.contains(id))
            .skip(by_position)
            .collect();
        if !missing.is_empty() {
            return Some(json!({"error": {
                "message": format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", missing.join(", ")),
                "type": "invalid_request_error", "param": format!("messages.[{}].role", i + 1), "code": null}}));
        }
    }
    None
}

/// The scripted model's Chat Completions answer.
fn openai_answer(body: &Value, messages: &[Value], stream: bool) -> (u16, Vec<String>, bool) {
    let prompt = prompt_of(
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str().map(str::to_string)),
    );
    let answered = messages.last().is_some_and(|m| m["role"] == "tool");
    let calls: Vec<Value> = if answered {
        Vec::new()
    } else {
        wanted(&prompt)
            .into_iter()
            .map(|(name, args)| {
                json!({"id": id_for("call", name), "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect()
    };
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let message = if calls.is_empty() {
        json!({"role": "assistant", "content": ANSWER, "refusal": null})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null})
    };
    if !stream {
        let body = json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens_in(body), "completion_tokens": tokens_in(&message),
                "total_tokens": tokens_in(body) + tokens_in(&message)}});
        return (200, vec![body.to_string()], false);
    }
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": if calls.is_empty() { json!("") } else { Value::Null }}),
        Value::Null,
    )];
    if calls.is_empty() {
        for piece in [&ANSWER[..6], &ANSWER[6..]] {
            chunks.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (i, c) in calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
            "function": {"name": c["function"]["name"], "arguments": ""}}]}),
            Value::Null,
        ));
        chunks.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": c["function"]["arguments"]}}]}), Value::Null));
    }
    chunks.push(chunk(json!({}), json!(finish)));
    // As OpenAI: usage comes in a last chunk with no choices, when asked.
    if body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)) {
        chunks.push(sse(
            None,
            &json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [], "usage": {"prompt_tokens": tokens_in(body), "completion_tokens": tokens_in(&message),
                "total_tokens": tokens_in(body) + tokens_in(&message)}}),
        ));
    }
    chunks.push("data: [DONE]\n\n".into());
    (200, chunks, false)
}

// --------------------------------------------------------------- Responses

/// The calls the client runs in a Responses input, the outputs in it, and
/// whether it refers to stored items by id alone (`{"id": "fc_1"}`), whose
/// calls the request does not show: each client-run call item
/// (`function_call`, `custom_tool_call`, `local_shell_call`, `shell_call`,
/// `apply_patch_call`, `computer_call`; a `tool_search_call` whose
/// `execution` is `client` takes one) waits for an output item naming its `call_id`
/// (any `*_output` item: OpenAI takes a `function_call_output` for a shell
/// call too); a call the server ran waits for nothing.
fn responses_pairs(input: &[Value]) -> (Vec<String>, Vec<String>, bool) {
    const CLIENT_CALLS: [&str; 6] = [
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
    ];
    let mut calls = Vec::new();
    let mut outputs = Vec::new();
    let mut references = false;
    for item in input {
        let kind = item["type"].as_str().unwrap_or("");
        let client = item["execution"] != "server";
        let call_id = item["call_id"].as_str().map(str::to_string);
        if item.get("type").is_none() && item.get("role").is_none() && item.get("id").is_some()
            || kind == "item_reference"
        {
            references = true;
        } else if CLIENT_CALLS.contains(&kind) {
            calls.extend(call_id);
        } else if kind == "tool_search_call" && client {
            // A client tool search takes an output; one left open is not in
            // any recording read so far, so it is not refused here.
            outputs.extend(call_id.clone());
            calls.extend(call_id);
        } else if kind.ends_with("_output") && client {
            // The older `local_shell_call_output` names its call by `id`.
            outputs.extend(call_id.or_else(|| item["id"].as_str().map(str::to_string)));
        }
    }
    (calls, outputs, references)
}

/// Responses' 400 for a `reasoning` item not followed by the assistant's
/// message or call it came with ("Item 'rs_…' of type 'reasoning' was
/// provided without its required following item.", as public reports
/// quote it: continuedev/continue#8933, openai-agents-python#1611).
fn reasoning_refusal(input: &[Value]) -> Option<Value> {
    let follows = |item: Option<&Value>| {
        item.is_some_and(|i| {
            let kind = i["type"].as_str().unwrap_or("message");
            kind.ends_with("_call") || (kind == "message" && i["role"] == "assistant")
        })
    };
    let (_, orphan) = input
        .iter()
        .enumerate()
        .find(|(k, i)| i["type"] == "reasoning" && !follows(input.get(k + 1)))?;
    let id = orphan["id"].as_str().unwrap_or("?");
    Some(json!({"error": {
        "message": format!("Item '{id}' of type 'reasoning' was provided without its required following item."),
        "type": "invalid_request_error", "param": "input", "code": null}}))
}

/// Responses' 400 for an input (with what a continued response stored
/// before it): a call with no output, or an output for no call (unless the
/// input refers to stored items, whose calls it does not show).
fn responses_refusal(calls: &[&str], outputs: &[&str], references: bool) -> Option<Value> {
    if let Some(missing) = calls.iter().find(|c| !outputs.contains(c)) {
        return Some(
            json!({"error": {"message": format!("No tool output found for function call {missing}."),
            "type": "invalid_request_error", "param": "input", "code": null}}),
        );
    }
    if let Some(orphan) = outputs.iter().find(|o| !calls.contains(o) && !references) {
        return Some(
            json!({"error": {"message": format!("No tool call found for function call output with call_id {orphan}."),
            "type": "invalid_request_error", "param": "input", "code": null}}),
        );
    }
    None
}

fn responses(body: &Value, stream: bool, stored: &Mutex<Vec<Value>>) -> (u16, Vec<String>, bool) {
    let mut input: Vec<Value> = match &body["input"] {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    };
    // A continued response: what it stored comes first (its calls must
    // be answered in this request's input), as on OpenAI's side.
    if let Some(previous) = body["previous_response_id"].as_str() {
        let before = stored
            .lock()
            .unwrap()
            .iter()
            .find(|r| r["id"] == previous)
            .cloned();
        let Some(before) = before else {
            let body = json!({"error": {"message": format!("Previous response with id '{previous}' not found."),
                "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}});
            return (400, vec![body.to_string()], false);
        };
        let mut all = before["input"].as_array().cloned().unwrap_or_default();
        all.extend(before["output"].as_array().cloned().unwrap_or_default());
        all.append(&mut input);
        input = all;
    }
    let (calls, outputs, references) = responses_pairs(&input);
    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    if let Some(body) =
        responses_refusal(&calls, &outputs, references).or_else(|| reasoning_refusal(&input))
    {
        return (400, vec![body.to_string()], false);
    }
    let prompt = prompt_of(
        input
            .iter()
            .filter(|i| i["role"] == "user")
            .filter_map(|i| i["content"].as_str().map(str::to_string)),
    );
    let user_texts = input.iter().filter(|i| i["role"] == "user").flat_map(|i| {
        i["content"].as_str().into_iter().chain(
            i["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str()),
        )
    });
    let has_exec = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"));
    let output: Vec<Value> = if let Some(script) = asks_e2e(user_texts).filter(|_| has_exec) {
        let results: Vec<String> = input
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| result_text(&i["output"]))
            .collect();
        match agent_turn(&results, &script) {
            AgentTurn::Calls(calls) => calls
                .into_iter()
                .map(|(id, command)| {
                    json!({"type": "function_call", "id": format!("fc_{id}"),
                    "call_id": format!("call_{id}"), "name": "exec_command",
                    "arguments": json!({"cmd": command}).to_string(), "status": "completed"})
                })
                .collect(),
            AgentTurn::Answer(text) => vec![
                json!({"type": "message", "id": message_id(), "role": "assistant",
                "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            ],
        }
    } else if outputs.is_empty() && !wanted(&prompt).is_empty() {
        wanted(&prompt)
            .into_iter()
            .map(|(name, args)| json!({"type": "function_call", "id": format!("fc_{name}"),
                "call_id": id_for("call", name), "name": name, "arguments": args.to_string(), "status": "completed"}))
            .collect()
    } else {
        vec![
            json!({"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}),
        ]
    };
    let response = {
        let mut stored = stored.lock().unwrap();
        let id = format!("resp_fake_{}", stored.len() + 1);
        let usage = json!({"input_tokens": tokens_in(body), "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": tokens_in(&Value::from(output.clone())), "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens_in(body) + tokens_in(&Value::from(output.clone()))});
        let model = body["model"].as_str().unwrap_or("fake");
        let response = json!({"id": id, "object": "response", "status": "completed", "model": model,
            "output": output, "usage": usage});
        stored.push(json!({"id": id, "input": input, "output": response["output"]}));
        response
    };
    if !stream {
        return (200, vec![response.to_string()], false);
    }
    let mut chunks = vec![sse(
        Some("response.created"),
        &json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": response["id"], "object": "response", "status": "in_progress", "output": []}}),
    )];
    for (i, item) in response["output"].as_array().unwrap().iter().enumerate() {
        chunks.push(sse(
            Some("response.output_item.done"),
            &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
        ));
    }
    chunks.push(sse(
        Some("response.completed"),
        &json!({"type": "response.completed", "response": response}),
    ));
    (200, chunks, false)
}

// ------------------------------------------------------------------ Gemini

fn gemini(body: &Value, stream: bool, model: &str) -> (u16, Vec<String>, bool) {
    let contents = body["contents"].as_array().cloned().unwrap_or_default();
    if let Some(body) = gemini_refusal(&contents, Some(model)) {
        return (400, vec![body.to_string()], false);
    }
    gemini_answer(body, &contents, stream)
}

/// Gemini's 400 for a history: a function response turn that does not
/// follow a function call turn; a function call turn not answered by as
/// many responses in the turn after it (or ending the request). Calls
/// answered in plain text are taken by Gemini 1.5 and 2.5 (recordings show
/// 200) and refused by Gemini 3.
fn gemini_refusal(contents: &[Value], model: Option<&str>) -> Option<Value> {
    // Only `user` and `model` (and the older `function`) are roles.
    let valid = |role: &Value| {
        role.is_null()
            || ["user", "model", "function", "tool"]
                .iter()
                .any(|r| role == r)
    };
    if contents.iter().any(|c| !valid(&c["role"])) {
        return Some(
            json!({"error": {"code": 400, "message": "Please use a valid role: user, model.", "status": "INVALID_ARGUMENT"}}),
        );
    }
    let count = |c: &Value, key: &str| {
        c["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p.get(key).is_some())
            .count()
    };
    for (i, c) in contents.iter().enumerate() {
        if count(c, "functionResponse") == 0 {
            continue;
        }
        // The first of a run of response turns follows the call turn.
        let before = contents[..i]
            .iter()
            .rev()
            .find(|p| p["role"] == "model" || count(p, "functionResponse") == 0);
        if before.is_none_or(|p| count(p, "functionCall") == 0) {
            return Some(
                json!({"error": {"code": 400, "message": "Please ensure that function response turn comes immediately after a function call turn.", "status": "INVALID_ARGUMENT"}}),
            );
        }
    }
    let strict = model.is_some_and(|m| m.contains("gemini-3"));
    for (i, c) in contents.iter().enumerate() {
        let calls = c["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p.get("functionCall").is_some())
            .count();
        if calls == 0 {
            continue;
        }
        // Consecutive function response turns are one to Gemini (three
        // parallel calls answered in three turns were answered 200).
        let responses = |n: &Value| {
            n["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p.get("functionResponse").is_some())
                .count()
        };
        let answers: usize = contents[i + 1..]
            .iter()
            .take_while(|n| n["role"] != "model" && responses(n) > 0)
            .map(responses)
            .sum();
        let in_text = answers == 0 && contents.get(i + 1).is_some_and(|n| n["role"] != "model");
        if answers != calls && (strict || !in_text) {
            return Some(
                json!({"error": {"code": 400, "message": "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.", "status": "INVALID_ARGUMENT"}}),
            );
        }
    }
    None
}

/// The scripted model's Gemini answer.
fn gemini_answer(body: &Value, contents: &[Value], stream: bool) -> (u16, Vec<String>, bool) {
    let prompt = prompt_of(
        contents
            .iter()
            .filter(|c| c["role"] == "user")
            .filter_map(|c| c["parts"][0]["text"].as_str().map(str::to_string)),
    );
    let answered = contents.last().is_some_and(|c| {
        c["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()))
    });
    let parts_of = || {
        contents
            .iter()
            .filter_map(|c| c["parts"].as_array())
            .flatten()
    };
    let user_texts = contents
        .iter()
        .filter(|c| c["role"] == "user")
        .filter_map(|c| c["parts"].as_array())
        .flatten()
        .filter_map(|p| p["text"].as_str());
    let has_shell = body["tools"].as_array().is_some_and(|groups| {
        groups.iter().any(|g| {
            g["functionDeclarations"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["name"] == "run_shell_command"))
        })
    });
    let json_schema = (body["generationConfig"]["responseMimeType"] == "application/json")
        .then(|| &body["generationConfig"]["responseJsonSchema"]);
    let parts: Vec<Value> = if let Some(schema) = json_schema {
        // A structured answer (Gemini CLI's model router asks for one):
        // the smallest value of the schema, as JSON text.
        vec![json!({"text": value_for(schema).to_string()})]
    } else if let Some(script) = asks_e2e(user_texts).filter(|_| has_shell) {
        let results: Vec<String> = parts_of()
            .filter_map(|p| p.get("functionResponse"))
            .map(|r| result_text(&r["response"]))
            .collect();
        match agent_turn(&results, &script) {
            AgentTurn::Calls(calls) => calls
                .into_iter()
                .map(|(id, command)| json!({"functionCall": {"id": id, "name": "run_shell_command",
                    "args": {"command": command, "description": "Print a word for the loopdbg e2e test"}}}))
                .collect(),
            AgentTurn::Answer(text) => vec![json!({"text": text})],
        }
    } else if answered || wanted(&prompt).is_empty() {
        vec![json!({"text": ANSWER})]
    } else {
        wanted(&prompt)
            .into_iter()
            .map(|(name, args)| json!({"functionCall": {"name": name, "args": args}}))
            .collect()
    };
    let response = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": tokens_in(body), "candidatesTokenCount": tokens_in(&Value::from(parts.clone())),
            "totalTokenCount": tokens_in(body) + tokens_in(&Value::from(parts.clone()))}});
    if !stream {
        return (200, vec![response.to_string()], false);
    }
    (200, vec![sse(None, &response)], false)
}

// ------------------------------------------------------------ Bedrock Converse

/// One AWS event stream frame: an event of `kind` carrying `payload`.
fn frame(kind: &str, payload: &Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(kind.to_string().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ));
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap();
    out
}

/// Bedrock's own pairing check (its `ValidationException` texts, as
/// public reports quote them), then the scripted model.
fn bedrock_refusal(messages: &[Value]) -> Option<String> {
    for (i, m) in messages.iter().enumerate() {
        for (k, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            let Some(id) = b["toolUse"]["toolUseId"].as_str() else {
                continue;
            };
            let valid = !id.is_empty()
                && id
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
            if !valid {
                return Some(format!(
                    "1 validation error detected: Value '{id}' at 'messages.{i}.content.{k}.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"
                ));
            }
        }
    }
    let ids = |m: &Value, kind: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b[kind]["toolUseId"].as_str().map(str::to_string))
            .collect()
    };
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "user" {
            continue;
        }
        let asked = match i.checked_sub(1).map(|p| &messages[p]) {
            Some(p) if p["role"] == "assistant" => ids(p, "toolUse"),
            _ => Vec::new(),
        };
        let results = ids(m, "toolResult");
        if results.len() > asked.len() {
            return Some(format!(
                "The number of toolResult blocks at messages.{i}.content exceeds the number of toolUse blocks of previous turn."
            ));
        }
        let missing: Vec<&String> = asked.iter().filter(|id| !results.contains(id)).collect();
        if !missing.is_empty() {
            let list: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            return Some(format!(
                "Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                list.join(", ")
            ));
        }
    }
    None
}

fn bedrock(body: &Value, stream: bool) -> (u16, Vec<Vec<u8>>) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(message) = bedrock_refusal(&messages) {
        return (
            400,
            vec![json!({"message": message}).to_string().into_bytes()],
        );
    }
    let prompt = prompt_of(
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"][0]["text"].as_str().map(str::to_string)),
    );
    let answered = messages.last().is_some_and(|m| {
        m["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b.get("toolResult").is_some()))
    });
    let (content, stop): (Vec<Value>, &str) = if answered || wanted(&prompt).is_empty() {
        (vec![json!({"text": ANSWER})], "end_turn")
    } else {
        let calls = wanted(&prompt)
            .into_iter()
            .map(|(name, input)| {
                json!({"toolUse": {"toolUseId": id_for("tooluse", name), "name": name, "input": input}})
            })
            .collect();
        (calls, "tool_use")
    };
    let usage = json!({"inputTokens": tokens_in(body), "outputTokens": tokens_in(&Value::from(content.clone())),
        "totalTokens": tokens_in(body) + tokens_in(&Value::from(content.clone()))});
    if !stream {
        let response = json!({"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop, "usage": usage, "metrics": {"latencyMs": 1}});
        return (200, vec![response.to_string().into_bytes()]);
    }
    let mut frames = vec![frame("messageStart", &json!({"role": "assistant"}))];
    for (i, block) in content.iter().enumerate() {
        if let Some(call) = block.get("toolUse") {
            frames.push(frame(
                "contentBlockStart",
                &json!({"contentBlockIndex": i,
                "start": {"toolUse": {"toolUseId": call["toolUseId"], "name": call["name"]}}}),
            ));
            // The input arrives in pieces, as the model writes it.
            let input = call["input"].to_string();
            let (head, tail) = input.split_at(input.len() / 2);
            for piece in [head, tail] {
                frames.push(frame(
                    "contentBlockDelta",
                    &json!({"contentBlockIndex": i,
                    "delta": {"toolUse": {"input": piece}}}),
                ));
            }
        } else {
            let text = block["text"].as_str().unwrap_or("");
            let cut = text.char_indices().nth(2).map_or(text.len(), |(k, _)| k);
            for piece in [&text[..cut], &text[cut..]] {
                frames.push(frame(
                    "contentBlockDelta",
                    &json!({"contentBlockIndex": i,
                    "delta": {"text": piece}}),
                ));
            }
        }
        frames.push(frame("contentBlockStop", &json!({"contentBlockIndex": i})));
    }
    frames.push(frame("messageStop", &json!({"stopReason": stop})));
    frames.push(frame(
        "metadata",
        &json!({"usage": usage, "metrics": {"latencyMs": 1}}),
    ));
    (200, frames)
}

/// A fake OTLP/HTTP collector: every `POST /v1/traces` JSON body it took,
/// in order, and a notification each time one arrives.
pub struct Collector {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The export requests received.
    pub received: Arc<Mutex<Vec<Value>>>,
    /// Notified after each one.
    pub arrived: Arc<tokio::sync::Notify>,
}

impl Collector {
    /// Waits until `n` spans have arrived in all, or `within` has passed;
    /// the spans received by then.
    pub async fn spans(&self, n: usize, within: std::time::Duration) -> Vec<Value> {
        let all = |received: &[Value]| -> Vec<Value> {
            received
                .iter()
                .flat_map(|r| r["resourceSpans"].as_array().cloned().unwrap_or_default())
                .flat_map(|r| r["scopeSpans"].as_array().cloned().unwrap_or_default())
                .flat_map(|s| s["spans"].as_array().cloned().unwrap_or_default())
                .collect()
        };
        let wait = async {
            loop {
                let notified = self.arrived.notified();
                if all(&self.received.lock().unwrap()).len() >= n {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(within, wait).await;
        all(&self.received.lock().unwrap())
    }
}

/// Starts a fake collector on the current runtime.
pub async fn start_collector() -> Collector {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let arrived = Arc::new(tokio::sync::Notify::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (kept, told) = (received.clone(), arrived.clone());
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let (kept, told) = (kept.clone(), told.clone());
            async move {
                let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                kept.lock().unwrap().push(doc);
                told.notify_waiters();
                axum::Json(json!({}))
            }
        }),
    );
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Collector {
        url,
        received,
        arrived,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// The fake's answer to a Chat request, with `stamp` as its
    /// `x-load-sent-ns` when given, its head in lower case.
    fn answer(address: &str, stamp: Option<u128>) -> String {
        let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        let stamp = stamp.map_or(String::new(), |s| format!("x-load-sent-ns: {s}\r\n"));
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{stamp}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text.to_ascii_lowercase()
    }

    /// A request stamped as sent a second after the epoch is answered
    /// with a transit of decades (the gateway bench's `held`; the test
    /// reads no clock itself), one without a stamp with none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_stamped_request_is_told_how_long_it_took_to_arrive() {
        let fake = start_unlogged().await;
        let address = fake.url.trim_start_matches("http://").to_string();
        let sent = 1_000_000_000;
        let (stamped, unstamped) = tokio::task::spawn_blocking(move || {
            (answer(&address, Some(sent)), answer(&address, None))
        })
        .await
        .unwrap();
        let transit: u128 = stamped
            .lines()
            .find_map(|l| l.strip_prefix("x-fake-transit-us: "))
            .expect("a transit header")
            .trim()
            .parse()
            .unwrap();
        let decade_us = 10 * 365 * 24 * 3600 * 1_000_000u128;
        assert!(transit > decade_us, "{transit} us");
        assert!(!unstamped.contains("x-fake-transit-us"));
    }
}
