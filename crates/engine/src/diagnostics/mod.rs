//! Locating problems in input text (byte offsets of JSON values, errors
//! that carry `file:line:column` with a short snippet) and making input text
//! inert for a terminal. Shared by the session parser, the
//! lint and the wire readers; depends on nothing else in the crate.

pub mod error;
pub mod inert;
pub mod inert_json;
pub mod json_span;
