//! loopdbg: a step debugger for LLM agent tool-call loops.
//!
//! The library is the pure engine: sessions, the stub model, local tools,
//! strategies, the phase state machine, the pairing ledger and the recorded
//! trace. It does no I/O. The `loopdbg` binary (CLI and TUI) is a thin
//! adapter around it. See `ARCHITECTURE.md` for the map.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod checks;
pub mod engine;
pub mod error;
pub mod executor;
pub mod fix;
pub mod json_span;
pub mod ledger;
pub mod lint;
pub mod message;
pub mod provider;
pub mod replay;
pub mod report;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod strategy;
pub mod stub;
pub mod trace;
pub mod transcript;
pub mod tui;
pub mod walkthrough;

pub use engine::run;
pub use error::LoadError;
pub use session::Session;
pub use strategy::Strategy;
pub use trace::Trace;
