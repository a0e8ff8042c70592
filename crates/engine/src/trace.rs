//! The recorded run: every phase of the loop, in order, plus the history it
//! built. Recorded once by [`crate`] and never mutated, so any step
//! can be shown exactly, forwards or backwards.
//!
//! The history is stored once. A step records only how long the history was
//! at that moment; the messages, ledger and walkthrough at step `k` are
//! derived from that prefix.

use serde::Serialize;

use crate::ledger::{Ledger, PairingIndex};
use crate::message::Reply;
use crate::message::{Message, Role};
use crate::strategy::Strategy;

/// The phases of one round of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The messages and tool definitions are sent.
    Request,
    /// The model's reply arrives.
    Reply,
    /// The loop takes calls from the reply (and maybe drops some).
    Extract,
    /// One call runs locally (or ends: done, failed, timed out, cancelled, interrupted).
    Execute,
    /// Calls left without a result are closed: synthesized, stripped, or left.
    Close,
    /// One result joins the history.
    Append,
    /// Continue or stop, and why.
    Decide,
    /// How the run ended.
    Done,
}

impl Phase {
    /// Every phase, in loop order.
    pub const ALL: [Phase; 8] = [
        Phase::Request,
        Phase::Reply,
        Phase::Extract,
        Phase::Execute,
        Phase::Close,
        Phase::Append,
        Phase::Decide,
        Phase::Done,
    ];

    /// The display name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Request => "Request",
            Phase::Reply => "Reply",
            Phase::Extract => "Extract",
            Phase::Execute => "Execute",
            Phase::Close => "Close",
            Phase::Append => "Append",
            Phase::Decide => "Decide",
            Phase::Done => "Done",
        }
    }
}

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The phase.
    pub phase: Phase,
    /// 1-based round (model call) this step belongs to.
    pub round: u32,
    /// How many messages of [`Trace::messages`] exist at this step.
    pub history_len: usize,
    /// For `Execute` and `Append`: which execution of the round (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<usize>,
    /// How many ids are unpaired at this step (called, unanswered, not in
    /// flight). Recorded so breakpoints can find the step where it rises
    /// without rebuilding the ledger at every step.
    pub unpaired: usize,
    /// Virtual milliseconds since the round's calls started (Execute steps).
    #[serde(skip_serializing_if = "is_zero")]
    pub time_ms: u64,
    /// Something out of the ordinary that happened at this step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<StepEvent>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Out-of-the-ordinary things a step can record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepEvent {
    /// The reply stream broke after some tool_use blocks arrived.
    StreamBroke,
    /// The retry without streaming replied.
    Retried,
    /// A result from the discarded executor arrived late and was rejected.
    LateResultRejected,
    /// The user interrupted the turn.
    Interrupted,
}

/// How a call of the round ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It returned a value or an error result.
    Finished,
    /// The tool failed.
    Failed,
    /// It ran past its timeout.
    TimedOut,
    /// Cancelled because a sibling failed hard.
    Cancelled,
    /// The user interrupted the turn.
    Interrupted,
    /// The loop's extraction dropped it; it never ran.
    Dropped,
}

impl CallStatus {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Finished => "finished",
            CallStatus::Failed => "failed",
            CallStatus::TimedOut => "timed out",
            CallStatus::Cancelled => "cancelled",
            CallStatus::Interrupted => "interrupted",
            CallStatus::Dropped => "dropped",
        }
    }

    /// True when the call produced a result of its own.
    pub fn has_result(self) -> bool {
        matches!(
            self,
            CallStatus::Finished | CallStatus::Failed | CallStatus::TimedOut
        )
    }
}

/// A streaming failure and what the loop did about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallbackRecord {
    /// The tool calls that had arrived when the stream broke.
    pub partial: Vec<crate::message::ToolCall>,
    /// When the stream broke.
    pub broke_at_ms: u64,
    /// Results of the discarded executor that came in late, rejected:
    /// (call id, virtual ms).
    pub rejected: Vec<(crate::message::Text, u64)>,
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The stop rule said the model was done.
    ModelDone,
    /// The round limit was reached.
    MaxRounds,
    /// The run stopped on an error (a truncated or filtered reply under
    /// `robust`, an unknown behavior).
    Error,
    /// The scripted stub model has no rule for this state: nothing the
    /// loop did wrong, a reply the session does not script (a fork, `strip`
    /// or `first` reaching a state its script never planned for).
    Unscripted,
    /// A replayed recording ends while calls wait for their results (a
    /// log still being written, an agent stopped mid-tool): no error, the
    /// loop is simply not over.
    InFlight,
}

impl End {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            End::ModelDone => "model_done",
            End::MaxRounds => "max_rounds",
            End::Error => "error",
            End::Unscripted => "unscripted",
            End::InFlight => "in_flight",
        }
    }
}

/// One call the loop ran (or refused).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Execution {
    /// Index of the call in the reply's `tool_calls`.
    pub call: usize,
    /// The call id.
    pub id: crate::message::Text,
    /// The tool name.
    pub name: crate::message::Text,
    /// The arguments.
    pub args: crate::message::Json,
    /// What came back (for calls without a result of their own: the
    /// placeholder a `synthesize` closure sends).
    pub outcome: ToolOutcome,
    /// Index of the tool message that carries the result, once appended.
    pub message: Option<usize>,
    /// How the call ended.
    pub status: CallStatus,
    /// Virtual ms when it ended (0 for instant calls).
    pub ended_ms: u64,
    /// True when the result is a placeholder written by the loop.
    pub synthetic: bool,
}

/// The loop's decision at the end of a round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// True when the loop stops here.
    pub stop: bool,
    /// Why, in one sentence.
    pub reason: String,
}

/// A request the check before sending found unsendable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// The round whose request it is.
    pub round: u32,
    /// The step index of that request.
    pub step: usize,
    /// The tool_use ids without a tool_result: the first
    /// [`LISTED_IDS`] distinct ones.
    pub ids: Vec<String>,
    /// How many calls have no result (ids repeated or not listed count).
    pub unpaired: usize,
    /// What a provider would answer.
    pub message: String,
}

/// How many distinct ids a [`Violation`] names; the rest are counted. Every
/// request after a call is left carries it, so a violation's size must not
/// grow with the run.
pub const LISTED_IDS: usize = 12;

/// Everything about one model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Round {
    /// 1-based number.
    pub number: u32,
    /// History length when the request was sent.
    pub request_len: usize,
    /// Index into [`Trace::violations`] when the request had unpaired ids.
    pub violation: Option<usize>,
    /// Index of the stub rule that replied.
    pub rule: usize,
    /// The reply.
    pub reply: Reply,
    /// Index of the assistant message, when the reply joined the history.
    pub reply_message: Option<usize>,
    /// Indices (into `reply.tool_calls`) of the calls the loop took.
    pub taken: Vec<usize>,
    /// Indices of the calls it dropped.
    pub dropped: Vec<usize>,
    /// The calls run, in order.
    pub executions: Vec<Execution>,
    /// How many replies in a row, ending with this one, were identical.
    pub identical_run: u32,
    /// What the loop decided after this round.
    pub decision: Option<Decision>,
    /// Set when the reply stream broke and the loop retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackRecord>,
    /// Tool_use blocks the `strip` closure removed (indices into the reply's calls).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stripped: Vec<usize>,
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The kind of end.
    pub end: End,
    /// One sentence.
    pub detail: String,
    /// The answer the loop returns: the last reply's text, or `None` when
    /// the run ended in an error or the robust loop ran out of rounds.
    pub final_text: Option<String>,
    /// Requests sent (model calls made).
    pub requests: u32,
}

/// Where a trace's turns came from. What the checks may say depends on it:
/// a run's loop is this session's stub and tables, so its answer can be
/// held to the tools' numbers; a replayed file's history already shows
/// what was sent, and its findings speak in the provider's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Recorded by [`crate::run`] from a session.
    #[default]
    Run,
    /// Read back from a captured conversation (`loopdbg check`, `--follow`,
    /// the proxy's live view).
    Replay,
}

/// A complete recorded run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// Whether the loop ran here or was read back from a file.
    #[serde(skip)]
    pub origin: Origin,
    /// The strategy it ran with.
    pub strategy: Strategy,
    /// The final history; every step sees a prefix of it.
    pub messages: Vec<Message>,
    /// Every phase, in order; the last is `Done`.
    pub steps: Vec<Step>,
    /// Per model call.
    pub rounds: Vec<Round>,
    /// Requests that would have been rejected.
    pub violations: Vec<Violation>,
    /// How it ended.
    pub outcome: Outcome,
    /// For a replay: what the conversation continues that its file does
    /// not hold (a stored response, events cut off before the file's
    /// first line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// For a replay: the ids of results that answer calls made in what it
    /// continues (the checker's `unverifiable_result`): no orphans, only
    /// unchecked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unverifiable: Vec<String>,
    /// Where every id is called and answered, for ledgers of any prefix.
    #[serde(skip)]
    pub pairing: PairingIndex,
}

impl Trace {
    /// True for a conversation read back from a file, not run here.
    pub fn is_replay(&self) -> bool {
        self.origin == Origin::Replay
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Never true: a trace always ends with `Done`.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Step `k`, clamped to the last.
    pub fn step(&self, k: usize) -> &Step {
        &self.steps[k.min(self.steps.len() - 1)]
    }

    /// The round record of step `k`, if the round got a reply.
    pub fn round_of(&self, k: usize) -> Option<&Round> {
        let step = self.step(k);
        self.round(step.round)
    }

    /// Round `n` (1-based), if it got a reply.
    pub fn round(&self, n: u32) -> Option<&Round> {
        let i = n.checked_sub(1)? as usize;
        self.rounds.get(i).filter(|r| r.number == n)
    }

    /// Whether call `execution` of round `round` has ended (has its outcome)
    /// at step `k`. Calls that end at the same virtual instant end in call
    /// order, one Execute step each, as the schedule walks them; a call the
    /// loop dropped never runs, so it never ends. The ids pane, the explain
    /// box and the walkthrough all ask this one question, so they agree.
    pub fn has_ended_at(&self, k: usize, round: u32, execution: usize) -> bool {
        let step = self.step(k);
        let Some(e) = self.round(round).and_then(|r| r.executions.get(execution)) else {
            return false;
        };
        if e.status == CallStatus::Dropped || round > step.round {
            return false;
        }
        if round < step.round {
            return true;
        }
        match step.phase {
            Phase::Request | Phase::Reply | Phase::Extract => false,
            Phase::Execute => {
                let current_call = step
                    .execution
                    .and_then(|i| self.round(round)?.executions.get(i))
                    .map_or(0, |c| c.call);
                e.ended_ms < step.time_ms || (e.ended_ms == step.time_ms && e.call <= current_call)
            }
            Phase::Close | Phase::Append | Phase::Decide | Phase::Done => true,
        }
    }

    /// The history as it stands at step `k`.
    pub fn history_at(&self, k: usize) -> &[Message] {
        &self.messages[..self.step(k).history_len]
    }

    /// How many messages step `k` added to the history.
    pub fn added_at(&self, k: usize) -> std::ops::Range<usize> {
        let now = self.step(k).history_len;
        let before = if k == 0 {
            0
        } else {
            self.step(k - 1).history_len
        };
        before.min(now)..now
    }

    /// Ids the loop holds at step `k` without a result yet (pending, not
    /// unpaired): the reply's calls while it is read, then the taken calls
    /// until each result is appended.
    pub fn in_flight_at(&self, k: usize) -> Vec<&str> {
        self.in_flight_iter(k).collect()
    }

    /// [`Trace::in_flight_at`] without allocating.
    pub fn in_flight_iter(&self, k: usize) -> impl Iterator<Item = &str> {
        let step = self.step(k);
        let round = self.round(step.round);
        let calls = round.map_or(&[][..], |r| &r.reply.tool_calls[..]);
        let taken = round.map_or(&[][..], |r| &r.taken[..]);
        let execs = round.map_or(&[][..], |r| &r.executions[..]);
        let reply_in_history =
            round.is_some_and(|r| r.reply_message.is_some_and(|m| m < step.history_len));
        let none: (&[crate::message::ToolCall], &[usize], &[Execution]) = (&[], &[], &[]);
        let (all, from_taken, from_execs) = match step.phase {
            Phase::Reply if reply_in_history => (calls, &[][..], &[][..]),
            Phase::Extract | Phase::Execute => (&[][..], taken, &[][..]),
            // From the closure on, pending means "a result is on its way".
            Phase::Close => (&[][..], &[][..], execs),
            Phase::Append => {
                let done = step.execution.map_or(0, |e| e + 1).min(execs.len());
                (&[][..], &[][..], &execs[done..])
            }
            _ => none,
        };
        all.iter()
            .map(|c| &*c.id)
            .chain(from_taken.iter().map(move |&i| &*calls[i].id))
            .chain(
                from_execs
                    .iter()
                    .filter(|e| e.message.is_some())
                    .map(|e| &*e.id),
            )
    }

    /// The pairing ledger at step `k`.
    pub fn ledger_at(&self, k: usize) -> Ledger {
        self.pairing
            .ledger(self.step(k).history_len, &self.in_flight_at(k))
    }

    /// The first step of round `n`, if it exists.
    pub fn first_step_of_round(&self, n: u32) -> Option<usize> {
        let i = self.steps.partition_point(|s| s.round < n);
        (i < self.steps.len() && self.steps[i].round == n).then_some(i)
    }

    /// The step closest to (`round`, `phase`, `execution`): used to keep the
    /// user's place when a toggle re-runs the engine.
    pub fn nearest_step(&self, round: u32, phase: Phase, execution: Option<usize>) -> usize {
        let last = self.steps.len() - 1;
        let in_round = self.steps.partition_point(|s| s.round < round);
        if in_round > last || self.steps[in_round].round != round {
            return last;
        }
        let rank = |p: Phase| Phase::ALL.iter().position(|q| *q == p).unwrap_or(0);
        let mut best = in_round;
        for (i, s) in self.steps.iter().enumerate().skip(in_round) {
            if s.round != round {
                break;
            }
            if rank(s.phase) < rank(phase)
                || (s.phase == phase && s.execution.unwrap_or(0) <= execution.unwrap_or(0))
            {
                best = i;
            }
        }
        best
    }

    /// The run's virtual duration: each round's calls take as long as the
    /// last of them to end.
    pub fn virtual_time_ms(&self) -> u64 {
        self.rounds
            .iter()
            .map(|r| r.executions.iter().map(|e| e.ended_ms).max().unwrap_or(0))
            .sum()
    }

    /// Names of the calls that really ran, in order.
    pub fn tool_runs(&self) -> Vec<&str> {
        self.rounds
            .iter()
            .flat_map(|r| r.executions.iter())
            .filter(|e| e.outcome.ran)
            .map(|e| &*e.name)
            .collect()
    }

    /// The roles of the final history, in order.
    pub fn roles(&self) -> Vec<Role> {
        self.messages.iter().map(|m| m.role).collect()
    }

    /// The longest run of identical consecutive replies, with the round it ends at.
    pub fn longest_identical_run(&self) -> Option<(u32, u32)> {
        self.rounds
            .iter()
            .map(|r| (r.identical_run, r.number))
            .max_by_key(|(run, n)| (*run, std::cmp::Reverse(*n)))
    }
}
/// What running one call gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutcome {
    /// The result content sent back to the model.
    pub content: crate::message::Json,
    /// True when the result reports a failure.
    pub is_error: bool,
    /// False when the call was refused without running anything.
    pub ran: bool,
    /// What happened, for logs.
    pub note: &'static str,
    /// The table row that answered, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<usize>,
    /// For a sub-agent tool: the child loop's own run.
    #[serde(skip)]
    pub child: Option<std::sync::Arc<SubAgentRun>>,
}

/// A sub-agent's run, kept so the debugger can step into it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubAgentRun {
    /// The child session.
    pub session: crate::session::Session,
    /// The child's recorded loop.
    pub trace: Trace,
}
