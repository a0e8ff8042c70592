//! loopdbg's pure loop engine: the session a user writes, the strategy it runs
//! under, the scripted stub model, local tool execution in virtual time, the
//! loop itself and the trace it records, with the pairing ledger read off
//! that trace.
//!
//! No I/O happens here: no terminal, no clock, no files, no randomness, no
//! runtime and no thread. The wire formats (`loopdbg-wire`), the lesson
//! material (`loopdbg-lesson`) and the debugger (`loopdbg-tui`) are crates
//! built on this one, and Cargo keeps it so: this crate depends on none of
//! them. [`diagnostics`] (where a problem sits in the input) lives here too,
//! since session parsing is its first user.
//!
//! Read it in this order: [`session`] (what a scenario says), [`strategy`]
//! (the knobs), [`agent_loop`] (the loop, one method per phase), [`trace`]
//! (what a run leaves behind) and [`ledger`] (which ids are paired).

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
//! let session = loopdbg_engine::Session::parse("inline.json", text).unwrap();
//! let trace = loopdbg_engine::run(&session, &loopdbg_engine::Strategy::for_session(&session));
//! assert_eq!(trace.outcome.requests, 2);
//! assert_eq!(trace.tool_runs(), ["get_weather"]);
//! assert_eq!(trace.outcome.final_text.as_deref(), Some("北京 18°C。"));
//! // Any step can be looked at, forwards or back.
//! let first_request = trace.history_at(0);
//! assert_eq!(first_request.len(), 1);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent_loop;
pub mod diagnostics;
pub mod executor;
pub mod fork;
pub mod ledger;
pub mod message;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod strategy;
pub mod stub;
pub mod trace;

pub use agent_loop::{count_unpaired, count_unpaired_from};
pub use agent_loop::{run, run_with};
pub use diagnostics::error::LoadError;
pub use session::Session;
pub use strategy::Strategy;
pub use trace::Trace;

/// Sessions shared by unit tests, here and in the crates built on this one
/// (the `fixtures` feature, a dev-dependency only).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use crate::session::Session;

    /// Seed 000's shape: two calls in round 1 (`toolu_w1` get_weather,
    /// `toolu_f1` get_fx_rate), then `answer`.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "a fixture: the session text is written just above"
    )]
    pub fn two_calls(answer: &str) -> Session {
        let text = format!(
            r#"{{
          "user": "weather and fx?",
          "tools": [
            {{"name": "get_weather", "table": [{{"args": {{"city": "北京"}}, "result": {{"temp_c": 18}}}}]}},
            {{"name": "get_fx_rate", "table": [{{"args": {{}}, "result": {{"rate": 7.12}}}}]}}],
          "model": {{"script": [
            {{"when": {{"round": 1}}, "reply": {{"tool_calls": [
              {{"id": "toolu_w1", "name": "get_weather", "args": {{"city": "北京"}}}},
              {{"id": "toolu_f1", "name": "get_fx_rate", "args": {{}}}}]}}}},
            {{"reply": {{"text": {answer:?}}}}}]}}
        }}"#
        );
        Session::parse("fx.json", &text).unwrap()
    }
}
