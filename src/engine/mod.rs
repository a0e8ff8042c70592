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
