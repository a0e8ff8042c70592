//! The capture file: one JSON object per exchange, appended as each one
//! completes. Every reader of loopdbg takes it: `check` checks each request
//! as the agent built it; replay, `--follow` and `record` show each request
//! with the reply it got.

use serde_json::{Value, json};

use loopdbg_formats::provider::Format;
use loopdbg_formats::stream::Reassembler;

/// The marker every capture record carries (`"loopdbg": "exchange"`).
pub const MARKER: &str = "exchange";

/// True when `line` is a capture record.
pub fn is_exchange(line: &Value) -> bool {
    line.get("loopdbg").and_then(Value::as_str) == Some(MARKER) && line.get("request").is_some()
}

/// Whether a capture record holds a conversation: a model list, a token
/// count or any request without `messages`, `input` or `contents` is
/// traffic the proxy passed on, not a conversation to check.
pub fn holds_conversation(line: &Value) -> bool {
    line.get("request")
        .is_some_and(crate::parse::holds_conversation)
}

/// The request of a capture record, as the agent built it.
pub fn request_of(line: Value) -> Value {
    match line {
        Value::Object(mut o) => o.remove("request").unwrap_or(Value::Null),
        other => other,
    }
}

/// What the upstream answered the request of a capture record: its status
/// and, for an error, the provider's `error.message`. Only for a request
/// the proxy forwarded as the agent built it (a blocked one was answered
/// by loopdbg, a repaired one was not the request the agent built).
pub fn answer_of(line: &Value) -> Option<(u16, String)> {
    if line.get("action").and_then(Value::as_str) != Some("forwarded") {
        return None;
    }
    let status = u16::try_from(line.get("status")?.as_u64()?).ok()?;
    let response = line.get("response");
    let text = match response.and_then(|r| r.pointer("/error/message")) {
        Some(Value::String(m)) => m.clone(),
        _ if (200..300).contains(&status) => String::new(),
        _ => response.map(Value::to_string).unwrap_or_default(),
    };
    Some((status, text))
}

/// The model a capture record's path names (Gemini puts it there, not in
/// the body).
pub fn model_of(line: &Value) -> Option<String> {
    let path = line.get("path").and_then(Value::as_str)?;
    loopdbg_formats::route::model_of_path(path)
}

/// The provider a capture record names.
pub fn provider_of(line: &Value) -> Option<Format> {
    line.get("provider")
        .and_then(Value::as_str)
        .and_then(|p| p.parse().ok())
}

/// The conversation a capture record shows: the request with the reply it
/// got appended in the request's own format, so replay steps through the
/// reply too. A request that was not answered with a 2xx is left as it was.
pub fn conversation_of(line: Value) -> Value {
    let format = provider_of(&line);
    let ok = line
        .get("status")
        .and_then(Value::as_u64)
        .is_some_and(|s| (200..300).contains(&s));
    let response = line.get("response").cloned().unwrap_or(Value::Null);
    let mut request = request_of(line);
    if !ok {
        return request;
    }
    let Some(format) = format else {
        return request;
    };
    append_reply(&mut request, format, &response);
    request
}

/// The tokens a capture record's answer reports, and its model: a 2xx
/// response object, or a recorded event stream reassembled.
pub fn usage_of(line: &Value) -> Option<(loopdbg_engine::message::Usage, Option<String>)> {
    let ok = line
        .get("status")
        .and_then(Value::as_u64)
        .is_some_and(|s| (200..300).contains(&s));
    if !ok {
        return None;
    }
    let format = provider_of(line)?;
    let response = match line.get("response")? {
        Value::String(text) if loopdbg_formats::stream::looks_like_events(text) => {
            let mut r = Reassembler::new(format);
            r.feed(text.as_bytes());
            r.finish()
        }
        other => other.clone(),
    };
    loopdbg_formats::usage::of_response(format, &response)
}

/// Records `usage` (a capture record's, from [`usage_of`]) as that of
/// `conv`'s reply: its last message when the reply was appended, else the
/// message the reply would be.
pub fn attach_usage(
    conv: &mut crate::Conversation,
    usage: Option<(loopdbg_engine::message::Usage, Option<String>)>,
    appended: bool,
) {
    let Some((usage, model)) = usage else {
        return;
    };
    let ends_on_reply = conv
        .messages
        .last()
        .is_some_and(|m| m.role == loopdbg_engine::message::Role::Assistant);
    let message = match appended && ends_on_reply {
        true => conv.messages.len() - 1,
        false => conv.messages.len(),
    };
    conv.usage.push(crate::TripUsage {
        message,
        usage,
        model,
    });
}

/// Appends the reply a recorded response body carried to `request`: the
/// response object itself, a recorded event stream (text) reassembled, or
/// Gemini's streamed JSON array of chunks merged. What cannot be read as
/// a reply adds nothing.
pub fn append_recorded_reply(format: Format, request: &mut Value, body: &Value) {
    let reassembled = |events: &mut dyn Iterator<Item = String>| {
        let mut r = Reassembler::new(format);
        for event in events {
            r.feed(event.as_bytes());
        }
        r.finish()
    };
    let response = match body {
        Value::Object(_) => body.clone(),
        Value::String(text) if loopdbg_formats::stream::looks_like_events(text) => {
            reassembled(&mut std::iter::once(text.clone()))
        }
        Value::Array(chunks) if format == Format::Gemini => {
            reassembled(&mut chunks.iter().map(|c| format!("data: {c}\n\n")))
        }
        _ => return,
    };
    if response.is_object() {
        append_reply(request, format, &response);
    }
}

/// Appends the assistant turn of `response` to `request`.
pub fn append_reply(request: &mut Value, format: Format, response: &Value) {
    match format {
        Format::Anthropic => {
            if let (Some(messages), Some(content)) = (
                request.get_mut("messages").and_then(Value::as_array_mut),
                response.get("content"),
            ) {
                messages.push(json!({"role": "assistant", "content": content}));
            }
        }
        Format::Openai => {
            let message = response
                .get("choices")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("message"));
            if let (Some(messages), Some(message)) = (
                request.get_mut("messages").and_then(Value::as_array_mut),
                message,
            ) {
                let mut message = message.clone();
                if let Some(o) = message.as_object_mut() {
                    o.retain(|_, v| !v.is_null());
                    o.remove("annotations");
                    o.entry("content").or_insert(Value::Null);
                }
                messages.push(message);
            }
        }
        Format::Responses => {
            let Some(output) = response.get("output").and_then(Value::as_array) else {
                return;
            };
            if let Some(text) = request.get("input").and_then(Value::as_str) {
                request["input"] = json!([{"role": "user", "content": text}]);
            }
            if let Some(input) = request.get_mut("input").and_then(Value::as_array_mut) {
                input.extend(output.iter().cloned());
            }
        }
        Format::Bedrock => {
            if let (Some(messages), Some(message)) = (
                request.get_mut("messages").and_then(Value::as_array_mut),
                response.pointer("/output/message"),
            ) {
                messages.push(message.clone());
            }
        }
        Format::Gemini => {
            let content = response
                .get("candidates")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("content"));
            if let (Some(contents), Some(content)) = (
                request.get_mut("contents").and_then(Value::as_array_mut),
                content,
            ) {
                contents.push(content.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Source, read};

    fn line(provider: &str, status: u16, request: Value, response: Value) -> Value {
        json!({"loopdbg": "exchange", "seq": 1, "provider": provider,
               "request": request, "status": status, "response": response})
    }

    #[test]
    fn an_anthropic_reply_is_appended_as_the_assistant_turn() {
        let l = line(
            "anthropic",
            200,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}],
                "stop_reason": "tool_use"}),
        );
        assert!(is_exchange(&l));
        let body = conversation_of(l);
        let conv = read(&body, Source::Provider(Format::Anthropic)).unwrap();
        assert_eq!(conv.messages.len(), 2);
    }

    #[test]
    fn recorded_replies_are_read_from_objects_event_streams_and_chunk_arrays() {
        let ask = || json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        // An Anthropic stream as cassettes keep it: padded events, a ping.
        let events = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",",
            "\"role\":\"assistant\",\"content\":[]}      }\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,",
            "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"w\",\"input\":{}}   }\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,",
            "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": 1}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let mut request = ask();
        append_recorded_reply(Format::Anthropic, &mut request, &json!(events));
        assert_eq!(request["messages"][1]["content"][0]["id"], "toolu_1");
        assert_eq!(request["messages"][1]["content"][0]["input"]["city"], 1);

        let mut request = ask();
        append_recorded_reply(
            Format::Anthropic,
            &mut request,
            &json!({"role": "assistant", "content": [{"type": "text", "text": "yo"}]}),
        );
        assert_eq!(request["messages"][1]["content"][0]["text"], "yo");

        // Gemini's streamGenerateContent without `alt=sse`: a JSON array.
        let mut request = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        let chunks = json!([
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "Bei"}]}}]},
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "jing"}]},
                             "finishReason": "STOP"}]}]);
        append_recorded_reply(Format::Gemini, &mut request, &chunks);
        let parts = request["contents"][1]["parts"].as_array().unwrap();
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        assert_eq!(text, "Beijing");

        // Text that is no stream adds nothing.
        let mut request = ask();
        append_recorded_reply(Format::Anthropic, &mut request, &json!("upstream timeout"));
        assert_eq!(request, ask());
    }

    #[test]
    fn an_error_answer_adds_nothing() {
        let request = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let l = line("anthropic", 400, request.clone(), json!({"type": "error"}));
        assert_eq!(conversation_of(l), request);
    }

    #[test]
    fn openai_responses_and_gemini_replies_fit_their_requests() {
        let body = conversation_of(line(
            "openai",
            200,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"choices": [{"message": {"role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "f", "arguments": "{}"}}]}}]}),
        ));
        assert_eq!(body["messages"][1]["tool_calls"][0]["id"], "call_1");
        assert!(body["messages"][1].get("refusal").is_none());
        read(&body, Source::Provider(Format::Openai)).unwrap();

        let body = conversation_of(line(
            "responses",
            200,
            json!({"model": "m", "input": "hi"}),
            json!({"output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}),
        ));
        assert_eq!(body["input"][1]["call_id"], "c");
        read(&body, Source::Provider(Format::Responses)).unwrap();

        let body = conversation_of(line(
            "gemini",
            200,
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "yo"}]}}]}),
        ));
        assert_eq!(body["contents"][1]["parts"][0]["text"], "yo");
    }
}
