//! loopdbg's runs, replays and proxied exchanges as OpenTelemetry spans,
//! in the GenAI semantic conventions (>= 1.37): one `chat` span per trip
//! with the operation, provider, model, usage and the input and output
//! messages (`gen_ai.input.messages` / `gen_ai.output.messages` as
//! `role` + `parts`), one `execute_tool` span per tool run carrying
//! `gen_ai.tool.call.id`, and loopdbg's findings as `loopdbg.finding`
//! span events (kind, ids, severity, the provider's words). What
//! [`loopdbg_read::otlp`] reads, so an export reads back into the same run.
//!
//! The messages are `opentelemetry-proto`'s; OTLP JSON is its serde
//! (hex ids, camelCase), protobuf its prost encoding. Nothing here reads a
//! clock or draws a random number: the caller gives the times, and ids
//! are hashed from a seed, so the same run exports the same spans.

use loopdbg_engine::message::{Block, Message, Role, Usage};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use serde_json::{Value, json};

use loopdbg_formats::provider::Format;
use loopdbg_judge::check::Finding;

/// The conventions' name for a provider (`gen_ai.provider.name`).
pub fn provider_name(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "anthropic",
        Format::Openai | Format::Responses => "openai",
        Format::Gemini => "gcp.gemini",
        Format::Bedrock => "aws.bedrock",
    }
}

/// One trip to the model.
#[derive(Debug, Clone)]
pub struct Trip<'a> {
    /// Whose rules the request was checked by.
    pub provider: Format,
    /// The model asked.
    pub model: &'a str,
    /// The system prompt, when there is one.
    pub system: Option<&'a str>,
    /// The history the request carried.
    pub input: &'a [Message],
    /// The tools the request declared (`name`, `description`,
    /// `parameters`).
    pub tools: &'a [Value],
    /// The reply, when one came.
    pub output: Option<&'a Message>,
    /// The tokens the trip took, when known.
    pub usage: Option<Usage>,
    /// What loopdbg found in the request.
    pub findings: &'a [Finding],
    /// The provider's HTTP status, when a provider answered (a stub
    /// model's reply has none).
    pub status: Option<u16>,
    /// What the provider said when it refused.
    pub error: Option<&'a str>,
    /// Who answered: `provider` (through the proxy), `stub` (a run's
    /// scripted model) or `replay` (a file's replies, read back).
    pub replied_by: &'static str,
    /// Nanoseconds since the epoch.
    pub start_ns: u64,
    /// Nanoseconds since the epoch.
    pub end_ns: u64,
}

/// One tool run.
#[derive(Debug, Clone)]
pub struct ToolRun<'a> {
    /// The call id it answers.
    pub id: &'a str,
    /// The tool.
    pub name: &'a str,
    /// Its arguments.
    pub arguments: &'a Value,
    /// What it returned (or the error text).
    pub result: &'a Value,
    /// True when it failed.
    pub is_error: bool,
    /// Nanoseconds since the epoch.
    pub start_ns: u64,
    /// Nanoseconds since the epoch.
    pub end_ns: u64,
}

/// One proxied exchange (a capture record, as `Exchange` serializes it)
/// as a trip span: the request as the agent built it, the reply it got,
/// the provider's status and words, the findings. Nothing when the
/// record holds no conversation (`GET /v1/models`).
pub fn add_exchange(
    builder: &mut TraceBuilder,
    record: &Value,
    findings: &[Finding],
    start_ns: u64,
    end_ns: u64,
) {
    use loopdbg_read::capture;
    if !capture::holds_conversation(record) {
        return;
    }
    let Some(format) = capture::provider_of(record) else {
        return;
    };
    let source = loopdbg_read::Source::Provider(format);
    let Ok(asked) = loopdbg_read::read_owned(capture::request_of(record.clone()), source) else {
        return;
    };
    let replied = loopdbg_read::read_owned(capture::conversation_of(record.clone()), source)
        .ok()
        .and_then(|c| c.messages.get(asked.messages.len()).cloned());
    let model = asked
        .model
        .clone()
        .or_else(|| capture::model_of(record))
        .unwrap_or_default();
    let status = record
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let said = capture::answer_of(record).map(|(_, text)| text);
    let tools: Vec<Value> = asked
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "parameters": t.schema}))
        .collect();
    builder.trip(&Trip {
        provider: format,
        model: &model,
        system: asked.system.as_deref(),
        input: &asked.messages,
        tools: &tools,
        output: replied.as_ref(),
        usage: capture::usage_of(record).map(|(u, _)| u),
        findings,
        status,
        error: said.as_deref().filter(|t| !t.is_empty()),
        replied_by: "provider",
        start_ns,
        end_ns,
    });
}

/// 64-bit FNV-1a: ids from a seed, the same for the same run.
fn fnv(seed: &[u8], salt: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt.wrapping_mul(0x1000_0000_01b3);
    for b in seed {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x1000_0000_01b3);
    }
    h | 1
}

/// The spans of one trace (a run, a replayed conversation, one agent's
/// exchanges through the proxy), under one root span.
#[derive(Debug, Clone)]
pub struct TraceBuilder {
    trace_id: Vec<u8>,
    root_id: Vec<u8>,
    seed: Vec<u8>,
    next: u64,
    spans: Vec<Span>,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn string(key: &str, value: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.into()))
}

fn int(key: &str, value: u64) -> KeyValue {
    kv(
        key,
        any_value::Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

fn strings(key: &str, values: &[String]) -> KeyValue {
    kv(
        key,
        any_value::Value::ArrayValue(ArrayValue {
            values: values
                .iter()
                .map(|v| AnyValue {
                    value: Some(any_value::Value::StringValue(v.clone())),
                })
                .collect(),
        }),
    )
}

/// Messages as the conventions write them: `role` + `parts`.
pub fn messages_json(messages: &[Message]) -> Value {
    Value::Array(
        messages
            .iter()
            .map(|m| {
                let parts: Vec<Value> = m
                    .content
                    .iter()
                    .map(|b| match b {
                        Block::Text { text } => json!({"type": "text", "content": &**text}),
                        Block::ToolUse { id, name, input } => json!({"type": "tool_call",
                            "id": &**id, "name": &**name, "arguments": &**input}),
                        Block::ToolResult {
                            tool_use_id,
                            content,
                            ..
                        } => json!({"type": "tool_call_response", "id": &**tool_use_id,
                            "response": &**content}),
                    })
                    .collect();
                let mut out = json!({"role": m.role.as_str(), "parts": parts});
                if m.role == Role::Assistant
                    && let Some(f) = m.finish_reason
                {
                    out["finish_reason"] = json!(f.as_str());
                }
                out
            })
            .collect(),
    )
}

impl TraceBuilder {
    /// A trace whose ids are hashed from `seed` (the file, the session).
    pub fn new(seed: &str) -> TraceBuilder {
        let seed = seed.as_bytes().to_vec();
        let mut trace_id = fnv(&seed, 1).to_be_bytes().to_vec();
        trace_id.extend_from_slice(&fnv(&seed, 2).to_be_bytes());
        TraceBuilder {
            trace_id,
            root_id: fnv(&seed, 3).to_be_bytes().to_vec(),
            seed,
            next: 4,
            spans: Vec::new(),
        }
    }

    /// A trace whose spans are sent as they end (the proxy's): each is a
    /// root of its own, since no span above them is ever closed.
    pub fn live(seed: &str) -> TraceBuilder {
        TraceBuilder {
            root_id: Vec::new(),
            ..TraceBuilder::new(seed)
        }
    }

    /// Adds `span` to this trace, under the root, with an id of its own.
    fn push(&mut self, span: Span) {
        self.next += 1;
        self.spans.push(Span {
            trace_id: self.trace_id.clone(),
            span_id: fnv(&self.seed, self.next).to_be_bytes().to_vec(),
            parent_span_id: self.root_id.clone(),
            ..span
        });
    }

    /// The trace's id, hex.
    pub fn trace_id_hex(&self) -> String {
        self.trace_id.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A trip span, under the root.
    pub fn trip(&mut self, trip: &Trip) {
        let mut attributes = vec![
            string("gen_ai.operation.name", "chat"),
            string("gen_ai.provider.name", provider_name(trip.provider)),
            string("gen_ai.request.model", trip.model),
            string(
                "gen_ai.input.messages",
                messages_json(trip.input).to_string(),
            ),
        ];
        if !trip.tools.is_empty() {
            attributes.push(string(
                "gen_ai.tool.definitions",
                Value::Array(trip.tools.to_vec()).to_string(),
            ));
        }
        if let Some(system) = trip.system {
            attributes.push(string(
                "gen_ai.system_instructions",
                json!([{"type": "text", "content": system}]).to_string(),
            ));
        }
        if let Some(out) = trip.output {
            attributes.push(string(
                "gen_ai.output.messages",
                messages_json(std::slice::from_ref(out)).to_string(),
            ));
            if let Some(f) = out.finish_reason {
                attributes.push(strings(
                    "gen_ai.response.finish_reasons",
                    &[f.as_str().to_string()],
                ));
            }
        }
        if let Some(u) = trip.usage {
            attributes.push(int("gen_ai.usage.input_tokens", u.prompt()));
            attributes.push(int("gen_ai.usage.output_tokens", u.output));
            if u.cache_read > 0 {
                attributes.push(int("gen_ai.usage.cache_read.input_tokens", u.cache_read));
            }
        }
        let status = match trip.status {
            Some(s) => {
                attributes.push(int("http.response.status_code", u64::from(s)));
                if (200..300).contains(&s) {
                    Status {
                        code: 1,
                        ..Default::default()
                    }
                } else {
                    attributes.push(string("error.type", s.to_string()));
                    Status {
                        code: 2,
                        message: trip.error.unwrap_or_default().to_string(),
                    }
                }
            }
            None => Status::default(),
        };
        attributes.push(string("loopdbg.replied_by", trip.replied_by));
        let events = trip
            .findings
            .iter()
            .map(|f| span::Event {
                time_unix_nano: trip.start_ns,
                name: "loopdbg.finding".into(),
                attributes: vec![
                    string("loopdbg.finding.kind", f.kind.as_str()),
                    strings("loopdbg.finding.ids", &f.ids),
                    string("loopdbg.finding.severity", f.severity.as_str()),
                    kv(
                        "loopdbg.finding.rejected_by_provider",
                        any_value::Value::BoolValue(f.rejected_by_provider()),
                    ),
                    string("loopdbg.finding.message", f.message.clone()),
                    string("loopdbg.finding.path", f.path.clone()),
                ],
                dropped_attributes_count: 0,
            })
            .collect();
        self.push(Span {
            name: format!("chat {}", trip.model),
            kind: span::SpanKind::Client as i32,
            start_time_unix_nano: trip.start_ns,
            end_time_unix_nano: trip.end_ns,
            attributes,
            events,
            status: Some(status),
            ..Default::default()
        });
    }

    /// A tool run, under the root.
    pub fn tool(&mut self, run: &ToolRun) {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        self.push(Span {
            name: format!("execute_tool {}", run.name),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: run.start_ns,
            end_time_unix_nano: run.end_ns,
            attributes: vec![
                string("gen_ai.operation.name", "execute_tool"),
                string("gen_ai.tool.name", run.name),
                string("gen_ai.tool.call.id", run.id),
                string("gen_ai.tool.call.arguments", text(run.arguments)),
                string("gen_ai.tool.call.result", text(run.result)),
            ],
            status: Some(match run.is_error {
                true => Status {
                    code: 2,
                    message: text(run.result),
                },
                false => Status::default(),
            }),
            ..Default::default()
        });
    }

    /// How many spans were added (the root not counted).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when no span was added.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The spans added so far as an export, under a root span named
    /// `invoke_agent NAME` from the first span's start to the last's end
    /// (`root` false: the spans alone, for a live export whose root is
    /// never closed).
    pub fn export(&mut self, name: &str, root: bool) -> ExportTraceServiceRequest {
        let mut spans = std::mem::take(&mut self.spans);
        if root && !spans.is_empty() {
            let start = spans.iter().map(|s| s.start_time_unix_nano).min();
            let end = spans.iter().map(|s| s.end_time_unix_nano).max();
            spans.insert(
                0,
                Span {
                    trace_id: self.trace_id.clone(),
                    span_id: self.root_id.clone(),
                    name: format!("invoke_agent {name}"),
                    kind: span::SpanKind::Internal as i32,
                    start_time_unix_nano: start.unwrap_or_default(),
                    end_time_unix_nano: end.unwrap_or_default(),
                    attributes: vec![
                        string("gen_ai.operation.name", "invoke_agent"),
                        string("gen_ai.agent.name", name),
                    ],
                    ..Default::default()
                },
            );
        }
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![string("service.name", "loopdbg")],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "loopdbg".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }
}

/// An export as OTLP JSON (one line).
pub fn to_json(export: &ExportTraceServiceRequest) -> String {
    serde_json::to_string(export).unwrap_or_default()
}

/// An export as OTLP protobuf.
pub fn to_protobuf(export: &ExportTraceServiceRequest) -> Vec<u8> {
    use prost::Message as _;
    export.encode_to_vec()
}

/// A run (or a replay, `replayed`) as one OTLP JSON export on one line,
/// its times from `base_ns`, credential-shaped strings masked as in a
/// capture; the model is the first reply's, else `format`'s default.
pub fn run_json(
    session: &loopdbg_engine::Session,
    trace: &loopdbg_engine::Trace,
    format: Format,
    origin: &str,
    base_ns: u64,
    replayed: bool,
) -> String {
    let replied_by = match replayed {
        true => "replay",
        false => "stub",
    };
    let model = trace
        .rounds
        .iter()
        .find_map(|r| r.reply.model.as_deref())
        .unwrap_or(loopdbg_formats::provider::default_model(format));
    let seed = format!("{origin}@{base_ns}");
    let export = of_run(session, trace, format, model, base_ns, &seed, replied_by);
    loopdbg_formats::secrets::mask_shapes(&to_json(&export)).into_owned() + "\n"
}

/// A run (or a replayed conversation) as one trace: a trip span per
/// round, its request checked as `format`'s body (`check`'s findings as
/// events), and a tool span per call that ran. Times are the run's
/// virtual time from `base_ns`: a trip takes a millisecond, a tool call
/// what its plan said.
pub fn of_run(
    session: &loopdbg_engine::Session,
    trace: &loopdbg_engine::Trace,
    format: Format,
    model: &str,
    base_ns: u64,
    seed: &str,
    replied_by: &'static str,
) -> ExportTraceServiceRequest {
    const MS: u64 = 1_000_000;
    let mut builder = TraceBuilder::new(seed);
    let mut now = base_ns;
    let system = session.system.as_deref();
    let tools: Vec<Value> = session
        .tools
        .iter()
        .map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
            "parameters": t.parameters})
        })
        .collect();
    // Every request the loop sent, the last one too when the stub had no
    // reply for it (no round was recorded for that).
    let asked = trace
        .steps
        .iter()
        .filter(|s| s.phase == loopdbg_engine::trace::Phase::Request);
    for step in asked {
        let history = &trace.messages[..step.history_len];
        let round = trace.round(step.round);
        let body = loopdbg_formats::provider::request_body(format, session, history, model);
        let findings = loopdbg_read::read_owned(body, loopdbg_read::Source::Provider(format))
            .map(|conv| loopdbg_judge::check::check(&conv))
            .unwrap_or_default();
        let reply = round
            .and_then(|r| r.reply_message)
            .map(|i| &trace.messages[i]);
        builder.trip(&Trip {
            provider: format,
            model,
            system,
            input: history,
            tools: &tools,
            output: reply,
            usage: round.and_then(|r| r.reply.usage),
            findings: &findings,
            status: None,
            error: None,
            replied_by,
            start_ns: now,
            end_ns: now + MS,
        });
        now += MS;
        let mut longest = 0;
        let ran = round
            .into_iter()
            .flat_map(|r| &r.executions)
            .filter(|e| e.outcome.ran);
        for run in ran {
            let ends = run.ended_ms.max(1) * MS;
            longest = longest.max(ends);
            builder.tool(&ToolRun {
                id: &run.id,
                name: &run.name,
                arguments: &run.args,
                result: &run.outcome.content,
                is_error: run.outcome.is_error,
                start_ns: now,
                end_ns: now + ends,
            });
        }
        now += longest;
    }
    let name = match session.title.as_str() {
        "" => seed,
        title => title,
    };
    builder.export(name, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_exports_and_reads_back_with_the_same_findings() {
        let text = include_str!("../../../sessions/weather_fx.json");
        let session = loopdbg_engine::Session::parse("weather_fx.json", text).unwrap();
        let strategy = loopdbg_engine::Strategy::for_session(&session);
        let first = loopdbg_engine::Strategy {
            extract: loopdbg_engine::strategy::Extract::First,
            ..strategy.clone()
        };
        for strategy in [strategy, first] {
            let trace = loopdbg_engine::run(&session, &strategy);
            let export = of_run(
                &session,
                &trace,
                Format::Anthropic,
                "m",
                1 << 60,
                "w",
                "stub",
            );
            let again = of_run(
                &session,
                &trace,
                Format::Anthropic,
                "m",
                1 << 60,
                "w",
                "stub",
            );
            assert_eq!(to_json(&export), to_json(&again), "deterministic");
            // Through OTLP JSON and back.
            let parsed = loopdbg_read::otlp::parse_json(&to_json(&export)).unwrap();
            let spans = loopdbg_read::otlp::spans_of(vec![(None, parsed)]);
            let read = loopdbg_read::otlp::read_traces(&spans, false);
            let requests = trace
                .steps
                .iter()
                .filter(|s| s.phase == loopdbg_engine::trace::Phase::Request)
                .count();
            assert_eq!(read.conversations.len(), requests);
            let mut exported = Vec::new();
            for s in &spans {
                for (name, a) in &s.events {
                    if name == "loopdbg.finding" {
                        exported.push(json!([
                            a["loopdbg.finding.kind"],
                            a["loopdbg.finding.severity"]
                        ]));
                    }
                }
            }
            let found: Vec<Value> = read
                .conversations
                .iter()
                .flat_map(loopdbg_judge::check::check)
                .filter(|f| {
                    !matches!(
                        f.kind,
                        loopdbg_read::finding::Kind::ToolNeverRan
                            | loopdbg_read::finding::Kind::ToolRanResultDropped
                    )
                })
                .map(|f| json!([f.kind.as_str(), f.severity.as_str()]))
                .collect();
            assert_eq!(found, exported);
            if strategy.extract == loopdbg_engine::strategy::Extract::First {
                assert!(
                    exported.contains(&json!(["unanswered_call", "400"])),
                    "{exported:?}"
                );
            }
            assert!(read.errors.is_empty());
        }
    }
}
