//! The pure `update`: every key action, toggles mid-run, stepping back past
//! a toggle, breakpoints and `continue`. No terminal involved.

use crate::common::*;

use loopdbg_engine::Strategy;
use loopdbg_engine::strategy::{Extract, StopRule};
use loopdbg_engine::trace::Phase;
use loopdbg_tui::app::{Pane, Popup};
use loopdbg_tui::keymap::{KEYMAP, action_for};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn app_with(name: &str, extract: Extract, stop: StopRule, behavior: &str) -> App {
    let s = session(name);
    let mut strategy = Strategy::for_session(&s);
    strategy.extract = extract;
    strategy.stop = stop;
    strategy.behavior = behavior.into();
    let mut app = App::new(name, s, strategy, Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    app
}

fn fx_first_reask() -> App {
    app_with(
        "weather_fx.json",
        Extract::First,
        StopRule::ToolCalls,
        "reask",
    )
}

fn phase(app: &App) -> Phase {
    app.trace.step(app.cursor).phase
}

fn key(c: char) -> Action {
    action_for(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).unwrap()
}

#[test]
fn stepping_forward_and_back_is_exact() {
    let mut app = fx_first_reask();
    assert_eq!(phase(&app), Phase::Request);
    let phases: Vec<Phase> = (0..7)
        .map(|_| {
            apply(&mut app, Action::StepForward);
            phase(&app)
        })
        .collect();
    assert_eq!(
        phases,
        [
            Phase::Reply,
            Phase::Extract,
            Phase::Execute,
            // `first` dropped toolu_f1; under `leave` the Close step says so.
            Phase::Close,
            Phase::Append,
            Phase::Decide,
            Phase::Request,
        ]
    );
    let history_forward = app.trace.history_at(app.cursor).to_vec();
    apply(&mut app, Action::StepBack);
    apply(&mut app, Action::StepForward);
    assert_eq!(app.trace.history_at(app.cursor), &history_forward[..]);
    for _ in 0..100 {
        apply(&mut app, Action::StepBack);
    }
    assert_eq!(app.cursor, 0);
}

#[test]
fn rounds_start_and_end() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::NextRound);
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (2, Phase::Request)
    );
    apply(&mut app, Action::StepForward);
    apply(&mut app, Action::PrevRound);
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (2, Phase::Request)
    );
    apply(&mut app, Action::PrevRound);
    assert_eq!(app.trace.step(app.cursor).round, 1);
    apply(&mut app, Action::Last);
    assert!(app.at_end());
    assert_eq!(phase(&app), Phase::Done);
    apply(&mut app, Action::NextRound);
    assert!(app.at_end(), "past the last round stays at the end");
    apply(&mut app, Action::First);
    assert_eq!(app.cursor, 0);
}

#[test]
fn toggling_extraction_mid_run_keeps_the_place_and_says_what_changed() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::NextRound); // round 2, Request
    apply(&mut app, Action::StepForward); // round 2, Reply
    apply(&mut app, key('e'));
    assert_eq!(app.strategy().extract, Extract::All);
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (2, Phase::Reply)
    );
    let notice = app.notice.clone().unwrap();
    assert!(
        notice.contains("extract first → all")
            && notice.contains("now 2 rounds instead of 6")
            && notice.contains("unpaired toolu_f1 ×6 → none"),
        "{notice}"
    );
    // Toggle back at a place the other run does not reach: the nearest step.
    apply(&mut app, Action::Last);
    apply(&mut app, key('e'));
    assert_eq!(app.strategy().extract, Extract::First);
    assert!(
        app.notice
            .as_ref()
            .unwrap()
            .contains("unpaired none → toolu_f1 ×6")
    );
}

#[test]
fn stepping_back_past_a_toggle_walks_the_new_trace() {
    let mut app = fx_first_reask();
    for _ in 0..3 {
        apply(&mut app, Action::StepForward);
    }
    apply(&mut app, Action::ToggleExtract); // now `all`, at round 1 Execute
    assert_eq!(phase(&app), Phase::Execute);
    apply(&mut app, Action::StepBack);
    assert_eq!(phase(&app), Phase::Extract);
    // Under `all` nothing was dropped at this Extract.
    assert!(app.trace.round(1).unwrap().dropped.is_empty());
    assert_eq!(app.trace.ledger_at(app.cursor).counts().unpaired, 0);
    apply(&mut app, Action::First);
    apply(&mut app, Action::Last);
    assert_eq!(app.trace.outcome.requests, 2);
}

#[test]
fn stop_rule_behavior_and_round_limit_cycle() {
    let mut app = fx_first_reask();
    let stops: Vec<StopRule> = (0..4)
        .map(|_| {
            apply(&mut app, key('s'));
            app.strategy().stop
        })
        .collect();
    assert_eq!(
        stops,
        [
            StopRule::Robust,
            StopRule::Content,
            StopRule::FinishReason,
            StopRule::ToolCalls
        ]
    );
    let behaviors: Vec<String> = (0..3)
        .map(|_| {
            apply(&mut app, key('m'));
            app.strategy().behavior.clone()
        })
        .collect();
    assert_eq!(behaviors, ["complete", "skip", "reask"]);
    apply(&mut app, key('+'));
    assert_eq!(app.strategy().max_rounds, 7);
    assert_eq!(app.trace.outcome.requests, 7);
    for _ in 0..10 {
        apply(&mut app, key('-'));
    }
    assert_eq!(app.strategy().max_rounds, 1);
    assert_eq!(app.notice.as_deref(), Some("max rounds stays at 1"));
}

#[test]
fn restart_returns_to_the_opening_strategy() {
    let mut app = fx_first_reask();
    apply(&mut app, key('e'));
    apply(&mut app, key('s'));
    apply(&mut app, Action::Last);
    apply(&mut app, key('r'));
    assert_eq!(app.cursor, 0);
    assert_eq!(app.strategy().extract, Extract::First);
    assert_eq!(app.strategy().stop, StopRule::ToolCalls);
}

#[test]
fn compare_popup_highlights_the_current_strategy() {
    let mut app = fx_first_reask();
    apply(&mut app, key('t'));
    let Some(Popup::Compare { rows, .. }) = app.popup() else {
        panic!("no compare popup")
    };
    assert_eq!(rows.len(), 3 * 8);
    let current = rows
        .iter()
        .find(|r| {
            r.extract == Extract::First && r.stop == StopRule::ToolCalls && r.behavior == "reask"
        })
        .unwrap();
    // One unpaired toolu_f1 call per round.
    assert_eq!((current.rounds, current.unpaired), (6, 6));
    apply(&mut app, key('t'));
    assert!(app.popup().cloned().is_none(), "t closes it again");
}

#[test]
fn focus_scroll_expand_and_popups() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::Last);
    assert_eq!(app.focus, Pane::Messages);
    let newest = app.selected_message().unwrap();
    apply(&mut app, Action::ScrollUp);
    assert_eq!(app.selected_message(), Some(newest - 1));
    apply(&mut app, Action::PageUp);
    assert_eq!(app.selected_message(), Some(newest - 11));
    apply(&mut app, Action::PageDown);
    apply(&mut app, Action::ScrollDown);
    assert_eq!(app.selected_message(), Some(newest));
    apply(&mut app, Action::Expand);
    assert_eq!(
        app.popup().cloned(),
        Some(Popup::Detail {
            message: newest,
            scroll: 0
        })
    );
    apply(&mut app, Action::ScrollDown);
    assert_eq!(
        app.popup().cloned(),
        Some(Popup::Detail {
            message: newest,
            scroll: 1
        })
    );
    apply(&mut app, Action::Back);
    assert!(
        app.popup().cloned().is_none() && !app.quit,
        "Esc closes the popup first"
    );

    apply(&mut app, Action::FocusNext);
    assert_eq!(app.focus, Pane::Ids);
    apply(&mut app, Action::ScrollDown);
    assert_eq!(app.ids_scroll, 1);
    apply(&mut app, Action::FocusNext);
    assert_eq!(app.focus, Pane::Walkthrough);
    apply(&mut app, Action::PageDown);
    assert_eq!(app.walkthrough_scroll, 10);
    apply(&mut app, Action::FocusPrev);
    apply(&mut app, Action::FocusPrev);
    assert_eq!(app.focus, Pane::Messages);

    apply(&mut app, key('?'));
    assert_eq!(app.popup().cloned(), Some(Popup::Help { scroll: 0 }));
    apply(&mut app, key('?'));
    assert!(app.popup().cloned().is_none());
}

/// A key as the terminal adapter maps it in the mode the app is in.
fn key_in(app: &App, c: char) -> Action {
    let event = KeyEvent::new(
        match c {
            '\u{1b}' => KeyCode::Esc,
            '\n' => KeyCode::Enter,
            c => KeyCode::Char(c),
        },
        KeyModifiers::NONE,
    );
    loopdbg_tui::keymap::action_in(&app.mode, &event).unwrap()
}

/// `q` and Esc close a popup; only `q` on the panes quits, and a second
/// Esc never does (issue 22, item 8).
#[test]
fn q_and_esc_close_a_popup_and_only_q_on_the_panes_quits() {
    for close in ['q', '\u{1b}'] {
        let mut app = fx_first_reask();
        apply(&mut app, Action::Help);
        let k = key_in(&app, close);
        apply(&mut app, k);
        assert!(app.popup().is_none() && !app.quit, "{close:?} closes help");
        let k = key_in(&app, '\u{1b}');
        apply(&mut app, k);
        assert!(!app.quit, "a second Esc does not quit");
        let k = key_in(&app, 'q');
        apply(&mut app, k);
        assert!(app.quit, "q on the panes quits");
    }
}

/// Enter inside the table, the tools or the help leaves that popup as it
/// is, instead of opening a message's JSON behind it (issue 22, item 8).
#[test]
fn enter_inside_a_popup_opens_no_other_popup() {
    for open in ['t', 'd', '?'] {
        let mut app = fx_first_reask();
        apply(&mut app, key(open));
        let before = app.popup().cloned();
        assert!(before.is_some());
        let k = key_in(&app, '\n');
        apply(&mut app, k);
        assert_eq!(app.popup().cloned(), before, "Enter in {open:?}");
    }
}

#[test]
fn wheel_scrolls_the_pane_under_the_pointer() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::Last);
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let areas = loopdbg_tui::view::layout(&app, area);
    apply(
        &mut app,
        Action::Wheel {
            column: areas.ids.x + 2,
            row: areas.ids.y + 2,
            down: true,
        },
    );
    assert_eq!(app.ids_scroll, 3);
    assert_eq!(app.focus, Pane::Messages, "the wheel does not move focus");
    apply(
        &mut app,
        Action::Wheel {
            column: areas.walkthrough.x + 1,
            row: areas.walkthrough.y + 1,
            down: true,
        },
    );
    assert_eq!(app.walkthrough_scroll, 3);
}

#[test]
fn continue_stops_where_a_dropped_call_becomes_unpaired_then_at_the_spin() {
    let mut app = fx_first_reask();
    apply(&mut app, key('c'));
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (1, Phase::Extract)
    );
    assert!(app.notice.as_ref().unwrap().contains("toolu_f1"));
    // Round 2 re-asks for toolu_f1 and drops it again.
    apply(&mut app, key('c'));
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (2, Phase::Extract)
    );
    apply(&mut app, key('c'));
    // Round 3's reply is the first to repeat round 2's.
    assert_eq!(
        (app.trace.step(app.cursor).round, phase(&app)),
        (3, Phase::Reply)
    );
    assert!(
        app.notice
            .as_ref()
            .unwrap()
            .contains("repeats the previous reply")
    );
}

#[test]
fn breakpoints_stop_continue_on_their_phase_kind() {
    let mut app = app_with(
        "weather_fx.json",
        Extract::All,
        StopRule::Robust,
        "complete",
    );
    for _ in 0..5 {
        apply(&mut app, Action::StepForward); // to round 1 Append
    }
    assert_eq!(phase(&app), Phase::Append);
    apply(&mut app, key('B'));
    assert!(app.breakpoints.contains(&Phase::Append));
    apply(&mut app, Action::First);
    apply(&mut app, key('c'));
    assert_eq!(phase(&app), Phase::Append);
    apply(&mut app, key('c'));
    assert_eq!(
        (phase(&app), app.trace.step(app.cursor).execution),
        (Phase::Append, Some(1))
    );
    apply(&mut app, key('c'));
    assert!(app.at_end());
    assert_eq!(app.notice.as_deref(), Some("ran to the end"));
    apply(&mut app, Action::First);
    apply(&mut app, key('c'));
    apply(&mut app, key('B'));
    assert!(app.breakpoints.is_empty(), "B on an Append step removes it");
}

#[test]
fn resize_is_recorded_for_hit_testing() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::Resize(1, 1));
    assert_eq!(app.size, (1, 1));
    apply(
        &mut app,
        Action::Wheel {
            column: 0,
            row: 0,
            down: true,
        },
    );
    assert_eq!(
        app.ids_scroll, 0,
        "nothing to scroll below the minimum size"
    );
}

#[test]
fn every_binding_in_the_keymap_dispatches_its_action() {
    use loopdbg_tui::keymap::Key;
    for b in KEYMAP.iter() {
        for k in b.keys {
            let event = match *k {
                Key::Char(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
                Key::Ctrl(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
                Key::Code(code) => KeyEvent::new(code, KeyModifiers::NONE),
            };
            assert_eq!(action_for(&event), Some(b.action.clone()), "{k:?}");
        }
    }
}

fn replay_app(name: &str) -> App {
    let mut app = crate::common::replay_of_fixture(name);
    apply(&mut app, Action::Resize(120, 40));
    app
}

#[test]
fn replay_steps_message_by_message_and_flags_the_violation_where_it_appears() {
    let mut app = replay_app("anthropic_parallel_one_missing.json");
    // Request, Reply (assistant), Append (results), Request, Reply, Done — plus the user's first message.
    let phases: Vec<Phase> = app.trace.steps.iter().map(|s| s.phase).collect();
    assert_eq!(
        phases,
        [
            Phase::Append,
            Phase::Request,
            Phase::Reply,
            Phase::Append,
            Phase::Request,
            Phase::Reply,
            Phase::Done
        ]
    );
    let v = &app.trace.violations[0];
    assert_eq!(v.ids, ["toolu_f1"]);
    assert_eq!(
        (app.trace.step(v.step).phase, v.step),
        (Phase::Request, 4),
        "flagged at the request that carries the dangling call"
    );
    // At the results, toolu_f1 is unpaired and toolu_w1 paired.
    apply(&mut app, Action::StepForward);
    apply(&mut app, Action::StepForward);
    apply(&mut app, Action::StepForward);
    let ledger = app.trace.ledger_at(app.cursor);
    assert_eq!(ledger.unpaired(), ["toolu_f1"]);
    assert_eq!(ledger.counts().paired, 1);
    // Strategy toggles have nothing to change in a replay.
    apply(&mut app, key('e'));
    assert!(app.notice.as_ref().unwrap().contains("replaying"));
    assert_eq!(app.trace.violations.len(), 1);
}

#[test]
fn w_cycles_the_wire_views_and_the_roles_follow() {
    let mut app = app_with(
        "weather_fx.json",
        Extract::All,
        StopRule::Robust,
        "complete",
    );
    apply(&mut app, Action::Last);
    assert_eq!(app.view_len(), 5);
    apply(&mut app, key('w'));
    assert_eq!(app.view, Some(loopdbg_formats::provider::Format::Anthropic));
    let roles: Vec<String> = app.view_items().into_iter().map(|i| i.role).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "no tool role in Anthropic"
    );
    apply(&mut app, key('w'));
    let roles: Vec<String> = app.view_items().into_iter().map(|i| i.role).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
    apply(&mut app, key('w'));
    let roles: Vec<String> = app.view_items().into_iter().map(|i| i.role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "assistant"
        ]
    );
    apply(&mut app, Action::Expand);
    assert!(matches!(
        app.popup().cloned(),
        Some(Popup::Detail { message: 6, .. })
    ));
    apply(&mut app, Action::Back);
    apply(&mut app, key('w'));
    // Gemini: both results ride in one user turn, calls in a model turn.
    let roles: Vec<String> = app.view_items().into_iter().map(|i| i.role).collect();
    assert_eq!(roles, ["user", "model", "user", "model"]);
    let results = &app.view_items()[2].json;
    assert_eq!(
        results["parts"][0]["functionResponse"]["name"], "get_weather",
        "a response names the call it answers"
    );
    apply(&mut app, key('w'));
    // Bedrock Converse: as Anthropic's turns, blocks keyed by their kind.
    assert_eq!(app.view, Some(loopdbg_formats::provider::Format::Bedrock));
    let roles: Vec<String> = app.view_items().into_iter().map(|i| i.role).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let results = &app.view_items()[2].json;
    assert_eq!(results["content"].as_array().unwrap().len(), 2);
    assert!(results["content"][0]["toolResult"]["toolUseId"].is_string());
    apply(&mut app, key('w'));
    assert_eq!(app.view, None);
}

#[test]
fn x_interrupts_at_the_current_execute_step_and_p_cycles_the_closure() {
    let s = session("fault_timeout.json");
    let mut strategy = Strategy::for_session(&s);
    strategy.closure = loopdbg_engine::strategy::Closure::Leave;
    let mut app = App::new("fault_timeout.json", s, strategy, Theme::color());
    apply(&mut app, key('x'));
    assert!(
        app.notice
            .as_ref()
            .unwrap()
            .contains("step to an Execute phase")
    );
    while phase(&app) != Phase::Execute {
        apply(&mut app, Action::StepForward);
    }
    assert_eq!(app.trace.step(app.cursor).time_ms, 80);
    apply(&mut app, key('x'));
    assert_eq!(
        app.strategy().interrupt.map(|i| (i.round, i.at_ms)),
        Some((1, 80))
    );
    assert!(
        app.notice
            .as_ref()
            .unwrap()
            .contains("interrupt in round 1 at 80 ms")
    );
    assert_eq!(app.trace.outcome.end, loopdbg_engine::trace::End::Error);
    // Under leave the slow call dangles; p cycles to synthesize and closes it.
    assert_eq!(app.analysis().unpaired, ["call_sh"]);
    apply(&mut app, key('p'));
    assert_eq!(
        app.strategy().closure,
        loopdbg_engine::strategy::Closure::Synthesize
    );
    assert!(app.analysis().unpaired.is_empty());
    assert!(
        app.notice
            .as_ref()
            .unwrap()
            .contains("unpaired call_sh → none")
    );
    apply(&mut app, key('p'));
    assert_eq!(
        app.strategy().closure,
        loopdbg_engine::strategy::Closure::Strip
    );
    assert!(app.analysis().unpaired.is_empty());
}

#[test]
fn step_into_a_sub_agent_and_back_out() {
    let s = session("fault_subagent.json");
    let strategy = Strategy::for_session(&s);
    let mut app = App::new("fault_subagent.json", s, strategy, Theme::color());
    apply(&mut app, key('<'));
    assert_eq!(app.notice.as_deref(), Some("not inside a sub-agent"));
    // From a step that is not the sub-agent call's, `>` refuses.
    while phase(&app) != Phase::Execute {
        apply(&mut app, Action::StepForward);
    }
    apply(&mut app, key('>'));
    assert_eq!(
        app.depth(),
        0,
        "get_weather's Execute step is not the sub-agent's"
    );
    assert!(
        app.notice
            .as_deref()
            .unwrap()
            .starts_with("no sub-agent here")
    );
    apply(&mut app, Action::StepForward);
    assert_eq!(phase(&app), Phase::Execute);
    let parent_cursor = app.cursor;
    let parent_ledger = app.trace.ledger_at(app.cursor);
    apply(&mut app, key('>'));
    assert_eq!(app.depth(), 1);
    // A child's run is a read-only look: its strategy does not change.
    apply(&mut app, key('-'));
    assert!(
        app.notice
            .as_deref()
            .unwrap()
            .starts_with("a sub-agent's run is a read-only look")
    );
    assert_eq!(app.session.title, "Sub-agent: a research loop of its own");
    assert_eq!(app.cursor, 0);
    apply(&mut app, Action::Last);
    assert_eq!(app.trace.tool_runs(), ["search"]);
    apply(&mut app, key('<'));
    assert_eq!(app.depth(), 0);
    assert_eq!(app.cursor, parent_cursor);
    assert_eq!(
        app.trace.ledger_at(app.cursor),
        parent_ledger,
        "the parent's ledger is unaffected"
    );
}

#[test]
fn a_screen_too_small_ignores_every_key_but_quit_and_resize() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::Resize(30, 8));
    let at = app.cursor;
    for action in [
        Action::StepForward,
        Action::Last,
        key('e'),
        key('?'),
        key('w'),
    ] {
        apply(&mut app, action);
    }
    assert_eq!(app.cursor, at, "nothing moved unseen");
    assert!(app.popup().cloned().is_none() && app.view.is_none());
    assert_eq!(app.strategy().extract, Extract::First);
    apply(&mut app, Action::Resize(80, 24));
    apply(&mut app, Action::StepForward);
    assert_eq!(app.cursor, at + 1);
    apply(&mut app, Action::Resize(59, 40));
    apply(&mut app, Action::Quit);
    assert!(app.quit, "quit still works");
}

#[test]
fn d_opens_and_closes_the_tools_popup() {
    let mut app = fx_first_reask();
    apply(&mut app, key('d'));
    assert!(matches!(
        app.popup().cloned(),
        Some(Popup::Tools { scroll: 0 })
    ));
    apply(&mut app, Action::ScrollDown);
    assert!(matches!(
        app.popup().cloned(),
        Some(Popup::Tools { scroll: 1 })
    ));
    apply(&mut app, key('d'));
    assert_eq!(app.popup().cloned(), None);
    apply(&mut app, key('d'));
    apply(&mut app, Action::Back);
    assert_eq!(app.popup().cloned(), None);
    assert!(!app.quit);
}

#[test]
fn slash_searches_ids_and_text_and_enter_steps_through_the_matches() {
    use loopdbg_tui::keymap::search_action_for;
    let mut app = fx_first_reask();
    apply(&mut app, Action::Last);
    apply(&mut app, key('/'));
    assert_eq!(app.search(), Some(""));
    // While typing, keys are text: `n` does not step.
    let cursor = app.cursor;
    for c in "TOOLU_Fx".chars() {
        let action =
            search_action_for(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).unwrap();
        apply(&mut app, action);
    }
    apply(
        &mut app,
        search_action_for(&KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)).unwrap(),
    );
    assert_eq!(app.search(), Some("TOOLU_F"));
    assert_eq!(app.cursor, cursor);
    apply(&mut app, Action::SearchSubmit);
    assert_eq!(app.search(), None);
    // Case-insensitive: the first message naming toolu_f1 is the first reply.
    assert_eq!(app.selected_message(), Some(1));
    let notice = app.notice.clone().unwrap();
    assert!(notice.starts_with("/TOOLU_F: message 1 (1 of "), "{notice}");
    // `/` Enter finds the next match, and wraps around.
    let mut seen = vec![1];
    loop {
        apply(&mut app, key('/'));
        apply(&mut app, Action::SearchSubmit);
        let at = app.selected_message().unwrap();
        if at == 1 {
            break;
        }
        assert!(
            at > *seen.last().unwrap(),
            "matches go forward: {seen:?} then {at}"
        );
        seen.push(at);
    }
    assert!(seen.len() > 2, "toolu_f1 is called every round: {seen:?}");
    // Arguments and text are searched too; a miss says so and moves nothing.
    apply(&mut app, key('/'));
    for c in "USD".chars() {
        apply(&mut app, Action::SearchType(c));
    }
    apply(&mut app, Action::SearchSubmit);
    assert!(
        app.notice.as_deref().unwrap().contains("message"),
        "{:?}",
        app.notice
    );
    let before = app.selected_message();
    apply(&mut app, key('/'));
    for c in "no such thing".chars() {
        apply(&mut app, Action::SearchType(c));
    }
    apply(&mut app, Action::SearchSubmit);
    assert_eq!(app.selected_message(), before);
    assert!(
        app.notice
            .as_deref()
            .unwrap()
            .contains("no message at this step")
    );
    // Esc cancels without searching.
    apply(&mut app, key('/'));
    apply(
        &mut app,
        search_action_for(&KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)).unwrap(),
    );
    assert_eq!(app.search(), None);
    assert!(!app.quit);
}

/// A live picture of a conversation given as an Anthropic message array.
fn live_update(messages: serde_json::Value, alarm: Option<&str>) -> loopdbg_tui::app::LiveUpdate {
    use loopdbg_read::{Source, read};
    let conv = read(
        &messages,
        Source::Provider(loopdbg_formats::provider::Format::Anthropic),
    )
    .unwrap();
    let findings = loopdbg_judge::check::check(&conv);
    loopdbg_tui::app::LiveUpdate {
        session: loopdbg_export::replay::session_for(&conv, "live"),
        trace: loopdbg_export::replay::trace_of(&conv, &findings),
        source: "anthropic".into(),
        alarm: alarm.map(str::to_string),
        waiting: None,
        derived: None,
        token: None,
    }
}

fn growing() -> (serde_json::Value, serde_json::Value) {
    let first = serde_json::json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_w1", "name": "w", "input": {}}]}
    ]);
    let mut second = first.as_array().unwrap().clone();
    second.push(serde_json::json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18"}]}));
    second.push(serde_json::json!({"role": "assistant", "content": "18°C"}));
    (first, serde_json::Value::Array(second))
}

#[test]
fn a_following_live_view_sticks_to_the_newest_step() {
    let (first, second) = growing();
    let mut app = App::live("cap", "proxy", live_update(first, None), Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    assert_eq!(app.cursor, app.trace.len() - 1);
    let before = app.trace.len();
    app.apply_live(live_update(second, Some("ALARM #2")));
    assert!(app.trace.len() > before);
    assert_eq!(
        app.cursor,
        app.trace.len() - 1,
        "following moves to the newest step"
    );
    assert_eq!(app.notice.as_deref(), Some("ALARM #2"));
    assert_eq!(app.live.as_ref().unwrap().updates, 2);
}

#[test]
fn stepping_back_pauses_following_and_f_resumes_it() {
    let (first, second) = growing();
    let mut app = App::live("cap", "proxy", live_update(first, None), Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    apply(&mut app, Action::StepBack);
    let here = app.cursor;
    assert!(!app.live.as_ref().unwrap().follow);
    app.apply_live(live_update(second, None));
    assert_eq!(app.cursor, here, "a paused view stays where the user looks");
    apply(&mut app, key('f'));
    assert!(app.live.as_ref().unwrap().follow);
    assert_eq!(app.cursor, app.trace.len() - 1);
    apply(&mut app, key('f'));
    assert!(!app.live.as_ref().unwrap().follow);
}

#[test]
fn f_outside_a_live_view_says_how_to_get_one() {
    let mut app = fx_first_reask();
    let cursor = app.cursor;
    apply(&mut app, key('f'));
    assert_eq!(app.cursor, cursor);
    assert!(app.notice.as_deref().unwrap().contains("--follow"));
}

/// weather_fx under `all`, at round 1's Reply.
fn fx_at_round_1_reply() -> App {
    let mut app = app_with(
        "weather_fx.json",
        Extract::All,
        StopRule::Robust,
        "complete",
    );
    while phase(&app) != Phase::Reply {
        apply(&mut app, Action::StepForward);
    }
    app
}

fn reply_without_second_call(app: &App) -> String {
    let mut reply = app.trace.round(1).unwrap().reply.clone();
    reply.tool_calls.truncate(1);
    serde_json::to_string_pretty(&reply).unwrap()
}

#[test]
fn an_edit_at_round_1_that_removes_the_second_call_forks_the_run_the_engine_computes() {
    use loopdbg_tui::app::Command;
    let mut app = fx_at_round_1_reply();
    let original = app.trace.clone();
    apply(&mut app, key('E'));
    let Some(Command::Edit { json, .. }) = app.command.take() else {
        panic!("E asks the adapter for an editor")
    };
    assert!(json.contains("toolu_f1"));
    let edited = reply_without_second_call(&app);
    apply(&mut app, Action::EditDone(edited.clone()));
    // The fork is what the engine computes for that reply.
    let reply: loopdbg_engine::session::Reply = serde_json::from_str(&edited).unwrap();
    let expected_session = loopdbg_engine::fork::apply(
        &app.forks[0].session,
        &loopdbg_engine::fork::Edit::Reply {
            behavior: "complete".into(),
            round: 1,
            reply,
        },
    )
    .unwrap();
    let expected = loopdbg_engine::run(&expected_session, app.strategy());
    assert_eq!(app.trace, expected);
    assert_ne!(app.trace, original);
    assert_eq!(app.fork, 1);
    assert_eq!(
        phase(&app),
        Phase::Reply,
        "the fork opens where it branched"
    );
    assert!(
        app.notice
            .as_deref()
            .unwrap()
            .contains("fork 1 of the original")
    );
    assert!(!app.trace.tool_runs().contains(&"get_fx_rate"));
}

#[test]
fn forks_are_a_tree_that_can_be_switched_and_written() {
    use loopdbg_tui::app::{Command, Popup};
    let mut app = fx_at_round_1_reply();
    apply(&mut app, key('F'));
    assert!(app.notice.as_deref().unwrap().contains("no forks yet"));
    apply(&mut app, key('E'));
    let edited = reply_without_second_call(&app);
    apply(&mut app, Action::EditDone(edited));
    // A fork of the fork: the reply's text changed too.
    apply(&mut app, key('E'));
    let mut reply: serde_json::Value =
        serde_json::from_str(&reply_without_second_call(&app)).unwrap();
    reply["text"] = "checking".into();
    apply(&mut app, Action::EditDone(reply.to_string()));
    assert_eq!(app.forks.len(), 3);
    assert_eq!(app.forks[2].parent, Some(1));
    apply(&mut app, key('F'));
    assert!(matches!(app.popup().cloned(), Some(Popup::Forks { .. })));
    apply(&mut app, Action::Expand);
    assert_eq!(app.fork, 0, "the first row is the original");
    assert!(app.trace.tool_runs().contains(&"get_fx_rate"));
    // Back to fork 2 and write it: the file reproduces the run.
    apply(&mut app, key('F'));
    apply(&mut app, Action::ScrollDown);
    apply(&mut app, Action::ScrollDown);
    apply(&mut app, Action::Expand);
    assert_eq!(app.fork, 2);
    apply(&mut app, key('W'));
    let Some(Command::Write {
        text, suggested, ..
    }) = app.command.take()
    else {
        panic!("W asks the adapter to write")
    };
    assert_eq!(suggested, "weather_fx.fork2.json");
    let reloaded = loopdbg_engine::Session::parse("fork.json", &text).unwrap();
    let again = loopdbg_engine::run(&reloaded, &Strategy::for_session(&reloaded));
    assert_eq!(again, app.trace, "a written fork reproduces its trace");
}

#[test]
fn a_bad_edit_says_where_and_changes_nothing() {
    let mut app = fx_at_round_1_reply();
    let before = app.trace.clone();
    apply(&mut app, key('E'));
    apply(&mut app, Action::EditDone("{\"text\": nul}".into()));
    assert!(app.notice.as_deref().unwrap().contains("line 1 column"));
    assert_eq!(app.trace, before);
    assert!(app.forks.is_empty());
}

#[test]
fn e_says_where_it_works_and_why_a_replay_cannot_fork() {
    let mut app = fx_first_reask();
    apply(&mut app, Action::First);
    apply(&mut app, key('E'));
    assert!(app.command.is_none());
    assert!(app.notice.as_deref().unwrap().contains("Reply step"));
    let (first, _) = growing();
    let mut replay = App::live("cap", "proxy", live_update(first, None), Theme::color());
    apply(&mut replay, key('E'));
    assert!(replay.notice.as_deref().unwrap().contains("loopdbg record"));
}

#[test]
fn an_edited_return_value_forks_at_execute() {
    let mut app = fx_at_round_1_reply();
    while phase(&app) != Phase::Execute {
        apply(&mut app, Action::StepForward);
    }
    apply(&mut app, key('E'));
    assert!(app.command.is_some());
    apply(
        &mut app,
        Action::EditDone("{\"city\": \"北京\", \"temp_c\": -40}".into()),
    );
    let text = serde_json::to_string(&app.trace.messages).unwrap();
    assert!(text.contains("-40"), "{text}");
}

#[test]
fn d_compares_with_the_other_extraction_or_the_parent_fork() {
    use loopdbg_tui::app::Popup;
    let mut app = fx_first_reask();
    apply(&mut app, key('D'));
    let Some(Popup::Diff { diff, other, .. }) = app.popup() else {
        panic!("D opens the diff")
    };
    assert_eq!(other, "extract all");
    assert_eq!(diff.first_divergence.as_ref().unwrap().round, 1);
}

fn tour_app() -> App {
    let sessions = loopdbg_lesson::tour::STOPS
        .iter()
        .map(|s| session(s.session))
        .collect();
    let mut app = App::tour(sessions, Default::default(), Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    app
}

fn answer(app: &mut App, text: &str) {
    apply(app, key('a'));
    for c in text.chars() {
        apply(app, Action::SearchType(c));
    }
    apply(app, Action::SearchSubmit);
}

/// The tour said the answer was right.
fn assert_right(app: &App) {
    assert!(
        app.notice.as_deref().unwrap_or_default().starts_with("✓"),
        "{:?}",
        app.notice
    );
}

fn unpaired_on_screen(app: &App) -> Vec<String> {
    loopdbg_engine::ledger::Ledger::of(app.trace.history_at(app.cursor), &[]).unpaired()
}

#[test]
fn the_tour_is_answered_by_driving_the_debugger() {
    use loopdbg_tui::app::Command;
    let mut app = tour_app();
    // Stop 1: step to round 2's Request and count the messages pane.
    while !(phase(&app) == Phase::Request && app.trace.step(app.cursor).round == 2) {
        apply(&mut app, key('n'));
    }
    answer(&mut app, "7");
    assert!(
        app.notice.as_deref().unwrap().starts_with("✗"),
        "a wrong answer is refused"
    );
    let count = app.view_len();
    answer(&mut app, &count.to_string());
    assert_right(&app);
    assert_eq!(app.command.take(), Some(Command::SaveTour(vec![0])));

    // Stop 2: under `first`, the id the ids pane calls unpaired at round 2's Request.
    apply(&mut app, key('T'));
    assert_eq!(app.strategy().extract, Extract::First);
    while !(phase(&app) == Phase::Request && app.trace.step(app.cursor).round == 2) {
        apply(&mut app, key('n'));
    }
    let ids = unpaired_on_screen(&app);
    assert_eq!(ids.len(), 1);
    answer(&mut app, &ids[0]);
    assert_right(&app);
    // The lesson's G and e: the rate is missing, then back.
    apply(&mut app, key('G'));
    let final_text = |app: &App| app.trace.outcome.final_text.clone().unwrap_or_default();
    assert!(!final_text(&app).contains("7.12"), "{}", final_text(&app));
    apply(&mut app, key('e'));
    apply(&mut app, key('G'));
    assert!(final_text(&app).contains("7.12"), "{}", final_text(&app));

    // Stop 3: cycle the stop rule until G shows an error in round 1.
    apply(&mut app, key('T'));
    let mut found = None;
    for _ in 0..4 {
        apply(&mut app, key('s'));
        apply(&mut app, key('G'));
        if app.trace.outcome.end == loopdbg_engine::trace::End::Error
            && app.trace.outcome.requests == 1
        {
            found = Some(app.strategy().stop.to_string());
        }
    }
    answer(&mut app, &found.expect("one rule ends honestly"));
    assert_right(&app);

    // Stop 4: under `leave`, the id left without a result at the end.
    apply(&mut app, key('T'));
    apply(&mut app, key('G'));
    let ids = unpaired_on_screen(&app);
    answer(&mut app, &ids[0]);
    assert_right(&app);

    // Stop 5: under `synthesize`, the warning names the number no tool
    // returned.
    apply(&mut app, key('T'));
    apply(&mut app, key('G'));
    let warning = app
        .analysis()
        .warnings
        .iter()
        .find(|w| w.kind == loopdbg_lesson::checks::WarningKind::Unsourced)
        .map(|w| w.message.clone())
        .expect("the closure stop warns of an unsourced number");
    let number = warning
        .strip_prefix("the answer states ")
        .and_then(|rest| rest.split(',').next())
        .unwrap();
    answer(&mut app, number);
    assert!(
        app.notice.as_deref().unwrap().contains("whole tour"),
        "{:?}",
        app.notice
    );
    assert_eq!(
        app.command.take(),
        Some(Command::SaveTour(vec![0, 1, 2, 3, 4]))
    );
}

/// `T` at the last stop says the tour is done and how many stops were
/// answered, and stays; `T` again starts over (it went back to stop 1
/// without a word; issue 60, item 7).
#[test]
fn t_at_the_last_stop_says_the_tour_is_done_then_starts_over() {
    let sessions = loopdbg_lesson::tour::STOPS
        .iter()
        .map(|s| session(s.session))
        .collect();
    let mut app = App::tour(sessions, [0, 1, 2].into_iter().collect(), Theme::color());
    apply(&mut app, Action::Resize(80, 24));
    apply(&mut app, key('T'));
    assert_eq!(app.tour.as_ref().unwrap().index, 4);
    apply(&mut app, key('T'));
    assert_eq!(
        app.tour.as_ref().unwrap().index,
        4,
        "stays at the last stop"
    );
    let said = app.notice.clone().unwrap();
    assert!(
        said.starts_with(
            "that was the last part: the tour is done (3 of 5 answered; a answers this one)"
        ),
        "{said}"
    );
    apply(&mut app, key('T'));
    assert_eq!(app.tour.as_ref().unwrap().index, 0, "T again starts over");
    // The English tour names the English companion it opens.
    assert_eq!(app.origin, "sessions/en/weather.json");
}

#[test]
fn the_tour_resumes_at_the_first_unsolved_stop() {
    let sessions = loopdbg_lesson::tour::STOPS
        .iter()
        .map(|s| session(s.session))
        .collect();
    let app = App::tour(sessions, [0, 1].into_iter().collect(), Theme::color());
    assert_eq!(app.tour.as_ref().unwrap().index, 2);
    assert_eq!(app.origin, "sessions/en/stop_truncated.json");
}

/// A toggle's notice counts an id reused every round instead of listing it
/// again and again, and says "1 round" in plain words (issue 22, item 4).
#[test]
fn toggle_notices_count_reused_ids_and_speak_plainly() {
    let mut app = fx_first_reask();
    apply(&mut app, key('e'));
    let notice = app.notice.clone().unwrap();
    assert!(notice.contains("unpaired toolu_f1 ×6 → none"), "{notice}");
    assert!(!notice.contains("toolu_f1, toolu_f1"), "{notice}");
    // Down to one round: singular.
    while app.strategy().max_rounds > 1 {
        apply(&mut app, key('-'));
    }
    let notice = app.notice.clone().unwrap();
    assert!(
        notice.contains("1 round") && !notice.contains("1 rounds"),
        "{notice}"
    );
}

/// `c` stops where an id becomes unpaired and names that id, not every
/// unpaired id so far (issue 22, item 4).
#[test]
fn continue_names_only_the_id_that_became_unpaired() {
    let mut app = fx_first_reask();
    apply(&mut app, key('c'));
    let first = app.notice.clone().unwrap();
    assert!(
        first.starts_with("stopped: unpaired id appeared (toolu_f1)"),
        "{first}"
    );
    apply(&mut app, key('c'));
    let second = app.notice.clone().unwrap();
    assert_eq!(second, first, "the second stop names its own new id once");
}

/// `x` where every call of the turn has already ended changes nothing, so
/// it is refused with the reason instead of being recorded (issue 22,
/// item 5); where a call is still running it interrupts.
#[test]
fn an_interrupt_with_nothing_running_is_refused() {
    let mut app = fx_first_reask();
    while phase(&app) != Phase::Execute {
        apply(&mut app, Action::StepForward);
    }
    let before = app.strategy().clone();
    apply(&mut app, key('x'));
    assert_eq!(app.strategy(), &before, "no interrupt recorded");
    let notice = app.notice.clone().unwrap();
    assert!(notice.starts_with("nothing to interrupt"), "{notice}");

    let mut app = app_with(
        "fault_timeout.json",
        Extract::All,
        StopRule::Robust,
        "script",
    );
    while phase(&app) != Phase::Execute {
        apply(&mut app, Action::StepForward);
    }
    apply(&mut app, key('x'));
    assert!(app.strategy().interrupt.is_some(), "{:?}", app.notice);
}

/// A reply with calls and no text is said in words, not as "its text null
/// is not the answer" (issue 22, item 4).
#[test]
fn a_reply_without_text_is_not_called_null() {
    let mut app = app_with("weather.json", Extract::All, StopRule::Robust, "two_trips");
    while phase(&app) != Phase::Reply {
        apply(&mut app, Action::StepForward);
    }
    let said = loopdbg_tui::explain::explain(&app.trace, app.cursor, app.session.tools.len());
    assert!(!said.contains("null"), "{said}");
    assert!(
        said.contains("says nothing else") || said.contains("its text"),
        "{said}"
    );
}

/// `y` copies the selected message's JSON (the popup's when one is open,
/// the explain box's text when it has the focus); `Y` writes it to a file.
#[test]
fn y_copies_the_selected_message_and_y_writes_it() {
    use loopdbg_tui::app::Command;
    let mut app = App::new(
        "sessions/weather.json",
        session("weather.json"),
        Strategy::for_session(&session("weather.json")),
        Theme::color(),
    );
    apply(&mut app, Action::Resize(120, 40));
    for _ in 0..3 {
        apply(&mut app, key('n'));
    }
    apply(&mut app, key('y'));
    let Some(Command::Copy { text, what, .. }) = app.command.take() else {
        panic!("y asks the adapter to copy");
    };
    let last = app.selected_message().unwrap();
    assert_eq!(what, format!("messages[{last}] · canonical"));
    let copied: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        copied,
        serde_json::to_value(&app.trace.messages[last]).unwrap()
    );

    apply(&mut app, key('Y'));
    assert!(
        matches!(app.command.take(), Some(Command::Write { suggested, .. }) if suggested == format!("loopdbg-message-{last}.json"))
    );

    app.focus = Pane::Explain;
    apply(&mut app, key('y'));
    let Some(Command::Copy { text, .. }) = app.command.take() else {
        panic!("y in the explain box copies its text");
    };
    assert!(!text.is_empty() && !text.starts_with('{'), "{text}");
}

/// A fork's handout (X) says it is a fork and where it branched; the
/// original's does not.
#[test]
fn a_forks_handout_says_it_is_a_fork() {
    use loopdbg_tui::app::Command;
    let mut app = fx_at_round_1_reply();
    apply(&mut app, key('X'));
    let Some(Command::Write { text, .. }) = app.command.take() else {
        panic!("X writes a handout");
    };
    assert!(!text.contains("— fork "), "the original is no fork");
    apply(&mut app, key('E'));
    app.command = None;
    let edited = reply_without_second_call(&app);
    apply(&mut app, Action::EditDone(edited));
    apply(&mut app, key('X'));
    let Some(Command::Write { text, .. }) = app.command.take() else {
        panic!("X writes a handout");
    };
    assert!(
        text.contains("— fork 1 (from step"),
        "the fork's handout says so"
    );
}

/// The provider view's items at every step, made once per trace and cut
/// at each step's history, are what the view makes of that history, in
/// every provider's view, on a replayed log with parallel calls, and on a
/// run under each extraction (a run adds results one at a time).
#[test]
fn the_view_items_of_each_step_are_those_of_its_history() {
    use loopdbg_formats::provider::{Format, spans};
    let conv = claude_code_log("claude_code_v2/parallel.jsonl").remove(0);
    let findings = loopdbg_judge::check::check(&conv);
    let trace = loopdbg_export::replay::trace_of(&conv, &findings);
    let session = loopdbg_export::replay::session_for(&conv, "replay");
    let replay = App::replay("log", session, trace, "claude-code", Theme::color());
    let apps = [
        replay,
        app_with(
            "weather_fx.json",
            Extract::All,
            StopRule::ToolCalls,
            "reask",
        ),
        fx_first_reask(),
    ];
    for mut app in apps {
        for format in [
            Format::Anthropic,
            Format::Openai,
            Format::Responses,
            Format::Gemini,
            Format::Bedrock,
        ] {
            app.view = Some(format);
            for cursor in 0..app.trace.len() {
                app.cursor = cursor;
                let made = spans(format, app.trace.history_at(cursor));
                let cut: Vec<_> = app.view_spans().unwrap().iter().collect();
                assert_eq!(cut, made, "{format:?} at step {cursor}");
                assert_eq!(app.view_len(), made.len());
            }
        }
        app.view = None;
        assert!(app.view_spans().is_none());
    }
}

/// A run that stops where the stub model has no reply (here: a script for
/// round 1 only) is forked at that round: E on its last Request or at Done
/// opens round 2's missing reply to write, not "E edits at a Reply step"
/// (the README's demo step was a dead end; issue 60, item 2).
#[test]
fn e_where_the_stub_has_no_reply_writes_that_rounds_reply() {
    use loopdbg_tui::app::{Command, EditTarget};
    let s = loopdbg_engine::session::Session::parse(
        "inline.json",
        r#"{"user": "weather?", "tools": [{"name": "w", "table": [{"args": {}, "result": "18C"}]}],
            "model": {"s": [{"when": {"round": 1}, "reply": {"tool_calls": [{"id": "c1", "name": "w", "args": {}}]}}]}}"#,
    )
    .unwrap();
    let strategy = Strategy::for_session(&s);
    let mut app = App::new("inline.json", s, strategy, Theme::color());
    apply(&mut app, Action::Resize(120, 40));
    apply(&mut app, key('G'));
    assert_eq!(
        app.trace.outcome.end,
        loopdbg_engine::trace::End::Unscripted
    );
    apply(&mut app, key('E'));
    match app.command.take() {
        Some(Command::Edit {
            target: EditTarget::Reply { round, .. },
            json,
        }) => {
            assert_eq!(round, 2);
            assert!(json.contains("\"finish_reason\": \"stop\""), "{json}");
        }
        other => panic!("E opened no reply: {other:?} ({:?})", app.notice),
    }
    // The reply written: the fork runs to the model's answer.
    apply(
        &mut app,
        Action::EditDone(
            r#"{"text": "18C in town", "tool_calls": [], "finish_reason": "stop"}"#.into(),
        ),
    );
    assert_eq!(app.fork, 1);
    apply(&mut app, key('G'));
    assert_eq!(app.trace.outcome.end, loopdbg_engine::trace::End::ModelDone);
    assert_eq!(app.trace.outcome.final_text.as_deref(), Some("18C in town"));
    // Before that round, E at round 1's Request still says where it edits.
    apply(&mut app, key('g'));
    apply(&mut app, key('E'));
    assert!(app.command.is_none());
    assert!(
        app.notice
            .as_deref()
            .unwrap_or("")
            .starts_with("E edits at a Reply step")
    );
}
