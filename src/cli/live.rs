//! Live traffic adapters: `proxy` (serve, record, print or show),
//! `--follow` (a file that is still being written) and `record` (a capture
//! becomes a session). Files, sockets, threads and the clock are here; the
//! library decides what the traffic means.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::Context;

use loopdbg_corpus::follow::Followed;
use loopdbg_io::tail::Change;
use loopdbg_proxy::capture::Exchange;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::{Failure, bad_flag, terminal};

/// Appends one exchange to the capture and flushes it, so a crash loses at
/// most the exchange in flight.
struct CaptureFile {
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    /// `--otlp`: each exchange also goes out as a span.
    otlp: Option<loopdbg_proxy::otlp::Sink>,
}

/// What `--otlp` did, said when the proxy ends.
fn say_otlp_counts(counts: &loopdbg_proxy::otlp::Counts) {
    use std::sync::atomic::Ordering;
    say!(
        "loopdbg proxy: otlp: {} span(s) sent, {} dropped (queue full, or the collector down or refusing)",
        counts.sent.load(Ordering::Relaxed),
        counts.dropped.load(Ordering::Relaxed)
    );
}

impl CaptureFile {
    fn open(path: Option<&Path>, force: bool) -> anyhow::Result<CaptureFile> {
        if let Some(p) = path
            && !force
        {
            loopdbg_corpus::appendable_capture(
                p,
                loopdbg_read::capture::is_exchange,
                "a loopdbg exchange",
            )?;
        }
        let file = match path {
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening the capture {}", p.display()))?,
            ),
            None => None,
        };
        Ok(CaptureFile {
            file,
            path: path.map(Path::to_path_buf),
            otlp: None,
        })
    }

    fn append(&mut self, x: &Exchange) {
        if let Some(sink) = self.otlp.as_mut() {
            sink.send(x);
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut line = serde_json::to_vec(x).unwrap_or_default();
        line.push(b'\n');
        // One write per record: with O_APPEND a record is never interleaved.
        if let Err(e) = file.write_all(&line).and_then(|()| file.flush()) {
            say!(
                "loopdbg proxy: writing the capture {}: {e}",
                self.path.as_deref().unwrap_or(Path::new("?")).display()
            );
        }
    }
}

/// `proxy --no-tui`: one line per exchange until the upstream channel
/// closes or a shutdown signal comes; the process then ends with the
/// signal's status.
fn print_lines(
    runtime: tokio::runtime::Runtime,
    running: loopdbg_proxy::Running,
    mut capture: CaptureFile,
    signals: loopdbg_proxy::shutdown::Signals,
) -> ExitCode {
    let mut out = std::io::stdout();
    let print = |x: &Exchange| {
        capture.append(x);
        writeln!(out, "{}", loopdbg_proxy::summary_line(x))
            .and_then(|()| out.flush())
            .is_ok()
    };
    let say = |what: &str| say!("loopdbg proxy: {what}");
    match loopdbg_proxy::shutdown::relay_until_signal(runtime, running, signals, print, say) {
        // The conventional status of a process ended by that signal.
        Some(signal) => ExitCode::from(128 + signal.number),
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
        return Err(Failure::Other(anyhow::anyhow!(
            "the debugger needs a terminal; add --no-tui for one line per exchange"
        )));
    }
    let mut capture = CaptureFile::open(capture_path, force)
        .map_err(|e| bad_flag(format!("--capture: {e:#}")))?;
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
        loopdbg_proxy::shutdown::Signals::listen()
    });
    let mut running = runtime.block_on(loopdbg_proxy::start(&config))?;
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
    say!(
        "loopdbg proxy: listening on http://{addr} → {} · --on-invalid {}{} · {}{}",
        // A key in the upstream's query (Gemini's `?key=`) is not shown.
        loopdbg_formats::route::redacted_path(&config.upstream.to_string()),
        config.on_invalid,
        match config.on_invalid {
            loopdbg_proxy::gate::OnInvalid::Forward => String::new(),
            _ => format!(" (unreadable requests: {})", config.on_unjudged),
        },
        capture_path.map_or_else(
            || "no capture: exchanges are not recorded (--capture FILE records them)".to_string(),
            |p| format!("capture {}", p.display())
        ),
        otlp.map_or(String::new(), |url| format!(
            " · each exchange as an OTLP span to {}",
            loopdbg_formats::route::redacted_path(url)
        ))
    );
    if let Some(signals) = signals {
        let code = print_lines(runtime, running, capture, signals);
        if let Some(counts) = otlp_counts {
            say_otlp_counts(&counts);
        }
        return Ok(code);
    }
    let (updates, feed) = mpsc::unbounded_channel();
    let recorded = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // What is in flight goes to the header; before the first exchange has
    // ended, a long stream replaces "no traffic yet" too.
    let mut flights = running.in_flight.clone();
    let (flight_updates, flight_recorded, flight_addr) = (
        updates.clone(),
        std::sync::Arc::clone(&recorded),
        addr.clone(),
    );
    runtime.spawn(async move {
        while flights.changed().await.is_ok() {
            let now = flights.borrow_and_update().clone();
            let first = flight_recorded.load(std::sync::atomic::Ordering::SeqCst) == 0;
            if first && now.count > 0 {
                let _ =
                    flight_updates.send(LiveEvent::Update(Box::new(LiveUpdate::first_in_flight(
                        now.newest.as_ref().map_or(1, |n| n.0),
                        now.newest.as_ref().map_or("", |n| n.1.as_str()),
                        &flight_addr,
                    ))));
            }
            if flight_updates
                .send(LiveEvent::InFlight(loopdbg_tui::live::in_flight_words(
                    now.count,
                    now.newest.as_ref(),
                )))
                .is_err()
            {
                break;
            }
        }
    });
    // The proxy keeps serving on its own threads; exchanges become screens.
    runtime.spawn(async move {
        let mut watched = loopdbg_proxy::live::Watched::default();
        while let Some(x) = running.exchanges.recv().await {
            let x = x.into_exchange();
            capture.append(&x);
            recorded.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let update = watched.push(&x).map(|shown| {
                LiveUpdate::of(
                    &shown.conversation,
                    &shown.findings,
                    &shown.title,
                    shown.alarm,
                )
            });
            if let Some(update) = update
                && updates.send(LiveEvent::Update(Box::new(update))).is_err()
            {
                break;
            }
        }
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

/// How long `--follow` rests after building a picture, in multiples of
/// the time it took.
const FOLLOW_REST: u32 = 4;

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
        let (wake, woken) = std_mpsc::channel::<()>();
        // Watch the folder, not the file: a file replaced by rename is a
        // new inode that a watch on the old one would never report.
        let folder = watched
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let _watcher = start_watcher(&folder, &watched, wake);
        let mut tail = loopdbg_io::tail::Tail::at(&watched, bytes);
        loop {
            // Notifications wake it at once; the timeout is the polling
            // fallback for file systems that send none.
            match woken.recv_timeout(Duration::from_millis(500)) {
                Ok(()) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(500))
                }
            }
            while woken.try_recv().is_ok() {}
            // Only what was appended is read; a file replaced or cut is
            // read again from its start.
            let from = match tail.refresh(&watched) {
                Ok(Change::Appended { from }) => Some(from),
                Ok(Change::Replaced) => None,
                Ok(Change::Nothing) | Err(_) => continue,
            };
            let started = std::time::Instant::now();
            let update = match update_of_file(&mut followed, tail.lines(), from, which) {
                Ok(u) => u,
                // A line the readers refuse: keep showing what was read.
                Err(_) => continue,
            };
            if updates.send(LiveEvent::Update(Box::new(update))).is_err() {
                break;
            }
            // The new lines are parsed alone, but the picture (the log's
            // graph, the trace, the checks) is built again in time that
            // grows with the file: lines that come faster than that are
            // taken together, so following a busy agent's 56 MB log costs
            // at most a fifth of a core (it took a whole one).
            std::thread::sleep(started.elapsed() * FOLLOW_REST);
        }
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

fn start_watcher(
    folder: &Path,
    file: &Path,
    wake: std_mpsc::Sender<()>,
) -> Option<Box<dyn notify::Watcher>> {
    use notify::{EventKind, RecursiveMode, Watcher};
    let name = file.file_name().map(std::ffi::OsStr::to_os_string);
    // Only changes to the followed file wake the reader: its own reads
    // raise access events, and waking on those kept an idle follower at
    // 80 % of a core (issue 23, item 8).
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else {
            let _ = wake.send(());
            return;
        };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let ours = event.paths.is_empty()
            || event
                .paths
                .iter()
                .any(|p| p.file_name().map(std::ffi::OsStr::to_os_string) == name);
        if ours {
            let _ = wake.send(());
        }
    };
    let mut watcher = notify::recommended_watcher(handler).ok()?;
    watcher.watch(folder, RecursiveMode::NonRecursive).ok()?;
    Some(Box::new(watcher))
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
    let mut file = match OpenOptions::new().write(true).create_new(true).open(output) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(bad_flag(format!(
                "{} exists: record never overwrites a file; pick another -o",
                output.display()
            )));
        }
        Err(e) => {
            return Err(Failure::Other(
                anyhow::Error::from(e).context(format!("creating {}", output.display())),
            ));
        }
    };
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", output.display()))?;
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
