//! OpenTelemetry traces (OTLP, JSON as the Collector's file exporter and
//! the OpenTelemetry SDKs' JSON file exporters write it, or protobuf) read
//! as conversations: each LLM span is one provider request, as a recording
//! has one per interaction, and its status says what the provider answered.
//!
//! The GenAI conventions are still moving, so spans come in dialects; each
//! is read into one neutral message list (`Said`) that is then written as
//! the provider's own request body and read by that provider's reader, so
//! the provider's rules and words apply as they do to a captured body:
//!
//! - semantic conventions >= 1.37: `gen_ai.input.messages` /
//!   `gen_ai.output.messages` (`role` + `parts`, with `tool_call` and
//!   `tool_call_response` parts carrying ids), `gen_ai.system_instructions`,
//!   `gen_ai.tool.definitions`;
//! - 1.36 and earlier: span events (`gen_ai.user.message`,
//!   `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, …)
//!   whose body is in `gen_ai.event.content` or flattened into attributes;
//! - OpenLLMetry's `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`;
//! - OpenInference's `llm.input_messages.N.message.*` (with
//!   `tool_calls.M.tool_call.id` and `tool_call_id`); its `input.value`,
//!   when it is the request body itself, is read as the body.
//!
//! Decoding OTLP is `opentelemetry-proto`'s (prost messages, and its serde
//! for the JSON mapping with hex ids); nothing here parses protobuf.

use std::collections::HashMap;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use serde_json::{Map, Value, json};

use super::{Answer, BlockSource, Conversation, Notice, ReadError, Refusal, Source, detect};

mod logs;
use crate::finding::Kind;
use loopdbg_formats::provider::Format;

pub use crate::detect::is_traces;

/// One OTLP JSON export (`ExportTraceServiceRequest`), from its text.
/// An export that would take far more memory than its size (see
/// [`Amplified`]) is refused before it is decoded.
pub fn parse_json(text: &str) -> Result<ExportTraceServiceRequest, serde_json::Error> {
    parse_json_within(text, &mut Budget::default())
}

/// [`parse_json`] for one export of many (the lines of a file): the
/// allowance is the file's, counted over every export read into `budget`.
pub fn parse_json_within(
    text: &str,
    budget: &mut Budget,
) -> Result<ExportTraceServiceRequest, serde_json::Error> {
    budget.items += tally::json(text)?;
    budget.bytes += text.len();
    Amplified::check(budget.items, budget.bytes).map_err(serde::de::Error::custom)?;
    if logs::is_logs(text) {
        return decode(text).map(logs::as_traces);
    }
    decode(text)
}

/// An OTLP JSON export of `T` (traces or logs) from its text, written as
/// the OTLP JSON encoding or as protobuf's canonical JSON mapping of the
/// same message, which every proto3 parser reads.
fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text).or_else(|first| {
        let Ok(mut doc) = crate::bounded::value(text) else {
            return Err(first);
        };
        let Some(()) = proto3_mapping::to_otlp_json(&mut doc) else {
            return Err(first);
        };
        serde_json::from_value(doc)
    })
}

/// protobuf's canonical JSON mapping of an OTLP export (what Tempo's and
/// Jaeger's APIs, `protojson` and Python's `MessageToJson` write) read as
/// the OTLP JSON encoding the project's serde expects: enum names (`"kind":
/// "SPAN_KIND_CLIENT"`, `"code": "STATUS_CODE_ERROR"`) become their
/// numbers, and ids written as base64 (the mapping's `bytes`) become hex.
mod proto3_mapping {
    use base64::Engine as _;
    use serde_json::Value;

    const SPAN_KINDS: [&str; 6] = [
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
    const STATUS_CODES: [&str; 3] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

    /// Rewrites `doc` in place; `None` when nothing in it was written the
    /// mapping's way (so the first error stands).
    pub fn to_otlp_json(doc: &mut Value) -> Option<()> {
        if doc.get("resourceLogs").is_some() {
            return logs_to_otlp_json(doc);
        }
        let mut changed = false;
        let spans = doc
            .get_mut("resourceSpans")?
            .as_array_mut()?
            .iter_mut()
            .filter_map(|r| r.get_mut("scopeSpans")?.as_array_mut())
            .flatten()
            .filter_map(|s| s.get_mut("spans")?.as_array_mut())
            .flatten();
        for span in spans {
            changed |= named(span.get_mut("kind"), &SPAN_KINDS);
            changed |= named(
                span.get_mut("status").and_then(|s| s.get_mut("code")),
                &STATUS_CODES,
            );
            for (key, len) in [("traceId", 16), ("spanId", 8), ("parentSpanId", 8)] {
                changed |= hex_id(span.get_mut(key), len);
            }
            for link in span
                .get_mut("links")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                changed |= hex_id(link.get_mut("traceId"), 16);
                changed |= hex_id(link.get_mut("spanId"), 8);
            }
        }
        changed.then_some(())
    }

    /// The severities by number (`SEVERITY_NUMBER_INFO` is 9).
    const SEVERITIES: [&str; 25] = [
        "SEVERITY_NUMBER_UNSPECIFIED",
        "SEVERITY_NUMBER_TRACE",
        "SEVERITY_NUMBER_TRACE2",
        "SEVERITY_NUMBER_TRACE3",
        "SEVERITY_NUMBER_TRACE4",
        "SEVERITY_NUMBER_DEBUG",
        "SEVERITY_NUMBER_DEBUG2",
        "SEVERITY_NUMBER_DEBUG3",
        "SEVERITY_NUMBER_DEBUG4",
        "SEVERITY_NUMBER_INFO",
        "SEVERITY_NUMBER_INFO2",
        "SEVERITY_NUMBER_INFO3",
        "SEVERITY_NUMBER_INFO4",
        "SEVERITY_NUMBER_WARN",
        "SEVERITY_NUMBER_WARN2",
        "SEVERITY_NUMBER_WARN3",
        "SEVERITY_NUMBER_WARN4",
        "SEVERITY_NUMBER_ERROR",
        "SEVERITY_NUMBER_ERROR2",
        "SEVERITY_NUMBER_ERROR3",
        "SEVERITY_NUMBER_ERROR4",
        "SEVERITY_NUMBER_FATAL",
        "SEVERITY_NUMBER_FATAL2",
        "SEVERITY_NUMBER_FATAL3",
        "SEVERITY_NUMBER_FATAL4",
    ];

    /// [`to_otlp_json`] for a logs export: severities by name, ids in base64.
    fn logs_to_otlp_json(doc: &mut Value) -> Option<()> {
        let mut changed = false;
        let records = doc
            .get_mut("resourceLogs")?
            .as_array_mut()?
            .iter_mut()
            .filter_map(|r| r.get_mut("scopeLogs")?.as_array_mut())
            .flatten()
            .filter_map(|s| s.get_mut("logRecords")?.as_array_mut())
            .flatten();
        for record in records {
            changed |= named(record.get_mut("severityNumber"), &SEVERITIES);
            changed |= hex_id(record.get_mut("traceId"), 16);
            changed |= hex_id(record.get_mut("spanId"), 8);
        }
        changed.then_some(())
    }

    /// An enum written by name, as its number.
    fn named(field: Option<&mut Value>, names: &[&str]) -> bool {
        let Some(field) = field else { return false };
        let Some(at) = field
            .as_str()
            .and_then(|n| names.iter().position(|k| *k == n))
        else {
            return false;
        };
        *field = Value::from(at);
        true
    }

    /// An id of `len` bytes written as base64, as hex.
    fn hex_id(field: Option<&mut Value>, len: usize) -> bool {
        let Some(field) = field else { return false };
        let Some(text) = field.as_str() else {
            return false;
        };
        let is_hex = text.len() == len * 2 && text.bytes().all(|b| b.is_ascii_hexdigit());
        if is_hex || text.is_empty() {
            return false;
        }
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(text) else {
            return false;
        };
        if bytes.len() != len {
            return false;
        }
        *field = Value::from(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        true
    }
}

/// The items and bytes of the exports of one input read so far.
#[derive(Debug, Default, Clone, Copy)]
pub struct Budget {
    items: u64,
    bytes: usize,
}

/// One OTLP protobuf export, from its bytes; refused, as [`parse_json`]
/// refuses one, when it would take far more memory than its size.
pub fn parse_protobuf(bytes: &[u8]) -> Result<ExportTraceServiceRequest, String> {
    use prost::Message;
    let items = tally::protobuf(bytes)?;
    Amplified::check(items, bytes.len()).map_err(|e| e.to_string())?;
    ExportTraceServiceRequest::decode(bytes).map_err(|e| e.to_string())
}

/// An export holding more spans, events, links and attributes than its
/// bytes can carry as real ones: a span, however empty, takes some
/// hundreds of bytes once decoded, but two bytes of protobuf (`{}` in
/// JSON), so 19 KB of gzip can stand for ten million of them and gigabytes
/// of memory. Up to a million items are always read; past that, one per
/// 16 bytes (a real span's ids alone are 24 bytes, an attribute's key
/// rarely under 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{items} spans, events, links and attributes in {bytes} bytes: more than real ones fit in (at most {allowed}); it is not read, since decoding it would take gigabytes of memory"
)]
pub struct Amplified {
    items: u64,
    bytes: usize,
    allowed: u64,
}

impl Amplified {
    const ALWAYS: u64 = 1_000_000;

    fn check(items: u64, bytes: usize) -> Result<(), Amplified> {
        let allowed = Self::ALWAYS + bytes as u64 / 16;
        match items > allowed {
            true => Err(Amplified {
                items,
                bytes,
                allowed,
            }),
            false => Ok(()),
        }
    }
}

/// Counting an export's items without decoding it: in protobuf, by
/// `prost`'s own field readers over the few messages that repeat; in
/// JSON, by serde over the same fields, every value ignored.
mod tally {
    use prost::bytes::Buf;
    use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};
    use serde::Deserialize;
    use serde::de::IgnoredAny;

    /// The repeated message fields counted, by message: (field, what it
    /// holds). A `None` is counted and not entered.
    struct Schema(&'static [(u32, Option<&'static Schema>)]);
    const EXPORT: Schema = Schema(&[(1, Some(&RESOURCE_SPANS))]);
    const RESOURCE_SPANS: Schema = Schema(&[(1, Some(&RESOURCE)), (2, Some(&SCOPE_SPANS))]);
    const RESOURCE: Schema = Schema(&[(1, None)]);
    const SCOPE_SPANS: Schema = Schema(&[(1, Some(&SCOPE)), (2, Some(&SPAN))]);
    const SCOPE: Schema = Schema(&[(3, None)]);
    const SPAN: Schema = Schema(&[(9, None), (11, Some(&EVENT)), (13, Some(&LINK))]);
    const EVENT: Schema = Schema(&[(3, None)]);
    const LINK: Schema = Schema(&[(4, None)]);

    /// How many items a protobuf export holds.
    pub(super) fn protobuf(bytes: &[u8]) -> Result<u64, String> {
        let mut buf = bytes;
        walk(&mut buf, &EXPORT)
    }

    fn walk(buf: &mut &[u8], schema: &Schema) -> Result<u64, String> {
        let mut items = 0;
        while buf.has_remaining() {
            let (tag, wire) = decode_key(buf).map_err(|e| e.to_string())?;
            let counted = schema.0.iter().find(|(field, _)| *field == tag);
            match counted {
                Some((_, inner)) if wire == WireType::LengthDelimited => {
                    let len = decode_varint(buf).map_err(|e| e.to_string())?;
                    let len = usize::try_from(len).unwrap_or(usize::MAX);
                    if len > buf.remaining() {
                        return Err("a field runs past the end of its message".into());
                    }
                    let (mut field, rest) = buf.split_at(len);
                    items += 1;
                    if let Some(inner) = inner {
                        items += walk(&mut field, inner)?;
                    }
                    *buf = rest;
                }
                _ => skip_field(wire, tag, buf, DecodeContext::default())
                    .map_err(|e| e.to_string())?,
            }
        }
        Ok(items)
    }

    /// A list whose items are counted as they are read, each read as `T`.
    struct Counted<T>(u64, std::marker::PhantomData<T>);

    impl<T> Default for Counted<T> {
        fn default() -> Self {
            Counted(0, std::marker::PhantomData)
        }
    }

    /// What an item adds to the count, itself included.
    trait Tally {
        fn tally(&self) -> u64;
    }

    impl Tally for IgnoredAny {
        fn tally(&self) -> u64 {
            1
        }
    }

    impl<'de, T: Deserialize<'de> + Tally> Deserialize<'de> for Counted<T> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit<T>(std::marker::PhantomData<T>);
            impl<'de, T: Deserialize<'de> + Tally> serde::de::Visitor<'de> for Visit<T> {
                type Value = Counted<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a list")
                }
                fn visit_unit<E>(self) -> Result<Self::Value, E> {
                    Ok(Counted::default())
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Self::Value, A::Error> {
                    let mut n = 0;
                    while let Some(item) = seq.next_element::<T>()? {
                        n += item.tally();
                    }
                    Ok(Counted(n, std::marker::PhantomData))
                }
            }
            d.deserialize_any(Visit(std::marker::PhantomData))
        }
    }

    impl<T> Tally for Counted<T> {
        fn tally(&self) -> u64 {
            self.0
        }
    }

    /// Declares a message of the JSON mapping by the counted lists it
    /// holds (both spellings the mapping allows); every other field is
    /// passed over.
    macro_rules! message {
        ($name:ident { $($field:ident: $camel:literal / $snake:literal => $item:ty),* }) => {
            #[derive(Deserialize, Default)]
            #[serde(default)]
            struct $name {
                $(#[serde(rename = $camel, alias = $snake)] $field: Counted<$item>,)*
            }
            impl Tally for $name {
                fn tally(&self) -> u64 {
                    1 $(+ self.$field.tally())*
                }
            }
        };
    }

    message!(Export {
        resource_spans: "resourceSpans" / "resource_spans" => ResourceSpans,
        resource_logs: "resourceLogs" / "resource_logs" => ResourceLogs
    });
    message!(ResourceLogs { scope_logs: "scopeLogs" / "scope_logs" => ScopeLogs });
    message!(ScopeLogs { log_records: "logRecords" / "log_records" => LogRecord });
    // A body is one value (a map, mostly): counted with its record.
    message!(LogRecord { attributes: "attributes" / "attributes" => IgnoredAny });
    message!(ResourceSpans { scope_spans: "scopeSpans" / "scope_spans" => ScopeSpans });
    message!(ScopeSpans { spans: "spans" / "spans" => Span });
    message!(Span {
        attributes: "attributes" / "attributes" => IgnoredAny,
        events: "events" / "events" => Event,
        links: "links" / "links" => Event
    });
    message!(Event { attributes: "attributes" / "attributes" => IgnoredAny });

    /// How many items a JSON export holds (an error here is the one
    /// decoding would give: the text is not JSON).
    pub(super) fn json(text: &str) -> Result<u64, serde_json::Error> {
        // Not an object (or a wrong shape): decoding says so in its words.
        Ok(serde_json::from_str::<Export>(text).map_or(0, |e| e.tally() - 1))
    }
}

pub use crate::detect::looks_like_protobuf;

/// A span, its attributes as JSON values.
#[derive(Debug, Clone)]
pub struct Span {
    /// Hex, as OTLP JSON writes it.
    pub trace_id: String,
    /// Hex.
    pub span_id: String,
    /// Hex; empty for a trace's root.
    pub parent_id: String,
    /// The span's name (`chat gpt-4o`, `execute_tool get_weather`).
    pub name: String,
    /// Nanoseconds since the epoch.
    pub start: u64,
    /// Nanoseconds since the epoch.
    pub end: u64,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// The status's message (an SDK's error text).
    pub status_message: String,
    /// Attributes by key.
    pub attributes: Map<String, Value>,
    /// Events: name and attributes.
    pub events: Vec<(String, Map<String, Value>)>,
    /// The line of the file its export was on (JSON Lines).
    pub line: Option<usize>,
    /// `service.name` of its resource.
    pub service: Option<String>,
}

impl Span {
    /// Takes in `other`, the same span read again: its events after this
    /// one's, what this one lacks (a name, attributes, times) from it.
    fn absorb(&mut self, other: Span) {
        if self.name.is_empty() || self.name == logs::EVENTS_ONLY {
            self.name = other.name;
        }
        if self.parent_id.is_empty() {
            self.parent_id = other.parent_id;
        }
        if self.status == 0 {
            self.status = other.status;
            self.status_message = other.status_message;
        }
        for (key, value) in other.attributes {
            self.attributes.entry(key).or_insert(value);
        }
        self.events.extend(other.events);
        if other.start != 0 && (self.start == 0 || other.start < self.start) {
            self.start = other.start;
        }
        self.end = self.end.max(other.end);
        self.line = self.line.or(other.line);
        self.service = self.service.take().or(other.service);
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    fn int(&self, key: &str) -> Option<i64> {
        let v = self.attributes.get(key)?;
        v.as_i64().or_else(|| v.as_str()?.parse().ok())
    }

    fn place(&self, attribute: &str) -> BlockSource {
        BlockSource {
            path: format!("trace {} span {} {attribute}", self.trace_id, self.span_id).into(),
            line: self.line,
            uuid: None,
        }
    }

    /// A tool execution (`gen_ai.operation.name` = `execute_tool`).
    fn tool_call_id(&self) -> Option<&str> {
        (self.str("gen_ai.operation.name") == Some("execute_tool")
            || self.name.starts_with("execute_tool"))
        .then(|| self.str("gen_ai.tool.call.id"))
        .flatten()
    }
}

/// An attribute value as JSON: strings, numbers, booleans, arrays and
/// key-value lists as themselves, bytes as hex.
fn json_of(value: &AnyValue) -> Value {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => Value::String(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(*b),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(d)) => json!(d),
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(json_of).collect())
        }
        Some(any_value::Value::KvlistValue(l)) => Value::Object(
            l.values
                .iter()
                .map(|kv| {
                    (
                        kv.key.clone(),
                        kv.value.as_ref().map_or(Value::Null, json_of),
                    )
                })
                .collect(),
        ),
        Some(any_value::Value::BytesValue(b)) => Value::String(hex(b)),
        _ => Value::Null,
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn attributes_of(list: &[opentelemetry_proto::tonic::common::v1::KeyValue]) -> Map<String, Value> {
    list.iter()
        .map(|kv| {
            (
                kv.key.clone(),
                kv.value.as_ref().map_or(Value::Null, json_of),
            )
        })
        .collect()
}

/// Every span of the exports, with the line each export was on.
pub fn spans_of(exports: Vec<(Option<usize>, ExportTraceServiceRequest)>) -> Vec<Span> {
    let mut spans = Vec::new();
    for (line, export) in exports {
        for resource in export.resource_spans {
            let service = resource.resource.as_ref().and_then(|r| {
                r.attributes
                    .iter()
                    .find(|kv| kv.key == "service.name")
                    .and_then(|kv| kv.value.as_ref())
                    .and_then(|v| json_of(v).as_str().map(str::to_string))
            });
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let status = span.status.as_ref();
                    spans.push(Span {
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_id: hex(&span.parent_span_id),
                        name: span.name.clone(),
                        start: span.start_time_unix_nano,
                        end: span.end_time_unix_nano,
                        status: status.map_or(0, |s| s.code),
                        status_message: status.map(|s| s.message.clone()).unwrap_or_default(),
                        attributes: attributes_of(&span.attributes),
                        events: span
                            .events
                            .iter()
                            .map(|e| (e.name.clone(), attributes_of(&e.attributes)))
                            .collect(),
                        line,
                        service: service.clone(),
                    });
                }
            }
        }
    }
    // A span whose GenAI events came as log records, and the span itself,
    // are one span: the events join it (a file of both, or a span's
    // events over several logs exports).
    let mut by_ids: HashMap<(String, String), usize> = HashMap::new();
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        let ids = (span.trace_id.clone(), span.span_id.clone());
        match by_ids.get(&ids) {
            Some(&i) if !span.span_id.is_empty() => merged[i].absorb(span),
            _ => {
                by_ids.insert(ids, merged.len());
                merged.push(span);
            }
        }
    }
    let mut spans = merged;
    // A trace's spans in the order they started, traces by their first.
    let mut first: HashMap<String, u64> = HashMap::new();
    for s in &spans {
        let at = first.entry(s.trace_id.clone()).or_insert(s.start);
        *at = (*at).min(s.start);
    }
    spans.sort_by(|a, b| {
        (first[&a.trace_id], &a.trace_id, a.start, a.end).cmp(&(
            first[&b.trace_id],
            &b.trace_id,
            b.start,
            b.end,
        ))
    });
    spans
}

/// One part of a neutral message.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Call {
        id: String,
        name: String,
        arguments: Value,
    },
    Response {
        id: String,
        response: Value,
    },
}

/// A message as the span said it, before it is a provider's, and the
/// attribute it came from.
#[derive(Debug, Clone)]
struct Said {
    role: String,
    parts: Vec<Part>,
    place: String,
}

/// What an LLM span asked and answered, neutrally.
struct Exchange {
    dialect: &'static str,
    system: Vec<String>,
    input: Vec<Said>,
    output: Vec<Said>,
    tools: Vec<Value>,
    /// A request body the span recorded whole (OpenInference's
    /// `input.value`), read as it is.
    body: Option<Value>,
}

/// A JSON attribute: a value, or a string holding one.
fn json_attr(span: &Span, key: &str) -> Option<Value> {
    match span.attributes.get(key)? {
        Value::String(s) => serde_json::from_str(s).ok(),
        v => Some(v.clone()),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// Arguments as recorded: an object, or JSON text of one.
fn arguments_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => json!({}),
    }
}

/// The type and field names one way of writing parts uses: the
/// conventions' `parts`, or Anthropic's content blocks (OpenLLMetry keeps
/// those as JSON text).
struct PartNames {
    text: (&'static str, &'static str),
    call: (&'static str, &'static str, &'static str, &'static str),
    response: (&'static str, &'static str, &'static str),
}

/// Semantic conventions >= 1.37.
const CONVENTION_PARTS: PartNames = PartNames {
    text: ("text", "content"),
    call: ("tool_call", "id", "name", "arguments"),
    response: ("tool_call_response", "id", "response"),
};

/// Anthropic Messages content blocks.
const ANTHROPIC_BLOCKS: PartNames = PartNames {
    text: ("text", "text"),
    call: ("tool_use", "id", "name", "input"),
    response: ("tool_result", "tool_use_id", "content"),
};

/// The parts of a list written with `names`; other kinds are left out.
fn parts_of(parts: &[Value], names: &PartNames) -> Vec<Part> {
    parts
        .iter()
        .filter_map(|p| {
            let field = |k: &str| p.get(k).map(text_of).unwrap_or_default();
            let kind = p.get("type").and_then(Value::as_str)?;
            if kind == names.text.0 {
                Some(Part::Text(field(names.text.1)))
            } else if kind == names.call.0 {
                Some(Part::Call {
                    id: field(names.call.1),
                    name: field(names.call.2),
                    arguments: arguments_of(p.get(names.call.3)),
                })
            } else if kind == names.response.0 {
                Some(Part::Response {
                    id: field(names.response.1),
                    response: p.get(names.response.2).cloned().unwrap_or(Value::Null),
                })
            } else {
                None
            }
        })
        .collect()
}

fn messages_of(value: Option<Value>, key: &str) -> Vec<Said> {
    let Some(Value::Array(list)) = value else {
        return Vec::new();
    };
    list.iter()
        .enumerate()
        .map(|(i, m)| Said {
            role: m.get("role").map(text_of).unwrap_or_default(),
            parts: m
                .get("parts")
                .and_then(Value::as_array)
                .map_or_else(Vec::new, |p| parts_of(p, &CONVENTION_PARTS)),
            place: format!("{key}[{i}]"),
        })
        .collect()
}

/// Semantic conventions >= 1.37.
fn conventions(span: &Span) -> Option<Exchange> {
    let input = json_attr(span, "gen_ai.input.messages")?;
    let system = match json_attr(span, "gen_ai.system_instructions") {
        Some(Value::Array(parts)) => parts_of(&parts, &CONVENTION_PARTS)
            .into_iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) => vec![s],
        _ => Vec::new(),
    };
    Some(Exchange {
        dialect: "gen_ai.input.messages",
        system,
        input: messages_of(Some(input), "gen_ai.input.messages"),
        output: messages_of(
            json_attr(span, "gen_ai.output.messages"),
            "gen_ai.output.messages",
        ),
        tools: match json_attr(span, "gen_ai.tool.definitions") {
            Some(Value::Array(tools)) => tools,
            _ => Vec::new(),
        },
        body: None,
    })
}

/// Flattened attributes under `prefix` (`llm.input_messages.`), grouped by
/// their first index: `N` → the rest of the key → value.
fn flattened<'a>(span: &'a Span, prefix: &str) -> Vec<(usize, Vec<(&'a str, &'a Value)>)> {
    let mut groups: Vec<(usize, Vec<(&str, &Value)>)> = Vec::new();
    for (key, value) in &span.attributes {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        let Some((n, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else {
            continue;
        };
        match groups.iter_mut().find(|(m, _)| *m == n) {
            Some((_, fields)) => fields.push((field, value)),
            None => groups.push((n, vec![(field, value)])),
        }
    }
    groups.sort_by_key(|(n, _)| *n);
    groups
}

/// The calls under `prefix` of a flattened message (`tool_calls.`), by
/// index, with the key names the dialect uses for id, name and arguments.
fn flattened_calls(fields: &[(&str, &Value)], prefix: &str, keys: [&str; 3]) -> Vec<Part> {
    let mut calls: Vec<(usize, String, String, Value)> = Vec::new();
    for (field, value) in fields {
        let Some(rest) = field.strip_prefix(prefix) else {
            continue;
        };
        let Some((m, key)) = rest.split_once('.') else {
            continue;
        };
        let Ok(m) = m.parse::<usize>() else {
            continue;
        };
        let at = match calls.iter().position(|c| c.0 == m) {
            Some(at) => at,
            None => {
                calls.push((m, String::new(), String::new(), Value::Null));
                calls.len() - 1
            }
        };
        if key == keys[0] {
            calls[at].1 = text_of(value);
        } else if key == keys[1] {
            calls[at].2 = text_of(value);
        } else if key == keys[2] {
            calls[at].3 = arguments_of(Some(value));
        }
    }
    calls.sort_by_key(|c| c.0);
    calls
        .into_iter()
        .map(|(_, id, name, arguments)| Part::Call {
            id,
            name,
            arguments: match arguments {
                Value::Null => json!({}),
                a => a,
            },
        })
        .collect()
}

fn field<'a>(fields: &[(&str, &'a Value)], key: &str) -> Option<&'a Value> {
    fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// A flattened message: its text (or JSON content blocks, as OpenLLMetry
/// writes Anthropic's), its calls, and the result it carries.
fn flattened_message(
    fields: &[(&str, &Value)],
    content: &str,
    calls: Vec<Part>,
    result_id: &str,
) -> (String, Vec<Part>) {
    let role = field(fields, "role").map(text_of).unwrap_or_default();
    let text = field(fields, content).map(text_of).unwrap_or_default();
    let mut parts = Vec::new();
    let answers = field(fields, result_id).map(text_of);
    // Anthropic's content blocks, kept as JSON text.
    let blocks = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(blocks)) if blocks.iter().all(|b| b.get("type").is_some()) => Some(blocks),
        _ => None,
    };
    match (answers, blocks) {
        (Some(id), _) => parts.push(Part::Response {
            id,
            response: Value::String(text),
        }),
        (None, Some(blocks)) => parts.extend(parts_of(&blocks, &ANTHROPIC_BLOCKS)),
        (None, None) if !text.is_empty() => parts.push(Part::Text(text)),
        (None, None) => {}
    }
    parts.extend(calls);
    (role, parts)
}

/// OpenInference: `llm.input_messages.N.message.*`, and `input.value`.
fn openinference(span: &Span) -> Option<Exchange> {
    let read = |prefix: &str| -> Vec<Said> {
        flattened(span, prefix)
            .into_iter()
            .map(|(n, fields)| {
                let fields: Vec<(&str, &Value)> = fields
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.strip_prefix("message.")?, v)))
                    .collect();
                let calls = flattened_calls(
                    &fields,
                    "tool_calls.",
                    [
                        "tool_call.id",
                        "tool_call.function.name",
                        "tool_call.function.arguments",
                    ],
                );
                let (role, mut parts) =
                    flattened_message(&fields, "content", calls, "tool_call_id");
                if parts.is_empty() {
                    // Only `contents.K.message_content.text`.
                    let mut texts: Vec<(&str, &Value)> = fields
                        .iter()
                        .filter(|(k, _)| {
                            k.starts_with("contents.") && k.ends_with(".message_content.text")
                        })
                        .copied()
                        .collect();
                    texts.sort_by_key(|(k, _)| *k);
                    parts.extend(texts.into_iter().map(|(_, v)| Part::Text(text_of(v))));
                }
                Said {
                    role,
                    parts,
                    place: format!("{prefix}{n}"),
                }
            })
            .collect()
    };
    let input = read("llm.input_messages.");
    let body = (span.str("input.mime_type") == Some("application/json"))
        .then(|| json_attr(span, "input.value"))
        .flatten()
        .filter(|b| b.get("messages").is_some() || b.get("input").is_some());
    if input.is_empty() && body.is_none() {
        return None;
    }
    let tools = flattened(span, "llm.tools.")
        .into_iter()
        .filter_map(|(_, fields)| {
            let schema = field(&fields, "tool.json_schema")?;
            arguments_of(Some(schema))
                .as_object()
                .map(|o| Value::Object(o.clone()))
        })
        .collect();
    Some(Exchange {
        dialect: "llm.input_messages",
        system: Vec::new(),
        input,
        output: read("llm.output_messages."),
        tools,
        body,
    })
}

/// OpenLLMetry: `gen_ai.prompt.N.*` and `gen_ai.completion.N.*`.
fn openllmetry(span: &Span) -> Option<Exchange> {
    let read = |prefix: &str| -> Vec<Said> {
        flattened(span, prefix)
            .into_iter()
            .map(|(n, fields)| {
                let calls = flattened_calls(&fields, "tool_calls.", ["id", "name", "arguments"]);
                let (role, parts) = flattened_message(&fields, "content", calls, "tool_call_id");
                Said {
                    role,
                    parts,
                    place: format!("{prefix}{n}"),
                }
            })
            .collect()
    };
    let mut input = read("gen_ai.prompt.");
    if input.is_empty() {
        return None;
    }
    let mut system = Vec::new();
    input.retain(|m| match m.role.as_str() {
        "system" | "developer" => {
            system.extend(m.parts.iter().filter_map(|p| match p {
                Part::Text(t) => Some(t.clone()),
                _ => None,
            }));
            false
        }
        _ => true,
    });
    let tools = flattened(span, "llm.request.functions.")
        .into_iter()
        .map(|(_, fields)| {
            let s = |k: &str| field(&fields, k).map(text_of).unwrap_or_default();
            json!({"name": s("name"), "description": s("description"),
                   "parameters": arguments_of(field(&fields, "parameters"))})
        })
        .collect();
    Some(Exchange {
        dialect: "gen_ai.prompt",
        system,
        input,
        output: read("gen_ai.completion."),
        tools,
        body: None,
    })
}

/// Semantic conventions <= 1.36: one span event per message.
fn span_events(span: &Span) -> Option<Exchange> {
    let mut input = Vec::new();
    let mut output = Vec::new();
    let mut system = Vec::new();
    for (k, (name, attributes)) in span.events.iter().enumerate() {
        let role = match name.as_str() {
            "gen_ai.system.message" => "system",
            "gen_ai.user.message" => "user",
            "gen_ai.assistant.message" | "gen_ai.choice" => "assistant",
            "gen_ai.tool.message" => "tool",
            _ => continue,
        };
        // The event's body: `gen_ai.event.content` (JSON), or its fields
        // as attributes of the event.
        let body = attributes
            .get("gen_ai.event.content")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .unwrap_or_else(|| Value::Object(attributes.clone()));
        let body = body.get("message").cloned().unwrap_or(body);
        let mut parts = Vec::new();
        let content = body.get("content").map(text_of).unwrap_or_default();
        let calls = match body.get("tool_calls") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
            Some(v) => v.clone(),
            None => Value::Null,
        };
        if role == "tool" {
            parts.push(Part::Response {
                id: body.get("id").map(text_of).unwrap_or_default(),
                response: Value::String(content),
            });
        } else {
            if !content.is_empty() {
                parts.push(Part::Text(content));
            }
            for call in calls.as_array().into_iter().flatten() {
                parts.push(Part::Call {
                    id: call.get("id").map(text_of).unwrap_or_default(),
                    name: call
                        .pointer("/function/name")
                        .map(text_of)
                        .unwrap_or_default(),
                    arguments: arguments_of(call.pointer("/function/arguments")),
                });
            }
        }
        let said = Said {
            role: role.to_string(),
            parts,
            place: format!("events[{k}] {name}"),
        };
        match (name.as_str(), role) {
            ("gen_ai.choice", _) => output.push(said),
            (_, "system") => system.extend(said.parts.into_iter().filter_map(|p| match p {
                Part::Text(t) => Some(t),
                _ => None,
            })),
            _ => input.push(said),
        }
    }
    if input.is_empty() {
        return None;
    }
    Some(Exchange {
        dialect: "span events",
        system,
        input,
        output,
        tools: Vec::new(),
        body: None,
    })
}

/// The provider whose rules apply to a span.
fn provider_of(span: &Span) -> Option<Format> {
    let name = [
        "gen_ai.provider.name",
        "gen_ai.system",
        "llm.provider",
        "llm.system",
    ]
    .iter()
    .find_map(|k| span.str(k))?
    .to_ascii_lowercase();
    Some(match name.as_str() {
        n if n.contains("anthropic") => Format::Anthropic,
        n if n.contains("bedrock") || n == "aws" => Format::Bedrock,
        n if n.contains("gemini")
            || n.contains("vertex")
            || n == "google"
            || n.starts_with("gcp") =>
        {
            Format::Gemini
        }
        // OpenAI, Azure OpenAI and every provider that speaks its Chat
        // Completions (Mistral, Groq, DeepSeek, xAI, …).
        _ => Format::Openai,
    })
}

/// A provider message being written, and where each of its blocks came
/// from (in the order its reader reads them).
struct Written {
    message: Value,
    place: String,
    blocks: Vec<String>,
}

fn response_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The neutral messages as an Anthropic Messages body's `messages`: a
/// turn's results in one user message, as Anthropic wants them.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the messages are the ones built here, content arrays"
)]
fn anthropic_messages(said: &[Said]) -> Vec<Written> {
    let mut out: Vec<Written> = Vec::new();
    for m in said {
        let role = match m.role.as_str() {
            "assistant" | "model" => "assistant",
            _ => "user",
        };
        let blocks: Vec<Value> = m
            .parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => json!({"type": "text", "text": t}),
                Part::Call {
                    id,
                    name,
                    arguments,
                } => json!({"type": "tool_use", "id": id, "name": name, "input": arguments}),
                Part::Response { id, response } => json!({"type": "tool_result",
                    "tool_use_id": id, "content": response_text(response)}),
            })
            .collect();
        let places = (0..blocks.len())
            .map(|j| format!("{}.parts[{j}]", m.place))
            .collect::<Vec<_>>();
        // A `tool` message after results: one user turn.
        let results_only = m.parts.iter().all(|p| matches!(p, Part::Response { .. }));
        if let Some(last) = out.last_mut()
            && m.role == "tool"
            && results_only
            && last.message["role"] == "user"
        {
            last.message["content"]
                .as_array_mut()
                .expect("written as an array")
                .extend(blocks);
            last.blocks.extend(places);
            continue;
        }
        out.push(Written {
            message: json!({"role": role, "content": blocks}),
            place: m.place.clone(),
            blocks: places,
        });
    }
    out
}

/// Chat Completions: calls in `tool_calls`, one `tool` message per result.
fn chat_messages(said: &[Said]) -> Vec<Written> {
    let mut out = Vec::new();
    for m in said {
        let texts: Vec<&str> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        for (j, p) in m.parts.iter().enumerate() {
            if let Part::Response { id, response } = p {
                out.push(Written {
                    message: json!({"role": "tool", "tool_call_id": id,
                        "content": response_text(response)}),
                    place: format!("{}.parts[{j}]", m.place),
                    blocks: vec![format!("{}.parts[{j}]", m.place)],
                });
            }
        }
        if m.role == "tool" && texts.is_empty() {
            continue;
        }
        let calls: Vec<(usize, Value)> = m
            .parts
            .iter()
            .enumerate()
            .filter_map(|(j, p)| match p {
                Part::Call {
                    id,
                    name,
                    arguments,
                } => Some((j, json!({"id": id, "type": "function", "function": {
                    "name": name,
                    "arguments": match arguments { Value::String(s) => s.clone(), a => a.to_string() }}}))),
                _ => None,
            })
            .collect();
        let role = match m.role.as_str() {
            "model" => "assistant",
            "tool" => "user",
            r => r,
        };
        let mut message = json!({"role": role, "content": texts.join("")});
        let mut blocks: Vec<String> = (!texts.is_empty())
            .then(|| m.place.clone())
            .into_iter()
            .collect();
        if !calls.is_empty() {
            if texts.is_empty() {
                message["content"] = Value::Null;
            }
            blocks.extend(calls.iter().map(|(j, _)| format!("{}.parts[{j}]", m.place)));
            message["tool_calls"] = Value::Array(calls.into_iter().map(|(_, c)| c).collect());
        }
        out.push(Written {
            message,
            place: m.place.clone(),
            blocks,
        });
    }
    out
}

/// Gemini: `functionCall` / `functionResponse` parts, a response named
/// by the call it answers.
fn gemini_messages(said: &[Said]) -> Vec<Written> {
    let mut names: HashMap<String, String> = HashMap::new();
    said.iter()
        .map(|m| {
            let parts: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"text": t}),
                    Part::Call {
                        id,
                        name,
                        arguments,
                    } => {
                        names.insert(id.clone(), name.clone());
                        let mut call = json!({"name": name, "args": arguments});
                        if !id.is_empty() {
                            call["id"] = json!(id);
                        }
                        json!({"functionCall": call})
                    }
                    Part::Response { id, response } => {
                        let mut answer = json!({"name": names.get(id).cloned().unwrap_or_default(),
                            "response": match response { Value::Object(_) => response.clone(),
                                r => json!({"result": response_text(r)}) }});
                        if !id.is_empty() {
                            answer["id"] = json!(id);
                        }
                        json!({"functionResponse": answer})
                    }
                })
                .collect();
            let role = match m.role.as_str() {
                "assistant" | "model" => "model",
                _ => "user",
            };
            Written {
                blocks: (0..parts.len())
                    .map(|j| format!("{}.parts[{j}]", m.place))
                    .collect(),
                message: json!({"role": role, "parts": parts}),
                place: m.place.clone(),
            }
        })
        .collect()
}

/// Bedrock Converse: `toolUse` / `toolResult` blocks.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the messages are the ones built here, content arrays"
)]
fn bedrock_messages(said: &[Said]) -> Vec<Written> {
    let mut out = anthropic_messages(said);
    for w in &mut out {
        let blocks = w.message["content"].as_array_mut().expect("an array");
        for b in blocks.iter_mut() {
            *b = match b["type"].as_str() {
                Some("tool_use") => json!({"toolUse": {"toolUseId": b["id"],
                    "name": b["name"], "input": b["input"]}}),
                Some("tool_result") => json!({"toolResult": {"toolUseId": b["tool_use_id"],
                    "content": [{"text": b["content"]}]}}),
                _ => json!({"text": b["text"]}),
            };
        }
    }
    out
}

/// The exchange as the provider's request body (the output appended when
/// `replies`), and where each message and block came from.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the body is the one built here"
)]
fn body_of(format: Format, exchange: &Exchange, replies: bool) -> (Value, Vec<Written>) {
    let said: Vec<Said> = match replies {
        true => exchange
            .input
            .iter()
            .chain(&exchange.output)
            .cloned()
            .collect(),
        false => exchange.input.clone(),
    };
    let system = exchange.system.join("\n");
    let written = match format {
        Format::Anthropic => anthropic_messages(&said),
        Format::Gemini => gemini_messages(&said),
        Format::Bedrock => bedrock_messages(&said),
        Format::Openai | Format::Responses => chat_messages(&said),
    };
    let messages: Vec<Value> = written.iter().map(|w| w.message.clone()).collect();
    let mut body = match format {
        Format::Gemini => json!({"contents": messages}),
        _ => json!({"messages": messages}),
    };
    if !system.is_empty() {
        match format {
            Format::Anthropic => body["system"] = json!(system),
            Format::Gemini => body["systemInstruction"] = json!({"parts": [{"text": system}]}),
            Format::Bedrock => body["system"] = json!([{"text": system}]),
            _ => body["messages"]
                .as_array_mut()
                .expect("an array")
                .insert(0, json!({"role": "system", "content": system})),
        }
    }
    if !exchange.tools.is_empty() {
        body["tools"] = tools_for(format, &exchange.tools);
    }
    if format == Format::Bedrock && !exchange.tools.is_empty() {
        let specs = body["tools"].take();
        body["toolConfig"] = json!({"tools": specs});
    }
    (body, written)
}

/// Tool definitions as recorded (any provider's shape) in `format`'s.
fn tools_for(format: Format, tools: &[Value]) -> Value {
    let neutral = tools.iter().map(|t| {
        let f = t.get("function").unwrap_or(t);
        let name = f.get("name").map(text_of).unwrap_or_default();
        let schema = f
            .get("parameters")
            .or_else(|| f.get("input_schema"))
            .or_else(|| f.get("inputSchema"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        (name, schema)
    });
    Value::Array(
        neutral
            .map(|(name, schema)| match format {
                Format::Anthropic => json!({"name": name, "input_schema": schema}),
                Format::Gemini => {
                    json!({"functionDeclarations": [{"name": name, "parameters": schema}]})
                }
                Format::Bedrock => {
                    json!({"toolSpec": {"name": name, "inputSchema": {"json": schema}}})
                }
                _ => json!({"type": "function", "function": {"name": name, "parameters": schema}}),
            })
            .collect(),
    )
}

/// What the provider answered a span's request: the status, and its
/// words when it refused. A span's own `http.response.status_code`, a
/// child's (the SDK's own span under the instrumentation's), or the
/// status the SDK's error names (`Error code: 400 - …`).
fn answer_of(span: &Span, children: &[&Span], replied: bool) -> Option<(u16, String)> {
    // loopdbg's own export of a run (a stub model answered) or of a
    // replay: no provider's answer is on record.
    if matches!(span.str("loopdbg.replied_by"), Some("stub" | "replay")) {
        return None;
    }
    let recorded = std::iter::once(span)
        .chain(children.iter().copied())
        .find_map(|s| s.int("http.response.status_code"))
        .and_then(|s| u16::try_from(s).ok());
    let said = std::iter::once(span.status_message.as_str())
        .chain(span.events.iter().filter_map(|(name, a)| {
            (name == "exception")
                .then(|| a.get("exception.message").and_then(Value::as_str))
                .flatten()
        }))
        .find(|m| m.contains("Error code: "));
    let named = said.and_then(|m| {
        let at = m.find("Error code: ")? + "Error code: ".len();
        // Three digits, whatever follows them (`4€€` is not a status).
        let digits = m.get(at..)?.get(..3)?;
        digits.parse::<u16>().ok()
    });
    // OK, or unset with the model's reply recorded (the official
    // instrumentation leaves a success unset).
    let status = recorded.or(named).or(match span.status {
        1 => Some(200),
        0 if replied => Some(200),
        _ => None,
    })?;
    let text = match (200..300).contains(&status) {
        true => String::new(),
        false => said.map_or_else(|| span.status_message.clone(), provider_words),
    };
    Some((status, text))
}

/// The provider's own words out of an SDK's error text: `Error code: 400
/// - {…'message': '…'…}` (Python's repr of the error body) or `- words`.
fn provider_words(said: &str) -> String {
    let rest = said
        .split_once(" - ")
        .map_or(said, |(_, r)| r)
        .trim()
        .to_string();
    if let Ok(v) = serde_json::from_str::<Value>(&rest)
        && let Some(m) = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
    {
        return m.to_string();
    }
    for quote in ['\'', '"'] {
        let key = format!("{quote}message{quote}: {quote}");
        if let Some(at) = rest.rfind(&key) {
            let words = &rest[at + key.len()..];
            if let Some(end) = words.find(quote) {
                return words[..end].to_string();
            }
        }
    }
    rest
}

/// What a trace file holds: a conversation per LLM span (each request as
/// it was sent, in the order its trace's spans started), and the spans
/// that could not be read as one.
#[derive(Debug, Default)]
pub struct Traces {
    /// One per LLM span read.
    pub conversations: Vec<Conversation>,
    /// LLM spans whose messages could not be read, located.
    pub errors: Vec<ReadError>,
}

/// The LLM spans of `spans` as conversations; with `replies`, each
/// answered request is followed by the reply the span recorded, as a
/// replay steps through it.
pub fn read_traces(spans: &[Span], replies: bool) -> Traces {
    let mut traces = Traces::default();
    let mut children: HashMap<&str, Vec<&Span>> = HashMap::new();
    for s in spans {
        children.entry(s.parent_id.as_str()).or_default().push(s);
    }
    // Each trace's tool runs, by call id.
    let mut ran: HashMap<(&str, &str), &Span> = HashMap::new();
    for s in spans {
        if let Some(id) = s.tool_call_id() {
            ran.insert((s.trace_id.as_str(), id), s);
        }
    }
    let traced_tools: std::collections::HashSet<&str> =
        ran.keys().map(|(trace, _)| *trace).collect();
    for span in spans {
        let Some(exchange) = conventions(span)
            .or_else(|| openinference(span))
            .or_else(|| openllmetry(span))
            .or_else(|| span_events(span))
        else {
            continue;
        };
        let kids = children
            .get(span.span_id.as_str())
            .cloned()
            .unwrap_or_default();
        let answer = answer_of(span, &kids, !exchange.output.is_empty());
        match conversation_of(span, &exchange, answer.as_ref(), replies) {
            Ok(mut conv) => {
                if traced_tools.contains(span.trace_id.as_str()) {
                    note_tool_runs(&mut conv, span, &ran);
                }
                traces.conversations.push(conv);
            }
            Err(e) => traces.errors.push(e),
        }
    }
    traces
}

/// One LLM span as a conversation, its places the span's attributes.
fn conversation_of(
    span: &Span,
    exchange: &Exchange,
    answer: Option<&(u16, String)>,
    replies: bool,
) -> Result<Conversation, ReadError> {
    let located = |e: ReadError, attribute: &str| ReadError {
        line: span.line,
        path: JsonPath::root(),
        message: format!(
            "trace {} span {} {attribute}: {}",
            span.trace_id, span.span_id, e.message
        ),
    };
    // The reply is appended unless the provider refused the request (a
    // span with no status on record, as loopdbg's own export of a run
    // writes, still holds its reply).
    let answered = answer.is_none_or(|(s, _)| (200..300).contains(s));
    let mut conv = match &exchange.body {
        // The request body itself (OpenInference's `input.value`).
        Some(body) if exchange.input.is_empty() || detect(body).is_some() => {
            let source = detect(body).unwrap_or(Source::Provider(Format::Openai));
            let mut conv =
                super::read_owned(body.clone(), source).map_err(|e| located(e, "input.value"))?;
            let place = |s: &mut BlockSource| *s = span.place(&format!("input.value {}", s.path));
            conv.message_sources.iter_mut().for_each(place);
            conv.block_sources.iter_mut().flatten().for_each(place);
            if replies && answered {
                append_output(&mut conv, span, exchange, source.provider())?;
            }
            conv
        }
        _ => {
            let format = provider_of(span).unwrap_or(Format::Openai);
            let (body, written) = body_of(format, exchange, replies && answered);
            let mut conv = super::read_owned(body, Source::Provider(format))
                .map_err(|e| located(e, exchange.dialect))?;
            relocate(&mut conv, span, &written);
            conv
        }
    };
    conv.label = Some(format!(
        "trace {} span {} ({}{}): {} → {}",
        span.trace_id,
        span.span_id,
        exchange.dialect,
        span.service
            .as_deref()
            .map_or(String::new(), |s| format!(", {s}")),
        span.name,
        answer.map_or("no status".to_string(), |(s, _)| s.to_string())
    ));
    if conv.model.is_none() {
        conv.model = span
            .str("gen_ai.request.model")
            .or_else(|| span.str("llm.model_name"))
            .map(str::to_string);
    }
    if let Some((status, text)) = answer {
        let source = span.place("status");
        if !(200..300).contains(status) {
            conv.refusals.push(Refusal {
                at: conv.messages.len(),
                status: Some(*status),
                text: text.clone(),
                source: source.clone(),
            });
        }
        conv.answer = Some(Answer {
            status: *status,
            text: text.clone(),
            source,
            kept_in: super::Keeper::Trace,
        });
    }
    Ok(conv)
}

/// A recorded body's reply, from the span's output messages.
fn append_output(
    conv: &mut Conversation,
    span: &Span,
    exchange: &Exchange,
    format: Format,
) -> Result<(), ReadError> {
    if exchange.output.is_empty() {
        return Ok(());
    }
    let only_output = Exchange {
        dialect: exchange.dialect,
        system: Vec::new(),
        input: exchange.output.clone(),
        output: Vec::new(),
        tools: Vec::new(),
        body: None,
    };
    let (body, written) = body_of(format, &only_output, false);
    let Ok(mut reply) = super::read_owned(body, Source::Provider(format)) else {
        return Ok(());
    };
    relocate(&mut reply, span, &written);
    for ((m, s), b) in reply
        .messages
        .into_iter()
        .zip(reply.message_sources)
        .zip(reply.block_sources)
    {
        conv.push(m, s, b);
    }
    Ok(())
}

/// The read paths (`messages[2].content[0]`) become the span's
/// attributes (`trace … span … gen_ai.input.messages[2].parts[0]`).
fn relocate(conv: &mut Conversation, span: &Span, written: &[Written]) {
    // A system message written in front of Chat's messages.
    let offset = conv.messages.len().saturating_sub(written.len());
    for (i, (source, blocks)) in conv
        .message_sources
        .iter_mut()
        .zip(conv.block_sources.iter_mut())
        .enumerate()
    {
        let Some(w) = i.checked_sub(offset).and_then(|i| written.get(i)) else {
            *source = span.place("system");
            blocks.iter_mut().for_each(|b| *b = span.place("system"));
            continue;
        };
        *source = span.place(&w.place);
        let fits = blocks.len() == w.blocks.len();
        for (j, b) in blocks.iter_mut().enumerate() {
            *b = span.place(match fits {
                true => &w.blocks[j],
                false => &w.place,
            });
        }
    }
}

/// Notes on what the trace's tool runs say of this request's calls: a
/// call the model made that no `execute_tool` span ran, and a call that
/// ran whose result the request does not carry.
fn note_tool_runs(conv: &mut Conversation, span: &Span, ran: &HashMap<(&str, &str), &Span>) {
    let answered: std::collections::HashSet<String> = conv
        .messages
        .iter()
        .flat_map(|m| super::tool_results(m).map(|(_, id)| id.to_string()))
        .collect();
    let mut notices = Vec::new();
    for (i, m) in conv.messages.iter().enumerate() {
        for (j, id, name) in super::tool_uses(m) {
            let source = conv.block_sources[i].get(j).cloned().unwrap_or_default();
            match (ran.get(&(span.trace_id.as_str(), id)), answered.contains(id)) {
                (None, _) => notices.push(Notice {
                    kind: Kind::ToolNeverRan,
                    source,
                    ids: vec![id.to_string()],
                    message: format!(
                        "no `execute_tool` span in trace {} ran call {id} ({name}), though the trace has tool spans: did the loop run only some of the turn's calls?",
                        span.trace_id
                    ),
                }),
                (Some(run), false) if i + 1 < conv.messages.len() => notices.push(Notice {
                    kind: Kind::ToolRanResultDropped,
                    source,
                    ids: vec![id.to_string()],
                    message: format!(
                        "call {id} ({name}) ran (span {} `{}`), but this request does not carry its result: the loop dropped it",
                        run.span_id, run.name
                    ),
                }),
                _ => {}
            }
        }
    }
    conv.notices.extend(notices);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls no result in the conversation answers (the judge's rules
    /// are `loopdbg-judge`'s; this is only what the reader gave).
    fn unanswered(conv: &Conversation) -> Vec<String> {
        let answered: Vec<&str> = conv
            .messages
            .iter()
            .flat_map(|m| crate::tool_results(m).map(|(_, id)| id))
            .collect();
        conv.messages
            .iter()
            .flat_map(|m| crate::tool_uses(m).map(|(_, id, _)| id))
            .filter(|id| !answered.contains(id))
            .map(str::to_string)
            .collect()
    }

    fn span(attributes: Value) -> Span {
        Span {
            trace_id: "t".repeat(32),
            span_id: "s".repeat(16),
            parent_id: String::new(),
            name: "chat".into(),
            start: 1,
            end: 2,
            status: 0,
            status_message: String::new(),
            attributes: attributes.as_object().unwrap().clone(),
            events: Vec::new(),
            line: Some(3),
            service: None,
        }
    }

    /// A protobuf field `tag` of `body`, length-delimited.
    fn field(tag: u32, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(body.len() as u64, &mut out);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn an_export_of_millions_of_empty_spans_is_refused_before_it_is_decoded() {
        let spans = 3_000_000;
        let scope = [0x12u8, 0x00].repeat(spans);
        let export = field(1, &field(2, &scope));
        let refused = parse_protobuf(&export).unwrap_err();
        assert!(
            refused.contains("3000002 spans, events, links and attributes"),
            "{refused}"
        );
        let json = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            vec!["{}"; spans].join(",")
        );
        let refused = parse_json(&json).unwrap_err().to_string();
        assert!(refused.contains("3000002 spans"), "{refused}");
        // One export of many: the allowance is the file's, not the line's.
        let line = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            vec!["{}"; 700_000].join(",")
        );
        let mut budget = Budget::default();
        assert!(parse_json_within(&line, &mut budget).is_ok());
        assert!(parse_json_within(&line, &mut budget).is_err());
    }

    #[test]
    fn real_spans_are_counted_and_read() {
        let span = |n: u8| {
            let mut body = field(1, &[n; 16]);
            body.extend(field(2, &[n; 8]));
            body.extend(field(9, &field(1, b"gen_ai.request.model")));
            body.extend(field(11, &field(3, &field(1, b"gen_ai.event.content"))));
            field(2, &body)
        };
        let scope: Vec<u8> = (0..3).flat_map(span).collect();
        let export = field(1, &field(2, &scope));
        // Three spans, each with an attribute and an event with one.
        assert_eq!(tally::protobuf(&export), Ok(1 + 1 + 3 * 4));
        assert_eq!(
            parse_protobuf(&export).unwrap().resource_spans[0].scope_spans[0]
                .spans
                .len(),
            3
        );
    }

    #[test]
    fn a_status_message_of_any_characters_is_read_without_a_panic() {
        for message in [
            "Error code: 4€€",
            "Error code: €",
            "Error code: ",
            "Error code: 40",
            "x€",
        ] {
            let mut s = span(json!({}));
            s.status = 2;
            s.status_message = message.to_string();
            let _ = answer_of(&s, &[], false);
        }
        let mut s = span(json!({}));
        s.status = 2;
        s.status_message = "Error code: 429 - too many".into();
        assert_eq!(answer_of(&s, &[], false).map(|(code, _)| code), Some(429));
    }

    #[test]
    fn conventions_parts_become_the_providers_blocks() {
        let s = span(json!({
            "gen_ai.provider.name": "anthropic",
            "gen_ai.input.messages": json!([
                {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                {"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "toolu_1", "name": "w", "arguments": {}},
                    {"type": "tool_call", "id": "toolu_2", "name": "w", "arguments": {}}]},
                {"role": "user", "parts": [
                    {"type": "tool_call_response", "id": "toolu_1", "response": "18"}]}
            ]).to_string()}));
        let traces = read_traces(&[s], false);
        let conv = &traces.conversations[0];
        assert_eq!(conv.source, Source::Provider(Format::Anthropic));
        assert_eq!(conv.messages.len(), 3);
        assert_eq!(
            conv.block_sources[1][1].path.as_ref(),
            format!(
                "trace {} span {} gen_ai.input.messages[1].parts[1]",
                "t".repeat(32),
                "s".repeat(16)
            )
        );
        assert_eq!(conv.block_sources[1][1].line, Some(3));
    }

    #[test]
    fn a_text_file_opening_with_a_newline_is_not_protobuf() {
        assert!(!looks_like_protobuf(b"\n{\"messages\": []}\n"));
        assert!(!looks_like_protobuf(b"\n\n\xe4\xb8\xad\n"));
        assert!(looks_like_protobuf(
            b"\x0a\xd4\x4a\x0a\xca\x01\x0a\x22\x0a\x16telemetry"
        ));
    }

    #[test]
    fn chat_writes_one_tool_message_per_result() {
        let said = vec![Said {
            role: "tool".into(),
            parts: vec![
                Part::Response {
                    id: "a".into(),
                    response: json!("1"),
                },
                Part::Response {
                    id: "b".into(),
                    response: json!({"x": 1}),
                },
            ],
            place: "m[0]".into(),
        }];
        let written = chat_messages(&said);
        assert_eq!(written.len(), 2);
        assert_eq!(written[1].message["tool_call_id"], "b");
        assert_eq!(written[1].message["content"], "{\"x\":1}");
    }

    #[test]
    fn the_providers_words_come_out_of_the_sdks_error() {
        let python = "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1.'}}";
        assert_eq!(
            provider_words(python),
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1."
        );
        assert_eq!(
            provider_words(
                "Error code: 400 - The following tool_call_ids did not have response messages: call_f1"
            ),
            "The following tool_call_ids did not have response messages: call_f1"
        );
        let mut s = span(json!({}));
        s.status = 2;
        s.status_message = python.into();
        assert_eq!(answer_of(&s, &[], false).unwrap().0, 400);
    }

    #[test]
    fn openllmetry_legacy_attributes_are_read() {
        let s = span(json!({
            "gen_ai.system": "openai",
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "be brief",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "weather",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.tool_calls.0.id": "call_1",
            "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
            "gen_ai.prompt.2.tool_calls.0.arguments": "{\"city\": \"x\"}",
            "gen_ai.prompt.2.tool_calls.1.id": "call_2",
            "gen_ai.prompt.2.tool_calls.1.name": "get_weather",
            "gen_ai.prompt.2.tool_calls.1.arguments": "{}",
            "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "18",
            "gen_ai.prompt.3.tool_call_id": "call_1",
        }));
        let conv = &read_traces(&[s], false).conversations[0];
        assert_eq!(conv.source, Source::Provider(Format::Openai));
        assert_eq!(unanswered(conv), ["call_2"]);
    }

    #[test]
    fn span_events_of_the_older_conventions_are_read() {
        let mut s = span(json!({"gen_ai.system": "openai"}));
        s.events = vec![
            (
                "gen_ai.user.message".into(),
                json!({"content": "weather"}).as_object().unwrap().clone(),
            ),
            (
                "gen_ai.assistant.message".into(),
                json!({"tool_calls": json!([{"id": "call_1", "type": "function",
                    "function": {"name": "w", "arguments": "{}"}}]).to_string()})
                .as_object()
                .unwrap()
                .clone(),
            ),
            (
                "gen_ai.tool.message".into(),
                json!({"gen_ai.event.content": json!({"content": "18", "id": "call_1"}).to_string()})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        ];
        let conv = &read_traces(&[s], false).conversations[0];
        assert_eq!(conv.messages.len(), 3);
        assert!(unanswered(conv).is_empty());
    }
}
