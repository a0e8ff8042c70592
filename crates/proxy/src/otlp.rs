//! `proxy --otlp URL`: each completed exchange as an OTLP span, sent over
//! OTLP/HTTP (JSON, `POST URL/v1/traces`) to a collector, off the relay's
//! path. Spans go into a bounded queue on the consumer's side, after the
//! agent has its answer; one task sends whatever has queued up as one
//! request (so spans batch when they come fast); a full queue or a
//! collector that is down, refuses or does not answer in time costs a
//! counted drop, never a wait. The queue is bounded by its bytes as well
//! as its length: a collector that never answered held 2.6 GB of queued
//! spans after 1,100 exchanges of 2 MB.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::capture::Exchange;
use bytes::Bytes;
use hyper::http::{HeaderMap, HeaderValue, Method, Uri};
use loopdbg_export::spans::{self, TraceBuilder};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use tokio::sync::mpsc;

use crate::upstream::Upstream;

/// Exports waiting to be sent, at most.
const QUEUE: usize = 1024;
/// Exports sent in one request, at most.
const BATCH: usize = 256;
/// The most the queue holds, in encoded bytes.
const QUEUE_BYTES: u64 = 64 << 20;
/// How long one export may take before its spans are dropped:
/// OpenTelemetry's default (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the sink has done so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Spans the collector took (a 2xx).
    pub sent: AtomicU64,
    /// Spans dropped: the queue was full, or the collector was down,
    /// refused them or did not answer in time.
    pub dropped: AtomicU64,
    /// Spans queued or being sent, not yet taken or dropped.
    pub waiting: AtomicU64,
    /// The encoded bytes of the exports queued.
    queued_bytes: AtomicU64,
}

/// What `--otlp` did, as the proxy says when it ends.
impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::sync::atomic::Ordering;
        write!(
            f,
            "otlp: {} span(s) sent, {} dropped (queue full, or the collector down, refusing or not answering)",
            self.sent.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed)
        )?;
        match self.waiting.load(Ordering::Relaxed) {
            0 => Ok(()),
            n => write!(f, ", {n} not sent when the proxy ended"),
        }
    }
}

/// The sending side, held by whoever consumes the exchanges.
pub struct Sink {
    queue: mpsc::Sender<Queued>,
    builder: TraceBuilder,
    counts: Arc<Counts>,
}

/// One export waiting: its spans and encoded size.
struct Queued {
    export: ExportTraceServiceRequest,
    spans: u64,
    bytes: u64,
}

/// `URL` as the collector's base: `http://host:4318`, or the whole
/// `…/v1/traces` path.
fn base_of(url: &Uri) -> Result<Uri, String> {
    let text = url.to_string();
    let base = text
        .trim_end_matches('/')
        .trim_end_matches("/v1/traces")
        .to_string();
    crate::upstream::parse_upstream(&base)
}

impl Sink {
    /// Starts the sending task on `runtime`; spans are in one trace named
    /// by `seed` (the proxy's address and start).
    pub fn start(
        url: &str,
        seed: &str,
        runtime: &tokio::runtime::Handle,
    ) -> Result<(Sink, Arc<Counts>), String> {
        let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let base = base_of(&uri)?;
        let way = Upstream::new(&base).map_err(|e| e.to_string())?;
        let (queue, waiting) = mpsc::channel(QUEUE);
        let counts = Arc::new(Counts::default());
        runtime.spawn(send_all(way, waiting, Arc::clone(&counts)));
        Ok((
            Sink {
                queue,
                builder: TraceBuilder::live(seed),
                counts: Arc::clone(&counts),
            },
            counts,
        ))
    }

    /// Queues the span of one exchange (nothing for one that holds no
    /// conversation); a full queue drops it, counted.
    pub fn send(&mut self, x: &Exchange) {
        let Ok(record) = serde_json::to_value(x) else {
            return;
        };
        // When the request arrived, as the capture says it.
        let start_ns = humantime::parse_rfc3339_weak(&x.time)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let end_ns = start_ns + (x.latency_ms.max(0.0) * 1e6) as u64;
        spans::add_exchange(&mut self.builder, &record, &x.findings, start_ns, end_ns);
        if self.builder.is_empty() {
            return;
        }
        let spans = self.builder.len() as u64;
        // No root span: a live trace's spans are each their own root.
        let export = self.builder.export("", false);
        let bytes = prost::Message::encoded_len(&export) as u64;
        let counts = &self.counts;
        let queued = counts.queued_bytes.load(Ordering::Relaxed);
        let queue = Queued {
            export,
            spans,
            bytes,
        };
        if queued + bytes > QUEUE_BYTES || self.queue.try_send(queue).is_err() {
            counts.dropped.fetch_add(spans, Ordering::Relaxed);
            return;
        }
        counts.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        counts.waiting.fetch_add(spans, Ordering::Relaxed);
    }
}

/// Sends what has queued up, one request at a time, until the sink is
/// dropped.
async fn send_all(way: Upstream, mut waiting: mpsc::Receiver<Queued>, counts: Arc<Counts>) {
    let mut headers = HeaderMap::new();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    while let Some(first) = waiting.recv().await {
        let (mut batch, mut spans, mut bytes) = (first.export, first.spans, first.bytes);
        let mut more = 1;
        while more < BATCH {
            let Ok(next) = waiting.try_recv() else { break };
            batch.resource_spans.extend(next.export.resource_spans);
            spans += next.spans;
            bytes += next.bytes;
            more += 1;
        }
        // Out of the queue: room for more while this one is sent.
        counts.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
        // Credential-shaped strings are masked, as in a capture.
        let text = spans::to_json(&batch);
        drop(batch);
        let body = Bytes::from(loopdbg_formats::secrets::mask_shapes(&text).into_owned());
        drop(text);
        let sent = way.send(Method::POST, "/v1/traces", &headers, body);
        let ok = match tokio::time::timeout(EXPORT_TIMEOUT, sent).await {
            Ok(Ok(answer)) => answer.status().is_success(),
            Ok(Err(_)) | Err(_) => false,
        };
        let counter = match ok {
            true => &counts.sent,
            false => &counts.dropped,
        };
        counter.fetch_add(spans, Ordering::Relaxed);
        counts.waiting.fetch_sub(spans, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exchange of one Anthropic request whose prompt is `bytes` long.
    fn exchange(seq: u64, bytes: usize) -> Exchange {
        Exchange {
            loopdbg: loopdbg_read::capture::MARKER,
            seq,
            time: "2026-12-04T10:00:00Z".into(),
            method: "POST".into(),
            path: "/v1/messages".into(),
            provider: Some("anthropic"),
            request: serde_json::json!({
                "model": "claude-x", "max_tokens": 5,
                "messages": [{"role": "user", "content": "x".repeat(bytes)}]
            }),
            forwarded: None,
            action: crate::capture::Action::Forwarded,
            status: 200,
            streamed: false,
            response: serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}),
            latency_ms: 1.0,
            first_byte_ms: None,
            findings: Vec::new(),
            error: None,
        }
    }

    /// A collector that takes connections and never answers.
    async fn silent_collector() -> (tokio::net::TcpListener, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        (listener, url)
    }

    /// A collector that never answers holds no more than the queue's
    /// bytes, every export times out and is counted, and what was queued
    /// when the proxy ends is said.
    #[tokio::test(start_paused = true)]
    async fn a_collector_that_never_answers_costs_bounded_memory_and_counts_every_span() {
        let (listener, url) = silent_collector().await;
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        let (mut sink, counts) =
            Sink::start(&url, "test", &tokio::runtime::Handle::current()).unwrap();
        // 40 exchanges of 2 MB: 80 MB offered, the queue keeps 64 MiB.
        for seq in 1..=40 {
            sink.send(&exchange(seq, 2 << 20));
            assert!(counts.queued_bytes.load(Ordering::Relaxed) <= QUEUE_BYTES);
        }
        let dropped_at_once = counts.dropped.load(Ordering::Relaxed);
        assert!(dropped_at_once >= 8, "{counts}");
        let waiting = counts.waiting.load(Ordering::Relaxed);
        assert_eq!(dropped_at_once + waiting, 40, "{counts}");
        assert!(
            counts.to_string().contains("not sent when the proxy ended"),
            "{counts}"
        );
        // Each export gives up after the timeout: all of them are dropped.
        for _ in 0..waiting + 1 {
            tokio::time::sleep(EXPORT_TIMEOUT).await;
        }
        assert_eq!(counts.dropped.load(Ordering::Relaxed), 40, "{counts}");
        assert_eq!(counts.waiting.load(Ordering::Relaxed), 0);
        assert_eq!(counts.queued_bytes.load(Ordering::Relaxed), 0);
        held.abort();
    }
}
