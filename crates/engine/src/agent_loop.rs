//! The loop itself: runs a session under a strategy and records a [`Trace`].
//!
//! Pure and deterministic: no terminal, no clock, no files. The same session
//! and strategy always give the same trace. Loop semantics live here and
//! nowhere else; the TUI and the CLI only show what this records.
//!
//! One round is `Request → Reply → Extract → Execute* → Close? → Append* → Decide`.
//! The calls of a turn run concurrently in virtual time ([`crate::schedule`]);
//! their results are appended in call order whatever order they end in. Calls
//! left without a result (dropped, cancelled, interrupted) are closed by the
//! strategy's [`Closure`]: left dangling, answered with placeholders, or
//! stripped from the reply before it joins the history.
//! Under the careless stop rules (`content`, `finish-reason`, `tool-calls`)
//! tools run before the stop check, exactly as seed 001's table shows. Under
//! `robust`, a `length` or `content_filter` reply ends the run with an error
//! before it joins the history, and a reply without calls ends the run
//! before anything runs.

use std::ops::ControlFlow;

use crate::executor::{TableExecutor, ToolExecutor};
use crate::ledger::PairingIndex;
use crate::message::Message;
use crate::message::{FinishReason, Reply, ToolCall};
use crate::schedule::{self, CallEnd, CallPlan, Ending};
use crate::session::{Fallback, Rule, Session};
use crate::strategy::{Closure, Extract, StopRule, Strategy};
use crate::stub::{CallIndex, reply_for};
use crate::trace::ToolOutcome;
use crate::trace::{
    CallStatus, Decision, End, Execution, FallbackRecord, Origin, Outcome, Phase, Round, Step,
    StepEvent, Trace, Violation,
};

/// The placeholder a dropped call gets under `synthesize`; one shared value,
/// since a spinning loop drops the same call thousands of times.
static NOT_EXECUTED: std::sync::LazyLock<crate::message::Json> = std::sync::LazyLock::new(|| {
    crate::message::Json::new(serde_json::Value::String(
        "not executed: the loop took only the first tool call".into(),
    ))
});

/// Runs `session` under `strategy` with the session's lookup tables.
pub fn run(session: &Session, strategy: &Strategy) -> Trace {
    run_with(session, strategy, &TableExecutor::new(session, run))
}

/// Runs `session` under `strategy`, executing calls with `executor`.
pub fn run_with(session: &Session, strategy: &Strategy, executor: &dyn ToolExecutor) -> Trace {
    let mut rec = Recorder {
        session,
        strategy,
        executor,
        messages: vec![Message::user(&session.user)],
        steps: Vec::new(),
        rounds: Vec::new(),
        violations: Vec::new(),
        calls: CallIndex::default(),
    };
    rec.calls.push(&rec.messages[0]);
    let outcome = rec.drive();
    rec.step(Phase::Done, outcome.requests.max(1), None);
    let mut trace = Trace {
        origin: Origin::Run,
        strategy: strategy.clone(),
        messages: rec.messages,
        steps: rec.steps,
        rounds: rec.rounds,
        violations: rec.violations,
        outcome,
        continues: None,
        unverifiable: Vec::new(),
        pairing: PairingIndex::default(),
    };
    trace.pairing = PairingIndex::new(&trace.messages);
    count_unpaired(&mut trace);
    trace
}

/// Fills [`Step::unpaired`] in one pass over the history (a run does it
/// itself; a replayed trace, built outside the loop, calls it once).
/// Unpaired = unanswered in the history minus those in flight; a step's
/// in-flight set depends only on its round, its phase kind and (during
/// Append) how many results are in, so consecutive Execute steps of a wide
/// turn share one count instead of recomputing it per call.
pub fn count_unpaired(trace: &mut Trace) {
    count_from(trace, 0, CallIndex::default(), 0);
}

/// [`count_unpaired`] for the steps from `first` on, those before it
/// counted already (a replay grown at its end): the pairing facts where
/// they start are the open turn's calls, read again, and the unanswered
/// count the last counted step implies. Costs the steps counted.
pub fn count_unpaired_from(trace: &mut Trace, first: usize) {
    let Some(last) = first.checked_sub(1) else {
        return count_unpaired(trace);
    };
    let seen = trace.steps[last].history_len;
    // Results answer only the calls of the latest turn: from it on, a
    // fresh index pairs as the whole history's did.
    let turn = trace.messages[..seen]
        .iter()
        .rposition(|m| m.role == crate::message::Role::Assistant)
        .unwrap_or(0);
    let mut index = CallIndex::default();
    for message in &trace.messages[turn..seen] {
        index.push(message);
    }
    let in_flight: ahash::AHashSet<&str> = trace.in_flight_iter(last).collect();
    // The last count is the unanswered calls less those in flight.
    let unanswered = trace.steps[last].unpaired + index.open_unanswered_in(&in_flight);
    index.set_unanswered(unanswered);
    count_from(trace, first, index, seen);
}

/// Counts the steps from `first` on, `index` holding the pairing facts of
/// the first `seen` messages.
fn count_from(trace: &mut Trace, first: usize, mut index: CallIndex, mut seen: usize) {
    let mut counts = Vec::with_capacity(trace.steps.len() - first);
    let mut in_flight: ahash::AHashSet<&str> = ahash::AHashSet::new();
    // (round, phase kind, results in), history length, count.
    type Seen = ((u32, u8, Option<usize>), usize, usize);
    let mut last: Option<Seen> = None;
    for k in first..trace.steps.len() {
        let step = &trace.steps[k];
        let len = step.history_len;
        for message in &trace.messages[seen.min(len)..len] {
            index.push(message);
        }
        seen = seen.max(len);
        let class = match step.phase {
            Phase::Reply => (step.round, 0, None),
            Phase::Extract | Phase::Execute => (step.round, 1, None),
            Phase::Close => (step.round, 2, None),
            Phase::Append => (step.round, 3, step.execution),
            _ => (step.round, 4, None),
        };
        if let Some((key, at_len, count)) = last
            && key == class
            && at_len == len
        {
            counts.push(count);
            continue;
        }
        in_flight.clear();
        in_flight.extend(trace.in_flight_iter(k));
        let count = index.unanswered_len() - index.open_unanswered_in(&in_flight);
        counts.push(count);
        last = Some((class, len, count));
    }
    for (step, count) in trace.steps[first..].iter_mut().zip(counts) {
        step.unpaired = count;
    }
}

/// A phase either hands the loop on or ends the run with its outcome.
type Next<T = ()> = ControlFlow<Outcome, T>;

/// How the Execute phase ended, for the phases after it.
struct Batch {
    /// The user interrupted the turn: the run ends after Append.
    interrupted: bool,
    /// Virtual time when the last call of the turn ended.
    ended_ms: u64,
}

/// Records one run. Each phase the screen shows is one method below, in the
/// order [`Recorder::round`] calls them.
struct Recorder<'a> {
    session: &'a Session,
    strategy: &'a Strategy,
    executor: &'a dyn ToolExecutor,
    messages: Vec<Message>,
    steps: Vec<Step>,
    rounds: Vec<Round>,
    violations: Vec<Violation>,
    calls: CallIndex,
}

impl Recorder<'_> {
    /// The loop: rounds until a phase ends the run.
    fn drive(&mut self) -> Outcome {
        let behavior = &self.strategy.behavior;
        let Some(rules) = self.session.model.get(behavior) else {
            return Outcome {
                end: End::Error,
                detail: format!("the session has no stub behavior `{behavior}`"),
                final_text: None,
                requests: 0,
            };
        };
        for number in 1..=self.strategy.max_rounds {
            if let ControlFlow::Break(outcome) = self.round(number, rules) {
                return outcome;
            }
        }
        unreachable!("Decide ends the run at the round limit")
    }

    /// One round, phase by phase, as the debugger's timeline shows it.
    fn round(&mut self, number: u32, rules: &[Rule]) -> Next {
        self.request(number);
        let reply = self.reply(number, rules)?;
        self.extract(number, &reply)?;
        let batch = self.execute(number, &reply);
        self.close(number, &reply, batch.ended_ms);
        self.append(number);
        self.decide(number, &reply, batch.interrupted)
    }

    /// Request: the history goes to the model. Seed 000's set check (ids of
    /// every tool_use minus ids of every tool_result) runs first; a non-empty
    /// difference is what a provider answers with a 400.
    fn request(&mut self, number: u32) {
        let unanswered = Unanswered::of(self.calls.unanswered());
        let violation = (unanswered.total > 0).then(|| {
            self.violations.push(Violation {
                round: number,
                step: self.steps.len(),
                message: format!(
                    "a provider would reject this request: 400 (tool_use without tool_result: {})",
                    unanswered.words()
                ),
                unpaired: unanswered.total,
                ids: unanswered.listed.into_iter().map(|(id, _)| id).collect(),
            });
            self.violations.len() - 1
        });
        self.rounds.push(Round {
            number,
            request_len: self.messages.len(),
            violation,
            rule: 0,
            reply: Reply::default(),
            reply_message: None,
            taken: Vec::new(),
            dropped: Vec::new(),
            executions: Vec::new(),
            identical_run: 1,
            decision: None,
            fallback: None,
            stripped: Vec::new(),
        });
        self.step(Phase::Request, number, None);
    }

    /// Reply: the stub model answers (through a broken stream and its retry
    /// when the session says so). Under `robust` a reply cut by `max_tokens`
    /// or withheld by a filter ends the run before it joins the history.
    fn reply(&mut self, number: u32, rules: &[Rule]) -> Next<Reply> {
        let Some((rule, stub_reply)) = reply_for(rules, number, &self.calls) else {
            self.rounds.pop();
            return ControlFlow::Break(Outcome {
                end: End::Unscripted,
                detail: format!(
                    "the stub model has no scripted reply for round {number} (no rule of `{}` matches this state; E at this round's Request or at the end scripts one)",
                    self.strategy.behavior
                ),
                final_text: None,
                requests: number,
            });
        };
        let mut reply = stub_reply.clone();
        let mut fallback = None;
        if let Some(f) = self.session.faults.fallback.filter(|f| f.round == number)
            && !reply.tool_calls.is_empty()
        {
            fallback = Some(self.stream_breaks(number, &reply, f));
            // The retry is a new response: its calls carry new ids.
            for call in &mut reply.tool_calls {
                call.id = format!("{}_retry", call.id).into();
            }
        }
        let previous = self.rounds.len().checked_sub(2).map(|k| &self.rounds[k]);
        let identical_run = match previous {
            Some(prev) if prev.reply == *stub_reply => prev.identical_run + 1,
            _ => 1,
        };
        let finish = reply.finish_reason();
        let refused = self.strategy.stop == StopRule::Robust
            && matches!(finish, FinishReason::Length | FinishReason::ContentFilter);
        // Under `strip` the reply is held until the loop knows which calls
        // get a result; everyone else appends it as it arrives.
        let reply_message = (!refused && !self.holds(&reply))
            .then(|| self.push_message(Message::assistant(&reply)));
        let retried = fallback.is_some();
        let round = self.current_round();
        round.rule = rule;
        round.reply = reply.clone();
        round.reply_message = reply_message;
        round.identical_run = identical_run;
        round.fallback = fallback;
        self.step_at(
            Phase::Reply,
            number,
            None,
            0,
            retried.then_some(StepEvent::Retried),
        );
        if !refused {
            return ControlFlow::Continue(reply);
        }
        let detail = match finish {
            FinishReason::Length => format!(
                "round {number}: the reply was cut by max_tokens (finish_reason length); raise the output limit and retry"
            ),
            _ => format!(
                "round {number}: the reply was withheld by a content filter (finish_reason content_filter); change the input, do not retry as is"
            ),
        };
        self.record_decision(number, true, format!("error: {detail}"));
        ControlFlow::Break(Outcome {
            end: End::Error,
            detail,
            final_text: None,
            requests: number,
        })
    }

    /// Extract: which of the reply's calls the loop takes. `first` is the
    /// one-line bug of seed 000: every call after the first is dropped.
    fn extract(&mut self, number: u32, reply: &Reply) -> Next {
        let n_calls = reply.tool_calls.len();
        let taken = match self.strategy.extract {
            Extract::All => n_calls,
            Extract::First => n_calls.min(1),
        };
        let round = self.current_round();
        round.taken = (0..taken).collect();
        round.dropped = (taken..n_calls).collect();
        self.step(Phase::Extract, number, None);
        if self.strategy.stop == StopRule::Robust && n_calls == 0 {
            self.record_decision(number, true, "no tool calls: the model is done".into());
            return ControlFlow::Break(Outcome {
                end: End::ModelDone,
                detail: format!("round {number}: no tool calls, the loop ends normally"),
                final_text: reply.text.as_deref().map(str::to_string),
                requests: number,
            });
        }
        ControlFlow::Continue(())
    }

    /// Execute: the taken calls run concurrently in virtual time; one step
    /// per call, in the order they end. Dropped calls get a record only when
    /// the closure policy will answer them.
    fn execute(&mut self, number: u32, reply: &Reply) -> Batch {
        let interrupt_at = self
            .strategy
            .interrupt
            .filter(|i| i.round == number)
            .map(|i| i.at_ms);
        let (taken, dropped) = {
            let round = self.current_round();
            (round.taken.clone(), round.dropped.clone())
        };
        let plans: Vec<CallPlan> = taken
            .iter()
            .map(|&i| self.executor.plan(&reply.tool_calls[i]))
            .collect();
        let ends = schedule::run_batch(&plans, interrupt_at);
        let mut executions: Vec<Execution> = Vec::with_capacity(reply.tool_calls.len());
        for (slot, &i) in taken.iter().enumerate() {
            let end = ends
                .iter()
                .find(|e| e.index == slot)
                .copied()
                .unwrap_or(CallEnd {
                    index: slot,
                    at_ms: 0,
                    ending: Ending::Finished,
                });
            executions.push(self.execution(i, &reply.tool_calls[i], end));
        }
        if self.strategy.closure == Closure::Synthesize {
            for &i in &dropped {
                let call = &reply.tool_calls[i];
                executions.push(Execution {
                    call: i,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                    outcome: ToolOutcome::loop_error_shared(
                        NOT_EXECUTED.clone(),
                        "dropped by the loop's extraction",
                    ),
                    message: None,
                    status: CallStatus::Dropped,
                    ended_ms: 0,
                    synthetic: true,
                });
            }
        }
        executions.sort_by_key(|e| e.call);
        self.current_round().executions = executions;
        for end in &ends {
            let call = taken[end.index];
            let exec = self
                .current_round()
                .executions
                .iter()
                .position(|e| e.call == call);
            let event = (end.ending == Ending::Interrupted).then_some(StepEvent::Interrupted);
            self.step_at(Phase::Execute, number, exec, end.at_ms, event);
        }
        Batch {
            interrupted: ends.iter().any(|e| e.ending == Ending::Interrupted),
            ended_ms: ends.iter().map(|e| e.at_ms).max().unwrap_or(0),
        }
    }

    /// What one call's ending means: a tool outcome, or the loop's own error
    /// for a call that never returned.
    fn execution(&self, index: usize, call: &ToolCall, end: CallEnd) -> Execution {
        let (status, outcome) = match end.ending {
            Ending::Finished => (CallStatus::Finished, self.executor.execute(call)),
            Ending::Failed => (CallStatus::Failed, self.executor.execute(call)),
            Ending::TimedOut => (
                CallStatus::TimedOut,
                ToolOutcome::loop_error(
                    format!("`{}` timed out after {} ms", call.name, end.at_ms),
                    "timed out",
                ),
            ),
            Ending::Cancelled => (
                CallStatus::Cancelled,
                ToolOutcome::loop_error(
                    "cancelled: sibling failed".into(),
                    "cancelled: a sibling failed",
                ),
            ),
            Ending::Interrupted => (
                CallStatus::Interrupted,
                ToolOutcome::loop_error("interrupted by user".into(), "interrupted by the user"),
            ),
        };
        Execution {
            call: index,
            id: call.id.clone(),
            name: call.name.clone(),
            args: call.args.clone(),
            outcome,
            message: None,
            status,
            ended_ms: end.at_ms,
            synthetic: !status.has_result(),
        }
    }

    /// Close: what happens to the calls left without a result. `leave` does
    /// nothing (they dangle); `synthesize` answers them in Append; `strip`
    /// removes them from the held reply, which joins the history only now.
    fn close(&mut self, number: u32, reply: &Reply, ended_ms: u64) {
        let holds = self.holds(reply);
        let closure = self.strategy.closure;
        let round = self.current_round();
        let unanswered: Vec<usize> = round
            .executions
            .iter()
            .filter(|e| !e.status.has_result())
            .map(|e| e.call)
            .collect();
        match closure {
            // Leaving is a choice too: when a call has no result (dropped by
            // `first`, interrupted, lost), the Close step shows it at the
            // moment it is made, before the next request carries the gap.
            Closure::Leave => {
                if !unanswered.is_empty() || !round.dropped.is_empty() {
                    self.step_at(Phase::Close, number, None, ended_ms, None);
                }
            }
            Closure::Synthesize => {
                if !unanswered.is_empty() {
                    self.step_at(Phase::Close, number, None, ended_ms, None);
                }
            }
            Closure::Strip if holds => {
                let mut stripped: Vec<usize> = unanswered
                    .into_iter()
                    .chain(round.dropped.iter().copied())
                    .collect();
                stripped.sort();
                let mut kept = round.reply.clone();
                kept.tool_calls = std::mem::take(&mut kept.tool_calls)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !stripped.contains(i))
                    .map(|(_, c)| c)
                    .collect();
                round.stripped = stripped;
                let at = (kept.text.is_some() || !kept.tool_calls.is_empty())
                    .then(|| self.push_message(Message::assistant(&kept)));
                self.current_round().reply_message = at;
                self.step_at(Phase::Close, number, None, ended_ms, None);
            }
            Closure::Strip => {}
        }
    }

    /// Append: one tool message per result, in call order whatever order the
    /// calls ended in. A result that comes back for a discarded stream's id
    /// is rejected, not appended.
    fn append(&mut self, number: u32) {
        let synthesize = self.strategy.closure == Closure::Synthesize;
        for e in 0..self.current_round().executions.len() {
            let ex = &self.current_round().executions[e];
            if !ex.status.has_result() && !synthesize {
                continue;
            }
            let msg = Message::tool_result(
                ex.id.clone(),
                ex.outcome.content.clone(),
                ex.outcome.is_error,
            );
            let at = self.push_message(msg);
            self.current_round().executions[e].message = Some(at);
            self.step(Phase::Append, number, Some(e));
        }
        let late = self
            .current_round()
            .fallback
            .as_ref()
            .map(|f| f.rejected.clone())
            .unwrap_or_default();
        for (_, at_ms) in late {
            self.step_at(
                Phase::Append,
                number,
                None,
                at_ms,
                Some(StepEvent::LateResultRejected),
            );
        }
    }

    /// Decide: stop or ask again, by the strategy's stop rule. An interrupt
    /// ends the turn; the round limit ends the run.
    fn decide(&mut self, number: u32, reply: &Reply, interrupted: bool) -> Next {
        if interrupted {
            let detail = format!("round {number}: interrupted by the user during execution");
            self.record_decision(number, true, format!("the user interrupted: {detail}"));
            return ControlFlow::Break(Outcome {
                end: End::Error,
                detail,
                final_text: None,
                requests: number,
            });
        }
        let rule = self.strategy.stop;
        let final_text = reply.text.as_deref().map(str::to_string);
        if let Some(reason) = stop_reason(rule, reply) {
            self.record_decision(number, true, reason.clone());
            return ControlFlow::Break(Outcome {
                end: End::ModelDone,
                detail: format!("round {number}: {reason}"),
                final_text,
                requests: number,
            });
        }
        if number == self.strategy.max_rounds {
            let robust = rule == StopRule::Robust;
            let detail = if robust {
                format!(
                    "ran {number} rounds without finishing; robust treats the round limit as an error"
                )
            } else {
                format!("round limit {number} reached without convergence")
            };
            self.record_decision(number, true, detail.clone());
            return ControlFlow::Break(Outcome {
                end: End::MaxRounds,
                detail,
                final_text: if robust { None } else { final_text },
                requests: number,
            });
        }
        self.record_decision(number, false, continue_reason(rule, reply));
        ControlFlow::Continue(())
    }

    /// Under `strip` a reply with calls waits for Close before it joins the
    /// history, so the history stays append-only.
    fn holds(&self, reply: &Reply) -> bool {
        self.strategy.closure == Closure::Strip && !reply.tool_calls.is_empty()
    }

    fn step(&mut self, phase: Phase, round: u32, execution: Option<usize>) {
        self.step_at(phase, round, execution, 0, None);
    }

    fn step_at(
        &mut self,
        phase: Phase,
        round: u32,
        execution: Option<usize>,
        time_ms: u64,
        event: Option<StepEvent>,
    ) {
        self.steps.push(Step {
            phase,
            round,
            history_len: self.messages.len(),
            execution,
            unpaired: 0,
            time_ms,
            event,
        });
    }

    fn push_message(&mut self, message: Message) -> usize {
        self.calls.push(&message);
        self.messages.push(message);
        self.messages.len() - 1
    }

    #[allow(
        clippy::expect_used,
        reason = "every phase is recorded after its round begins"
    )]
    fn current_round(&mut self) -> &mut Round {
        self.rounds
            .last_mut()
            .expect("a round is recorded before its phases")
    }

    fn record_decision(&mut self, round: u32, stop: bool, reason: String) {
        if let Some(r) = self.rounds.last_mut() {
            r.decision = Some(Decision { stop, reason });
        }
        self.step(Phase::Decide, round, None);
    }

    /// Seed 002's streaming fallback: the stream breaks after some tool_use
    /// blocks arrived and the streaming executor started them; the loop
    /// discards that executor, so its results, when they come in, are
    /// rejected instead of appended with their stale ids.
    fn stream_breaks(&mut self, number: u32, reply: &Reply, fault: Fallback) -> FallbackRecord {
        let partial: Vec<ToolCall> = reply
            .tool_calls
            .iter()
            .take(fault.after_calls.max(1))
            .cloned()
            .collect();
        self.step_at(
            Phase::Reply,
            number,
            None,
            fault.at_ms,
            Some(StepEvent::StreamBroke),
        );
        let plans: Vec<CallPlan> = partial.iter().map(|c| self.executor.plan(c)).collect();
        let ends = schedule::run_batch(&plans, None);
        let rejected = ends
            .iter()
            .map(|e| (partial[e.index].id.clone(), e.at_ms.max(fault.at_ms)))
            .collect();
        FallbackRecord {
            partial,
            broke_at_ms: fault.at_ms,
            rejected,
        }
    }
}

/// `Some(reason)` when `rule` ends the loop after this reply's tools ran.
fn stop_reason(rule: StopRule, reply: &Reply) -> Option<String> {
    match rule {
        StopRule::Content => reply
            .has_text()
            .then(|| "the reply has non-empty text: the loop takes it as the answer".to_string()),
        StopRule::FinishReason => (reply.finish_reason() == FinishReason::Stop)
            .then(|| "finish_reason is stop: the loop ends".to_string()),
        StopRule::ToolCalls | StopRule::Robust => reply
            .tool_calls
            .is_empty()
            .then(|| "no tool calls: the loop ends".to_string()),
    }
}

fn continue_reason(rule: StopRule, reply: &Reply) -> String {
    match rule {
        StopRule::Content => match &reply.text {
            None => "text is null: no answer yet, ask again".into(),
            Some(_) => "text is empty: no answer yet, ask again".into(),
        },
        StopRule::FinishReason => format!(
            "finish_reason is {}, not stop: ask again",
            reply.finish_reason().as_str()
        ),
        StopRule::ToolCalls | StopRule::Robust => format!(
            "{} tool call(s): send the results and ask again",
            reply.tool_calls.len()
        ),
    }
}

/// The calls without a result when a request is sent, said in bounded
/// space: a loop that leaves ids unpaired carries all of them in every
/// later request, and naming every one at every request made a run's
/// memory grow with the square of its rounds (issue 23, item 11).
struct Unanswered {
    /// The first [`crate::trace::LISTED_IDS`] distinct ids, with how many
    /// calls carry each.
    listed: Vec<(String, usize)>,
    /// Calls whose id is not listed.
    unlisted: usize,
    /// Every call without a result.
    total: usize,
}

impl Unanswered {
    fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Unanswered {
        let mut u = Unanswered {
            listed: Vec::new(),
            unlisted: 0,
            total: 0,
        };
        for id in ids {
            u.total += 1;
            if let Some((_, n)) = u.listed.iter_mut().find(|(x, _)| x == id) {
                *n += 1;
            } else if u.listed.len() < crate::trace::LISTED_IDS {
                u.listed.push((id.to_string(), 1));
            } else {
                u.unlisted += 1;
            }
        }
        u
    }

    /// `call_s2 ×4999, call_s3 ×4999`, or the listed ids and how many
    /// more calls.
    fn words(&self) -> String {
        let mut words: Vec<String> = self
            .listed
            .iter()
            .map(|(id, n)| match n {
                1 => id.clone(),
                n => format!("{id} ×{n}"),
            })
            .collect();
        if self.unlisted > 0 {
            words.push(format!("… and {} more call(s)", self.unlisted));
        }
        words.join(", ")
    }
}
