//! Which provider an HTTP request is for.

use crate::provider::Format;

/// The provider an endpoint path names, if any. The path decides first:
/// a body alone cannot tell Chat Completions from a Messages request whose
/// messages are plain strings.
pub fn provider_of_path(path: &str) -> Option<Format> {
    let path = path.split('?').next().unwrap_or(path);
    if let Some(model) = bedrock_model(path) {
        // Bedrock Runtime: Converse is Bedrock's own format; InvokeModel
        // carries the model's own body (Anthropic's, for Claude).
        return if path.ends_with("/converse") || path.ends_with("/converse-stream") {
            Some(Format::Bedrock)
        } else if (path.ends_with("/invoke") || path.ends_with("/invoke-with-response-stream"))
            && model.contains("anthropic")
        {
            Some(Format::Anthropic)
        } else {
            None
        };
    }
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

/// The model a path names, for the APIs that put it there instead of in
/// the body: Gemini's `/v1beta/models/gemini-2.5-pro:generateContent`
/// (and Vertex AI's `…/publishers/google/models/…`).
pub fn model_of_path(path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or(path);
    if let Some(model) = bedrock_model(path) {
        return Some(model);
    }
    let (_, rest) = path.rsplit_once("/models/")?;
    let model = rest.split([':', '/']).next()?;
    (!model.is_empty()).then(|| model.to_string())
}

/// Whether a path is Bedrock Runtime's (`/model/{modelId}/…`): its SDKs
/// read errors in Bedrock's shape whatever the body's format.
pub fn is_bedrock_path(path: &str) -> bool {
    bedrock_model(path.split('?').next().unwrap_or(path)).is_some()
}

/// The model id of a Bedrock Runtime path, `/model/{modelId}/{operation}`,
/// percent-decoded (an inference profile's ARN comes encoded).
fn bedrock_model(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/model/")?;
    let (id, _operation) = rest.split_once('/')?;
    let pair = format!("m={id}");
    let (_, decoded) = form_urlencoded::parse(pair.as_bytes()).next()?;
    (!decoded.is_empty()).then(|| decoded.into_owned())
}

/// Endpoints that carry no conversation (embeddings, moderation, images,
/// audio, files, token counts, batches, legacy completions): a recording
/// is read around them, and the proxy's gate forwards them unjudged.
pub fn carries_no_conversation(route: &str) -> bool {
    let route = route.split('?').next().unwrap_or(route);
    const SUFFIXES: &[&str] = &[
        "/embeddings",
        "/moderations",
        "/completions",
        "/count_tokens",
        ":countTokens",
        ":embedContent",
        ":batchEmbedContents",
        "/rerank",
    ];
    const PARTS: &[&str] = &[
        "/images/", "/audio/", "/files", "/batches", "/models", "/uploads",
    ];
    (SUFFIXES.iter().any(|s| route.ends_with(s)) && !route.ends_with("/chat/completions"))
        || PARTS.iter().any(|p| route.contains(p))
            && !route.contains(":generateContent")
            && !route.contains(":streamGenerateContent")
}

/// The path with credentials taken out of its query: what a capture and a
/// log may show. A parameter is judged by its name as a server reads it
/// (percent-decoded, `+` as a space, case and `-`/`_` ignored, a trailing
/// `[]` dropped), so `k%65y=`, `Api-Key=` and `key[]=` go as `key=` does;
/// `;` separates parameters as `&` does, since some servers split on it.
pub fn redacted_path(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_string();
    };
    let kept: Vec<&str> = query
        .split(['&', ';'])
        .filter(|pair| !pair.is_empty() && !is_secret_param(pair))
        .collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// A URL as it may be shown: a password in its user info is replaced by
/// `***`, and its query redacted as [`redacted_path`] redacts one.
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{user_info}@{host}"),
        },
        None => authority.to_string(),
    };
    let shown = redacted_path(&format!("{authority}{tail}"));
    match scheme {
        "" => shown,
        scheme => format!("{scheme}://{shown}"),
    }
}

/// Whether one `name=value` pair of a query carries a credential.
pub fn is_secret_param(pair: &str) -> bool {
    let Some((name, _)) = form_urlencoded::parse(pair.as_bytes()).next() else {
        return false;
    };
    let name: String = name
        .trim()
        .trim_end_matches("[]")
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_PARAMS.contains(&name.as_str())
}

/// Query parameters that carry credentials, as [`is_secret_param`] folds
/// their names: Gemini's `key`, Azure's `api-key`, OAuth's tokens and
/// secrets, signed URLs' signatures, and passwords.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "apikey",
    "xgoogapikey",
    "accesstoken",
    "token",
    "idtoken",
    "refreshtoken",
    "clientsecret",
    "secret",
    "password",
    "passwd",
    "sig",
    "signature",
    "xamzsignature",
    "xamzsecuritytoken",
    "auth",
    "authorization",
    // OAuth's authorization code and session ids log a user in as well as
    // a key does; `sk` is a bare secret key; the rest of a SigV4 URL.
    "code",
    "session",
    "sessionid",
    "privatekey",
    "sk",
    "xamzcredential",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password_or_key() {
        assert_eq!(
            redacted_url("https://me:hunter2@proxy.example:8443/v1?key=AIza1&alt=sse"),
            "https://me:***@proxy.example:8443/v1?alt=sse"
        );
        assert_eq!(
            redacted_url("http://127.0.0.1:4318/v1/traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(redacted_url("http://tok@host/"), "http://tok@host/");
        assert_eq!(
            redacted_path(
                "/cb?code=4%2F0Ad&session=s3&private_key=k&sk=x&X-Amz-Credential=AKIA%2F&n=1"
            ),
            "/cb?n=1"
        );
    }

    #[test]
    fn gemini_paths_name_their_model() {
        assert_eq!(
            model_of_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
            Some("gemini-2.5-flash".to_string())
        );
        assert_eq!(
            model_of_path(
                "/v1/projects/p/locations/us/publishers/google/models/gemini-3-pro-preview:generateContent"
            ),
            Some("gemini-3-pro-preview".to_string())
        );
        assert_eq!(
            model_of_path("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"),
            Some("us.anthropic.claude-sonnet-4-5-20250929-v1:0".to_string())
        );
        assert_eq!(model_of_path("/v1/messages"), None);
    }

    #[test]
    fn bedrock_paths_name_their_format() {
        let model = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0";
        assert_eq!(
            provider_of_path(&format!("{model}/converse")),
            Some(Format::Bedrock)
        );
        assert_eq!(
            provider_of_path(&format!("{model}/converse-stream")),
            Some(Format::Bedrock)
        );
        assert_eq!(
            provider_of_path(&format!("{model}/invoke")),
            Some(Format::Anthropic)
        );
        assert_eq!(
            provider_of_path(&format!("{model}/invoke-with-response-stream")),
            Some(Format::Anthropic)
        );
        assert_eq!(
            provider_of_path("/model/amazon.titan-text-express-v1/invoke"),
            None
        );
    }

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
    fn keys_never_leave_the_query() {
        assert_eq!(
            redacted_path("/v1beta/models/g:generateContent?key=SECRET&alt=sse"),
            "/v1beta/models/g:generateContent?alt=sse"
        );
        assert_eq!(redacted_path("/x?KEY=s"), "/x");
        assert_eq!(redacted_path("/v1/messages"), "/v1/messages");
    }

    #[test]
    fn credentials_are_cut_however_their_name_is_spelled() {
        for query in [
            "key=SECRET",
            "api-key=SECRET",
            "Api-Key=SECRET",
            "API_KEY=SECRET",
            "access-token=SECRET",
            "client_secret=SECRET",
            "password=SECRET",
            "sig=SECRET",
            "k%65y=SECRET",
            "%6Bey=SECRET",
            "key%5B%5D=SECRET",
            "key[]=SECRET",
            "x-goog-api-key=SECRET",
        ] {
            for sep in ['&', ';'] {
                let path = format!("/v1/x?alt=sse{sep}{query}{sep}n=1");
                let cut = redacted_path(&path);
                assert!(!cut.contains("SECRET"), "{path} -> {cut}");
                assert!(cut.contains("alt=sse") && cut.contains("n=1"), "{cut}");
            }
        }
        assert_eq!(redacted_path("/v1/models?keys=3"), "/v1/models?keys=3");
    }
}
