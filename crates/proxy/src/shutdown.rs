//! The proxy's graceful end: on SIGINT, SIGTERM or SIGHUP it stops
//! taking agents, lets the exchanges in flight end for a while (each
//! recorded as it ends), then records any still going as cut.

use std::time::Duration;

use crate::Running;
use crate::capture::{Action, Exchange};

/// How long exchanges in flight may go on after a shutdown signal.
pub const GRACE: Duration = Duration::from_secs(5);

/// Hands each exchange to `each` as it ends, until the exchanges end (the
/// proxy stopped), `each` says stop (returns false), or `signal` resolves
/// to a signal's name; after a signal, the grace period and the cut
/// exchanges, as above. `say` is told what is being waited for. The
/// signal's name, when one ended it. Each exchange keeps its request body
/// or not as `bodies` says ([`crate::Ended::record`]).
pub fn relay_until_signal(
    runtime: tokio::runtime::Runtime,
    mut running: Running,
    bodies: crate::Bodies,
    signal: impl std::future::Future<Output = &'static str>,
    mut each: impl FnMut(&Exchange) -> bool,
    say: impl FnOnce(&str),
) -> Option<&'static str> {
    let record = |x: crate::Ended| x.record(bodies);
    let signal = runtime.block_on(async {
        tokio::pin!(signal);
        loop {
            tokio::select! {
                x = running.exchanges.recv() => {
                    if !each(&record(x?)) {
                        return None;
                    }
                }
                name = &mut signal => return Some(name),
            }
        }
    })?;
    // Stop taking agents; let the exchanges in flight end for a while,
    // recording each; then record any still going as cut.
    let _ = running.stop_accepting.send(true);
    say(&format!(
        "{signal} received; no new connections, waiting up to {} s for {} exchange(s) in flight",
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
                    each(&record(x));
                }
                () = &mut deadline => break,
            }
        }
    });
    // The rest are cut: dropping the runtime drops their bodies, which
    // hands each one's record over.
    runtime.shutdown_timeout(Duration::from_millis(100));
    while let Ok(x) = running.exchanges.try_recv() {
        let mut x = record(x);
        x.action = Action::Failed;
        x.error = Some(format!(
            "cut by the proxy's shutdown ({signal}) after {} s of grace",
            GRACE.as_secs()
        ));
        each(&x);
    }
    Some(signal)
}
