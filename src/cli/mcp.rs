//! `loopdbg mcp`: the tap on a stdio MCP server (`loopdbg_proxy::mcp`),
//! writing its records to the capture as they come.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use super::Failure;

/// Starts the server under the tap and records to `capture`; exits with
/// the server's code (1 when a signal ended it).
pub(super) fn tap(capture: &Path, force: bool, command: &[String]) -> Result<ExitCode, Failure> {
    if !force {
        super::live::refuse_unless_capture(
            capture,
            loopdbg_wire::mcp::is_record,
            "an MCP capture record",
        )
        .map_err(|e| super::bad_flag(format!("--capture {e:#}")))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(capture)
        .with_context(|| format!("opening the capture {}", capture.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the tap")?;
    // Each record is written and flushed on its own: a capture is whole up
    // to the last message, however the session ends. A capture that cannot
    // be written is said once; the relay goes on, as the agent needs it.
    let mut failed = false;
    let status = runtime
        .block_on(loopdbg_proxy::mcp::relay_stdio(command, |record| {
            let written = file
                .write_all(record.to_line().as_bytes())
                .and_then(|()| file.flush());
            if let Err(e) = written
                && !std::mem::replace(&mut failed, true)
            {
                eprintln!("loopdbg mcp: writing {}: {e}", capture.display());
            }
        }))
        .map_err(|e| super::bad_flag(format!("starting {}: {e}", command[0])))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
