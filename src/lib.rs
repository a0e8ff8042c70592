//! loopdbg: a step debugger for LLM agent tool-call loops.
//!
//! The library is the pure engine: sessions, the stub model, local tools,
//! strategies, the phase state machine, the pairing ledger and the recorded
//! trace. It does no I/O. The `loopdbg` binary (CLI and TUI) is a thin
//! adapter around it. See `ARCHITECTURE.md` for the map.
//!
//! Run a session and read the recorded trace:
//!
//! ```
//! let text = r#"{
//!   "user": "北京今天天气怎么样？",
//!   "tools": [{"name": "get_weather",
//!              "table": [{"args": {"city": "北京"}, "result": {"temp_c": 18}}]}],
//!   "model": {"script": [
//!     {"when": {"round": 1}, "reply": {"tool_calls": [
//!       {"id": "call_1", "name": "get_weather", "args": {"city": "北京"}}]}},
//!     {"reply": {"text": "北京 18°C。"}}
//!   ]}
//! }"#;
//! let session = loopdbg::Session::parse("inline.json", text).unwrap();
//! let trace = loopdbg::run(&session, &loopdbg::Strategy::for_session(&session));
//! assert_eq!(trace.outcome.requests, 2);
//! assert_eq!(trace.tool_runs(), ["get_weather"]);
//! assert_eq!(trace.outcome.final_text.as_deref(), Some("北京 18°C。"));
//! // Any step can be looked at, forwards or back.
//! let first_request = trace.history_at(0);
//! assert_eq!(first_request.len(), 1);
//! ```
//!
//! Check a captured conversation the way a provider would:
//!
//! ```
//! use loopdbg::transcript::{detect, read};
//! let doc = serde_json::json!({"messages": [
//!   {"role": "user", "content": "weather and fx?"},
//!   {"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}},
//!     {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
//!   {"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]}
//! ]});
//! let conversation = read(&doc, detect(&doc).unwrap()).unwrap();
//! let findings = loopdbg::check::check(&conversation);
//! assert_eq!(findings[0].kind, "unanswered_call");
//! assert_eq!(findings[0].ids, ["toolu_f1"]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod checks;
pub mod engine;
pub mod error;
pub mod executor;
pub mod fix;
pub mod json_span;
pub mod ledger;
pub mod lint;
pub mod message;
pub mod provider;
pub mod replay;
pub mod report;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod strategy;
pub mod stub;
pub mod trace;
pub mod transcript;
pub mod tui;
pub mod walkthrough;

pub use engine::run;
pub use error::LoadError;
pub use session::Session;
pub use strategy::Strategy;
pub use trace::Trace;
