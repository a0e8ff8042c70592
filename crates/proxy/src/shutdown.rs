//! The proxy's graceful end: on SIGINT, SIGTERM or SIGHUP it stops
//! taking agents, lets the exchanges in flight end for a while (each
//! recorded as it ends), then records any still going as cut.

use std::time::Duration;

use crate::Running;
use crate::capture::{Action, Exchange};

/// How long exchanges in flight may go on after a shutdown signal.
pub const GRACE: Duration = Duration::from_secs(5);

/// A signal that ends the proxy: its name and number.
pub struct Shutdown {
    /// `SIGINT`, `SIGTERM`, `SIGHUP`.
    pub name: &'static str,
    /// Its number, for the exit status (128 + it).
    pub number: u8,
}

/// SIGINT, SIGTERM and SIGHUP, as one stream.
pub struct Signals {
    #[cfg(unix)]
    streams: Vec<(tokio::signal::unix::Signal, &'static str, u8)>,
}

impl Signals {
    /// Listens for the signals; call inside the runtime.
    pub fn listen() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let kinds = [
                (SignalKind::interrupt(), "SIGINT", 2),
                (SignalKind::terminate(), "SIGTERM", 15),
                (SignalKind::hangup(), "SIGHUP", 1),
            ];
            Signals {
                streams: kinds
                    .into_iter()
                    .filter_map(|(kind, name, n)| signal(kind).ok().map(|s| (s, name, n)))
                    .collect(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal.
    pub async fn next(&mut self) -> Shutdown {
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

/// Hands each exchange to `each` as it ends, until the exchanges end (the
/// proxy stopped), `each` says stop (returns false), or a signal comes;
/// after a signal, the grace period and the cut exchanges, as above.
/// `say` is told what is being waited for. The signal, when one ended it.
pub fn relay_until_signal(
    runtime: tokio::runtime::Runtime,
    mut running: Running,
    mut signals: Signals,
    mut each: impl FnMut(&Exchange) -> bool,
    say: impl FnOnce(&str),
) -> Option<Shutdown> {
    let signal = runtime.block_on(async {
        loop {
            tokio::select! {
                x = running.exchanges.recv() => {
                    if !each(&x?.into_exchange()) {
                        return None;
                    }
                }
                signal = signals.next() => return Some(signal),
            }
        }
    })?;
    // Stop taking agents; let the exchanges in flight end for a while,
    // recording each; then record any still going as cut.
    let _ = running.stop_accepting.send(true);
    say(&format!(
        "{} received; no new connections, waiting up to {} s for {} exchange(s) in flight",
        signal.name,
        GRACE.as_secs(),
        running.in_flight.borrow().count
    ));
    runtime.block_on(async {
        let deadline = tokio::time::sleep(GRACE);
        tokio::pin!(deadline);
        while running.in_flight.borrow().count > 0 {
            tokio::select! {
                x = running.exchanges.recv() => {
                    let Some(x) = x else { break };
                    each(&x.into_exchange());
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
        x.action = Action::Failed;
        x.error = Some(format!(
            "cut by the proxy's shutdown ({}) after {} s of grace",
            signal.name,
            GRACE.as_secs()
        ));
        each(&x);
    }
    Some(signal)
}
