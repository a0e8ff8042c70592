//! The exact numbers of the seeds' tables, reproduced by the engine on the
//! shipped sessions.

use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::strategy::{Extract, StopRule};
use loopdbg_engine::trace::{End, Phase};
use loopdbg_engine::{Session, Strategy, Trace};
use loopdbg_lesson::report::RunReport;
use loopdbg_lesson::walkthrough::{self, StepState};

fn run(session: &Session, extract: Extract, stop: StopRule, behavior: Option<&str>) -> Trace {
    let mut s = Strategy::for_session(session);
    s.extract = extract;
    s.stop = stop;
    if let Some(b) = behavior {
        s.behavior = b.to_string();
    }
    loopdbg_engine::run(session, &s)
}

fn roles(t: &Trace) -> String {
    t.roles()
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn unpaired(t: &Trace) -> Vec<String> {
    Ledger::of(&t.messages, &[]).unpaired()
}

#[test]
fn seed_000_all_complete() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::All, StopRule::ToolCalls, Some("complete"));
    assert_eq!(t.outcome.requests, 2);
    assert_eq!(t.tool_runs(), vec!["get_weather", "get_fx_rate"]);
    assert!(unpaired(&t).is_empty());
    assert_eq!(roles(&t), "user assistant tool tool assistant");
    assert_eq!(t.outcome.end, End::ModelDone);
    assert_eq!(
        t.outcome.final_text.as_deref(),
        Some("北京今天晴，24 度；美元兑人民币 7.12。")
    );
    assert!(t.violations.is_empty());
}

#[test]
fn seed_000_first_reask_spins_to_the_round_limit() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::ToolCalls, Some("reask"));
    assert_eq!(t.outcome.requests, 6);
    assert_eq!(t.tool_runs(), vec!["get_weather"; 6]);
    // One toolu_f1 call per round, none answered.
    assert_eq!(unpaired(&t), vec!["toolu_f1"; 6]);
    assert_eq!(t.outcome.end, End::MaxRounds);
    assert_eq!(
        t.outcome.final_text.as_deref(),
        Some("汇率还没拿到，再要一次。")
    );
    assert_eq!(
        roles(&t),
        "user assistant tool assistant tool assistant tool assistant tool assistant tool assistant tool"
    );
    // Every request after the first carries the dangling calls so far.
    assert_eq!(t.violations.len(), 5);
    // (the id named once, with how many calls carry it).
    for (k, v) in t.violations.iter().enumerate() {
        assert_eq!(
            (v.ids.as_slice(), v.unpaired),
            (&["toolu_f1".to_string()][..], k + 1)
        );
    }
    // The spin signal: rounds 2..6 are the same reply.
    assert_eq!(t.longest_identical_run(), Some((5, 6)));
}

#[test]
fn seed_000_first_skip_is_a_silent_wrong_answer() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::ToolCalls, Some("skip"));
    assert_eq!(t.outcome.requests, 2);
    assert_eq!(t.tool_runs(), vec!["get_weather"]);
    assert_eq!(unpaired(&t), vec!["toolu_f1"]);
    assert_eq!(roles(&t), "user assistant tool assistant");
    let text = t.outcome.final_text.unwrap();
    assert!(text.contains("24") && !text.contains("7.12"), "{text}");
}

/// Seed 001's table: rounds (and tools run) per rule content / finish-reason / tool-calls / robust.
#[test]
fn seed_001_rounds_per_scenario_and_rule() {
    type Row<'a> = (&'a str, [u32; 4], [&'a [&'a str]; 4]);
    let table: [Row; 4] = [
        (
            "stop_tool_tool_answer.json",
            [3, 3, 3, 3],
            [&["read_file", "count_lines"]; 4],
        ),
        (
            "stop_chatty_tool_call.json",
            [1, 2, 2, 2],
            [&["read_file"]; 4],
        ),
        ("stop_truncated.json", [8, 8, 1, 1], [&[]; 4]),
        ("stop_text_only.json", [1, 1, 1, 1], [&[]; 4]),
    ];
    let rules = [
        StopRule::Content,
        StopRule::FinishReason,
        StopRule::ToolCalls,
        StopRule::Robust,
    ];
    for (file, rounds, tools) in table {
        let s = crate::common::session(file);
        for (i, rule) in rules.into_iter().enumerate() {
            let t = run(&s, Extract::All, rule, None);
            assert_eq!(t.outcome.requests, rounds[i], "{file} under {rule}");
            assert_eq!(t.tool_runs(), tools[i].to_vec(), "{file} under {rule}");
        }
    }
}

#[test]
fn seed_001_truncation_ends_and_spins_as_the_seed_says() {
    let s = crate::common::session("stop_truncated.json");
    let robust = run(&s, Extract::All, StopRule::Robust, None);
    assert_eq!(robust.outcome.end, End::Error);
    assert_eq!(robust.outcome.final_text, None);
    // The truncated reply never joins the history under robust.
    assert_eq!(roles(&robust), "user");

    let content = run(&s, Extract::All, StopRule::Content, None);
    assert_eq!(content.outcome.end, End::MaxRounds);
    // The same reply 8 times: asked again 7 times.
    assert_eq!(content.longest_identical_run(), Some((8, 8)));

    let calls = run(&s, Extract::All, StopRule::ToolCalls, None);
    assert_eq!(calls.outcome.end, End::ModelDone);
    assert_eq!(
        calls.outcome.final_text, None,
        "an empty answer taken as success"
    );
}

#[test]
fn seed_001_chatty_content_rule_answers_with_the_preamble() {
    let s = crate::common::session("stop_chatty_tool_call.json");
    let t = run(&s, Extract::All, StopRule::Content, None);
    assert_eq!(t.outcome.final_text.as_deref(), Some("我先打开文件看看"));
    // The result was appended but never read by the model.
    assert_eq!(roles(&t), "user assistant tool");
}

#[test]
fn robust_running_out_of_rounds_is_not_an_answer() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::Robust, Some("reask"));
    assert_eq!(t.outcome.end, End::MaxRounds);
    assert_eq!(t.outcome.final_text, None);
}

#[test]
fn seed_003_weather_walkthrough_has_four_steps_and_cites_18() {
    let s = crate::common::session("weather.json");
    let t = run(&s, Extract::All, StopRule::Robust, None);
    assert_eq!(t.outcome.requests, 2);
    let last = t.len() - 1;
    let w = walkthrough::at(&t, last);
    assert_eq!(w.states, [StepState::Done; 4]);
    let first = w.first_response.expect("log 1");
    assert_eq!(first["tool_calls"][0]["name"], "get_weather");
    assert_eq!(first["tool_calls"][0]["args"]["city"], "北京");
    assert_eq!(w.returns.len(), 1);
    assert_eq!(w.returns[0].value["temp_c"], 18);
    assert_eq!(w.answers.len(), 1);
    assert!(w.answers[0].text.as_deref().unwrap().contains("18"));
    let report = RunReport::new(&s, &t);
    assert_eq!(report.quote_check.cites_tool_numbers, Some(true));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    // The walkthrough moves through steps 1..4 as the trace is stepped.
    let active: Vec<Option<usize>> = (0..t.len())
        .map(|k| {
            walkthrough::at(&t, k)
                .states
                .iter()
                .position(|s| *s == StepState::Active)
        })
        .collect();
    assert_eq!(active.first(), Some(&Some(0)));
    assert!(active.contains(&Some(1)) && active.contains(&Some(2)) && active.contains(&Some(3)));
}

#[test]
fn seed_003_invented_answer_is_flagged() {
    let s = crate::common::session("weather.json");
    let t = run(&s, Extract::All, StopRule::Robust, Some("ignores_result"));
    let report = RunReport::new(&s, &t);
    assert_eq!(report.quote_check.cites_tool_numbers, Some(false));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.kind == loopdbg_lesson::checks::WarningKind::Uncited)
    );
}

#[test]
fn whitelist_answers_unknown_tools_without_running_them() {
    let s = crate::common::session("unknown_tool.json");
    let t = run(&s, Extract::All, StopRule::Robust, None);
    let first = &t.rounds[0].executions[0];
    assert!(!first.outcome.ran && first.outcome.is_error);
    assert_eq!(t.tool_runs(), vec!["get_weather"]);
    assert!(unpaired(&t).is_empty());
    assert_eq!(t.outcome.final_text.as_deref(), Some("北京今天 18°C，晴。"));
}

#[test]
fn parameter_trap_gives_an_error_result_and_a_lint() {
    let s = crate::common::session("param_mismatch.json");
    let t = run(&s, Extract::All, StopRule::Robust, None);
    let e = &t.rounds[0].executions[0];
    assert!(e.outcome.ran && e.outcome.is_error);
    let lints = loopdbg_lesson::lint::lint(&s);
    assert!(
        lints
            .iter()
            .any(|w| w.kind == loopdbg_lesson::lint::LintKind::UndeclaredTableKey)
    );
}

#[test]
fn phases_follow_the_loop_order() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::All, StopRule::Robust, Some("complete"));
    let phases: Vec<&str> = t.steps.iter().map(|s| s.phase.name()).collect();
    assert_eq!(
        phases.join(" "),
        "Request Reply Extract Execute Execute Append Append Decide Request Reply Extract Decide Done"
    );
    // Stepping back is exact: the history at each step is a prefix.
    let lens: Vec<usize> = t.steps.iter().map(|s| s.history_len).collect();
    assert_eq!(lens, vec![1, 2, 2, 2, 2, 3, 4, 4, 4, 5, 5, 5, 5]);
    assert_eq!(t.step(t.len() - 1).phase, Phase::Done);
}

#[test]
fn ledger_shows_the_dropped_call_at_extract() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::ToolCalls, Some("skip"));
    let extract = t
        .steps
        .iter()
        .position(|s| s.phase == Phase::Extract)
        .unwrap();
    let reply = extract - 1;
    assert_eq!(t.ledger_at(reply).counts().pending, 2);
    let at_extract = t.ledger_at(extract).counts();
    assert_eq!((at_extract.pending, at_extract.unpaired), (1, 1));
    let request2 = t
        .steps
        .iter()
        .position(|s| s.phase == Phase::Request && s.round == 2)
        .unwrap();
    assert_eq!(t.ledger_at(request2).unpaired(), vec!["toolu_f1"]);
    assert_eq!(t.violations[0].step, request2);
}

#[test]
fn a_stub_without_a_reply_ends_unscripted_not_in_an_error() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::ToolCalls, Some("complete"));
    // The script's gap, not the loop's error (issue 22, item 3).
    assert_eq!(t.outcome.end, End::Unscripted);
    assert!(
        t.outcome
            .detail
            .starts_with("the stub model has no scripted reply for round 2"),
        "{}",
        t.outcome.detail
    );
    assert!(
        t.outcome
            .detail
            .contains("E at this round's Request or at the end scripts one")
    );
    assert_eq!(t.outcome.final_text, None);
}

#[test]
fn every_shipped_session_is_deterministic() {
    for name in crate::common::shipped_names() {
        let s = crate::common::session(&name);
        let strategy = Strategy::for_session(&s);
        assert_eq!(
            loopdbg_engine::run(&s, &strategy),
            loopdbg_engine::run(&s, &strategy),
            "{name}"
        );
    }
}

#[test]
fn a_stub_that_reuses_ids_leaves_one_unpaired_call_per_round() {
    // Seed 000 under first + reask: every round calls toolu_w1 and toolu_f1
    // again; only toolu_w1 is run, so each round's toolu_f1 stays unpaired.
    let s = crate::common::session("weather_fx.json");
    let mut st = Strategy::for_session(&s);
    st.extract = loopdbg_engine::strategy::Extract::First;
    st.stop = StopRule::ToolCalls;
    st.behavior = "reask".into();
    let t = loopdbg_engine::run(&s, &st);
    assert_eq!(unpaired(&t), vec!["toolu_f1"; 6]);
    // At round 2's Reply, round 1's toolu_f1 is still unpaired, though the
    // reply names toolu_f1 again.
    let reply2 = (0..t.len())
        .find(|&k| t.step(k).round == 2 && t.step(k).phase == loopdbg_engine::trace::Phase::Reply)
        .unwrap();
    assert_eq!(t.step(reply2).unpaired, 1);
    assert_eq!(t.ledger_at(reply2).counts().unpaired, 1);
    // Each request from round 2 on carries the unpaired calls so far.
    let violations: Vec<(u32, usize)> =
        t.violations.iter().map(|v| (v.round, v.unpaired)).collect();
    assert_eq!(violations, [(2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]);
}

/// Ticks never run ahead of the step in progress: in round 2, with step 2
/// active, steps 3 and 4 (done in round 1) are "again", not ticked.
#[test]
fn walkthrough_ticks_never_run_ahead_of_the_active_step() {
    let s = crate::common::session("weather_fx.json");
    let t = run(&s, Extract::First, StopRule::ToolCalls, Some("reask"));
    let mut agains = 0;
    for k in 0..t.len() {
        let states = walkthrough::at(&t, k).states;
        if let Some(a) = states.iter().position(|s| *s == StepState::Active) {
            assert!(
                states[a + 1..].iter().all(|s| *s != StepState::Done),
                "step {k}: {states:?}"
            );
            assert!(
                states[..a].iter().all(|s| *s == StepState::Done),
                "step {k}: {states:?}"
            );
            agains += states.iter().filter(|s| **s == StepState::Again).count();
        }
    }
    assert!(agains > 0, "later rounds mark earlier trips as due again");
}

/// The English companions (`sessions/en/`) run as the Chinese sessions
/// they translate, under every extraction × stop rule × behavior: the
/// same rounds, tool runs, unpaired calls, ending and warnings; only the
/// words differ (issue 60, item 6). A companion that drifts fails here.
#[test]
fn every_english_companion_runs_as_its_session() {
    use loopdbg_lesson::report::compare_rows;
    let companions: Vec<String> = crate::common::shipped_names()
        .into_iter()
        .filter_map(|n| n.strip_prefix("en/").map(str::to_string))
        .collect();
    assert!(companions.len() >= 11, "{companions:?}");
    let cjk = |text: &str| {
        text.chars().any(|c| {
            ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{ff00}'..='\u{ffef}').contains(&c)
        })
    };
    for name in &companions {
        let (zh, en) = (
            crate::common::session(name),
            crate::common::session(&format!("en/{name}")),
        );
        let text =
            std::fs::read_to_string(format!("{}/sessions/en/{name}", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        assert!(!cjk(&text), "en/{name} still holds Chinese");
        let shape = |rows: Vec<loopdbg_lesson::report::CompareRow>| {
            rows.into_iter()
                .map(|r| {
                    (
                        r.extract,
                        r.stop,
                        r.behavior,
                        r.rounds,
                        r.tool_runs,
                        r.unpaired,
                        r.end,
                        r.warnings,
                        r.final_text.is_some(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            shape(compare_rows(name, &en, &Strategy::for_session(&en))),
            shape(compare_rows(name, &zh, &Strategy::for_session(&zh))),
            "en/{name} runs otherwise than {name}"
        );
    }
    // Every Chinese session has its companion.
    for name in crate::common::shipped_names() {
        let text =
            std::fs::read_to_string(format!("{}/sessions/{name}", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        if !name.starts_with("en/") && cjk(&text) {
            assert!(
                companions.contains(&name),
                "{name} has no English companion"
            );
        }
    }
}
