//! What a provider would refuse, in its own words, and the repairs.
//!
//! - [`check`]: each provider's pairing rules over a
//!   [`Conversation`](loopdbg_read::Conversation), and the checks no
//!   server makes (names, arguments, truncated turns, spins);
//! - [`fix`]: repairs in the provider's own JSON (synthesize or strip);
//! - [`doctor`]: the smallest repair of an agent's session store, line by
//!   line in its own format;
//! - [`gate`]: the proxy's and the Python guard's decision on a request
//!   (forward, repair, block);
//! - [`chain`]: the calls of stored Responses answers, for requests that
//!   continue one;
//! - [`mcp`]: what went wrong between an agent and an MCP server, and the
//!   model's calls matched to the MCP calls that ran them.
//!
//! Pure: values in, findings and repairs out.
//!
//! ```
//! use loopdbg_read::{detect, read};
//! let doc = serde_json::json!({"messages": [
//!   {"role": "user", "content": "weather and fx?"},
//!   {"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}},
//!     {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
//!   {"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]}
//! ]});
//! let conversation = read(&doc, detect(&doc).unwrap()).unwrap();
//! let findings = loopdbg_judge::check::check(&conversation);
//! assert_eq!(findings[0].kind, loopdbg_read::finding::Kind::UnansweredCall);
//! assert_eq!(findings[0].ids, ["toolu_f1"]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chain;
pub mod check;
pub mod doctor;
pub mod fix;
pub mod gate;
pub mod mcp;
