//! SIGINT, SIGTERM, SIGHUP and SIGQUIT, listened for by the debugger's
//! event loop (which restores the terminal, then exits with 128 plus the
//! signal's number) and by `proxy --no-tui` (which ends its exchanges in
//! flight first).

/// A signal that ends the process: its name and number.
pub struct Shutdown {
    /// `SIGINT`, `SIGTERM`, `SIGHUP`, `SIGQUIT`.
    pub name: &'static str,
    /// Its number, for the exit status (128 + it).
    pub number: u8,
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT, as one stream. A signal that
/// could not be listened for never arrives. (SIGQUIT's default, a core
/// dump, would leave the terminal raw.)
pub struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    quit: Option<tokio::signal::unix::Signal>,
}

/// The next arrival on `signal`, or never.
#[cfg(unix)]
async fn arrival(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

impl Signals {
    /// Listens for the signals; call inside the runtime.
    pub fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
                hangup: signal(SignalKind::hangup()).ok(),
                quit: signal(SignalKind::quit()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal.
    pub async fn next(&mut self) -> Shutdown {
        #[cfg(unix)]
        {
            let (name, number) = tokio::select! {
                () = arrival(&mut self.interrupt) => ("SIGINT", 2),
                () = arrival(&mut self.terminate) => ("SIGTERM", 15),
                () = arrival(&mut self.hangup) => ("SIGHUP", 1),
                () = arrival(&mut self.quit) => ("SIGQUIT", 3),
            };
            Shutdown { name, number }
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
