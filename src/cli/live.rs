//! Live traffic adapters: `proxy` (serve, record, print or show),
//! `--follow` (a file that is still being written) and `record` (a capture
//! becomes a session). Files, sockets, threads and the clock are here; the
//! library decides what the traffic means.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::Context;

use loopdbg_corpus::follow::Followed;
use loopdbg_input::tail::Change;
use loopdbg_judge::check::{Finding, check};
use loopdbg_proxy::capture::{Action, Exchange};
use loopdbg_read::{Conversation, Source, read};
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Failure, bad_flag, terminal};

/// A replay of one conversation, ready for the debugger.
/// A replay of `conv` with `findings` on it, ready for the debugger.
fn replay_update(
    conv: &Conversation,
    findings: &[Finding],
    title: &str,
    alarm: Option<String>,
) -> LiveUpdate {
    LiveUpdate {
        session: loopdbg_export::replay::session_for(conv, title),
        trace: loopdbg_export::replay::trace_of(conv, findings),
        source: conv.source.as_str().to_string(),
        alarm,
    }
}

/// A one-message screen saying what the view waits for.
fn placeholder(text: String, title: &str) -> LiveUpdate {
    let doc = serde_json::json!([{"role": "user", "content": text}]);
    let conv = read(
        &doc,
        Source::Provider(loopdbg_formats::provider::Format::Anthropic),
    )
    .expect("a plain user message reads");
    replay_update(&conv, &[], title, None)
}

/// What the screen shows before the first request arrives.
fn waiting(addr: &str) -> LiveUpdate {
    placeholder(
        format!(
            "(waiting for the first request: point the agent at http://{addr}, e.g. ANTHROPIC_BASE_URL=http://{addr} or OPENAI_BASE_URL=http://{addr}/v1)"
        ),
        &format!("live: no traffic yet — point the agent at http://{addr}"),
    )
}

/// The header's words for what is in flight.
fn in_flight_words(now: &loopdbg_proxy::InFlight) -> Option<String> {
    let (seq, what) = now.newest.as_ref()?;
    match now.count {
        0 => None,
        1 => Some(format!("#{seq} {what} in flight")),
        n => Some(format!("{n} in flight, newest #{seq} {what}")),
    }
}

/// The screen while the first exchange is still in flight: a long stream
/// is traffic, not "no traffic yet".
fn in_flight_first(now: &loopdbg_proxy::InFlight, addr: &str) -> LiveUpdate {
    let (seq, what) = now.newest.clone().unwrap_or((1, String::new()));
    placeholder(
        format!("(in flight: #{seq} {what}; its conversation shows here when its answer ends)"),
        &format!("live: request #{seq} in flight through http://{addr}"),
    )
}

/// The words of an alarm about one finding the provider rejects.
fn alarm_of(prefix: &str, f: &Finding) -> String {
    format!(
        "{prefix}: the provider would answer 400 ({}): {}",
        f.path,
        loopdbg_engine::diagnostics::inert::clean(&f.message)
    )
}

/// The proxy's exchanges so far, and which one the screen follows.
#[derive(Default)]
struct Exchanges {
    records: Vec<Value>,
}

impl Exchanges {
    /// The newest exchange of the agent's loop: one whose request declares
    /// tools or carries a history, so a side request (a title, a quota
    /// check) does not take the screen away from the loop.
    fn shown(&self) -> Option<&Value> {
        let looping = |v: &&Value| {
            let r = &v["request"];
            r.get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
                || ["messages", "input", "contents"].iter().any(|k| {
                    r.get(*k)
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.len() > 1)
                })
        };
        self.records
            .iter()
            .rev()
            .find(looping)
            .or(self.records.last())
    }

    fn update(&self, newest: &Exchange) -> Option<LiveUpdate> {
        let shown = self.shown()?.clone();
        let seq = shown["seq"].as_u64().unwrap_or(0);
        let provider = loopdbg_read::capture::provider_of(&shown)?;
        let sent = read(&shown["request"], Source::Provider(provider)).ok()?;
        let body = loopdbg_read::capture::conversation_of(shown);
        let conv = read(&body, Source::Provider(provider)).ok()?;
        let findings = check(&sent);
        let rejected = newest.findings.iter().find(|f| f.rejected_by_provider);
        let alarm = rejected.map(|f| {
            let what = match newest.action {
                Action::Blocked => "blocked locally",
                Action::Repaired => "repaired before forwarding",
                Action::Forwarded | Action::Failed => "forwarded as it was",
            };
            alarm_of(&format!("ALARM #{} ({what})", newest.seq), f)
        });
        let title = format!("live: exchange #{seq} of {}", self.records.len());
        Some(replay_update(&conv, &findings, &title, alarm))
    }
}

/// A capture is appended to; anything else (a session, a log, a handout
/// named by mistake) would get JSON lines glued to its end, so it is
/// refused unless `--force` says so. The first line tells: a capture's is
/// a loopdbg exchange.
pub(super) fn refuse_unless_capture(
    path: &Path,
    is_capture: fn(&Value) -> bool,
    record: &str,
) -> anyhow::Result<()> {
    use std::io::{BufRead, Read};
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    // A capture's first line is one record; a megabyte is plenty to tell.
    let mut first = Vec::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_until(b'\n', &mut first)
        .with_context(|| format!("reading {}", path.display()))?;
    let is_capture = serde_json::from_slice::<Value>(&first).is_ok_and(|v| is_capture(&v));
    anyhow::ensure!(
        is_capture,
        "{} exists and is not a capture (its first line is not {record}); name a new file, or pass --force to append to it anyway",
        path.display()
    );
    Ok(())
}

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
            refuse_unless_capture(p, loopdbg_read::capture::is_exchange, "a loopdbg exchange")?;
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
/// closes or a shutdown signal comes; then the exchanges in flight get a
/// grace period, and the process ends with the signal's status.
fn print_lines(
    runtime: tokio::runtime::Runtime,
    mut running: loopdbg_proxy::Running,
    mut capture: CaptureFile,
    mut signals: ShutdownSignals,
) -> ExitCode {
    let mut out = std::io::stdout();
    let mut print = |x: &Exchange| {
        capture.append(x);
        writeln!(out, "{}", loopdbg_proxy::summary_line(x)).and_then(|()| out.flush())
    };
    let signal = runtime.block_on(async {
        loop {
            tokio::select! {
                x = running.exchanges.recv() => {
                    let x = x?;
                    if print(&x.into_exchange()).is_err() {
                        return None;
                    }
                }
                signal = signals.next() => return Some(signal),
            }
        }
    });
    let Some(signal) = signal else {
        return ExitCode::SUCCESS;
    };
    // Stop taking agents; let the exchanges in flight end for a while,
    // recording each; then record any still going as cut (issue 23,
    // item 15: Ctrl-C dropped them).
    let _ = running.stop_accepting.send(true);
    say!(
        "loopdbg proxy: {} received; no new connections, waiting up to {} s for {} exchange(s) in flight",
        signal.name,
        SHUTDOWN_GRACE.as_secs(),
        running.in_flight.borrow().count
    );
    runtime.block_on(async {
        let deadline = tokio::time::sleep(SHUTDOWN_GRACE);
        tokio::pin!(deadline);
        while running.in_flight.borrow().count > 0 {
            tokio::select! {
                x = running.exchanges.recv() => {
                    let Some(x) = x else { break };
                    let _ = print(&x.into_exchange());
                }
                () = &mut deadline => break,
            }
        }
    });
    // The rest are cut: dropping the runtime drops their bodies, which
    // hands each one's record over.
    runtime.shutdown_timeout(Duration::from_millis(100));
    while let Ok(x) = running.exchanges.try_recv() {
        let mut x = x.into_exchange();
        x.action = loopdbg_proxy::capture::Action::Failed;
        x.error = Some(format!(
            "cut by the proxy's shutdown ({}) after {} s of grace",
            signal.name,
            SHUTDOWN_GRACE.as_secs()
        ));
        let _ = print(&x);
    }
    // The conventional status of a process ended by that signal.
    ExitCode::from(128 + signal.number)
}

/// How long exchanges in flight may go on after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A signal that ends the proxy: its name and number.
struct Shutdown {
    name: &'static str,
    number: u8,
}

/// SIGINT, SIGTERM and SIGHUP, as one stream.
struct ShutdownSignals {
    #[cfg(unix)]
    streams: Vec<(tokio::signal::unix::Signal, &'static str, u8)>,
}

impl ShutdownSignals {
    fn new() -> ShutdownSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let kinds = [
                (SignalKind::interrupt(), "SIGINT", 2),
                (SignalKind::terminate(), "SIGTERM", 15),
                (SignalKind::hangup(), "SIGHUP", 1),
            ];
            ShutdownSignals {
                streams: kinds
                    .into_iter()
                    .filter_map(|(kind, name, n)| signal(kind).ok().map(|s| (s, name, n)))
                    .collect(),
            }
        }
        #[cfg(not(unix))]
        ShutdownSignals {}
    }

    async fn next(&mut self) -> Shutdown {
        #[cfg(unix)]
        {
            if self.streams.is_empty() {
                // No signal could be listened for: none ends the wait.
                return std::future::pending().await;
            }
            let waits = self.streams.iter_mut().map(|(s, name, n)| {
                let (name, n) = (*name, *n);
                Box::pin(async move {
                    s.recv().await;
                    Shutdown { name, number: n }
                })
            });
            futures::future::select_all(waits).await.0
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Shutdown {
                name: "Ctrl-C",
                number: 2,
            }
        }
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
        ShutdownSignals::new()
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
                let _ = flight_updates.send(LiveEvent::Update(Box::new(in_flight_first(
                    &now,
                    &flight_addr,
                ))));
            }
            if flight_updates
                .send(LiveEvent::InFlight(in_flight_words(&now)))
                .is_err()
            {
                break;
            }
        }
    });
    // The proxy keeps serving on its own threads; exchanges become screens.
    runtime.spawn(async move {
        let mut seen = Exchanges::default();
        while let Some(x) = running.exchanges.recv().await {
            let x = x.into_exchange();
            capture.append(&x);
            seen.records
                .push(serde_json::to_value(&x).unwrap_or(Value::Null));
            recorded.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(update) = seen.update(&x)
                && updates.send(LiveEvent::Update(Box::new(update))).is_err()
            {
                break;
            }
        }
    });
    let app = App::live(
        format!("proxy {addr}"),
        format!("proxy {addr}"),
        waiting(&addr),
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
    alarmed: &mut HashSet<String>,
) -> Result<LiveUpdate, loopdbg_engine::LoadError> {
    let Some(picked) = followed.take(all, from, which)? else {
        return match followed.take_error() {
            Some(e) => Err(e),
            None => Ok(waiting_for_file(followed.origin())),
        };
    };
    let alarm = new_rejection(&picked.findings, alarmed).map(|f| alarm_of("ALARM", f));
    let title = format!(
        "follow: conversation {} of {}",
        picked.place.thread + 1,
        picked.place.count
    );
    Ok(replay_update(
        &picked.conversation,
        &picked.findings,
        &title,
        alarm,
    ))
}

/// The last finding the provider rejects that was not alarmed before.
fn new_rejection<'a>(
    findings: &'a [Finding],
    alarmed: &mut HashSet<String>,
) -> Option<&'a Finding> {
    let mut newest = None;
    for f in findings.iter().filter(|f| f.rejected_by_provider) {
        let key = format!("{}|{}|{:?}|{}", f.kind, f.path, f.line, f.ids.join(","));
        if alarmed.insert(key) {
            newest = Some(f);
        }
    }
    newest
}

fn waiting_for_file(origin: &str) -> LiveUpdate {
    placeholder(
        format!("(waiting for {origin} to hold a conversation)"),
        "follow: nothing yet",
    )
}

/// A file that is not there yet: the follower was started before the
/// agent (or the proxy) that will write it, as it may be.
fn waiting_for_a_new_file(origin: &str) -> LiveUpdate {
    placeholder(
        format!(
            "(waiting for {origin} to be created: start the agent or the proxy that writes it)"
        ),
        "follow: waiting for the file",
    )
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
    let mut alarmed = HashSet::new();
    let mut followed = Followed::new(&origin);
    // The natural order is follower, then proxy or agent: a file that does
    // not exist yet, or holds no complete line yet, is waited for.
    let (bytes, first) = match complete_lines(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (Vec::new(), waiting_for_a_new_file(&origin))
        }
        Err(e) => {
            return Err(Failure::from(loopdbg_engine::LoadError::Unreadable {
                origin,
                reason: e.to_string(),
            }));
        }
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            (bytes, waiting_for_file(&origin))
        }
        Ok(bytes) => {
            let first = update_of_file(&mut followed, &bytes, None, which, &mut alarmed)?;
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
        let mut tail = loopdbg_input::tail::Tail::at(&watched, bytes);
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
            let update =
                match update_of_file(&mut followed, tail.lines(), from, which, &mut alarmed) {
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
    // The requests of one loop are one conversation; each is recorded
    // from its newest request, which carries the history before it.
    let opened = match loopdbg_corpus::replay::open(capture)? {
        loopdbg_corpus::replay::Opening::Captured(opened) => opened,
        loopdbg_corpus::replay::Opening::Session { origin, .. } => {
            return Err(bad_flag(format!(
                "{origin} is a session, not a capture: `loopdbg run {origin}` runs it"
            )));
        }
    };
    let (grouped, read) = loopdbg_corpus::replay::conversations(opened)?;
    let newest = grouped.into_newest();
    let convs = newest;
    let count = convs.len();
    let origin = capture.display().to_string();
    if count == 0 {
        if let Some(e) = read.errors.into_iter().next() {
            return Err(e.into());
        }
        return Err(bad_flag(format!(
            "{origin} holds no conversation to record"
        )));
    }
    let n = which.unwrap_or(count);
    if n == 0 || n > count {
        return Err(bad_flag(format!(
            "--conversation {n}: {origin} holds {count} conversation(s)"
        )));
    }
    let conv = &convs[n - 1];
    let title = format!("recorded from {origin}, conversation {n} of {count}");
    let Some(rec) = loopdbg_export::record::record(conv, &title) else {
        return Err(bad_flag(format!(
            "{origin} conversation {n}: no user prompt the model answered, to start a session from"
        )));
    };
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
        "recorded {} round(s), {} tool(s) with {} recorded result(s) from {origin} (conversation {n} of {count}) → {}",
        rec.rounds,
        rec.session.tools.len(),
        rec.session
            .tools
            .iter()
            .map(|t| t.table.len())
            .sum::<usize>(),
        output.display()
    );
    match &rec.extraction {
        loopdbg_export::record::Extraction::First { unanswered } => say!(
            "  the recorded loop answered only the first call of each turn ({} left without a result): recorded with extract first, so the replay shows it; e in the debugger shows what all would do",
            loopdbg_engine::ledger::counted_ids(unanswered)
        ),
        loopdbg_export::record::Extraction::Other { unanswered } => say!(
            "  the recorded loop left {} without a result, not as `first` would: replayed with extract all, so compare the ids pane with the record",
            loopdbg_engine::ledger::counted_ids(unanswered)
        ),
        loopdbg_export::record::Extraction::All | loopdbg_export::record::Extraction::Unknown => {}
    }
    if rec.skipped_messages > 0 {
        say!(
            "  the loop after the last user prompt was recorded; {} earlier message(s) are left out",
            rec.skipped_messages
        );
    }
    if rec.conflicting_results > 0 {
        say!(
            "  {} call(s) repeated earlier arguments with a different result; the first result is kept",
            rec.conflicting_results
        );
    }
    if !rec.undeclared_tools.is_empty() {
        let why = if conv.tools.is_empty() {
            "the file keeps no tool definitions; tools added from the calls"
        } else {
            "called but not declared by the request, added so their results come back"
        };
        say!(
            "  {why}: {}",
            loopdbg_engine::diagnostics::inert::clean(&rec.undeclared_tools.join(", "))
        );
    }
    say!("  step it: loopdbg {}", output.display());
    Ok(ExitCode::SUCCESS)
}
