//! The loop's code beside its state, as Python Tutor shows the line being
//! executed: a short, readable agent loop, the same for every session, whose
//! strategy lines (how calls are taken, what closes the calls left without
//! a result, when the loop stops) are written as the strategy in force says.
//! Each line names the phases it runs in, so the debugger can light the
//! line of the current step.

use loopdbg_engine::strategy::{Closure, Extract, StopRule, Strategy};
use loopdbg_engine::trace::Phase;

/// One line of the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeLine {
    /// The code, indented.
    pub text: String,
    /// The phases that run this line.
    pub phases: &'static [Phase],
    /// True when the line is written by the strategy (it changes when the
    /// strategy is toggled).
    pub strategy: bool,
    /// True when the line only completes the one above it (a `raise` under
    /// its `if`): a pane too short for the whole loop folds it away.
    pub continuation: bool,
}

fn line(text: impl Into<String>, phases: &'static [Phase]) -> CodeLine {
    CodeLine {
        text: text.into(),
        phases,
        strategy: false,
        continuation: false,
    }
}

fn by_strategy(text: impl Into<String>, phases: &'static [Phase]) -> CodeLine {
    CodeLine {
        text: text.into(),
        phases,
        strategy: true,
        continuation: false,
    }
}

/// The loop under `strategy`. Each phase lights one line that is not the
/// strategy's (a folded pane shows the ◆ lines and that one).
pub fn loop_code(strategy: &Strategy) -> Vec<CodeLine> {
    use Phase::{Append, Close, Decide, Done, Execute, Extract as Ext, Reply, Request};
    let mut out = vec![
        line("messages = [user(prompt)]", &[]),
        line(format!("for turn in range({}):", strategy.max_rounds), &[]),
        line("    reply = model(messages, tools)", &[Request]),
    ];
    if strategy.stop == StopRule::Robust {
        out.push(by_strategy(
            "    if reply.stop_reason in (\"max_tokens\", \"refusal\"):",
            &[Reply],
        ));
        out.push(CodeLine {
            continuation: true,
            ..by_strategy("        raise Unfinished(reply)", &[Reply])
        });
    }
    out.push(line("    messages.append(reply)", &[Reply]));
    out.push(match strategy.extract {
        Extract::All => by_strategy("    calls = tool_uses(reply)      # all of them", &[Ext]),
        Extract::First => by_strategy("    calls = tool_uses(reply)[:1]  # the first only", &[Ext]),
    });
    out.push(line("    results = run_all(calls)", &[Execute]));
    out.push(match strategy.closure {
        Closure::Leave => by_strategy("    # calls without a result stay as they are", &[Close]),
        Closure::Synthesize => by_strategy("    results += placeholders(reply, results)", &[Close]),
        Closure::Strip => by_strategy(
            "    reply.content = answered_only(reply, results)",
            &[Close],
        ),
    });
    out.push(line("    for r in results:", &[]));
    out.push(line(
        "        messages.append(tool_result(r.id, r.value))",
        &[Append],
    ));
    out.push(match strategy.stop {
        StopRule::Content => by_strategy("    if reply.text: break", &[Decide]),
        StopRule::FinishReason => {
            by_strategy("    if reply.stop_reason == \"end_turn\": break", &[Decide])
        }
        StopRule::ToolCalls | StopRule::Robust => by_strategy("    if not calls: break", &[Decide]),
    });
    out.push(line("answer = reply.text", &[Done]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(strategy: &Strategy) -> Vec<String> {
        loop_code(strategy).into_iter().map(|l| l.text).collect()
    }

    fn strategy() -> Strategy {
        Strategy {
            extract: Extract::All,
            stop: StopRule::ToolCalls,
            max_rounds: 6,
            behavior: "b".into(),
            closure: Closure::Leave,
            interrupt: None,
        }
    }

    #[test]
    fn first_is_one_line_of_code() {
        let all = strategy();
        let first = Strategy {
            extract: Extract::First,
            ..strategy()
        };
        let (a, f) = (texts(&all), texts(&first));
        let differ: Vec<(&String, &String)> = a.iter().zip(&f).filter(|(x, y)| x != y).collect();
        assert_eq!(differ.len(), 1, "{differ:?}");
        assert!(differ[0].1.contains("[:1]"));
    }

    #[test]
    fn robust_adds_the_check_of_stop_reason() {
        let robust = Strategy {
            stop: StopRule::Robust,
            ..strategy()
        };
        assert!(texts(&robust).iter().any(|l| l.contains("max_tokens")));
        assert!(!texts(&strategy()).iter().any(|l| l.contains("max_tokens")));
    }

    /// A folded pane has room for the ◆ lines and one more: each phase
    /// lights at most one line of its own.
    #[test]
    fn each_phase_lights_at_most_one_line_that_is_not_the_strategys() {
        for stop in [StopRule::Robust, StopRule::Content, StopRule::FinishReason] {
            let code = loop_code(&Strategy { stop, ..strategy() });
            for phase in Phase::ALL {
                let own = code
                    .iter()
                    .filter(|l| !l.strategy && l.phases.contains(&phase))
                    .count();
                assert!(own <= 1, "{phase:?} under {stop:?} lights {own}");
            }
        }
    }

    #[test]
    fn every_phase_of_a_round_has_a_line() {
        let code = loop_code(&strategy());
        for phase in Phase::ALL {
            assert!(code.iter().any(|l| l.phases.contains(&phase)), "{phase:?}");
        }
    }
}
