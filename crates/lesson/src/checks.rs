//! Checks on a finished run that a careless loop never notices: the same
//! reply coming back again and again (seed 001's spin signal), an answer that
//! does not quote the numbers the tools returned (seed 003), and requests a
//! provider would reject (seed 000). Each becomes a [`Warning`].

use serde::Serialize;
use serde_json::Value;

use loopdbg_engine::trace::Trace;

/// A number a tool returned and whether the final text quotes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CitedNumber {
    /// The call id whose result held it.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The number as the tool returned it.
    pub number: String,
    /// True when the final text contains it.
    pub cited: bool,
}

/// Seed 003's check that the second request really read the tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuoteCheck {
    /// Every number in a successful tool result.
    pub numbers: Vec<CitedNumber>,
    /// `Some(true)` when each successful result with numbers has at least
    /// one quoted in the final text; `None` when there is nothing to check.
    pub cites_tool_numbers: Option<bool>,
}

/// A kind of run warning; its name is stable in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarningKind {
    /// the provider would refuse a request the loop sent
    Provider400,
    /// the same assistant turn again and again: the loop spins
    Spin,
    /// the run ended with calls left without their results
    DanglingAtEnd,
    /// calls were run from a turn cut by `max_tokens`
    TruncatedExecuted,
    /// the final answer was cut by `max_tokens`
    TruncatedAnswer,
    /// the model's last turn has no answer text
    NoAnswer,
    /// a successful tool result's numbers appear nowhere in the answer
    Uncited,
    /// the answer states a number no tool returned
    Unsourced,
}

impl WarningKind {
    /// The stable name, as JSON and the text output write it.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningKind::Provider400 => "provider_400",
            WarningKind::Spin => "spin",
            WarningKind::DanglingAtEnd => "dangling_at_end",
            WarningKind::TruncatedExecuted => "truncated_executed",
            WarningKind::TruncatedAnswer => "truncated_answer",
            WarningKind::NoAnswer => "no_answer",
            WarningKind::Uncited => "uncited",
            WarningKind::Unsourced => "unsourced",
        }
    }
}

impl std::fmt::Display for WarningKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for WarningKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Something worth the user's attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// What kind of trouble.
    pub kind: WarningKind,
    /// One sentence.
    pub message: String,
}

/// Numbers inside a JSON value: number values and numbers written in strings.
pub fn numbers_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Number(n) => out.push(n.to_string()),
        Value::String(s) => out.extend(numbers_in_text(s)),
        Value::Array(items) => items.iter().for_each(|v| numbers_in(v, out)),
        Value::Object(map) => map.values().for_each(|v| numbers_in(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// The maximal decimal numbers written in `text` ("18°C" → "18", "7.12" → "7.12").
pub fn numbers_in_text(text: &str) -> Vec<String> {
    // Digits and '.' are ASCII, so bytes can be scanned: no byte of a
    // multi-byte character is one of them. A number starts at a digit and
    // takes digits and at most one '.'; a '.' that ends it is not part of it.
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let mut dot = false;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || (bytes[i] == b'.' && !dot)) {
            dot |= bytes[i] == b'.';
            i += 1;
        }
        out.push(text[start..i].trim_end_matches('.').to_string());
    }
    out
}

fn same_number(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Checks whether `trace`'s final text quotes its tools' numbers.
pub fn quote_check(trace: &Trace) -> QuoteCheck {
    let final_text = trace.outcome.final_text.as_deref();
    let in_text = final_text.map(numbers_in_text).unwrap_or_default();
    let mut numbers = Vec::new();
    let mut any_checked = false;
    let mut all_cited = true;
    // A spinning loop returns the same result under the same id again and
    // again; each is checked once.
    let mut seen = ahash::AHashSet::new();
    for e in trace.rounds.iter().flat_map(|r| &r.executions) {
        if e.outcome.is_error || !e.outcome.ran {
            continue;
        }
        if !seen.insert((&*e.id, std::sync::Arc::as_ptr(&e.outcome.content) as usize)) {
            continue;
        }
        let mut found = Vec::new();
        numbers_in(&e.outcome.content, &mut found);
        if found.is_empty() {
            continue;
        }
        let mut this_cited = false;
        for n in found {
            let cited = in_text.iter().any(|t| same_number(t, &n));
            this_cited |= cited;
            numbers.push(CitedNumber {
                id: e.id.to_string(),
                tool: e.name.to_string(),
                number: n,
                cited,
            });
        }
        any_checked = true;
        all_cited &= this_cited;
    }
    QuoteCheck {
        numbers,
        cites_tool_numbers: (any_checked && final_text.is_some()).then_some(all_cited),
    }
}

/// The replies that repeat: seed 001 counts how often the same reply came back.
pub const SPIN_THRESHOLD: u32 = 2;

/// What the end summary shows about a run, computed once per trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunAnalysis {
    /// Every warning.
    pub warnings: Vec<Warning>,
    /// Ids left unpaired at the end.
    pub unpaired: Vec<String>,
    /// How many calls really ran.
    pub tool_runs: usize,
}

/// What [`RunAnalysis`] read of a replay's first rounds (the calls that
/// ran, the longest run of one reply, the turns cut by `max_tokens` whose
/// calls ran anyway), kept beside it so that the analysis of the trace
/// grown from it (`--follow`) reads only the rounds after them.
#[derive(Debug, Clone, Default)]
pub struct RoundsTally {
    /// How many rounds are read: all but the last two (a grown replay
    /// cuts the last round it keeps).
    rounds: usize,
    tool_runs: usize,
    longest: Option<(u32, u32)>,
    truncated: Vec<Warning>,
    /// The analysis beside it was grown from an earlier one.
    grown: bool,
}

impl RoundsTally {
    /// Whether the analysis beside it was grown from an earlier one
    /// ([`RunAnalysis::grown`]) rather than made afresh.
    pub fn grown(&self) -> bool {
        self.grown
    }

    /// Reads `rounds[self.rounds..to]` into the tally.
    fn read(&mut self, rounds: &[loopdbg_engine::trace::Round], to: usize) {
        for r in &rounds[self.rounds.min(to)..to] {
            self.tool_runs += r.executions.iter().filter(|e| e.outcome.ran).count();
            // The longest run, the earliest of equal ones (as
            // `Trace::longest_identical_run` picks it).
            let key = |(run, n): (u32, u32)| (run, std::cmp::Reverse(n));
            if self
                .longest
                .is_none_or(|best| key((r.identical_run, r.number)) > key(best))
            {
                self.longest = Some((r.identical_run, r.number));
            }
            let ran_anyway = r.reply_message.is_some()
                && r.reply.finish_reason() == loopdbg_engine::session::FinishReason::Length
                && r.executions.iter().any(|e| e.message.is_some());
            if ran_anyway {
                self.truncated.push(Warning {
                    kind: WarningKind::TruncatedExecuted,
                    message: format!(
                        "round {}: the reply was cut by max_tokens, yet the loop handled its calls as if they were complete",
                        r.number
                    ),
                });
            }
        }
        self.rounds = self.rounds.max(to);
    }

    /// The tally of every round of `trace`, this one's rounds read for
    /// good but the last two.
    fn of_all(&mut self, trace: &Trace) -> RoundsTally {
        let rounds = &trace.rounds;
        self.read(rounds, rounds.len().saturating_sub(2));
        let mut all = self.clone();
        all.read(rounds, rounds.len());
        all
    }
}

impl RunAnalysis {
    /// Analyses a finished trace.
    pub fn of(trace: &Trace) -> RunAnalysis {
        RunAnalysis::grown(trace, None).0
    }

    /// [`RunAnalysis::of`] a replay, grown from `back`: the tally beside
    /// the analysis of the trace it was grown from, with the first of its
    /// messages that changed since (`loopdbg_export::replay::regrow`).
    /// Only the rounds from there on are read (on a followed gigabyte,
    /// reading every round again took 20 ms a picture). Gives what `of`
    /// gives, and the tally to grow the next from.
    pub fn grown(trace: &Trace, back: Option<(RoundsTally, usize)>) -> (RunAnalysis, RoundsTally) {
        let mut tally = match back {
            // The rounds read must be as they were: a grown replay keeps
            // the rounds asked before `since`, the last of them cut.
            Some((mut tally, since))
                if trace.rounds.partition_point(|r| r.request_len < since) > tally.rounds =>
            {
                tally.grown = true;
                tally
            }
            _ => RoundsTally::default(),
        };
        let all = tally.of_all(trace);
        // A replay's warnings never ask whether its answer quoted the
        // tools' numbers (see `warnings_with`): every number of every
        // result was collected for nothing (on a followed 281 MB log, 187,407
        // of them, 87 ms of each picture).
        let quote = match trace.is_replay() {
            true => QuoteCheck {
                numbers: Vec::new(),
                cites_tool_numbers: None,
            },
            false => quote_check(trace),
        };
        // The calls the index keeps unanswered, not every call's state.
        let unpaired: Vec<String> = trace
            .pairing
            .unanswered()
            .map(|e| e.id.to_string())
            .collect();
        let analysis = RunAnalysis {
            warnings: warnings_with(trace, &quote, &unpaired, &all),
            unpaired,
            tool_runs: all.tool_runs,
        };
        (analysis, tally)
    }
}

/// Every warning the run deserves.
pub fn warnings(trace: &Trace) -> Vec<Warning> {
    let left = trace.pairing.ledger(trace.messages.len(), &[]).unpaired();
    let rounds = RoundsTally::default().of_all(trace);
    warnings_with(trace, &quote_check(trace), &left, &rounds)
}

/// [`warnings`], given the run's quote check, the ids left unpaired and
/// what its rounds say.
fn warnings_with(
    trace: &Trace,
    check: &QuoteCheck,
    left: &[String],
    rounds: &RoundsTally,
) -> Vec<Warning> {
    let mut out = Vec::new();
    for v in &trace.violations {
        out.push(Warning {
            kind: WarningKind::Provider400,
            message: format!("round {}: {}", v.round, v.message),
        });
    }
    if let Some((run, end)) = rounds.longest
        && run >= SPIN_THRESHOLD
    {
        out.push(Warning {
            kind: WarningKind::Spin,
            message: format!(
                "spin: the same reply came back {run} times in a row (rounds {}-{end}); each one is a billed request",
                end + 1 - run
            ),
        });
    }
    let already_said = trace
        .violations
        .last()
        .is_some_and(|v| v.unpaired == left.len() && v.ids.iter().all(|id| left.contains(id)));
    if !left.is_empty() && !already_said {
        out.push(Warning {
            kind: WarningKind::DanglingAtEnd,
            message: format!(
                "the history ends with tool_use ids that have no tool_result ({}): a provider would reject the next request with a 400",
                loopdbg_engine::ledger::counted_ids(left)
            ),
        });
    }
    out.extend(rounds.truncated.iter().cloned());
    // A run that "ended normally" on a reply cut by max_tokens, or on no
    // text at all, gave a silent wrong answer.
    if trace.outcome.end == loopdbg_engine::trace::End::ModelDone {
        let last = trace.rounds.last();
        if last.is_some_and(|r| {
            r.reply.finish_reason() == loopdbg_engine::session::FinishReason::Length
        }) {
            out.push(Warning {
                kind: WarningKind::TruncatedAnswer,
                message: "the loop ended on a reply cut by max_tokens (finish_reason length) and took it as the answer: it is unfinished".into(),
            });
        } else if trace
            .outcome
            .final_text
            .as_deref()
            .is_none_or(str::is_empty)
        {
            let replay = trace.is_replay();
            out.push(Warning {
                kind: WarningKind::NoAnswer,
                message: match replay {
                    // A file may simply end before the answer: no loop
                    // "ended" there.
                    true => "the model's last turn has no answer text: nothing here shows the user an answer".into(),
                    false => "the loop ended normally but with no answer text: there is nothing to show the user".into(),
                },
            });
        }
    }
    if !trace.is_replay()
        && let Some(w) = unsourced_numbers(trace)
    {
        out.push(w);
    }
    // Seed 003's question is whether the results reached the model. A
    // replayed file answers it itself: the results are in its history.
    // What remains (an answer that quotes no number of a file listing or
    // a shell's output) is how coding agents answer, not a fault.
    let replay = trace.is_replay();
    if check.cites_tool_numbers == Some(false) && !replay {
        let mut missing: Vec<String> = Vec::new();
        for n in check.numbers.iter().filter(|n| !n.cited) {
            let item = format!("{} from {}", n.number, n.tool);
            if !missing.contains(&item) {
                missing.push(item);
            }
        }
        out.push(Warning {
            kind: WarningKind::Uncited,
            message: format!(
                "the answer does not quote the tools' numbers ({}): did the second request read the results?",
                missing.join(", ")
            ),
        });
    }
    out
}

/// An answer that states numbers no tool returned, in a run where some
/// call got no real result (a synthesized placeholder, a failure, a call
/// dropped or left unanswered): the stub's script wrote a number the tools
/// never supplied, which is what `synthesize` exists to show. Numbers the
/// user's prompt holds are the user's own.
fn unsourced_numbers(trace: &Trace) -> Option<Warning> {
    let (stated, missing) = unsourced(trace)?;
    Some(Warning {
        kind: WarningKind::Unsourced,
        message: format!(
            "the answer states {}, which no tool returned; {}: a number the stub wrote is not a fact",
            stated.join(", "),
            missing.join("; ")
        ),
    })
}

/// The numbers the answer states that no tool returned, when some call
/// got no real result (what the `unsourced` warning names); empty when it
/// does not fire. The tour's closure stop asks for them.
pub fn numbers_no_tool_returned(trace: &Trace) -> Vec<String> {
    unsourced(trace)
        .map(|(stated, _)| stated)
        .unwrap_or_default()
}

/// The numbers stated from nowhere and the calls that got no real result.
fn unsourced(trace: &Trace) -> Option<(Vec<String>, Vec<String>)> {
    let answer = trace.outcome.final_text.as_deref()?;
    let mut known = Vec::new();
    for e in trace.rounds.iter().flat_map(|r| &r.executions) {
        if e.outcome.ran && !e.outcome.is_error && !e.synthetic {
            numbers_in(&e.outcome.content, &mut known);
        }
    }
    if let Some(prompt) = trace.messages.first().and_then(|m| m.text()) {
        known.extend(numbers_in_text(&prompt));
    }
    let mut stated: Vec<String> = Vec::new();
    for n in numbers_in_text(answer) {
        if !known.iter().any(|k| same_number(k, &n)) && !stated.contains(&n) {
            stated.push(n);
        }
    }
    let mut missing: Vec<String> = Vec::new();
    for r in &trace.rounds {
        let name = |i: usize| {
            let c = &r.reply.tool_calls[i];
            format!("{} ({})", c.name, c.id)
        };
        for e in &r.executions {
            let why = match e.status {
                _ if e.synthetic => "a synthesized placeholder",
                loopdbg_engine::trace::CallStatus::Finished if e.outcome.ran => continue,
                loopdbg_engine::trace::CallStatus::Dropped => "no result: it was dropped",
                _ => "no real result",
            };
            let item = format!("{}: {why}", name(e.call));
            if !missing.contains(&item) {
                missing.push(item);
            }
        }
        // A dropped call the closure answered with a placeholder is named
        // once, by its placeholder.
        for &i in r
            .dropped
            .iter()
            .filter(|&&i| !r.executions.iter().any(|e| e.call == i))
        {
            let item = format!("{}: no result: it was dropped", name(i));
            if !missing.contains(&item) {
                missing.push(item);
            }
        }
    }
    if stated.is_empty() || missing.is_empty() {
        return None;
    }
    Some((stated, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_tokens() {
        assert_eq!(numbers_in_text("北京 18°C，晴"), vec!["18"]);
        assert_eq!(
            numbers_in_text("24 度；美元兑人民币 7.12。"),
            vec!["24", "7.12"]
        );
        assert_eq!(numbers_in_text("v1.2.3 and 3."), vec!["1.2", "3", "3"]);
        assert!(numbers_in_text("no digits. here.").is_empty());
    }

    #[test]
    fn numbers_match_by_value() {
        assert!(same_number("7.10", "7.1"));
        assert!(!same_number("18", "180"));
    }
}
