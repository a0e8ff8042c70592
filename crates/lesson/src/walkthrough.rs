//! Seed 003's walkthrough of the two trips of a tool call, derived from a
//! trace at any step: the four steps with the one in progress, and the
//! three logs (first response body, each function's return value, the
//! response text after the results went back).

use serde::Serialize;
use serde_json::{Value, json};

use loopdbg_engine::session::{Json, Reply, Text};
use loopdbg_engine::trace::{Phase, Trace};

/// The four steps, in seed 003's words.
pub const STEPS: [&str; 4] = [
    "send the user message + tool definitions",
    "read the reply's tool call: name + arguments",
    "run the function locally → return value",
    "append the result by call id, ask again → answer",
];

/// Where a walkthrough step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not reached yet.
    Todo,
    /// In progress at this step of the trace.
    Active,
    /// Done in this trip, before the step in progress.
    Done,
    /// Done in an earlier round and due again after the step in progress:
    /// the loop goes round, so ticks never run ahead of the current step.
    Again,
}

/// One function return value (log 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReturnLog {
    /// The round it ran in.
    pub round: u32,
    /// The call id.
    pub id: Text,
    /// The tool.
    pub name: Text,
    /// Its arguments.
    pub args: Json,
    /// What it returned.
    pub value: Json,
    /// True for an error result.
    pub is_error: bool,
    /// False when the whitelist refused it.
    pub ran: bool,
}

/// A reply's text after tool results went back (log 3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerLog {
    /// The round of the reply.
    pub round: u32,
    /// Its text.
    pub text: Option<Text>,
    /// True when the reply asked for tools again instead of answering.
    pub asks_for_tools: bool,
}

/// The walkthrough as it stands at one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Walkthrough {
    /// State of each of the four steps.
    pub states: [StepState; 4],
    /// Log 1: the first response body.
    pub first_response: Option<Value>,
    /// Log 2: each function's return value.
    pub returns: Vec<ReturnLog>,
    /// Log 3: the response texts after results went back.
    pub answers: Vec<AnswerLog>,
    /// Entries of logs 2 and 3 left out by [`recent`]'s limit.
    pub earlier: usize,
}

/// A reply as a response body, for log 1.
pub fn reply_body(reply: &Reply) -> Value {
    json!({
        "text": reply.text,
        "tool_calls": reply.tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "args": c.args})).collect::<Vec<_>>(),
        "finish_reason": reply.finish_reason().as_str(),
    })
}

/// The walkthrough at step `k` of `trace`, with every log entry.
pub fn at(trace: &Trace, k: usize) -> Walkthrough {
    recent(trace, k, usize::MAX)
}

/// The walkthrough at step `k` with at most `limit` rounds of logs 2 and 3
/// (the latest ones), so a screen showing step 40,000 stays cheap.
pub fn recent(trace: &Trace, k: usize, limit: usize) -> Walkthrough {
    let step = trace.step(k);
    let mut returns = Vec::new();
    let mut answers = Vec::new();
    let first_response = trace
        .round(1)
        .filter(|_| step.round > 1 || step.phase != Phase::Request)
        .map(|r| reply_body(&r.reply));
    // Rounds whose reply has arrived by step `k`.
    let last_seen = if step.phase == Phase::Request {
        step.round - 1
    } else {
        step.round
    };
    let shown = (last_seen as usize).min(trace.rounds.len());
    let from = shown.saturating_sub(limit);
    let mut earlier = 0;
    for round in &trace.rounds[..from] {
        earlier += round.executions.len() + usize::from(round.number > 1);
    }
    for round in &trace.rounds[from..shown] {
        if round.number > 1 {
            answers.push(AnswerLog {
                round: round.number,
                text: round.reply.text.clone(),
                asks_for_tools: !round.reply.tool_calls.is_empty(),
            });
        }
        // During Execute, only the calls that have ended by this moment.
        let ended = round
            .executions
            .iter()
            .enumerate()
            .filter(|(i, e)| e.status.has_result() && trace.has_ended_at(k, round.number, *i))
            .map(|(_, e)| e);
        returns.extend(ended.map(|e| ReturnLog {
            round: round.number,
            id: e.id.clone(),
            name: e.name.clone(),
            args: e.args.clone(),
            value: e.outcome.content.clone(),
            is_error: e.outcome.is_error,
            ran: e.outcome.ran,
        }));
    }

    let active = active_step(trace, k);
    let mut states = [StepState::Todo; 4];
    let reached = highest_reached(trace, k);
    for (i, s) in states.iter_mut().enumerate() {
        *s = match active {
            Some(a) if i == a => StepState::Active,
            Some(a) if i > a && i < reached => StepState::Again,
            _ if i < reached => StepState::Done,
            _ => StepState::Todo,
        };
    }
    Walkthrough {
        states,
        first_response,
        returns,
        answers,
        earlier,
    }
}

/// The 0-based walkthrough step in progress at trace step `k`.
fn active_step(trace: &Trace, k: usize) -> Option<usize> {
    let step = trace.step(k);
    let has_calls = trace
        .round(step.round)
        .is_some_and(|r| !r.reply.tool_calls.is_empty());
    match step.phase {
        Phase::Request if step.round == 1 => Some(0),
        Phase::Request => Some(3),
        Phase::Reply | Phase::Extract if step.round == 1 || has_calls => Some(1),
        Phase::Reply | Phase::Extract => Some(3),
        Phase::Execute => Some(2),
        Phase::Close | Phase::Append => Some(3),
        Phase::Decide => Some(3),
        Phase::Done => None,
    }
}

/// How many walkthrough steps have been completed at least once by step `k`.
fn highest_reached(trace: &Trace, k: usize) -> usize {
    let step = trace.step(k);
    let ran_tools = |n: u32| trace.round(n).is_some_and(|r| !r.executions.is_empty());
    match step.phase {
        Phase::Request if step.round == 1 => 0,
        // A later request means a whole trip was done before it.
        Phase::Request => 4,
        Phase::Done if step.round > 1 => 4,
        Phase::Done if ran_tools(1) => 3,
        Phase::Reply | Phase::Extract | Phase::Done if step.round == 1 => 1,
        Phase::Reply | Phase::Extract | Phase::Done => 4,
        Phase::Execute => {
            if step.round > 1 {
                4
            } else {
                2
            }
        }
        Phase::Close | Phase::Append | Phase::Decide => {
            if step.round > 1 {
                4
            } else if ran_tools(step.round) {
                3
            } else {
                1
            }
        }
    }
}
