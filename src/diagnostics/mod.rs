//! Locating problems in input text: byte offsets of JSON values and the
//! errors that carry `file:line:column`. Shared by the session parser, the
//! lint and the wire readers; depends on nothing else in the crate.

pub mod error;
pub mod json_span;
