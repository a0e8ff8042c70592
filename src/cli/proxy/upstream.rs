//! The way to the upstream. An `http://` upstream (a local model server, a
//! test's fake) is spoken to over HTTP/1.1 connections the proxy drives
//! itself, inside the task of the agent's own connection: the request is
//! written, and every chunk of the answer read, in the same wake-up that
//! hands it on, so no other task (and no other worker thread) has to be
//! woken on the way. Measured on a paced stream this is a tenth of a
//! millisecond off every first byte, against a pooled client whose
//! connections live in tasks of their own. An `https://` upstream goes
//! through reqwest with rustls (TLS, HTTP/2 by ALPN), where the network
//! is milliseconds away anyway.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use futures::FutureExt;
use futures::stream::{BoxStream, Stream, StreamExt};
use futures::task::AtomicWaker;
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

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
    /// Plain HTTP, connections driven by the agent's own task.
    Plain(Arc<Plain>),
    /// TLS, through reqwest.
    Tls(reqwest::Client),
}

/// The upstream's answer: status, headers and the body as it arrives.
pub struct Answer {
    /// The status the upstream sent.
    pub status: StatusCode,
    /// The headers the upstream sent.
    pub headers: HeaderMap,
    /// The body, chunk by chunk; polling it drives the connection.
    pub body: BoxStream<'static, Result<Bytes, BoxError>>,
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
        let client = reqwest::Client::builder()
            // Redirects belong to the agent, as they would without the proxy.
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .build()?;
        Ok(Upstream::Tls(client))
    }

    /// Sends one request to `url` (the upstream's own) and waits for the
    /// answer's head.
    pub async fn send(
        &self,
        method: Method,
        url: &reqwest::Url,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Answer, BoxError> {
        match self {
            Upstream::Plain(plain) => plain.send(method, url, headers, body).await,
            Upstream::Tls(client) => {
                let answer = client
                    .request(method, url.clone())
                    .headers(headers)
                    .body(body)
                    .send()
                    .await?;
                Ok(Answer {
                    status: answer.status(),
                    headers: answer.headers().clone(),
                    body: answer
                        .bytes_stream()
                        .map(|chunk| chunk.map_err(BoxError::from))
                        .boxed(),
                })
            }
        }
    }
}

type Sender = http1::SendRequest<Full<Bytes>>;
type Connection = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

struct Idle {
    sender: Sender,
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
        url: &reqwest::Url,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<Answer, BoxError> {
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        headers.insert(header::HOST, self.host.clone());
        let mut request = Request::builder()
            .method(method)
            .uri(target)
            .body(Full::new(body))?;
        *request.headers_mut() = headers;
        loop {
            let (reused, mut sender, mut connection) = match self.checkout() {
                Some(idle) => (true, idle.sender, idle.connection),
                None => {
                    let (s, c) = self.connect().await?;
                    (false, s, c)
                }
            };
            let sent = drive(sender.try_send_request(request), &mut connection).await;
            match sent {
                Ok(response) => {
                    let (head, body) = response.into_parts();
                    let driven = Driven {
                        reading: Reading {
                            body,
                            connection: Some(connection),
                            sender: Some(sender),
                            plain: Arc::clone(self),
                        },
                        quiet: Quiet::default(),
                    };
                    return Ok(Answer {
                        status: head.status,
                        headers: head.headers,
                        body: driven.boxed(),
                    });
                }
                // A reused connection that closed before the request was
                // written: the upstream never saw it, so it goes again on
                // a fresh one. Once written, it is never sent twice.
                Err(mut e) if reused && e.message().is_some() => {
                    request = e.take_message().expect("checked above");
                }
                Err(e) => return Err(e.into_error().into()),
            }
        }
    }

    async fn connect(&self) -> Result<(Sender, Connection), BoxError> {
        let tcp = TcpStream::connect(&self.connect_to).await?;
        // Without TCP_NODELAY a small request waits for a delayed ACK.
        tcp.set_nodelay(true)?;
        Ok(http1::handshake(TokioIo::new(tcp)).await?)
    }

    /// An idle connection still open and ready for a request, if any.
    fn checkout(&self) -> Option<Idle> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut candidate) = idle.pop() {
            if candidate.since.elapsed() > IDLE_FOR {
                continue;
            }
            // One poll lets the connection read what came while it was
            // idle: a close from the server ends it here, not under the
            // next request.
            if (&mut candidate.connection).now_or_never().is_some() {
                continue;
            }
            if let Some(Ok(())) = candidate.sender.ready().now_or_never() {
                return Some(candidate);
            }
        }
        None
    }

    fn check_in(&self, sender: Sender, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|i| i.since.elapsed() <= IDLE_FOR);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                sender,
                connection,
                since: Instant::now(),
            });
        }
    }
}

/// Waits for `response` while driving the connection that carries it.
async fn drive<F: Future>(response: F, connection: &mut Connection) -> F::Output {
    let mut response = pin!(response);
    let mut open = true;
    let quiet = Quiet::default();
    futures::future::poll_fn(|cx| {
        quiet.poll(cx, |cx| {
            // The connection first: what it reads may complete the
            // response in this same poll.
            if open && Pin::new(&mut *connection).poll(cx).is_ready() {
                open = false;
            }
            response.as_mut().poll(cx)
        })
    })
    .await
}

/// Polls a connection and what it feeds in one task without waking that
/// task for its own doing. The connection hands each chunk to its body
/// through a channel that wakes the other side; here both sides are this
/// task, and tokio treats a task that wakes itself as yielding: it goes to
/// the back of the queue and another worker thread is woken to take it,
/// for every chunk. While a poll runs, a wake-up only asks for another
/// round of the same poll; outside it, it wakes the task as usual.
#[derive(Default)]
struct Quiet {
    gate: Arc<Gate>,
}

#[derive(Default)]
struct Gate {
    state: AtomicU8,
    task: AtomicWaker,
}

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

impl std::task::Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

impl Quiet {
    /// Rounds of one poll before the task yields for real.
    const ROUNDS: usize = 16;

    fn poll<T>(
        &self,
        cx: &mut Context<'_>,
        mut round: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        self.gate.task.register(cx.waker());
        let waker = Waker::from(Arc::clone(&self.gate));
        let mut inner = Context::from_waker(&waker);
        for _ in 0..Self::ROUNDS {
            self.gate.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = round(&mut inner) {
                // A wake-up noted in this round is not lost: whoever
                // takes a ready value polls again before waiting (a
                // stream is polled until it is pending or dropped).
                self.gate.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            if self
                .gate
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Pending;
            }
        }
        self.gate.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// An answer's body that drives its own connection, and gives the
/// connection back for the next request once the body has ended.
struct Driven {
    reading: Reading,
    quiet: Quiet,
}

/// What a [`Driven`] body reads from.
struct Reading {
    body: Incoming,
    connection: Option<Connection>,
    sender: Option<Sender>,
    plain: Arc<Plain>,
}

impl Stream for Driven {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Driven { reading, quiet } = &mut *self;
        quiet.poll(cx, |cx| reading.round(cx))
    }
}

impl Reading {
    fn round(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, BoxError>>> {
        let this = self;
        if let Some(c) = this.connection.as_mut()
            && Pin::new(c).poll(cx).is_ready()
        {
            this.connection = None;
        }
        loop {
            match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    if let (Some(sender), Some(connection)) =
                        (this.sender.take(), this.connection.take())
                    {
                        this.plain.check_in(sender, connection);
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    this.connection = None;
                    return Poll::Ready(Some(Err(e.into())));
                }
                // Trailers carry nothing the agent's SDKs read.
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
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
                HeaderMap::new(),
                Bytes::from_static(b"hi"),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        let chunks: Vec<_> = answer.body.collect().await;
        chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect()
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
            .send(Method::POST, &url, HeaderMap::new(), Bytes::new())
            .await;
        assert!(sent.is_err());
    }
}
