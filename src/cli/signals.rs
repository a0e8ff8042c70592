//! SIGINT, SIGTERM and SIGHUP, listened for by the debugger's event loop
//! (which leaves as `q` does) and by `proxy --no-tui` (which ends its
//! exchanges in flight first).

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
