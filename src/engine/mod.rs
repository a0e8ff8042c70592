//! The pure loop engine: the session a user writes, the strategy it runs
//! under, the scripted stub model, local tool execution in virtual time, the
//! loop itself and the trace it records, with the pairing ledger read off
//! that trace.
//!
//! No I/O happens here: no terminal, no clock, no files, no randomness. The
//! wire formats, the lesson material and the debugger are built on top of
//! this module and never the reverse.
//!
//! Read it in this order: [`session`] (what a scenario says), [`strategy`]
//! (the knobs), [`agent_loop`] (the loop, one method per phase), [`trace`]
//! (what a run leaves behind) and [`ledger`] (which ids are paired).

pub mod agent_loop;
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

pub(crate) use agent_loop::count_unpaired;
pub use agent_loop::{run, run_with};

/// Sessions shared by the library's unit tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::engine::session::Session;

    /// Seed 000's shape: two calls in round 1 (`toolu_w1` get_weather,
    /// `toolu_f1` get_fx_rate), then `answer`.
    pub(crate) fn two_calls(answer: &str) -> Session {
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
