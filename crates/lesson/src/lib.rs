//! What a run teaches, derived from its trace: seed 003's walkthrough of the
//! two trips, the checks a careless loop never makes (spins, unquoted
//! numbers, requests a provider would reject), the session lint, and the
//! headless reports of `loopdbg run` and `loopdbg compare`.
//!
//! Built on [`loopdbg_engine`]; pure like it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checks;
pub mod code;
pub mod diff;
pub mod lint;
pub mod report;
pub mod tour;
pub mod walkthrough;
