//! `proxy --otlp URL`: each completed exchange as an OTLP span, sent over
//! OTLP/HTTP (JSON, `POST URL/v1/traces`) to a collector, off the relay's
//! path. Spans go into a bounded queue on the consumer's side, after the
//! agent has its answer; one task sends whatever has queued up as one
//! request (so spans batch when they come fast); a full queue or a
//! collector that is down or refuses costs a counted drop, never a wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// What the sink has done so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Spans the collector took (a 2xx).
    pub sent: AtomicU64,
    /// Spans dropped: the queue was full, or the collector was down or
    /// refused them.
    pub dropped: AtomicU64,
}

/// What `--otlp` did, as the proxy says when it ends.
impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::sync::atomic::Ordering;
        write!(
            f,
            "otlp: {} span(s) sent, {} dropped (queue full, or the collector down or refusing)",
            self.sent.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed)
        )
    }
}

/// The sending side, held by whoever consumes the exchanges.
pub struct Sink {
    queue: mpsc::Sender<ExportTraceServiceRequest>,
    builder: TraceBuilder,
    counts: Arc<Counts>,
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
        let n = self.builder.len() as u64;
        // No root span: a live trace's spans are each their own root.
        let export = self.builder.export("", false);
        if self.queue.try_send(export).is_err() {
            self.counts.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }
}

fn spans_in(export: &ExportTraceServiceRequest) -> u64 {
    export
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len() as u64)
        .sum()
}

/// Sends what has queued up, one request at a time, until the sink is
/// dropped.
async fn send_all(
    way: Upstream,
    mut waiting: mpsc::Receiver<ExportTraceServiceRequest>,
    counts: Arc<Counts>,
) {
    let mut headers = HeaderMap::new();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    while let Some(mut batch) = waiting.recv().await {
        let mut more = 1;
        while more < BATCH {
            let Ok(next) = waiting.try_recv() else { break };
            batch.resource_spans.extend(next.resource_spans);
            more += 1;
        }
        let n = spans_in(&batch);
        // Credential-shaped strings are masked, as in a capture.
        let text = spans::to_json(&batch);
        let body = Bytes::from(loopdbg_formats::secrets::mask_shapes(&text).into_owned());
        let ok = match way.send(Method::POST, "/v1/traces", &headers, body).await {
            Ok(answer) => answer.status().is_success(),
            Err(_) => false,
        };
        let counter = match ok {
            true => &counts.sent,
            false => &counts.dropped,
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }
}
