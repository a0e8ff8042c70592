//! HTTP recordings of other ecosystems, turned into the VCR shape
//! (`{"interactions": [{request, response}]}`) that [`super::recording`]
//! reads:
//!
//! - LangChain's own cassettes (`langchain_tests.conftest.CustomSerializer`,
//!   every partner package's `tests/cassettes/*.yaml.gz`): VCR's
//!   `requests:` and `responses:` lists side by side;
//! - nock recordings (Node): a JSON array of `{scope, method, path, body,
//!   status, response}`;
//! - one interaction per file: the Datadog APM test agent's LLM cassettes
//!   (`{request: {method, url, body}, response: {status: {code}, body}}`,
//!   binary bodies as `"base64:…"`) and ReqLLM's fixtures (`request.body`
//!   as `{"b64": …}`, `response.status` a number);
//! - Go's `httprr` traces: `httprr trace v1`, then for each exchange a
//!   line `N M` and the raw HTTP/1.1 request (N bytes) and response
//!   (M bytes).
//!
//! Each is read whole and weighed by its recorded status, as VCR is.

use serde_json::{Value, json};

/// Why a text is not a whole `httprr` trace: the byte where reading
/// stopped, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {byte}: {message}")]
pub struct TraceError {
    /// The byte offset in the text.
    pub byte: usize,
    /// What was expected.
    pub message: String,
}

/// `doc` in the VCR shape when it is a recording of another kind; `doc`
/// itself otherwise.
pub fn normalized(doc: Value) -> Value {
    // Mastra's and Azure's recordings, Langfuse exports, SWE-agent
    // trajectories.
    if let Some(read) = crate::foreign::normalized(&doc) {
        return read;
    }
    if let Some(list) = langchain(&doc) {
        return json!({ "interactions": list });
    }
    if let Some(list) = nock(&doc) {
        return json!({ "interactions": list });
    }
    if is_single_interaction(&doc) {
        return json!({ "interactions": [doc] });
    }
    doc
}

/// LangChain: `requests[i]` answered by `responses[i]`.
fn langchain(doc: &Value) -> Option<Vec<Value>> {
    let requests = doc.get("requests")?.as_array()?;
    let responses = doc.get("responses")?.as_array()?;
    let first = requests.first()?;
    (first.get("method").is_some() && first.get("uri").is_some()).then_some(())?;
    Some(
        requests
            .iter()
            .zip(responses)
            .map(|(request, response)| json!({"request": request, "response": response}))
            .collect(),
    )
}

/// nock: `{scope, method, path, body, status, response}` per exchange.
fn nock(doc: &Value) -> Option<Vec<Value>> {
    let list = doc.as_array()?;
    let is_nock =
        |v: &Value| v.get("scope").is_some_and(Value::is_string) && v.get("method").is_some();
    if list.is_empty() || !list.iter().all(is_nock) {
        return None;
    }
    Some(list.iter().map(nock_interaction).collect())
}

fn nock_interaction(v: &Value) -> Value {
    let scope = v["scope"].as_str().unwrap_or("");
    let path = v.get("path").and_then(Value::as_str).unwrap_or("/");
    let mut request = json!({
        "method": v.get("method").cloned().unwrap_or(Value::Null),
        "uri": format!("{}{path}", scope.trim_end_matches('/')),
    });
    match v.get("body") {
        Some(Value::String(s)) => request["body"] = json!({ "string": s }),
        Some(body) if !body.is_null() => request["parsed_body"] = body.clone(),
        _ => {}
    }
    let mut response = json!({ "status": v.get("status").cloned().unwrap_or(Value::Null) });
    let binary = v.get("responseIsBinary").and_then(Value::as_bool) == Some(true);
    match v.get("response") {
        // A streamed answer is recorded as its chunks (hex when binary).
        Some(Value::Array(chunks)) if chunks.iter().all(Value::is_string) => {
            let joined: String = chunks.iter().filter_map(Value::as_str).collect();
            let text = match binary {
                true => hex_text(&joined).unwrap_or_default(),
                false => joined,
            };
            response["body"] = json!({ "string": text });
        }
        Some(Value::String(s)) => {
            let text = match binary {
                true => hex_text(s).unwrap_or_default(),
                false => s.clone(),
            };
            response["body"] = json!({ "string": text });
        }
        Some(body) if !body.is_null() => response["parsed_body"] = body.clone(),
        _ => {}
    }
    json!({"request": request, "response": response})
}

/// The longest body text a recording's reader decodes or keeps when it is
/// not JSON: past any provider's request limit (Anthropic's is 32 MB).
pub const MAX_RECORDED_BODY: usize = 64 << 20;

/// Base64 text (line breaks allowed, as YAML folds it) as UTF-8 text,
/// when its bytes are text and no longer than a recorded body is read
/// ([`MAX_RECORDED_BODY`]; past it nothing is decoded).
pub fn text_of_base64(text: &str) -> Option<String> {
    use base64::Engine;
    if text.len() / 4 * 3 > MAX_RECORDED_BODY {
        return None;
    }
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Hex digits as UTF-8 text, when they are.
fn hex_text(hex: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// One recorded exchange as a whole file (Datadog's test agent, ReqLLM):
/// a `request` with its method and URL, and a `response`.
fn is_single_interaction(doc: &Value) -> bool {
    let Some(request) = doc.get("request").filter(|r| r.is_object()) else {
        return false;
    };
    request.get("method").is_some_and(Value::is_string)
        && (request.get("url").is_some() || request.get("uri").is_some())
        && doc.get("response").is_some_and(Value::is_object)
}

/// True when `text` is a Go `httprr` trace.
pub fn is_httprr(text: &str) -> bool {
    text.starts_with("httprr trace v1\n") || text.starts_with("httprr trace v1\r\n")
}

/// A Go `httprr` trace in the VCR shape; the first exchange that cannot be
/// cut out of the text is an error at its byte.
pub fn httprr(text: &str) -> Result<Value, TraceError> {
    let bytes = text.as_bytes();
    let mut at = text.find('\n').map_or(bytes.len(), |n| n + 1);
    let mut list = Vec::new();
    while at < bytes.len() {
        let line_end = at
            + bytes[at..]
                .iter()
                .position(|&b| b == b'\n')
                .ok_or_else(|| {
                    located(
                        at,
                        "an exchange must start with a line `REQUEST-BYTES RESPONSE-BYTES`",
                    )
                })?;
        let sizes = std::str::from_utf8(&bytes[at..line_end]).unwrap_or("");
        let mut numbers = sizes
            .trim_end_matches('\r')
            .split(' ')
            .map(str::parse::<usize>);
        let (Some(Ok(request_len)), Some(Ok(response_len)), None) =
            (numbers.next(), numbers.next(), numbers.next())
        else {
            return Err(located(
                at,
                format!("expected `REQUEST-BYTES RESPONSE-BYTES`, found {sizes:?}"),
            ));
        };
        let start = line_end + 1;
        let end = start
            .checked_add(request_len)
            .and_then(|e| e.checked_add(response_len))
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                located(at, format!("the exchange announces {request_len} + {response_len} bytes; the file ends first"))
            })?;
        let request = parse_http(&bytes[start..start + request_len], true);
        let response = parse_http(&bytes[start + request_len..end], false);
        list.push(json!({"request": request, "response": response}));
        at = end;
    }
    Ok(json!({ "interactions": list }))
}

fn located(byte: usize, message: impl Into<String>) -> TraceError {
    TraceError {
        byte,
        message: message.into(),
    }
}

/// One raw HTTP/1.1 message, as httparse reads its head: its first line,
/// headers and body (a chunked body joined), as a VCR request or response.
/// A head httparse cannot take leaves the message with no body.
fn parse_http(raw: &[u8], is_request: bool) -> Value {
    let raw = &*as_http11(raw);
    let mut headers = [httparse::EMPTY_HEADER; 128];
    if is_request {
        let mut request = httparse::Request::new(&mut headers);
        let Ok(httparse::Status::Complete(head_end)) = request.parse(raw) else {
            return json!({"method": "", "uri": ""});
        };
        let host = header(request.headers, "host");
        let target = request.path.unwrap_or("/");
        let uri = match (target.starts_with('/'), host) {
            (true, Some(host)) => format!("https://{host}{target}"),
            _ => target.to_string(),
        };
        let body = body_of(request.headers, &raw[head_end..]);
        json!({"method": request.method.unwrap_or(""), "uri": uri, "body": {"string": body}})
    } else {
        let mut response = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(head_end)) = response.parse(raw) else {
            return json!({"status": {"code": 0}});
        };
        let body = body_of(response.headers, &raw[head_end..]);
        let mut out =
            json!({"status": {"code": response.code.unwrap_or(0)}, "body": {"string": body}});
        if let Some(encoding) = header(response.headers, "content-encoding") {
            out["headers"] = json!({ "content-encoding": [encoding] });
        }
        out
    }
}

/// The message with an `HTTP/2.0`, `HTTP/2` or `HTTP/3` version on its
/// first line read as `HTTP/1.1`: Go's `httputil.DumpResponse` (what
/// httprr records) writes the version the exchange used, and httparse
/// reads only HTTP/1.x heads, though the head's text is the same.
fn as_http11(raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let line_end = raw.iter().position(|&b| b == b'\n').unwrap_or(raw.len());
    let line = &raw[..line_end];
    for version in [&b"HTTP/2.0"[..], b"HTTP/3.0", b"HTTP/2", b"HTTP/3"] {
        let at = line.windows(version.len()).position(|w| w == version);
        let Some(at) = at else { continue };
        let after = line.get(at + version.len()).copied();
        // The version is a whole token: at the start (a response) or the
        // end of the line (a request).
        let whole = (at == 0 || line[at - 1] == b' ') && matches!(after, None | Some(b' ' | b'\r'));
        if whole {
            let mut copy = Vec::with_capacity(raw.len());
            copy.extend_from_slice(&raw[..at]);
            copy.extend_from_slice(b"HTTP/1.1");
            copy.extend_from_slice(&raw[at + version.len()..]);
            return std::borrow::Cow::Owned(copy);
        }
    }
    std::borrow::Cow::Borrowed(raw)
}

/// A header's value, by its case-insensitive name.
fn header<'a>(headers: &[httparse::Header<'a>], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .and_then(|h| std::str::from_utf8(h.value).ok())
}

/// A message's body as text, a chunked one joined.
fn body_of(headers: &[httparse::Header<'_>], raw: &[u8]) -> String {
    let chunked =
        header(headers, "transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    match chunked {
        true => String::from_utf8_lossy(&dechunked(raw)).into_owned(),
        false => String::from_utf8_lossy(raw).into_owned(),
    }
}

/// A chunked body's data (RFC 9112 §7.1), as far as it is whole; the chunk
/// sizes are read by httparse.
fn dechunked(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(httparse::Status::Complete((start, size))) = httparse::parse_chunk_size(raw) {
        let Ok(size) = usize::try_from(size) else {
            break;
        };
        // `checked_add`: a size of `ffffffffffffffff` must not wrap.
        if size == 0 || start.checked_add(size).is_none_or(|end| end > raw.len()) {
            break;
        }
        out.extend_from_slice(&raw[start..start + size]);
        raw = raw.get(start + size + 2..).unwrap_or(&[]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_size_past_the_address_space_ends_the_body() {
        assert_eq!(dechunked(b"ffffffffffffffff\r\nxy\r\n0\r\n\r\n"), b"");
        assert_eq!(dechunked(b"2\r\nxy\r\nffffffffffffffff\r\nz"), b"xy");
    }

    #[test]
    fn an_httprr_trace_becomes_interactions() {
        let request = "POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\nContent-Length: 2\r\n\r\n{}";
        let response = "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n3\r\n\":1\r\n1\r\n}\r\n0\r\n\r\n";
        let text = format!(
            "httprr trace v1\n{} {}\n{request}{response}",
            request.len(),
            response.len()
        );
        let doc = httprr(&text).unwrap();
        let one = &doc["interactions"][0];
        assert_eq!(
            one["request"]["uri"],
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(one["request"]["body"]["string"], "{}");
        assert_eq!(one["response"]["status"]["code"], 400);
        // Go writes the version the exchange used: HTTP/2 heads read too.
        let response = parse_http(
            b"HTTP/2.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}",
            false,
        );
        assert_eq!(response["status"]["code"], 200);
        assert_eq!(response["body"]["string"], "{}");
        let request = parse_http(
            b"POST /v1/messages HTTP/2.0\r\nHost: api.anthropic.com\r\n\r\n{}",
            true,
        );
        assert_eq!(request["uri"], "https://api.anthropic.com/v1/messages");
        assert_eq!(
            parse_http(b"HTTP/3 201 Created\r\n\r\n", false)["status"]["code"],
            201
        );
        assert_eq!(one["response"]["body"]["string"], "{\"a\":1}");
        let cut = &text[..text.len() - 5];
        let e = httprr(cut).unwrap_err();
        assert_eq!(e.byte, 16, "{e}");
    }

    #[test]
    fn nock_and_langchain_and_single_files_take_the_vcr_shape() {
        let nock = json!([{"scope": "https://api.anthropic.com:443", "method": "POST",
            "path": "/v1/messages", "body": {"messages": []}, "status": 200,
            "response": {"content": []}}]);
        let doc = normalized(nock);
        assert_eq!(
            doc["interactions"][0]["request"]["uri"],
            "https://api.anthropic.com:443/v1/messages"
        );
        assert!(doc["interactions"][0]["request"]["parsed_body"].is_object());
        let lc = json!({"requests": [{"method": "POST", "uri": "u", "body": "{}"}],
            "responses": [{"status": {"code": 200}}]});
        assert_eq!(
            normalized(lc)["interactions"][0]["response"]["status"]["code"],
            200
        );
        let single = json!({"request": {"method": "POST", "url": "u", "body": ""},
            "response": {"status": {"code": 200}}});
        assert!(normalized(single)["interactions"].is_array());
        // A message array stays a message array.
        let messages = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(normalized(messages.clone()), messages);
    }
}
