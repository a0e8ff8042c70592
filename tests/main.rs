//! The integration tests, one binary: the real `loopdbg` binary driven
//! from outside (`assert_cmd`, a pseudo-terminal), the crates' public API
//! at the level a user meets it, and the end-to-end runs with real agents,
//! SDK clients, a browser and the Python package (ignored by default:
//! `cargo test -- --include-ignored` runs them; `.ci/run` installs what
//! they need, and under `CI=true` a missing one fails).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

mod common;

mod action;
mod agents;
mod bundle;
mod check;
mod check_inputs;
mod cli;
mod clients;
mod demo;
mod docs;
mod doctor;
mod export;
mod fake_agrees;
mod faults;
mod findings_golden;
mod hostile;
mod layers;
mod litellm;
mod mcp;
mod otlp;
mod plain_path;
mod preview;
mod proxy;
mod python;
mod real_files;
mod release;
mod replay;
mod schema;
mod seed_tables;
mod tokens;
mod tui_pty;
mod tui_render;
mod tui_update;
