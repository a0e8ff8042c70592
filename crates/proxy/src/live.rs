//! What the live debugger shows of the proxy's traffic: the newest
//! exchange of the agent's loop, judged as its request was sent, with an
//! alarm when the newest exchange carries a 400. Only that exchange and a
//! count are kept, however long the proxy runs.

use loopdbg_judge::check::{Finding, check};
use loopdbg_read::capture;
use loopdbg_read::{Conversation, Source, read};
use serde_json::Value;

use crate::capture::{Action, Exchange};

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
        let body = capture::conversation_of(shown);
        let conversation = read(&body, Source::Provider(provider)).ok()?;
        let alarm = x.findings.iter().find(|f| f.rejected_by_provider).map(|f| {
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
