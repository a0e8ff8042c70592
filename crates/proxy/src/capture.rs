//! The capture record the proxy writes for each exchange: the request as
//! the agent sent it, what the proxy did with it, the answer, and the
//! checker's findings. Readers know it by its marker
//! ([`loopdbg_read::capture::MARKER`]); `loopdbg_read::capture` reads it.

use serde::Serialize;
use serde_json::Value;

use loopdbg_judge::check::Finding;

/// What the proxy did with one request (`"forwarded"` … in the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Sent on as the agent sent it.
    Forwarded,
    /// Repaired (`--on-invalid repair=…`), and the repair sent on.
    Repaired,
    /// Answered locally with the provider's own 400; nothing was sent.
    Blocked,
    /// The upstream could not be reached, or broke off mid-answer.
    Failed,
}

/// One request and its answer, as the capture file stores it. Headers are
/// never kept, so no credential can reach the file.
#[derive(Debug, Clone, Serialize)]
pub struct Exchange {
    /// Always [`loopdbg_read::capture::MARKER`]: how readers know a capture line.
    pub loopdbg: &'static str,
    /// 1-based, in the order requests arrived.
    pub seq: u64,
    /// When the request arrived (RFC 3339, UTC), as the adapter read its clock.
    pub time: String,
    /// The HTTP method.
    pub method: String,
    /// The path and query, credentials removed.
    pub path: String,
    /// The provider, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<&'static str>,
    /// The request body as the agent sent it (JSON, or text when not JSON).
    pub request: Value,
    /// The body the upstream received when the proxy repaired it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<Value>,
    /// What the proxy did with the request.
    pub action: Action,
    /// The status the agent received.
    pub status: u16,
    /// True when the answer was streamed (server-sent events).
    pub streamed: bool,
    /// The answer: JSON, a streamed answer reassembled into the message it
    /// carried, or text.
    pub response: Value,
    /// Milliseconds from the request's arrival to the answer's last byte.
    pub latency_ms: f64,
    /// Milliseconds to the answer's first byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<f64>,
    /// The checker's findings on `request`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// What went wrong on the way, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
