//! Replay of captured conversations: every finding is shown at the step
//! where it arises, in the provider's own words; an orphan result quotes no
//! call; the end summary scrolls to its last finding.

use crate::common::*;

use loopdbg_engine::trace::Phase;
use loopdbg_export::replay::{session_for, trace_of};
use loopdbg_judge::check::check;
use loopdbg_read::Conversation;
use loopdbg_tui::app::Pane;
use loopdbg_tui::explain::explain;
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App};

fn replay(conv: &Conversation) -> App {
    let findings = check(conv);
    let trace = trace_of(conv, &findings);
    let mut app = App::replay(
        "capture",
        session_for(conv, "replay"),
        trace,
        conv.source.as_str(),
        Theme::color(),
    );
    apply(&mut app, Action::Resize(120, 40));
    app
}

/// The screen's text, one row per line.
fn screen(app: &mut App, w: u16, h: u16) -> String {
    use ratatui::{Terminal, backend::TestBackend};
    apply(app, Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| f.render_widget(&*app, f.area())).unwrap();
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The explanation of every step, with its phase.
fn explained(app: &App) -> Vec<(Phase, String)> {
    (0..app.trace.len())
        .map(|k| {
            (
                app.trace.step(k).phase,
                explain(&app.trace, k, app.session.tools.len()),
            )
        })
        .collect()
}

#[test]
fn a_400_is_flagged_at_the_request_that_carries_it() {
    // An interrupt left toolu_01Bump open; the log holds the provider's
    // 400 for the two requests after it: those are trips with no reply,
    // and the 400 is shown at the first of them, confirmed.
    let convs = claude_code_log("claude_code_v2/refused_400.jsonl");
    let app = replay(&convs[0]);
    let steps = explained(&app);
    let flagged: Vec<(usize, &(Phase, String))> = steps
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| e.contains("unanswered_call (400"))
        .collect();
    assert_eq!(flagged.len(), 1, "{steps:#?}");
    let (at, (phase, text)) = flagged[0];
    assert_eq!(*phase, Phase::Request);
    assert_eq!(
        app.trace.step(at).history_len,
        5,
        "the request after the prompt"
    );
    // What the log shows comes first, so a small screen keeps it.
    assert!(
        text.starts_with(
            "⚠ unanswered_call (400; refused, line 8): `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01Bump."
        ),
        "{text}"
    );
    assert!(!text.contains("stub"), "a replay has no stub: {text}");
    assert!(text.contains("The log confirms it"), "{text}");
    let refused: Vec<u32> = app
        .trace
        .rounds
        .iter()
        .filter(|r| r.reply_message.is_none())
        .map(|r| r.number)
        .collect();
    assert_eq!(refused, [3, 4], "two trips the provider refused");
    let mut app = app;
    apply(&mut app, Action::Last);
    assert!(screen(&mut app, 120, 40).contains("3:refused ⇄ 4:refused"));
}

#[test]
fn an_orphan_result_quotes_no_call_and_is_flagged_at_its_request() {
    // A compaction kept a result whose call it summarised away.
    let app = replay(&body("anthropic_compacted_orphan.json"));
    let steps = explained(&app);
    let flagged: Vec<&(Phase, String)> = steps
        .iter()
        .filter(|(_, e)| e.contains("unexpected_result (400)"))
        .collect();
    assert_eq!(flagged.len(), 1, "{steps:#?}");
    assert_eq!(flagged[0].0, Phase::Request);
    assert!(flagged[0].1.contains(
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_old7. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    ));
    for (phase, e) in &steps {
        if *phase == Phase::Append {
            assert!(!e.contains("quoting"), "{e}");
        }
    }
    // In a Claude Code log the model answered after such an orphan: the
    // request went through, so the replay shows a warning, not a 400.
    let convs = claude_code_log("claude_code_compacted.jsonl");
    let steps = explained(&replay(&convs[1]));
    assert!(
        steps
            .iter()
            .any(|(_, e)| e.contains("unexpected_result (warning; answered anyway, line 6)"))
    );
    assert!(
        !steps.iter().any(|(_, e)| e.contains("(400)")),
        "{steps:#?}"
    );
}

#[test]
fn a_duplicate_id_and_a_truncated_turn_are_flagged_where_they_appear() {
    // Reused id across turns: a warning at the reply that reuses it.
    let app = replay(&body("anthropic_duplicate_and_bad_ids.json"));
    let steps = explained(&app);
    let reused = steps
        .iter()
        .position(|(_, e)| e.contains("reused_id (warning)"))
        .expect("flagged");
    assert_eq!(steps[reused].0, Phase::Reply);
    assert!(reused < steps.len() - 1, "not only at the end");
    // A turn cut by max_tokens whose calls ran: at its reply.
    let app = replay(&body("anthropic_truncated_executed.json"));
    let steps = explained(&app);
    let cut = steps
        .iter()
        .position(|(_, e)| e.contains("truncated_turn_executed"))
        .expect("flagged");
    assert_eq!(steps[cut].0, Phase::Reply);
}

#[test]
fn the_400_is_explained_at_the_request_that_would_fail_and_only_there() {
    let app = replay(&body("anthropic_parallel_one_missing.json"));
    let steps = explained(&app);
    let said: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| e.contains("unanswered_call (400)"))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(said.len(), 1, "{steps:#?}");
    assert_eq!(steps[said[0]].0, Phase::Request);
    assert!(
        steps[said[0]].1.starts_with(
            "⚠ unanswered_call (400): messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1."
        ),
        "{}",
        steps[said[0]].1
    );
    // The first request carries nothing unanswered and says nothing of it.
    assert!(!steps[0].1.contains("400"), "{}", steps[0].1);
}

#[test]
fn the_end_summary_scrolls_to_its_last_finding() {
    let convs = claude_code_log("claude_code_v2/rewind.jsonl");
    let mut app = replay(&convs[0]);
    apply(&mut app, Action::Resize(80, 24));
    apply(&mut app, Action::Last);
    for _ in 0..3 {
        apply(&mut app, Action::FocusNext);
    }
    assert_eq!(app.focus, Pane::Explain);
    // The findings come first (the answer and what is wrong with it), the
    // counts after; the box scrolls to its last line.
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("not part of the live conversation"), "{text}");
    apply(&mut app, Action::PageDown);
    assert_eq!(app.explain_scroll, 10);
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("Read × 1"), "{text}");
    // Stepping away and back starts the summary at its top again.
    apply(&mut app, Action::StepBack);
    apply(&mut app, Action::Last);
    assert_eq!(app.explain_scroll, 0);
}

#[test]
fn help_in_a_replay_lists_no_strategy_keys() {
    let mut app = replay(&body("anthropic_parallel_one_missing.json"));
    apply(&mut app, Action::Help);
    let text = screen(&mut app, 120, 40);
    assert!(text.contains("step forward one phase"), "{text}");
    assert!(!text.contains("toggle extraction"), "{text}");
    assert!(!text.contains("│Strategy"), "{text}");
}

#[test]
fn a_broken_stream_and_its_late_result_are_named_at_their_steps() {
    let s = crate::common::session("fault_fallback.json");
    let strategy = loopdbg_engine::Strategy::for_session(&s);
    let trace = loopdbg_engine::run(&s, &strategy);
    let said: Vec<String> = (0..trace.len())
        .map(|k| explain(&trace, k, s.tools.len()))
        .collect();
    assert!(
        said.iter().any(|e| e.starts_with(
            "The reply stream broke at 30 ms after 1 tool_use block(s) arrived (read_file toolu_a)"
        )),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|e| e.contains("new ids (toolu_a_retry, toolu_b_retry)"))
    );
    assert!(said.iter().any(|e| e.starts_with(
        "At 80 ms the discarded streaming executor's result for toolu_a arrives: rejected, not appended"
    )), "{said:#?}");
}

#[test]
fn notes_alone_are_no_problems_at_the_end() {
    // The sub-agent's last Read is still in flight: a note, not a problem.
    let convs = claude_code_log("claude_code_v2/subagents/agent-a7f3c2e1.jsonl");
    let app = replay(&convs[0]);
    assert_eq!(
        app.trace.outcome.detail,
        "the transcript ends with calls waiting for their results; no pairing problems, 1 note(s)"
    );
    assert_eq!(app.trace.outcome.end, loopdbg_engine::trace::End::InFlight);
    let convs = claude_code_log("claude_code_v2/rewind.jsonl");
    let app = replay(&convs[0]);
    assert_eq!(app.trace.outcome.end, loopdbg_engine::trace::End::ModelDone);
    assert_eq!(
        app.trace.outcome.detail,
        "the transcript ends here; no pairing problems, 1 note(s)"
    );
}

#[test]
fn results_for_calls_made_before_the_file_are_unchecked_not_orphans() {
    // A Responses request that continues a stored response: its output
    // answers a call the provider keeps, so the ids pane says so rather
    // than raise an orphan.
    let mut app = replay(&body("responses_continuation.json"));
    apply(&mut app, Action::Last);
    let shown = screen(&mut app, 120, 40);
    assert!(
        shown.contains("1 answer calls not in this file (unchecked)"),
        "{shown}"
    );
    assert!(
        shown.contains("made in previous_response_id resp_68af2c4b"),
        "{shown}"
    );
    assert!(!shown.contains("orphan results"), "{shown}");
    // A Claude Code log cut at its head: the same for its first result.
    let mut app = replay(&claude_code_log("claude_code_v2/cut_at_head.jsonl")[0]);
    apply(&mut app, Action::Last);
    let shown = screen(&mut app, 120, 40);
    assert!(
        shown.contains("1 answer calls not in this file (unchecked)"),
        "{shown}"
    );
    assert!(!shown.contains("orphan results"), "{shown}");
    // A result that answers nothing, with nothing before the file, is
    // still an orphan.
    let mut app = replay(&body("anthropic_compacted_orphan.json"));
    apply(&mut app, Action::Last);
    assert!(screen(&mut app, 120, 40).contains("orphan results (answer no call): 1"));
}

#[test]
fn a_replayed_answer_that_quotes_no_number_raises_no_quote_warning() {
    // Seed 003 asks whether the results reached the model; a replayed file
    // shows that they did (they are in its history). An answer in words,
    // as coding agents give over file listings and shell output, is no
    // fault there.
    let mut doc: serde_json::Value =
        serde_json::from_str(&fixture("anthropic_clean.json")).unwrap();
    let last = doc["messages"].as_array_mut().unwrap().last_mut().unwrap();
    last["content"][0]["text"] = "北京今天晴；汇率见上。".into();
    let conv = loopdbg_read::read(&doc, loopdbg_read::detect(&doc).unwrap()).unwrap();
    let app = replay(&conv);
    assert!(
        !loopdbg_lesson::checks::warnings(&app.trace)
            .iter()
            .any(|w| w.kind == loopdbg_lesson::checks::WarningKind::Uncited)
    );
}

#[test]
fn a_spin_is_one_loop_repeating_not_a_user_asking_again() {
    let spins = |conv: &Conversation| {
        loopdbg_lesson::checks::warnings(&replay(conv).trace)
            .iter()
            .any(|w| w.kind == loopdbg_lesson::checks::WarningKind::Spin)
    };
    // Two turns of the provider's own MCP calls (no text, no client calls)
    // with the user's "and again?" between: no spin.
    assert!(!spins(&body("anthropic_mcp_unanswered.json")));
    // The same reply three times inside one loop still is one.
    assert!(spins(&body("anthropic_repeated_turn.json")));
}

#[test]
fn a_file_that_ends_before_any_answer_says_so_in_words() {
    // A pause_turn resumption: the request ends on the provider's own
    // search call. No loop "ended" there; the summary says what the file
    // holds, not the seeds' `null`.
    let mut app = replay(&body("anthropic_pause_turn.json"));
    apply(&mut app, Action::Last);
    let shown = screen(&mut app, 120, 40);
    assert!(
        shown.contains("final: none (no answer text in the conversation)"),
        "{shown}"
    );
    assert!(
        shown.contains("the model's last turn has no answer text"),
        "{shown}"
    );
    assert!(!shown.contains("the loop ended normally"), "{shown}");
}

#[test]
fn a_reply_the_agent_wrote_itself_is_not_shown_as_the_models_answer() {
    // Claude Code's `<synthetic>` "No response requested." after an
    // interrupt: the summary keeps it, marked as the agent's own.
    let app = replay(&claude_code_log("claude_code_v2/synthetic_reply.jsonl")[0]);
    assert_eq!(
        app.trace.outcome.final_text.as_deref(),
        Some("No response requested. (written by the agent itself, not the model)")
    );
    // A model's own last text is shown as it is.
    let app = replay(&body("anthropic_clean.json"));
    assert_eq!(
        app.trace.outcome.final_text.as_deref(),
        Some("北京今天晴，24 度；美元兑人民币 7.12。")
    );
}

/// A conversation that ends on a reply asking for tools has no answer yet:
/// the text riding with the calls ("Let me check.") is not shown as the
/// final answer (issue 22, item 12).
#[test]
fn a_conversation_ending_on_calls_has_no_final_answer() {
    let body = serde_json::json!({"model": "m", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]}
    ]});
    let conv = loopdbg_read::read(
        &body,
        loopdbg_read::Source::Provider(loopdbg_formats::provider::Format::Anthropic),
    )
    .unwrap();
    let mut app = replay(&conv);
    assert_eq!(app.trace.outcome.final_text, None);
    apply(&mut app, Action::Last);
    let s = screen(&mut app, 120, 40);
    assert!(!s.contains("final: Let me check."), "{s}");
    assert!(
        s.contains("final: none yet (the last reply asks for tools"),
        "{s}"
    );
}
