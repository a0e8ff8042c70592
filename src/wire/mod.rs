//! The wire formats: what providers receive and what other tools record.
//!
//! - [`provider`] renders the engine's history as each provider's request
//!   (Anthropic Messages, OpenAI Chat, OpenAI Responses).
//! - [`read`] turns files people have on disk (request bodies, JSON Lines,
//!   agent logs) into [`read::Conversation`]s, one reader per format.
//! - [`check`] applies each provider's pairing rules to a conversation, in
//!   the provider's own words; [`fix`] repairs the provider JSON in place.
//! - [`replay`] turns a conversation into a [`crate::engine::trace::Trace`]
//!   so the debugger can step it.
//!
//! Pure: values in, values out. Reading files is the binary's job.

pub mod check;
pub mod fix;
pub mod provider;
pub mod read;
pub mod replay;
