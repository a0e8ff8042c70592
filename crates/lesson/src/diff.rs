//! Two runs side by side: aligned by round and by tool call, the first
//! place they part, and what differs after (seed 000's comparison table,
//! for any two runs: two strategies, two sessions, a fork and its origin).

use serde::Serialize;

use crate::report::{RoundReport, RunReport, clean, compact};
use loopdbg_engine::Strategy;
use loopdbg_engine::session::{Choice, Session};
use loopdbg_engine::trace::Trace;

/// One side of a diff.
pub struct Side<'a> {
    /// How the side is named (`weather_fx.json [extract first]`).
    pub label: String,
    /// Its session.
    pub session: &'a Session,
    /// Its recorded run.
    pub trace: &'a Trace,
}

/// A side that owns its run (what `loopdbg diff` builds from a file).
pub struct Run {
    /// How the side is named.
    pub label: String,
    /// Its session.
    pub session: Session,
    /// Its recorded run.
    pub trace: Trace,
}

impl Run {
    /// `session` run with its opening strategy and `choice` applied,
    /// labelled `name [strategy]`; the error is the choice's, as the user
    /// typed it.
    pub fn ran(name: &str, session: Session, choice: &Choice) -> Result<Run, String> {
        let strategy = Strategy::chosen(&session, choice)?;
        let trace = loopdbg_engine::run(&session, &strategy);
        Ok(Run {
            label: format!("{name} [{}]", strategy.label()),
            session,
            trace,
        })
    }

    /// The run as a side to diff.
    pub fn side(&self) -> Side<'_> {
        Side {
            label: self.label.clone(),
            session: &self.session,
            trace: &self.trace,
        }
    }
}

/// What one round looks like, reduced to what a diff compares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundView {
    /// The reply's text.
    pub text: Option<String>,
    /// `finish_reason`.
    pub finish_reason: String,
    /// `name(id)` of every call in the reply.
    pub calls: Vec<String>,
    /// Ids of the calls the loop ran.
    pub taken: Vec<String>,
    /// Ids of the calls the loop dropped.
    pub dropped: Vec<String>,
    /// `id → result` of the calls that came back.
    pub results: Vec<String>,
    /// The loop's decision.
    pub decision: Option<String>,
}

/// A round of both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundPair {
    /// 1-based.
    pub round: u32,
    /// The left run's round, if it got that far.
    pub left: Option<RoundView>,
    /// The right run's round.
    pub right: Option<RoundView>,
    /// What differs, in words (empty when the round is the same).
    pub differences: Vec<String>,
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// What is compared.
    pub what: &'static str,
    /// The left run's value.
    pub left: String,
    /// The right run's value.
    pub right: String,
    /// True when they are equal.
    pub same: bool,
}

/// Where two runs first part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// The round.
    pub round: u32,
    /// What parts them, in words.
    pub what: String,
    /// Call ids one side ran and the other dropped or never saw.
    pub dropped_by_left: Vec<String>,
    /// The same the other way round.
    pub dropped_by_right: Vec<String>,
}

/// The diff of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// The left run's label.
    pub left: String,
    /// The right run's label.
    pub right: String,
    /// Where they first part; `None` when the runs are the same.
    pub first_divergence: Option<Divergence>,
    /// Every round of either run.
    pub rounds: Vec<RoundPair>,
    /// Rounds, calls, unpaired ids, provider errors, end, final answer.
    pub summary: Vec<SummaryRow>,
}

impl RoundView {
    fn of(r: &RoundReport) -> RoundView {
        RoundView {
            text: r.text.as_deref().map(str::to_string),
            finish_reason: r.finish_reason.to_string(),
            calls: r
                .tool_calls
                .iter()
                .map(|c| format!("{}({})", c.name, c.id))
                .collect(),
            taken: r.executed.iter().map(|e| e.id.to_string()).collect(),
            dropped: r.dropped.iter().map(|c| c.id.to_string()).collect(),
            results: r
                .executed
                .iter()
                .filter(|e| e.appended)
                .map(|e| format!("{} → {}", e.id, short(&clean(&compact(&e.result)), 60)))
                .collect(),
            decision: r.decision.clone(),
        }
    }
}

/// At most `n` characters, with `…` when cut.
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn join(ids: &[String]) -> String {
    if ids.is_empty() {
        "—".into()
    } else {
        ids.join(" ")
    }
}

fn differences(l: &RoundView, r: &RoundView) -> Vec<String> {
    let mut out = Vec::new();
    // Each part of the reply that differs, said as itself: the calls, the
    // reason it ended, its text (quoted, cut to 60 characters).
    if l.calls != r.calls {
        out.push(format!(
            "reply's calls: left {} │ right {}",
            join(&l.calls),
            join(&r.calls)
        ));
    }
    if l.finish_reason != r.finish_reason {
        out.push(format!(
            "reply ended: left {} │ right {}",
            l.finish_reason, r.finish_reason
        ));
    }
    if l.text != r.text {
        let quoted = |t: &Option<String>| match t {
            Some(t) => format!("{:?}", short(t, 60)),
            None => "no text".to_string(),
        };
        out.push(format!(
            "reply's text: left {} │ right {}",
            quoted(&l.text),
            quoted(&r.text)
        ));
    }
    if l.taken != r.taken || l.dropped != r.dropped {
        out.push(format!(
            "calls run: left {} (dropped {}) │ right {} (dropped {})",
            join(&l.taken),
            join(&l.dropped),
            join(&r.taken),
            join(&r.dropped)
        ));
    }
    if l.results != r.results {
        out.push(format!(
            "results appended: left {} │ right {}",
            join(&l.results),
            join(&r.results)
        ));
    }
    if l.decision != r.decision {
        out.push(format!(
            "decision: left {} │ right {}",
            l.decision.as_deref().unwrap_or("—"),
            r.decision.as_deref().unwrap_or("—")
        ));
    }
    out
}

fn not_in(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| !b.contains(x)).cloned().collect()
}

/// Compares two runs.
pub fn diff(left: &Side, right: &Side) -> Diff {
    let lr = RunReport::new(left.session, left.trace);
    let rr = RunReport::new(right.session, right.trace);
    let n = lr.round_details.len().max(rr.round_details.len());
    let mut rounds = Vec::with_capacity(n);
    let mut first = None;
    for i in 0..n {
        let l = lr.round_details.get(i).map(RoundView::of);
        let r = rr.round_details.get(i).map(RoundView::of);
        let differences = match (&l, &r) {
            (Some(a), Some(b)) => differences(a, b),
            (Some(_), None) => vec!["only the left run has a reply in this round".into()],
            (None, Some(_)) => vec!["only the right run has a reply in this round".into()],
            (None, None) => Vec::new(),
        };
        let round = i as u32 + 1;
        if first.is_none() && !differences.is_empty() {
            let empty = RoundView {
                text: None,
                finish_reason: String::new(),
                calls: Vec::new(),
                taken: Vec::new(),
                dropped: Vec::new(),
                results: Vec::new(),
                decision: None,
            };
            let (a, b) = (l.as_ref().unwrap_or(&empty), r.as_ref().unwrap_or(&empty));
            first = Some(Divergence {
                round,
                what: differences[0].clone(),
                dropped_by_left: not_in(&b.taken, &a.taken),
                dropped_by_right: not_in(&a.taken, &b.taken),
            });
        }
        rounds.push(RoundPair {
            round,
            left: l,
            right: r,
            differences,
        });
    }
    let dropped = |rep: &RunReport| {
        rep.round_details
            .iter()
            .flat_map(|r| r.dropped.iter().map(|c| c.id.to_string()))
            .collect::<Vec<_>>()
    };
    let errors = |rep: &RunReport| {
        if rep.violations.is_empty() {
            "none".to_string()
        } else {
            rep.violations
                .iter()
                .map(|v| format!("round {}: {}", v.round, clean(&v.message)))
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let row = |what, left: String, right: String| SummaryRow {
        what,
        same: left == right,
        left,
        right,
    };
    let final_text = |rep: &RunReport| rep.final_text.as_deref().map_or("null".to_string(), clean);
    let warnings = |rep: &RunReport| {
        if rep.warnings.is_empty() {
            "none".to_string()
        } else {
            rep.warnings
                .iter()
                .map(|w| w.kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let summary = vec![
        row("rounds", lr.rounds.to_string(), rr.rounds.to_string()),
        row("tool runs", join(&lr.tool_runs), join(&rr.tool_runs)),
        row("calls dropped", join(&dropped(&lr)), join(&dropped(&rr))),
        row("unpaired ids", join(&lr.unpaired), join(&rr.unpaired)),
        row("provider errors (400)", errors(&lr), errors(&rr)),
        row(
            "end",
            format!("{} ({})", lr.end, clean(&lr.end_detail)),
            format!("{} ({})", rr.end, clean(&rr.end_detail)),
        ),
        row("final answer", final_text(&lr), final_text(&rr)),
        row("warnings", warnings(&lr), warnings(&rr)),
    ];
    Diff {
        left: left.label.clone(),
        right: right.label.clone(),
        first_divergence: first,
        rounds,
        summary,
    }
}

impl Diff {
    /// The diff as text, for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!("left:  {}\nright: {}\n", self.left, self.right);
        match &self.first_divergence {
            None => out.push_str("the runs are the same, round by round\n"),
            Some(d) => {
                out.push_str(&format!(
                    "first divergence: round {} — {}\n",
                    d.round, d.what
                ));
                if !d.dropped_by_left.is_empty() {
                    out.push_str(&format!(
                        "  left does not run: {}\n",
                        d.dropped_by_left.join(", ")
                    ));
                }
                if !d.dropped_by_right.is_empty() {
                    out.push_str(&format!(
                        "  right does not run: {}\n",
                        d.dropped_by_right.join(", ")
                    ));
                }
            }
        }
        out.push('\n');
        for r in &self.rounds {
            let mark = if r.differences.is_empty() { "=" } else { "≠" };
            let calls = r
                .left
                .as_ref()
                .or(r.right.as_ref())
                .map(|v| join(&v.calls))
                .unwrap_or_default();
            out.push_str(&format!("{mark} round {}  {calls}\n", r.round));
            for d in &r.differences {
                out.push_str(&format!("    {d}\n"));
            }
        }
        out.push('\n');
        let width = self.summary.iter().map(|s| s.what.len()).max().unwrap_or(0);
        for s in &self.summary {
            let mark = if s.same { " " } else { "≠" };
            out.push_str(&format!(
                "{mark} {:width$}  left: {}\n  {:width$}  right: {}\n",
                s.what, s.left, "", s.right
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_engine::strategy::{Extract, Strategy};

    fn fx() -> Session {
        loopdbg_engine::fixtures::two_calls("18°C, 7.12")
    }

    #[test]
    fn first_against_all_parts_at_round_1_over_the_dropped_call() {
        let s = fx();
        let mut first = Strategy::for_session(&s);
        first.extract = Extract::First;
        let all = Strategy::for_session(&s);
        let (tf, ta) = (
            loopdbg_engine::run(&s, &first),
            loopdbg_engine::run(&s, &all),
        );
        let d = diff(
            &Side {
                label: "first".into(),
                session: &s,
                trace: &tf,
            },
            &Side {
                label: "all".into(),
                session: &s,
                trace: &ta,
            },
        );
        let div = d.first_divergence.expect("they part");
        assert_eq!(div.round, 1);
        assert_eq!(div.dropped_by_left, ["toolu_f1"]);
        assert!(div.dropped_by_right.is_empty());
        let dropped = d
            .summary
            .iter()
            .find(|r| r.what == "calls dropped")
            .unwrap();
        assert_eq!(dropped.left, "toolu_f1");
        assert!(!dropped.same);
    }

    #[test]
    fn a_run_against_itself_is_the_same() {
        let s = fx();
        let t = loopdbg_engine::run(&s, &Strategy::for_session(&s));
        let side = || Side {
            label: "x".into(),
            session: &s,
            trace: &t,
        };
        let d = diff(&side(), &side());
        assert!(d.first_divergence.is_none());
        assert!(d.summary.iter().all(|r| r.same));
        assert!(d.to_text().contains("the runs are the same"));
    }
}
