//! Headless reports of a run: the JSON document of `loopdbg run --format
//! json`, the seed-style text trace, and the rows of `loopdbg compare`.
//! Pure: they build values and strings; the binary prints them.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::checks::{QuoteCheck, Warning, quote_check, warnings};
use crate::walkthrough::{self, Walkthrough};
use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::message::Message;
use loopdbg_engine::session::{Json, Session, Text};
use loopdbg_engine::strategy::{Extract, StopRule, Strategy};
use loopdbg_engine::trace::{CallStatus, Trace, Violation};

/// One round, flattened for reports.
#[derive(Debug, Clone, Serialize)]
pub struct RoundReport {
    /// 1-based.
    pub round: u32,
    /// The reply text (`null` and `""` kept apart).
    pub text: Option<Text>,
    /// `finish_reason`.
    pub finish_reason: &'static str,
    /// `name(id)` of every call in the reply.
    pub tool_calls: Vec<CallRef>,
    /// Calls the loop ran or refused, with what came back.
    pub executed: Vec<ExecutedRef>,
    /// Calls the loop dropped.
    pub dropped: Vec<CallRef>,
    /// Calls the `strip` closure removed from the reply.
    pub stripped: Vec<CallRef>,
    /// The streaming failure of this round, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<loopdbg_engine::trace::FallbackRecord>,
    /// False when the reply never joined the history (robust refused it).
    pub appended: bool,
    /// Continue or stop, and why.
    pub decision: Option<String>,
    /// How many identical replies in a row end here.
    pub identical_run: u32,
}

/// A call by id and name.
#[derive(Debug, Clone, Serialize)]
pub struct CallRef {
    /// Call id.
    pub id: Text,
    /// Tool name.
    pub name: Text,
}

/// A call the loop handled.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutedRef {
    /// Call id.
    pub id: Text,
    /// Tool name.
    pub name: Text,
    /// Arguments.
    pub args: Json,
    /// What came back.
    pub result: Json,
    /// True for an error result.
    pub is_error: bool,
    /// False when the whitelist refused it.
    pub ran: bool,
    /// How it ended.
    pub status: CallStatus,
    /// Virtual ms when it ended.
    pub ended_ms: u64,
    /// True when its result joined the history.
    pub appended: bool,
    /// True when the result is a placeholder the loop wrote.
    pub synthetic: bool,
}

/// Everything `loopdbg run --format json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The session's title.
    pub session: String,
    /// The strategy used.
    pub strategy: Strategy,
    /// Model calls made.
    pub rounds: u32,
    /// Names of executed calls, in order (refused calls are not runs).
    pub tool_runs: Vec<String>,
    /// The ids of the calls left without a result, one per call (an id a
    /// stub reused in every round appears once per round).
    pub unpaired: Vec<String>,
    /// `model_done`, `max_rounds` or `error`.
    pub end: &'static str,
    /// One sentence on the end.
    pub end_detail: String,
    /// The loop's answer.
    pub final_text: Option<String>,
    /// The history's roles.
    pub roles: Vec<&'static str>,
    /// The final history.
    pub messages: Vec<Message>,
    /// Requests a provider would have rejected.
    pub violations: Vec<Violation>,
    /// Spin, uncited numbers, 400s.
    pub warnings: Vec<Warning>,
    /// The longest run of identical consecutive replies.
    pub identical_replies: u32,
    /// Did the answer quote the tools' numbers.
    pub quote_check: QuoteCheck,
    /// Seed 003's four steps and three logs, at the end of the run.
    pub walkthrough: Walkthrough,
    /// Round by round.
    pub round_details: Vec<RoundReport>,
}

impl RunReport {
    /// Builds the report of a finished trace.
    pub fn new(session: &Session, trace: &Trace) -> RunReport {
        let last = trace.len() - 1;
        let ledger = Ledger::of(&trace.messages, &[]);
        RunReport {
            session: session.title.clone(),
            strategy: trace.strategy.clone(),
            rounds: trace.outcome.requests,
            tool_runs: trace.tool_runs().into_iter().map(str::to_string).collect(),
            unpaired: ledger.unpaired(),
            end: trace.outcome.end.as_str(),
            end_detail: trace.outcome.detail.clone(),
            final_text: trace.outcome.final_text.clone(),
            roles: trace.roles().into_iter().map(|r| r.as_str()).collect(),
            messages: trace.messages.clone(),
            violations: trace.violations.clone(),
            warnings: warnings(trace),
            identical_replies: trace.longest_identical_run().map_or(0, |(n, _)| n),
            quote_check: quote_check(trace),
            walkthrough: walkthrough::at(trace, last),
            round_details: trace
                .rounds
                .iter()
                .map(|r| {
                    let call = |i: &usize| CallRef {
                        id: r.reply.tool_calls[*i].id.clone(),
                        name: r.reply.tool_calls[*i].name.clone(),
                    };
                    RoundReport {
                        round: r.number,
                        text: r.reply.text.clone(),
                        finish_reason: r.reply.finish_reason().as_str(),
                        tool_calls: (0..r.reply.tool_calls.len()).map(|i| call(&i)).collect(),
                        executed: r
                            .executions
                            .iter()
                            .filter(|e| e.status != CallStatus::Dropped || e.message.is_some())
                            .map(|e| ExecutedRef {
                                id: e.id.clone(),
                                name: e.name.clone(),
                                args: e.args.clone(),
                                result: e.outcome.content.clone(),
                                is_error: e.outcome.is_error,
                                ran: e.outcome.ran,
                                status: e.status,
                                ended_ms: e.ended_ms,
                                appended: e.message.is_some(),
                                synthetic: e.synthetic,
                            })
                            .collect(),
                        stripped: r.stripped.iter().map(call).collect(),
                        fallback: r.fallback.clone(),
                        dropped: r.dropped.iter().map(call).collect(),
                        appended: r.reply_message.is_some(),
                        decision: r.decision.as_ref().map(|d| {
                            format!("{}: {}", if d.stop { "stop" } else { "continue" }, d.reason)
                        }),
                        identical_run: r.identical_run,
                    }
                })
                .collect(),
        }
    }

    /// The seed-style text trace.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let s = &self.strategy;
        let _ = writeln!(
            out,
            "== {} ==\nextract {} / stop {} / behavior {} / max {} rounds / closure {}",
            clean(&self.session),
            s.extract,
            s.stop,
            clean(&s.behavior),
            s.max_rounds,
            s.closure
        );
        for r in &self.round_details {
            write_round(&mut out, r);
        }
        let _ = writeln!(out, "roles: {}", self.roles.join(" "));
        let _ = writeln!(
            out,
            "unpaired tool_use: {}",
            if self.unpaired.is_empty() {
                "none".to_string()
            } else {
                format!(
                    "{} (called, no tool_result in the history)",
                    clean(&loopdbg_engine::ledger::counted_ids(&self.unpaired))
                )
            }
        );
        let _ = writeln!(
            out,
            "tool runs: {}{}",
            self.tool_runs.len(),
            if self.tool_runs.is_empty() {
                String::new()
            } else {
                format!(" ({})", clean(&abbreviated(&self.tool_runs, 12)))
            }
        );
        let _ = writeln!(out, "end: {} ({})", self.end, clean(&self.end_detail));
        let _ = writeln!(out, "final text: {}", show_text(self.final_text.as_deref()));
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "warnings:");
            for w in dedup_warnings(&self.warnings) {
                let _ = writeln!(out, "  - {}", clean(&w));
            }
        }
        out
    }
}

/// One round of the seed-style text trace.
fn write_round(out: &mut String, r: &RoundReport) {
    if let Some(f) = &r.fallback {
        let ids: Vec<String> = f
            .partial
            .iter()
            .map(|c| format!("{}({})", clean(&c.name), clean(&c.id)))
            .collect();
        let _ = writeln!(
            out,
            "round {} stream broke @{}ms after {} tool_use block(s): {}; the streaming executor is discarded, the loop retries without streaming",
            r.round,
            f.broke_at_ms,
            f.partial.len(),
            ids.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "round {} assistant text: {}",
        r.round,
        show_text(r.text.as_deref())
    );
    let calls = if r.tool_calls.is_empty() {
        "none".to_string()
    } else {
        list(
            r.tool_calls
                .iter()
                .map(|c| format!("{}({})", clean(&c.name), clean(&c.id))),
        )
    };
    let _ = writeln!(
        out,
        "  tool_use: {calls}   finish_reason: {}",
        r.finish_reason
    );
    if !r.appended {
        let _ = writeln!(
            out,
            "  not appended: the loop refused this reply before it joined the history"
        );
    }
    for e in &r.executed {
        write_execution(out, r, e);
    }
    if let Some(f) = &r.fallback {
        for (id, at) in &f.rejected {
            let _ = writeln!(
                out,
                "  rejected @{at}ms: late result for {} from the discarded executor (not appended)",
                clean(id)
            );
        }
    }
    if !r.stripped.is_empty() {
        let _ = writeln!(
            out,
            "  stripped from the reply: {}",
            list(
                r.stripped
                    .iter()
                    .map(|c| format!("{}({})", clean(&c.name), clean(&c.id)))
            )
        );
    }
    if !r.dropped.is_empty() {
        let _ = writeln!(
            out,
            "  dropped (not executed): {}",
            list(
                r.dropped
                    .iter()
                    .map(|c| format!("{}({})", clean(&c.name), clean(&c.id)))
            )
        );
    }
    if let Some(d) = &r.decision {
        let _ = writeln!(out, "  decide: {}", clean(d));
    }
}

/// One call of a round, and what became of its result.
fn write_execution(out: &mut String, r: &RoundReport, e: &ExecutedRef) {
    let at = if e.ended_ms > 0 {
        format!(" @{}ms", e.ended_ms)
    } else {
        String::new()
    };
    let verb = match e.status {
        CallStatus::Finished if e.ran => "executed",
        CallStatus::Finished => "refused (not run)",
        CallStatus::Failed => "failed",
        CallStatus::TimedOut => "timed out",
        CallStatus::Cancelled => "cancelled",
        CallStatus::Interrupted => "interrupted",
        CallStatus::Dropped => "dropped",
    };
    if e.synthetic && e.appended {
        let _ = writeln!(
            out,
            "  {verb}{at}: {}({}) -> synthesized result {}",
            clean(&e.name),
            clean(&e.id),
            clean(&compact(&e.result))
        );
    } else if e.synthetic {
        let fate = if r.stripped.iter().any(|c| c.id == e.id) {
            "its tool_use is stripped from the reply"
        } else {
            "left dangling"
        };
        let _ = writeln!(
            out,
            "  {verb}{at}: {}({}) -> no result ({fate})",
            clean(&e.name),
            clean(&e.id)
        );
    } else {
        let err = if e.is_error { " [error]" } else { "" };
        let _ = writeln!(
            out,
            "  {verb}{at}: {} -> {}{err}",
            clean(&e.name),
            clean(&compact(&e.result))
        );
    }
}

/// Violations repeat round after round in a spinning loop; say each once
/// with the rounds it happened in. Unanswered calls pile up round by
/// round, so the last round's 400s say it all; each of those is said
/// (a request can break more than one rule).
pub fn dedup_warnings(warnings: &[Warning]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rounds_400: Vec<String> = Vec::new();
    let mut last_round: Vec<String> = Vec::new();
    for w in warnings {
        if w.kind == crate::checks::WarningKind::Provider400 {
            let (round, msg) = w.message.split_once(": ").unwrap_or(("", &w.message));
            let round = round.trim_start_matches("round ").to_string();
            if rounds_400.last() != Some(&round) {
                rounds_400.push(round);
                last_round.clear();
            }
            last_round.push(msg.to_string());
        } else {
            out.push(w.message.clone());
        }
    }
    for msg in last_round {
        out.push(format!(
            "request of round {}: {msg}",
            abbreviated(&rounds_400, 8)
        ));
    }
    out
}

fn abbreviated(items: &[String], keep: usize) -> String {
    if items.len() <= keep {
        items.join(", ")
    } else {
        format!(
            "{}, … {} more",
            items[..keep].join(", "),
            items.len() - keep
        )
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// A reply text as the seeds print it: `null`, `""`, or the text.
pub fn show_text(text: Option<&str>) -> String {
    match text {
        None => "null".to_string(),
        Some("") => "\"\"".to_string(),
        Some(t) => clean(t),
    }
}

/// Compact JSON on one line.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

pub use loopdbg_engine::diagnostics::inert::clean;

/// One row of `loopdbg compare`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// The session's file name.
    pub session: String,
    /// Extraction.
    pub extract: Extract,
    /// Stop rule.
    pub stop: StopRule,
    /// Stub behavior.
    pub behavior: String,
    /// Model calls made.
    pub rounds: u32,
    /// Executed calls, in order.
    pub tool_runs: Vec<String>,
    /// How many calls were left unpaired.
    pub unpaired: usize,
    /// How it ended.
    pub end: &'static str,
    /// The loop's answer.
    pub final_text: Option<String>,
    /// The kinds of warning the run deserves (a 400 on the way, a spin, a
    /// truncated or missing answer…): a run can end `model_done` and still
    /// be wrong.
    pub warnings: Vec<&'static str>,
}

/// Every extraction × stop rule × behavior of `session`; the rest of the
/// strategy (round limit, closure) is `base`'s, so the debugger's table
/// answers for the strategy on screen.
pub fn compare_rows(origin: &str, session: &Session, base: &Strategy) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for behavior in session.behavior_names() {
        for extract in Extract::ALL {
            for stop in StopRule::ALL {
                let strategy = Strategy {
                    extract,
                    stop,
                    behavior: behavior.to_string(),
                    ..base.clone()
                };
                let trace = loopdbg_engine::run(session, &strategy);
                rows.push(CompareRow {
                    session: origin.to_string(),
                    extract,
                    stop,
                    behavior: behavior.to_string(),
                    rounds: trace.outcome.requests,
                    tool_runs: trace.tool_runs().into_iter().map(str::to_string).collect(),
                    unpaired: Ledger::of(&trace.messages, &[]).unpaired().len(),
                    end: trace.outcome.end.as_str(),
                    final_text: trace.outcome.final_text.clone(),
                    warnings: {
                        let mut kinds: Vec<&'static str> = crate::checks::warnings(&trace)
                            .into_iter()
                            .map(|w| w.kind.as_str())
                            .collect();
                        kinds.dedup();
                        kinds
                    },
                });
            }
        }
    }
    rows
}

/// Compare rows as a Markdown table.
pub fn compare_markdown(rows: &[CompareRow]) -> String {
    let mut out = String::from(
        "| session | extract | stop | behavior | rounds | tool runs | unpaired | end | warnings | final text |\n|---|---|---|---|---:|---|---:|---|---|---|\n",
    );
    for r in rows {
        let runs = if r.tool_runs.is_empty() {
            "0".to_string()
        } else {
            format!("{} [{}]", r.tool_runs.len(), abbreviated(&r.tool_runs, 4))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            md(&r.session),
            r.extract,
            r.stop,
            md(&r.behavior),
            r.rounds,
            md(&runs),
            r.unpaired,
            r.end,
            if r.warnings.is_empty() {
                "—".to_string()
            } else {
                r.warnings.join(", ")
            },
            md(&show_text(r.final_text.as_deref()))
        );
    }
    out
}

fn md(text: &str) -> String {
    clean(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_escapes_control_characters() {
        assert_eq!(clean("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
        assert_eq!(clean("北京"), "北京");
    }

    #[test]
    fn texts_show_null_and_empty_apart() {
        assert_eq!(show_text(None), "null");
        assert_eq!(show_text(Some("")), "\"\"");
    }
}
