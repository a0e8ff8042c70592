//! The terminal adapter for the debugger: sets the terminal up, turns
//! crossterm events into actions via the keymap, runs `update`, draws.
//! Restores the terminal on quit, on error and on panic (mouse capture too).

use std::io::stdout;

use anyhow::Context;
use loopdbg_tui::app::{Command, Displaced, LiveEvent};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event};
use ratatui::crossterm::execute;
use tokio::sync::mpsc::UnboundedReceiver;

/// The theme the environment asks for (`NO_COLOR` → monochrome).
pub fn theme() -> Theme {
    Theme::pick(std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
}

/// Runs the debugger on `app` until the user quits (exit 0) or a signal
/// ends it (128 plus its number, once the terminal is restored).
pub fn run(app: App) -> anyhow::Result<std::process::ExitCode> {
    run_with(app, None, None)
}

/// Runs a live debugger: `feed` brings newer pictures of the traffic.
pub fn run_live(
    app: App,
    feed: UnboundedReceiver<LiveEvent>,
) -> anyhow::Result<std::process::ExitCode> {
    run_with(app, Some(feed), None)
}

/// [`run_live`], each picture taken off the screen that its maker marked
/// ([`loopdbg_tui::app::LiveUpdate::token`]) handed back through
/// `recycle`, for the maker to grow the next one from it.
pub fn run_live_recycling(
    app: App,
    feed: UnboundedReceiver<LiveEvent>,
    recycle: std::sync::mpsc::Sender<Displaced>,
) -> anyhow::Result<std::process::ExitCode> {
    run_with(app, Some(feed), Some(recycle))
}

fn run_with(
    mut app: App,
    mut feed: Option<UnboundedReceiver<LiveEvent>>,
    recycle: Option<std::sync::mpsc::Sender<Displaced>>,
) -> anyhow::Result<std::process::ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the event loop")?;

    use std::io::IsTerminal;
    if !stdout().is_terminal() || !std::io::stdin().is_terminal() {
        if app.tour.is_some() {
            anyhow::bail!(
                "the tour needs a terminal: run `loopdbg tour` in one (it has no headless form)"
            );
        }
        let headless = if app.trace.is_replay() {
            "loopdbg check"
        } else {
            "loopdbg run"
        };
        anyhow::bail!(
            "the debugger needs a terminal; for headless output use `{headless} {}`",
            app.origin
        );
    }
    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    install_mouse_restoring_panic_hook();
    let _ = execute!(stdout(), EnableMouseCapture);
    // The event loop answers SIGINT/TERM/HUP itself (it restores the
    // terminal first); a file written meanwhile (W) is still cleaned up.
    crate::on_signal::debugger_owns_signals(true);
    let result = runtime.block_on(event_loop(&mut terminal, &mut app, feed.as_mut(), recycle));
    crate::on_signal::debugger_owns_signals(false);
    let _ = execute!(stdout(), DisableMouseCapture);
    ratatui::restore();
    Ok(match result? {
        Some(signal) => std::process::ExitCode::from(128 + signal.number),
        None => std::process::ExitCode::SUCCESS,
    })
}

/// `ratatui::init` restores raw mode and the alternate screen on panic but
/// leaves mouse capture on; turn it off first.
fn install_mouse_restoring_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(stdout(), DisableMouseCapture);
        previous(info);
    }));
}

/// Applies one live event. A picture its maker grows again goes back to
/// it; a long log's other old pictures are freed off the loop.
fn apply_live(
    app: &mut App,
    event: LiveEvent,
    recycle: Option<&std::sync::mpsc::Sender<Displaced>>,
) {
    let Some(old) = app.apply_live_event(event) else {
        return;
    };
    match recycle {
        Some(maker) if old.token().is_some() => {
            let _ = maker.send(old);
        }
        _ if old.is_large() => {
            std::thread::spawn(move || drop(old));
        }
        _ => {}
    }
}

/// The debugger until `q`; the signal that ended it instead, if one did.
async fn event_loop(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    mut feed: Option<&mut UnboundedReceiver<LiveEvent>>,
    recycle: Option<std::sync::mpsc::Sender<Displaced>>,
) -> anyhow::Result<Option<crate::signals::Shutdown>> {
    // Listening before the first frame: a signal sent once the screen shows
    // is always caught.
    let mut signals = crate::signals::Signals::listen();
    // The same for a resize: crossterm installs its SIGWINCH handler when
    // its event source is first polled, and a window resized before that
    // would never be redrawn. Polling without waiting consumes nothing.
    let _ = ratatui::crossterm::event::poll(std::time::Duration::ZERO);
    let mut events = Input::start();
    let size = terminal.size()?;
    loopdbg_tui::update::apply(app, Action::Resize(size.width, size.height));
    terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
    while !app.quit {
        let live = async {
            match feed.as_mut() {
                Some(f) => f.recv().await,
                None => std::future::pending().await,
            }
        };
        let event = tokio::select! {
            event = events.next() => event,
            update = live => {
                match update {
                    Some(update) => {
                        apply_live(app, update, recycle.as_ref());
                        // Everything that came meanwhile, then one frame:
                        // a proxy taking thousands of exchanges a second
                        // queued their pictures faster than a frame each
                        // drew them, and the queue took 4 GB over 100,000.
                        if let Some(f) = feed.as_mut() {
                            while let Ok(more) = f.try_recv() {
                                apply_live(app, more, recycle.as_ref());
                            }
                        }
                        terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
                    }
                    // The feed ended: the view stays as it last was.
                    None => feed = None,
                }
                continue;
            }
            // SIGTERM, SIGINT, SIGHUP, SIGQUIT: leave as `q` does, so the
            // caller restores the terminal, then exits with the signal's
            // status.
            signal = signals.next() => return Ok(Some(signal)),
        };
        let Some(event) = event else {
            break;
        };
        let Some(action) =
            loopdbg_tui::keymap::action_of(event.context("reading terminal events")?, &app.mode)
        else {
            continue;
        };
        loopdbg_tui::update::apply(app, action);
        if let Some(command) = app.command.take() {
            let said = match command {
                Command::Edit { json, .. } => {
                    // The editor owns the keyboard until it exits.
                    let edited = {
                        let _paused = events.pause();
                        edit_outside(terminal, &json)
                    };
                    let size = terminal.size()?;
                    loopdbg_tui::update::apply(app, Action::Resize(size.width, size.height));
                    Some(match edited {
                        Ok(text) => Action::EditDone(text),
                        Err(why) => Action::Said(format!("edit not applied: {why:#}")),
                    })
                }
                Command::Copy {
                    text,
                    what,
                    suggested,
                } => Some(Action::Said(copy(&text, &what, &suggested))),
                Command::SaveTour(solved) => match save_tour(&solved) {
                    // Saving says nothing: the answer's own message stays.
                    Ok(()) => None,
                    Err(e) => Some(Action::Said(format!("tour progress not saved: {e:#}"))),
                },
                Command::Write {
                    suggested,
                    text,
                    what,
                } => Some(match loopdbg_io::files::write_unique(&suggested, &text) {
                    Ok(path) => Action::Said(format!("wrote the {what} to {}", path.display())),
                    Err(e) => Action::Said(format!("could not write the {what}: {e:#}")),
                }),
            };
            if let Some(said) = said {
                loopdbg_tui::update::apply(app, said);
            }
        }
        if !app.quit {
            terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
        }
    }
    Ok(None)
}

/// `y`: `text` to the clipboard through the terminal (OSC 52), or, when it
/// is too long for that, to a file; what happened, in words.
fn copy(text: &str, what: &str, suggested: &str) -> String {
    use std::io::Write;
    let in_tmux = std::env::var_os("TMUX").is_some();
    let sent = loopdbg_tui::clipboard::osc52(text, in_tmux).map(|sequence| {
        let mut out = stdout().lock();
        out.write_all(sequence.as_bytes())
            .and_then(|()| out.flush())
    });
    match sent {
        Some(Ok(())) => format!(
            "copied {what} to the clipboard ({} bytes, through the terminal: OSC 52); nothing arrived? Y writes it to a file",
            text.len()
        ),
        _ => match loopdbg_io::files::write_unique(suggested, text) {
            Ok(path) => format!(
                "{what} is too long for the terminal's clipboard: wrote it to {}",
                path.display()
            ),
            Err(e) => format!("could not copy {what}: {e:#}"),
        },
    }
}

/// Terminal events, read on a thread of their own and handed over in
/// order. (crossterm's `EventStream` could lose its wake-up when keys and a
/// resize arrived together, and the debugger then ignored every key: seen
/// with keys typed on a too-small screen just before it grew.)
struct Input {
    events: UnboundedReceiver<std::io::Result<Event>>,
    /// Held by the reader around each read; holding it pauses reading.
    gate: std::sync::Arc<std::sync::Mutex<()>>,
    /// Set while a pause is wanted, so the reader lets go of the gate.
    pausing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Reading is paused while this lives.
struct Paused<'a> {
    _gate: Option<std::sync::MutexGuard<'a, ()>>,
    pausing: &'a std::sync::atomic::AtomicBool,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.pausing
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Input {
    fn start() -> Input {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let gate = std::sync::Arc::new(std::sync::Mutex::new(()));
        let pausing = std::sync::Arc::new(AtomicBool::new(false));
        let (held, wanted) = (gate.clone(), pausing.clone());
        std::thread::spawn(move || {
            use ratatui::crossterm::event::{poll, read};
            loop {
                if wanted.load(Ordering::SeqCst) {
                    // Let the pauser take the gate; wait for it to let go.
                    drop(held.lock());
                    std::thread::yield_now();
                    continue;
                }
                let Ok(_reading) = held.lock() else { break };
                // A bounded wait, so a pause never waits long for the gate.
                let event = match poll(std::time::Duration::from_millis(50)) {
                    Ok(true) => read(),
                    Ok(false) => continue,
                    Err(e) => Err(e),
                };
                let failed = event.is_err();
                if tx.send(event).is_err() || failed {
                    break;
                }
            }
        });
        Input {
            events,
            gate,
            pausing,
        }
    }

    async fn next(&mut self) -> Option<std::io::Result<Event>> {
        self.events.recv().await
    }

    /// Stops reading until the guard is dropped (an editor has the keys).
    fn pause(&self) -> Paused<'_> {
        self.pausing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Paused {
            _gate: self.gate.lock().ok(),
            pausing: &self.pausing,
        }
    }
}

/// Where the tour's progress is kept: the platform's data folder
/// (`$XDG_DATA_HOME/loopdbg/tour.json` on Linux).
pub fn tour_file() -> Option<std::path::PathBuf> {
    dirs::data_dir().map(|d| d.join("loopdbg").join("tour.json"))
}

/// The stops solved in earlier runs.
pub fn load_tour() -> std::collections::BTreeSet<usize> {
    tour_file()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("solved")?
                .as_array()?
                .iter()
                .map(|n| n.as_u64().map(|n| n as usize))
                .collect()
        })
        .unwrap_or_default()
}

fn save_tour(solved: &[usize]) -> anyhow::Result<()> {
    let path = tour_file().context("no data folder on this platform")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = serde_json::json!({"solved": solved}).to_string();
    loopdbg_io::files::write_file(&path, loopdbg_io::files::Existing::Replace, |out| {
        out.write_all(text.as_bytes())
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// The editor to use: `$VISUAL`, `$EDITOR`, else `vi` (an editor that runs
/// in any terminal).
fn editor() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|v| v.to_string_lossy().into_owned())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".into())
}

/// Leaves the debugger's screen, lets the user edit `json` in their editor,
/// and comes back; the edited text, or why there is none.
fn edit_outside(terminal: &mut DefaultTerminal, json: &str) -> anyhow::Result<String> {
    let file = tempfile::Builder::new()
        .prefix("loopdbg-edit-")
        .suffix(".json")
        .tempfile()
        .context("creating the file to edit")?;
    std::fs::write(file.path(), json).context("writing the file to edit")?;
    let _ = execute!(stdout(), DisableMouseCapture);
    ratatui::restore();
    let editor = editor();
    // Through the shell, so `EDITOR="code --wait"` works as it does for git.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status();
    // Back on the same terminal object: building a new one would ask the
    // terminal where its cursor is, which not every terminal answers.
    ratatui::crossterm::terminal::enable_raw_mode().context("restoring the terminal")?;
    execute!(stdout(), ratatui::crossterm::terminal::EnterAlternateScreen)
        .context("restoring the terminal")?;
    let _ = execute!(stdout(), EnableMouseCapture);
    // `Terminal::clear` would ask where the cursor is; clear the screen
    // directly and blank both buffers so the next frame is drawn whole.
    execute!(
        stdout(),
        ratatui::crossterm::terminal::Clear(ratatui::crossterm::terminal::ClearType::All)
    )?;
    terminal.swap_buffers();
    terminal.swap_buffers();
    let status = status.with_context(|| format!("starting the editor `{editor}`"))?;
    if !status.success() {
        anyhow::bail!("the editor `{editor}` exited with {status}");
    }
    let text = std::fs::read_to_string(file.path()).context("reading the edited file")?;
    if text == json {
        anyhow::bail!("nothing was changed");
    }
    Ok(text)
}
