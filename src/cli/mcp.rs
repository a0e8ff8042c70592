//! `loopdbg mcp`: the tap on a stdio MCP server (`loopdbg_proxy::mcp`),
//! writing its records to the capture as they come.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use loopdbg_read::mcp::Record;

use super::Failure;

/// The capture, opened for appending (refused when it is something else,
/// unless `force`), and a writer of records that says a failed write once.
fn open_capture(capture: &Path, force: bool) -> Result<impl FnMut(Record), Failure> {
    if !force {
        loopdbg_corpus::appendable_capture(
            capture,
            loopdbg_read::mcp::is_record,
            "an MCP capture record",
        )
        .map_err(|e| super::bad_flag(format!("--capture {e}")))?;
    }
    let mut file = loopdbg_proxy::capture_file::CaptureFile::open(Some(capture))?;
    // Each record is written and flushed on its own: a capture is whole up
    // to the last message, however the session ends. A capture that cannot
    // be written is said once; the relay goes on, as the agent needs it.
    let mut failed = false;
    Ok(move |record: Record| {
        if let Err(e) = file.append_line(record.to_line().as_bytes())
            && !std::mem::replace(&mut failed, true)
        {
            eprintln!("loopdbg mcp: {e}");
        }
    })
}

/// Starts the server under the tap and records to `capture`; exits with
/// the server's code (1 when a signal ended it).
pub(super) fn tap(capture: &Path, force: bool, command: &[String]) -> Result<ExitCode, Failure> {
    let write = open_capture(capture, force)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the tap")?;
    let status = runtime.block_on(loopdbg_proxy::mcp::relay_stdio(command, write));
    // The agent's side is read on a blocking thread that may wait on an
    // input still open; dropping the runtime would wait for it, and the
    // agent for the tap, after the server had exited.
    runtime.shutdown_background();
    let status = status.map_err(|e| super::bad_flag(format!("starting {}: {e}", command[0])))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// Listens on `listen`, forwards to the Streamable HTTP server at `url`
/// and records both sides to `capture` until interrupted.
pub(super) fn http_tap(
    capture: &Path,
    force: bool,
    url: &str,
    listen: std::net::SocketAddr,
) -> Result<ExitCode, Failure> {
    let upstream = loopdbg_proxy::parse_upstream(url)
        .map_err(|e| super::bad_flag(format!("--upstream {url}: {e}")))?;
    let mut write = open_capture(capture, force)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tap")?;
    let served = runtime.block_on(loopdbg_proxy::mcp_http::record_until_interrupted(
        &upstream,
        listen,
        &mut write,
        |addr| {
            eprintln!(
                "loopdbg mcp: listening on http://{addr} → {} · capture {}",
                loopdbg_formats::route::redacted_url(url),
                capture.display()
            )
        },
    ));
    served.map_err(|e| super::bad_flag(format!("--listen {listen}: {e:#}")))?;
    Ok(ExitCode::SUCCESS)
}
