//! The answer's way back to the agent, and what the capture keeps of it.
//!
//! The upstream's body reaches the agent through [`Tapped`], a body that
//! hands hyper each frame as the upstream's connection yields it (hyper
//! writes and flushes it to the agent before asking for the next), and
//! keeps the frame's payload for the capture by reference count on the
//! way. Reassembling, judging and writing the record happen in
//! [`Ended::into_exchange`], which the proxy's consumer calls once the
//! agent has the whole answer: the agent waits for none of it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::capture::{Action, Exchange};
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use loopdbg_formats::provider::Format;
use loopdbg_formats::stream::Reassembler;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::{MAX_CAPTURED_ANSWER, Started, error_chain};

/// How much of a streamed answer is kept unread before it is fed to the
/// reassembler on the way (so a long stream does not sit whole in memory).
const FEED_AFTER: usize = 1 << 20;

/// An exchange that is over: what the proxy knew and what came back. The
/// work of turning it into a capture record is left to whoever takes it.
pub struct Ended {
    started: Started,
    action: Action,
    status: u16,
    streamed: bool,
    answer: Answer,
    first_byte: Option<Instant>,
    at: Instant,
    error: Option<String>,
}

/// What came back, as far as the proxy has read it.
enum Answer {
    /// An answer the proxy wrote itself (a block, a failure).
    Written(Value),
    /// The upstream's answer: the chunks not read yet, and for a stream
    /// the reassembler that has read the ones before them.
    Kept {
        chunks: Vec<Bytes>,
        len: usize,
        reassembler: Option<Box<Reassembler>>,
        /// Bytes of the answer kept so far (fed or waiting).
        total: usize,
        /// The answer went on past [`MAX_CAPTURED_ANSWER`]: the rest
        /// reached the agent and was not kept.
        cut: bool,
    },
}

impl Ended {
    /// An exchange answered by the proxy itself.
    pub(super) fn written(
        started: Started,
        action: Action,
        status: u16,
        body: Value,
        error: Option<String>,
    ) -> Ended {
        Ended {
            started,
            action,
            status,
            streamed: false,
            answer: Answer::Written(body),
            first_byte: None,
            at: Instant::now(),
            error,
        }
    }

    /// The answer as a value: reassembled or parsed from what was kept
    /// (once; later calls find it written), with what went wrong noted.
    fn settle(&mut self) -> &Value {
        let error = &mut self.error;
        let response = match std::mem::replace(&mut self.answer, Answer::Written(Value::Null)) {
            Answer::Written(body) => body,
            Answer::Kept {
                chunks,
                reassembler: Some(r),
                cut,
                ..
            } => {
                let mut r = *r;
                for chunk in &chunks {
                    r.feed(chunk);
                }
                if cut {
                    error.get_or_insert_with(cut_words);
                } else if error.is_none() && !r.is_complete() {
                    *error = Some("the stream ended without its closing event".into());
                }
                r.finish()
            }
            Answer::Kept {
                chunks, len, cut, ..
            } => {
                if cut {
                    error.get_or_insert_with(cut_words);
                }
                let mut kept = Vec::with_capacity(len);
                for chunk in &chunks {
                    kept.extend_from_slice(chunk);
                }
                match serde_json::from_slice(&kept) {
                    Ok(value) => value,
                    Err(_) => {
                        let (text, shortened) = text_within(&kept, MAX_CAPTURED_ANSWER);
                        if shortened {
                            error.get_or_insert_with(escaped_words);
                        }
                        Value::String(text)
                    }
                }
            }
        };
        self.answer = Answer::Written(response);
        match &self.answer {
            Answer::Written(value) => value,
            Answer::Kept { .. } => unreachable!("just written"),
        }
    }

    /// A Responses answer's calls go to the store, so that a request
    /// continuing it is checked against them.
    fn remember_response(&mut self) {
        if self.started.provider != Some(Format::Responses) || self.status != 200 {
            return;
        }
        let memory = self.started.memory.clone();
        let response = self.settle();
        if let Ok(mut store) = memory.responses.lock() {
            store.remember(response);
        }
    }

    /// The capture's record: the request judged if it was forwarded
    /// unread, the answer reassembled or parsed.
    pub fn into_exchange(self) -> Exchange {
        self.record(Bodies::Kept)
    }

    /// The capture's record, with the request's body or without it
    /// (`null`, [`Bodies::Dropped`]) for a proxy that records nothing and
    /// shows one line per exchange: the verdict, the status and the
    /// timings are all there. Parsing and masking a 2 MB history again for
    /// a line that shows none of it took a third of a gateway's CPU.
    pub fn record(mut self, bodies: Bodies) -> Exchange {
        // Judged before its own answer is remembered: a request is checked
        // against the responses that came before it.
        let request = self.started.request_for_record(bodies);
        self.remember_response();
        self.settle();
        let response = match std::mem::replace(&mut self.answer, Answer::Written(Value::Null)) {
            Answer::Written(value) => value,
            Answer::Kept { .. } => unreachable!("settled"),
        };
        let error = self.error;
        let action = if error
            .as_deref()
            .is_some_and(|e| e.starts_with("the upstream"))
        {
            Action::Failed
        } else {
            self.action
        };
        let mut started = self.started;
        let secrets = std::mem::take(&mut started.secrets);
        let mut x = Exchange {
            loopdbg: loopdbg_read::capture::MARKER,
            seq: started.seq,
            first_byte_ms: self.first_byte.map(|t| started.ms(t)),
            latency_ms: started.ms(self.at),
            time: super::rfc3339(started.time),
            method: started.method,
            path: started.path,
            provider: started.provider.map(Format::as_str),
            request,
            forwarded: started.forwarded,
            action,
            status: self.status,
            streamed: self.streamed,
            response,
            findings: started.findings,
            error,
        };
        // Nothing recorded or printed about the exchange carries its
        // credentials, whoever echoed them.
        secrets.mask_value(&mut x.request);
        if let Some(f) = x.forwarded.as_mut() {
            secrets.mask_value(f);
        }
        secrets.mask_value(&mut x.response);
        for text in [&mut x.path]
            .into_iter()
            .chain(x.error.as_mut())
            .chain(x.findings.iter_mut().map(|f| &mut f.message))
        {
            if let std::borrow::Cow::Owned(masked) = secrets.mask(text) {
                *text = masked;
            }
        }
        x
    }
}

/// Whether an exchange's record keeps the request's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bodies {
    /// Kept: a capture, spans or the screen read it.
    Kept,
    /// Dropped (`null`): nothing records it; the verdict is kept.
    Dropped,
}

/// An answer that is not JSON as text whose written form (control
/// characters escaped, six bytes each) stays within `cap` bytes, and
/// whether it had to be shortened: 64 MiB of decoded zeros became a
/// 353 MB capture line and took the proxy to 1 GB.
fn text_within(bytes: &[u8], cap: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    let mut written = 0;
    for (i, c) in text.char_indices() {
        written += match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if c.is_control() => 6,
            c => c.len_utf8(),
        };
        if written > cap {
            return (text[..i].to_string(), true);
        }
    }
    (text.into_owned(), false)
}

/// What the capture says of a text answer shortened to its cap.
fn escaped_words() -> String {
    format!(
        "the answer is not JSON and its text, escaped, went past {} MiB: the agent got all of it, the capture keeps its start",
        MAX_CAPTURED_ANSWER >> 20
    )
}

/// What the capture says of an answer kept only in part.
fn cut_words() -> String {
    format!(
        "the answer went on past {} MiB: the agent got all of it, the capture keeps the first {} MiB",
        MAX_CAPTURED_ANSWER >> 20,
        MAX_CAPTURED_ANSWER >> 20
    )
}

/// An exchange whose answer is on its way back.
pub(super) struct Returning {
    ended: Ended,
    done: UnboundedSender<Ended>,
    /// Inflates an answer the upstream compressed although the proxy asked
    /// for none, for the capture (the agent gets the bytes as sent).
    decoder: Option<Decoder>,
    /// Remember a Responses answer as soon as it ends (see
    /// [`Ended::remember_response`]), before the agent can continue it.
    pub(super) remember_at_end: bool,
}

/// A streaming decoder for a `content-encoding` the capture can read.
enum Decoder {
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
    Deflate(Box<flate2::write::ZlibDecoder<Vec<u8>>>),
}

impl Decoder {
    /// The decoded bytes `chunk` completes, or why it cannot be decoded.
    fn decode(&mut self, chunk: &[u8]) -> std::io::Result<Vec<u8>> {
        use std::io::Write;
        match self {
            Decoder::Gzip(d) => {
                d.write_all(chunk)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Decoder::Deflate(d) => {
                d.write_all(chunk)?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }

    /// What the decoder still holds once the answer has ended.
    fn finish(&mut self) -> std::io::Result<Vec<u8>> {
        match self {
            Decoder::Gzip(d) => {
                d.try_finish()?;
                Ok(std::mem::take(d.get_mut()))
            }
            Decoder::Deflate(d) => {
                d.try_finish()?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }
}

impl Returning {
    /// An answer with `status` on its way back; the exchange goes to
    /// `done` when it is over.
    pub(super) fn new(
        status: u16,
        started: Started,
        action: Action,
        streamed: bool,
        framed: bool,
        done: UnboundedSender<Ended>,
    ) -> Returning {
        let reassembler = started
            .provider
            .filter(|_| streamed)
            .map(|format| match framed {
                true => Box::new(Reassembler::framed(format)),
                false => Box::new(Reassembler::new(format)),
            });
        Returning {
            ended: Ended {
                started,
                action,
                status,
                streamed,
                answer: Answer::Kept {
                    chunks: Vec::new(),
                    len: 0,
                    reassembler,
                    total: 0,
                    cut: false,
                },
                first_byte: None,
                at: Instant::now(),
                error: None,
            },
            done,
            decoder: None,
            remember_at_end: false,
        }
    }

    /// Takes the answer's `content-encoding`: gzip and deflate are
    /// decoded for the capture; another one is recorded as not decoded.
    /// An upstream that compressed anyway garbled the capture (issue 23,
    /// item 17).
    pub(super) fn decode(&mut self, encoding: Option<&str>) {
        match encoding.map(str::trim) {
            None | Some("" | "identity") => {}
            Some("gzip" | "x-gzip") => {
                self.decoder = Some(Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(
                    Vec::new(),
                ))));
            }
            Some("deflate") => {
                self.decoder = Some(Decoder::Deflate(Box::new(flate2::write::ZlibDecoder::new(
                    Vec::new(),
                ))));
            }
            Some(other) => {
                self.ended.error = Some(format!(
                    "the upstream answered with content-encoding {other} although none was asked; the capture keeps the bytes undecoded"
                ));
            }
        }
    }

    fn keep(&mut self, chunk: &Bytes) {
        self.ended.first_byte.get_or_insert_with(Instant::now);
        if matches!(self.ended.answer, Answer::Kept { cut: true, .. }) {
            // Past the cap nothing is kept, so nothing is decoded either.
            return;
        }
        let decoded;
        let chunk = match self.decoder.as_mut().map(|d| d.decode(chunk)) {
            None => chunk,
            Some(Ok(bytes)) => {
                decoded = Bytes::from(bytes);
                &decoded
            }
            Some(Err(e)) => {
                self.decoder = None;
                self.ended.error = Some(format!(
                    "the upstream's compressed answer could not be decoded for the capture: {e}"
                ));
                return;
            }
        };
        self.keep_plain(chunk);
    }

    /// Keeps decoded bytes of the answer, to the capture's cap.
    fn keep_plain(&mut self, chunk: &Bytes) {
        let Answer::Kept {
            chunks,
            len,
            reassembler,
            total,
            cut,
        } = &mut self.ended.answer
        else {
            return;
        };
        // A stream is kept to the same cap as a plain answer: an endless
        // one took the proxy to 4.3 GB in 22 s (issue 23, item 6).
        if *cut || *total + chunk.len() > MAX_CAPTURED_ANSWER {
            *cut = true;
            return;
        }
        *total += chunk.len();
        match reassembler {
            Some(r) => {
                chunks.push(chunk.clone());
                *len += chunk.len();
                if *len > FEED_AFTER {
                    for c in chunks.drain(..) {
                        r.feed(&c);
                    }
                    *len = 0;
                }
            }
            None => {
                chunks.push(chunk.clone());
                *len += chunk.len();
            }
        }
    }

    fn end(mut self, error: Option<String>) {
        self.ended.at = Instant::now();
        // Past the cap the decoder was left mid-stream: its end is not an
        // error (it said "could not be decoded" of an answer cut at the cap).
        let cut = matches!(self.ended.answer, Answer::Kept { cut: true, .. });
        if let Some(mut decoder) = self.decoder.take().filter(|_| !cut) {
            match decoder.finish() {
                Ok(rest) if !rest.is_empty() => self.keep_plain(&Bytes::from(rest)),
                Ok(_) => {}
                Err(e) => {
                    self.ended.error = Some(format!(
                        "the upstream's compressed answer could not be decoded for the capture: {e}"
                    ))
                }
            }
        }
        if error.is_some() {
            self.ended.error = error;
        }
        if self.remember_at_end {
            self.ended.remember_response();
        }
        let _ = self.done.send(self.ended);
    }
}

/// The upstream's body on its way to the agent, each data frame kept for
/// the capture as it passes. The exchange ends when the body does: at its
/// end, at an upstream error (which hyper passes on by breaking the
/// agent's connection, as the upstream broke the proxy's), or when hyper
/// drops it because the agent left; dropping it also drops the upstream's
/// answer, so an abandoned generation is not read on.
pub(super) struct Tapped {
    inner: Incoming,
    returning: Option<Returning>,
}

impl Tapped {
    pub(super) fn new(inner: Incoming, returning: Returning) -> Tapped {
        Tapped {
            inner,
            returning: Some(returning),
        }
    }
}

impl Body for Tapped {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(r)) = (frame.data_ref(), this.returning.as_mut()) {
                    r.keep(data);
                }
                // A body of known length ends with its last byte: the
                // exchange ends before hyper hands that byte on, so the
                // agent can never continue an answer not yet remembered.
                if this.inner.is_end_stream()
                    && let Some(r) = this.returning.take()
                {
                    r.end(None);
                }
            }
            Poll::Ready(Some(Err(e))) => {
                if let Some(r) = this.returning.take() {
                    r.end(Some(format!(
                        "the upstream broke off mid-answer: {}",
                        error_chain(e)
                    )));
                }
            }
            Poll::Ready(None) => {
                if let Some(r) = this.returning.take() {
                    r.end(None);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        let Some(mut r) = self.returning.take() else {
            return;
        };
        // A body of known length is not polled past its last byte.
        if !self.inner.is_end_stream() {
            r.agent_left();
        }
        r.end(None);
    }
}

impl Returning {
    fn agent_left(&mut self) {
        self.ended.error = Some("the agent closed the connection before the answer ended".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_answer_is_kept_within_the_cap_once_escaped() {
        let zeros = vec![0u8; 1000];
        let (text, shortened) = text_within(&zeros, 600);
        assert!(shortened);
        assert_eq!(text.len(), 100, "six bytes a NUL once written");
        assert!(serde_json::to_string(&text).unwrap().len() <= 602);
        let plain = "héllo \"quoted\"\n".repeat(10);
        assert_eq!(
            text_within(plain.as_bytes(), 10_000),
            (plain.clone(), false)
        );
        let (cut, shortened) = text_within(plain.as_bytes(), 7);
        assert!(shortened && plain.starts_with(&cut), "{cut}");
    }
}
