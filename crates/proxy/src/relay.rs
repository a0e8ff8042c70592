//! The answer's way back to the agent. The upstream's body is read by the
//! agent's own connection task in [`relay`], so each piece is written to
//! the agent in the same wake-up that read it from the upstream: no task
//! or channel between the two connections. A task in between costs a
//! wake-up of the other worker thread for every chunk, which on a loaded
//! machine is what a user sees added to the first byte.
//!
//! The capture only keeps the payload (a reference count each) on the way;
//! reassembling, judging and writing happen in [`Ended::into_exchange`],
//! which the proxy's consumer calls once the agent has the whole answer.

use std::time::Instant;

use bytes::{Buf, Bytes};
use futures::stream::{BoxStream, StreamExt};
use loopdbg_wire::capture::Exchange;
use loopdbg_wire::provider::Format;
use loopdbg_wire::stream::Reassembler;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::UnboundedSender;

use super::upstream::{BoxError, Payload, Piece, RawBody};
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
            loopdbg: loopdbg_wire::capture::MARKER,
            seq: started.seq,
            first_byte_ms: self.first_byte.map(|t| started.ms(t)),
            latency_ms: started.ms(self.at),
            time: super::rfc3339(started.time),
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
pub(super) struct Returning {
    ended: Ended,
    done: UnboundedSender<Ended>,
}

impl Returning {
    /// An answer with `status` on its way back; the exchange goes to
    /// `done` when it is over.
    pub(super) fn new(
        status: u16,
        started: Started,
        action: &'static str,
        streamed: bool,
        done: UnboundedSender<Ended>,
    ) -> Returning {
        let reassembler = started
            .provider
            .filter(|_| streamed)
            .map(|format| Box::new(Reassembler::new(format)));
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
                },
                first_byte: None,
                at: Instant::now(),
                error: None,
            },
            done,
        }
    }

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

/// Where the answer's bytes come from.
pub(super) enum Body {
    /// A plain upstream's bytes as they were read.
    Raw(RawBody),
    /// reqwest's chunks, decoded from their framing.
    Decoded(BoxStream<'static, Result<Bytes, BoxError>>),
}

/// How the answer's body is framed for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToAgent {
    /// The bytes as they came (a plain upstream's, or a length's worth).
    AsRead,
    /// Chunk-encoded (decoded chunks of no known length, to HTTP/1.1).
    Chunked,
    /// The payload alone, ended by closing the connection (an HTTP/1.0
    /// agent, or an upstream that ends its answer so).
    PayloadThenClose,
}

/// Relays the answer to the agent after its `head`, each piece written in
/// the wake-up that read it, and kept for the capture beside it. A head
/// that came with the body's first bytes goes with them in one write. An
/// agent that leaves early does not cut the capture short: the rest is
/// still read. Gives whether the agent's connection can carry another
/// request.
pub(super) async fn relay<W: AsyncWrite + Unpin>(
    agent: &mut W,
    head: &[u8],
    mut body: Body,
    to_agent: ToAgent,
    mut returning: Returning,
) -> bool {
    let mut head = Some(head);
    let mut agent_there = true;
    let broke = loop {
        let piece = {
            let mut next = std::pin::pin!(next_piece(&mut body));
            match head {
                Some(h) => match futures::poll!(next.as_mut()) {
                    std::task::Poll::Ready(piece) => piece,
                    std::task::Poll::Pending => {
                        head = None;
                        if agent.write_all(h).await.is_err() {
                            agent_there = false;
                            returning.agent_left();
                        }
                        next.await
                    }
                },
                None => next.await,
            }
        };
        let piece = match piece {
            None => break None,
            Some(Err(e)) => break Some(format!("the upstream broke off mid-answer: {e}")),
            Some(Ok(piece)) => piece,
        };
        if agent_there {
            let before = head.take().unwrap_or_default();
            let written = match (to_agent, &piece.payload) {
                (ToAgent::AsRead, _) | (ToAgent::PayloadThenClose, Payload::Whole) => {
                    agent
                        .write_all_buf(&mut before.chain(&piece.wire[..]))
                        .await
                }
                (ToAgent::PayloadThenClose, Payload::Parts(ranges)) => {
                    let mut out = before.to_vec();
                    for range in ranges {
                        out.extend_from_slice(&piece.wire[range.clone()]);
                    }
                    agent.write_all(&out).await
                }
                (ToAgent::Chunked, _) if piece.wire.is_empty() => agent.write_all(before).await,
                (ToAgent::Chunked, _) => {
                    let size = format!("{:x}\r\n", piece.wire.len());
                    let mut out = before
                        .chain(size.as_bytes())
                        .chain(&piece.wire[..])
                        .chain(&b"\r\n"[..]);
                    agent.write_all_buf(&mut out).await
                }
            };
            if written.is_err() {
                agent_there = false;
                returning.agent_left();
            }
        }
        match piece.payload {
            Payload::Whole => returning.keep(&piece.wire),
            Payload::Parts(ranges) => {
                for range in ranges {
                    returning.keep(&piece.wire.slice(range));
                }
            }
        }
    };
    let whole = broke.is_none();
    if agent_there && let Some(h) = head {
        agent_there = agent.write_all(h).await.is_ok();
    }
    if whole && agent_there && to_agent == ToAgent::Chunked {
        agent_there = agent.write_all(b"0\r\n\r\n").await.is_ok();
    }
    returning.end(broke);
    agent_there && whole && to_agent != ToAgent::PayloadThenClose
}

async fn next_piece(body: &mut Body) -> Option<Result<Piece, String>> {
    match body {
        Body::Raw(raw) => raw.next().await,
        Body::Decoded(stream) => stream.next().await.map(|chunk| {
            chunk
                .map(|wire| Piece {
                    payload: Payload::Whole,
                    wire,
                })
                .map_err(|e| error_chain(&*e))
        }),
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
            time: std::time::SystemTime::now(),
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

    /// A relay to an agent on the other end of a pipe, over an upstream
    /// whose chunks the test sends one by one.
    fn rig() -> (
        tokio::task::JoinHandle<bool>,
        tokio::io::DuplexStream,
        chan::UnboundedSender<std::io::Result<Bytes>>,
        tokio::sync::mpsc::UnboundedReceiver<Ended>,
    ) {
        let (chunks, body) = chan::unbounded::<std::io::Result<Bytes>>();
        let stream = body.map(|c| c.map_err(BoxError::from)).boxed();
        let (done, ended) = tokio::sync::mpsc::unbounded_channel();
        let returning = Returning::new(200, started(), "forwarded", true, done);
        let (mut ours, agent) = tokio::io::duplex(1 << 16);
        let task = tokio::spawn(async move {
            relay(
                &mut ours,
                b"HEAD\n",
                Body::Decoded(stream),
                ToAgent::AsRead,
                returning,
            )
            .await
        });
        (task, agent, chunks, ended)
    }

    async fn read_exactly(agent: &mut tokio::io::DuplexStream, n: usize) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let mut got = vec![0; n];
        agent.read_exact(&mut got).await.unwrap();
        got
    }

    #[tokio::test]
    async fn each_chunk_reaches_the_agent_as_it_arrives_and_the_capture_reads_them_after() {
        let (task, mut agent, chunks, mut ended) = rig();
        assert_eq!(read_exactly(&mut agent, 5).await, b"HEAD\n");
        for event in EVENTS {
            chunks.unbounded_send(Ok(Bytes::from(event))).unwrap();
            assert_eq!(
                read_exactly(&mut agent, event.len()).await,
                event.as_bytes()
            );
            assert!(ended.try_recv().is_err(), "not over before the end");
        }
        drop(chunks);
        assert!(task.await.unwrap(), "the agent's connection can go on");
        let x = ended.try_recv().expect("over at the end").into_exchange();
        assert_eq!(x.action, "forwarded");
        assert!(x.error.is_none(), "{:?}", x.error);
        assert_eq!(x.response["content"][0]["text"], "18°C");
        assert!(x.first_byte_ms.is_some());
    }

    #[tokio::test]
    async fn decoded_chunks_are_chunk_encoded_when_no_length_was_known() {
        let (chunks, body) = chan::unbounded::<std::io::Result<Bytes>>();
        let stream = body.map(|c| c.map_err(BoxError::from)).boxed();
        let (done, _ended) = tokio::sync::mpsc::unbounded_channel();
        let returning = Returning::new(200, started(), "forwarded", false, done);
        chunks.unbounded_send(Ok(Bytes::from("hello"))).unwrap();
        chunks.unbounded_send(Ok(Bytes::new())).unwrap();
        chunks.unbounded_send(Ok(Bytes::from(", world!"))).unwrap();
        drop(chunks);
        let mut agent = Vec::new();
        let body = Body::Decoded(stream);
        assert!(relay(&mut agent, b"", body, ToAgent::Chunked, returning).await);
        assert_eq!(agent, b"5\r\nhello\r\n8\r\n, world!\r\n0\r\n\r\n");
    }

    #[tokio::test]
    async fn an_agent_that_leaves_early_still_leaves_the_whole_answer_in_the_capture() {
        let (task, mut agent, chunks, mut ended) = rig();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        read_exactly(&mut agent, 5 + EVENTS[0].len()).await;
        drop(agent);
        for event in &EVENTS[1..] {
            chunks.unbounded_send(Ok(Bytes::from(*event))).unwrap();
        }
        drop(chunks);
        assert!(!task.await.unwrap(), "the agent's connection is over");
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
        let (task, _agent, chunks, mut ended) = rig();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        chunks
            .unbounded_send(Err(std::io::Error::other("reset")))
            .unwrap();
        assert!(
            !task.await.unwrap(),
            "the agent's connection is closed on it"
        );
        let x = ended.try_recv().unwrap().into_exchange();
        assert_eq!(x.action, "failed");
        assert!(x.error.unwrap().starts_with("the upstream broke off"));
        assert_eq!(x.response["id"], "msg_1", "what arrived is kept");
    }

    #[tokio::test]
    async fn a_stream_without_its_closing_event_is_named() {
        let (task, _agent, chunks, mut ended) = rig();
        chunks.unbounded_send(Ok(Bytes::from(EVENTS[0]))).unwrap();
        drop(chunks);
        assert!(task.await.unwrap());
        let x = ended.try_recv().unwrap().into_exchange();
        assert_eq!(
            x.error.as_deref(),
            Some("the stream ended without its closing event")
        );
    }
}
