//! Replaying a captured conversation in the debugger: the conversation
//! becomes a [`Trace`] whose steps add one message at a time, with the
//! checker's findings attached to the step where each appears. The TUI then
//! shows it like any recorded run (ledger, walkthrough, provider views).

use indexmap::IndexMap;

use loopdbg_engine::executor::ToolOutcome;
use loopdbg_engine::ledger::PairingIndex;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{Reply, Rule, Session, ToolCall, ToolDef, When};
use loopdbg_engine::strategy::{Extract, StopRule, Strategy};
use loopdbg_engine::trace::{
    End, Execution, Origin, Outcome, Phase, Round, Step, Trace, Violation,
};
use loopdbg_judge::check::{Fate, Finding};
use loopdbg_read::finding::Kind;
use loopdbg_read::{BlockSource, Conversation, TripUsage};

/// The behavior a replay shows in the header: no stub model answered, the
/// file did. Only a label: what a trace is comes from its
/// [`Origin`], never from this name, so a
/// session may name a behavior `replay` too.
pub const REPLAY_BEHAVIOR: &str = "replay";

/// A session that describes the conversation (its first user text, its
/// tools), so the TUI's panes have something to name.
pub fn session_for(conv: &Conversation, title: &str) -> Session {
    let user = conv
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.text())
        .unwrap_or_default();
    let mut model = IndexMap::new();
    model.insert(
        REPLAY_BEHAVIOR.to_string(),
        vec![Rule {
            when: When::default(),
            reply: Reply::default(),
        }],
    );
    Session {
        title: title.to_string(),
        user,
        system: conv.system.clone(),
        tools: conv
            .tools
            .iter()
            .map(|t| ToolDef::named(&t.name, t.schema.clone()))
            .collect(),
        model,
        strategy: Default::default(),
        executor: Default::default(),
        faults: Default::default(),
        walkthrough: false,
    }
}

/// Finds the message a finding points at, from its path or log line: the
/// first block and the first message at each finding's (line, path), found
/// in one pass over the sources rather than one pass per finding (a long
/// log's notes).
struct MessageFinder<'c> {
    blocks: ahash::AHashMap<(Option<usize>, &'c str), usize>,
    messages: ahash::AHashMap<(Option<usize>, &'c str), usize>,
}

impl<'c> MessageFinder<'c> {
    fn new(conv: &'c Conversation, findings: &'c [Finding]) -> MessageFinder<'c> {
        // Lines first: most sources are on no finding's line, and a line
        // is cheaper to look up than a path (in a bit set, than in a hash
        // set: two-thirds of growing a followed gigabyte's picture).
        let lines = Lines::of(findings);
        let wanted: ahash::AHashSet<(Option<usize>, &str)> =
            findings.iter().map(|f| (f.line, f.path.as_str())).collect();
        let mut finder = MessageFinder {
            blocks: ahash::AHashMap::new(),
            messages: ahash::AHashMap::new(),
        };
        // The key kept is the finding's own (line, path).
        let first = |found: &mut ahash::AHashMap<(Option<usize>, &'c str), usize>,
                     i: usize,
                     s: &'c BlockSource| {
            if lines.contains(s.line)
                && let Some(&key) = wanted.get(&(s.line, &*s.path))
            {
                found.entry(key).or_insert(i);
            }
        };
        for (i, blocks) in conv.block_sources.iter().enumerate() {
            for b in blocks {
                first(&mut finder.blocks, i, b);
            }
        }
        for (i, m) in conv.message_sources.iter().enumerate() {
            first(&mut finder.messages, i, m);
        }
        finder
    }

    /// A block at the finding's path and line, else a message there, else
    /// the first message.
    fn message_of(&self, f: &Finding) -> usize {
        let key = (f.line, f.path.as_str());
        self.blocks
            .get(&key)
            .or_else(|| self.messages.get(&key))
            .copied()
            .unwrap_or(0)
    }
}

/// The lines findings are on, asked of every source of a conversation.
struct Lines {
    /// Bit `l` set for line `l`.
    bits: Vec<u64>,
    /// Some finding is on no line (a request body's).
    none: bool,
}

impl Lines {
    fn of(findings: &[Finding]) -> Lines {
        let most = findings.iter().filter_map(|f| f.line).max().unwrap_or(0);
        let mut lines = Lines {
            bits: vec![0; most / 64 + 1],
            none: false,
        };
        for f in findings {
            match f.line {
                Some(l) => lines.bits[l / 64] |= 1 << (l % 64),
                None => lines.none = true,
            }
        }
        lines
    }

    fn contains(&self, line: Option<usize>) -> bool {
        match line {
            Some(l) => self
                .bits
                .get(l / 64)
                .is_some_and(|w| w & (1 << (l % 64)) != 0),
            None => self.none,
        }
    }
}

/// Builds the trace of a captured conversation.
pub fn trace_of(conv: &Conversation, findings: &[Finding]) -> Trace {
    replayed(conv).with_findings(conv, findings)
}

/// A conversation's trace before its findings are placed: built from the
/// messages alone, so it can be made while the conversation is checked.
pub struct Replayed {
    trace: Trace,
}

/// The first half of [`trace_of`].
pub fn replayed(conv: &Conversation) -> Replayed {
    let mut trace = Trace {
        origin: Origin::Replay,
        strategy: replay_strategy(1),
        messages: Vec::new(),
        steps: Vec::new(),
        rounds: Vec::new(),
        violations: Vec::new(),
        outcome: Outcome {
            end: End::ModelDone,
            detail: String::new(),
            final_text: None,
            requests: 0,
        },
        continues: None,
        unverifiable: Vec::new(),
        pairing: PairingIndex::default(),
    };
    replay_from(&mut trace, conv, 0);
    Replayed { trace }
}

/// Brings `trace`, the replay of an earlier state of `conv` (its messages
/// from `from` on different, or not there yet), up to `conv` with
/// `findings`: what it built of those messages is taken back, they are
/// replayed, and the findings are placed anew. Costs what changed and the
/// findings, not the conversation: `--follow` grows the picture it showed
/// last instead of building the next one (on a 1 GB log that was seconds
/// per appended event). Gives what [`trace_of`] gives.
pub fn regrow(trace: &mut Trace, conv: &Conversation, from: usize, findings: &[Finding]) {
    replay_from(trace, conv, from);
    let finder = MessageFinder::new(conv, findings);
    place_findings(trace, conv, findings, |f| finder.message_of(f));
}

/// [`regrow`], the findings placed with `placed`: where the findings of
/// the trace it grows were found (`None`: nothing known, every source is
/// read). Gives what it knows of this trace's findings, to grow the next
/// from: an appended event's findings are placed without a pass over
/// every source of the conversation (two-thirds of growing a followed
/// gigabyte's picture).
pub fn regrow_placed(
    trace: &mut Trace,
    conv: &Conversation,
    from: usize,
    findings: &[Finding],
    placed: Option<Placed>,
) -> Placed {
    replay_from(trace, conv, from);
    let mut placed = match placed {
        Some(mut placed) => {
            placed.forget_from(from);
            placed
        }
        None => Placed::default(),
    };
    placed.find(conv, findings);
    place_findings(trace, conv, findings, |f| placed.message_of(f));
    placed
}

/// [`trace_of`], and where its findings were found ([`regrow_placed`]).
pub fn trace_placed(conv: &Conversation, findings: &[Finding]) -> (Trace, Placed) {
    let mut trace = replayed(conv).trace;
    let mut placed = Placed::default();
    placed.find(conv, findings);
    place_findings(&mut trace, conv, findings, |f| placed.message_of(f));
    (trace, placed)
}

/// A finding's place as a source names it: its line and path.
type SourceKey = (Option<usize>, String);

/// Where findings' sources were found in a conversation's first messages
/// (what the finder of a whole trace finds, kept): so the findings of the
/// conversation grown from them are found reading only the messages
/// after, and, for a finding never looked for, the messages after the
/// last line read before (a log's messages are built from lines read in
/// order, so a line not read yet is in none of the messages before).
#[derive(Debug, Clone, Default)]
pub struct Placed {
    /// How many messages were read.
    read: usize,
    /// Each key looked for, and the first block and the first message at
    /// it among the messages read.
    sought: ahash::AHashMap<SourceKey, (Option<usize>, Option<usize>)>,
    /// The highest line of any source of the messages read so far, after
    /// each message.
    lines_up_to: Vec<usize>,
}

impl Placed {
    /// Forgets what was read of messages `from` on (they changed).
    fn forget_from(&mut self, from: usize) {
        if from >= self.read {
            return;
        }
        self.read = from;
        self.lines_up_to.truncate(from);
        for (block, message) in self.sought.values_mut() {
            *block = block.filter(|&m| m < from);
            *message = message.filter(|&m| m < from);
        }
    }

    /// Finds `findings`' sources in `conv`.
    fn find(&mut self, conv: &Conversation, findings: &[Finding]) {
        // A key no finding has any more is forgotten: the messages read
        // next are not searched for it.
        let keys: ahash::AHashSet<SourceKey> =
            findings.iter().map(|f| (f.line, f.path.clone())).collect();
        self.sought.retain(|k, _| keys.contains(k));
        let read = self.read.min(conv.messages.len());
        let highest = read.checked_sub(1).map(|m| self.lines_up_to[m]);
        // A key never looked for is looked for from the first message,
        // unless its line is past every line read so far.
        let mut from = read;
        for key in keys {
            if self.sought.contains_key(&key) {
                continue;
            }
            let unread = matches!((key.0, highest), (Some(l), Some(h)) if l > h);
            if !unread {
                from = 0;
            }
            self.sought.insert(key, (None, None));
        }
        if from == 0 {
            // Read again from the start: what was found stays first.
            for (block, message) in self.sought.values_mut() {
                *block = None;
                *message = None;
            }
        }
        let lines = Lines::of(findings);
        let mut highest = highest.unwrap_or(0);
        self.lines_up_to.truncate(from.min(read));
        if from < read {
            highest = from.checked_sub(1).map_or(0, |m| self.lines_up_to[m]);
        }
        let mut key = (None, String::new());
        for i in from..conv.messages.len() {
            let sources = conv.block_sources[i].iter().map(|s| (true, s));
            let message = std::iter::once((false, &conv.message_sources[i]));
            for (is_block, s) in sources.chain(message) {
                if let Some(l) = s.line {
                    highest = highest.max(l);
                }
                if !lines.contains(s.line) {
                    continue;
                }
                key.0 = s.line;
                key.1.clear();
                key.1.push_str(&s.path);
                if let Some((block, message)) = self.sought.get_mut(&key) {
                    let first = if is_block { block } else { message };
                    first.get_or_insert(i);
                }
            }
            if i >= self.lines_up_to.len() {
                self.lines_up_to.push(highest);
            }
        }
        self.read = conv.messages.len();
    }

    /// A block at the finding's path and line, else a message there, else
    /// the first message (as [`MessageFinder::message_of`]).
    fn message_of(&self, f: &Finding) -> usize {
        let found = self.sought.get(&(f.line, f.path.clone()));
        found
            .and_then(|&(block, message)| block.or(message))
            .unwrap_or(0)
    }
}

/// The strategy a replay shows: every call extracted, the loop stopping
/// when the model stops calling, `rounds` trips.
fn replay_strategy(rounds: u32) -> Strategy {
    Strategy {
        extract: Extract::All,
        stop: StopRule::ToolCalls,
        max_rounds: rounds.max(1),
        behavior: REPLAY_BEHAVIOR.to_string(),
        closure: loopdbg_engine::strategy::Closure::Leave,
        interrupt: None,
    }
}

/// How many of `steps` were made before message `from` was read: up to
/// the one that read message `from - 1` (its reply or its append, the
/// only such step reaching `from` messages). `None` when there is none.
fn steps_before(steps: &[Step], from: usize) -> Option<usize> {
    if from == 0 {
        return Some(0);
    }
    let reaching = steps.partition_point(|s| s.history_len <= from);
    steps[..reaching]
        .iter()
        .rposition(|s| s.history_len == from && matches!(s.phase, Phase::Reply | Phase::Append))
        .map(|k| k + 1)
}

/// The step at which message `i` is appended or read (its reply's or its
/// append's), or the first.
fn step_of_message(steps: &[Step], i: usize) -> usize {
    steps_before(steps, i + 1).map_or(0, |k| k - 1)
}

/// Whether a user prompt came between the last reply before message
/// `from` and it (a spin is one loop asking again and getting the same
/// reply; a new prompt starts another).
fn prompted_before(messages: &[Message], from: usize) -> bool {
    messages[..from]
        .iter()
        .rev()
        .take_while(|m| m.role != Role::Assistant)
        .any(|m| m.role == Role::User && m.text().is_some_and(|t| !t.trim().is_empty()))
}

/// Replays `conv`'s messages from `from` on into `trace`, which holds the
/// replay of its messages before `from` (and of what came after them
/// then, taken back here): its steps, trips, pairing index and end.
fn replay_from(trace: &mut Trace, conv: &Conversation, from: usize) {
    let kept = steps_before(&trace.steps, from.min(trace.messages.len()));
    // Built from the start when what was built cannot be cut there.
    let (from, kept) = match kept {
        Some(kept) => (from.min(trace.messages.len()), kept),
        None => (0, 0),
    };
    trace.steps.truncate(kept);
    let kept_trips = trace.rounds.partition_point(|r| r.request_len < from);
    trace.rounds.truncate(kept_trips);
    if let Some(last) = trace.rounds.last_mut() {
        last.executions
            .retain(|e| e.message.is_some_and(|m| m < from));
    }
    trace.messages.truncate(from);
    trace.messages.extend_from_slice(&conv.messages[from..]);
    let messages = &trace.messages;
    let mut building = Building {
        steps: std::mem::take(&mut trace.steps),
        rounds: std::mem::take(&mut trace.rounds),
        round: u32::try_from(kept_trips).unwrap_or(u32::MAX),
        refusals: conv
            .refusals
            .iter()
            .map(|r| r.at)
            .filter(|&r| r >= from)
            .collect(),
        prompted: prompted_before(messages, from),
    };
    // The first trip recorded for each message from `from` on.
    let mut usage = vec![None; messages.len() - from];
    for trip in &conv.usage {
        if let Some(slot @ None) = trip
            .message
            .checked_sub(from)
            .and_then(|k| usage.get_mut(k))
        {
            *slot = Some(trip);
        }
    }
    for (i, m) in messages.iter().enumerate().skip(from) {
        building.refused_until(i);
        if m.role == Role::User && m.text().is_some_and(|t| !t.trim().is_empty()) {
            building.prompted = true;
        }
        if m.role == Role::Assistant {
            building.reply(i, m, usage[i - from]);
        } else {
            building.results(i, m);
        }
    }
    building.refused_until(messages.len());
    let Building {
        mut steps,
        rounds,
        round,
        ..
    } = building;
    let last_reply = messages.iter().rposition(|m| m.role == Role::Assistant);
    // A reply that asks for tools is a step of the loop, not its answer:
    // a conversation that ends on calls has no answer yet, whatever text
    // ("Let me check.") rode along with them.
    let final_text = last_reply.and_then(|i| {
        if messages[i].tool_uses().next().is_some() {
            return None;
        }
        let text = messages[i].text()?;
        // Claude Code writes some replies itself ("No response
        // requested."): shown, but never as the model's answer.
        Some(match conv.synthetic.contains(&i) {
            true => format!("{text} (written by the agent itself, not the model)"),
            false => text,
        })
    });
    steps.push(step(Phase::Done, round.max(1), messages.len(), None));
    trace.steps = steps;
    trace.rounds = rounds;
    trace.strategy = replay_strategy(round);
    trace.outcome = Outcome {
        end: End::ModelDone,
        detail: String::new(),
        final_text,
        requests: round,
    };
    trace.continues = conv.continues.clone();
    trace.pairing.regrow(&trace.messages, from);
    // What is in flight at a step of a trip depends on the results its
    // trip got, later ones among them: its steps are counted again.
    let trip_start = match kept_trips.checked_sub(1) {
        Some(last) => {
            let number = trace.rounds[last].number;
            trace.steps.partition_point(|s| s.round < number)
        }
        None => 0,
    };
    loopdbg_engine::count_unpaired_from(trace, trip_start.min(kept));
}

/// A replayed step: no time passes in a file.
fn step(phase: Phase, round: u32, history_len: usize, execution: Option<usize>) -> Step {
    Step {
        phase,
        round,
        history_len,
        execution,
        unpaired: 0,
        time_ms: 0,
        event: None,
    }
}

/// A replayed trip: the request at `request_len` and, if any, its reply.
fn trip(number: u32, request_len: usize, reply: Reply, reply_message: Option<usize>) -> Round {
    Round {
        number,
        request_len,
        violation: None,
        rule: 0,
        // Nothing is "taken" in a replay: a call is pending only while its
        // reply is read, then answered or left unpaired.
        taken: Vec::new(),
        dropped: Vec::new(),
        executions: Vec::new(),
        reply,
        reply_message,
        identical_run: 1,
        decision: None,
        fallback: None,
        stripped: Vec::new(),
    }
}

/// The steps and trips of a replay, as its messages are read in order.
#[derive(Default)]
struct Building {
    steps: Vec<Step>,
    rounds: Vec<Round>,
    round: u32,
    /// Where the log says requests were refused, not yet placed.
    refusals: std::collections::VecDeque<usize>,
    /// A user prompt came since the last reply: a spin is one loop asking
    /// again and getting the same reply, and a new prompt starts another.
    prompted: bool,
}

impl Building {
    /// Requests the log says were refused before message `at`: trips with
    /// no reply.
    fn refused_until(&mut self, at: usize) {
        while self.refusals.front().is_some_and(|&r| r <= at) {
            self.refusals.pop_front();
            self.round += 1;
            self.steps.push(step(Phase::Request, self.round, at, None));
            self.rounds
                .push(trip(self.round, at, Reply::default(), None));
        }
    }

    /// An assistant message: a trip's request and its reply.
    fn reply(&mut self, i: usize, m: &Message, usage: Option<&TripUsage>) {
        self.round += 1;
        self.steps.push(step(Phase::Request, self.round, i, None));
        let tool_calls: Vec<ToolCall> = m
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input } => Some(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: input.clone(),
                    arguments: None,
                }),
                _ => None,
            })
            .collect();
        let reply = Reply {
            text: m.text().map(Into::into),
            finish_reason: m.finish_reason,
            tool_calls,
            usage: usage.map(|u| u.usage),
            model: usage.and_then(|u| u.model.as_deref()).map(Into::into),
        };
        // A reply with neither text nor calls of the client's (only the
        // provider's own tool blocks, or thinking) is no evidence of
        // repeating.
        let said_something = reply.text.is_some() || !reply.tool_calls.is_empty();
        let identical_run = match self.rounds.last() {
            Some(prev)
                if !self.prompted
                    && said_something
                    && prev.reply.text == reply.text
                    && same_calls(&prev.reply, &reply) =>
            {
                prev.identical_run + 1
            }
            _ => 1,
        };
        self.prompted = false;
        let mut trip = trip(self.round, i, reply, Some(i));
        trip.identical_run = identical_run;
        self.rounds.push(trip);
        self.steps.push(step(Phase::Reply, self.round, i + 1, None));
    }

    /// A user or tool message: the results of the last turn are its
    /// executions, in arrival order.
    fn results(&mut self, i: usize, m: &Message) {
        let before = self.rounds.last().map_or(0, |r| r.executions.len());
        for b in &m.content {
            if let Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } = b
                && let Some(r) = self.rounds.last_mut()
                && let Some(call) = r.reply.tool_calls.iter().position(|c| c.id == *tool_use_id)
            {
                let c = &r.reply.tool_calls[call];
                r.executions.push(Execution {
                    call,
                    id: c.id.clone(),
                    name: c.name.clone(),
                    args: c.args.clone(),
                    outcome: ToolOutcome {
                        content: content.clone(),
                        is_error: *is_error,
                        ran: true,
                        note: "recorded in the transcript",
                        row: None,
                        child: None,
                    },
                    message: Some(i),
                    status: loopdbg_engine::trace::CallStatus::Finished,
                    ended_ms: 0,
                    synthetic: false,
                });
            }
        }
        // Only a result that answers a call of the turn is an execution; an
        // orphan result quotes nothing.
        let execution = self
            .rounds
            .last()
            .filter(|r| r.executions.len() > before)
            .map(|r| r.executions.len() - 1);
        let round = self.round;
        self.steps.push(step(
            Phase::Append,
            round.max(1),
            i + 1,
            if round == 0 { None } else { execution },
        ));
    }
}

impl Replayed {
    /// The second half of [`trace_of`]: each finding placed at the step
    /// where it arises, and the outcome they make.
    pub fn with_findings(self, conv: &Conversation, findings: &[Finding]) -> Trace {
        let finder = MessageFinder::new(conv, findings);
        let mut trace = self.trace;
        place_findings(&mut trace, conv, findings, |f| finder.message_of(f));
        trace
    }
}

/// Places each finding at the step where it arises (those placed before
/// are taken back), and sets the outcome they make. Looks steps up by
/// their history's length, not by a walk over them.
fn place_findings(
    trace: &mut Trace,
    conv: &Conversation,
    findings: &[Finding],
    message_of: impl Fn(&Finding) -> usize,
) {
    {
        for v in std::mem::take(&mut trace.violations) {
            if let Some(r) = round_numbered(&mut trace.rounds, v.round) {
                r.violation = None;
            }
        }
        let last_calls = trace
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_uses().next().is_some());
        let steps = &trace.steps;
        let messages = &trace.messages;
        let done = steps.len() - 1;
        let violations: Vec<Violation> = findings
            .iter()
            .map(|f| {
                let m = message_of(f).min(messages.len().saturating_sub(1));
                // A 400 arises at the first request that carries the message;
                // anything else where the message appears; notes at the end.
                let refused_at = (f.kind == Kind::RefusedRequest)
                    .then(|| conv.refusals.iter().find(|r| r.source.line == f.line))
                    .flatten();
                let step = if let Some(r) = refused_at {
                    // The request the provider's error answered.
                    let refused = |s: &Step| {
                        s.phase == Phase::Request
                            && trace
                                .rounds
                                .get((s.round as usize).wrapping_sub(1))
                                .is_some_and(|x| x.number == s.round && x.reply_message.is_none())
                    };
                    let at = steps.partition_point(|s| s.history_len < r.at);
                    steps[at..]
                        .iter()
                        .take_while(|s| s.history_len == r.at)
                        .position(refused)
                        .map_or(done, |k| at + k)
                } else if f.is_note() {
                    done
                } else if f.rejected_by_provider() {
                    let after = steps.partition_point(|s| s.history_len <= m);
                    steps[after..]
                        .iter()
                        .position(|s| s.phase == Phase::Request)
                        .map_or(done, |k| after + k)
                } else {
                    step_of_message(steps, m)
                };
                // What the file shows of it comes first: on a small
                // screen the provider's long sentence is what gets cut.
                let seen = match f.evidence.as_ref().map(|e| (e.outcome, e.line)) {
                    Some((Fate::Refused, Some(line))) => format!("; refused, line {line}"),
                    Some((Fate::Refused, None)) => "; the recording shows the refusal".to_string(),
                    Some((Fate::Answered, Some(line))) => {
                        format!("; answered anyway, line {line}")
                    }
                    Some((Fate::Answered, None)) => "; the recording shows it answered".to_string(),
                    Some((Fate::Repaired, _)) => "; repaired by the agent".to_string(),
                    Some((Fate::InFlight, _)) => "; still in flight".to_string(),
                    None => String::new(),
                };
                Violation {
                    round: steps[step].round,
                    step,
                    ids: f.ids.clone(),
                    unpaired: f.ids.len(),
                    message: format!(
                        "{} ({}{seen}): {} ({})",
                        f.kind, f.severity, f.message, f.path
                    ),
                }
            })
            .collect();
        trace.violations = violations;
        trace.unverifiable = findings
            .iter()
            .filter(|f| f.kind == Kind::UnverifiableResult)
            .flat_map(|f| f.ids.iter().cloned())
            .collect();
        // Notes (a branch left behind, calls still in flight) are no
        // problems of the conversation.
        let problems = findings.iter().filter(|f| !f.is_note()).count();
        let notes = findings.len() - problems;
        trace.outcome.end = match (problems, last_calls) {
            (0, false) => End::ModelDone,
            (0, true) => End::InFlight,
            _ => End::Error,
        };
        trace.outcome.detail = match (problems, notes, last_calls) {
            (0, 0, false) => "the transcript ends here; no pairing problems".to_string(),
            (0, 0, true) => {
                "the transcript ends with calls waiting for their results; no pairing problems"
                    .to_string()
            }
            (0, _, true) => format!(
                "the transcript ends with calls waiting for their results; no pairing problems, {notes} note(s)"
            ),
            (0, n, false) => format!("the transcript ends here; no pairing problems, {n} note(s)"),
            (p, 0, _) => format!("the transcript has {p} problem(s); see the warnings"),
            (p, n, _) => {
                format!("the transcript has {p} problem(s) and {n} note(s); see the warnings")
            }
        };
        // A round's violation is the request it sends carrying unanswered
        // (or twice-answered) calls, as in a recorded run: the header and
        // the Request step say so.
        for (i, (v, f)) in trace.violations.iter().zip(findings).enumerate() {
            let at_request = trace.steps[v.step].phase == Phase::Request;
            if matches!(f.kind, Kind::UnansweredCall | Kind::DuplicateResult)
                && at_request
                && let Some(r) = round_numbered(&mut trace.rounds, v.round)
                && r.violation.is_none()
            {
                r.violation = Some(i);
            }
        }
    }
}

/// The trip numbered `number` (a replay numbers them 1, 2, … in order).
fn round_numbered(rounds: &mut [Round], number: u32) -> Option<&mut Round> {
    rounds
        .get_mut((number as usize).wrapping_sub(1))
        .filter(|r| r.number == number)
}

fn same_calls(a: &Reply, b: &Reply) -> bool {
    a.tool_calls.len() == b.tool_calls.len()
        && a.tool_calls
            .iter()
            .zip(&b.tool_calls)
            .all(|(x, y)| x.name == y.name && x.args == y.args)
}
