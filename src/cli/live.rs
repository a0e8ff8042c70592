//! Live traffic adapters: `proxy` (serve, record, print or show),
//! `--follow` (a file that is still being written) and `record` (a capture
//! becomes a session). Files, sockets, threads and the clock are here; the
//! library decides what the traffic means.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use loopdbg_corpus::follow::Followed;
use loopdbg_proxy::capture::Exchange;
use loopdbg_proxy::capture_file::CaptureFile;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::{Failure, bad_flag, terminal};

/// What `--otlp` did, said when the proxy ends.
fn say_otlp_counts(counts: &loopdbg_proxy::otlp::Counts) {
    use std::sync::atomic::Ordering;
    say!(
        "loopdbg proxy: otlp: {} span(s) sent, {} dropped (queue full, or the collector down or refusing)",
        counts.sent.load(Ordering::Relaxed),
        counts.dropped.load(Ordering::Relaxed)
    );
}

/// The capture named by `--capture`, when one is: refused when it is
/// something else than a capture, unless `force`.
fn open_capture(path: Option<&Path>, force: bool) -> Result<CaptureFile, Failure> {
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
fn append(capture: &mut CaptureFile, x: &Exchange) {
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
    mut signals: super::signals::Signals,
) -> ExitCode {
    let mut out = std::io::stdout();
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
    match loopdbg_proxy::shutdown::relay_until_signal(runtime, running, signal, print, say) {
        // The conventional status of a process ended by that signal.
        Some(_) => ExitCode::from(128 + number),
        None => ExitCode::SUCCESS,
    }
}

/// `loopdbg proxy`.
pub(super) fn proxy(
    config: loopdbg_proxy::Config,
    capture_path: Option<&Path>,
    otlp: Option<&str>,
    force: bool,
    no_tui: bool,
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
    let mut capture = open_capture(capture_path, force)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    // Listening for the shutdown signals before the first connection is
    // taken: a signal that comes while an exchange is in flight is always
    // caught, however soon.
    let signals = no_tui.then(|| {
        let _inside = runtime.enter();
        super::signals::Signals::listen()
    });
    let running = runtime.block_on(loopdbg_proxy::start(&config))?;
    let addr = running.addr.to_string();
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
    if let Some(signals) = signals {
        let code = print_lines(runtime, running, capture, signals);
        if let Some(counts) = otlp_counts {
            say_otlp_counts(&counts);
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
            Told::Shown(s) => LiveEvent::Update(Box::new(LiveUpdate::of(
                &s.conversation,
                &s.findings,
                &s.title,
                s.alarm,
            ))),
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
        terminal::theme(),
    );
    terminal::run_live(app, feed)?;
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}

/// The picture of a followed file after a change: `all` is every complete
/// line so far, those from byte `from` on new (`None`: all of it), and
/// conversation `which` (default: the newest) is replayed.
fn update_of_file(
    followed: &mut Followed,
    all: &[u8],
    from: Option<usize>,
    which: Option<usize>,
) -> Result<LiveUpdate, loopdbg_engine::LoadError> {
    let Some(picked) = followed.take(all, from, which)? else {
        return match followed.take_error() {
            Some(e) => Err(e),
            None => Ok(LiveUpdate::no_conversation_yet(followed.origin())),
        };
    };
    let alarm = followed.alarm(&picked);
    let title = format!(
        "follow: conversation {} of {}",
        picked.place.thread + 1,
        picked.place.count
    );
    Ok(LiveUpdate::of(
        &picked.conversation,
        &picked.findings,
        &title,
        alarm,
    ))
}

/// The file's bytes up to its last newline: a half-written last line waits
/// for its end.
fn complete_lines(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(end);
    Ok(bytes)
}

/// `loopdbg FILE --follow`.
pub(super) fn follow(path: &Path, which: Option<usize>) -> Result<ExitCode, Failure> {
    let origin = path.display().to_string();
    let mut followed = Followed::new(&origin);
    // The natural order is follower, then proxy or agent: a file that does
    // not exist yet, or holds no complete line yet, is waited for.
    let (bytes, first) = match complete_lines(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (Vec::new(), LiveUpdate::no_file_yet(&origin))
        }
        Err(e) => {
            return Err(Failure::from(loopdbg_engine::LoadError::Unreadable {
                origin,
                reason: e.to_string(),
            }));
        }
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            (bytes, LiveUpdate::no_conversation_yet(&origin))
        }
        Ok(bytes) => {
            let first = update_of_file(&mut followed, &bytes, None, which)?;
            (bytes, first)
        }
    };
    let (updates, feed) = mpsc::unbounded_channel();
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        loopdbg_io::watch::follow(&watched, bytes, |all, from| {
            match update_of_file(&mut followed, all, from, which) {
                Ok(update) => updates.send(LiveEvent::Update(Box::new(update))).is_ok(),
                // A line the readers refuse: keep showing what was read.
                Err(_) => true,
            }
        });
    });
    let app = App::live(
        origin.clone(),
        format!("follow {origin}"),
        first,
        terminal::theme(),
    );
    terminal::run_live(app, feed)?;
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg record`.
pub(super) fn record(
    capture: &Path,
    which: Option<usize>,
    output: &Path,
) -> Result<ExitCode, Failure> {
    let opened = match loopdbg_corpus::replay::open(capture)? {
        loopdbg_corpus::replay::Opening::Captured(opened) => opened,
        loopdbg_corpus::replay::Opening::Session { origin, .. } => {
            return Err(bad_flag(format!(
                "{origin} is a session, not a capture: `loopdbg run {origin}` runs it"
            )));
        }
    };
    let recorded = loopdbg_corpus::replay::record(opened, which)?;
    let rec = &recorded.recording;
    let mut text = serde_json::to_string_pretty(&rec.session).map_err(anyhow::Error::from)?;
    text.push('\n');
    // A session that does not load back is not worth writing.
    loopdbg_engine::Session::parse(&output.display().to_string(), &text)?;
    // Never over a file: a recorded session is the user's to replace.
    loopdbg_io::files::write_file(output, loopdbg_io::files::Existing::Keep, |w| {
        w.write_all(text.as_bytes())
    })
    .map_err(|e| match e {
        loopdbg_io::files::WriteError::Exists => bad_flag(format!(
            "{} exists: record never overwrites a file; pick another -o",
            output.display()
        )),
        e => anyhow::Error::from(e).context(format!("writing {}", output.display())),
    })?;
    say!(
        "recorded {} round(s), {} tool(s) with {} recorded result(s) from {} (conversation {} of {}) → {}",
        rec.rounds,
        rec.session.tools.len(),
        rec.results(),
        capture.display(),
        recorded.conversation,
        recorded.count,
        output.display()
    );
    for note in rec.notes(recorded.declared_tools) {
        say!("  {note}");
    }
    say!("  step it: loopdbg {}", output.display());
    Ok(ExitCode::SUCCESS)
}
