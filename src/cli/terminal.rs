//! The terminal adapter for the debugger: sets the terminal up, turns
//! crossterm events into actions via the keymap, runs `update`, draws.
//! Restores the terminal on quit, on error and on panic (mouse capture too).

use std::io::stdout;

use anyhow::Context;
use futures::StreamExt;
use loopdbg::tui::app::LiveUpdate;
use loopdbg::tui::keymap::{action_for, search_action_for};
use loopdbg::tui::theme::Theme;
use loopdbg::tui::{Action, App, update};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind, MouseEventKind,
};
use ratatui::crossterm::execute;
use tokio::sync::mpsc::UnboundedReceiver;

/// The theme the environment asks for (`NO_COLOR` → monochrome).
pub fn theme() -> Theme {
    Theme::pick(std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
}

/// Runs the debugger on `app` until the user quits.
pub fn run(app: App) -> anyhow::Result<()> {
    run_with(app, None)
}

/// Runs a live debugger: `feed` brings newer pictures of the traffic.
pub fn run_live(app: App, feed: UnboundedReceiver<LiveUpdate>) -> anyhow::Result<()> {
    run_with(app, Some(feed))
}

fn run_with(mut app: App, mut feed: Option<UnboundedReceiver<LiveUpdate>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the event loop")?;

    use std::io::IsTerminal;
    if !stdout().is_terminal() || !std::io::stdin().is_terminal() {
        let headless = if app.trace.strategy.behavior == loopdbg::wire::replay::REPLAY_BEHAVIOR {
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
    let result = runtime.block_on(event_loop(&mut terminal, &mut app, feed.as_mut()));
    let _ = execute!(stdout(), DisableMouseCapture);
    ratatui::restore();
    result
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

async fn event_loop(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    mut feed: Option<&mut UnboundedReceiver<LiveUpdate>>,
) -> anyhow::Result<()> {
    // Listening before the first frame: a signal sent once the screen shows
    // is always caught.
    let mut signals = Signals::new()?;
    // The same for a resize: crossterm installs its SIGWINCH handler when
    // its event source is first polled, and a window resized before that
    // would never be redrawn. Polling without waiting consumes nothing.
    let _ = ratatui::crossterm::event::poll(std::time::Duration::ZERO);
    let mut events = EventStream::new();
    let size = terminal.size()?;
    apply(app, Action::Resize(size.width, size.height));
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
                        app.apply_live(update);
                        terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
                    }
                    // The feed ended: the view stays as it last was.
                    None => feed = None,
                }
                continue;
            }
            // SIGTERM, SIGINT, SIGHUP: leave as `q` does, so the caller
            // restores the terminal.
            () = signals.next() => break,
        };
        let Some(event) = event else {
            break;
        };
        let searching = app.search.is_some();
        let Some(action) = to_action(event.context("reading terminal events")?, searching) else {
            continue;
        };
        apply(app, action);
        if !app.quit {
            terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
        }
    }
    Ok(())
}

/// The signals that end the debugger the way `q` does.
struct Signals {
    #[cfg(unix)]
    streams: Vec<tokio::signal::unix::Signal>,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            SignalKind::terminate(),
            SignalKind::interrupt(),
            SignalKind::hangup(),
        ];
        let streams = kinds
            .into_iter()
            .map(signal)
            .collect::<Result<_, _>>()
            .context("listening for signals")?;
        Ok(Signals { streams })
    }

    #[cfg(not(unix))]
    fn new() -> anyhow::Result<Signals> {
        Ok(Signals {})
    }

    /// Resolves when any of them arrives.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            let waits = self.streams.iter_mut().map(|s| Box::pin(s.recv()));
            futures::future::select_all(waits).await;
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await
    }
}

/// Runs `update` until it asks for nothing more.
fn apply(app: &mut App, action: Action) {
    let mut next = Some(action);
    while let Some(action) = next {
        next = update(app, action);
    }
}

/// `searching`: a search is being typed, so keys are text.
fn to_action(event: Event, searching: bool) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind == KeyEventKind::Press && searching => search_action_for(&key),
        Event::Key(key) if key.kind == KeyEventKind::Press => action_for(&key),
        Event::Mouse(mouse) => match mouse.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => Some(Action::Wheel {
                column: mouse.column,
                row: mouse.row,
                down: mouse.kind == MouseEventKind::ScrollDown,
            }),
            _ => None,
        },
        Event::Resize(w, h) => Some(Action::Resize(w, h)),
        _ => None,
    }
}
