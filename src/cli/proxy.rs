//! `loopdbg proxy`: the proxy started, its capture, and the exchanges
//! shown in the live debugger or printed one line each (`--no-tui`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use loopdbg_proxy::capture::Exchange;
use loopdbg_proxy::capture_file::CaptureFile;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::{Failure, bad_flag};

/// `loopdbg proxy`.
pub(super) fn command(args: super::args::ProxyArgs) -> Result<ExitCode, Failure> {
    let upstream = loopdbg_proxy::parse_upstream(&args.upstream)
        .map_err(|e| bad_flag(format!("--upstream {e}")))?;
    let config = loopdbg_proxy::Config {
        on_invalid: args.on_invalid,
        on_unjudged: args.on_unjudged,
        histories_budget: args.history_memory << 20,
        ..loopdbg_proxy::Config::new(upstream, args.listen)
    };
    proxy(
        config,
        args.capture.as_deref(),
        #[cfg(feature = "otlp")]
        args.otlp.as_deref(),
        #[cfg(not(feature = "otlp"))]
        None,
        args.force,
        args.no_tui,
        |_, _| {},
    )
}

/// The proxy's runtime: two workers, I/O and timers.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    Ok(runtime)
}

/// The capture named by `--capture`, when one is: refused when it is
/// something else than a capture, unless `force`.
pub(super) fn open_capture(path: Option<&Path>, force: bool) -> Result<CaptureFile, Failure> {
    if let Some(p) = path
        && !force
    {
        loopdbg_corpus::appendable_capture(
            p,
            loopdbg_read::capture::is_exchange,
            "a loopdbg exchange",
        )
        .map_err(|e| bad_flag(format!("--capture {e}")))?;
    }
    CaptureFile::open(path).map_err(|e| bad_flag(format!("--capture: {e}")))
}

/// Appends `x` to the capture, saying (not stopping for) a failed write.
pub(super) fn append(capture: &mut CaptureFile, x: &Exchange) {
    if let Err(e) = capture.append(x) {
        say!("loopdbg proxy: {e}");
    }
}

/// `proxy --no-tui`: one line per exchange until the upstream channel
/// closes or a shutdown signal comes; the process then ends with the
/// signal's status.
fn print_lines(
    runtime: tokio::runtime::Runtime,
    running: loopdbg_proxy::Running,
    mut capture: CaptureFile,
    mut signals: loopdbg_term::signals::Signals,
) -> ExitCode {
    let mut out = std::io::stdout();
    let bodies = capture.bodies();
    let print = |x: &Exchange| {
        append(&mut capture, x);
        writeln!(out, "{}", loopdbg_proxy::summary_line(x))
            .and_then(|()| out.flush())
            .is_ok()
    };
    let say = |what: &str| say!("loopdbg proxy: {what}");
    let mut number = 0;
    let signal = async {
        let s = signals.next().await;
        number = s.number;
        s.name
    };
    match loopdbg_proxy::shutdown::relay_until_signal(runtime, running, bodies, signal, print, say)
    {
        // The conventional status of a process ended by that signal.
        Some(_) => ExitCode::from(128 + number),
        None => ExitCode::SUCCESS,
    }
}

/// `loopdbg proxy`; `started` is told where it listens before anything is
/// shown (the demo starts its agent there).
#[allow(clippy::too_many_arguments)]
pub(super) fn proxy(
    config: loopdbg_proxy::Config,
    capture_path: Option<&Path>,
    otlp: Option<&str>,
    force: bool,
    no_tui: bool,
    started: impl FnOnce(&tokio::runtime::Handle, std::net::SocketAddr),
) -> Result<ExitCode, Failure> {
    if !config.listen.ip().is_loopback() {
        say!(
            "loopdbg proxy: warning: listening on {}, not loopback: anyone who can reach it can spend your API key's tokens through it",
            config.listen
        );
    }
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if !no_tui && !terminal {
        return Err(anyhow::anyhow!(
            "the debugger needs a terminal; add --no-tui for one line per exchange"
        ));
    }
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut capture = open_capture(capture_path, force)?;
    let runtime = runtime()?;
    // Listening for the shutdown signals before the first connection is
    // taken: a signal that comes while an exchange is in flight is always
    // caught, however soon.
    let signals = no_tui.then(|| {
        let _inside = runtime.enter();
        loopdbg_term::signals::Signals::listen()
    });
    let running = runtime
        .block_on(loopdbg_proxy::start(&config))
        .map_err(|e| match e.downcast::<loopdbg_proxy::ForwardsToItself>() {
            Ok(own) => super::bad_flag(own.to_string()),
            Err(e) => e,
        })?;
    let addr = running.addr.to_string();
    #[cfg(feature = "otlp")]
    let otlp_counts = match otlp {
        Some(url) => {
            let seed = format!("loopdbg proxy {addr} {:?}", std::time::SystemTime::now());
            let (sink, counts) = loopdbg_proxy::otlp::Sink::start(url, &seed, runtime.handle())
                .map_err(|e| bad_flag(format!("--otlp: {e}")))?;
            capture.otlp = Some(sink);
            Some(counts)
        }
        None => None,
    };
    say!("{}", config.banner(&addr, capture_path, otlp));
    started(runtime.handle(), running.addr);
    if let Some(signals) = signals {
        let code = print_lines(runtime, running, capture, signals);
        #[cfg(feature = "otlp")]
        if let Some(counts) = otlp_counts {
            say!("loopdbg proxy: {counts}");
        }
        return Ok(code);
    }
    let (updates, feed) = mpsc::unbounded_channel();
    let at = addr.clone();
    loopdbg_proxy::live::watch(runtime.handle(), running, capture, move |told| {
        use loopdbg_proxy::live::Told;
        let event = match told {
            Told::InFlight {
                count,
                newest,
                first,
            } => {
                // Before the first exchange has ended, a long stream
                // replaces "no traffic yet" too.
                if let (true, Some((seq, what))) = (first && count > 0, &newest) {
                    let update = LiveUpdate::first_in_flight(*seq, what, &at);
                    let _ = updates.send(LiveEvent::Update(Box::new(update)));
                }
                LiveEvent::InFlight(loopdbg_tui::live::in_flight_words(count, newest.as_ref()))
            }
            Told::Shown(s) => {
                let mut update = LiveUpdate::of(&s.conversation, &s.findings, &s.title, s.alarm);
                // Summed here, not on the screen's event loop.
                update.derive(super::prices::prices());
                LiveEvent::Update(Box::new(update))
            }
            Told::CaptureFailed(e) => {
                say!("loopdbg proxy: {e}");
                return true;
            }
        };
        updates.send(event).is_ok()
    });
    let app = App::live(
        format!("proxy {addr}"),
        format!("proxy {addr}"),
        LiveUpdate::no_traffic_yet(&addr),
        loopdbg_term::theme(),
    );
    let code = super::show_live(app, feed)?;
    runtime.shutdown_background();
    Ok(code)
}
