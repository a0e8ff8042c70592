//! `loopdbg proxy`: a recording, checking reverse proxy between an agent
//! and its provider. Every request is checked by the library's gate before
//! it leaves; answers come back byte for byte, streamed ones chunk by chunk
//! as they arrive; each exchange is appended to the capture as it completes.
//!
//! The sockets, the clock and the capture file live here; what a request
//! means and what to do with it is decided in `loopdbg::live`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use anyhow::Context;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use loopdbg::live::capture::Exchange;
use loopdbg::live::gate::{Decision, OnInvalid, inspect};
use loopdbg::live::route::{provider_of, provider_of_path, redacted_path};
use loopdbg::live::stream::is_event_stream;
use loopdbg::wire::provider::Format;
use serde_json::Value;
use tokio::sync::mpsc;

// Paths spelled out: the proxy bench compiles this file into its own
// process too (to tell the binary's cost from the code's).
#[path = "proxy/relay.rs"]
mod relay;
#[path = "proxy/upstream.rs"]
mod upstream;
pub use relay::Ended;
use relay::Relay;
use upstream::Upstream;

/// The largest request body the proxy takes (providers refuse far less).
const MAX_REQUEST_BYTES: usize = 256 << 20;

/// How much of one answer the capture keeps; the agent gets all of it.
const MAX_CAPTURED_ANSWER: usize = 64 << 20;

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
/// plus the ones the client library sets itself.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// What `loopdbg proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where every request goes.
    pub upstream: reqwest::Url,
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The JSON Lines file exchanges are appended to.
    pub capture: Option<PathBuf>,
    /// What happens to a request the provider would reject.
    pub on_invalid: OnInvalid,
}

struct Shared {
    upstream: reqwest::Url,
    way: Upstream,
    on_invalid: OnInvalid,
    seq: AtomicU64,
    done: mpsc::UnboundedSender<Ended>,
}

/// A running proxy: its address and the exchanges as they complete.
pub struct Running {
    /// The address it listens on (the real port when 0 was asked).
    pub addr: SocketAddr,
    /// Completed exchanges, in the order they completed; each becomes
    /// its capture record with [`Ended::into_exchange`].
    pub exchanges: mpsc::UnboundedReceiver<Ended>,
}

/// Binds and starts serving on the current tokio runtime.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    let way = Upstream::new(&config.upstream).context("building the HTTP client")?;
    let (done, exchanges) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        upstream: config.upstream.clone(),
        way,
        on_invalid: config.on_invalid,
        seq: AtomicU64::new(0),
        done,
    });
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().fallback(forward).with_state(shared);
    // Without TCP_NODELAY a streamed answer's small writes wait for the
    // agent's delayed ACK: 40 ms added to every request.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Running { addr, exchanges })
}

/// The upstream URL for a request path: the upstream's own path prefix
/// (`https://host/api`) then the request's path and query.
fn upstream_url(base: &reqwest::Url, path_and_query: &str) -> reqwest::Url {
    let mut url = base.clone();
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    let prefix = base.path().trim_end_matches('/');
    url.set_path(&format!("{prefix}{path}"));
    url.set_query(query);
    url
}

fn forwarded_headers(incoming: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in incoming {
        let n = name.as_str();
        // Identity encoding, so the capture can read the answer; the agent
        // still receives exactly what the upstream sent.
        if HOP_BY_HOP.contains(&n) || n == "accept-encoding" {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// What is known of an exchange before its answer arrives.
struct Started {
    seq: u64,
    time: String,
    method: String,
    path: String,
    provider: Option<Format>,
    request: Value,
    forwarded: Option<Value>,
    findings: Vec<loopdbg::wire::check::Finding>,
    /// A request forwarded before it was judged: judged when the exchange
    /// is finished, after the agent has its answer.
    unjudged: Option<Bytes>,
    began: Instant,
}

impl Started {
    /// Takes what the gate read of the request.
    fn judged(&mut self, judged: Judged, bytes: &[u8]) {
        self.provider = judged.provider.or(self.provider);
        self.findings = judged.verdict.map(|v| v.findings).unwrap_or_default();
        self.request = judged
            .parsed
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    }

    /// Judges a request that was forwarded unread.
    fn judge_if_unread(&mut self) {
        if let Some(bytes) = self.unjudged.take() {
            let judged = judge(&self.path, &bytes, OnInvalid::Forward);
            self.judged(judged, &bytes);
        }
    }

    fn ms(&self, t: Instant) -> f64 {
        t.duration_since(self.began).as_secs_f64() * 1000.0
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let began = Instant::now();
    let (parts, body) = request.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let bytes = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            let body = serde_json::json!({"error": {"message": format!("loopdbg proxy: reading the request: {e}")}});
            return json_response(413, &body);
        }
    };
    let url = upstream_url(&shared.upstream, &path_and_query);
    let send = |body: Bytes| {
        shared.way.send(
            parts.method.clone(),
            &url,
            forwarded_headers(&parts.headers),
            body,
        )
    };
    let mut started = Started {
        seq,
        time: rfc3339(SystemTime::now()),
        method: parts.method.to_string(),
        path: redacted_path(&path_and_query),
        provider: None,
        request: Value::Null,
        forwarded: None,
        findings: Vec::new(),
        unjudged: None,
        began,
    };
    let mut action = "forwarded";
    let sent = if let OnInvalid::Forward = shared.on_invalid {
        // The verdict cannot change what is sent, so the request leaves
        // unread and is judged once the agent has its answer: the agent
        // waits for no check, and on a machine that also runs the
        // upstream the judging takes no core from it while it answers.
        // Only the provider is needed now, to reassemble a stream; the
        // path names it for every provider's own endpoints.
        started.provider = provider_of_path(&path_and_query).or_else(|| {
            provider_of(
                &path_and_query,
                serde_json::from_slice::<Value>(&bytes).ok().as_ref(),
            )
        });
        started.unjudged = Some(bytes.clone());
        send(bytes).await
    } else {
        // Block and repair judge first, since they may change the request.
        let judged = judge(&path_and_query, &bytes, shared.on_invalid);
        let decision = judged.verdict.as_ref().map(|v| v.decision.clone());
        started.judged(judged, &bytes);
        match decision {
            Some(Decision::Block { status, body }) => {
                let response = json_response(status, &body);
                let _ = shared
                    .done
                    .send(Ended::written(started, "blocked", status, body, None));
                return response;
            }
            Some(Decision::Repaired { body, .. }) => {
                let outgoing = Bytes::from(body.to_string());
                started.forwarded = Some(body);
                action = "repaired";
                send(outgoing).await
            }
            Some(Decision::Forward) | None => send(bytes).await,
        }
    };
    let upstream = match sent {
        Ok(r) => r,
        Err(e) => {
            let message = format!(
                "loopdbg proxy: the upstream could not be reached: {}",
                error_chain(&*e)
            );
            let body = serde_json::json!({"error": {"type": "proxy_error", "message": message}});
            let response = json_response(502, &body);
            let _ = shared
                .done
                .send(Ended::written(started, "failed", 502, body, Some(message)));
            return response;
        }
    };
    let status = upstream.status;
    let mut headers = HeaderMap::new();
    for (name, value) in &upstream.headers {
        if HOP_BY_HOP.contains(&name.as_str()) && name != header::CONTENT_LENGTH {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    let streamed = upstream
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_event_stream);

    let relay = Relay::new(
        status.as_u16(),
        upstream.body,
        started,
        action,
        streamed,
        shared.done.clone(),
    );
    let mut response = Response::new(Body::from_stream(relay));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A request as the gate read it.
struct Judged {
    parsed: Option<Value>,
    provider: Option<Format>,
    verdict: Option<loopdbg::live::gate::Verdict>,
}

/// Reads and checks a request body under `policy`.
fn judge(path_and_query: &str, bytes: &[u8], policy: OnInvalid) -> Judged {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let provider = provider_of(path_and_query, parsed.as_ref());
    let verdict = match (provider, &parsed) {
        (Some(format), Some(doc)) => Some(inspect(format, doc, policy)),
        _ => None,
    };
    Judged {
        parsed,
        provider,
        verdict,
    }
}

/// An error with its causes: reqwest's own text is only the outermost one.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// `2026-11-30T02:37:10.123Z` without a date crate: days since the epoch
/// to a civil date (Howard Hinnant's algorithm).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// One line per exchange, for `--no-tui` and logs.
pub fn summary_line(x: &Exchange) -> String {
    let provider = x.provider.unwrap_or("?");
    let mut line = format!(
        "#{} {} {} {} → {}{} {:.0} ms",
        x.seq,
        provider,
        x.method,
        x.path,
        x.status,
        if x.streamed { " streamed" } else { "" },
        x.latency_ms
    );
    let rejected = x.findings.iter().find(|f| f.rejected_by_provider);
    match (x.action, rejected) {
        ("blocked", Some(f)) => line.push_str(&format!(
            " · BLOCKED: {} ({})",
            loopdbg::diagnostics::inert::clean(&f.message),
            f.path
        )),
        ("repaired", Some(f)) => line.push_str(&format!(
            " · REPAIRED before forwarding: {} ({})",
            loopdbg::diagnostics::inert::clean(&f.message),
            f.path
        )),
        (_, Some(f)) => line.push_str(&format!(
            " · 400 expected: {} ({})",
            loopdbg::diagnostics::inert::clean(&f.message),
            f.path
        )),
        _ => {
            let warnings = x
                .findings
                .iter()
                .filter(|f| f.severity == "warning")
                .count();
            if warnings > 0 {
                line.push_str(&format!(" · {warnings} warning(s)"));
            } else {
                line.push_str(" · ok");
            }
        }
    }
    if let Some(e) = &x.error {
        line.push_str(&format!(" · {e}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_796_006_230_123);
        assert_eq!(rfc3339(t), "2026-11-30T02:37:10.123Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn the_upstream_prefix_is_kept() {
        let base = reqwest::Url::parse("https://example.test/api/").unwrap();
        assert_eq!(
            upstream_url(&base, "/v1/messages?beta=true").as_str(),
            "https://example.test/api/v1/messages?beta=true"
        );
        let bare = reqwest::Url::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(
            upstream_url(&bare, "/v1/chat/completions").as_str(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }

    #[test]
    fn credentials_and_hop_headers_are_not_the_proxys_to_keep() {
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("sk-secret"));
        h.insert("connection", HeaderValue::from_static("keep-alive"));
        h.insert("accept-encoding", HeaderValue::from_static("gzip"));
        let out = forwarded_headers(&h);
        // Forwarded to the upstream (it needs the key) but never recorded.
        assert!(out.contains_key("x-api-key"));
        assert!(!out.contains_key("connection"));
        assert!(!out.contains_key("accept-encoding"));
    }
}
