//! `loopdbg demo`: the fake provider and the buggy agent of
//! `loopdbg-demo`, with the proxy between them shown as `loopdbg proxy`
//! shows it; then where the capture is and what to try on it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::proxy::{append, open_capture, proxy, runtime};
use super::{Failure, args::DemoArgs};

/// `loopdbg demo`.
pub(super) fn demo(args: DemoArgs) -> Result<ExitCode, Failure> {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let headless = args.no_tui || !terminal;
    let path = match args.capture {
        Some(path) => path,
        None => free_capture()?,
    };
    // Slow enough in the debugger to watch each phase arrive.
    let pace = Duration::from_millis(args.pace_ms.unwrap_or(if headless { 0 } else { 800 }));
    // The provider runs on a runtime of its own, for as long as the demo.
    let provider_runtime = runtime()?;
    let code = if headless {
        let mut capture = open_capture(Some(&path), false)?;
        let (exchanges, run) = provider_runtime.block_on(loopdbg_demo::headless(pace))?;
        let mut out = std::io::stdout().lock();
        for x in &exchanges {
            append(&mut capture, x);
            // A closed standard output is not worth a panic.
            let _ = writeln!(out, "{}", loopdbg_proxy::summary_line(x));
        }
        run.lines.iter().for_each(|l| say!("{l}"));
        ExitCode::SUCCESS
    } else {
        let provider = provider_runtime
            .block_on(loopdbg_demo::start_provider())
            .map_err(|e| anyhow::anyhow!("starting the demo's provider on 127.0.0.1: {e}"))?;
        let upstream = loopdbg_proxy::parse_upstream(&provider.url).map_err(anyhow::Error::msg)?;
        let listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let config = loopdbg_proxy::Config::new(upstream, listen);
        let (start_agent, report) = loopdbg_demo::agent(pace);
        let code = proxy(config, Some(&path), None, false, false, start_agent)?;
        report.lines().iter().for_each(|l| say!("{l}"));
        code
    };
    provider_runtime.shutdown_background();
    for line in loopdbg_demo::next_steps(&path.display().to_string()) {
        say!("{line}");
    }
    Ok(code)
}

/// `loopdbg-demo.jsonl` in this folder, or the first of
/// `loopdbg-demo-2.jsonl`, `-3`… not taken, created empty (the files
/// module's own numbering, race-free): a second demo never appends to
/// (or writes over) the first one's capture.
fn free_capture() -> Result<PathBuf, Failure> {
    loopdbg_io::files::write_unique("loopdbg-demo.jsonl", "")
        .map_err(|e| anyhow::anyhow!("creating the demo's capture in this folder: {e}"))
}
