//! The debugger's terminal runtime, between the pure TUI (`loopdbg-tui`:
//! state, update, view) and the binary (arguments and exit codes): raw
//! mode and the alternate screen, the event loop that turns terminal
//! events, live updates and signals into actions, the outside editor, the
//! clipboard, the tour's saved progress, and the removal of half-written
//! files when a signal ends the process.
//!
//! Nothing here decides what the debugger shows; everything here touches
//! the terminal, the process's signals or the user's files.

pub mod on_signal;
mod run;
pub mod signals;

pub use run::{load_tour, run, run_live, run_live_recycling, theme, tour_file};
