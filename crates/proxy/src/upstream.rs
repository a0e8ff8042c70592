//! The way to the upstream. An `http://` upstream (a local model server, a
//! test's fake) is spoken to over HTTP/1.1 connections the proxy reads and
//! writes itself, in the task of the agent's own connection: the request
//! goes out in one write, and the answer's bytes come back as they were
//! sent, so the agent's connection can be handed them untouched (see
//! [`super::http1`]). No other task or worker thread is woken on the way.
//! An `https://` upstream goes through reqwest with rustls (TLS, HTTP/2 by
//! ALPN), where the network is milliseconds away anyway.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::http1::{self, Chunked, Framing, ResponseHead};

/// Any error on the way, with its causes.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An idle connection is not reused after this long: servers close their
/// side after a few seconds (uvicorn: 5), and a connection closed under a
/// request costs the agent a 502.
const IDLE_FOR: Duration = Duration::from_secs(30);

/// At most this many idle connections are kept.
const MAX_IDLE: usize = 32;

/// Where requests go.
pub enum Upstream {
    /// Plain HTTP/1.1, read and written by the agent's own task.
    Plain(Arc<Plain>),
    /// TLS, through reqwest.
    Tls(reqwest::Client),
}

/// The upstream's answer: its head, and its body still on its way.
pub enum Answer {
    /// From a plain upstream: the head as sent, the body as raw bytes.
    Raw { head: ResponseHead, body: RawBody },
    /// From reqwest: the body decoded from its framing.
    Decoded {
        status: StatusCode,
        headers: HeaderMap,
        stream: BoxStream<'static, Result<Bytes, BoxError>>,
    },
}

impl Upstream {
    /// The way to `base`: plain for `http`, reqwest for `https`.
    pub fn new(base: &reqwest::Url) -> anyhow::Result<Upstream> {
        if base.scheme() == "http" {
            let host = base
                .host_str()
                .ok_or_else(|| anyhow::anyhow!("the upstream URL has no host"))?;
            let port = base.port_or_known_default().unwrap_or(80);
            let authority = match base.port() {
                Some(p) => format!("{host}:{p}"),
                None => host.to_string(),
            };
            return Ok(Upstream::Plain(Arc::new(Plain {
                // `host_str` keeps an IPv6 address in brackets, as
                // `host:port` wants it.
                connect_to: format!("{host}:{port}"),
                host: HeaderValue::from_str(&authority)?,
                idle: Mutex::new(Vec::new()),
            })));
        }
        Ok(Upstream::Tls(Self::client()?))
    }

    /// reqwest's client as the proxy uses it.
    pub fn client() -> anyhow::Result<reqwest::Client> {
        Ok(reqwest::Client::builder()
            // Redirects belong to the agent, as they would without the proxy.
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .build()?)
    }

    /// Sends one request for `path_and_query` under `base` (the agent's
    /// headers but the hop-by-hop ones) and waits for the answer's head.
    pub async fn send(
        &self,
        method: Method,
        base: &reqwest::Url,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Answer, BoxError> {
        match self {
            Upstream::Plain(plain) => {
                let prefix = base.path().trim_end_matches('/');
                let target = format!("{prefix}{path_and_query}");
                plain.send(method, &target, headers, body).await
            }
            Upstream::Tls(client) => {
                let answer = client
                    .request(method, super::upstream_url(base, path_and_query))
                    .headers(super::forwarded_headers(headers))
                    .body(body)
                    .send()
                    .await?;
                Ok(Answer::Decoded {
                    status: answer.status(),
                    headers: answer.headers().clone(),
                    stream: answer
                        .bytes_stream()
                        .map(|chunk| chunk.map_err(BoxError::from))
                        .boxed(),
                })
            }
        }
    }
}

/// A connection to a plain upstream, and what was read on it and not
/// used yet.
pub struct Connection {
    tcp: TcpStream,
    inbox: BytesMut,
}

struct Idle {
    connection: Connection,
    since: Instant,
}

/// A plain HTTP upstream and its idle connections.
pub struct Plain {
    connect_to: String,
    host: HeaderValue,
    idle: Mutex<Vec<Idle>>,
}

impl Plain {
    async fn send(
        self: &Arc<Self>,
        method: Method,
        target: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Answer, BoxError> {
        let mut head = Vec::with_capacity(512);
        head.extend_from_slice(method.as_str().as_bytes());
        head.push(b' ');
        head.extend_from_slice(target.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        head.extend_from_slice(self.host.as_bytes());
        head.extend_from_slice(b"\r\n");
        http1::put_headers(
            &mut head,
            headers
                .iter()
                .filter(|(name, _)| super::is_forwarded(name.as_str())),
        );
        let bodyless = matches!(
            method,
            Method::GET | Method::HEAD | Method::OPTIONS | Method::DELETE
        );
        if !body.is_empty() || !bodyless {
            head.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        let mut connection = loop {
            let (reused, mut c) = match self.checkout() {
                Some(c) => (true, c),
                None => (false, self.connect().await?),
            };
            // Head and body in one write: one segment, one wake-up
            // upstream.
            let mut out = (&head[..]).chain(&body[..]);
            match c.tcp.write_all_buf(&mut out).await {
                Ok(()) => break c,
                // A reused connection the upstream closed before reading
                // anything: it never saw the request, so it goes again on
                // a fresh one. A request written is never sent twice.
                Err(_) if reused && out.remaining() == head.len() + body.len() => continue,
                Err(e) => return Err(e.into()),
            }
        };
        loop {
            let head = http1::read_response_head(&mut connection.tcp, &mut connection.inbox)
                .await?
                .ok_or("the upstream closed the connection before answering")?;
            // `100 Continue` was not asked for (the body went whole);
            // other informational answers have nothing for the agent
            // that the final one does not carry.
            if head.status == 101 {
                return Err(
                    "the upstream switched protocols, which the proxy does not pass on".into(),
                );
            }
            if (100..200).contains(&head.status) {
                continue;
            }
            let framing = if method == Method::HEAD || matches!(head.status, 204 | 304) {
                Framing::Empty
            } else {
                http1::framing(&head.headers, false)?
            };
            let reusable = head.keep_alive && framing != Framing::UntilClose;
            let left = match framing {
                Framing::Length(n) => n,
                _ => 0,
            };
            let body = RawBody {
                connection: Some(connection),
                plain: Arc::clone(self),
                framing,
                chunked: Chunked::default(),
                left,
                reusable,
            };
            return Ok(Answer::Raw { head, body });
        }
    }

    async fn connect(&self) -> Result<Connection, BoxError> {
        let tcp = TcpStream::connect(&self.connect_to).await?;
        // Without TCP_NODELAY a small request waits for a delayed ACK.
        tcp.set_nodelay(true)?;
        Ok(Connection {
            tcp,
            inbox: BytesMut::new(),
        })
    }

    /// An idle connection still open, if any.
    fn checkout(&self) -> Option<Connection> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(candidate) = idle.pop() {
            if candidate.since.elapsed() > IDLE_FOR {
                continue;
            }
            // Anything readable on an idle connection is its close (or
            // bytes no request asked for): either way it is not reused.
            let mut probe = [0u8; 1];
            if let Err(e) = candidate.connection.tcp.try_read(&mut probe)
                && e.kind() == std::io::ErrorKind::WouldBlock
            {
                return Some(candidate.connection);
            }
        }
        None
    }

    fn check_in(&self, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|i| i.since.elapsed() <= IDLE_FOR);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                connection,
                since: Instant::now(),
            });
        }
    }
}

/// Bytes of an answer as they came, and where the payload is in them.
pub struct Piece {
    /// What goes to the agent, as the upstream sent it.
    pub wire: Bytes,
    /// The body's payload in `wire`.
    pub payload: Payload,
}

/// Where a piece's payload is.
pub enum Payload {
    /// All of it (a length or the close frames the body).
    Whole,
    /// These ranges, between chunk framing.
    Parts(Vec<Range<usize>>),
}

/// A plain upstream's answer body, read as it arrives. The connection
/// goes back to the pool once the body has ended cleanly.
pub struct RawBody {
    connection: Option<Connection>,
    plain: Arc<Plain>,
    framing: Framing,
    chunked: Chunked,
    /// For `Length` framing, the bytes still to come.
    left: u64,
    reusable: bool,
}

impl RawBody {
    /// How the body is framed on the wire.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The next bytes of the body; `None` once it has ended.
    pub async fn next(&mut self) -> Option<Result<Piece, String>> {
        loop {
            let connection = self.connection.as_mut()?;
            if matches!(self.framing, Framing::Empty | Framing::Length(0)) {
                self.end();
                return None;
            }
            if !connection.inbox.is_empty() {
                let wire = connection.inbox.split().freeze();
                let (used, payload, done) = match self.framing {
                    // An empty body has `left` 0 (and has ended above).
                    Framing::Empty | Framing::Length(_) => {
                        let take = self.left.min(wire.len() as u64) as usize;
                        self.left -= take as u64;
                        (take, Payload::Whole, self.left == 0)
                    }
                    Framing::Chunked => {
                        let mut payload = Vec::new();
                        match self.chunked.feed(&wire, |r| payload.push(r)) {
                            Ok(used) => (used, Payload::Parts(payload), self.chunked.is_done()),
                            Err(e) => {
                                self.connection = None;
                                return Some(Err(format!("the answer's chunks are broken: {e}")));
                            }
                        }
                    }
                    Framing::UntilClose => (wire.len(), Payload::Whole, false),
                };
                if used < wire.len() {
                    // Bytes past the answer's end: nothing asked for them.
                    self.reusable = false;
                }
                if done {
                    self.end();
                }
                return Some(Ok(Piece {
                    wire: wire.slice(..used),
                    payload,
                }));
            }
            connection.inbox.reserve(16 << 10);
            use tokio::io::AsyncReadExt;
            match connection.tcp.read_buf(&mut connection.inbox).await {
                Ok(1..) => {}
                Ok(0) if self.framing == Framing::UntilClose => {
                    self.reusable = false;
                    self.end();
                    return None;
                }
                Ok(_) => {
                    self.connection = None;
                    return Some(Err("the connection closed before the answer ended".into()));
                }
                Err(e) => {
                    self.connection = None;
                    return Some(Err(e.to_string()));
                }
            }
        }
    }

    /// The body has ended: its connection is kept for the next request
    /// if it can carry one.
    fn end(&mut self) {
        if let Some(c) = self.connection.take()
            && self.reusable
        {
            self.plain.check_in(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers `ok` to each request, counting connections;
    /// with `close_after_one` it closes each connection after one answer
    /// and says so on the channel.
    async fn server(
        close_after_one: bool,
    ) -> (
        reqwest::Url,
        Arc<AtomicUsize>,
        tokio::sync::mpsc::UnboundedReceiver<()>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            reqwest::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        let (closed, closes) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, Ordering::SeqCst);
                let closed = closed.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        let n = tcp.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        seen.extend_from_slice(&buf[..n]);
                        // Each test request has the two-byte body "hi".
                        while let Some(end) = seen.windows(6).position(|w| w == b"\r\n\r\nhi") {
                            seen.drain(..end + 6);
                            tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                                .await
                                .unwrap();
                            if close_after_one {
                                drop(tcp);
                                let _ = closed.send(());
                                return;
                            }
                        }
                    }
                });
            }
        });
        (url, connections, closes)
    }

    async fn ask(upstream: &Upstream, url: &reqwest::Url) -> Vec<u8> {
        let answer = upstream
            .send(
                Method::POST,
                url,
                "/",
                &HeaderMap::new(),
                Bytes::from_static(b"hi"),
            )
            .await
            .unwrap();
        let Answer::Raw { head, mut body } = answer else {
            panic!("a plain upstream answers raw");
        };
        assert_eq!(head.status, 200);
        let mut got = Vec::new();
        while let Some(piece) = body.next().await {
            got.extend_from_slice(&piece.unwrap().wire);
        }
        got
    }

    #[tokio::test]
    async fn one_connection_carries_request_after_request() {
        let (url, connections, _) = server(false).await;
        let upstream = Upstream::new(&url).unwrap();
        for _ in 0..3 {
            assert_eq!(ask(&upstream, &url).await, b"ok");
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_used_again() {
        let (url, connections, mut closes) = server(true).await;
        let upstream = Upstream::new(&url).unwrap();
        assert_eq!(ask(&upstream, &url).await, b"ok");
        closes.recv().await.unwrap();
        assert_eq!(ask(&upstream, &url).await, b"ok");
        assert_eq!(connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_upstream_nobody_listens_on_is_an_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url =
            reqwest::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        drop(listener);
        let upstream = Upstream::new(&url).unwrap();
        let sent = upstream
            .send(Method::POST, &url, "/", &HeaderMap::new(), Bytes::new())
            .await;
        assert!(sent.is_err());
    }
}
