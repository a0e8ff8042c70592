//! `run --emit`: the request bodies a run sends, as the provider would
//! receive them, one at a time (each holds the whole history, so all of
//! them can be far larger than the run).

use loopdbg_engine::Session;
use loopdbg_engine::trace::{Phase, Step, Trace};
use loopdbg_formats::provider::{Format, request_body};
use serde_json::Value;

/// How much `run --emit` prints without being asked for everything.
pub const LIMIT: u64 = 64 << 20;

/// Which requests to emit.
#[derive(Debug, Clone, Copy)]
pub enum Which {
    /// Request `n` (1-based).
    One(usize),
    /// The last request.
    Last,
    /// Every request; `all` says the user accepts any size.
    Every {
        /// Print even when the estimate passes [`LIMIT`].
        all: bool,
    },
}

/// The request bodies of a run in `format`, named `model`.
pub struct Bodies<'a> {
    format: Format,
    session: &'a Session,
    trace: &'a Trace,
    model: &'a str,
    requests: Vec<&'a Step>,
}

impl<'a> Bodies<'a> {
    /// The bodies `trace` sends (each request step's history).
    pub fn of(format: Format, session: &'a Session, trace: &'a Trace, model: &'a str) -> Self {
        let requests = trace
            .steps
            .iter()
            .filter(|s| s.phase == Phase::Request)
            .collect();
        Bodies {
            format,
            session,
            trace,
            model,
            requests,
        }
    }

    /// The requests chosen (0-based), or why none can be.
    pub fn chosen(&self, which: Which) -> Result<Vec<usize>, String> {
        let count = self.requests.len();
        match which {
            Which::One(n) if n == 0 || n > count => {
                Err(format!("--request {n}: the run sends {count} request(s)"))
            }
            Which::One(n) => Ok(vec![n - 1]),
            Which::Last => Ok(vec![count.saturating_sub(1)]),
            Which::Every { all } => {
                // Every body holds the whole history: estimate the total
                // from the last one before printing gigabytes.
                let last_size = count.checked_sub(1).map_or(0, |k| {
                    serde_json::to_vec(&self.body(k)).map_or(0, |b| b.len())
                });
                let estimate = last_size as u64 * count as u64 / 2;
                if !all && estimate > LIMIT {
                    return Err(format!(
                        "--emit: {count} requests would print about {} MiB; pick one with --request N or --last, or pass --all",
                        estimate >> 20
                    ));
                }
                Ok((0..count).collect())
            }
        }
    }

    /// The heading of request `k` (0-based): `# request 2 (round 2), …`.
    pub fn heading(&self, k: usize) -> String {
        format!(
            "# request {} (round {}), {}",
            k + 1,
            self.requests[k].round,
            self.format.title()
        )
    }

    /// The body of request `k` (0-based).
    pub fn body(&self, k: usize) -> Value {
        let step = self.requests[k];
        request_body(
            self.format,
            self.session,
            &self.trace.messages[..step.history_len],
            self.model,
        )
    }
}
