//! Files other tools write, turned into the shapes loopdbg already reads:
//!
//! - **Mastra** LLM recordings (`__recordings__/*.json` of its test utils:
//!   `{meta, recordings: [{request: {url, method, body}, response:
//!   {status, body | chunks}}]}`) and **Azure SDK test-proxy** recordings
//!   (`{Entries: [{RequestUri, RequestMethod, RequestBody, StatusCode,
//!   ResponseBody}], Variables}`): the VCR shape `{interactions}`;
//! - **Langfuse** trace exports (the UI's `{trace, observations}`, the
//!   API's trace with its `observations`, or a list of observations): each
//!   `GENERATION` a request (its `input`, the messages, with its `model`),
//!   weighed by its level (an `ERROR` whose message holds a 400 is the
//!   provider's refusal), in the VCR shape;
//! - **SWE-agent** trajectories (`.traj`: `{trajectory, history, info}`):
//!   the `history` as the OpenAI Chat request it was sent as through
//!   LiteLLM, a tool message's first `tool_call_ids` its `tool_call_id`
//!   (as SWE-agent sends it);
//! - **OpenTelemetry console spans** (the Python SDK's `ConsoleSpanExporter`
//!   prints each span as a pretty JSON object, one after another): an OTLP
//!   JSON export of the same spans;
//! - **Gemini CLI stream-json** (`gemini -p … --output-format stream-json`:
//!   `init`, `message`, `tool_use`, `tool_result`, `result` events, one a
//!   line): the Gemini request its history makes;
//! - **goose MCP replays** (`STDIN: {…}` / `STDOUT: {…}` lines, goose's
//!   `mcp_replays`): the records of an MCP capture.

use serde_json::{Map, Value, json};

/// `doc` as a shape loopdbg reads when it is one of the documents above
/// (a recording, an export, a trajectory); `None` otherwise.
pub fn normalized(doc: &Value) -> Option<Value> {
    mastra(doc)
        .or_else(|| azure_test_proxy(doc))
        .or_else(|| langfuse(doc))
        .or_else(|| swe_agent(doc))
}

/// Mastra: `recordings[i]` is already a request and its response.
fn mastra(doc: &Value) -> Option<Value> {
    let list = doc.get("recordings")?.as_array()?;
    let first = list.first()?;
    (first.pointer("/request/url").is_some() && first.get("response").is_some()).then_some(())?;
    let interactions: Vec<Value> = list
        .iter()
        .map(|r| {
            let mut response = r.get("response").cloned().unwrap_or(Value::Null);
            // A streamed answer is kept as its chunks (SSE text).
            if response.get("body").is_none()
                && let Some(chunks) = response.get("chunks").and_then(Value::as_array)
            {
                let text: String = chunks
                    .iter()
                    .map(|c| match c {
                        Value::String(s) => s.clone(),
                        other => other
                            .get("data")
                            .or_else(|| other.get("chunk"))
                            .and_then(Value::as_str)
                            .map_or_else(|| other.to_string(), str::to_string),
                    })
                    .collect();
                response["body"] = json!({ "string": text });
            }
            json!({"request": r.get("request").cloned().unwrap_or(Value::Null), "response": response})
        })
        .collect();
    Some(json!({ "interactions": interactions }))
}

/// Azure SDK test-proxy: `Entries`, each request and response flat.
fn azure_test_proxy(doc: &Value) -> Option<Value> {
    let entries = doc.get("Entries")?.as_array()?;
    if !entries.iter().all(|e| e.get("RequestUri").is_some()) {
        return None;
    }
    let interactions: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut request = json!({
                "method": e.get("RequestMethod").cloned().unwrap_or(Value::Null),
                "uri": e.get("RequestUri").cloned().unwrap_or(Value::Null),
            });
            match e.get("RequestBody") {
                Some(Value::String(s)) => request["body"] = json!({ "string": s }),
                Some(body) if !body.is_null() => request["body"] = body.clone(),
                _ => {}
            }
            let mut response =
                json!({ "status": e.get("StatusCode").cloned().unwrap_or(Value::Null) });
            match e.get("ResponseBody") {
                Some(Value::String(s)) => response["body"] = json!({ "string": s }),
                Some(body) if !body.is_null() => response["body"] = body.clone(),
                _ => {}
            }
            json!({"request": request, "response": response})
        })
        .collect();
    Some(json!({ "interactions": interactions }))
}

/// Langfuse: the observations of an export, wherever it keeps them.
fn langfuse_observations(doc: &Value) -> Option<&Vec<Value>> {
    let list = doc
        .get("observations")
        .or_else(|| doc.pointer("/trace/observations"))
        .and_then(Value::as_array)
        .or_else(|| doc.as_array())?;
    let is_observation = |o: &Value| {
        o.get("type").and_then(Value::as_str).is_some()
            && (o.get("traceId").is_some() || o.get("startTime").is_some())
    };
    (list.iter().any(is_observation)
        && list
            .iter()
            .any(|o| o.get("type").and_then(Value::as_str) == Some("GENERATION")))
    .then_some(list)
}

/// Langfuse: each generation as the request its input was, in order.
fn langfuse(doc: &Value) -> Option<Value> {
    let mut generations: Vec<&Value> = langfuse_observations(doc)?
        .iter()
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("GENERATION"))
        .collect();
    generations.sort_by(|a, b| {
        let at = |o: &Value| {
            o.get("startTime")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        at(a).cmp(&at(b))
    });
    let interactions: Vec<Value> = generations
        .into_iter()
        .filter_map(|g| {
            let body = generation_body(g)?;
            let failed = g.get("level").and_then(Value::as_str) == Some("ERROR");
            let message = g.get("statusMessage").and_then(Value::as_str).unwrap_or("");
            let status = match (failed, message) {
                (true, m) if m.contains("400") => 400,
                (true, _) => 500,
                (false, _) => 200,
            };
            let response = match failed {
                true => json!({"status": status, "body": {"string": message}}),
                false => json!({"status": status}),
            };
            let name = g
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("generation");
            Some(json!({
                "request": {"method": "POST", "uri": format!("langfuse:{name}"), "body": body},
                "response": response,
            }))
        })
        .collect();
    (!interactions.is_empty()).then(|| json!({ "interactions": interactions }))
}

/// A generation's input as a request body: a message list with its model,
/// or a body already (`{messages, tools}`, `{contents}`).
fn generation_body(g: &Value) -> Option<Value> {
    let input = g.get("input")?;
    let mut body = match input {
        Value::Array(messages) => json!({ "messages": messages }),
        Value::Object(o)
            if ["messages", "input", "contents"]
                .iter()
                .any(|k| o.get(*k).is_some_and(Value::is_array)) =>
        {
            input.clone()
        }
        _ => return None,
    };
    if body.get("model").is_none()
        && let Some(model) = g.get("model").filter(|m| m.is_string())
    {
        body["model"] = model.clone();
    }
    if let Some(params) = g.get("modelParameters").and_then(Value::as_object) {
        for key in ["max_tokens", "max_completion_tokens"] {
            if body.get(key).is_none()
                && let Some(v) = params.get(key)
            {
                body[key] = v
                    .as_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .map_or(v.clone(), Value::from);
            }
        }
    }
    Some(body)
}

/// SWE-agent: the history as an OpenAI Chat request (what LiteLLM sent).
fn swe_agent(doc: &Value) -> Option<Value> {
    let history = doc.get("history")?.as_array()?;
    doc.get("trajectory")?.as_array()?;
    let mut messages = Vec::new();
    for m in history {
        let role = m.get("role").and_then(Value::as_str)?;
        let mut out = Map::new();
        out.insert("role".into(), role.into());
        out.insert(
            "content".into(),
            m.get("content").cloned().unwrap_or(Value::Null),
        );
        if let Some(calls) = m.get("tool_calls").filter(|c| c.is_array()) {
            out.insert("tool_calls".into(), calls.clone());
        }
        // SWE-agent sends a tool message with the first of its ids only
        // (`"tool_call_id": history_item["tool_call_ids"][0]`, "Only one
        // tool call per observations", sweagent/agent/models.py): the
        // others go unanswered, as the provider sees them. One message
        // per id, as this read before, also let a message of 100 KB with
        // 20,000 ids take 4 GB (issue 59).
        if role == "tool"
            && let Some(first) = m
                .get("tool_call_ids")
                .and_then(Value::as_array)
                .and_then(|ids| ids.first())
        {
            out.insert("tool_call_id".into(), first.clone());
        }
        messages.push(Value::Object(out));
    }
    let mut body = json!({ "messages": messages });
    let model = doc
        .pointer("/replay_config")
        .and_then(|c| match c {
            // Written as a JSON string by SWE-agent 1.x.
            Value::String(s) => serde_json::from_str::<Value>(s).ok(),
            other => Some(other.clone()),
        })
        .and_then(|c| c.pointer("/agent/model/name").cloned());
    if let Some(model) = model.filter(Value::is_string) {
        body["model"] = model;
    }
    Some(body)
}

/// Whether `text` opens as the Python SDK's console span dump: a pretty
/// JSON object whose first keys are a span's `name` and `context`.
pub fn is_console_spans(text: &str) -> bool {
    matches!(crate::bounded::values(text).next(), Some(Ok(first))
        if first.pointer("/context/span_id").is_some_and(Value::is_string)
            && first.get("name").is_some_and(Value::is_string)
            && first.get("kind").and_then(Value::as_str).is_some_and(|k| k.starts_with("SpanKind.")))
}

/// The console span dump as one OTLP JSON export of its spans (grouped by
/// resource), or `None` when a value in it is not a span.
pub fn console_spans(text: &str) -> Option<Value> {
    let mut spans = Vec::new();
    for value in crate::bounded::values(text) {
        let span = value.ok()?;
        span.pointer("/context/span_id")?;
        spans.push(span);
    }
    let otlp: Vec<Value> = spans.iter().map(console_span).collect();
    let resource = spans
        .first()
        .and_then(|s| s.pointer("/resource/attributes"))
        .map(key_values)
        .unwrap_or_default();
    Some(json!({"resourceSpans": [{
        "resource": {"attributes": resource},
        "scopeSpans": [{"spans": otlp}],
    }]}))
}

/// `0x…` ids as OTLP JSON's hex.
fn console_id(v: Option<&Value>) -> String {
    v.and_then(Value::as_str)
        .map(|s| s.trim_start_matches("0x").to_string())
        .unwrap_or_default()
}

fn console_span(span: &Value) -> Value {
    let kind = match span.get("kind").and_then(Value::as_str) {
        Some("SpanKind.INTERNAL") => 1,
        Some("SpanKind.SERVER") => 2,
        Some("SpanKind.CLIENT") => 3,
        Some("SpanKind.PRODUCER") => 4,
        Some("SpanKind.CONSUMER") => 5,
        _ => 0,
    };
    let status = match span.pointer("/status/status_code").and_then(Value::as_str) {
        Some("OK") => 1,
        Some("ERROR") => 2,
        _ => 0,
    };
    let message = span
        .pointer("/status/description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let events: Vec<Value> = span
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            json!({
                "name": e.get("name").cloned().unwrap_or(Value::Null),
                "timeUnixNano": nanos(e.get("timestamp")).to_string(),
                "attributes": e.get("attributes").map(key_values).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "traceId": console_id(span.pointer("/context/trace_id")),
        "spanId": console_id(span.pointer("/context/span_id")),
        "parentSpanId": console_id(span.get("parent_id")),
        "name": span.get("name").cloned().unwrap_or(Value::Null),
        "kind": kind,
        "startTimeUnixNano": nanos(span.get("start_time")).to_string(),
        "endTimeUnixNano": nanos(span.get("end_time")).to_string(),
        "attributes": span.get("attributes").map(key_values).unwrap_or_default(),
        "events": events,
        "status": {"code": status, "message": message},
    })
}

/// A JSON object's members as OTLP key-values.
fn key_values(attributes: &Value) -> Vec<Value> {
    attributes
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| json!({"key": k, "value": any_value(v)}))
        .collect()
}

/// A JSON value as OTLP JSON's `AnyValue`.
fn any_value(v: &Value) -> Value {
    match v {
        Value::String(s) => json!({ "stringValue": s }),
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({ "intValue": n.to_string() }),
        Value::Number(n) => json!({ "doubleValue": n }),
        Value::Array(items) => {
            json!({"arrayValue": {"values": items.iter().map(any_value).collect::<Vec<_>>()}})
        }
        Value::Object(_) => json!({"kvlistValue": {"values": key_values(v)}}),
        Value::Null => json!({}),
    }
}

/// An ISO 8601 UTC time (`2024-05-01T12:00:00.123456Z`, as the console
/// exporter writes it) as nanoseconds since the epoch; 0 when it is not
/// one. Only the order of spans depends on it.
fn nanos(v: Option<&Value>) -> u64 {
    let Some(s) = v.and_then(Value::as_str) else {
        return 0;
    };
    let parse = || -> Option<u64> {
        let (date, time) = s.trim_end_matches('Z').split_once('T')?;
        let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
        let (y, m, day) = (d.next()??, d.next()??, d.next()??);
        let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
        let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
        let (h, min, sec) = (t.next()??, t.next()??, t.next()??);
        // Days from the civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        let secs = days * 86_400 + h * 3_600 + min * 60 + sec;
        let digits: String = fraction.chars().take(9).collect();
        let frac = format!("{digits:0<9}").parse::<i64>().ok()?;
        u64::try_from(secs * 1_000_000_000 + frac).ok()
    };
    parse().unwrap_or(0)
}

/// The thought signature a stream-json call is given: the transcript
/// leaves them out, though Gemini CLI sent them.
pub const UNRECORDED_SIGNATURE: &str = "(not recorded in the stream-json transcript)";

/// Whether a parsed first line opens a Gemini CLI stream-json transcript.
pub fn is_gemini_stream_json(first: &Value) -> bool {
    first.get("type").and_then(Value::as_str) == Some("init")
        && first.get("session_id").is_some_and(Value::is_string)
        && first.get("model").is_some()
}

/// A Gemini CLI stream-json transcript as the Gemini request its history
/// makes: the user's messages, the model's text and calls (calls with no
/// result between them are one turn), each run of results one turn of
/// function responses, as Gemini CLI sends them. `None` when a line is
/// not JSON or the first is not its `init`.
pub fn gemini_stream_json(text: &str) -> Option<Value> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let init = crate::bounded::value(lines.next()?).ok()?;
    is_gemini_stream_json(&init).then_some(())?;
    let mut contents: Vec<Value> = Vec::new();
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut model = init
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("gemini")
        .to_string();
    let push = |contents: &mut Vec<Value>, role: &str, part: Value| match contents.last_mut() {
        Some(last) if last["role"] == role => {
            if let Some(parts) = last["parts"].as_array_mut() {
                // Streamed text in one turn is one text part.
                // Appended in place: a copy per event was quadratic.
                let joined = match (parts.last_mut(), part.get("text").and_then(Value::as_str)) {
                    (Some(prev), Some(more)) if prev.get("text").is_some() => {
                        match &mut prev["text"] {
                            Value::String(text) => text.push_str(more),
                            other => *other = more.into(),
                        }
                        true
                    }
                    _ => false,
                };
                if !joined {
                    parts.push(part);
                }
            }
        }
        _ => contents.push(json!({"role": role, "parts": [part]})),
    };
    for line in lines {
        let event = crate::bounded::value(line).ok()?;
        match event.get("type").and_then(Value::as_str) {
            Some("message") => {
                let role = match event.get("role").and_then(Value::as_str) {
                    Some("assistant" | "model") => "model",
                    _ => "user",
                };
                let text = event.get("content").and_then(Value::as_str).unwrap_or("");
                push(&mut contents, role, json!({ "text": text }));
            }
            Some("tool_use") => {
                let id = event
                    .get("tool_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = event
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                names.insert(id.clone(), name.clone());
                let args = event
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                // The transcript does not record thought signatures, which
                // Gemini CLI keeps and sends: the first call of a turn is
                // marked as signed, so none is reported missing.
                let mut part = json!({"functionCall": {"id": id, "name": name, "args": args}});
                let opens_turn = contents.last().is_none_or(|c| c["role"] != "model");
                if opens_turn {
                    part["thoughtSignature"] = UNRECORDED_SIGNATURE.into();
                }
                push(&mut contents, "model", part);
            }
            Some("tool_result") => {
                let id = event
                    .get("tool_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = names.get(&id).cloned().unwrap_or_default();
                let output = event.get("output").cloned().unwrap_or(Value::Null);
                let response = match event.get("status").and_then(Value::as_str) {
                    Some("error") => {
                        json!({ "error": event.get("error").cloned().unwrap_or(output) })
                    }
                    _ => json!({ "output": output }),
                };
                push(
                    &mut contents,
                    "user",
                    json!({"functionResponse": {"id": id, "name": name, "response": response}}),
                );
            }
            Some("result") => {
                // The model that did most of the work, when init said `auto`.
                if let Some(models) = event.pointer("/stats/models").and_then(Value::as_object) {
                    let busiest = models.iter().max_by_key(|(_, m)| {
                        m.get("total_tokens").and_then(Value::as_u64).unwrap_or(0)
                    });
                    if let (Some((name, _)), "auto") = (busiest, model.as_str()) {
                        model = name.clone();
                    }
                }
            }
            _ => {}
        }
    }
    Some(json!({"model": model, "contents": contents}))
}

/// Whether a line is one of goose's MCP replay lines.
pub fn is_goose_replay_line(line: &str) -> bool {
    ["STDIN: ", "STDOUT: ", "STDERR: "]
        .iter()
        .any(|p| line.starts_with(p))
}

/// A goose MCP replay as the lines of an MCP capture (one record a line,
/// line for line: a `STDERR:` line, which the capture does not record,
/// becomes a blank one, so every message keeps its line number).
pub fn goose_replay(text: &str) -> Option<String> {
    use crate::mcp::{Record, Side};
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("STDIN: ") {
            out.push_str(&Record::message(Side::Client, 0, rest).to_line());
        } else if let Some(rest) = line.strip_prefix("STDOUT: ") {
            out.push_str(&Record::message(Side::Server, 0, rest).to_line());
        } else if line.starts_with("STDERR: ") || line.trim().is_empty() {
            out.push('\n');
        } else {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_times_are_nanoseconds_since_the_epoch() {
        let at = |s: &str| nanos(Some(&Value::from(s)));
        assert_eq!(at("1970-01-01T00:00:00.000000Z"), 0);
        assert_eq!(at("2024-05-01T12:00:00.5Z"), 1_714_564_800_500_000_000);
        assert!(at("2024-05-01T12:00:01Z") > at("2024-05-01T12:00:00.999999Z"));
        assert_eq!(at("not a time"), 0);
    }

    #[test]
    fn a_goose_line_that_is_not_a_replay_line_is_not_a_replay() {
        assert!(goose_replay("STDIN: {}\nhello\n").is_none());
        let lines = goose_replay("STDIN: {\"id\":1}\nSTDERR: noise\nSTDOUT: {\"id\":1}\n").unwrap();
        assert_eq!(lines.lines().count(), 3);
        assert!(lines.lines().nth(1).unwrap().is_empty());
    }
}
