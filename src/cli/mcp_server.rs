//! `loopdbg mcp-server`: `loopdbg_mcp_server` on standard input and output.

use std::process::ExitCode;

use super::Failure;

/// `loopdbg mcp-server`: the MCP server on standard input and output
/// until the client closes them, its file tools reaching `allow` too.
pub(super) fn serve(allow: &[std::path::PathBuf]) -> Result<ExitCode, Failure> {
    loopdbg_mcp_server::run_stdio(allow).map_err(|e| anyhow::anyhow!("the MCP server: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
