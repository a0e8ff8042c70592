//! What the live debugger shows of the proxy's traffic: the newest
//! exchange of the agent's loop, judged as its request was sent, with an
//! alarm when the newest exchange carries a 400. Only that exchange and a
//! count are kept, however long the proxy runs.

use loopdbg_judge::check::{Finding, check};
use loopdbg_read::capture;
use loopdbg_read::{Conversation, Source, read};
use serde_json::Value;

use crate::Running;
use crate::capture::{Action, Exchange};
use crate::capture_file::CaptureFile;

/// The exchanges seen so far, as much of them as the screen needs.
#[derive(Default)]
pub struct Watched {
    /// The newest exchange of the agent's loop: one whose request declares
    /// tools or carries a history, so a side request (a title, a quota
    /// check) does not take the screen away from the loop.
    looping: Option<Value>,
    /// The newest exchange of any kind, shown until the loop has one.
    newest: Option<Value>,
    /// How many exchanges have ended.
    count: u64,
}

/// One picture of the traffic.
pub struct Shown {
    /// The exchange's request with its reply appended.
    pub conversation: Conversation,
    /// The findings on the request as it was sent.
    pub findings: Vec<Finding>,
    /// `live: exchange #N of M`.
    pub title: String,
    /// Set when the newest exchange carries a request the provider refuses.
    pub alarm: Option<String>,
}

impl Watched {
    /// Takes an exchange that ended; the picture to show now, when the
    /// exchange it follows can be read.
    pub fn push(&mut self, x: &Exchange) -> Option<Shown> {
        self.count += 1;
        let record = serde_json::to_value(x).unwrap_or(Value::Null);
        if is_looping(&record) {
            self.looping = Some(record);
        } else {
            self.newest = Some(record);
        }
        let shown = self.looping.as_ref().or(self.newest.as_ref())?.clone();
        let seq = shown["seq"].as_u64().unwrap_or(0);
        let provider = capture::provider_of(&shown)?;
        let sent = read(&shown["request"], Source::Provider(provider)).ok()?;
        let status = shown["status"].as_u64();
        let said = shown["response"].to_string();
        let body = capture::conversation_of(shown);
        let mut conversation = read(&body, Source::Provider(provider)).ok()?;
        // A request the provider refused is a trip with no reply, as a
        // replay of the capture shows it: exchange #2 refused is round
        // 2, not the end of round 1.
        if let Some(status) = status.filter(|s| !(200..300).contains(s)) {
            conversation
                .refusals
                .push(loopdbg_read::conversation::Refusal {
                    at: conversation.messages.len(),
                    status: u16::try_from(status).ok(),
                    text: said,
                    source: loopdbg_read::conversation::BlockSource {
                        path: format!("exchange {seq} response").into(),
                        ..Default::default()
                    },
                });
        }
        let alarm = x
            .findings
            .iter()
            .find(|f| f.rejected_by_provider())
            .map(|f| {
                let what = match x.action {
                    Action::Blocked => "blocked locally",
                    Action::Repaired => "repaired before forwarding",
                    Action::Forwarded | Action::Failed => "forwarded as it was",
                };
                f.alarm(&format!("ALARM #{} ({what})", x.seq))
            });
        Some(Shown {
            findings: check(&sent),
            conversation,
            title: format!("live: exchange #{seq} of {}", self.count),
            alarm,
        })
    }
}

/// Whether a capture record belongs to the agent's loop: its request
/// declares tools or carries a history.
fn is_looping(record: &Value) -> bool {
    let request = &record["request"];
    request
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
        || loopdbg_read::CONVERSATION_KEYS.iter().any(|k| {
            request
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|a| a.len() > 1)
        })
}

/// What the live view is told as the traffic goes.
pub enum Told {
    /// What is in flight changed: `count` exchanges, the newest numbered
    /// and named (`METHOD /path`); `first` while none has ended yet.
    InFlight {
        /// How many.
        count: usize,
        /// The newest: its number and `METHOD /path`.
        newest: Option<(u64, String)>,
        /// No exchange has ended yet.
        first: bool,
    },
    /// An exchange ended: the picture to show now.
    Shown(Box<Shown>),
    /// The capture could not be written (the relay goes on).
    CaptureFailed(String),
}

/// Watches the proxy's traffic on `handle`'s runtime: each exchange that
/// ends is appended to `capture` and told as a picture; what is in flight
/// is told as it changes. Stops when `tell` returns false.
pub fn watch(
    handle: &tokio::runtime::Handle,
    running: Running,
    mut capture: CaptureFile,
    tell: impl Fn(Told) -> bool + Send + Sync + 'static,
) {
    let tell = std::sync::Arc::new(tell);
    let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut flights, flight_tell, flight_ended) =
        (running.in_flight.clone(), tell.clone(), ended.clone());
    handle.spawn(async move {
        while flights.changed().await.is_ok() {
            let now = flights.borrow_and_update().clone();
            let first = !flight_ended.load(std::sync::atomic::Ordering::SeqCst);
            let told = Told::InFlight {
                count: now.count,
                newest: now.newest,
                first,
            };
            if !flight_tell(told) {
                break;
            }
        }
    });
    let (mut exchanges, stop_accepting) = (running.exchanges, running.stop_accepting);
    handle.spawn(async move {
        // Dropping it would stop the proxy taking agents: it lives as long
        // as the traffic is watched.
        let _serving = stop_accepting;
        let mut watched = Watched::default();
        while let Some(x) = exchanges.recv().await {
            let x = x.into_exchange();
            if let Err(e) = capture.append(&x) {
                tell(Told::CaptureFailed(e.to_string()));
            }
            ended.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(shown) = watched.push(&x)
                && !tell(Told::Shown(Box::new(shown)))
            {
                break;
            }
        }
    });
}
