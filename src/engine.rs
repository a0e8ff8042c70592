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

use crate::executor::{TableExecutor, ToolExecutor, ToolOutcome};
use crate::ledger::PairingIndex;
use crate::message::Message;
use crate::schedule::{self, CallEnd, CallPlan, Ending};
use crate::session::{Fallback, FinishReason, Reply, Session, ToolCall};
use crate::strategy::{Closure, Extract, StopRule, Strategy};
use crate::stub::{CallIndex, reply_for};
use crate::trace::{
    CallStatus, Decision, End, Execution, FallbackRecord, Outcome, Phase, Round, Step, StepEvent,
    Trace, Violation,
};

/// The placeholder a dropped call gets under `synthesize`; one shared value,
/// since a spinning loop drops the same call thousands of times.
static NOT_EXECUTED: std::sync::LazyLock<crate::session::Json> = std::sync::LazyLock::new(|| {
    crate::session::Json::new(serde_json::Value::String(
        "not executed: the loop took only the first tool call".into(),
    ))
});

/// Runs `session` under `strategy` with the session's lookup tables.
pub fn run(session: &Session, strategy: &Strategy) -> Trace {
    run_with(session, strategy, &TableExecutor::new(session))
}

/// Runs `session` under `strategy`, executing calls with `executor`.
pub fn run_with(session: &Session, strategy: &Strategy, executor: &dyn ToolExecutor) -> Trace {
    let mut rec = Recorder {
        messages: vec![Message::user(&session.user)],
        steps: Vec::new(),
        rounds: Vec::new(),
        violations: Vec::new(),
        calls: CallIndex::default(),
        runtime: None,
    };
    rec.calls.push(&rec.messages[0]);
    let outcome = rec.drive(session, strategy, executor);
    // Dropping a runtime from inside another (the debugger's) panics;
    // shutting it down in the background never blocks.
    if let Some(rt) = rec.runtime.take() {
        rt.shutdown_background();
    }
    rec.step(Phase::Done, outcome.requests.max(1), None);
    let mut trace = Trace {
        strategy: strategy.clone(),
        messages: rec.messages,
        steps: rec.steps,
        rounds: rec.rounds,
        violations: rec.violations,
        outcome,
        pairing: PairingIndex::default(),
    };
    trace.pairing = PairingIndex::new(&trace.messages);
    count_unpaired(&mut trace);
    trace
}

/// Fills [`Step::unpaired`] in one pass over the history.
pub(crate) fn count_unpaired(trace: &mut Trace) {
    let mut index = CallIndex::default();
    let mut seen = 0;
    for k in 0..trace.steps.len() {
        let len = trace.steps[k].history_len;
        for message in &trace.messages[seen..len] {
            index.push(message);
        }
        seen = seen.max(len);
        let unpaired = index
            .unanswered()
            .filter(|id| !trace.in_flight_iter(k).any(|f| f == *id))
            .count();
        trace.steps[k].unpaired = unpaired;
    }
}

struct Recorder {
    messages: Vec<Message>,
    steps: Vec<Step>,
    rounds: Vec<Round>,
    violations: Vec<Violation>,
    calls: CallIndex,
    /// Created on first need: most batches take no virtual time.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Recorder {
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

    fn append(&mut self, message: Message) -> usize {
        self.calls.push(&message);
        self.messages.push(message);
        self.messages.len() - 1
    }

    fn current_round(&mut self) -> &mut Round {
        self.rounds
            .last_mut()
            .expect("a round is recorded before its phases")
    }

    fn decide(&mut self, round: u32, stop: bool, reason: String) {
        if let Some(r) = self.rounds.last_mut() {
            r.decision = Some(Decision { stop, reason });
        }
        self.step(Phase::Decide, round, None);
    }

    /// Runs `plans` and returns their ends in time order.
    fn run_batch(&mut self, plans: &[CallPlan], interrupt_at: Option<u64>) -> Vec<CallEnd> {
        if !schedule::needs_clock(plans, interrupt_at) {
            return schedule::immediate(plans);
        }
        let rt = self.runtime.get_or_insert_with(schedule::virtual_runtime);
        schedule::run_batch(rt, plans, interrupt_at)
    }

    fn drive(
        &mut self,
        session: &Session,
        strategy: &Strategy,
        executor: &dyn ToolExecutor,
    ) -> Outcome {
        let Some(rules) = session.model.get(&strategy.behavior) else {
            return Outcome {
                end: End::Error,
                detail: format!("the session has no stub behaviour `{}`", strategy.behavior),
                final_text: None,
                requests: 0,
            };
        };
        let robust = strategy.stop == StopRule::Robust;
        for number in 1..=strategy.max_rounds {
            // Request: seed 000's set check runs before every request.
            let unanswered: Vec<String> = self.calls.unanswered().map(str::to_string).collect();
            let violation = (!unanswered.is_empty()).then(|| {
                self.violations.push(Violation {
                    round: number,
                    step: self.steps.len(),
                    message: format!(
                        "a provider would reject this request: 400 (tool_use without tool_result: {})",
                        unanswered.join(", ")
                    ),
                    ids: unanswered,
                });
                self.violations.len() - 1
            });
            let request_len = self.messages.len();
            self.step(Phase::Request, number, None);

            // Reply
            let Some((rule, stub_reply)) = reply_for(rules, number, &self.calls) else {
                return Outcome {
                    end: End::Error,
                    detail: format!("stub has no reply for round {number}"),
                    final_text: None,
                    requests: number,
                };
            };
            let mut reply = stub_reply.clone();
            let mut fallback = None;
            if let Some(f) = session.faults.fallback.filter(|f| f.round == number)
                && !reply.tool_calls.is_empty()
            {
                fallback = Some(self.stream_breaks(number, &reply, f, executor));
                // The retry is a new response: its calls carry new ids.
                for call in &mut reply.tool_calls {
                    call.id = format!("{}_retry", call.id).into();
                }
            }
            let identical_run = match self.rounds.last() {
                Some(prev) if prev.reply == *stub_reply => prev.identical_run + 1,
                _ => 1,
            };
            let finish = reply.finish_reason();
            let refused =
                robust && matches!(finish, FinishReason::Length | FinishReason::ContentFilter);
            // Under `strip` the reply is held until the loop knows which calls
            // get a result; everyone else appends it as it arrives.
            let hold = strategy.closure == Closure::Strip && !reply.tool_calls.is_empty();
            let reply_message =
                (!refused && !hold).then(|| self.append(Message::assistant(&reply)));
            let retried = fallback.is_some();
            self.rounds.push(Round {
                number,
                request_len,
                violation,
                rule,
                reply: reply.clone(),
                reply_message,
                taken: Vec::new(),
                dropped: Vec::new(),
                executions: Vec::new(),
                identical_run,
                decision: None,
                fallback,
                stripped: Vec::new(),
            });
            self.step_at(
                Phase::Reply,
                number,
                None,
                0,
                retried.then_some(StepEvent::Retried),
            );

            if refused {
                let detail = match finish {
                    FinishReason::Length => format!(
                        "round {number}: the reply was cut by max_tokens (finish_reason length); raise the output limit and retry"
                    ),
                    _ => format!(
                        "round {number}: the reply was withheld by a content filter (finish_reason content_filter); change the input, do not retry as is"
                    ),
                };
                self.decide(number, true, format!("error: {detail}"));
                return Outcome {
                    end: End::Error,
                    detail,
                    final_text: None,
                    requests: number,
                };
            }

            // Extract
            let n_calls = reply.tool_calls.len();
            let taken: Vec<usize> = match strategy.extract {
                Extract::All => (0..n_calls).collect(),
                Extract::First => (0..n_calls.min(1)).collect(),
            };
            let dropped: Vec<usize> = (taken.len()..n_calls).collect();
            let round = self.current_round();
            round.taken = taken.clone();
            round.dropped = dropped.clone();
            self.step(Phase::Extract, number, None);

            if robust && n_calls == 0 {
                self.decide(number, true, "no tool calls: the model is done".into());
                return Outcome {
                    end: End::ModelDone,
                    detail: format!("round {number}: no tool calls, the loop ends normally"),
                    final_text: reply.text.as_deref().map(str::to_string),
                    requests: number,
                };
            }

            // Execute: the taken calls run concurrently in virtual time.
            let interrupt_at = strategy
                .interrupt
                .filter(|i| i.round == number)
                .map(|i| i.at_ms);
            let plans: Vec<CallPlan> = taken
                .iter()
                .map(|&i| executor.plan(&reply.tool_calls[i]))
                .collect();
            let ends = self.run_batch(&plans, interrupt_at);
            let mut executions: Vec<Execution> = Vec::with_capacity(n_calls);
            for &i in &taken {
                let call = &reply.tool_calls[i];
                let slot = executions.len();
                let end = ends
                    .iter()
                    .find(|e| e.index == slot)
                    .copied()
                    .unwrap_or(CallEnd {
                        index: slot,
                        at_ms: 0,
                        ending: Ending::Finished,
                    });
                let (status, outcome) = match end.ending {
                    Ending::Finished | Ending::Failed => (
                        if end.ending == Ending::Failed {
                            CallStatus::Failed
                        } else {
                            CallStatus::Finished
                        },
                        executor.execute(call),
                    ),
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
                        ToolOutcome::loop_error(
                            "interrupted by user".into(),
                            "interrupted by the user",
                        ),
                    ),
                };
                executions.push(Execution {
                    call: i,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                    outcome,
                    message: None,
                    status,
                    ended_ms: end.at_ms,
                    synthetic: !status.has_result(),
                });
            }
            // Dropped calls only need a record when they will be answered.
            let answer_dropped = strategy.closure == Closure::Synthesize;
            for &i in dropped.iter().filter(|_| answer_dropped) {
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
            executions.sort_by_key(|e| e.call);
            self.current_round().executions = executions;
            let interrupted = ends.iter().any(|e| e.ending == Ending::Interrupted);
            for end in &ends {
                let exec = self.rounds.last().and_then(|r| {
                    let call = taken[end.index];
                    r.executions.iter().position(|e| e.call == call)
                });
                let event = (end.ending == Ending::Interrupted).then_some(StepEvent::Interrupted);
                self.step_at(Phase::Execute, number, exec, end.at_ms, event);
            }

            // Close: what happens to the calls left without a result.
            let unanswered: Vec<usize> = self
                .rounds
                .last()
                .map(|r| {
                    r.executions
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| !e.status.has_result())
                        .map(|(k, _)| k)
                        .collect()
                })
                .unwrap_or_default();
            let batch_ms = ends.iter().map(|e| e.at_ms).max().unwrap_or(0);
            match strategy.closure {
                Closure::Leave => {}
                Closure::Synthesize => {
                    if !unanswered.is_empty() {
                        self.step_at(Phase::Close, number, None, batch_ms, None);
                    }
                }
                Closure::Strip => {
                    if hold {
                        let round = self.current_round();
                        round.stripped = unanswered
                            .iter()
                            .map(|&k| round.executions[k].call)
                            .chain(round.dropped.iter().copied())
                            .collect();
                        round.stripped.sort();
                        let mut kept = round.reply.clone();
                        let stripped = round.stripped.clone();
                        kept.tool_calls = kept
                            .tool_calls
                            .into_iter()
                            .enumerate()
                            .filter(|(i, _)| !stripped.contains(i))
                            .map(|(_, c)| c)
                            .collect();
                        let at = (kept.text.is_some() || !kept.tool_calls.is_empty())
                            .then(|| self.append(Message::assistant(&kept)));
                        self.current_round().reply_message = at;
                        self.step_at(Phase::Close, number, None, batch_ms, None);
                    }
                }
            }

            // Append: results in call order, whatever order they ended in.
            let count = self.rounds.last().map_or(0, |r| r.executions.len());
            for e in 0..count {
                let ex = &self.rounds.last().expect("round").executions[e];
                let send = ex.status.has_result() || strategy.closure == Closure::Synthesize;
                if !send {
                    continue;
                }
                let msg = Message::tool_result(
                    ex.id.clone(),
                    ex.outcome.content.clone(),
                    ex.outcome.is_error,
                );
                let at = self.append(msg);
                self.current_round().executions[e].message = Some(at);
                self.step(Phase::Append, number, Some(e));
            }
            if let Some(late) = self
                .rounds
                .last()
                .and_then(|r| r.fallback.as_ref())
                .map(|f| f.rejected.clone())
            {
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

            if interrupted {
                let detail = format!("round {number}: interrupted by the user during execution");
                self.decide(number, true, format!("the user interrupted: {detail}"));
                return Outcome {
                    end: End::Error,
                    detail,
                    final_text: None,
                    requests: number,
                };
            }

            // Decide
            if let Some(reason) = stop_reason(strategy.stop, &reply) {
                self.decide(number, true, reason.clone());
                return Outcome {
                    end: End::ModelDone,
                    detail: format!("round {number}: {reason}"),
                    final_text: reply.text.as_deref().map(str::to_string),
                    requests: number,
                };
            }
            if number == strategy.max_rounds {
                let detail = if robust {
                    format!(
                        "ran {number} rounds without finishing; robust treats the round limit as an error"
                    )
                } else {
                    format!("round limit {number} reached without convergence")
                };
                self.decide(number, true, detail.clone());
                return Outcome {
                    end: End::MaxRounds,
                    detail,
                    final_text: if robust {
                        None
                    } else {
                        reply.text.as_deref().map(str::to_string)
                    },
                    requests: number,
                };
            }
            let why = continue_reason(strategy.stop, &reply);
            self.decide(number, false, why);
        }
        unreachable!("the loop returns at the round limit")
    }

    /// Seed 002's streaming fallback: the stream breaks after some tool_use
    /// blocks arrived and the streaming executor started them; the loop
    /// discards that executor, so its results, when they come in, are
    /// rejected instead of appended with their stale ids.
    fn stream_breaks(
        &mut self,
        number: u32,
        reply: &Reply,
        fault: Fallback,
        executor: &dyn ToolExecutor,
    ) -> FallbackRecord {
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
        let plans: Vec<CallPlan> = partial.iter().map(|c| executor.plan(c)).collect();
        let ends = self.run_batch(&plans, None);
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
