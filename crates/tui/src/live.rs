//! The pictures a live debugger is fed: a conversation replayed, or a
//! one-message screen saying what the view waits for. The adapter that
//! watches the traffic or the file sends them; they are built here so the
//! words are the debugger's.

use loopdbg_judge::check::Finding;
use loopdbg_read::{Conversation, Source, read};

use crate::app::{Derived, LiveUpdate};

impl LiveUpdate {
    /// A replay of `conv` with `findings` on it.
    pub fn of(
        conv: &Conversation,
        findings: &[Finding],
        title: &str,
        alarm: Option<String>,
    ) -> LiveUpdate {
        let trace = loopdbg_export::replay::trace_of(conv, findings);
        LiveUpdate::of_trace(conv, trace, title, alarm)
    }

    /// [`LiveUpdate::of`] with the replay of `conv` made already (grown
    /// from an earlier one: [`loopdbg_export::replay::regrow`]).
    pub fn of_trace(
        conv: &Conversation,
        trace: loopdbg_engine::Trace,
        title: &str,
        alarm: Option<String>,
    ) -> LiveUpdate {
        LiveUpdate {
            session: loopdbg_export::replay::session_for(conv, title),
            trace,
            source: conv.source.as_str().to_string(),
            alarm,
            waiting: None,
            derived: None,
            token: None,
        }
    }

    /// Computes here what the screen shows of the trace at its newest
    /// step (the end summary, the tokens at `prices`): for an adapter on
    /// a thread of its own, so the event loop only draws. (The ledger at
    /// any step is read from the trace's pairing index as it is drawn.)
    pub fn derive(&mut self, prices: &loopdbg_formats::prices::Prices) {
        self.derive_grown(prices, None);
    }

    /// [`LiveUpdate::derive`], grown from `back`: what was derived of
    /// the picture this one's trace was grown from, with the first of its
    /// messages that changed since (`loopdbg_export::replay::regrow`).
    /// The tokens of the trips and rounds before it are kept, the rest
    /// summed: a followed log's appended event is summed in proportion to
    /// itself (on a gigabyte, summing every trip again took 0.2 s a
    /// picture, and the screen's tokens of each round so far as long
    /// again). Gives what `derive` gives.
    pub fn derive_grown(
        &mut self,
        prices: &loopdbg_formats::prices::Prices,
        back: Option<(crate::app::DerivedBack, usize)>,
    ) {
        let trace = &self.trace;
        let (tokens, sums, rounds) = match back {
            Some((back, since)) => {
                // A round asked before `since` is as it was.
                let kept = trace.rounds.partition_point(|r| r.request_len < since);
                let mut sums = back.so_far.unwrap_or_default();
                sums.truncate(kept + 1);
                let tokens = loopdbg_formats::usage::regrow(back.tokens, trace, since, prices);
                (tokens, sums, back.rounds.map(|r| (r, since)))
            }
            None => (
                loopdbg_formats::usage::of_trace_kept(trace, prices),
                Vec::new(),
                None,
            ),
        };
        let (tokens, tally) = tokens.unzip();
        let (analysis, rounds) = loopdbg_lesson::checks::RunAnalysis::grown(trace, rounds);
        self.derived = Some(Box::new(Derived {
            analysis,
            tokens,
            tally,
            rounds: Some(rounds),
            placed: None,
            so_far: Some(crate::app::tokens_so_far(trace, prices, sums)),
        }));
    }

    /// The trace and what was derived of it that grows with it, as the
    /// screen gives back a picture it took down
    /// ([`Displaced::into_parts`](crate::app::Displaced::into_parts)):
    /// for a maker that keeps its pictures itself (a benchmark).
    pub fn into_parts(self) -> (loopdbg_engine::Trace, crate::app::DerivedBack) {
        let back = match self.derived {
            Some(derived) => crate::app::DerivedBack {
                tokens: derived.tokens.zip(derived.tally),
                rounds: derived.rounds,
                placed: derived.placed,
                so_far: derived.so_far,
            },
            None => crate::app::DerivedBack::default(),
        };
        (self.trace, back)
    }

    /// A one-message screen saying what the view waits for.
    pub fn placeholder(text: String, title: &str) -> LiveUpdate {
        let doc = serde_json::json!([{"role": "user", "content": text}]);
        let format = loopdbg_formats::provider::Format::Anthropic;
        let conv = read(&doc, Source::Provider(format))
            // A plain user message always reads; were it not to, the
            // screen keeps its title.
            .unwrap_or_else(|_| Conversation::new(Source::Provider(format)));
        let mut update = LiveUpdate::of(&conv, &[], title, None);
        update.waiting = Some(text);
        update
    }

    /// What a large file's first frame says while it is read whole (no
    /// newest part can stand for `what`, a pinned conversation): `title`
    /// heads it. Gives the words too, for the notice line.
    pub fn reading(origin: &str, what: &str, bytes: u64, title: &str) -> (LiveUpdate, String) {
        let mib = bytes >> 20;
        let words =
            format!("reading {what} of {origin} ({mib} MiB): the whole file first; q quits");
        (LiveUpdate::placeholder(format!("({words})"), title), words)
    }

    /// What the proxy's screen shows before the first request arrives.
    pub fn no_traffic_yet(addr: &str) -> LiveUpdate {
        LiveUpdate::placeholder(
            format!(
                "(waiting for the first request: point the agent at http://{addr}, e.g. ANTHROPIC_BASE_URL=http://{addr} or OPENAI_BASE_URL=http://{addr}/v1)"
            ),
            &format!("live: no traffic yet — point the agent at http://{addr}"),
        )
    }

    /// The screen while the first exchange (number `seq`, `what` is its
    /// `METHOD /path`) is still in flight: a long stream is traffic, not
    /// "no traffic yet".
    pub fn first_in_flight(seq: u64, what: &str, addr: &str) -> LiveUpdate {
        LiveUpdate::placeholder(
            format!("(in flight: #{seq} {what}; its conversation shows here when its answer ends)"),
            &format!("live: request #{seq} in flight through http://{addr}"),
        )
    }

    /// A followed file that holds no conversation yet.
    pub fn no_conversation_yet(origin: &str) -> LiveUpdate {
        LiveUpdate::placeholder(
            format!("(waiting for {origin} to hold a conversation)"),
            "follow: nothing yet",
        )
    }

    /// A followed file that is not there yet: the follower was started
    /// before the agent (or the proxy) that will write it, as it may be.
    pub fn no_file_yet(origin: &str) -> LiveUpdate {
        LiveUpdate::placeholder(
            format!(
                "(waiting for {origin} to be created: start the agent or the proxy that writes it)"
            ),
            "follow: waiting for the file",
        )
    }
}

/// The header's words for what is in flight: `count` exchanges, the
/// newest numbered `seq`, `what` its `METHOD /path`.
pub fn in_flight_words(count: usize, newest: Option<&(u64, String)>) -> Option<String> {
    let (seq, what) = newest?;
    match count {
        0 => None,
        1 => Some(format!("#{seq} {what} in flight")),
        n => Some(format!("{n} in flight, newest #{seq} {what}")),
    }
}
