//! `loopdbg proxy`: a recording, checking reverse proxy between an agent
//! and its provider. Every request is checked by the library's gate before
//! it leaves; answers come back byte for byte, streamed ones chunk by chunk
//! as they arrive; each exchange is appended to the capture as it completes.
//!
//! The sockets, the clock and the capture file live here; what a request
//! means and what to do with it is decided in [`gate`] and `loopdbg_wire`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use crate::gate::{Decision, OnInvalid, inspect};
use anyhow::Context;
use bytes::{Bytes, BytesMut};
use loopdbg_wire::capture::Exchange;
use loopdbg_wire::provider::Format;
use loopdbg_wire::route::{provider_of, provider_of_path, redacted_path};
use loopdbg_wire::stream::is_event_stream;
use reqwest::header::{self, HeaderMap};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

pub mod gate;
mod http1;
mod relay;
mod upstream;
pub use relay::Ended;
use relay::{Body, Returning, ToAgent};
use upstream::{Answer, Upstream};

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
    // The proxy reads the body whole before it forwards it.
    "expect",
];

/// Of [`HOP_BY_HOP`], the headers an answer relayed byte for byte keeps:
/// its body goes to the agent in the framing they describe.
const FRAMING: &[&str] = &["transfer-encoding", "content-length", "trailer"];

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
    start_on(config, way).await
}

/// [`start`] with the way to the upstream given (the tests take reqwest's
/// way to a plain-HTTP upstream, which is otherwise only taken to TLS).
async fn start_on(config: &Config, way: Upstream) -> anyhow::Result<Running> {
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
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((tcp, _)) => {
                    // Without TCP_NODELAY a streamed answer's small writes
                    // wait for the agent's delayed ACK: 40 ms added to
                    // every request.
                    let _ = tcp.set_nodelay(true);
                    tokio::spawn(serve(tcp, Arc::clone(&shared)));
                }
                // Out of file descriptors, most likely: the connections
                // being served will free some.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    });
    Ok(Running { addr, exchanges })
}

/// One agent connection: request after request, each answered before
/// the next is read (HTTP/1.1 without pipelining, as clients send it).
async fn serve(mut agent: TcpStream, shared: Arc<Shared>) {
    let mut inbox = BytesMut::new();
    loop {
        let request = match http1::read_request(&mut agent, &mut inbox, MAX_REQUEST_BYTES).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(refused) => {
                let body = serde_json::json!({"error": {"type": "proxy_error",
                    "message": format!("loopdbg proxy: reading the request: {}", refused.reason)}});
                let answer = http1::json_answer(refused.status, body.to_string().as_bytes(), true);
                let _ = agent.write_all(&answer).await;
                return;
            }
        };
        if !exchange(&shared, request, &mut agent).await {
            return;
        }
    }
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

/// Whether an agent's request header goes on to the upstream.
fn is_forwarded(name: &str) -> bool {
    // Identity encoding, so the capture can read the answer; the agent
    // still receives exactly what the upstream sent.
    !HOP_BY_HOP.contains(&name) && name != "accept-encoding"
}

fn forwarded_headers(incoming: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in incoming {
        if is_forwarded(name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Writes an answer the proxy makes itself; gives whether the agent's
/// connection can carry another request.
async fn write_json(agent: &mut TcpStream, status: u16, body: &Value, keep_alive: bool) -> bool {
    let answer = http1::json_answer(status, body.to_string().as_bytes(), !keep_alive);
    agent.write_all(&answer).await.is_ok() && keep_alive
}

/// What is known of an exchange before its answer arrives.
struct Started {
    seq: u64,
    /// When the request came (formatted for the record once it is over:
    /// the agent waits for none of the bookkeeping).
    time: SystemTime,
    method: String,
    path: String,
    provider: Option<Format>,
    request: Value,
    forwarded: Option<Value>,
    findings: Vec<loopdbg_wire::check::Finding>,
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

/// One request and its answer. Gives whether the agent's connection can
/// carry another request.
async fn exchange(shared: &Shared, request: http1::Request, agent: &mut TcpStream) -> bool {
    let began = Instant::now();
    // Origin form (`/v1/messages`) as clients send it; an absolute form
    // (`http://host/v1/messages`) keeps only its path and query, since the
    // proxy only ever forwards to its upstream.
    let path_and_query = if request.target.starts_with('/') {
        request.target.clone()
    } else {
        reqwest::Url::parse(&request.target)
            .map(|u| match u.query() {
                Some(q) => format!("{}?{q}", u.path()),
                None => u.path().to_string(),
            })
            .unwrap_or_else(|_| "/".into())
    };
    let keep_alive = request.keep_alive;
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let bytes = request.body;
    let method = request.method;
    let send = |body: Bytes| {
        shared.way.send(
            method.clone(),
            &shared.upstream,
            &path_and_query,
            &request.headers,
            body,
        )
    };
    let mut started = Started {
        seq,
        time: SystemTime::now(),
        method: method.to_string(),
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
                let open = write_json(agent, status, &body, keep_alive).await;
                let _ = shared
                    .done
                    .send(Ended::written(started, "blocked", status, body, None));
                return open;
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
    let answer = match sent {
        Ok(a) => a,
        Err(e) => {
            let message = format!(
                "loopdbg proxy: the upstream could not be reached: {}",
                error_chain(&*e)
            );
            let body = serde_json::json!({"error": {"type": "proxy_error", "message": message}});
            let open = write_json(agent, 502, &body, keep_alive).await;
            let _ = shared
                .done
                .send(Ended::written(started, "failed", 502, body, Some(message)));
            return open;
        }
    };
    let bodyless = method == reqwest::Method::HEAD;
    // An HTTP/1.0 agent cannot read chunks: it is given the payload, and
    // the end of the connection ends it.
    let old_agent = request.minor == 0;
    let (status, head, body, to_agent) = match answer {
        Answer::Raw { head, body } => {
            // The body goes as it came, so its framing headers stay; an
            // answer that runs to the close ends the agent's connection.
            let (to_agent, keep) = match body.framing() {
                http1::Framing::Chunked if old_agent => (ToAgent::PayloadThenClose, &[][..]),
                http1::Framing::UntilClose => (ToAgent::PayloadThenClose, FRAMING),
                _ => (ToAgent::AsRead, FRAMING),
            };
            let close = to_agent == ToAgent::PayloadThenClose || !keep_alive;
            let wire = agent_head(head.status, &head.reason, &head.headers, keep, None, close);
            (head.status, (wire, head.headers), Body::Raw(body), to_agent)
        }
        Answer::Decoded {
            status,
            headers,
            stream,
        } => {
            // reqwest has undone the framing; a length, when the upstream
            // gave one, still holds, since nothing was decompressed.
            let unframed = !headers.contains_key(header::CONTENT_LENGTH)
                && !bodyless
                && !matches!(status.as_u16(), 204 | 304);
            let to_agent = match (unframed, old_agent) {
                (false, _) => ToAgent::AsRead,
                (true, false) => ToAgent::Chunked,
                (true, true) => ToAgent::PayloadThenClose,
            };
            let wire = agent_head(
                status.as_u16(),
                status.canonical_reason().unwrap_or(""),
                &headers,
                &["content-length"],
                (to_agent == ToAgent::Chunked).then_some("transfer-encoding: chunked"),
                to_agent == ToAgent::PayloadThenClose || !keep_alive,
            );
            (
                status.as_u16(),
                (wire, headers),
                Body::Decoded(stream),
                to_agent,
            )
        }
    };
    let (wire, headers) = head;
    let streamed = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_event_stream);
    let returning = Returning::new(status, started, action, streamed, shared.done.clone());
    relay::relay(agent, &wire, body, to_agent, returning).await && keep_alive
}

/// The head of an answer to the agent: the upstream's status and headers
/// but the hop-by-hop ones (of which `keep` stay), then `extra`.
fn agent_head(
    status: u16,
    reason: &str,
    headers: &HeaderMap,
    keep: &[&str],
    extra: Option<&str>,
    close: bool,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(format!("HTTP/1.1 {status} {reason}\r\n").as_bytes());
    http1::put_headers(
        &mut out,
        headers.iter().filter(|(name, _)| {
            let n = name.as_str();
            !HOP_BY_HOP.contains(&n) || keep.contains(&n)
        }),
    );
    if let Some(extra) = extra {
        out.extend_from_slice(extra.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A request as the gate read it.
struct Judged {
    parsed: Option<Value>,
    provider: Option<Format>,
    verdict: Option<crate::gate::Verdict>,
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
            loopdbg_engine::diagnostics::inert::clean(&f.message),
            f.path
        )),
        ("repaired", Some(f)) => line.push_str(&format!(
            " · REPAIRED before forwarding: {} ({})",
            loopdbg_engine::diagnostics::inert::clean(&f.message),
            f.path
        )),
        (_, Some(f)) => line.push_str(&format!(
            " · 400 expected: {} ({})",
            loopdbg_engine::diagnostics::inert::clean(&f.message),
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

    /// An upstream that answers every request with `answer` as it is, and
    /// a proxy in front of it reached the given way (`None`: its own).
    async fn proxied(answer: &'static [u8], way: Option<Upstream>) -> (SocketAddr, Running) {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream =
            reqwest::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = tcp.read(&mut buf).await {
                        seen.extend_from_slice(&buf[..n]);
                        // Each test request has the body `{}`.
                        if seen.ends_with(b"\r\n\r\n{}") {
                            seen.clear();
                            tcp.write_all(answer).await.unwrap();
                        }
                    }
                });
            }
        });
        let config = Config {
            upstream: upstream.clone(),
            listen: "127.0.0.1:0".parse().unwrap(),
            capture: None,
            on_invalid: OnInvalid::Forward,
        };
        let way = way.unwrap_or_else(|| Upstream::new(&upstream).unwrap());
        let running = start_on(&config, way).await.unwrap();
        (running.addr, running)
    }

    /// What an agent reads on its socket for one request.
    async fn raw_answer(proxy: SocketAddr) -> Vec<u8> {
        raw_answer_to(proxy, "1.1").await
    }

    /// The same from an agent speaking HTTP/`version`.
    async fn raw_answer_to(proxy: SocketAddr, version: &str) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let mut tcp = TcpStream::connect(proxy).await.unwrap();
        let request = format!(
            "POST /v1/messages HTTP/{version}\r\nhost: x\r\nx-api-key: k\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{{}}"
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        tcp.read_to_end(&mut got).await.unwrap();
        got
    }

    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\ntrailer: x-done\r\n\r\n\
        1d;ext=1\r\nevent: message_stop\ndata: {}\n\r\n\
        4\r\n\n\n\n\n\r\n0\r\nx-done: yes\r\n\r\n";

    #[tokio::test]
    async fn a_plain_answer_reaches_the_agent_byte_for_byte_framing_and_all() {
        let (proxy, mut running) = proxied(CHUNKED, None).await;
        let got = raw_answer(proxy).await;
        let body_at = CHUNKED.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(
            got.ends_with(&CHUNKED[body_at..]),
            "chunk sizes, extensions and trailers as sent:\n{}",
            String::from_utf8_lossy(&got)
        );
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!((x.status, x.streamed, x.action), (200, true, "forwarded"));
    }

    #[tokio::test]
    async fn an_http_1_0_agent_is_given_the_payload_and_the_close() {
        for way in [None, Some(Upstream::Tls(Upstream::client().unwrap()))] {
            let (proxy, _running) = proxied(CHUNKED, way).await;
            let got = String::from_utf8(raw_answer_to(proxy, "1.0").await).unwrap();
            let (head, body) = got.split_once("\r\n\r\n").unwrap();
            assert!(
                !head.contains("transfer-encoding") && !head.contains("trailer"),
                "{head}"
            );
            assert!(head.contains("connection: close"), "{head}");
            assert_eq!(body, "event: message_stop\ndata: {}\n\n\n\n\n");
        }
    }

    #[tokio::test]
    async fn an_answer_through_reqwest_is_chunked_again_for_the_agent() {
        let way = Upstream::Tls(Upstream::client().unwrap());
        let (proxy, _running) = proxied(CHUNKED, Some(way)).await;
        let got = String::from_utf8(raw_answer(proxy).await).unwrap();
        let (head, body) = got.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        assert_eq!(head.matches("transfer-encoding").count(), 1, "{head}");
        let mut decoder = http1::Chunked::default();
        let mut payload = Vec::new();
        decoder
            .feed(body.as_bytes(), |r| {
                payload.extend_from_slice(&body.as_bytes()[r])
            })
            .unwrap();
        assert!(decoder.is_done());
        assert_eq!(payload, b"event: message_stop\ndata: {}\n\n\n\n\n");
    }

    #[tokio::test]
    async fn a_length_through_reqwest_is_kept() {
        let way = Upstream::Tls(Upstream::client().unwrap());
        let answer = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"error\":1}";
        let (proxy, mut running) = proxied(answer, Some(way)).await;
        let got = String::from_utf8(raw_answer(proxy).await).unwrap();
        assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
        assert!(
            got.contains("content-length: 11\r\n") && got.ends_with("\r\n\r\n{\"error\":1}"),
            "{got}"
        );
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.response["error"], 1);
    }

    #[tokio::test]
    async fn an_unreadable_request_is_answered_400_and_the_connection_closed() {
        use tokio::io::AsyncReadExt;
        let (proxy, _running) = proxied(CHUNKED, None).await;
        let mut tcp = TcpStream::connect(proxy).await.unwrap();
        tcp.write_all(
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 2\r\n\r\n{}",
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        tcp.read_to_end(&mut got).await.unwrap();
        let got = String::from_utf8(got).unwrap();
        assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
        assert!(
            got.contains("both transfer-encoding and content-length"),
            "{got}"
        );
    }

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
        use reqwest::header::HeaderValue;
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("sk-secret"));
        h.insert("connection", HeaderValue::from_static("keep-alive"));
        h.insert("accept-encoding", HeaderValue::from_static("gzip"));
        h.insert("expect", HeaderValue::from_static("100-continue"));
        let out = forwarded_headers(&h);
        assert!(!out.contains_key("expect"), "the body goes whole");
        // Forwarded to the upstream (it needs the key) but never recorded.
        assert!(out.contains_key("x-api-key"));
        assert!(!out.contains_key("connection"));
        assert!(!out.contains_key("accept-encoding"));
    }
}
