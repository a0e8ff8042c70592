//! Every tool_use gets its tool_result, even under faults: one test per
//! fault and closure policy on the final history, and a property test over
//! random sessions.

use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::message::{Block, Role};
use loopdbg_engine::strategy::{Closure, Extract, StopRule};
use loopdbg_engine::trace::{CallStatus, End, Phase, StepEvent, Trace};
use loopdbg_engine::{Session, Strategy};

fn run(name: &str, closure: Closure) -> Trace {
    let s = crate::common::session(name);
    let mut strategy = Strategy::for_session(&s);
    strategy.closure = closure;
    loopdbg_engine::run(&s, &strategy)
}

/// No unpaired id, no orphan result, no id answered twice, in the final
/// history and in every request sent.
fn assert_whole(t: &Trace, what: &str) {
    for (k, step) in t.steps.iter().enumerate() {
        if step.phase == Phase::Request || k + 1 == t.len() {
            let ledger = t.ledger_at(k);
            assert!(
                ledger.unpaired().is_empty(),
                "{what}: unpaired at step {k}: {:?}",
                ledger.unpaired()
            );
            assert!(
                ledger.orphans.is_empty(),
                "{what}: orphan results at step {k}"
            );
            assert!(
                ledger.entries.iter().all(|e| e.results <= e.calls),
                "{what}: a result appended twice"
            );
        }
    }
    assert!(t.violations.is_empty(), "{what}: {:?}", t.violations);
}

fn dangling(t: &Trace) -> Vec<String> {
    Ledger::of(&t.messages, &[]).unpaired()
}

fn result_text(t: &Trace, id: &str) -> Option<String> {
    t.messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
                ..
            } if &**tool_use_id == id => Some(
                content
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| content.to_string()),
            ),
            _ => None,
        })
}

#[test]
fn interrupt_under_each_closure() {
    let t = run("fault_interrupt.json", Closure::Synthesize);
    assert_whole(&t, "interrupt/synthesize");
    assert_eq!(t.outcome.end, End::Error);
    assert_eq!(
        result_text(&t, "toolu_test").as_deref(),
        Some("interrupted by user")
    );
    assert_eq!(t.tool_runs(), ["read_file", "grep"]);
    let statuses: Vec<CallStatus> = t.rounds[0].executions.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Finished,
            CallStatus::Finished,
            CallStatus::Interrupted
        ]
    );
    assert!(
        t.steps
            .iter()
            .any(|s| s.event == Some(StepEvent::Interrupted) && s.time_ms == 200)
    );

    let t = run("fault_interrupt.json", Closure::Leave);
    assert_eq!(dangling(&t), ["toolu_test"]);

    let t = run("fault_interrupt.json", Closure::Strip);
    assert_whole(&t, "interrupt/strip");
    let reply = &t.messages[1];
    assert_eq!(
        reply.tool_uses().map(|(id, _)| id).collect::<Vec<_>>(),
        ["toolu_read", "toolu_grep"]
    );
    assert_eq!(t.rounds[0].stripped, [2]);
}

#[test]
fn sibling_error_under_each_closure() {
    let t = run("fault_sibling_error.json", Closure::Synthesize);
    assert_whole(&t, "sibling/synthesize");
    assert_eq!(
        result_text(&t, "toolu_cfg_c").as_deref(),
        Some("cancelled: sibling failed")
    );
    assert!(
        result_text(&t, "toolu_deploy")
            .unwrap()
            .contains("permission denied")
    );
    assert_eq!(t.outcome.end, End::ModelDone);
    // Results in call order, whatever order the calls ended in.
    let order: Vec<&str> = t.messages[2..5]
        .iter()
        .flat_map(|m| m.tool_result_ids())
        .collect();
    assert_eq!(order, ["toolu_cfg_a", "toolu_deploy", "toolu_cfg_c"]);

    let t = run("fault_sibling_error.json", Closure::Leave);
    assert_eq!(dangling(&t), ["toolu_cfg_c"]);
    assert_eq!(t.violations.len(), 1, "the next request would get a 400");

    let t = run("fault_sibling_error.json", Closure::Strip);
    assert_whole(&t, "sibling/strip");
}

#[test]
fn timeout_is_an_error_result_not_a_missing_message() {
    for closure in Closure::ALL {
        let t = run("fault_timeout.json", closure);
        assert_whole(&t, "timeout");
        let e = &t.rounds[0].executions[1];
        assert_eq!(
            (e.status, e.ended_ms, e.outcome.is_error),
            (CallStatus::TimedOut, 1000, true)
        );
    }
}

#[test]
fn fallback_rejects_late_results_with_old_ids() {
    for closure in Closure::ALL {
        let t = run("fault_fallback.json", closure);
        assert_whole(&t, "fallback");
        let f = t.rounds[0].fallback.as_ref().expect("the stream broke");
        assert_eq!(f.partial.len(), 1);
        assert_eq!(f.rejected.len(), 1);
        assert_eq!(&*f.rejected[0].0, "toolu_a");
        // The stale id never reaches the history.
        assert!(result_text(&t, "toolu_a").is_none());
        assert!(result_text(&t, "toolu_a_retry").is_some());
        assert!(
            t.steps
                .iter()
                .any(|s| s.event == Some(StepEvent::LateResultRejected))
        );
    }
}

#[test]
fn truncated_turn_robust_discards_careless_runs() {
    let robust = run("fault_truncated.json", Closure::Synthesize);
    assert_whole(&robust, "truncated/robust");
    assert_eq!(robust.outcome.end, End::Error);
    assert!(robust.tool_runs().is_empty());
    let s = crate::common::session("fault_truncated.json");
    let mut careless = Strategy::for_session(&s);
    careless.stop = StopRule::ToolCalls;
    let t = loopdbg_engine::run(&s, &careless);
    assert_eq!(t.outcome.end, End::ModelDone);
    let warnings = loopdbg_lesson::checks::warnings(&t);
    assert!(
        warnings
            .iter()
            .any(|w| w.kind == loopdbg_lesson::checks::WarningKind::TruncatedExecuted),
        "{warnings:?}"
    );
}

#[test]
fn bad_arguments_get_error_results_naming_the_problem() {
    let t = run("fault_bad_args.json", Closure::Leave);
    assert_whole(&t, "bad args");
    assert!(
        result_text(&t, "call_1")
            .unwrap()
            .contains("not valid JSON")
    );
    let second = result_text(&t, "call_2").unwrap();
    assert!(
        second.contains("invalid arguments") && second.contains("location"),
        "{second}"
    );
    assert_eq!(t.tool_runs(), ["get_weather"]);
    assert_eq!(t.outcome.final_text.as_deref(), Some("北京今天 18°C，晴。"));
}

#[test]
fn sub_agent_is_one_tool_result_and_keeps_its_own_run() {
    let t = run("fault_subagent.json", Closure::Synthesize);
    assert_whole(&t, "sub-agent");
    let e = &t.rounds[0].executions[0];
    assert_eq!(e.outcome.content["status"], "completed");
    let child = e.outcome.child.as_ref().expect("the child's run is kept");
    assert_eq!(child.trace.outcome.requests, 2);
    // The parent waits for the child's loop in virtual time (its search takes 60 ms).
    assert_eq!(child.trace.virtual_time_ms(), 60);
    assert_eq!(e.ended_ms, 60);
    assert_eq!(child.trace.tool_runs(), ["search"]);
    // The parent's history has one result for the agent call, nothing of the child's.
    let roles: Vec<Role> = t.roles();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(result_text(&t, "toolu_s1").is_none());
}

#[test]
fn dropped_calls_under_each_closure() {
    let s = crate::common::session("weather_fx.json");
    let mut strategy = Strategy::for_session(&s);
    strategy.extract = Extract::First;
    strategy.stop = StopRule::ToolCalls;
    strategy.behavior = "skip".into();
    strategy.closure = Closure::Leave;
    assert_eq!(dangling(&loopdbg_engine::run(&s, &strategy)), ["toolu_f1"]);
    strategy.closure = Closure::Synthesize;
    let t = loopdbg_engine::run(&s, &strategy);
    assert_whole(&t, "dropped/synthesize");
    assert!(
        result_text(&t, "toolu_f1")
            .unwrap()
            .contains("not executed")
    );
    strategy.closure = Closure::Strip;
    let t = loopdbg_engine::run(&s, &strategy);
    assert_whole(&t, "dropped/strip");
}

mod property {
    use super::{Phase, Session};
    use loopdbg_engine::Strategy as LoopStrategy;
    use proptest::prelude::*;
    use serde_json::json;

    #[derive(Debug, Clone)]
    struct ToolSpec {
        latency: u64,
        fails: bool,
        hard: bool,
        timeout: Option<u64>,
    }

    fn tool() -> impl Strategy<Value = ToolSpec> {
        (
            0u64..400,
            prop::bool::weighted(0.25),
            any::<bool>(),
            prop::option::of(50u64..300),
        )
            .prop_map(|(latency, fails, hard, timeout)| ToolSpec {
                latency,
                fails,
                hard,
                timeout,
            })
    }

    fn session(
        tools: &[ToolSpec],
        rounds: &[Vec<usize>],
        interrupt: Option<(u32, u64)>,
        fallback: Option<(u32, u64)>,
    ) -> Session {
        let tool_defs: Vec<serde_json::Value> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut d = json!({"name": format!("t{i}"), "latency_ms": t.latency,
                    "table": [{"args": {}, "result": {"tool": i}}]});
                if t.fails {
                    d["fails"] = json!("boom");
                    d["hard"] = json!(t.hard);
                }
                if let Some(to) = t.timeout {
                    d["timeout_ms"] = json!(to);
                }
                d
            })
            .collect();
        let mut rules: Vec<serde_json::Value> = rounds
            .iter()
            .enumerate()
            .map(|(r, calls)| {
                let tool_calls: Vec<serde_json::Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(k, t)| json!({"id": format!("c{}_{k}", r + 1), "name": format!("t{t}")}))
                    .collect();
                json!({"when": {"round": r + 1}, "reply": {"text": null, "tool_calls": tool_calls}})
            })
            .collect();
        rules.push(json!({"reply": {"text": "done", "finish_reason": "stop"}}));
        let mut doc = json!({"user": "go", "tools": tool_defs, "model": {"s": rules},
            "strategy": {"extract": "all", "stop": "robust", "max_rounds": 10, "closure": "synthesize"}});
        if let Some((round, at_ms)) = interrupt {
            doc["faults"]["interrupt"] = json!({"round": round, "at_ms": at_ms});
        }
        if let Some((round, at_ms)) = fallback {
            doc["faults"]["fallback"] = json!({"round": round, "after_calls": 1, "at_ms": at_ms});
        }
        Session::parse("random.json", &doc.to_string()).expect("generated sessions are valid")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

        #[test]
        fn robust_synthesize_never_sends_an_unpaired_id(
            tools in prop::collection::vec(tool(), 1..5),
            shape in prop::collection::vec(prop::collection::vec(0usize..16, 1..5), 1..4),
            interrupt in prop::option::of((1u32..4, 0u64..500)),
            fallback in prop::option::of((1u32..4, 0u64..200)),
        ) {
            let rounds: Vec<Vec<usize>> = shape.iter().map(|r| r.iter().map(|t| t % tools.len()).collect()).collect();
            let s = session(&tools, &rounds, interrupt, fallback);
            let strategy = LoopStrategy::for_session(&s);
            let t = loopdbg_engine::run(&s, &strategy);
            for (k, step) in t.steps.iter().enumerate() {
                if step.phase == Phase::Request || k + 1 == t.len() {
                    let ledger = t.ledger_at(k);
                    prop_assert!(ledger.unpaired().is_empty(), "unpaired {:?} at step {}", ledger.unpaired(), k);
                    prop_assert!(ledger.orphans.is_empty(), "stale or orphan result at step {}", k);
                    prop_assert!(ledger.entries.iter().all(|e| e.results <= e.calls), "a result appended twice");
                }
            }
            prop_assert!(t.violations.is_empty());
            // Deterministic: the same session and strategy, the same trace.
            prop_assert_eq!(loopdbg_engine::run(&s, &strategy), t);
        }
    }
}

/// The debugger re-runs the engine from inside its own tokio event loop.
#[test]
fn the_engine_runs_inside_a_tokio_runtime() {
    let s = crate::common::session("fault_sibling_error.json");
    let strategy = Strategy::for_session(&s);
    let outside = loopdbg_engine::run(&s, &strategy);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let inside = rt.block_on(async { loopdbg_engine::run(&s, &strategy) });
    assert_eq!(inside, outside);
}

/// Every closure policy has its Close step in a round that leaves a call
/// without a result, `leave` included, and none in a round where every
/// call was answered; the step sits right after the round's Execute steps.
#[test]
fn a_close_step_marks_every_round_with_a_call_left_unanswered() {
    for closure in [Closure::Leave, Closure::Synthesize] {
        for name in ["fault_interrupt.json", "fault_sibling_error.json"] {
            let t = run(name, closure);
            let closes = t.steps.iter().filter(|s| s.phase == Phase::Close).count();
            assert!(closes > 0, "{name} under {closure}: no Close step");
            for (k, s) in t.steps.iter().enumerate() {
                if s.phase == Phase::Close {
                    assert_eq!(t.steps[k - 1].phase, Phase::Execute, "{name} step {k}");
                }
            }
        }
    }
    // `first` drops a call every round: one Close step per round under leave.
    let s = crate::common::session("weather_fx.json");
    let mut strategy = Strategy::for_session(&s);
    strategy.extract = Extract::First;
    strategy.stop = StopRule::ToolCalls;
    strategy.behavior = "reask".into();
    strategy.closure = Closure::Leave;
    let t = loopdbg_engine::run(&s, &strategy);
    let closes = t.steps.iter().filter(|s| s.phase == Phase::Close).count();
    assert_eq!(closes, t.rounds.len());
    // Every call answered: no Close step.
    let t = run("weather.json", Closure::Leave);
    assert!(t.steps.iter().all(|s| s.phase != Phase::Close));
}
