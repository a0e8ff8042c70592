//! The loop itself: runs a session under a strategy and records a [`Trace`].
//!
//! Pure and deterministic: no terminal, no clock, no files. The same session
//! and strategy always give the same trace. Loop semantics live here and
//! nowhere else; the TUI and the CLI only show what this records.
//!
//! One round is `Request → Reply → Extract → Execute* → Append* → Decide`.
//! Under the careless stop rules (`content`, `finish-reason`, `tool-calls`)
//! tools run before the stop check, exactly as seed 001's table shows. Under
//! `robust`, a `length` or `content_filter` reply ends the run with an error
//! before it joins the history, and a reply without calls ends the run
//! before anything runs.

use crate::executor::{TableExecutor, ToolExecutor};
use crate::ledger::PairingIndex;
use crate::message::Message;
use crate::session::{FinishReason, Reply, Session};
use crate::strategy::{Extract, StopRule, Strategy};
use crate::stub::{CallIndex, reply_for};
use crate::trace::{Decision, End, Execution, Outcome, Phase, Round, Step, Trace, Violation};

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
    };
    rec.calls.push(&rec.messages[0]);
    let outcome = rec.drive(session, strategy, executor);
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
fn count_unpaired(trace: &mut Trace) {
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
}

impl Recorder {
    fn step(&mut self, phase: Phase, round: u32, execution: Option<usize>) {
        self.steps.push(Step {
            phase,
            round,
            history_len: self.messages.len(),
            execution,
            unpaired: 0,
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
            let Some((rule, reply)) = reply_for(rules, number, &self.calls) else {
                return Outcome {
                    end: End::Error,
                    detail: format!("stub has no reply for round {number}"),
                    final_text: None,
                    requests: number,
                };
            };
            let identical_run = match self.rounds.last() {
                Some(prev) if prev.reply == *reply => prev.identical_run + 1,
                _ => 1,
            };
            let finish = reply.finish_reason();
            let refused =
                robust && matches!(finish, FinishReason::Length | FinishReason::ContentFilter);
            let reply_message = (!refused).then(|| self.append(Message::assistant(reply)));
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
            });
            self.step(Phase::Reply, number, None);

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
            round.dropped = dropped;
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

            // Execute every taken call, then append the results in call order.
            for (e, &i) in taken.iter().enumerate() {
                let call = &reply.tool_calls[i];
                let execution = Execution {
                    call: i,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.args.clone(),
                    outcome: executor.execute(call),
                    message: 0,
                };
                self.current_round().executions.push(execution);
                self.step(Phase::Execute, number, Some(e));
            }
            for e in 0..taken.len() {
                let ex = &self.current_round().executions[e];
                let msg = Message::tool_result(
                    ex.id.clone(),
                    ex.outcome.content.clone(),
                    ex.outcome.is_error,
                );
                let at = self.append(msg);
                self.current_round().executions[e].message = at;
                self.step(Phase::Append, number, Some(e));
            }

            // Decide
            if let Some(reason) = stop_reason(strategy.stop, reply) {
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
            let why = continue_reason(strategy.stop, reply);
            self.decide(number, false, why);
        }
        unreachable!("the loop returns at the round limit")
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
