//! The answer's way back to the agent. The upstream's body is polled by
//! the agent's own connection task through [`Relay`], so each chunk is
//! written to the agent in the same wake-up that read it from the
//! upstream: no task or channel between the two connections. A task in
//! between costs a wake-up of the other worker thread for every chunk,
//! which on a loaded machine is what a user sees added to the first byte.
//!
//! The capture only keeps the chunks (a reference count each) on the way;
//! reassembling, judging and writing happen in [`Ended::into_exchange`],
//! which the proxy's consumer calls once the agent has the whole answer.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt};
use loopdbg::live::capture::Exchange;
use loopdbg::live::stream::Reassembler;
use loopdbg::wire::provider::Format;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use super::upstream::BoxError;
use super::{MAX_CAPTURED_ANSWER, Started, error_chain};

/// How much of a streamed answer is kept unread before it is fed to the
/// reassembler on the way (so a long stream does not sit whole in memory).
const FEED_AFTER: usize = 1 << 20;

/// An exchange that is over: what the proxy knew and what came back. The
/// work of turning it into a capture record is left to whoever takes it.
pub struct Ended {
    started: Started,
    action: &'static str,
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
    },
}

impl Ended {
    /// An exchange answered by the proxy itself.
    pub(super) fn written(
        started: Started,
        action: &'static str,
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

    /// The capture's record: the request judged if it was forwarded
    /// unread, the answer reassembled or parsed.
    pub fn into_exchange(self) -> Exchange {
        let mut error = self.error;
        let response = match self.answer {
            Answer::Written(body) => body,
            Answer::Kept {
                chunks,
                reassembler: Some(r),
                ..
            } => {
                let mut r = *r;
                for chunk in &chunks {
                    r.feed(chunk);
                }
                if error.is_none() && !r.is_complete() {
                    error = Some("the stream ended without its closing event".into());
                }
                r.finish()
            }
            Answer::Kept { chunks, len, .. } => {
                let mut kept = Vec::with_capacity(len);
                for chunk in &chunks {
                    kept.extend_from_slice(chunk);
                }
                serde_json::from_slice(&kept)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&kept).into_owned()))
            }
        };
        let action = if error
            .as_deref()
            .is_some_and(|e| e.starts_with("the upstream"))
        {
            "failed"
        } else {
            self.action
        };
        let mut started = self.started;
        started.judge_if_unread();
        Exchange {
            loopdbg: loopdbg::live::capture::MARKER,
            seq: started.seq,
            first_byte_ms: self.first_byte.map(|t| started.ms(t)),
            latency_ms: started.ms(self.at),
            time: started.time,
            method: started.method,
            path: started.path,
            provider: started.provider.map(Format::as_str),
            request: started.request,
            forwarded: started.forwarded,
            action,
            status: self.status,
            streamed: self.streamed,
            response,
            findings: started.findings,
            error,
        }
    }
}

/// An exchange whose answer is on its way back.
struct Returning {
    ended: Ended,
    done: UnboundedSender<Ended>,
}

impl Returning {
    fn keep(&mut self, chunk: &Bytes) {
        self.ended.first_byte.get_or_insert_with(Instant::now);
        let Answer::Kept {
            chunks,
            len,
            reassembler,
        } = &mut self.ended.answer
        else {
            return;
        };
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
            None if *len + chunk.len() <= MAX_CAPTURED_ANSWER => {
                chunks.push(chunk.clone());
                *len += chunk.len();
            }
            None => {}
        }
    }

    fn end(mut self, error: Option<String>) {
        self.ended.at = Instant::now();
        if error.is_some() {
            self.ended.error = error;
        }
        let _ = self.done.send(self.ended);
    }
}

/// The body the agent reads: the upstream's chunks as they arrive, each
/// kept for the capture beside it.
pub struct Relay {
    upstream: BoxStream<'static, Result<Bytes, BoxError>>,
    returning: Option<Returning>,
}

impl Relay {
    /// Relays `upstream`'s body; `ended` goes to `done` when it is over.
    pub(super) fn new(
        status: u16,
        upstream: BoxStream<'static, Result<Bytes, BoxError>>,
        started: Started,
        action: &'static str,
        streamed: bool,
        done: UnboundedSender<Ended>,
    ) -> Relay {
        let reassembler = started
            .provider
            .filter(|_| streamed)
            .map(|format| Box::new(Reassembler::new(format)));
        Relay {
            upstream,
            returning: Some(Returning {
                ended: Ended {
                    started,
                    action,
                    status,
                    streamed,
                    answer: Answer::Kept {
                        chunks: Vec::new(),
                        len: 0,
                        reassembler,
                    },
                    first_byte: None,
                    at: Instant::now(),
                    error: None,
                },
                done,
            }),
        }
    }
}

impl Stream for Relay {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = match self.upstream.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        match item {
            Some(Ok(chunk)) => {
                if let Some(r) = self.returning.as_mut() {
                    r.keep(&chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Some(Err(e)) => {
                let message = format!("the upstream broke off mid-answer: {}", error_chain(&*e));
                if let Some(r) = self.returning.take() {
                    r.end(Some(message.clone()));
                }
                Poll::Ready(Some(Err(std::io::Error::other(message))))
            }
            None => {
                if let Some(r) = self.returning.take() {
                    r.end(None);
                }
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for Relay {
    /// The agent went away before the answer ended: the rest is still
    /// read, so the capture holds what the upstream sent.
    fn drop(&mut self) {
        let Some(mut returning) = self.returning.take() else {
            return;
        };
        returning.ended.error =
            Some("the agent closed the connection before the answer ended".into());
        let mut upstream = std::mem::replace(&mut self.upstream, futures::stream::empty().boxed());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return returning.end(None);
        };
        runtime.spawn(async move {
            while let Some(chunk) = upstream.next().await {
                match chunk {
                    Ok(chunk) => returning.keep(&chunk),
                    Err(e) => {
                        let message =
                            format!("the upstream broke off mid-answer: {}", error_chain(&*e));
                        return returning.end(Some(message));
                    }
                }
            }
            returning.end(None);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::mpsc as chan;

    const EVENTS: [&str; 4] = [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"18°C\"}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ];

    fn started() -> Started {
        Started {
            seq: 1,
            time: String::new(),
            method: "POST".into(),
            path: "/v1/messages".into(),
            provider: Some(Format::Anthropic),
            request: Value::Null,
            forwarded: None,
            findings: Vec::new(),
            unjudged: None,
            began: Instant::now(),
        }
    }

    /// A relay over an upstream whose chunks the test sends one by one.
    fn relay() -> (
        Relay,
        chan::UnboundedSender<std::io::Result<Bytes>>,
        tokio::sync::mpsc::UnboundedReceiver<Ended>,
    ) {
        let (chunks, body) = chan::unbounded::<std::io::Result<Bytes>>();
        let body = body.map(|c| c.map_err(BoxError::from)).boxed();
        let (done, ended) = tokio::sync::mpsc::unbounded_channel();
        let relay = Relay::new(200, body, started(), "forwarded", true, done);
        (relay, chunks, ended)
    }

    #[tokio::test]
    async fn each_chunk_reaches_the_agent_as_it_arrives_and_the_capture_reads_them_after() {
        let (mut relay, chunks, mut ended) = relay();
        for event in EVENTS {
            chunks.unbounded_send(Ok(Bytes::from(event))).unwrap();
            let got = relay.next().await.unwrap().unwrap();
            assert_eq!(&got[..], event.as_bytes());
            assert!(ended.try_recv().is_err(), "not over before the end");
        }
        drop(chunks);
        assert!(relay.next().await.is_none());
        let x = ended.try_recv().expect("over at the end").into_exchange();
        assert_eq!(x.action, "forwarded");
        assert!(x.error.is_none(), "{:?}", x.error);
        assert_eq!(x.response["content"][0]["text"], "18°C");
        assert!(x.first_byte_ms.is_some());
    }

    #[tokio::test]
    async fn an_agent_that_leaves_early_still_leaves_the_whole_answer_in_the_capture() {
        let (mut relay, chunks, mut ended) = relay();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        relay.next().await.unwrap().unwrap();
        drop(relay);
        for event in &EVENTS[1..] {
            chunks.unbounded_send(Ok(Bytes::from(*event))).unwrap();
        }
        drop(chunks);
        let x = ended.recv().await.expect("read on after the agent left");
        let x = x.into_exchange();
        assert_eq!(x.response["content"][0]["text"], "18°C");
        assert_eq!(
            x.error.as_deref(),
            Some("the agent closed the connection before the answer ended")
        );
        assert_eq!(x.action, "forwarded");
    }

    #[tokio::test]
    async fn an_upstream_that_breaks_off_breaks_the_agents_answer_too() {
        let (mut relay, chunks, mut ended) = relay();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        chunks
            .unbounded_send(Err(std::io::Error::other("reset")))
            .unwrap();
        relay.next().await.unwrap().unwrap();
        assert!(relay.next().await.unwrap().is_err());
        let x = ended.try_recv().unwrap().into_exchange();
        assert_eq!(x.action, "failed");
        assert!(x.error.unwrap().starts_with("the upstream broke off"));
        assert_eq!(x.response["id"], "msg_1", "what arrived is kept");
    }

    #[tokio::test]
    async fn a_stream_without_its_closing_event_is_named() {
        let (mut relay, chunks, mut ended) = relay();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        drop(chunks);
        relay.next().await.unwrap().unwrap();
        assert!(relay.next().await.is_none());
        let x = ended.try_recv().unwrap().into_exchange();
        assert_eq!(
            x.error.as_deref(),
            Some("the stream ended without its closing event")
        );
    }
}
