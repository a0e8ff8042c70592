//! `loopdbg proxy`: a recording, checking reverse proxy between an agent
//! and its provider. Every request is checked by the [`gate`] before it
//! leaves (or, under `--on-invalid forward`, once the agent has its
//! answer); answers come back frame by frame as they arrive; each exchange
//! is handed to the caller as it completes, to be written to the capture.
//!
//! HTTP is hyper's: its server toward the agent (HTTP/1.1 and 1.0, with a
//! header-read timeout that also closes idle connections, and limits on
//! header size and count) and hyper-util's pooled client toward the
//! upstream (`upstream`). This crate's own code is the policy: where a
//! request goes, what is checked, what is kept, what is never written.
#![forbid(unsafe_code)]

/// The gate is the wire crate's: the Python guard decides with it too.
pub use loopdbg_judge::gate;
pub mod capture;
pub mod capture_file;
pub mod live;
pub mod mcp;
pub mod mcp_http;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod shutdown;

mod answer;
mod upstream;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::capture::{Action, Exchange};
use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use loopdbg_formats::provider::Format;
use loopdbg_formats::route::{provider_of_path, redacted_path, redacted_url};
use loopdbg_formats::stream::{is_aws_event_stream, is_event_stream};
use loopdbg_read::provider_of_request;
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, watch};

pub use answer::{Bodies, Ended};
use answer::{Returning, Tapped};
use gate::{Decision, Judged, OnInvalid, OnUnjudged, judge};
use upstream::Upstream;
pub use upstream::parse_upstream;

/// The largest request body the proxy takes (providers refuse far less).
const MAX_REQUEST_BYTES: usize = 256 << 20;

/// How much of one answer the capture keeps; the agent gets all of it.
const MAX_CAPTURED_ANSWER: usize = 64 << 20;

/// The most header lines one request may carry (hyper answers 431 past it).
const MAX_HEADERS: usize = 128;

/// The most bytes a request's head may take (hyper answers 431 past it).
const MAX_HEAD_BYTES: usize = 64 << 10;

/// What `loopdbg proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where every request goes.
    pub upstream: Uri,
    /// The address to listen on.
    pub listen: SocketAddr,
    /// What happens to a request the provider would reject.
    pub on_invalid: OnInvalid,
    /// Under `block` and `repair`: what happens to a request the checker
    /// cannot read.
    pub on_unjudged: OnUnjudged,
    /// How long a connection may take to send a request's head, counted
    /// from when the proxy starts waiting for it: a slow client's head, or
    /// an idle kept-alive connection, is closed after this.
    pub header_timeout: Duration,
    /// The most agent connections served at once; the next waits in the
    /// listen queue until one ends.
    pub max_connections: usize,
    /// How many KiB of requests may wait for the capture's writer before
    /// the next request waits for room ([`UNWRITTEN_KIB`]).
    pub unwritten_kib: usize,
    /// How many bytes of recent request bodies' conversations the gate
    /// keeps, to read each agent's next request only past the messages
    /// it shares with the last ([`gate::HISTORIES_BUDGET`]; 0 reads every
    /// request whole).
    pub histories_budget: usize,
}

impl Config {
    /// What the proxy says when it starts listening on `addr`: where it
    /// forwards (a key in the upstream's query or a password in its user
    /// info is not shown), what it does
    /// with a request it would refuse, and where exchanges are recorded.
    pub fn banner(
        &self,
        addr: &str,
        capture: Option<&std::path::Path>,
        otlp: Option<&str>,
    ) -> String {
        format!(
            "loopdbg proxy: listening on http://{addr} → {} · --on-invalid {}{} · {}{}",
            redacted_url(&self.upstream.to_string()),
            self.on_invalid,
            match self.on_invalid {
                gate::OnInvalid::Forward => String::new(),
                _ => format!(" (unreadable requests: {})", self.on_unjudged),
            },
            capture.map_or_else(
                || "no capture: exchanges are not recorded (--capture FILE records them)"
                    .to_string(),
                |p| format!("capture {}", p.display())
            ),
            otlp.map_or(String::new(), |url| format!(
                " · each exchange as an OTLP span to {}",
                redacted_url(url)
            ))
        )
    }

    /// The defaults for everything but where to listen and forward.
    pub fn new(upstream: Uri, listen: SocketAddr) -> Config {
        Config {
            upstream,
            listen,
            on_invalid: OnInvalid::Forward,
            on_unjudged: OnUnjudged::Block,
            header_timeout: Duration::from_secs(30),
            max_connections: 512,
            unwritten_kib: UNWRITTEN_KIB,
            histories_budget: gate::HISTORIES_BUDGET,
        }
    }
}

struct Shared {
    way: Upstream,
    on_invalid: OnInvalid,
    on_unjudged: OnUnjudged,
    seq: AtomicU64,
    done: mpsc::UnboundedSender<Ended>,
    in_flight: Arc<watch::Sender<InFlight>>,
    /// What the gate remembers: the calls of the Responses answers
    /// relayed, for the requests that continue them
    /// (`previous_response_id`; issue 23, item 16), and recent
    /// conversations, read past for each agent's next request.
    memory: Memory,
    /// How long a request body may send nothing before it is cut off (the
    /// header timeout's length: hyper's covers only the head).
    body_idle: Duration,
    /// The request bytes of the exchanges ended and not yet taken by the
    /// capture's writer, in KiB: a request waits for room before it is
    /// forwarded, so a writer that falls behind slows the agents instead
    /// of the queue growing without end (1,000 back-to-back 2 MB requests
    /// took 1.1 GB; issue 59).
    unwritten: Arc<Semaphore>,
    unwritten_kib: usize,
    /// How many requests wait on `unwritten`.
    waiting: watch::Sender<usize>,
    /// Under block and repair, the requests being judged before they
    /// leave: at most one per core, each on a blocking thread.
    judges: Arc<Semaphore>,
}

/// How many KiB of requests may wait for the capture's writer.
pub const UNWRITTEN_KIB: usize = 256 << 10;

/// What the proxy's gate remembers ([`gate::Memory`]), shared by the
/// exchanges.
type Memory = Arc<gate::Memory>;

/// The exchanges the proxy is in the middle of: a live view shows a long
/// stream as in flight instead of as no traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InFlight {
    /// How many exchanges have started and not ended.
    pub count: usize,
    /// The newest one to start: its number and `METHOD /path` (the query
    /// redacted as in the capture).
    pub newest: Option<(u64, String)>,
}

/// Counts one exchange in flight from its start until it is over: the
/// exchange's record holds it, so it is dropped when the record is taken
/// (or when an exchange no one will record is abandoned).
struct FlightGuard(Arc<watch::Sender<InFlight>>);

impl FlightGuard {
    fn new(sender: &Arc<watch::Sender<InFlight>>, seq: u64, what: String) -> FlightGuard {
        sender.send_modify(|f| {
            f.count += 1;
            f.newest = Some((seq, what));
        });
        FlightGuard(Arc::clone(sender))
    }
}

impl Drop for FlightGuard {
    fn drop(&mut self) {
        self.0.send_modify(|f| f.count = f.count.saturating_sub(1));
    }
}

/// A running proxy: its address and the exchanges as they complete.
pub struct Running {
    /// The address it listens on (the real port when 0 was asked).
    pub addr: SocketAddr,
    /// Completed exchanges, in the order they completed; each becomes
    /// its capture record with [`Ended::into_exchange`].
    pub exchanges: mpsc::UnboundedReceiver<Ended>,
    /// The exchanges started and not yet ended, as they change.
    pub in_flight: watch::Receiver<InFlight>,
    /// Stops taking connections when it is sent `true` (or dropped): the
    /// exchanges in flight go on.
    pub stop_accepting: watch::Sender<bool>,
    /// How many requests wait for the capture's writer to catch up
    /// ([`Config::unwritten_kib`]) before they are forwarded.
    pub waiting_for_capture: watch::Receiver<usize>,
}

/// The upstream is the proxy's own address: a bad `--upstream`, refused
/// before anything is forwarded.
#[derive(Debug, thiserror::Error)]
#[error(
    "the upstream {upstream} is this proxy's own address ({listening}): every request would be forwarded back to the proxy until it ran out of connections; give the provider's URL to --upstream"
)]
pub struct ForwardsToItself {
    /// The upstream as given, its password hidden.
    pub upstream: String,
    /// Where the proxy listens.
    pub listening: SocketAddr,
}

/// Whether `upstream` names the address the proxy listens on: the same
/// port on the same IP, a loopback IP when the proxy listens on every
/// interface, or `localhost` when it listens on loopback or everywhere. A name that only DNS could
/// resolve to it is not caught.
fn forwards_to_itself(upstream: &Uri, listening: SocketAddr) -> bool {
    let port = upstream.port_u16().unwrap_or(match upstream.scheme_str() {
        Some("https") => 443,
        _ => 80,
    });
    if port != listening.port() {
        return false;
    }
    let host = upstream.host().unwrap_or("").trim_matches(['[', ']']);
    let listen = listening.ip();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip == listen || (ip.is_loopback() && listen.is_unspecified()),
        Err(_) => {
            host.eq_ignore_ascii_case("localhost")
                && (listen.is_loopback() || listen.is_unspecified())
        }
    }
}

/// Binds and starts serving on the current tokio runtime.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    let way = Upstream::new(&config.upstream).context("building the HTTP client")?;
    let (done, exchanges) = mpsc::unbounded_channel();
    let (in_flight, watching) = watch::channel(InFlight::default());
    let (waiting, waiting_for_capture) = watch::channel(0);
    let shared = Arc::new(Shared {
        way,
        on_invalid: config.on_invalid,
        on_unjudged: config.on_unjudged,
        seq: AtomicU64::new(0),
        done,
        in_flight: Arc::new(in_flight),
        memory: Arc::new(gate::Memory::new(config.histories_budget)),
        body_idle: config.header_timeout,
        unwritten: Arc::new(Semaphore::new(config.unwritten_kib.max(1))),
        unwritten_kib: config.unwritten_kib.max(1),
        waiting,
        judges: Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(2, usize::from),
        )),
    });
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let addr = listener.local_addr()?;
    if forwards_to_itself(&config.upstream, addr) {
        return Err(ForwardsToItself {
            upstream: redacted_url(&config.upstream.to_string()),
            listening: addr,
        }
        .into());
    }
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_headers(MAX_HEADERS)
        .max_header_size(MAX_HEAD_BYTES);
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let (stop_accepting, mut stopped) = watch::channel(false);
    tokio::spawn(async move {
        loop {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                // Shutting down: the listener closes, connections served
                // so far finish on their own tasks.
                _ = stopped.wait_for(|stop| *stop) => return,
            };
            let tcp = match accepted {
                Ok((tcp, _)) => tcp,
                // Out of file descriptors, most likely: the connections
                // being served will free some.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Without TCP_NODELAY a streamed answer's small writes wait
            // for the agent's delayed ACK: 40 ms added to every request.
            let _ = tcp.set_nodelay(true);
            let shared = Arc::clone(&shared);
            let serving = http.serve_connection(
                TokioIo::new(tcp),
                service_fn(move |request| {
                    let shared = Arc::clone(&shared);
                    async move { Ok::<_, Infallible>(exchange(&shared, request).await) }
                }),
            );
            tokio::spawn(async move {
                // A connection's end, clean or not, is the agent's business;
                // each exchange on it was recorded as it ended.
                let _ = serving.await;
                drop(slot);
            });
        }
    });
    Ok(Running {
        addr,
        exchanges,
        in_flight: watching,
        stop_accepting,
        waiting_for_capture,
    })
}

/// What the agent is answered with: the proxy's own JSON, or the upstream's
/// body passing through.
type AgentBody = Either<Full<Bytes>, Tapped>;

/// An answer the proxy makes itself, in the JSON shape providers use.
fn own_answer(status: u16, body: &Value, close: bool) -> Response<AgentBody> {
    let mut answer = Response::new(Either::Left(Full::new(Bytes::from(body.to_string()))));
    *answer.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    // Bedrock's SDKs read an error's type from this header.
    if let Some(kind) = body.get("__type").and_then(Value::as_str)
        && let Ok(value) = HeaderValue::from_str(kind)
    {
        headers.insert("x-amzn-errortype", value);
    }
    if close {
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}

/// The proxy's own error, as providers shape theirs.
fn proxy_error(message: String) -> Value {
    serde_json::json!({"error": {"type": "proxy_error", "message": message}})
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
    /// The request as the agent sent it, parsed for the record only when
    /// the exchange is written: the check reads its own parse (keeping
    /// texts as fingerprints), so the body is never held three times.
    body: Bytes,
    /// False for a request forwarded before it was judged: judged when the
    /// exchange is finished, after the agent has its answer.
    judged: bool,
    forwarded: Option<Value>,
    findings: Vec<loopdbg_judge::check::Finding>,
    began: Instant,
    /// Counted in flight while this exchange lasts.
    _flight: FlightGuard,
    /// The credentials the request carried: masked wherever they turn up
    /// in its record (an upstream's error that repeats the URL).
    secrets: loopdbg_formats::secrets::Known,
    /// Where its answer is remembered if it is a Responses answer, and
    /// what it is judged against (a stored response it continues, the
    /// conversation its history continues).
    memory: Memory,
    /// Its share of [`Shared::unwritten`], given back when its record is
    /// taken (this is dropped).
    _room: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Started {
    /// Takes what the gate read of the request.
    fn take_verdict(&mut self, judged: Judged) {
        self.judged = true;
        self.provider = judged.provider.or(self.provider);
        self.findings = judged.verdict.map(|v| v.findings).unwrap_or_default();
    }

    /// The request for the record, judged first if it was forwarded
    /// unread; the body is let go once it is parsed.
    fn request_for_record(&mut self, bodies: answer::Bodies) -> Value {
        if !self.judged {
            let judged = judge(
                &self.path,
                &self.body,
                OnInvalid::Forward,
                OnUnjudged::Forward,
                &self.memory,
            );
            self.take_verdict(judged);
        }
        let body = std::mem::take(&mut self.body);
        if body.is_empty() || bodies == answer::Bodies::Dropped {
            return Value::Null;
        }
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    }

    fn ms(&self, t: Instant) -> f64 {
        t.duration_since(self.began).as_secs_f64() * 1000.0
    }
}

/// The request's path and query. Origin form (`/v1/messages`) as clients
/// send it; an absolute form (`http://host/v1/messages`) keeps only its
/// path and query, since the proxy only ever forwards to its upstream.
fn path_and_query(request: &Request<Incoming>) -> String {
    request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .filter(|p| p.starts_with('/'))
        .unwrap_or_else(|| "/".into())
}

/// One request and its answer.
async fn exchange(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<AgentBody> {
    let began = Instant::now();
    let path_and_query = path_and_query(&request);
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let (head, body) = request.into_parts();
    let path = redacted_path(&path_and_query);
    let flight = FlightGuard::new(&shared.in_flight, seq, format!("{} {path}", head.method));
    let secrets = loopdbg_formats::secrets::Known::of_request(
        head.headers
            .iter()
            .filter_map(|(name, value)| value.to_str().ok().map(|v| (name.as_str(), v))),
        &path_and_query,
    );
    let mut started = Started {
        seq,
        time: SystemTime::now(),
        method: head.method.to_string(),
        path,
        provider: None,
        body: Bytes::new(),
        judged: true,
        forwarded: None,
        findings: Vec::new(),
        began,
        _flight: flight,
        secrets,
        memory: shared.memory.clone(),
        _room: None,
    };
    // Reading the body answers an `expect: 100-continue` on the way.
    let length = head
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let bytes = match read_body(body, length, shared.body_idle).await {
        Ok(bytes) => {
            let kib = (bytes.len() >> 10).clamp(1, shared.unwritten_kib);
            started._room = match Arc::clone(&shared.unwritten).try_acquire_many_owned(kib as u32) {
                Ok(room) => Some(room),
                Err(_) => {
                    shared.waiting.send_modify(|n| *n += 1);
                    let room = Arc::clone(&shared.unwritten)
                        .acquire_many_owned(kib as u32)
                        .await
                        .ok();
                    shared.waiting.send_modify(|n| *n -= 1);
                    room
                }
            };
            bytes
        }
        Err(e) => {
            let too_large = e.is::<http_body_util::LengthLimitError>();
            let (status, why) = if too_large {
                (413, format!("the body is over {MAX_REQUEST_BYTES} bytes"))
            } else if e.is::<TooSlow>() {
                (408, e.to_string())
            } else if e.is::<tokio::time::error::Elapsed>() {
                (
                    408,
                    format!("the body sent nothing for {} s", shared.body_idle.as_secs()),
                )
            } else {
                (400, error_chain(&*e))
            };
            let message = format!("loopdbg proxy: reading the request: {why}");
            let body = proxy_error(message.clone());
            let _ = shared.done.send(Ended::written(
                started,
                Action::Failed,
                status,
                body.clone(),
                Some(message),
            ));
            return own_answer(status, &body, true);
        }
    };
    let signed = upstream::is_sigv4_signed(&head.headers);
    let leaving;
    (started, leaving) =
        judged_off_the_workers(shared, started, &path_and_query, bytes, signed).await;
    let (outgoing, action) = match leaving {
        Ok(leaving) => leaving,
        Err(blocked) => {
            let (status, body) = *blocked;
            let answer = own_answer(status, &body, false);
            let _ = shared
                .done
                .send(Ended::written(started, Action::Blocked, status, body, None));
            return answer;
        }
    };
    let answer = match shared
        .way
        .send(head.method, &path_and_query, &head.headers, outgoing)
        .await
    {
        Ok(answer) => answer,
        Err(e) => {
            let message = format!(
                "loopdbg proxy: the upstream could not be reached: {}",
                error_chain(&e)
            );
            let body = proxy_error(message.clone());
            let answer = own_answer(502, &body, false);
            let _ = shared.done.send(Ended::written(
                started,
                Action::Failed,
                502,
                body,
                Some(message),
            ));
            return answer;
        }
    };
    let (parts, body) = answer.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let framed = content_type.is_some_and(is_aws_event_stream);
    let streamed = framed || content_type.is_some_and(is_event_stream);
    let encoding = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let mut returning = Returning::new(
        parts.status.as_u16(),
        started,
        action,
        streamed,
        framed,
        shared.done.clone(),
    );
    // Block and repair judge the next request before it leaves: a
    // Responses answer is remembered as it ends, not when it is recorded.
    returning.remember_at_end = shared.on_invalid != OnInvalid::Forward;
    returning.decode(encoding.as_deref());
    let mut to_agent = Response::new(Either::Right(Tapped::new(body, returning)));
    *to_agent.status_mut() = parts.status;
    *to_agent.headers_mut() = upstream::returned_headers(&parts.headers);
    to_agent
}

/// A request's body in one buffer. Each frame is copied in and freed as
/// it comes: collecting the frames first and joining them after held the
/// body twice (and the allocator kept the frames' memory), which with the
/// parsed request made the proxy's peak about four times the body (issue
/// 23, item 12). The buffer grows as bytes arrive, toward the announced
/// `content-length` but never reserved on its word alone: 13 connections
/// announcing 250 MB and sending one byte each took 3 GB before (issue 38).
/// A body that sends nothing for `idle` is cut off: slow bodies held every
/// connection slot, since the head timeout does not cover them (issue 38).
/// So is one that trickles slower than [`MIN_BODY_RATE`] past its grace: a
/// byte every 29 s kept 520 connections, and every agent behind them,
/// waiting for as long as the senders liked (issue 59, item 4).
async fn read_body(
    body: Incoming,
    length: Option<usize>,
    idle: Duration,
) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    let mut body = Limited::new(body, MAX_REQUEST_BYTES);
    let announced = length.unwrap_or(0).min(MAX_REQUEST_BYTES);
    let mut buffer = bytes::BytesMut::with_capacity(announced.min(FIRST_RESERVE));
    let began = tokio::time::Instant::now();
    loop {
        let now = tokio::time::Instant::now();
        let due =
            began + BODY_RATE_GRACE + Duration::from_secs(buffer.len() as u64 / MIN_BODY_RATE);
        if due <= now {
            return Err(Box::new(TooSlow));
        }
        // Whichever comes first; a body silent for `idle` is said as such.
        let frame = match tokio::time::timeout_at(due.min(now + idle), body.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(_) if due < now + idle => return Err(Box::new(TooSlow)),
            Err(elapsed) => return Err(Box::new(elapsed)),
        };
        if let Ok(data) = frame?.into_data() {
            let wanted = grown_capacity(buffer.capacity(), buffer.len(), data.len(), announced);
            buffer.reserve(wanted.saturating_sub(buffer.len()));
            buffer.extend_from_slice(&data);
        }
    }
    Ok(buffer.freeze())
}

/// The slowest a request body may arrive, on average, once its grace is
/// over: Kestrel's `MinRequestBodyDataRate` (240 bytes/s, 5 s of grace),
/// the field's guard against bodies sent a byte at a time. An agent on any
/// real link sends its body in milliseconds.
const MIN_BODY_RATE: u64 = 240;

/// How long a request body may take before [`MIN_BODY_RATE`] applies.
const BODY_RATE_GRACE: Duration = Duration::from_secs(5);

/// A request body that arrived slower than [`MIN_BODY_RATE`].
#[derive(Debug)]
struct TooSlow;

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "the body arrived slower than {MIN_BODY_RATE} bytes/s after {} s",
            BODY_RATE_GRACE.as_secs()
        )
    }
}

impl std::error::Error for TooSlow {}

/// What a request body's buffer holds before any byte arrives, at most:
/// enough for an agent's long history (a 2 MB body in one buffer of its
/// size; at 1 MiB its first MiB was copied into a second buffer and
/// another 2 MiB faulted in, 7 % of the gateway's CPU). Reserved is not
/// resident: with 500 connections announcing 250 MB and sending one byte
/// the proxy stayed at 23.4 MB resident with 1 MiB reserved and 24.7 MB
/// with 4 MiB; only its address space grew (1.2 → 3.3 GB).
const FIRST_RESERVE: usize = 4 << 20;

/// The capacity a body buffer of `capacity` holding `len` bytes needs for
/// `incoming` more: unchanged while they fit, else doubled, but not past
/// what was announced (an honest body ends in one buffer of its size) nor
/// short of what arrived.
fn grown_capacity(capacity: usize, len: usize, incoming: usize, announced: usize) -> usize {
    let needed = len + incoming;
    if needed <= capacity {
        return capacity;
    }
    let doubled = capacity.saturating_mul(2).max(FIRST_RESERVE);
    let capped = match announced >= needed {
        true => doubled.min(announced),
        false => doubled,
    };
    capped.max(needed)
}

/// [`outgoing`], judged where no other stream waits for it: under block
/// and repair the request is read and checked before it leaves, which for
/// a 2 MB history is milliseconds of CPU; on the runtime's workers that
/// held every other exchange on the same worker, bytes of streamed
/// answers included. So it runs on a blocking thread, at most one per
/// core at once ([`Shared::judges`]); a request waiting its turn waits
/// asynchronously. Under `forward` nothing is judged before the request
/// leaves (the capture's consumer judges it, off the workers too).
async fn judged_off_the_workers(
    shared: &Arc<Shared>,
    mut started: Started,
    path_and_query: &str,
    bytes: Bytes,
    signed: bool,
) -> (Started, Leaving) {
    if let OnInvalid::Forward = shared.on_invalid {
        let leaving = outgoing(shared, &mut started, path_and_query, bytes, signed);
        return (started, leaving);
    }
    let turn = Arc::clone(&shared.judges).acquire_owned().await.ok();
    let shared = Arc::clone(shared);
    let path_and_query = path_and_query.to_string();
    let judging = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let leaving = outgoing(&shared, &mut started, &path_and_query, bytes, signed);
        (started, leaving)
    });
    match judging.await {
        Ok(judged) => judged,
        // As it would have inline: a panic in the check is this
        // exchange's, and hyper answers its connection with a reset.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// What [`outgoing`] decides.
type Leaving = Result<(Bytes, Action), Box<(u16, Value)>>;

/// What leaves for the upstream, and why: the request as the agent sent
/// it (judged after the answer under `forward`), or repaired; `Err` with
/// the status and body of the provider-shaped 400 when it is blocked.
fn outgoing(
    shared: &Shared,
    started: &mut Started,
    path_and_query: &str,
    bytes: Bytes,
    signed: bool,
) -> Leaving {
    if let OnInvalid::Forward = shared.on_invalid {
        // The verdict cannot change what is sent, so the request leaves
        // unread and is judged once the agent has its answer: the agent
        // waits for no check, and on a machine that also runs the
        // upstream the judging takes no core from it while it answers.
        // Only the provider is needed now, to reassemble a stream; the
        // path names it for every provider's own endpoints.
        started.provider = provider_of_path(path_and_query).or_else(|| {
            provider_of_request(
                path_and_query,
                serde_json::from_slice::<Value>(&bytes).ok().as_ref(),
            )
        });
        started.body = bytes.clone();
        started.judged = false;
        return Ok((bytes, Action::Forwarded));
    }
    // Block and repair judge first, since they may change the request.
    let judged = judge(
        path_and_query,
        &bytes,
        shared.on_invalid,
        shared.on_unjudged,
        &shared.memory,
    );
    let decision = judged.verdict.as_ref().map(|v| v.decision.clone());
    started.take_verdict(judged);
    started.body = bytes.clone();
    match decision {
        Some(Decision::Block { status, body })
            if loopdbg_formats::route::is_bedrock_path(path_and_query) =>
        {
            Err(Box::new((status, crate::gate::as_bedrock_error(&body))))
        }
        Some(Decision::Block { status, body }) => Err(Box::new((status, body))),
        // A SigV4 signature covers the body: a repaired body would be
        // refused for its signature, so the request is stopped instead.
        Some(Decision::Repaired { .. }) if signed => {
            let why = started
                .findings
                .iter()
                .find(|f| f.rejected_by_provider())
                .map_or(String::new(), |f| f.message.clone());
            let message = format!(
                "{why} The request is signed (AWS SigV4), and its signature covers the body, so it cannot be repaired on the way; it was not sent"
            );
            let body =
                crate::gate::error_body(started.provider.unwrap_or(Format::Bedrock), &message);
            Err(Box::new((400, crate::gate::as_bedrock_error(&body))))
        }
        Some(Decision::Repaired { body, .. }) => {
            // What the repair left alone goes as the agent wrote it.
            let original = String::from_utf8_lossy(&bytes);
            let outgoing = Bytes::from(loopdbg_formats::edit::rewrite(&original, &body));
            started.forwarded = Some(body);
            Ok((outgoing, Action::Repaired))
        }
        Some(Decision::Forward) | None => Ok((bytes, Action::Forwarded)),
    }
}

/// An error with its causes: a client's own text is only the outermost one.
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

/// `2026-11-30T02:37:10.123Z`: RFC 3339 in UTC, to the millisecond.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// What an answer that is not a success says, in words: a provider's
/// refusal, a rate limit, an overload, or loopdbg's own 502.
fn status_said(x: &Exchange) -> Option<String> {
    let what = match x.status {
        200..=399 => return None,
        502 if x.action == Action::Failed => "loopdbg's own 502: the upstream could not be reached",
        400 => "the provider refused the request",
        401 | 403 => "the provider refused the credentials",
        404 => "the provider does not know this path",
        413 => "the request is too large for the provider",
        429 => "rate limited by the provider",
        529 | 503 => "the provider is overloaded",
        500..=599 => "the provider failed",
        _ => "the provider refused it",
    };
    Some(format!("{what} ({})", x.status))
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
    let rejected = x.findings.iter().find(|f| f.rejected_by_provider());
    match (x.action, rejected) {
        (Action::Blocked, Some(f)) => line.push_str(&format!(
            " · BLOCKED: {} ({})",
            loopdbg_engine::diagnostics::inert::clean(&f.message),
            f.path
        )),
        (Action::Repaired, Some(f)) => line.push_str(&format!(
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
                .filter(|f| f.severity == loopdbg_read::finding::Severity::Warning)
                .count();
            match (warnings, status_said(x)) {
                (_, Some(said)) => line.push_str(&format!(" · {said}")),
                // An exchange that ended in an error (the agent left, the
                // upstream broke off) is not "ok": the error says what.
                (0, None) if x.error.is_some() => {}
                (0, None) => line.push_str(" · ok"),
                (n, None) => line.push_str(&format!(" · {n} warning(s)")),
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
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;

    const EVENTS: [&str; 4] = [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"18°C\"}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ];

    const STREAM_HEAD: &str =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

    fn chunk(payload: &str) -> String {
        format!("{:x}\r\n{payload}\r\n", payload.len())
    }

    /// A body is not reserved on its announced length: at most 1 MiB
    /// before bytes arrive, doubled as they do, ending at the announced
    /// size for an honest body.
    #[test]
    fn a_body_buffer_grows_with_what_arrives_not_with_what_is_announced() {
        let announced = 250 << 20;
        assert!(announced.min(FIRST_RESERVE) <= 4 << 20);
        // One byte of a 250 MB announcement: the first reserve holds it.
        assert_eq!(
            grown_capacity(FIRST_RESERVE, 0, 1, announced),
            FIRST_RESERVE
        );
        // An honest body: doubling until the announced size, never past it.
        let (mut capacity, mut len) = (FIRST_RESERVE, 0usize);
        while len < announced {
            let chunk = (64 << 10).min(announced - len);
            capacity = grown_capacity(capacity, len, chunk, announced);
            len += chunk;
            assert!(capacity >= len && capacity <= announced);
        }
        assert_eq!(capacity, announced);
        // More than was announced still fits.
        assert_eq!(grown_capacity(10, 10, 5, 10), FIRST_RESERVE);
    }

    #[test]
    fn an_upstream_that_is_the_proxys_own_address_is_caught() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        let own = |u: &str, l: &str| forwards_to_itself(&parse_upstream(u).unwrap(), at(l));
        assert!(own("http://127.0.0.1:8700", "127.0.0.1:8700"));
        assert!(own("http://localhost:8700/v1", "127.0.0.1:8700"));
        assert!(own("http://[::1]:8700", "0.0.0.0:8700"));
        assert!(own("http://10.0.0.5:8700", "10.0.0.5:8700"));
        assert!(!own("http://127.0.0.2:8700", "127.0.0.1:8700"));
        assert!(!own("http://127.0.0.1:8701", "127.0.0.1:8700"));
        assert!(!own("https://api.anthropic.com", "127.0.0.1:443"));
        assert!(!own("http://10.0.0.5:8700", "127.0.0.1:8700"));
    }

    /// An upstream on loopback that reads one request (its body is `{}`)
    /// and hands the connection to `answer`; it counts the requests it saw.
    async fn upstream<F, Fut>(answer: F) -> (Uri, Arc<AtomicUsize>)
    where
        F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        upstream_until(b"\r\n\r\n{}", answer).await
    }

    /// [`upstream`], a request read until what came ends with `end`.
    async fn upstream_until<F, Fut>(end: &'static [u8], answer: F) -> (Uri, Arc<AtomicUsize>)
    where
        F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = parse_upstream(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                let (answer, counter) = (Arc::clone(&answer), Arc::clone(&counter));
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !got.ends_with(end) {
                        match tcp.read(&mut buf).await {
                            Ok(n @ 1..) => got.extend_from_slice(&buf[..n]),
                            _ => return,
                        }
                    }
                    counter.fetch_add(1, Ordering::SeqCst);
                    answer(tcp).await;
                });
            }
        });
        (url, seen)
    }

    /// An upstream that writes `answer` whole and closes.
    async fn upstream_writing(answer: &'static [u8]) -> (Uri, Arc<AtomicUsize>) {
        upstream(move |mut tcp| async move {
            tcp.write_all(answer).await.unwrap();
        })
        .await
    }

    async fn proxy_to(url: Uri) -> Running {
        start(&Config::new(url, "127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap()
    }

    /// An agent's raw request over HTTP/`version`, closing after it.
    fn request(version: &str) -> String {
        format!(
            "POST /v1/messages HTTP/{version}\r\nhost: x\r\nx-api-key: k\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{{}}"
        )
    }

    /// What an agent reads on its socket for one request, to the close.
    async fn raw_answer(proxy: SocketAddr, version: &str) -> String {
        let mut tcp = TcpStream::connect(proxy).await.unwrap();
        tcp.write_all(request(version).as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let _ = tcp.read_to_end(&mut got).await;
        String::from_utf8(got).unwrap()
    }

    /// The payload of a chunked body (test side only: the proxy decodes
    /// nothing itself).
    fn unchunk(mut body: &str) -> String {
        let mut payload = String::new();
        loop {
            let (size, rest) = body.split_once("\r\n").expect("a chunk size line");
            let size = usize::from_str_radix(size.split(';').next().unwrap(), 16).unwrap();
            if size == 0 {
                return payload;
            }
            payload.push_str(&rest[..size]);
            body = &rest[size + 2..];
        }
    }

    fn chunked_stream() -> &'static [u8] {
        let text = format!(
            "{STREAM_HEAD}{}{}0\r\n\r\n",
            chunk(EVENTS[0]),
            chunk(EVENTS[3])
        );
        Box::leak(text.into_boxed_str()).as_bytes()
    }

    #[tokio::test]
    async fn a_chunked_stream_reaches_the_agent_with_the_same_payload() {
        let (url, _) = upstream_writing(chunked_stream()).await;
        let mut running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.1").await;
        let (head, body) = got.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(head.matches("transfer-encoding: chunked").count(), 1);
        assert_eq!(unchunk(body), [EVENTS[0], EVENTS[3]].concat());
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(
            (x.status, x.streamed, x.action),
            (200, true, Action::Forwarded)
        );
        assert_eq!(x.response["id"], "msg_1");
        assert!(x.error.is_none(), "{:?}", x.error);
    }

    #[tokio::test]
    async fn a_summary_keeps_the_verdict_and_drops_the_request_body() {
        let (url, _) = upstream_until(b"]}", |mut tcp| async move {
            tcp.write_all(chunked_stream()).await.unwrap();
        })
        .await;
        let mut running = proxy_to(url).await;
        let body = r#"{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":"next"}]}"#;
        let mut tcp = TcpStream::connect(running.addr).await.unwrap();
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: k\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(body.as_bytes()).await.unwrap();
        let _ = tcp.read_to_end(&mut Vec::new()).await;
        let x = running
            .exchanges
            .recv()
            .await
            .unwrap()
            .record(Bodies::Dropped);
        assert_eq!(x.request, Value::Null);
        assert_eq!((x.status, x.action), (200, Action::Forwarded));
        let rejected = x.findings.iter().find(|f| f.rejected_by_provider());
        assert!(
            rejected.is_some_and(|f| f.message.contains("toolu_1")),
            "{:?}",
            x.findings
        );
    }

    #[tokio::test]
    async fn an_http_1_0_agent_is_given_the_payload_and_the_close() {
        let (url, _) = upstream_writing(chunked_stream()).await;
        let running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.0").await;
        let (head, body) = got.split_once("\r\n\r\n").unwrap();
        assert!(!head.contains("transfer-encoding"), "{head}");
        assert_eq!(body, [EVENTS[0], EVENTS[3]].concat());
    }

    #[tokio::test]
    async fn a_length_from_the_upstream_is_kept() {
        let (url, _) = upstream_writing(
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"error\":1}",
        )
        .await;
        let mut running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.1").await;
        assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
        assert!(got.contains("content-length: 11\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\n{\"error\":1}"), "{got}");
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.response["error"], 1);
        assert!(x.error.is_none(), "{:?}", x.error);
    }

    /// A stream the upstream holds open is in flight from the request on,
    /// named by its number and path; it stops counting when its record is
    /// taken (issue 22, item 12: a live view said "no traffic yet" through
    /// a long stream).
    #[tokio::test]
    async fn a_stream_held_open_is_in_flight_until_its_record_is_taken() {
        let (release, held) = std::sync::mpsc::channel::<oneshot::Receiver<()>>();
        let held = std::sync::Mutex::new(held);
        let (url, _) = upstream(move |mut tcp| {
            let gate = held.lock().unwrap().recv().unwrap();
            async move {
                tcp.write_all(format!("{STREAM_HEAD}{}", chunk(EVENTS[0])).as_bytes())
                    .await
                    .unwrap();
                gate.await.unwrap();
                tcp.write_all(format!("{}0\r\n\r\n", chunk(EVENTS[3])).as_bytes())
                    .await
                    .unwrap();
            }
        })
        .await;
        let (open, gate) = oneshot::channel();
        release.send(gate).unwrap();
        let mut running = proxy_to(url).await;
        assert_eq!(running.in_flight.borrow().count, 0);
        let agent = tokio::spawn(raw_answer(running.addr, "1.1"));
        let now = running
            .in_flight
            .wait_for(|f| f.count == 1)
            .await
            .unwrap()
            .clone();
        assert_eq!(now.newest, Some((1, "POST /v1/messages".to_string())));
        open.send(()).unwrap();
        agent.await.unwrap();
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.seq, 1);
        assert_eq!(running.in_flight.borrow().count, 0);
    }

    /// Each event reaches the agent before the upstream sends the next:
    /// nothing is held back to the end of the answer.
    #[tokio::test]
    async fn each_event_reaches_the_agent_before_the_next_is_sent() {
        let (next_tx, next_rx) = std::sync::mpsc::channel::<oneshot::Receiver<()>>();
        let next_rx = std::sync::Mutex::new(next_rx);
        let (url, _) = upstream(move |mut tcp| {
            let gates: Vec<oneshot::Receiver<()>> = (1..EVENTS.len())
                .map(|_| next_rx.lock().unwrap().recv().unwrap())
                .collect();
            async move {
                tcp.write_all(format!("{STREAM_HEAD}{}", chunk(EVENTS[0])).as_bytes())
                    .await
                    .unwrap();
                for (gate, event) in gates.into_iter().zip(&EVENTS[1..]) {
                    gate.await.unwrap();
                    tcp.write_all(chunk(event).as_bytes()).await.unwrap();
                }
                tcp.write_all(b"0\r\n\r\n").await.unwrap();
            }
        })
        .await;
        let mut gates = Vec::new();
        for _ in 1..EVENTS.len() {
            let (tx, rx) = oneshot::channel();
            next_tx.send(rx).unwrap();
            gates.push(tx);
        }
        let mut running = proxy_to(url).await;
        let mut agent = TcpStream::connect(running.addr).await.unwrap();
        agent.write_all(request("1.1").as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let mut gates = gates.into_iter();
        for event in EVENTS {
            // Liveness only: a proxy that held the event back would leave
            // this read waiting for ever.
            while !String::from_utf8_lossy(&seen).contains(event) {
                let n = tokio::time::timeout(Duration::from_secs(20), agent.read(&mut buf))
                    .await
                    .expect("the event arrives while the upstream waits")
                    .unwrap();
                assert!(n > 0, "the answer ended early");
                seen.extend_from_slice(&buf[..n]);
            }
            if let Some(gate) = gates.next() {
                gate.send(()).unwrap();
            }
        }
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.response["content"][0]["text"], "18°C");
        assert!(x.first_byte_ms.is_some());
    }

    #[tokio::test]
    async fn an_upstream_that_breaks_off_breaks_the_agents_answer_too() {
        let (url, _) = upstream(|mut tcp| async move {
            let partial = format!("{STREAM_HEAD}{}", chunk(EVENTS[0]));
            tcp.write_all(partial.as_bytes()).await.unwrap();
            // The connection ends inside the chunked body.
        })
        .await;
        let mut running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.1").await;
        assert!(
            !got.ends_with("0\r\n\r\n"),
            "the agent sees no clean end: {got}"
        );
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.action, Action::Failed);
        assert!(
            x.error
                .as_deref()
                .unwrap()
                .starts_with("the upstream broke off"),
            "{:?}",
            x.error
        );
        assert_eq!(x.response["id"], "msg_1", "what arrived is kept");
    }

    #[tokio::test]
    async fn a_stream_without_its_closing_event_is_named() {
        let text = format!("{STREAM_HEAD}{}0\r\n\r\n", chunk(EVENTS[0]));
        let (url, _) = upstream_writing(Box::leak(text.into_boxed_str()).as_bytes()).await;
        let mut running = proxy_to(url).await;
        raw_answer(running.addr, "1.1").await;
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(
            x.error.as_deref(),
            Some("the stream ended without its closing event")
        );
    }

    /// The agent leaves while the upstream is still generating: the
    /// exchange ends then, with what had arrived, and the upstream's
    /// connection is dropped (a provider stops generating, and billing,
    /// for a client that is gone).
    #[tokio::test]
    async fn an_agent_that_leaves_ends_the_exchange_and_the_upstream_request() {
        let (closed_tx, closed_rx) = oneshot::channel::<()>();
        let closed_tx = std::sync::Mutex::new(Some(closed_tx));
        let (url, _) = upstream(move |mut tcp| {
            let closed = closed_tx.lock().unwrap().take().unwrap();
            async move {
                tcp.write_all(format!("{STREAM_HEAD}{}", chunk(EVENTS[0])).as_bytes())
                    .await
                    .unwrap();
                // Generating on: the proxy's side of this connection closes
                // once the agent is gone.
                let mut buf = [0u8; 64];
                while let Ok(1..) = tcp.read(&mut buf).await {}
                let _ = closed.send(());
            }
        })
        .await;
        let mut running = proxy_to(url).await;
        let mut agent = TcpStream::connect(running.addr).await.unwrap();
        agent.write_all(request("1.1").as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("message_start") {
            let n = agent.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        drop(agent);
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(
            x.error.as_deref(),
            Some("the agent closed the connection before the answer ended")
        );
        assert_eq!(x.response["id"], "msg_1");
        closed_rx.await.expect("the upstream connection is closed");
    }

    /// A proxy before an upstream answering `{}` to everything, and an
    /// agent connected to it.
    async fn agent_of_an_empty_json_upstream() -> (Running, Arc<AtomicUsize>, TcpStream) {
        let (url, seen) = upstream_writing(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
        )
        .await;
        let running = proxy_to(url).await;
        let agent = TcpStream::connect(running.addr).await.unwrap();
        (running, seen, agent)
    }

    #[tokio::test]
    async fn an_expect_100_continue_is_answered_before_the_body_is_sent() {
        // The proxy runs as long as `_running` lives.
        let (_running, seen, mut agent) = agent_of_an_empty_json_upstream().await;
        agent
            .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"\r\n\r\n") {
            let n = agent.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        assert!(got.starts_with(b"HTTP/1.1 100 Continue\r\n"), "{got:?}");
        agent.write_all(b"{}").await.unwrap();
        got.clear();
        while !got.ends_with(b"{}") {
            let n = agent.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    /// A request naming both a length and chunked framing (the shape of
    /// request smuggling) is read as chunked, as RFC 9112 §6.1 says, and
    /// the connection is closed after it: nothing after it is taken for a
    /// request of its own, and the upstream receives the proxy's own
    /// framing, never the agent's.
    #[tokio::test]
    async fn a_request_with_both_framings_smuggles_nothing_through() {
        // The proxy runs as long as `_running` lives.
        let (_running, seen, mut agent) = agent_of_an_empty_json_upstream().await;
        agent
            .write_all(
                b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 2\r\n\r\n{}\
                  POST /smuggled HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
            )
            .await
            .unwrap();
        let mut got = Vec::new();
        let _ = agent.read_to_end(&mut got).await;
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
        assert_eq!(got.matches("HTTP/1.1 ").count(), 1, "one answer: {got}");
        assert_eq!(
            seen.load(Ordering::SeqCst),
            0,
            "nothing reached the upstream"
        );
    }

    /// Sends `sent` to a proxy with a 5 s header timeout and waits until
    /// it closes the connection (virtual time: the clock is tokio's,
    /// paused): what it answered, and that it was cut at 5 s with nothing
    /// sent upstream.
    async fn cut_off_after_5_s(sent: &[u8]) -> String {
        let (url, seen) = upstream_writing(b"HTTP/1.1 204 No Content\r\n\r\n").await;
        let config = Config {
            header_timeout: Duration::from_secs(5),
            ..Config::new(url, "127.0.0.1:0".parse().unwrap())
        };
        let running = start(&config).await.unwrap();
        let began = tokio::time::Instant::now();
        let mut agent = TcpStream::connect(running.addr).await.unwrap();
        agent.write_all(sent).await.unwrap();
        let mut got = Vec::new();
        let _ = agent.read_to_end(&mut got).await;
        let cut_at = began.elapsed();
        assert!(
            cut_at >= Duration::from_secs(5) && cut_at < Duration::from_secs(6),
            "cut at {cut_at:?}"
        );
        assert_eq!(seen.load(Ordering::SeqCst), 0);
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A request of `kib` KiB to the proxy at `addr`, its answer's head.
    async fn post_kib(addr: SocketAddr, kib: usize) -> String {
        let body = format!("{{\"pad\":\"{}\"}}", "x".repeat(kib << 10));
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(body.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let _ = tcp.read_to_end(&mut got).await;
        String::from_utf8_lossy(&got)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    }

    /// The capture's writer falling behind slows the agents: a request
    /// that would take the exchanges waiting for it past the bound waits,
    /// unforwarded, until the writer takes one (1,000 back-to-back 2 MB
    /// requests once queued 1.1 GB).
    #[tokio::test]
    async fn a_request_waits_while_the_capture_writer_is_behind() {
        // An upstream that reads each padded request to its end, counts
        // it and answers 204.
        let (url, seen) = upstream_until(b"x\"}", |mut tcp| async move {
            let _ = tcp
                .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
                .await;
        })
        .await;
        let config = Config {
            unwritten_kib: 8,
            ..Config::new(url, "127.0.0.1:0".parse().unwrap())
        };
        let mut running = start(&config).await.unwrap();
        let addr = running.addr;
        assert!(post_kib(addr, 6).await.starts_with("HTTP/1.1 204"));
        // Its exchange is not taken: 6 of 8 KiB wait for the writer.
        let mut second = tokio::spawn(post_kib(addr, 6));
        tokio::select! {
            waits = running.waiting_for_capture.wait_for(|n| *n == 1) => {
                waits.unwrap();
            }
            answered = &mut second => panic!("answered with no room for its record: {answered:?}"),
        }
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "forwarded before there was room"
        );
        let first = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(first.status, 204);
        assert!(second.await.unwrap().starts_with("HTTP/1.1 204"));
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        assert_eq!(*running.waiting_for_capture.borrow(), 0);
    }

    /// A client that never finishes its head is cut off once the header
    /// timeout has passed.
    #[tokio::test(start_paused = true)]
    async fn a_slow_header_is_cut_off_after_the_timeout() {
        cut_off_after_5_s(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n").await;
    }

    /// A body that stops sending is cut off with a 408 once the same time
    /// has passed without a byte; nothing reaches the upstream.
    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_is_cut_off_after_the_timeout() {
        let got = cut_off_after_5_s(
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{",
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(got.contains("sent nothing for 5 s"), "{got}");
    }

    /// A body that sends a byte just before each idle timeout would hold
    /// its connection slot for ever: past 5 s of grace it must average
    /// 240 bytes/s, and is cut off with a 408 saying so when it does not
    /// (virtual time). A body that keeps the rate is read.
    #[tokio::test(start_paused = true)]
    async fn a_body_trickling_a_byte_at_a_time_is_cut_off_at_the_minimum_rate() {
        let (url, seen) = upstream_writing(b"HTTP/1.1 204 No Content\r\n\r\n").await;
        // One connection slot: the trickling body holds it.
        let config = Config {
            max_connections: 1,
            ..Config::new(url, "127.0.0.1:0".parse().unwrap())
        };
        let running = start(&config).await.unwrap();
        let began = tokio::time::Instant::now();
        let mut agent = TcpStream::connect(running.addr).await.unwrap();
        agent
            .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n")
            .await
            .unwrap();
        // One byte every 4 s: never silent for the 30 s idle timeout.
        let (mut from_proxy, mut to_proxy) = agent.into_split();
        let trickle = async {
            while to_proxy.write_all(b" ").await.is_ok() {
                tokio::time::sleep(Duration::from_secs(4)).await;
            }
        };
        // Another agent, waiting for the slot, is answered once it is cut.
        let addr = running.addr;
        let other = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let answer = raw_answer(addr, "1.1").await;
            (answer, began.elapsed())
        });
        let mut got = Vec::new();
        tokio::select! {
            _ = from_proxy.read_to_end(&mut got) => {}
            () = trickle => {}
        }
        // 2 bytes by 4 s, 3 by 8 s: under 240 bytes/s once the 5 s passed.
        let cut_at = began.elapsed();
        assert!(
            cut_at >= Duration::from_secs(5) && cut_at < Duration::from_secs(6),
            "cut at {cut_at:?}"
        );
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(got.contains("slower than 240 bytes/s after 5 s"), "{got}");
        let (answer, at) = other.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
        assert!(at < Duration::from_secs(6), "answered at {at:?}");
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "only the other agent's request"
        );
    }

    #[tokio::test]
    async fn an_unreachable_upstream_is_a_502_of_loopdbgs_own() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = parse_upstream(&format!("http://127.0.0.1:{port}/?key=SECRET")).unwrap();
        let mut running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.1").await;
        assert!(got.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{got}");
        assert!(got.contains("loopdbg proxy: the upstream could not be reached"));
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.action, Action::Failed);
        assert!(!x.error.unwrap().contains("SECRET"), "no URL in the error");
    }

    /// Under `block`, a conversation request the checker cannot read is not
    /// vouched for: an unanswered call hidden in a body nested past the
    /// parser's depth was forwarded and got a 200 (issue 23, item 14).
    /// `--on-unjudged forward` lets it through; `forward` never judges.
    #[test]
    fn a_request_that_cannot_be_judged_is_blocked_under_block() {
        let mut deep = String::from("1");
        for _ in 0..200 {
            deep = format!("[{deep}]");
        }
        let body = format!(
            r#"{{"model":"m","max_tokens":5,"metadata":{deep},"messages":[{{"role":"user","content":"hi"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"w","input":{{}}}}]}},{{"role":"user","content":"go on"}}]}}"#
        );
        let blocked = judge(
            "/v1/messages",
            body.as_bytes(),
            OnInvalid::Block,
            OnUnjudged::Block,
            &Default::default(),
        );
        match blocked.verdict.map(|v| v.decision) {
            Some(Decision::Block { status: 400, body }) => {
                let message = body["error"]["message"].as_str().unwrap();
                assert!(message.starts_with("loopdbg proxy could not judge this request: its body is not JSON it can read (recursion limit exceeded"), "{message}");
                assert!(message.contains("--on-unjudged forward"), "{message}");
                assert_eq!(body["type"], "error", "Anthropic's error shape");
            }
            other => panic!("not blocked: {other:?}"),
        }
        let let_through = judge(
            "/v1/messages",
            body.as_bytes(),
            OnInvalid::Block,
            OnUnjudged::Forward,
            &Default::default(),
        );
        assert!(let_through.verdict.is_none());
        // A shape no reader takes is unjudged too.
        let odd = br#"{"model":"m","messages":"not a list"}"#;
        let judged = judge(
            "/v1/messages",
            odd,
            OnInvalid::Repair(loopdbg_judge::fix::Repair::Strip),
            OnUnjudged::Block,
            &Default::default(),
        );
        assert!(matches!(
            judged.verdict.map(|v| v.decision),
            Some(Decision::Block { .. })
        ));
        // Not a conversation endpoint, or not judging at all: forwarded.
        for (path, policy) in [
            ("/v1/models", OnInvalid::Block),
            ("/v1/messages", OnInvalid::Forward),
        ] {
            let judged = judge(
                path,
                b"not json",
                policy,
                OnUnjudged::Block,
                &Default::default(),
            );
            assert!(
                !matches!(
                    judged.verdict.map(|v| v.decision),
                    Some(Decision::Block { .. })
                ),
                "{path} {policy}"
            );
        }
    }

    /// A stream is kept to the capture's cap: the agent gets every byte,
    /// the record says where it was cut (issue 23, item 6: an endless
    /// stream took the proxy to 4.3 GB in 22 s).
    #[tokio::test]
    async fn a_stream_past_the_cap_reaches_the_agent_whole_and_is_kept_in_part() {
        const CHUNKS: usize = 70;
        let (url, _) = upstream(|mut tcp| async move {
            tcp.write_all(format!("{STREAM_HEAD}{}", chunk(EVENTS[0])).as_bytes())
                .await
                .unwrap();
            let ping = format!("event: ping\ndata: \"{}\"\n\n", "p".repeat((1 << 20) - 30));
            let framed = chunk(&ping);
            for _ in 0..CHUNKS {
                if tcp.write_all(framed.as_bytes()).await.is_err() {
                    return;
                }
            }
            let _ = tcp
                .write_all(format!("{}0\r\n\r\n", chunk(EVENTS[3])).as_bytes())
                .await;
        })
        .await;
        let mut running = proxy_to(url).await;
        let got = raw_answer(running.addr, "1.1").await;
        let (_, body) = got.split_once("\r\n\r\n").unwrap();
        let payload = unchunk(body);
        assert!(
            payload.len() > (CHUNKS - 1) << 20,
            "the agent got {} bytes",
            payload.len()
        );
        assert!(payload.ends_with(EVENTS[3]));
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        let error = x.error.unwrap_or_default();
        assert!(error.contains("went on past 64 MiB"), "{error}");
        assert_eq!(x.response["id"], "msg_1");
    }

    /// An upstream that compresses although `accept-encoding` was dropped:
    /// the agent gets the bytes as sent, the capture the JSON they carry
    /// (issue 23, item 17: the capture held binary and `check` saw a
    /// `refused_request (400)` full of it).
    #[tokio::test]
    async fn a_gzipped_answer_is_decoded_for_the_capture_only() {
        use std::io::Write;
        let json = br#"{"id":"msg_gz","type":"message","role":"assistant","content":[{"type":"text","text":"18C"}],"stop_reason":"end_turn"}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(json).unwrap();
        let body: &'static [u8] = Box::leak(gz.finish().unwrap().into_boxed_slice());
        let (url, _) = upstream(move |mut tcp| async move {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            tcp.write_all(head.as_bytes()).await.unwrap();
            // In two pieces: the decoder streams.
            tcp.write_all(&body[..body.len() / 2]).await.unwrap();
            tcp.write_all(&body[body.len() / 2..]).await.unwrap();
        })
        .await;
        let mut running = proxy_to(url).await;
        let mut tcp = TcpStream::connect(running.addr).await.unwrap();
        tcp.write_all(request("1.1").as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let _ = tcp.read_to_end(&mut got).await;
        let split = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(&got[split..], body, "the agent gets the compressed bytes");
        let x = running.exchanges.recv().await.unwrap().into_exchange();
        assert_eq!(x.response["id"], "msg_gz", "{:?}", x.response);
        assert!(x.error.is_none(), "{:?}", x.error);
    }

    /// An answer that is not a success is never summed up as "ok".
    #[test]
    fn the_summary_line_says_what_an_error_answer_was() {
        let line_with = |status: u16, action: Action, error: Option<&str>| {
            let mut x = Ended::written(
                Started {
                    seq: 1,
                    time: SystemTime::UNIX_EPOCH,
                    method: "POST".into(),
                    path: "/v1/messages".into(),
                    provider: Some(Format::Anthropic),
                    body: Bytes::new(),
                    judged: true,
                    forwarded: None,
                    findings: Vec::new(),
                    began: Instant::now(),
                    _flight: FlightGuard::new(
                        &Arc::new(watch::channel(InFlight::default()).0),
                        1,
                        String::new(),
                    ),
                    secrets: Default::default(),
                    _room: None,
                    memory: Default::default(),
                },
                action,
                status,
                Value::Null,
                None,
            )
            .into_exchange();
            x.latency_ms = 1.0;
            x.error = error.map(str::to_string);
            summary_line(&x)
        };
        let line = |status: u16, action: Action| line_with(status, action, None);
        assert!(line(200, Action::Forwarded).ends_with(" · ok"));
        // A 200 the agent walked away from is not "ok".
        let left = "the agent closed the connection before the answer ended";
        let l = line_with(200, Action::Forwarded, Some(left));
        assert!(l.ends_with(left) && !l.contains(" · ok"), "{l}");
        for (status, action, said) in [
            (
                400,
                Action::Forwarded,
                "the provider refused the request (400)",
            ),
            (429, Action::Forwarded, "rate limited by the provider (429)"),
            (529, Action::Forwarded, "the provider is overloaded (529)"),
            (
                502,
                Action::Failed,
                "loopdbg's own 502: the upstream could not be reached (502)",
            ),
        ] {
            let l = line(status, action);
            assert!(l.contains(said) && !l.ends_with(" · ok"), "{l}");
        }
    }

    #[test]
    fn dates_are_rfc_3339_in_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_006_230_123);
        assert_eq!(rfc3339(t), "2026-11-30T02:37:10.123Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
