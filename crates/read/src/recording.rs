//! HTTP recordings that API test suites keep beside their tests: VCR
//! cassettes (VCR.py and pytest-recording, pydantic-ai's `parsed_body`
//! variant, Ruby VCR's `http_interactions`, go-vcr) and HAR files. Each
//! request to a provider is one conversation, and the status the provider
//! answered is kept with it: the checker weighs its findings by it.
//!
//! A cassette is read as a tree (`serde_json::Value`); YAML ones are turned
//! into one by the caller, so this module does no parsing of its own text.
//!
//! For a replay the reply a 2xx response carried can be appended to its
//! request ([`read_recording_with`]); how a response body (JSON, or a
//! recorded event stream) becomes a reply is `live`'s to say, so the caller
//! hands that in.

use loopdbg_engine::diagnostics::json_span::JsonPath;
use serde_json::Value;

use super::cassettes::MAX_RECORDED_BODY;
use super::{Answer, BlockSource, Conversation, ReadError, Source, detect, read_owned};
use loopdbg_formats::provider::Format;

/// The provider an endpoint belongs to, when its path says (a request of
/// plain text messages fits every format; the endpoint does not).
fn provider_of_route(route: &str) -> Option<Source> {
    let format = if route.ends_with("/chat/completions") {
        Format::Openai
    } else if route.ends_with("/responses") {
        Format::Responses
    } else if route.contains(":generateContent") || route.contains(":streamGenerateContent") {
        Format::Gemini
    } else if route.ends_with("/v1/messages") {
        Format::Anthropic
    } else {
        return None;
    };
    Some(Source::Provider(format))
}

/// The interactions of a recording, when `doc` is one: where its list
/// lives, and the list.
fn interactions(doc: &Value) -> Option<(JsonPath, &Vec<Value>)> {
    for key in ["interactions", "http_interactions"] {
        if let Some(list) = doc.get(key).and_then(Value::as_array) {
            return Some((JsonPath::root().key(key), list));
        }
    }
    doc.get("log")
        .and_then(|l| l.get("entries"))
        .and_then(Value::as_array)
        .map(|list| (JsonPath::root().key("log").key("entries"), list))
}

/// True when `doc` is a recording of HTTP exchanges.
pub fn is_recording(doc: &Value) -> bool {
    interactions(doc).is_some()
}

/// A body as recorded: parsed already (`parsed_body`, or an object in
/// `body` as ReqLLM writes it), a JSON string, a `{string: …}` wrapper
/// (VCR), ReqLLM's `{b64: …}`, or HAR's `postData.text` / `content.text`.
/// Base64 text is decoded where the recorder wrote it so: HAR's
/// `encoding`, Datadog's `base64:` prefix, YAML's `!!binary` (whose tag the
/// parser drops) when the decoded bytes are JSON.
fn body_of(side: &Value) -> Option<Value> {
    if let Some(parsed) = side.get("parsed_body").filter(|v| !v.is_null()) {
        return Some(parsed.clone());
    }
    match side.get("body") {
        // ReqLLM's `b64`; Ruby VCR's `base64_string` (exact body bytes).
        Some(Value::Object(o)) if o.contains_key("b64") || o.contains_key("base64_string") => {
            let text = o.get("b64").or_else(|| o.get("base64_string"))?.as_str()?;
            return super::cassettes::text_of_base64(text)
                .and_then(|t| serde_json::from_str(&t).ok());
        }
        Some(Value::Object(o)) if o.contains_key("encoding") && !o.contains_key("string") => {
            return None;
        }
        Some(body @ (Value::Object(_) | Value::Array(_))) if body.get("string").is_none() => {
            return Some(body.clone());
        }
        _ => {}
    }
    let text = side
        .get("body")
        .and_then(|b| {
            b.as_str()
                .or_else(|| b.get("string").and_then(Value::as_str))
        })
        .or_else(|| side.pointer("/postData/text").and_then(Value::as_str))
        .or_else(|| side.pointer("/content/text").and_then(Value::as_str))?;
    // HAR keeps a body it could not store as text in base64 (`content.
    // encoding`); its words are the decoded ones, never the base64.
    let decoded;
    let text = match side.pointer("/content/encoding").and_then(Value::as_str) {
        Some(_) if text.len() > MAX_RECORDED_BODY => return Some(too_long(text)),
        Some(e) if e.eq_ignore_ascii_case("base64") => {
            decoded = super::cassettes::text_of_base64(text)?;
            decoded.as_str()
        }
        _ => text,
    };
    if let Some(encoded) = text.strip_prefix("base64:") {
        let decoded = super::cassettes::text_of_base64(encoded)?;
        return Some(serde_json::from_str(&decoded).unwrap_or(Value::String(decoded)));
    }
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    // Text no provider would take is not decoded or copied: only its size
    // is kept (300 MB of base64 in a 300 KB `.har.gz` was copied, decoded
    // and copied again: 1.5 GB).
    if text.len() > MAX_RECORDED_BODY {
        return Some(too_long(text));
    }
    // YAML's `!!binary` body, its tag dropped by the parser: base64 whose
    // bytes are a JSON document.
    if let Some(v) =
        super::cassettes::text_of_base64(text).and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        return Some(v);
    }
    Some(Value::String(text.to_string()))
}

/// What is kept of a body past [`MAX_RECORDED_BODY`] that is not JSON.
fn too_long(text: &str) -> Value {
    Value::String(format!(
        "[loopdbg: a body of {} bytes that is not JSON, not read: longer than {} MiB]",
        text.len(),
        MAX_RECORDED_BODY >> 20
    ))
}

/// The status a response records: `status.code` (VCR), `status` (HAR),
/// `code` or `status_code` (go-vcr and others).
fn status_of(response: &Value) -> Option<u16> {
    let number = |v: Option<&Value>| {
        v.and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str()?.split_whitespace().next()?.parse().ok())
        })
    };
    number(response.pointer("/status/code"))
        .or_else(|| number(response.get("status")))
        .or_else(|| number(response.get("code")))
        .or_else(|| number(response.get("status_code")))
        .and_then(|s| u16::try_from(s).ok())
}

/// Whether the recorded response body is compressed (`content-encoding:
/// gzip`, …): cassettes then keep it as binary, and its words are unknown.
fn compressed(response: &Value) -> bool {
    let encoded = |v: &Value| {
        let values: Vec<&str> = match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        values.iter().any(|e| !e.eq_ignore_ascii_case("identity"))
    };
    match response.get("headers") {
        // VCR: a map of lists; HAR: a list of {name, value}.
        Some(Value::Object(map)) => map
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("content-encoding") && encoded(v)),
        Some(Value::Array(list)) => list.iter().any(|h| {
            h.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.eq_ignore_ascii_case("content-encoding"))
                && h.get("value").is_some_and(encoded)
        }),
        _ => false,
    }
}

/// What a provider's error body says: its `error.message`, else the body.
fn error_text(body: Option<Value>) -> String {
    match body {
        Some(Value::String(s)) => s,
        Some(v) => v
            .pointer("/error/message")
            // Bedrock's errors: `{"message": …}`.
            .or_else(|| v.pointer("/message"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        None => String::new(),
    }
}

/// Appends the reply a response body carried to a request body of the
/// given format (see `live::capture::append_recorded_reply`).
pub type AppendReply<'a> = &'a dyn Fn(Format, &mut Value, &Value);

/// Every provider request of the recording as a conversation, labelled
/// with its place and what the provider answered. Interactions that are
/// not provider requests (a token count, a model list, a GET) are left
/// out; `None` when `doc` is no recording. A request that cannot be read
/// fails the whole (see [`read_recording_with`] to read around it).
pub fn read_recording(doc: &Value) -> Option<Result<Vec<Conversation>, ReadError>> {
    let recorded = read_recording_with(doc, None)?;
    Some(match recorded.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(recorded.conversations),
    })
}

/// What a recording holds: a conversation per provider request, the
/// requests that could not be read (each located; the rest is read), and
/// how many exchanges went to endpoints that carry no conversation.
#[derive(Debug, Default)]
pub struct Recorded {
    /// One per request read.
    pub conversations: Vec<Conversation>,
    /// Recorded requests that are not a conversation loopdbg can read.
    pub errors: Vec<ReadError>,
    /// Exchanges with embeddings, moderation, files, … endpoints.
    pub skipped: usize,
}

/// [`read_recording`], each answered request followed by the reply it got
/// when `append` is given: what a replay steps through. The appended
/// messages name the response as their place.
pub fn read_recording_with(doc: &Value, append: Option<AppendReply>) -> Option<Recorded> {
    let (base, list) = interactions(doc)?;
    let mut recorded = Recorded::default();
    let out = &mut recorded.conversations;
    for (i, interaction) in list.iter().enumerate() {
        let at = base.index(i);
        let path = at.to_string();
        let request = interaction.get("request").unwrap_or(&Value::Null);
        let body = body_of(request);
        let url = request
            .get("uri")
            .or_else(|| request.get("url"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let route = url.split_once("://").map_or(url, |(_, rest)| {
            rest.find('/').map_or("/", |at| &rest[at..])
        });
        let route = route.split('?').next().unwrap_or(route);
        // A request to a conversation endpoint whose recorded body is not
        // JSON (cut, or mangled by the recorder): said at its place, and
        // the other interactions read.
        if let (Some(Value::String(text)), Some(_)) = (&body, provider_of_route(route))
            && let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text)
        {
            let within = at.key("request").key("body");
            recorded.errors.push(super::err(
                &within,
                format!(
                    "the recorded request body is not JSON ({e}): this interaction was not checked"
                ),
            ));
            continue;
        }
        let Some(body) = body.filter(Value::is_object) else {
            continue;
        };
        if loopdbg_formats::route::carries_no_conversation(route) {
            recorded.skipped += 1;
            continue;
        }
        let Some(source) = provider_of_route(route).or_else(|| detect(&body)) else {
            continue;
        };
        let response = interaction.get("response").unwrap_or(&Value::Null);
        let status = status_of(response);
        let answered = match (append, source) {
            (Some(append), Source::Provider(format))
                if status.is_some_and(|s| (200..300).contains(&s)) && !compressed(response) =>
            {
                body_of(response).map(|reply| {
                    let mut with_reply = body.clone();
                    append(format, &mut with_reply, &reply);
                    with_reply
                })
            }
            _ => None,
        };
        let mut conv = match read_owned(body, source) {
            Ok(c) => c,
            Err(e) => {
                // This interaction is said, and the others are read.
                let within = at.key("request").key("body").join(&e.path);
                recorded.errors.push(super::err(&within, e.message));
                continue;
            }
        };
        let asked = conv.messages.len();
        // The request read alone first: its errors name the request, and
        // its length tells the reply's messages from the request's.
        if let Some(Ok(with_reply)) = answered.map(|b| read_owned(b, source)) {
            conv = with_reply;
        }
        if conv.model.is_none() {
            conv.model = loopdbg_formats::route::model_of_path(route);
        }
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        conv.label = Some(format!(
            "interaction {}: {method} {route} → {}",
            i + 1,
            status.map_or("no status".to_string(), |s| s.to_string())
        ));
        // Paths name the recording's own places.
        let prefix = |s: &mut BlockSource| {
            s.path = format!("{path}.request.{}", s.path).into();
        };
        for (k, source) in conv.message_sources.iter_mut().enumerate() {
            match k < asked {
                true => prefix(source),
                false => source.path = format!("{path}.response").into(),
            }
        }
        for (k, sources) in conv.block_sources.iter_mut().enumerate() {
            for source in sources {
                match k < asked {
                    true => prefix(source),
                    false => source.path = format!("{path}.response").into(),
                }
            }
        }
        for h in &mut conv.hosted {
            match h.message < asked {
                true => prefix(&mut h.source),
                false => h.source.path = format!("{path}.response").into(),
            }
        }
        // A compressed body is kept as binary: its words are not read.
        let said = match compressed(response) {
            true => String::new(),
            false => error_text(body_of(response)),
        };
        if let Some(status) = status.filter(|s| !(200..300).contains(s)) {
            // The recorded request itself was refused: in a replay, a
            // trip with no reply after its messages.
            conv.refusals.push(super::Refusal {
                at: conv.messages.len(),
                status: Some(status),
                text: said.clone(),
                source: BlockSource {
                    path: format!("{path}.response").into(),
                    ..Default::default()
                },
            });
        }
        if let Some(status) = status {
            conv.answer = Some(Answer {
                status,
                text: match (200..300).contains(&status) {
                    true => String::new(),
                    false => said,
                },
                source: BlockSource {
                    path: format!("{path}.response").into(),
                    ..Default::default()
                },
                kept_in: super::Keeper::Recording,
            });
        }
        out.push(conv);
    }
    Some(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cassette(status: u16) -> Value {
        json!({"interactions": [{
            "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
                "body": {"string": json!({"model": "m", "messages": [
                    {"role": "user", "content": "weather"}]}).to_string()}},
            "response": {"status": {"code": status}, "body": {"string": "the reply"}}}]})
    }

    /// Appends one assistant turn, whatever the body: the caller's part.
    fn append(_: Format, request: &mut Value, body: &Value) {
        assert_eq!(body, "the reply");
        request["messages"].as_array_mut().unwrap().push(json!(
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]}));
    }

    #[test]
    fn an_answered_request_is_followed_by_its_reply_named_by_the_response() {
        let convs = read_recording_with(&cassette(200), Some(&append))
            .unwrap()
            .conversations;
        let conv = &convs[0];
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(
            conv.message_sources[0].path.as_ref(),
            "interactions[0].request.messages[0]"
        );
        assert_eq!(
            conv.message_sources[1].path.as_ref(),
            "interactions[0].response"
        );
        // `check` reads the request as it was sent.
        let sent = read_recording(&cassette(200)).unwrap().unwrap();
        assert_eq!(sent[0].messages.len(), 1);
    }

    #[test]
    fn a_refused_request_gets_no_reply() {
        let convs = read_recording_with(&cassette(400), Some(&append))
            .unwrap()
            .conversations;
        assert_eq!(convs[0].messages.len(), 1);
        assert_eq!(convs[0].refusals.len(), 1);
    }

    /// A body past the limit that is not JSON is neither decoded nor
    /// copied (its size is what is kept), however it is marked as base64;
    /// a JSON body is read whatever its size.
    #[test]
    fn a_body_past_the_limit_that_is_not_json_is_only_measured() {
        // Decoded, past the limit too.
        let base64 = "A".repeat(MAX_RECORDED_BODY / 3 * 4 + 8);
        let sides = [
            serde_json::json!({"postData": {"text": base64}}),
            serde_json::json!({"content": {"text": base64, "encoding": "base64"}}),
            serde_json::json!({"body": {"b64": base64}}),
            serde_json::json!({"body": format!("base64:{base64}")}),
        ];
        for side in &sides {
            let body = body_of(side);
            let said = body.as_ref().and_then(Value::as_str).unwrap_or("");
            assert!(
                body.is_none() || said.contains("not read: longer than 64 MiB"),
                "{}",
                &said[..said.len().min(80)]
            );
        }
        assert!(crate::cassettes::text_of_base64(&base64).is_none());
        let json = format!(
            "{{\"messages\": [], \"pad\": \"{}\"}}",
            "x".repeat(MAX_RECORDED_BODY)
        );
        let side = serde_json::json!({"postData": {"text": json}});
        assert!(body_of(&side).is_some_and(|b| b.get("messages").is_some()));
    }
}
