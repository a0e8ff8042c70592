//! loopdbg: a step debugger for LLM agent tool-call loops.
//!
//! The library is layered; each module uses only the ones before it:
//!
//! - [`diagnostics`]: where a problem sits in the input (`file:line:column`).
//! - [`engine`]: the pure loop: sessions, the stub model, local tools,
//!   strategies, the phases of the loop, the recorded trace and the pairing
//!   ledger.
//! - [`wire`]: provider formats, readers of captured conversations, the
//!   checker, the fixer and replay.
//! - [`live`]: live traffic: the proxy's gate, streamed answers reassembled,
//!   capture records, and recorded conversations turned into sessions.
//! - [`lesson`]: what a run teaches (walkthrough, checks, lint, reports).
//! - [`handout`]: a run written out for someone else (Markdown, HTML, JSON).
//! - [`tui`]: the debugger's state, update and view.
//!
//! None of it does I/O. The `loopdbg` binary (CLI and terminal) is a thin
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
//! use loopdbg::wire::read::{detect, read};
//! let doc = serde_json::json!({"messages": [
//!   {"role": "user", "content": "weather and fx?"},
//!   {"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}},
//!     {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
//!   {"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]}
//! ]});
//! let conversation = read(&doc, detect(&doc).unwrap()).unwrap();
//! let findings = loopdbg::wire::check::check(&conversation);
//! assert_eq!(findings[0].kind, "unanswered_call");
//! assert_eq!(findings[0].ids, ["toolu_f1"]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod diagnostics;
pub mod engine;
pub mod handout;
pub mod lesson;
pub mod live;
pub mod tui;
pub mod wire;

pub use diagnostics::error::LoadError;
pub use engine::run;
pub use engine::session::Session;
pub use engine::strategy::Strategy;
pub use engine::trace::Trace;
