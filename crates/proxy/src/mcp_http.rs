//! `loopdbg mcp --upstream URL`: a tap on a Streamable HTTP MCP server.
//! The agent is pointed at the tap's address instead of the server's; the
//! tap forwards every request (POSTed JSON-RPC, the GET that opens the
//! server's stream, the DELETE that ends a session) to the same path under
//! `URL` with the agent's headers (`Mcp-Session-Id` among them), and
//! passes the answer back frame by frame as it comes. A copy of each side
//! is cut into JSON-RPC messages for the recorder: the request body (one
//! message, or a batch), and the answer, either one JSON body or a
//! server-sent event stream whose `data:` carries one message per event.
//! HTTP is hyper's; this module only cuts the copies.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::http::{Request, Response, StatusCode, Uri, header};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use loopdbg_read::mcp::{Record, Side};
use tokio::sync::mpsc::UnboundedSender;

use crate::mcp::{MAX_RECORDED_MESSAGE, Message};
use crate::upstream::Upstream;
use loopdbg_formats::secrets::Known;

/// The most a request body may hold (MCP messages are small).
const MAX_REQUEST: usize = 64 << 20;

type Body = BoxBody<Bytes, hyper::Error>;

struct Tap {
    way: Upstream,
    start: Instant,
    record: UnboundedSender<Record>,
}

impl Tap {
    fn ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Records each JSON-RPC message of a whole JSON body (a batch is one
    /// record per message); anything else as the text it was. The request's
    /// credentials (`known`), wherever they appear, and every credential
    /// shape are masked first: a server may echo a key.
    fn record_body(&self, side: Side, bytes: &[u8], known: &Known) {
        let raw = String::from_utf8_lossy(bytes);
        let text = known.mask(&raw);
        if text.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Array(batch)) => {
                for message in batch {
                    let _ =
                        self.record
                            .send(Record::message(side, self.ms(), &message.to_string()));
                }
            }
            _ => {
                let _ = self.record.send(Record::message(side, self.ms(), &text));
            }
        }
    }
}

/// Starts the tap on `listen`, forwarding to `upstream`; `record` gets the
/// start, then every message in the order the tap saw it. Returns the
/// address it listens on; it serves until the runtime ends.
pub async fn serve(
    upstream: &Uri,
    listen: SocketAddr,
    record: UnboundedSender<Record>,
) -> anyhow::Result<SocketAddr> {
    let way = Upstream::new(upstream)?;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let _ = record.send(Record::start(&[
        "--upstream".to_string(),
        loopdbg_formats::route::redacted_url(&upstream.to_string()),
    ]));
    let tap = Arc::new(Tap {
        way,
        start: Instant::now(),
        record,
    });
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                // Out of file descriptors, most likely: the connections
                // being served will free some.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let tap = Arc::clone(&tap);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let tap = Arc::clone(&tap);
                    async move { Ok::<_, Infallible>(relay(&tap, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Ok(addr)
}

fn own_answer(status: StatusCode, text: String) -> Response<Body> {
    let mut answer = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed(),
    );
    *answer.status_mut() = status;
    answer
}

/// One request to the server and its answer, both copied to the recorder.
async fn relay(tap: &Arc<Tap>, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_REQUEST)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return own_answer(
                StatusCode::BAD_REQUEST,
                format!("loopdbg mcp: reading the request: {e}"),
            );
        }
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let headers = parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    let known = Known::of_request(headers, path);
    tap.record_body(Side::Client, &bytes, &known);
    let answer = match tap
        .way
        .send(parts.method, path, &parts.headers, bytes)
        .await
    {
        Ok(a) => a,
        Err(e) => {
            return own_answer(
                StatusCode::BAD_GATEWAY,
                format!("loopdbg mcp: the server could not be reached: {e}"),
            );
        }
    };
    let streamed = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (mut head, body) = answer.into_parts();
    head.headers = crate::upstream::returned_headers(&head.headers);
    let mut cut = Cut::new(Arc::clone(tap), streamed, known);
    let body = body
        .map_frame(move |frame: Frame<Bytes>| {
            if let Some(data) = frame.data_ref() {
                cut.push(data);
            }
            frame
        })
        .boxed();
    Response::from_parts(head, body)
}

/// The server's side of one answer, cut into messages as it comes. Each
/// byte is looked at once (a 64 MB event was searched from its start at
/// every chunk: the agent waited 11 s), and nothing past
/// [`MAX_RECORDED_MESSAGE`] is held.
struct Cut {
    tap: Arc<Tap>,
    streamed: bool,
    pending: Vec<u8>,
    /// How far `pending` has been searched for an event's end.
    searched: usize,
    /// The length of a body or event past the limit, counted while it is
    /// skipped.
    overlong: Option<usize>,
    /// The request's credentials, masked in what the server answers.
    known: Known,
}

impl Cut {
    fn new(tap: Arc<Tap>, streamed: bool, known: Known) -> Cut {
        Cut {
            tap,
            streamed,
            pending: Vec::new(),
            searched: 0,
            overlong: None,
            known,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.take(data);
        // One JSON body is recorded once, when the answer ends (`Drop`).
        if !self.streamed {
            return;
        }
        // Server-sent events end with a blank line; `data:` lines carry
        // the message (a `:` comment or a bare `id:` / `retry:` carries none).
        let mut done = 0;
        while let Some((text_end, end)) = event_end(&self.pending[self.searched.max(done)..])
            .map(|(a, b)| (a + self.searched.max(done), b + self.searched.max(done)))
        {
            match self.overlong.take() {
                Some(len) => self.overlong_note(len + end - done),
                None => self.record_event(done, text_end),
            }
            done = end;
        }
        self.pending.drain(..done);
        // An end may straddle two chunks: search again from 3 bytes back.
        self.searched = self.pending.len().saturating_sub(3);
    }

    /// Keeps `data`, or counts it once the message is past the limit.
    fn take(&mut self, data: &[u8]) {
        if let Some(len) = &mut self.overlong {
            *len += data.len();
            // Only an event's end is looked for in what is skipped.
            let keep = self.pending.len().min(3);
            self.pending.drain(..self.pending.len() - keep);
            self.searched = 0;
            self.pending.extend_from_slice(data);
            return;
        }
        if self.pending.len() + data.len() > MAX_RECORDED_MESSAGE {
            self.overlong = Some(self.pending.len());
            self.pending = data.to_vec();
            self.searched = 0;
            return;
        }
        self.pending.extend_from_slice(data);
    }

    fn record_event(&self, from: usize, text_end: usize) {
        let text = String::from_utf8_lossy(&self.pending[from..text_end]);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            self.tap
                .record_body(Side::Server, data.join("\n").as_bytes(), &self.known);
        }
    }

    fn overlong_note(&self, len: usize) {
        if let Some(record) = Message::Overlong(len).record(Side::Server, self.tap.ms()) {
            let _ = self.tap.record.send(record);
        }
    }
}

impl Drop for Cut {
    /// A whole JSON body is recorded when its answer ends.
    fn drop(&mut self) {
        if self.streamed {
            return;
        }
        match self.overlong {
            Some(len) => self.overlong_note(len + self.pending.len()),
            None => self
                .tap
                .record_body(Side::Server, &self.pending, &self.known),
        }
    }
}

/// Where the first event of `bytes` ends: its text's end and the end of
/// its blank line (`\n\n` or `\r\n\r\n`), in one pass.
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(|&b| b == b'\n') {
        let i = i + from;
        match bytes.get(i + 1) {
            Some(b'\n') => return Some((i, i + 2)),
            Some(b'\r') if i > 0 && bytes[i - 1] == b'\r' && bytes.get(i + 2) == Some(&b'\n') => {
                return Some((i - 1, i + 3));
            }
            _ => from = i + 1,
        }
    }
    None
}

/// Serves the tap (see [`serve`]) and hands each record to `write` as it
/// comes, until Ctrl-C; what came before the signal is written. `started`
/// is told the address once listening.
pub async fn record_until_interrupted(
    upstream: &Uri,
    listen: SocketAddr,
    write: &mut impl FnMut(Record),
    started: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    let (record, mut records) = tokio::sync::mpsc::unbounded_channel();
    let addr = serve(upstream, listen, record).await?;
    started(addr);
    loop {
        tokio::select! {
            r = records.recv() => match r {
                Some(r) => write(r),
                None => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    while let Ok(r) = records.try_recv() {
        write(r);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that echoes the agent's key (in a result, an error) does
    /// not put it in the capture: the request's own credential values are
    /// masked in both directions.
    #[tokio::test]
    async fn an_echoed_key_is_masked_in_the_record() {
        let (record, mut records) = tokio::sync::mpsc::unbounded_channel();
        let upstream: Uri = "http://127.0.0.1:9".parse().unwrap();
        let tap = Arc::new(Tap {
            way: Upstream::new(&upstream).unwrap(),
            start: Instant::now(),
            record,
        });
        let known = Known::of_request([("x-api-key", "plain-mcp-key-123456")].into_iter(), "/mcp");
        tap.record_body(
            Side::Client,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"k":"plain-mcp-key-123456"}}"#,
            &known,
        );
        let mut cut = Cut::new(Arc::clone(&tap), true, known);
        cut.push(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"bad key plain-mcp-key-123456\"}}\n\n");
        for _ in 0..2 {
            let line = serde_json::to_string(&records.try_recv().unwrap()).unwrap();
            assert!(!line.contains("plain-mcp-key"), "{line}");
            assert!(line.contains("[secret]"), "{line}");
        }
    }

    #[test]
    fn events_end_at_a_blank_line_in_either_line_ending() {
        assert_eq!(event_end(b"data: 1\n\nrest"), Some((7, 9)));
        assert_eq!(event_end(b"data: 1\r\n\r\n"), Some((7, 11)));
        assert_eq!(event_end(b"data: 1\n"), None);
    }

    fn tap() -> (Arc<Tap>, tokio::sync::mpsc::UnboundedReceiver<Record>) {
        let (record, records) = tokio::sync::mpsc::unbounded_channel();
        let tap = Arc::new(Tap {
            way: Upstream::new(&"http://127.0.0.1:9/".parse().unwrap()).unwrap(),
            start: Instant::now(),
            record,
        });
        (tap, records)
    }

    fn texts(records: &mut tokio::sync::mpsc::UnboundedReceiver<Record>) -> Vec<String> {
        std::iter::from_fn(|| records.try_recv().ok())
            .map(|r| serde_json::to_string(&r).unwrap())
            .collect()
    }

    /// Events cut at every byte, in both line endings, and a body sent in
    /// pieces, are recorded as sent whole.
    #[tokio::test]
    async fn events_and_bodies_split_anywhere_are_recorded_once_each() {
        let events =
            b"data: {\"id\":1}\r\n\r\n: comment\n\ndata: {\"id\":2}\n\ndata: {\"id\":3}\n\n";
        for cut_at in 0..events.len() {
            let (tap, mut records) = tap();
            let mut cut = Cut::new(tap, true, Known::default());
            cut.push(&events[..cut_at]);
            cut.push(&events[cut_at..]);
            drop(cut);
            let got = texts(&mut records);
            assert_eq!(got.len(), 3, "cut at {cut_at}: {got:?}");
            assert!(got[2].contains(r#"{"id":3}"#), "{got:?}");
        }
        let (tap, mut records) = tap();
        let mut cut = Cut::new(tap, false, Known::default());
        for piece in br#"{"jsonrpc":"2.0","id":7,"result":{}}"#.chunks(5) {
            cut.push(piece);
        }
        assert!(
            texts(&mut records).is_empty(),
            "recorded before the answer ended"
        );
        drop(cut);
        assert_eq!(texts(&mut records).len(), 1);
    }

    /// An event past the limit is relayed (not this type's job) and
    /// recorded as a note of its length; the events after it are recorded.
    #[tokio::test]
    async fn an_event_past_the_limit_is_a_note_and_the_next_is_recorded() {
        let (tap, mut records) = tap();
        let mut cut = Cut::new(tap, true, Known::default());
        cut.push(b"data: ");
        let block = vec![b'x'; 1 << 20];
        for _ in 0..(MAX_RECORDED_MESSAGE >> 20) + 1 {
            cut.push(&block);
        }
        assert!(
            cut.pending.len() <= (1 << 20) + 3,
            "held {}",
            cut.pending.len()
        );
        cut.push(b"\n\ndata: {\"id\":2}\n\n");
        let got = texts(&mut records);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].contains("relayed but not recorded"), "{}", got[0]);
        assert!(got[1].contains(r#"{"id":2}"#));
    }
}
