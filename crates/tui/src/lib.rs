//! The debugger's user interface as The Elm Architecture: [`app::App`] is
//! the state, [`action::Action`] the messages, [`update::update`] the pure
//! update and [`view`] the side-effect-free drawing. The terminal loop that
//! feeds it events lives in the binary.
//!
//! The TUI never decides loop semantics: every toggle re-runs
//! [`loopdbg_engine`] and shows the recorded trace.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod action;
pub mod app;
pub mod clipboard;
pub mod explain;
pub mod fork;
pub mod keymap;
pub mod live;
pub mod theme;
pub mod tour;
pub mod update;
pub mod view;

pub use action::Action;
pub use app::App;
pub use update::update;
