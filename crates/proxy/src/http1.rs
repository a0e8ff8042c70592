//! HTTP/1.1 as the proxy speaks it on a plain-HTTP path: heads parsed
//! with `httparse` (the parser hyper itself uses), bodies framed by
//! `content-length` or `transfer-encoding: chunked`. The proxy reads a
//! request whole (the gate needs it), but an answer's body is never
//! re-encoded: the upstream's bytes are written to the agent as they are
//! read, and [`Chunked`] only finds, beside them, the payload the capture
//! keeps and where the message ends. So the agent receives exactly what
//! the upstream sent, chunk boundaries included, and a chunk costs what a
//! byte relay costs.

use std::ops::Range;

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest head (request line or status line and headers) taken.
pub const MAX_HEAD: usize = 64 << 10;

/// The most headers one head may carry.
const MAX_HEADERS: usize = 128;

/// How a message's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (a request without one; HEAD, 204 and 304 answers).
    Empty,
    /// `content-length` bytes.
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
    /// An answer read until the upstream closes the connection.
    UntilClose,
}

/// A message's framing from its headers. `request` because a request
/// without framing headers has no body, an answer without them runs to
/// the close, and a request that names both is refused (RFC 9112 §6.3:
/// the two disagreeing is how requests are smuggled).
pub fn framing(headers: &HeaderMap, request: bool) -> Result<Framing, String> {
    let te: Vec<&HeaderValue> = headers.get_all("transfer-encoding").iter().collect();
    if !te.is_empty() {
        if request && headers.contains_key("content-length") {
            return Err("both transfer-encoding and content-length".into());
        }
        let last = te
            .iter()
            .flat_map(|v| v.to_str().unwrap_or("").split(','))
            .map(str::trim)
            .rfind(|c| !c.is_empty())
            .unwrap_or("");
        return match (last.eq_ignore_ascii_case("chunked"), request) {
            (true, _) => Ok(Framing::Chunked),
            (false, false) => Ok(Framing::UntilClose),
            (false, true) => Err(format!("transfer-encoding `{last}` is not chunked")),
        };
    }
    let mut length = None;
    for value in headers.get_all("content-length") {
        for part in value.to_str().unwrap_or("x").split(',') {
            let part = part.trim();
            let n: u64 = part
                .parse()
                .ok()
                .filter(|_| part.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| format!("content-length `{part}` is not a length"))?;
            if length.is_some_and(|l| l != n) {
                return Err("content-length given twice, differently".into());
            }
            length = Some(n);
        }
    }
    Ok(match (length, request) {
        (Some(n), _) => Framing::Length(n),
        (None, true) => Framing::Empty,
        (None, false) => Framing::UntilClose,
    })
}

/// Where a chunked body is in its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In a chunk-size line: the size so far, and whether an extension
    /// (`;name=value`) has begun.
    Size {
        size: u64,
        digits: u8,
        ext: bool,
    },
    /// The size line's `\r` was read.
    SizeLf {
        size: u64,
    },
    /// In a chunk's data, this many bytes left.
    Data(u64),
    /// After a chunk's data: its `\r\n`.
    DataCr,
    DataLf,
    /// In the trailer section: the length of the current line so far.
    Trailer {
        line: usize,
    },
    TrailerLf {
        line: usize,
    },
    Done,
}

/// Finds the payload and the end of a chunked body, fed the bytes as they
/// come (a size line, a chunk or its `\r\n` may be split anywhere).
#[derive(Debug, Clone)]
pub struct Chunked {
    state: State,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked {
            state: State::Size {
                size: 0,
                digits: 0,
                ext: false,
            },
        }
    }
}

impl Chunked {
    /// Whether the last chunk and the trailers have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Reads `input`, handing each range of payload in it to `payload`.
    /// Gives how many bytes belong to the body: all of `input` unless the
    /// body ended inside it.
    pub fn feed(
        &mut self,
        input: &[u8],
        mut payload: impl FnMut(Range<usize>),
    ) -> Result<usize, String> {
        let mut at = 0;
        while at < input.len() {
            let b = input[at];
            self.state = match self.state {
                State::Done => return Ok(at),
                State::Size { size, digits, ext } => match b {
                    b'\r' if digits > 0 => State::SizeLf { size },
                    b'\n' if digits > 0 => self.after_size(size),
                    _ if ext => State::Size { size, digits, ext },
                    b';' | b' ' | b'\t' if digits > 0 => State::Size {
                        size,
                        digits,
                        ext: true,
                    },
                    _ => {
                        let digit = (b as char)
                            .to_digit(16)
                            .ok_or_else(|| format!("chunk size: unexpected byte 0x{b:02x}"))?;
                        if digits >= 16 {
                            return Err("chunk size: too many digits".into());
                        }
                        State::Size {
                            size: size << 4 | u64::from(digit),
                            digits: digits + 1,
                            ext,
                        }
                    }
                },
                State::SizeLf { size } => match b {
                    b'\n' => self.after_size(size),
                    _ => return Err("chunk size: `\\r` without `\\n`".into()),
                },
                State::Data(left) => {
                    let take = (left.min((input.len() - at) as u64)) as usize;
                    payload(at..at + take);
                    at += take;
                    self.state = match left - take as u64 {
                        0 => State::DataCr,
                        more => State::Data(more),
                    };
                    continue;
                }
                State::DataCr => match b {
                    b'\r' => State::DataLf,
                    b'\n' => State::Size {
                        size: 0,
                        digits: 0,
                        ext: false,
                    },
                    _ => return Err("a chunk longer than its size".into()),
                },
                State::DataLf => match b {
                    b'\n' => State::Size {
                        size: 0,
                        digits: 0,
                        ext: false,
                    },
                    _ => return Err("a chunk longer than its size".into()),
                },
                State::Trailer { line } => match b {
                    b'\r' => State::TrailerLf { line },
                    b'\n' if line == 0 => State::Done,
                    b'\n' => State::Trailer { line: 0 },
                    _ if line >= MAX_HEAD => return Err("a trailer line too long".into()),
                    _ => State::Trailer { line: line + 1 },
                },
                State::TrailerLf { line } => match b {
                    b'\n' if line == 0 => State::Done,
                    b'\n' => State::Trailer { line: 0 },
                    _ => return Err("trailer: `\\r` without `\\n`".into()),
                },
            };
            at += 1;
        }
        Ok(at)
    }

    fn after_size(&self, size: u64) -> State {
        if size == 0 {
            State::Trailer { line: 0 }
        } else {
            State::Data(size)
        }
    }
}

/// A request as the agent sent it, its body read whole.
#[derive(Debug)]
pub struct Request {
    pub method: reqwest::Method,
    /// The request target: a path and query (`/v1/messages?beta=true`).
    pub target: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Whether the agent keeps the connection for another request.
    pub keep_alive: bool,
    /// The `1` of `HTTP/1.1`.
    pub minor: u8,
}

/// Why a request could not be read: the status to answer it with.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub reason: String,
}

fn refused(status: u16, reason: impl Into<String>) -> Refused {
    Refused {
        status,
        reason: reason.into(),
    }
}

fn header_map(parsed: &[httparse::Header<'_>]) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::with_capacity(parsed.len());
    for h in parsed {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| format!("header name `{}`", h.name))?;
        let value =
            HeaderValue::from_bytes(h.value).map_err(|_| format!("the value of `{}`", h.name))?;
        headers.append(name, value);
    }
    Ok(headers)
}

fn connection_has(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get_all("connection")
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("").split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Whether a message of HTTP/1.`minor` with these headers leaves its
/// connection open.
pub fn keeps_alive(minor: u8, headers: &HeaderMap) -> bool {
    if minor == 0 {
        connection_has(headers, "keep-alive")
    } else {
        !connection_has(headers, "close")
    }
}

/// Reads more into `inbox`; `false` at the end of the stream.
async fn fill<R: AsyncRead + Unpin>(io: &mut R, inbox: &mut BytesMut) -> std::io::Result<bool> {
    inbox.reserve(16 << 10);
    Ok(io.read_buf(inbox).await? > 0)
}

/// Reads the agent's next request; `Ok(None)` when the agent closed the
/// connection between requests. An agent that asks `expect:
/// 100-continue` is told to go on: the gate needs the body.
pub async fn read_request<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    inbox: &mut BytesMut,
    max_body: usize,
) -> Result<Option<Request>, Refused> {
    let (method, target, minor, headers, head_len) = loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut slots);
        match parsed.parse(inbox) {
            Ok(httparse::Status::Complete(len)) => {
                let method = reqwest::Method::from_bytes(parsed.method.unwrap_or("").as_bytes())
                    .map_err(|_| refused(400, "a method that is not one"))?;
                let target = parsed.path.unwrap_or("/").to_string();
                let headers = header_map(parsed.headers).map_err(|e| refused(400, e))?;
                break (method, target, parsed.version.unwrap_or(1), headers, len);
            }
            Ok(httparse::Status::Partial) if inbox.len() >= MAX_HEAD => {
                return Err(refused(431, "a request head over 64 KiB"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Err(refused(431, "more than 128 headers"));
            }
            Err(e) => return Err(refused(400, format!("not an HTTP/1.1 request: {e}"))),
        }
        let empty = inbox.is_empty();
        match fill(io, inbox).await {
            Ok(true) => {}
            Ok(false) | Err(_) if empty => return Ok(None),
            _ => return Err(refused(400, "the request ended inside its head")),
        }
    };
    let _ = inbox.split_to(head_len);
    let framing = framing(&headers, true).map_err(|e| refused(400, e))?;
    let expects = headers
        .get("expect")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if expects && framing != Framing::Empty && inbox.is_empty() {
        io.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .map_err(|_| refused(400, "the agent left"))?;
    }
    let body = match framing {
        Framing::Empty | Framing::UntilClose => Bytes::new(),
        Framing::Length(n) => {
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n <= max_body)
                .ok_or_else(|| refused(413, format!("a request body over {max_body} bytes")))?;
            while inbox.len() < n {
                // Grown as the bytes come, so a length claimed and never
                // sent costs no memory.
                inbox.reserve((n - inbox.len()).min(4 << 20));
                if !matches!(io.read_buf(inbox).await, Ok(1..)) {
                    return Err(refused(400, "the request ended inside its body"));
                }
            }
            inbox.split_to(n).freeze()
        }
        Framing::Chunked => {
            let mut decoder = Chunked::default();
            let mut body = Vec::new();
            loop {
                let used = decoder
                    .feed(inbox, |r| body.extend_from_slice(&inbox[r]))
                    .map_err(|e| refused(400, e))?;
                let _ = inbox.split_to(used);
                if body.len() > max_body {
                    return Err(refused(
                        413,
                        format!("a request body over {max_body} bytes"),
                    ));
                }
                if decoder.is_done() {
                    break;
                }
                if !matches!(fill(io, inbox).await, Ok(true)) {
                    return Err(refused(400, "the request ended inside its body"));
                }
            }
            Bytes::from(body)
        }
    };
    let keep_alive = keeps_alive(minor, &headers);
    Ok(Some(Request {
        method,
        target,
        headers,
        body,
        keep_alive,
        minor,
    }))
}

/// An answer's head as the upstream sent it.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: u16,
    /// The reason phrase, kept so the agent reads the status line sent.
    pub reason: String,
    pub headers: HeaderMap,
    pub keep_alive: bool,
}

/// Reads an answer's head from the upstream; what follows it stays in
/// `inbox`. `Ok(None)` when the upstream closed before sending a byte.
pub async fn read_response_head<R: AsyncRead + Unpin>(
    io: &mut R,
    inbox: &mut BytesMut,
) -> Result<Option<ResponseHead>, String> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(inbox) {
            Ok(httparse::Status::Complete(len)) => {
                let status = parsed.code.unwrap_or(0);
                let reason = parsed.reason.unwrap_or("").to_string();
                let headers = header_map(parsed.headers)?;
                let keep_alive = keeps_alive(parsed.version.unwrap_or(1), &headers);
                let _ = inbox.split_to(len);
                return Ok(Some(ResponseHead {
                    status,
                    reason,
                    headers,
                    keep_alive,
                }));
            }
            Ok(httparse::Status::Partial) if inbox.len() >= MAX_HEAD => {
                return Err("an answer head over 64 KiB".into());
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(format!("not an HTTP/1.1 answer: {e}")),
        }
        let empty = inbox.is_empty();
        match fill(io, inbox).await {
            Ok(true) => {}
            Ok(false) if empty => return Ok(None),
            Ok(false) => return Err("the connection closed inside the answer's head".into()),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Appends `name: value\r\n` for each header.
pub fn put_headers<'a>(
    out: &mut Vec<u8>,
    headers: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>,
) {
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// A whole answer the proxy writes itself: JSON with its length.
pub fn json_answer(status: u16, body: &[u8], close: bool) -> Vec<u8> {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{}\r\n",
        body.len(),
        if close { "connection: close\r\n" } else { "" }
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// Decodes `wire` fed in pieces of `step` bytes.
    fn decode(wire: &[u8], step: usize) -> Result<(Vec<u8>, usize, bool), String> {
        let mut d = Chunked::default();
        let (mut out, mut used) = (Vec::new(), 0);
        for piece in wire.chunks(step) {
            let n = d.feed(piece, |r| out.extend_from_slice(&piece[r]))?;
            used += n;
            if n < piece.len() {
                break;
            }
        }
        Ok((out, used, d.is_done()))
    }

    #[test]
    fn a_chunked_body_is_read_however_it_is_split() {
        let wire = b"5;name=v\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        for step in 1..wire.len() {
            let (out, used, done) = decode(wire, step).unwrap();
            assert_eq!(out, b"hello, world", "step {step}");
            assert!(done, "step {step}");
            assert_eq!(
                used,
                wire.len() - 4,
                "step {step}: the body ends before NEXT"
            );
        }
    }

    #[test]
    fn a_chunked_body_without_its_last_chunk_is_not_done() {
        let (out, used, done) = decode(b"3\r\nabc\r\n", 2).unwrap();
        assert_eq!((out.as_slice(), used, done), (&b"abc"[..], 8, false));
    }

    #[test]
    fn broken_chunk_framing_is_an_error() {
        assert!(decode(b"zz\r\n", 4).is_err());
        assert!(decode(b"2\r\nabc\r\n", 8).is_err());
        assert!(decode(b"11111111111111111\r\n", 64).is_err());
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let f = |pairs: &[(&str, &str)], request| framing(&headers(pairs), request);
        assert_eq!(f(&[], true), Ok(Framing::Empty));
        assert_eq!(f(&[], false), Ok(Framing::UntilClose));
        assert_eq!(
            f(&[("content-length", "12")], true),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            f(&[("content-length", "12, 12")], false),
            Ok(Framing::Length(12))
        );
        assert!(f(&[("content-length", "12"), ("content-length", "13")], true).is_err());
        assert!(f(&[("content-length", "+12")], true).is_err());
        assert_eq!(
            f(&[("transfer-encoding", "gzip, chunked")], false),
            Ok(Framing::Chunked)
        );
        assert_eq!(
            f(&[("transfer-encoding", "gzip")], false),
            Ok(Framing::UntilClose)
        );
        assert!(f(&[("transfer-encoding", "gzip")], true).is_err());
        assert!(
            f(
                &[("transfer-encoding", "chunked"), ("content-length", "3")],
                true
            )
            .is_err(),
            "a request naming both is refused"
        );
        assert_eq!(
            f(
                &[("transfer-encoding", "chunked"), ("content-length", "3")],
                false
            ),
            Ok(Framing::Chunked)
        );
    }

    async fn request_of(wire: &'static [u8]) -> Result<Option<Request>, Refused> {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 20);
        theirs.write_all(wire).await.unwrap();
        drop(theirs);
        read_request(&mut ours, &mut BytesMut::new(), 1 << 20).await
    }

    #[tokio::test]
    async fn requests_are_read_with_either_framing() {
        let r = request_of(
            b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/v1/messages?beta=true")
        );
        assert_eq!((&r.body[..], r.keep_alive), (&b"hi"[..], true));
        let r = request_of(b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
            .await
            .unwrap()
            .unwrap();
        assert_eq!((&r.body[..], r.keep_alive), (&b"hi"[..], false));
        assert!(
            request_of(b"").await.unwrap().is_none(),
            "closed between requests"
        );
    }

    #[tokio::test]
    async fn unreadable_requests_are_refused_with_a_status() {
        let status = |r: Result<Option<Request>, Refused>| r.unwrap_err().status;
        assert_eq!(
            status(request_of(b"POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nhi").await),
            400
        );
        assert_eq!(status(request_of(b"GARBAGE\x01\r\n\r\n").await), 400);
        assert_eq!(
            status(request_of(b"POST / HTTP/1.1\r\ncontent-length: 99999999\r\n\r\n").await),
            413
        );
        let big: &'static [u8] = Box::leak(
            [b"GET / HTTP/1.1\r\nx: ".as_slice(), &vec![b'a'; MAX_HEAD]]
                .concat()
                .into_boxed_slice(),
        );
        assert_eq!(status(request_of(big).await), 431);
    }

    #[tokio::test]
    async fn an_agent_that_expects_100_continue_is_told_to_go_on() {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 16);
        let agent = tokio::spawn(async move {
            theirs
                .write_all(b"POST / HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n")
                .await
                .unwrap();
            let mut got = [0u8; 25];
            theirs.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"HTTP/1.1 100 Continue\r\n\r\n");
            theirs.write_all(b"hi").await.unwrap();
            theirs
        });
        let r = read_request(&mut ours, &mut BytesMut::new(), 1 << 20)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&r.body[..], b"hi");
        agent.await.unwrap();
    }

    #[tokio::test]
    async fn an_answer_head_leaves_its_body_in_the_inbox() {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 16);
        theirs
            .write_all(b"HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}")
            .await
            .unwrap();
        let mut inbox = BytesMut::new();
        let head = read_response_head(&mut ours, &mut inbox)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (head.status, head.reason.as_str(), head.keep_alive),
            (429, "Too Many Requests", false)
        );
        assert_eq!(&inbox[..], b"{}");
        drop(theirs);
        let mut empty = BytesMut::new();
        assert!(
            read_response_head(&mut ours, &mut empty)
                .await
                .unwrap()
                .is_none()
        );
    }
}
