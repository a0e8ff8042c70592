//! The guided tour: the shipped sessions in the order that teaches the loop
//! (one tool and its two trips; two calls in one turn and what `first`
//! costs; the stop rules and a reply cut by `max_tokens`; a fault and its
//! closure), each with what to press and a question answered from the
//! screen. The right answers are computed from the engine's own runs, not
//! written down, so they can never drift from what the screen shows.

use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::session::Session;
use loopdbg_engine::strategy::{Closure, Extract, StopRule, Strategy};
use loopdbg_engine::trace::Phase;

/// One stop of the tour.
pub struct Stop {
    /// The shipped session it opens (`sessions/NAME`).
    pub session: &'static str,
    /// What this stop is about.
    pub title: &'static str,
    /// What to press.
    pub press: &'static str,
    /// The question, answered from the screen.
    pub question: &'static str,
    /// What the learner should take away, shown once answered.
    pub lesson: &'static str,
    /// The strategy the stop opens with.
    pub setup: fn(&mut Strategy),
    /// The right answer, from the engine.
    pub answer: fn(&Session) -> Answer,
}

/// A right answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A count.
    Number(usize),
    /// A word or id; any of these is right (compared without case).
    Word(Vec<String>),
}

impl Answer {
    /// True when `typed` is right.
    pub fn accepts(&self, typed: &str) -> bool {
        let typed = typed
            .trim()
            .trim_matches(|c| c == '`' || c == '"' || c == '\'');
        match self {
            Answer::Number(n) => typed.parse::<usize>() == Ok(*n),
            Answer::Word(words) => words.iter().any(|w| w.eq_ignore_ascii_case(typed)),
        }
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Number(n) => write!(f, "{n}"),
            Answer::Word(w) => write!(f, "{}", w.first().map_or("", String::as_str)),
        }
    }
}

fn nothing(_: &mut Strategy) {}

fn first(s: &mut Strategy) {
    s.extract = Extract::First;
}

fn leave(s: &mut Strategy) {
    s.closure = Closure::Leave;
}

/// Stop 1: the messages the second request carries.
fn second_request_len(session: &Session) -> Answer {
    let trace = loopdbg_engine::run(session, &Strategy::for_session(session));
    let k = trace
        .steps
        .iter()
        .position(|s| s.phase == Phase::Request && s.round == 2)
        .unwrap_or(0);
    Answer::Number(trace.step(k).history_len)
}

/// Stop 2: the id the provider would reject in the second request.
fn rejected_id(session: &Session) -> Answer {
    let mut strategy = Strategy::for_session(session);
    first(&mut strategy);
    let trace = loopdbg_engine::run(session, &strategy);
    let k = trace
        .steps
        .iter()
        .position(|s| s.phase == Phase::Request && s.round == 2)
        .unwrap_or(0);
    Answer::Word(Ledger::of(trace.history_at(k), &[]).unpaired())
}

/// Stop 3: the stop rule that ends on the cut reply with an error, in round
/// 1, instead of spinning or taking it as the answer.
fn honest_stop_rule(session: &Session) -> Answer {
    let rules = [
        StopRule::Content,
        StopRule::FinishReason,
        StopRule::ToolCalls,
        StopRule::Robust,
    ];
    let words = rules
        .into_iter()
        .filter(|&stop| {
            let mut s = Strategy::for_session(session);
            s.stop = stop;
            let trace = loopdbg_engine::run(session, &s);
            trace.outcome.end == loopdbg_engine::trace::End::Error && trace.outcome.requests == 1
        })
        .map(|stop| stop.to_string())
        .collect();
    Answer::Word(words)
}

/// Stop 4: the id left without a result when the closure is `leave`.
fn dangling_under_leave(session: &Session) -> Answer {
    let mut s = Strategy::for_session(session);
    leave(&mut s);
    let trace = loopdbg_engine::run(session, &s);
    let last = trace.len() - 1;
    Answer::Word(Ledger::of(trace.history_at(last), &[]).unpaired())
}

/// The shipped sessions the tour's stops name, built in, so the tour
/// works from any folder on a fresh machine.
const BUILT_IN: &[(&str, &str)] = &[
    (
        "weather.json",
        include_str!("../../../sessions/weather.json"),
    ),
    (
        "weather_fx.json",
        include_str!("../../../sessions/weather_fx.json"),
    ),
    (
        "stop_truncated.json",
        include_str!("../../../sessions/stop_truncated.json"),
    ),
    (
        "fault_interrupt.json",
        include_str!("../../../sessions/fault_interrupt.json"),
    ),
];

/// Each stop's session, parsed from the built-in copies.
pub fn sessions() -> Result<Vec<Session>, loopdbg_engine::LoadError> {
    STOPS
        .iter()
        .map(|stop| {
            let text = BUILT_IN
                .iter()
                .find(|(name, _)| *name == stop.session)
                .map_or("", |(_, text)| *text);
            Session::parse(&format!("sessions/{}", stop.session), text)
        })
        .collect()
}

/// The tour, in order.
pub const STOPS: &[Stop] = &[
    Stop {
        session: "weather.json",
        title: "One tool, two trips",
        press: "a tool call is the model asking your code to run a function (a `tool_use` block); your loop runs it and sends back a `tool_result`. n steps one phase; step until the header says round 2 and `Request`",
        question: "How many messages does the second request carry?",
        lesson: "the second trip sends the whole history back: the prompt, the model's tool_use, and the tool_result that pairs with it",
        setup: nothing,
        answer: second_request_len,
    },
    Stop {
        session: "weather_fx.json",
        title: "Two calls in one turn, and what `first` costs",
        press: "extraction is `first` (content.find): step to round 2's `Request` and read the ids pane",
        question: "Which id would the provider reject in the second request?",
        lesson: "every tool_use needs its tool_result in the next message; a loop that runs only the first call leaves the second one dangling, and the provider answers 400",
        setup: first,
        answer: rejected_id,
    },
    Stop {
        session: "stop_truncated.json",
        title: "Stop rules, and a reply cut by max_tokens",
        press: "s cycles the stop rule; G shows how each run ends",
        question: "Under which stop rule does the run end in round 1 with an error, instead of spinning or taking the cut reply as the answer?",
        lesson: "a reply cut by max_tokens is neither a tool call nor an answer: `robust` checks finish_reason and stops with an error you can act on",
        setup: nothing,
        answer: honest_stop_rule,
    },
    Stop {
        session: "fault_interrupt.json",
        title: "A fault and its closure",
        press: "the closure is `leave`: press G and read the ids pane; then p cycles to synthesize and strip",
        question: "Which id is left without a tool_result when the closure is `leave`?",
        lesson: "after an interrupt every tool_use must still be closed (Claude Code synthesizes an error result), or the next request is rejected",
        setup: leave,
        answer: dangling_under_leave,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_accept_their_spellings() {
        let a = Answer::Word(vec!["toolu_f1".into()]);
        assert!(a.accepts(" TOOLU_F1 "));
        assert!(a.accepts("`toolu_f1`"));
        assert!(!a.accepts("toolu_w1"));
        assert!(Answer::Number(3).accepts("3"));
        assert!(!Answer::Number(3).accepts("three"));
    }
}
