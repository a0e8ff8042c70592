//! OTLP logs whose records are GenAI events, read as the spans they
//! belong to. Under the semantic conventions of 1.36 and earlier an
//! instrumentation (opentelemetry-instrumentation-openai-v2's, Elastic's
//! EDOT) emits each message of a request as a log record named
//! `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`,
//! `gen_ai.system.message` or `gen_ai.choice`, its body the message
//! (`content`, `tool_calls`, `id`; a choice's `message`), carrying the
//! trace and span ids of the LLM span it was emitted in. Such records are
//! made into that span's events, which the span-events dialect reads; a
//! logs file alone reads as its spans would with those events, and a file
//! holding both the spans and the logs (JSON Lines of each) reads them as
//! one span.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span::Event};

/// The name of a span made of log records alone (the span itself, read
/// beside them, gives its own).
pub(super) const EVENTS_ONLY: &str = "(GenAI events in OTLP logs)";

/// Whether an export's text is OTLP logs (`resourceLogs`) rather than
/// traces: its key, as JSON writes it unescaped.
pub(super) fn is_logs(text: &str) -> bool {
    let has = |key: &str| text.contains(key);
    (has("\"resourceLogs\"") || has("\"resource_logs\"")) && !has("\"resourceSpans\"")
}

/// The record's event name: the field (OTLP 1.5) or the older
/// `event.name` attribute.
fn event_name(record: &LogRecord) -> Option<&str> {
    if !record.event_name.is_empty() {
        return Some(&record.event_name);
    }
    record
        .attributes
        .iter()
        .find_map(|kv| match kv.key.as_str() {
            "event.name" => match kv.value.as_ref()?.value.as_ref()? {
                any_value::Value::StringValue(s) => Some(s.as_str()),
                _ => None,
            },
            _ => None,
        })
}

/// A GenAI event as a span event: the body's fields (a body that is not
/// a map is its `content`), then the record's attributes.
fn as_event(name: &str, record: LogRecord) -> Event {
    let mut attributes = match record.body {
        Some(AnyValue {
            value: Some(any_value::Value::KvlistValue(list)),
        }) => list.values,
        Some(body) => vec![KeyValue {
            key: "content".into(),
            value: Some(body),
            ..Default::default()
        }],
        None => Vec::new(),
    };
    attributes.extend(record.attributes);
    Event {
        time_unix_nano: match record.time_unix_nano {
            0 => record.observed_time_unix_nano,
            t => t,
        },
        name: name.to_string(),
        attributes,
        ..Default::default()
    }
}

/// The GenAI events of a logs export as the spans they were emitted in:
/// one span per trace and span id, in the order first seen, its events
/// the records in order, its attributes the records' (`gen_ai.system`)
/// and its times the first and last record's, named [`EVENTS_ONLY`];
/// where the same file holds the span itself, the two are read as one.
pub(super) fn as_traces(logs: ExportLogsServiceRequest) -> ExportTraceServiceRequest {
    let mut resource_spans = Vec::new();
    for resource in logs.resource_logs {
        let mut scope_spans = Vec::new();
        for scope in resource.scope_logs {
            let mut spans: Vec<Span> = Vec::new();
            let mut by_ids: HashMap<(Vec<u8>, Vec<u8>), usize> = HashMap::new();
            for record in scope.log_records {
                let Some(name) = event_name(&record).filter(|n| n.starts_with("gen_ai.")) else {
                    continue;
                };
                let name = name.to_string();
                let ids = (record.trace_id.clone(), record.span_id.clone());
                let next = spans.len();
                let i = *by_ids.entry(ids).or_insert(next);
                if i == next {
                    spans.push(Span {
                        trace_id: record.trace_id.clone(),
                        span_id: record.span_id.clone(),
                        name: EVENTS_ONLY.into(),
                        ..Default::default()
                    });
                }
                let span = &mut spans[i];
                for kv in &record.attributes {
                    if kv.key != "event.name" && !span.attributes.iter().any(|a| a.key == kv.key) {
                        span.attributes.push(kv.clone());
                    }
                }
                let event = as_event(&name, record);
                let at = event.time_unix_nano;
                if span.start_time_unix_nano == 0 || (at != 0 && at < span.start_time_unix_nano) {
                    span.start_time_unix_nano = at;
                }
                span.end_time_unix_nano = span.end_time_unix_nano.max(at);
                span.events.push(event);
            }
            if !spans.is_empty() {
                scope_spans.push(ScopeSpans {
                    scope: scope.scope,
                    spans,
                    schema_url: scope.schema_url,
                });
            }
        }
        resource_spans.push(ResourceSpans {
            resource: resource.resource,
            scope_spans,
            schema_url: resource.schema_url,
        });
    }
    ExportTraceServiceRequest { resource_spans }
}
