//! The way to the upstream: hyper-util's pooled client, over plain TCP for
//! `http://` and rustls (with the `ring` provider, the system's roots) for
//! `https://`, where ALPN picks HTTP/2 when the provider offers it. Framing,
//! connection reuse and the retry of a request no connection ever wrote
//! are the client's; what is forwarded is decided here.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderName};
use hyper::http::uri::Scheme;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// An idle connection is not reused after this long: servers close their
/// side after a few seconds (uvicorn: 5), and a connection closed under a
/// request costs the agent an error.
const IDLE_FOR: Duration = Duration::from_secs(30);

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
/// plus `host` and `content-length`, which the client sets for the request
/// it sends. Neither way do they cross the proxy.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The pooled client every exchange shares.
#[derive(Clone)]
pub struct Upstream {
    base: Uri,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Upstream {
    /// The way to `base` (`http://` or `https://`).
    pub fn new(base: &Uri) -> anyhow::Result<Upstream> {
        let mut tcp = HttpConnector::new();
        // Without TCP_NODELAY a streamed answer's small writes wait for a
        // delayed ACK: 40 ms added to every request.
        tcp.set_nodelay(true);
        tcp.enforce_http(false);
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(native_roots())
        .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_FOR)
            .pool_timer(TokioTimer::new())
            .build(https);
        Ok(Upstream {
            base: base.clone(),
            client,
        })
    }

    /// Sends one request for `path_and_query` under the base (the agent's
    /// headers but the hop-by-hop ones) and waits for the answer's head.
    #[allow(
        clippy::expect_used,
        reason = "the method and URI were parsed before they came here"
    )]
    pub async fn send(
        &self,
        method: hyper::Method,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        let uri = upstream_url(&self.base, path_and_query);
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Full::new(body))
            .expect("a request from parts that parsed");
        *request.headers_mut() = forwarded_headers(headers);
        // The upstream URL's user info, unless the agent sent credentials
        // of its own.
        if !headers.contains_key(hyper::header::AUTHORIZATION)
            && let Some(basic) = basic_credentials(&self.base)
            && let Ok(value) = hyper::header::HeaderValue::from_str(&basic)
        {
            request
                .headers_mut()
                .insert(hyper::header::AUTHORIZATION, value);
        }
        self.client.request(request).await
    }
}

/// The roots the system trusts; none (every https upstream then fails with
/// a named error) rather than no proxy at all on a machine without them.
fn native_roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    roots
}

/// Reads `--upstream`: an absolute `http://` or `https://` URL with a
/// host, its path a prefix for every request (`https://host/api`).
pub fn parse_upstream(text: &str) -> Result<Uri, String> {
    let uri: Uri = text.parse().map_err(|e| format!("`{text}`: {e}"))?;
    let hint = |what: &str| {
        let example = match uri.authority() {
            Some(a) if uri.scheme().is_none() => format!(" such as http://{a}"),
            _ => String::new(),
        };
        format!("`{text}`: {what}; expected an http:// or https:// URL{example}")
    };
    match uri.scheme() {
        Some(s) if *s == Scheme::HTTP || *s == Scheme::HTTPS => {}
        Some(s) => return Err(hint(&format!("the scheme is {s}"))),
        None => return Err(hint("no scheme")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(hint("no host"));
    }
    Ok(uri)
}

/// The upstream URL for a request path: the upstream's own path prefix
/// (`https://host/api`) then the request's path; the upstream's own query
/// (Azure's `api-version`, `alt=sse`) then the request's. User info is
/// not part of it: it goes as Basic credentials ([`basic_credentials`]).
pub fn upstream_url(base: &Uri, path_and_query: &str) -> Uri {
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map_or("", |a| a.as_str());
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let prefix = base.path().trim_end_matches('/');
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_and_query, None),
    };
    let query = match (base.query().filter(|q| !q.is_empty()), query) {
        (Some(own), Some(asked)) => format!("?{own}&{asked}"),
        (Some(own), None) => format!("?{own}"),
        (None, Some(asked)) => format!("?{asked}"),
        (None, None) => String::new(),
    };
    format!("{scheme}://{host}{prefix}{path}{query}")
        .parse()
        .unwrap_or_else(|_| base.clone())
}

/// `Basic …` for the user info of `base` (`https://user:pass@host`,
/// percent-decoded), as curl sends it; `None` without user info.
pub fn basic_credentials(base: &Uri) -> Option<String> {
    use base64::Engine;
    let (user_info, _) = base.authority()?.as_str().rsplit_once('@')?;
    let decoded = percent_encoding::percent_decode_str(user_info).decode_utf8_lossy();
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(decoded.as_bytes())
    ))
}

/// Whether an agent's request header goes on to the upstream.
fn is_forwarded(name: &HeaderName) -> bool {
    let name = name.as_str();
    // `host` and `content-length` are the client's to set for the request
    // it sends; the body goes whole, so `expect` has been answered here.
    // Identity encoding, so the capture can read the answer; the agent
    // still receives exactly what the upstream sent.
    !HOP_BY_HOP.contains(&name)
        && !matches!(
            name,
            "host" | "content-length" | "expect" | "accept-encoding"
        )
}

/// Whether a request carries an AWS Signature Version 4 (Bedrock's SDKs
/// sign every request).
pub fn is_sigv4_signed(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256"))
}

/// The agent's headers as the upstream receives them. A SigV4-signed
/// request keeps every header it signed, `host` and `accept-encoding`
/// too (the AWS SDKs sign all but a few; a changed one fails the
/// signature): only hop-by-hop headers and `expect`, answered here and
/// never signed, are left out.
pub fn forwarded_headers(incoming: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(incoming.len());
    let signed = is_sigv4_signed(incoming);
    for (name, value) in incoming {
        let kept = match signed {
            true => !HOP_BY_HOP.contains(&name.as_str()) && name.as_str() != "expect",
            false => is_forwarded(name),
        };
        if kept {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// The upstream's headers as the agent receives them: all but the
/// hop-by-hop ones. A `content-length` stays: the body is passed on whole,
/// so it still holds, and the agent's framing follows it.
pub fn returned_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_prefix_is_kept() {
        let base = parse_upstream("https://example.test/api/").unwrap();
        assert_eq!(
            upstream_url(&base, "/v1/messages?beta=true").to_string(),
            "https://example.test/api/v1/messages?beta=true"
        );
        let bare = parse_upstream("http://127.0.0.1:9").unwrap();
        assert_eq!(
            upstream_url(&bare, "/v1/chat/completions").to_string(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }

    /// The upstream's own query goes with every request, before the
    /// request's; its user info goes as Basic credentials, not in the URL
    /// (both were silently dropped).
    #[test]
    fn the_upstreams_query_and_user_info_are_sent() {
        let azure = parse_upstream(
            "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
        )
        .unwrap();
        assert_eq!(
            upstream_url(&azure, "/chat/completions?x=1").to_string(),
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21&x=1"
        );
        assert_eq!(
            upstream_url(&azure, "/chat/completions").to_string(),
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        let with_user = parse_upstream("https://me%40x:p%3Ass@gw.example/v1").unwrap();
        assert_eq!(
            upstream_url(&with_user, "/messages").to_string(),
            "https://gw.example/v1/messages"
        );
        // base64("me@x:p:ss")
        assert_eq!(
            basic_credentials(&with_user).as_deref(),
            Some("Basic bWVAeDpwOnNz")
        );
        assert_eq!(basic_credentials(&azure), None);
    }

    #[test]
    fn an_upstream_without_a_scheme_is_refused_with_the_url_it_meant() {
        let e = parse_upstream("127.0.0.1:8080").unwrap_err();
        assert!(e.contains("such as http://127.0.0.1:8080"), "{e}");
        assert!(
            parse_upstream("ftp://x/")
                .unwrap_err()
                .contains("scheme is ftp")
        );
        assert!(parse_upstream("http:///v1").is_err());
    }

    #[test]
    fn credentials_go_on_and_connection_headers_stop_here() {
        use hyper::header::HeaderValue;
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("sk-secret"));
        h.insert("connection", HeaderValue::from_static("keep-alive"));
        h.insert("accept-encoding", HeaderValue::from_static("gzip"));
        h.insert("expect", HeaderValue::from_static("100-continue"));
        h.insert("host", HeaderValue::from_static("127.0.0.1:1"));
        let out = forwarded_headers(&h);
        assert!(!out.contains_key("expect"), "the body goes whole");
        // Forwarded to the upstream (it needs the key) but never recorded.
        assert!(out.contains_key("x-api-key"));
        assert!(!out.contains_key("connection"));
        assert!(!out.contains_key("accept-encoding"));
        assert!(!out.contains_key("host"), "the upstream's own host is sent");
    }
}
