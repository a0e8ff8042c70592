//! Server-sent events, reassembled into the message they carried, so a
//! capture holds one response per exchange however it was delivered.
//!
//! Bytes go in as they arrive ([`Reassembler::feed`]); events are cut at
//! blank lines, and a chunk boundary may fall anywhere, even inside a
//! UTF-8 character.

use serde_json::{Map, Value, json};

use crate::provider::Format;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event {
    /// The `event:` field, if any.
    pub name: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub data: String,
}

/// The longest line an event may have; past it the line is dropped (and
/// counted), so one endless line costs bounded memory.
pub const MAX_EVENT_LINE: usize = 64 << 20;

/// Cuts a byte stream into events.
#[derive(Debug, Default)]
pub struct EventParser {
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no newline: a long line that
    /// arrives in many chunks is scanned once, not once per chunk (8 MB
    /// took 1.2 s and 32 MB 20 s; issue 23, item 7).
    scanned: usize,
    /// Inside a line that went past [`MAX_EVENT_LINE`]: dropped to its end.
    skipping: bool,
    /// Lines dropped for their length.
    pub lines_cut: usize,
    current: Event,
    has_data: bool,
}

impl EventParser {
    /// Takes the next bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(end) = self.pending[from..].iter().position(|&b| b == b'\n') {
            let end = from + end;
            let mut line = &self.pending[start..end];
            start = end + 1;
            from = start;
            if std::mem::take(&mut self.skipping) {
                // The end of a line too long to keep.
                continue;
            }
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line);
            if line.is_empty() {
                if self.has_data || self.current.name.is_some() {
                    out.push(std::mem::take(&mut self.current));
                    self.has_data = false;
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (&*line, ""),
            };
            match field {
                "event" => self.current.name = Some(value.to_string()),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        self.pending.drain(..start);
        if self.pending.len() > MAX_EVENT_LINE {
            if !self.skipping {
                self.lines_cut += 1;
            }
            self.pending.clear();
            self.skipping = true;
        }
        self.scanned = self.pending.len();
        out
    }

    /// The event left when the stream ends without a closing blank line.
    pub fn finish(&mut self) -> Option<Event> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let mut tail = self.feed_tail(&rest);
            if tail.is_some() {
                return tail.take();
            }
        }
        (self.has_data).then(|| {
            self.has_data = false;
            std::mem::take(&mut self.current)
        })
    }

    fn feed_tail(&mut self, rest: &[u8]) -> Option<Event> {
        let mut with_end = rest.to_vec();
        with_end.extend_from_slice(b"\n\n");
        self.feed(&with_end).pop()
    }
}

/// Cuts AWS's binary event stream (`application/vnd.amazon.eventstream`,
/// Bedrock's ConverseStream and InvokeModelWithResponseStream) into
/// events: each frame's `:event-type` header (or `:exception-type`) as the
/// name, its payload as the data. Framing and checksums are the AWS SDK's
/// own decoder's (`aws-smithy-eventstream`).
#[cfg(feature = "aws-event-stream")]
#[derive(Debug, Default)]
pub struct FrameParser {
    pending: bytes::BytesMut,
    decoder: aws_smithy_eventstream::frame::MessageFrameDecoder,
    /// Frames that could not be decoded (a bad checksum, a length past
    /// the framing's limit): the rest of that stream is dropped.
    pub frames_bad: usize,
    broken: bool,
}

#[cfg(feature = "aws-event-stream")]
impl FrameParser {
    /// Takes the next bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        use aws_smithy_eventstream::frame::DecodedFrame;
        let mut out = Vec::new();
        if self.broken {
            return out;
        }
        self.pending.extend_from_slice(bytes);
        loop {
            match self.decoder.decode_frame(&mut self.pending) {
                Ok(DecodedFrame::Complete(message)) => out.push(frame_event(&message)),
                // A frame that announces more than an event may hold is
                // not waited for: its bytes are not kept.
                Ok(DecodedFrame::Incomplete) if self.pending.len() > MAX_EVENT_LINE => {
                    self.frames_bad += 1;
                    self.broken = true;
                    self.pending.clear();
                    break;
                }
                Ok(DecodedFrame::Incomplete) => break,
                Err(_) => {
                    self.frames_bad += 1;
                    self.broken = true;
                    self.pending.clear();
                    break;
                }
            }
        }
        out
    }
}

/// One event stream frame as an event.
#[cfg(feature = "aws-event-stream")]
fn frame_event(message: &aws_smithy_types::event_stream::Message) -> Event {
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| h.value().as_string().ok())
            .map(|v| v.as_str().to_string())
    };
    let name = match header(":message-type").as_deref() {
        Some("exception") | Some("error") => header(":exception-type")
            .or_else(|| header(":error-code"))
            .map(|t| format!("exception:{t}")),
        _ => header(":event-type"),
    };
    Event {
        name,
        data: String::from_utf8_lossy(message.payload()).into_owned(),
    }
}

/// Without the `aws-event-stream` feature the binary framing is not
/// read: a framed stream gives no event, and says so in `frames_bad`.
#[cfg(not(feature = "aws-event-stream"))]
#[derive(Debug, Default)]
pub struct FrameParser {
    /// Streams that could not be read (one per stream: this build does
    /// not decode AWS's framing).
    pub frames_bad: usize,
}

#[cfg(not(feature = "aws-event-stream"))]
impl FrameParser {
    /// Takes the next bytes; this build reads none of them.
    pub fn feed(&mut self, _bytes: &[u8]) -> Vec<Event> {
        self.frames_bad = 1;
        Vec::new()
    }
}

/// A tool call's input from the pieces it streamed in. An empty input
/// streams no piece at all; `{}` is what the API means. Pieces that do not
/// make JSON are kept as the text they were.
fn input_of(raw: String) -> Value {
    if raw.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&raw).unwrap_or(Value::String(raw))
    }
}

/// The model's own event inside an InvokeModelWithResponseStream `chunk`
/// frame: `{"bytes": "<base64 of the event's JSON>"}`.
fn unwrap_chunk(data: &str) -> Option<String> {
    use base64::Engine;
    let v: Value = serde_json::from_str(data).ok()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.get("bytes")?.as_str()?)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// True when `content_type` announces AWS's binary event stream.
pub fn is_aws_event_stream(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|t| {
        t.trim()
            .eq_ignore_ascii_case("application/vnd.amazon.eventstream")
    })
}

/// Rebuilds the response a stream carried, event by event.
#[derive(Debug)]
pub struct Reassembler {
    format: Format,
    parser: EventParser,
    /// Bedrock's binary framing, in place of `parser`.
    frames: Option<FrameParser>,
    message: Value,
    /// Raw `partial_json` of Anthropic tool_use blocks, by block index.
    partial_json: Vec<(usize, String)>,
    complete: bool,
    error: Option<Value>,
}

impl Reassembler {
    /// A reassembler for a stream in `format`.
    pub fn new(format: Format) -> Reassembler {
        Reassembler {
            format,
            parser: EventParser::default(),
            frames: (format == Format::Bedrock).then(FrameParser::default),
            message: Value::Null,
            partial_json: Vec::new(),
            complete: false,
            error: None,
        }
    }

    /// A reassembler for a stream in `format` carried in AWS's binary
    /// event stream framing: Bedrock's InvokeModelWithResponseStream wraps
    /// each of the model's own events (Anthropic's, for Claude) as a
    /// `chunk` frame whose `bytes` hold its JSON, base64-encoded.
    pub fn framed(format: Format) -> Reassembler {
        let mut r = Reassembler::new(format);
        r.frames.get_or_insert_with(FrameParser::default);
        r
    }

    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        let events = match self.frames.as_mut() {
            Some(frames) => frames.feed(bytes),
            None => self.parser.feed(bytes),
        };
        for event in events {
            match (self.format, event.name.as_deref()) {
                (Format::Bedrock, _) => self.apply(event),
                (_, Some("chunk")) => {
                    if let Some(inner) = unwrap_chunk(&event.data) {
                        self.apply(Event {
                            name: None,
                            data: inner,
                        });
                    }
                }
                (_, Some(name)) if name.starts_with("exception:") => {
                    self.error = serde_json::from_str(&event.data).ok();
                }
                _ => self.apply(event),
            }
        }
    }

    /// True once the stream's closing event arrived (`message_stop`,
    /// `[DONE]`, `response.completed`, a Gemini `finishReason`).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The error event the stream carried, if any.
    pub fn error(&self) -> Option<&Value> {
        self.error.as_ref()
    }

    /// The message as far as it arrived.
    pub fn finish(mut self) -> Value {
        if let Some(event) = self.parser.finish() {
            self.apply(event);
        }
        self.close_partial_json();
        self.message
    }

    fn apply(&mut self, event: Event) {
        if self.format == Format::Bedrock {
            return self.bedrock(event);
        }
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.complete = true;
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return;
        };
        match self.format {
            Format::Anthropic => self.anthropic(value),
            Format::Openai => self.openai(value),
            Format::Responses => self.responses(value),
            Format::Gemini => self.gemini(value),
            Format::Bedrock => {}
        }
    }

    /// Bedrock ConverseStream: `messageStart`, `contentBlockStart` (a
    /// `toolUse` names its id and tool), `contentBlockDelta` (text, a
    /// `toolUse` input piece, reasoning), `contentBlockStop`,
    /// `messageStop` (the stop reason), then `metadata` (usage), rebuilt as
    /// the Converse response body.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "the message is the one this builder made, of that shape"
    )]
    fn bedrock(&mut self, event: Event) {
        let Ok(v) = serde_json::from_str::<Value>(event.data.trim()) else {
            return;
        };
        let name = event.name.unwrap_or_default();
        if let Some(kind) = name.strip_prefix("exception:") {
            let mut error = v;
            if let Some(o) = error.as_object_mut() {
                o.insert("type".into(), json!(kind));
            }
            self.error = Some(error);
            return;
        }
        if !self.message.is_object() {
            self.message = json!({"output": {"message": {"role": "assistant", "content": []}}});
        }
        let index = v
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .map_or(0, |i| i as usize);
        if index > MAX_INDEX {
            return;
        }
        let content = self.message["output"]["message"]["content"]
            .as_array_mut()
            .expect("content is an array");
        while matches!(name.as_str(), "contentBlockStart" | "contentBlockDelta")
            && content.len() <= index
        {
            content.push(json!({}));
        }
        match name.as_str() {
            "contentBlockStart" => {
                if let Some(tool) = v.pointer("/start/toolUse") {
                    content[index] = json!({"toolUse": {
                        "toolUseId": tool.get("toolUseId").cloned().unwrap_or(Value::Null),
                        "name": tool.get("name").cloned().unwrap_or(Value::Null),
                        "input": {},
                    }});
                    self.partial_json.push((index, String::new()));
                }
            }
            "contentBlockDelta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    append_str(&mut content[index], "text", text);
                } else if let Some(piece) = delta.pointer("/toolUse/input").and_then(Value::as_str)
                {
                    match self.partial_json.iter_mut().find(|(i, _)| *i == index) {
                        Some((_, s)) => s.push_str(piece),
                        None => self.partial_json.push((index, piece.to_string())),
                    }
                } else if let Some(text) = delta
                    .pointer("/reasoningContent/text")
                    .and_then(Value::as_str)
                {
                    let block = &mut content[index];
                    if !block["reasoningContent"]["reasoningText"].is_object() {
                        block["reasoningContent"] = json!({"reasoningText": {"text": ""}});
                    }
                    append_str(
                        &mut block["reasoningContent"]["reasoningText"],
                        "text",
                        text,
                    );
                }
            }
            "contentBlockStop" => self.close_tool_use(index),
            "messageStop" => {
                self.message["stopReason"] = v.get("stopReason").cloned().unwrap_or(Value::Null);
                self.complete = true;
            }
            "metadata" => {
                for key in ["usage", "metrics"] {
                    if let Some(x) = v.get(key) {
                        self.message[key] = x.clone();
                    }
                }
            }
            _ => {}
        }
    }

    /// A Bedrock `toolUse` block's input, parsed once its pieces are in.
    fn close_tool_use(&mut self, index: usize) {
        let Some(pos) = self.partial_json.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, raw) = self.partial_json.swap_remove(pos);
        let input = input_of(raw);
        if let Some(block) = self.message["output"]["message"]["content"]
            .get_mut(index)
            .and_then(|b| b.get_mut("toolUse"))
        {
            block["input"] = input;
        }
    }

    fn anthropic(&mut self, v: Value) {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                self.message = object_or_empty(v.get("message"));
                if self.message.get("content").is_none_or(|c| !c.is_array()) {
                    self.message["content"] = json!([]);
                }
            }
            "content_block_start" => {
                let index = index_of(&v);
                if index > MAX_INDEX {
                    return;
                }
                let block = object_or_empty(v.get("content_block"));
                if let Some(content) = self.content_mut() {
                    while content.len() <= index {
                        content.push(Value::Null);
                    }
                    content[index] = block;
                }
            }
            "content_block_delta" => {
                let index = index_of(&v);
                let Some(delta) = v.get("delta") else { return };
                let dtype = delta.get("type").and_then(Value::as_str).unwrap_or("");
                if dtype == "input_json_delta" {
                    let part = delta
                        .get("partial_json")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    match self.partial_json.iter_mut().find(|(i, _)| *i == index) {
                        Some((_, s)) => s.push_str(part),
                        None => self.partial_json.push((index, part.to_string())),
                    }
                    return;
                }
                let Some(block) = self
                    .content_mut()
                    .and_then(|c| c.get_mut(index))
                    .filter(|b| b.is_object())
                else {
                    return;
                };
                let (field, piece) = match dtype {
                    "text_delta" => ("text", delta.get("text")),
                    "thinking_delta" => ("thinking", delta.get("thinking")),
                    "signature_delta" => ("signature", delta.get("signature")),
                    "citations_delta" => {
                        if let Some(c) = delta.get("citation") {
                            let list = &mut block["citations"];
                            if !list.is_array() {
                                *list = json!([]);
                            }
                            if let Some(a) = list.as_array_mut() {
                                a.push(c.clone());
                            }
                        }
                        return;
                    }
                    _ => return,
                };
                if let Some(piece) = piece.and_then(Value::as_str) {
                    append_str(block, field, piece);
                }
            }
            "content_block_stop" => self.close_block(index_of(&v)),
            "message_delta" => {
                if let (Some(delta), Some(m)) = (
                    v.get("delta").and_then(Value::as_object),
                    self.message.as_object_mut(),
                ) {
                    for (k, val) in delta {
                        m.insert(k.clone(), val.clone());
                    }
                }
                if let Some(usage) = v.get("usage").and_then(Value::as_object) {
                    let target = &mut self.message["usage"];
                    if !target.is_object() {
                        *target = json!({});
                    }
                    for (k, val) in usage {
                        target[k] = val.clone();
                    }
                }
            }
            "message_stop" => self.complete = true,
            "error" => self.error = v.get("error").cloned(),
            _ => {}
        }
    }

    fn content_mut(&mut self) -> Option<&mut Vec<Value>> {
        if !self.message.is_object() {
            self.message = json!({"type": "message", "role": "assistant", "content": []});
        }
        self.message
            .get_mut("content")
            .and_then(Value::as_array_mut)
    }

    fn close_block(&mut self, index: usize) {
        let Some(pos) = self.partial_json.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, raw) = self.partial_json.swap_remove(pos);
        let input = input_of(raw);
        if let Some(block) = self
            .content_mut()
            .and_then(|c| c.get_mut(index))
            .filter(|b| b.is_object())
        {
            block["input"] = input;
        }
    }

    fn close_partial_json(&mut self) {
        let open: Vec<usize> = self.partial_json.iter().map(|(i, _)| *i).collect();
        for index in open {
            match self.format {
                Format::Bedrock => self.close_tool_use(index),
                _ => self.close_block(index),
            }
        }
    }

    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "the message is the one this builder made, of that shape"
    )]
    fn openai(&mut self, v: Value) {
        if !self.message.is_object() {
            self.message = json!({
                "id": v.get("id").cloned().unwrap_or(Value::Null),
                "object": "chat.completion",
                "created": v.get("created").cloned().unwrap_or(Value::Null),
                "model": v.get("model").cloned().unwrap_or(Value::Null),
                "choices": []
            });
        }
        if let Some(usage) = v.get("usage").filter(|u| !u.is_null()) {
            self.message["usage"] = usage.clone();
        }
        if let Some(err) = v.get("error") {
            self.error = Some(err.clone());
        }
        let Some(chunks) = v.get("choices").and_then(Value::as_array) else {
            return;
        };
        for choice in chunks {
            let index = index_of(choice);
            if index > MAX_INDEX {
                continue;
            }
            let choices = self.message["choices"]
                .as_array_mut()
                .expect("choices is an array");
            while choices.len() <= index {
                let i = choices.len();
                choices.push(json!({
                    "index": i,
                    "message": {"role": "assistant", "content": null},
                    "finish_reason": null
                }));
            }
            let target = &mut choices[index];
            if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
                target["finish_reason"] = reason.clone();
            }
            let Some(delta) = choice.get("delta").and_then(Value::as_object) else {
                continue;
            };
            let message = &mut target["message"];
            for (key, value) in delta {
                match key.as_str() {
                    "content" | "refusal" | "reasoning_content" => {
                        if let Some(s) = value.as_str() {
                            append_str(message, key, s);
                        }
                    }
                    "tool_calls" => {
                        for call in value.as_array().into_iter().flatten() {
                            merge_openai_call(message, call);
                        }
                    }
                    "role" => message["role"] = value.clone(),
                    _ if !value.is_null() => message[key] = value.clone(),
                    _ => {}
                }
            }
        }
    }

    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "made an array just above"
    )]
    fn responses(&mut self, v: Value) {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(r) = v.get("response").filter(|r| r.is_object()) {
                    self.message = r.clone();
                }
            }
            "response.output_item.done" => {
                if !self.message.is_object() {
                    self.message = json!({"object": "response", "output": []});
                }
                let index = v
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .map(|i| i as usize);
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if !self.message["output"].is_array() {
                    self.message["output"] = json!([]);
                }
                let output = self.message["output"].as_array_mut().expect("an array");
                let index = index.unwrap_or(output.len());
                if index > MAX_INDEX {
                    return;
                }
                while output.len() <= index {
                    output.push(Value::Null);
                }
                output[index] = item;
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                if let Some(r) = v.get("response").filter(|r| r.is_object()) {
                    self.message = r.clone();
                }
                self.complete = true;
            }
            "error" => self.error = Some(v),
            _ => {}
        }
    }

    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "the message is the one this builder made, of that shape"
    )]
    fn gemini(&mut self, v: Value) {
        if let Some(err) = v.get("error") {
            self.error = Some(err.clone());
            return;
        }
        if !self.message.is_object() {
            self.message = json!({"candidates": []});
        }
        for key in ["usageMetadata", "modelVersion", "responseId"] {
            if let Some(x) = v.get(key) {
                self.message[key] = x.clone();
            }
        }
        let Some(candidates) = v.get("candidates").and_then(Value::as_array) else {
            return;
        };
        for candidate in candidates {
            let index = index_of(candidate);
            if index > MAX_INDEX {
                continue;
            }
            let list = self.message["candidates"]
                .as_array_mut()
                .expect("candidates is an array");
            while list.len() <= index {
                list.push(json!({"content": {"role": "model", "parts": []}}));
            }
            let target = &mut list[index];
            if let Some(reason) = candidate.get("finishReason") {
                target["finishReason"] = reason.clone();
                self.complete = true;
            }
            let parts = candidate
                .get("content")
                .and_then(|c| c.get("parts"))
                .and_then(Value::as_array);
            let Some(into) = target["content"]["parts"].as_array_mut() else {
                continue;
            };
            for part in parts.into_iter().flatten() {
                // Text streams in pieces: join a piece to the text before it
                // unless it starts a thought or the previous part was one.
                let joinable = |p: &Value| {
                    p.get("text").is_some_and(Value::is_string)
                        && p.as_object()
                            .is_some_and(|o| o.keys().all(|k| k == "text" || k == "thought"))
                };
                if joinable(part)
                    && let Some(last) = into.last_mut()
                    && joinable(last)
                    && last.get("thought") == part.get("thought")
                {
                    let piece = part["text"].as_str().unwrap_or("");
                    append_str(last, "text", piece);
                } else {
                    into.push(part.clone());
                }
            }
        }
    }
}

/// The most blocks, choices, calls or output items one answer may index:
/// an index past it is a broken stream, not a reason to allocate.
const MAX_INDEX: usize = 4096;

fn index_of(v: &Value) -> usize {
    v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize
}

/// `v` if it is an object, else an empty one: what a stream names a
/// message or a block must be an object before fields are set on it.
fn object_or_empty(v: Option<&Value>) -> Value {
    match v {
        Some(o @ Value::Object(_)) => o.clone(),
        _ => json!({}),
    }
}

fn append_str(target: &mut Value, field: &str, piece: &str) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    match target.get_mut(field) {
        Some(Value::String(s)) => s.push_str(piece),
        _ => target[field] = Value::String(piece.to_string()),
    }
}

/// One `delta.tool_calls[i]` chunk into `message.tool_calls`: the first
/// chunk of a call brings its id and name, the rest bring argument text.
#[allow(clippy::expect_used, reason = "made an array just above")]
fn merge_openai_call(message: &mut Value, chunk: &Value) {
    if !message["tool_calls"].is_array() {
        message["tool_calls"] = json!([]);
    }
    let calls = message["tool_calls"].as_array_mut().expect("an array");
    let index = index_of(chunk);
    if index > MAX_INDEX {
        return;
    }
    while calls.len() <= index {
        calls.push(
            json!({"id": null, "type": "function", "function": {"name": "", "arguments": ""}}),
        );
    }
    let call = &mut calls[index];
    if let Some(id) = chunk.get("id").filter(|v| !v.is_null()) {
        call["id"] = id.clone();
    }
    if let Some(kind) = chunk.get("type").filter(|v| !v.is_null()) {
        call["type"] = kind.clone();
    }
    if let Some(f) = chunk.get("function") {
        if let Some(name) = f.get("name").and_then(Value::as_str) {
            append_str(&mut call["function"], "name", name);
        }
        if let Some(args) = f.get("arguments").and_then(Value::as_str) {
            append_str(&mut call["function"], "arguments", args);
        }
    }
}

/// True when a recorded body is server-sent events rather than JSON: its
/// first line is an `event:`, `data:`, `id:` or `retry:` field or a
/// `:` comment.
pub fn looks_like_events(text: &str) -> bool {
    let first = text.trim_start().lines().next().unwrap_or("");
    first.starts_with(':')
        || ["event:", "data:", "id:", "retry:"]
            .iter()
            .any(|field| first.starts_with(field))
}

/// True when `content_type` announces server-sent events.
pub fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_in_pieces(format: Format, text: &str, piece: usize) -> Reassembler {
        let mut r = Reassembler::new(format);
        for chunk in text.as_bytes().chunks(piece) {
            r.feed(chunk);
        }
        r
    }

    const ANTHROPIC: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"查询\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"北京\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"北\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"京\\\"}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

    /// One AWS event stream frame of `kind` carrying `payload`.
    #[cfg(feature = "aws-event-stream")]
    fn aws_frame(kind: &str, payload: &str) -> Vec<u8> {
        use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
        let message = Message::new(payload.as_bytes().to_vec())
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String(kind.to_string().into()),
            ))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".into()),
            ));
        let mut out = Vec::new();
        aws_smithy_eventstream::frame::write_message_to(&message, &mut out).unwrap();
        out
    }

    /// InvokeModelWithResponseStream with Claude: each Anthropic event
    /// base64-encoded in a `chunk` frame. Fed a byte at a time, it gives
    /// the message the SSE form gives.
    #[test]
    #[cfg(feature = "aws-event-stream")]
    fn invoke_model_chunks_carry_anthropics_own_events() {
        use base64::Engine;
        let mut bytes = Vec::new();
        for event in ANTHROPIC.split("\n\n").filter(|e| !e.is_empty()) {
            let data = event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            let encoded = base64::engine::general_purpose::STANDARD.encode(data);
            bytes.extend(aws_frame("chunk", &format!("{{\"bytes\":\"{encoded}\"}}")));
        }
        let mut r = Reassembler::framed(Format::Anthropic);
        for b in &bytes {
            r.feed(std::slice::from_ref(b));
        }
        assert!(r.is_complete());
        let framed = r.finish();
        assert_eq!(
            framed,
            feed_in_pieces(Format::Anthropic, ANTHROPIC, 7).finish()
        );
        assert_eq!(framed["content"][1]["input"], json!({"city": "北京"}));
    }

    /// ConverseStream: the Converse response rebuilt, a tool's input from
    /// its pieces, the usage from `metadata`; a frame with a bad checksum
    /// ends the reading, never a panic.
    #[test]
    #[cfg(feature = "aws-event-stream")]
    fn converse_stream_frames_rebuild_the_converse_response() {
        let frames = [
            ("messageStart", r#"{"role":"assistant"}"#),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"Let "}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"me"}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"w"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"北京\"}"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":1}"#),
            ("messageStop", r#"{"stopReason":"tool_use"}"#),
            (
                "metadata",
                r#"{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15}}"#,
            ),
        ];
        let bytes: Vec<u8> = frames.iter().flat_map(|(k, p)| aws_frame(k, p)).collect();
        for piece in [1, 5, bytes.len()] {
            let mut r = Reassembler::new(Format::Bedrock);
            for chunk in bytes.chunks(piece) {
                r.feed(chunk);
            }
            assert!(r.is_complete());
            let m = r.finish();
            assert_eq!(m["output"]["message"]["content"][0]["text"], "Let me");
            assert_eq!(
                m["output"]["message"]["content"][1]["toolUse"],
                json!({"toolUseId": "tooluse_1", "name": "w", "input": {"city": "北京"}})
            );
            assert_eq!(m["stopReason"], "tool_use");
            assert_eq!(m["usage"]["outputTokens"], 5);
        }
        let mut corrupt = bytes.clone();
        let at = corrupt.len() / 2;
        corrupt[at] ^= 0xff;
        let mut r = Reassembler::new(Format::Bedrock);
        r.feed(&corrupt);
        assert!(!r.is_complete());
        let _ = r.finish();
    }

    /// A line that arrives in many chunks is scanned once; one longer
    /// than the cap is dropped to its end and counted, and the events
    /// after it are read as usual (issue 23, item 7).
    #[test]
    fn a_long_line_in_many_chunks_is_read_once_and_an_endless_one_is_cut() {
        let mut p = EventParser::default();
        let text = "x".repeat(8 << 20);
        let line = format!("data: {text}\n\n");
        let mut events = Vec::new();
        for chunk in line.as_bytes().chunks(4096) {
            events.extend(p.feed(chunk));
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data.len(), text.len());
        let mut p = EventParser::default();
        let chunk = vec![b'y'; 64 << 10];
        let mut sent = 0;
        while sent <= MAX_EVENT_LINE + (1 << 20) {
            assert!(p.feed(&chunk).is_empty());
            sent += chunk.len();
        }
        assert!(p.pending.len() <= MAX_EVENT_LINE);
        let after = p.feed(b"yyy\n\ndata: next\n\n");
        assert_eq!(p.lines_cut, 1);
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].data, "next");
    }

    #[test]
    fn anthropic_events_become_the_message_whatever_the_chunking() {
        for piece in [1, 3, 7, 64, 4096] {
            let r = feed_in_pieces(Format::Anthropic, ANTHROPIC, piece);
            assert!(r.is_complete(), "piece {piece}");
            let m = r.finish();
            assert_eq!(m["content"][0]["text"], "查询北京", "piece {piece}");
            assert_eq!(m["content"][1]["input"], json!({"city": "北京"}));
            assert_eq!(m["stop_reason"], "tool_use");
            assert_eq!(m["usage"]["output_tokens"], 42);
            assert_eq!(m["usage"]["input_tokens"], 10);
        }
    }

    #[test]
    fn a_stream_cut_short_keeps_what_arrived() {
        let cut = &ANTHROPIC[..ANTHROPIC.find("event: content_block_stop").unwrap()];
        let r = feed_in_pieces(Format::Anthropic, cut, 5);
        assert!(!r.is_complete());
        let m = r.finish();
        assert_eq!(m["content"][0]["text"], "查询北京");
        assert!(m["stop_reason"].is_null());
    }

    #[test]
    fn openai_chunks_rebuild_tool_calls_by_index() {
        let text = concat!(
            "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_w\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_f\",\"type\":\"function\",\"function\":{\"name\":\"get_fx\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"x\\\"}\"}},{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n"
        );
        let r = feed_in_pieces(Format::Openai, text, 11);
        assert!(r.is_complete());
        let m = r.finish();
        let calls = &m["choices"][0]["message"]["tool_calls"];
        assert_eq!(calls[0]["id"], "call_w");
        assert_eq!(calls[0]["function"]["arguments"], "{\"city\":\"x\"}");
        assert_eq!(calls[1]["function"]["name"], "get_fx");
        assert_eq!(m["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn responses_take_the_completed_response() {
        let text = concat!(
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
            "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"}}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\"}]}}\n\n"
        );
        let r = feed_in_pieces(Format::Responses, text, 9);
        assert!(r.is_complete());
        let m = r.finish();
        assert_eq!(m["status"], "completed");
        assert_eq!(m["output"][0]["call_id"], "call_1");
    }

    #[test]
    fn gemini_pieces_join_into_one_text_part() {
        let text = concat!(
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"北京\"}],\"role\":\"model\"}}]}\r\n\r\n",
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"晴\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"totalTokenCount\":5}}\r\n\r\n"
        );
        let r = feed_in_pieces(Format::Gemini, text, 4);
        assert!(r.is_complete());
        let m = r.finish();
        let parts = &m["candidates"][0]["content"]["parts"];
        assert_eq!(parts[0]["text"], "北京晴");
        assert_eq!(parts[1]["functionCall"]["name"], "f");
        assert_eq!(m["candidates"][0]["finishReason"], "STOP");
    }

    #[test]
    fn comments_multiline_data_and_a_missing_final_blank_line() {
        let mut p = EventParser::default();
        let mut events = p.feed(b": keep-alive\n\nevent: x\ndata: a\ndata: b\n\ndata: tail");
        events.extend(p.finish());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].name.as_deref(), Some("x"));
        assert_eq!(events[0].data, "a\nb");
        assert_eq!(events[1].data, "tail");
    }

    #[test]
    fn hostile_streams_neither_panic_nor_allocate() {
        let cases = [
            (
                Format::Anthropic,
                "data: {\"type\":\"message_start\",\"message\":\"x\"}\n\ndata: {\"type\":\"message_delta\",\"usage\":{\"a\":1}}\n\n",
            ),
            (
                Format::Anthropic,
                "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":5}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1\"}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            ),
            (
                Format::Anthropic,
                "data: {\"type\":\"content_block_start\",\"index\":1000000000000}\n\n",
            ),
            (
                Format::Openai,
                "data: {\"choices\":[{\"index\":1000000000000,\"delta\":{}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99999999999}]}}]}\n\n",
            ),
            (
                Format::Responses,
                "data: {\"type\":\"response.created\",\"response\":5}\n\ndata: {\"type\":\"response.output_item.done\",\"output_index\":99999999999}\n\n",
            ),
            (
                Format::Gemini,
                "data: {\"candidates\":[{\"index\":99999999999}]}\n\n",
            ),
        ];
        for (format, text) in cases {
            let r = feed_in_pieces(format, text, 3);
            let m = r.finish();
            assert!(
                serde_json::to_string(&m).unwrap().len() < 4096,
                "{format:?}: {m}"
            );
        }
    }

    #[test]
    fn content_types() {
        assert!(is_event_stream("text/event-stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
    }
}
