//! The guided tour: the shipped sessions in the order that teaches the loop
//! (one tool and its two trips; two calls in one turn and what `first`
//! costs; the stop rules and a reply cut by `max_tokens`; an interrupt and
//! its closure; what closure hides), each with what to press and a
//! question answered from the screen. The right answers are computed from the engine's own runs, not
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
    /// The right answer, from the engine run under the stop's strategy.
    pub answer: fn(&Session, &Strategy) -> Answer,
    /// The step `press` asks the learner to reach, in the run on screen,
    /// so the screen can say when they are there (a newcomer overshot it).
    pub at: fn(&loopdbg_engine::trace::Trace) -> usize,
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

/// Stop 2: only the first call runs, and this stub's model then skips what
/// it did not get (the rate vanishes from the answer).
fn first_and_skip(s: &mut Strategy) {
    s.extract = Extract::First;
    s.behavior = "skip".into();
}

fn leave(s: &mut Strategy) {
    s.closure = Closure::Leave;
}

/// Stop 5: the same dropped call, closed by a placeholder.
fn first_and_synthesize(s: &mut Strategy) {
    s.extract = Extract::First;
    s.closure = Closure::Synthesize;
}

/// The stop's opening strategy: the session's own, then the stop's setup.
pub fn opening_strategy(stop: &Stop, session: &Session) -> Strategy {
    let mut strategy = Strategy::for_session(session);
    (stop.setup)(&mut strategy);
    strategy
}

/// Where round 2's request is in `trace` (the start when there is none).
fn second_request(trace: &loopdbg_engine::trace::Trace) -> usize {
    trace
        .steps
        .iter()
        .position(|s| s.phase == Phase::Request && s.round == 2)
        .unwrap_or(0)
}

/// The last step: where `G` goes.
fn last_step(trace: &loopdbg_engine::trace::Trace) -> usize {
    trace.steps.len().saturating_sub(1)
}

/// Stop 1: the messages the second request carries.
fn second_request_len(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    Answer::Number(trace.step(second_request(&trace)).history_len)
}

/// Stop 2: the id the provider would reject in the second request.
fn rejected_id(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    let k = second_request(&trace);
    Answer::Word(Ledger::of(trace.history_at(k), &[]).unpaired())
}

/// Stop 3: the stop rule that ends on the cut reply with an error, in round
/// 1, instead of spinning or taking it as the answer.
fn honest_stop_rule(session: &Session, strategy: &Strategy) -> Answer {
    let rules = [
        StopRule::Content,
        StopRule::FinishReason,
        StopRule::ToolCalls,
        StopRule::Robust,
    ];
    let words = rules
        .into_iter()
        .filter(|&stop| {
            let mut s = strategy.clone();
            s.stop = stop;
            let trace = loopdbg_engine::run(session, &s);
            trace.outcome.end == loopdbg_engine::trace::End::Error && trace.outcome.requests == 1
        })
        .map(|stop| stop.to_string())
        .collect();
    Answer::Word(words)
}

/// Stop 4: the id left without a result when the closure is `leave`.
fn dangling_at_end(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    let last = trace.len() - 1;
    Answer::Word(Ledger::of(trace.history_at(last), &[]).unpaired())
}

/// Stop 5: the number the answer states that no tool returned.
fn unsourced_number(session: &Session, strategy: &Strategy) -> Answer {
    let trace = loopdbg_engine::run(session, strategy);
    Answer::Word(crate::checks::numbers_no_tool_returned(&trace))
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

/// The tour, in order. Every text is whole on an 80×24 screen (a pty
/// test reads each one there): keep them short.
pub const STOPS: &[Stop] = &[
    Stop {
        session: "weather.json",
        title: "One tool, two trips",
        press: "the model asks for a tool (a tool_use); your loop runs it and sends back a tool_result. n steps one phase: step to round 2's Request",
        question: "How many messages does the second request carry?",
        lesson: "the second trip sends the whole history back: the prompt, the model's tool_use and the tool_result that pairs with it by id",
        setup: nothing,
        answer: second_request_len,
        at: second_request,
    },
    Stop {
        session: "weather_fx.json",
        title: "Two calls in one turn, and what `first` costs",
        press: "extraction is `first`: the loop runs only the first call. Step to round 2's Request and read the ids pane",
        question: "Which id would the provider reject in the second request?",
        lesson: "every tool_use needs its tool_result: a real provider answers 400, and this model just drops the rate (G shows it). Now press e (run every call) and G: the rate is back",
        setup: first_and_skip,
        answer: rejected_id,
        at: second_request,
    },
    Stop {
        session: "stop_truncated.json",
        title: "Stop rules, and a reply cut by max_tokens",
        press: "s cycles the stop rule; G shows how each run ends",
        question: "Under which stop rule does the run end in round 1 with an error, neither spinning nor taking the cut reply as the answer?",
        lesson: "a reply cut by max_tokens is neither a tool call nor an answer: `robust` checks finish_reason and stops with an error you can act on",
        setup: nothing,
        answer: honest_stop_rule,
        at: last_step,
    },
    Stop {
        session: "fault_interrupt.json",
        title: "An interrupt, and closing what it left open",
        press: "the user interrupts while a tool runs; the closure is `leave`. Press G and read the ids pane",
        question: "Which id is left without a tool_result when the closure is `leave`?",
        lesson: "after an interrupt every tool_use must still be closed, or the next request is a 400; Claude Code synthesizes an error result for each. p cycles the closure",
        setup: leave,
        answer: dangling_at_end,
        at: last_step,
    },
    Stop {
        session: "weather_fx.json",
        title: "What closure hides",
        press: "`first` drops get_fx_rate again, but the closure is `synthesize`: a placeholder closes it, so no 400. Press G and read the warnings",
        question: "Which number does the answer state that no tool returned?",
        lesson: "closure mends the history, not the loop: no 400 warns you, and the model states a rate no tool gave. Mend the cause (e: run every call)",
        setup: first_and_synthesize,
        answer: unsourced_number,
        at: last_step,
    },
];

/// What the tour says once every stop is solved: where to go with a loop
/// of one's own.
pub const WHAT_NEXT: &[&str] = &[
    "loopdbg demo: a buggy agent behind the proxy, offline, no key",
    "loopdbg proxy --upstream URL: your own agent's traffic, live",
    "loopdbg check FILE: will the provider refuse this request or log?",
    "loopdbg doctor FILE --write: repair a session that will not resume",
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

    /// Every stop has an answer the engine computes, and the ones the
    /// lessons name are what the shipped sessions do.
    #[test]
    fn every_stop_is_answerable() {
        let sessions = sessions().expect("the built-in sessions parse");
        let answers: Vec<Answer> = STOPS
            .iter()
            .zip(&sessions)
            .map(|(stop, session)| (stop.answer)(session, &opening_strategy(stop, session)))
            .collect();
        assert_eq!(answers[1], Answer::Word(vec!["toolu_f1".into()]));
        assert!(answers[2].accepts("robust"), "{:?}", answers[2]);
        assert_eq!(answers[4], Answer::Word(vec!["7.12".into()]));
        for (stop, answer) in STOPS.iter().zip(&answers) {
            assert!(
                !matches!(answer, Answer::Word(w) if w.is_empty()),
                "{}: no answer",
                stop.title
            );
        }
    }

    /// Stop 2's lesson says the rate vanishes and `e` brings it back: both
    /// are what the engine does.
    #[test]
    fn the_rate_vanishes_under_first_and_returns_with_all() {
        let sessions = sessions().expect("the built-in sessions parse");
        let mut strategy = opening_strategy(&STOPS[1], &sessions[1]);
        let vanished = loopdbg_engine::run(&sessions[1], &strategy);
        let text = vanished.outcome.final_text.unwrap_or_default();
        assert!(!text.contains("7.12"), "{text}");
        strategy.extract = Extract::All;
        let fixed = loopdbg_engine::run(&sessions[1], &strategy);
        let text = fixed.outcome.final_text.unwrap_or_default();
        assert!(text.contains("7.12"), "{text}");
    }
}
