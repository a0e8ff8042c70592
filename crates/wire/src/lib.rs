//! The wire formats: what providers receive and what other tools record.
//!
//! - [`provider`] renders the engine's history as each provider's request
//!   (Anthropic Messages, OpenAI Chat, OpenAI Responses).
//! - [`read`] turns files people have on disk (request bodies, JSON Lines,
//!   agent logs) into [`read::Conversation`]s, one reader per format.
//! - [`check`] applies each provider's pairing rules to a conversation, in
//!   the provider's own words; [`fix`] repairs the provider JSON in place.
//! - [`replay`] turns a conversation into a [`loopdbg_engine::trace::Trace`]
//!   so the debugger can step it.
//!
//! Live traffic's pure half lives here too, shared by the proxy, `--follow`
//! and `record`: [`route`] (which provider a request is for), [`stream`]
//! (server-sent events reassembled into the message they carried),
//! [`capture`] (the capture file's records) and [`record`] (a captured
//! conversation turned into a stub session). [`threads`] groups the
//! requests of a capture into the conversations they grow.
//!
//! Pure: values in, values out. Reading files is the binary's job.
//!
//! Check a captured conversation the way a provider would:
//!
//! ```
//! use loopdbg_wire::read::{detect, read};
//! let doc = serde_json::json!({"messages": [
//!   {"role": "user", "content": "weather and fx?"},
//!   {"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}},
//!     {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
//!   {"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]}
//! ]});
//! let conversation = read(&doc, detect(&doc).unwrap()).unwrap();
//! let findings = loopdbg_wire::check::check(&conversation);
//! assert_eq!(findings[0].kind, "unanswered_call");
//! assert_eq!(findings[0].ids, ["toolu_f1"]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod chain;
pub mod check;
pub mod doctor;
pub mod finding;
pub mod fix;
pub mod gate;
pub mod mcp;
pub mod prices;
pub mod provider;
pub mod read;
pub mod record;
pub mod replay;
pub mod route;
pub mod secrets;
pub mod spans;
pub mod stream;
pub mod threads;
pub mod usage;
