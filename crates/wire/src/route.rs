//! Which provider an HTTP request is for.

use serde_json::Value;

use crate::provider::Format;
use crate::read::{Source, detect};

/// The provider an endpoint path names, if any. The path decides first:
/// a body alone cannot tell Chat Completions from a Messages request whose
/// messages are plain strings.
pub fn provider_of_path(path: &str) -> Option<Format> {
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with("/messages") && !path.ends_with("/count_tokens") {
        Some(Format::Anthropic)
    } else if path.ends_with("/chat/completions") {
        Some(Format::Openai)
    } else if path.ends_with("/responses") {
        Some(Format::Responses)
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        Some(Format::Gemini)
    } else {
        None
    }
}

/// The provider of a request: from the path, else from the body.
pub fn provider_of(path: &str, body: Option<&Value>) -> Option<Format> {
    provider_of_path(path).or_else(|| match body.and_then(detect) {
        Some(Source::Provider(f)) => Some(f),
        _ => None,
    })
}

/// The path with credentials taken out of its query (`key=`, `api_key=`,
/// `access_token=`): what a capture and a log may show.
pub fn redacted_path(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_string();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let name = pair.split('=').next().unwrap_or("").to_ascii_lowercase();
            !SECRET_PARAMS.contains(&name.as_str())
        })
        .collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// Query parameters that carry credentials.
const SECRET_PARAMS: &[&str] = &["key", "api_key", "apikey", "access_token", "token"];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_name_their_provider() {
        assert_eq!(provider_of_path("/v1/messages"), Some(Format::Anthropic));
        assert_eq!(provider_of_path("/v1/messages/count_tokens"), None);
        assert_eq!(
            provider_of_path("/v1/chat/completions"),
            Some(Format::Openai)
        );
        assert_eq!(provider_of_path("/v1/responses"), Some(Format::Responses));
        assert_eq!(
            provider_of_path("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
            Some(Format::Gemini)
        );
        assert_eq!(provider_of_path("/v1/models"), None);
    }

    #[test]
    fn the_body_decides_when_the_path_does_not() {
        let body = json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]});
        assert_eq!(provider_of("/proxy", Some(&body)), Some(Format::Responses));
    }

    #[test]
    fn keys_never_leave_the_query() {
        assert_eq!(
            redacted_path("/v1beta/models/g:generateContent?key=SECRET&alt=sse"),
            "/v1beta/models/g:generateContent?alt=sse"
        );
        assert_eq!(redacted_path("/x?KEY=s"), "/x");
        assert_eq!(redacted_path("/v1/messages"), "/v1/messages");
    }
}
