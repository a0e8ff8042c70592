//! A captured conversation turned into what the rest of loopdbg takes.
//!
//! - [`replay`]: a conversation as a [`Trace`](loopdbg_engine::Trace) the
//!   debugger steps, its findings at the step they arise;
//! - [`record`]: a conversation as a stub session that runs its loop
//!   again (recorded replies by round, recorded results as tables);
//! - [`spans`]: runs, replays and proxied exchanges as OTLP spans in the
//!   GenAI conventions.
//!
//! Pure: values in, values out.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod record;
pub mod replay;
#[cfg(feature = "otlp")]
pub mod spans;
