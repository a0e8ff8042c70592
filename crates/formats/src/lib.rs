//! The providers' wire formats, as they are on the wire: what each
//! provider receives and sends, before anything is judged.
//!
//! - [`provider`]: the engine's history rendered as each provider's
//!   request (Anthropic Messages, OpenAI Chat, OpenAI Responses, Gemini,
//!   Bedrock Converse), and how a reply joins the next request;
//! - [`route`]: which provider a request path names, the model in it,
//!   the path with credential parameters cut;
//! - [`stream`]: server-sent events (and AWS event streams) reassembled
//!   into the message they carried;
//! - [`usage`] and [`prices`]: tokens as each provider reports them, and
//!   a trace's tokens summed and priced;
//! - [`secrets`]: credential shapes, masked wherever loopdbg writes.
//!
//! Pure: values in, values out.
//!
//! Render a one-message history as an Anthropic request:
//!
//! ```
//! use loopdbg_engine::message::{Block, Message, Role};
//! use loopdbg_formats::provider::{Format, render};
//! let history = [Message {
//!     role: Role::User,
//!     content: vec![Block::Text { text: "weather?".into() }],
//!     finish_reason: None,
//! }];
//! let items = render(Format::Anthropic, &history);
//! assert_eq!(items[0].json["role"], "user");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod edit;
pub mod prices;
pub mod provider;
pub mod redact;
pub mod route;
pub mod secrets;
pub mod stream;
pub mod usage;
