//! Rendered frames: insta snapshots at 120×40, 80×24, 60×18 and a tiny terminal,
//! plus style assertions that snapshots cannot see.

use crate::common::*;

use loopdbg_engine::strategy::{Extract, StopRule};
use loopdbg_engine::trace::Phase;
use loopdbg_engine::{Session, Strategy};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

const SIZES: [(u16, u16); 4] = [(120, 40), (80, 24), (60, 18), (30, 8)];

fn app(name: &str, tweak: impl FnOnce(&mut Strategy), theme: Theme) -> App {
    let s = session(name);
    let mut strategy = Strategy::for_session(&s);
    tweak(&mut strategy);
    App::new(format!("sessions/{name}"), s, strategy, theme)
}

fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    apply(app, Action::Resize(w, h));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| f.render_widget(&*app, f.area())).unwrap();
    terminal
}

fn first_reask(s: &mut Strategy) {
    s.extract = Extract::First;
    s.stop = StopRule::ToolCalls;
    s.behavior = "reask".into();
}

fn to_phase(app: &mut App, phase: Phase) {
    while app.trace.step(app.cursor).phase != phase {
        apply(app, Action::StepForward);
    }
}

#[test]
fn start_of_weather() {
    for (w, h) in SIZES {
        let mut a = app("weather.json", |_| {}, Theme::color());
        insta::assert_snapshot!(format!("start_{w}x{h}"), draw(&mut a, w, h).backend());
    }
}

#[test]
fn extract_under_first() {
    for (w, h) in SIZES {
        let mut a = app("weather_fx.json", first_reask, Theme::color());
        to_phase(&mut a, Phase::Extract);
        insta::assert_snapshot!(
            format!("extract_first_{w}x{h}"),
            draw(&mut a, w, h).backend()
        );
    }
}

#[test]
fn end_summary_under_first_reask() {
    for (w, h) in SIZES {
        let mut a = app("weather_fx.json", first_reask, Theme::color());
        apply(&mut a, Action::Last);
        insta::assert_snapshot!(
            format!("end_first_reask_{w}x{h}"),
            draw(&mut a, w, h).backend()
        );
    }
}

#[test]
fn help_open() {
    for (w, h) in SIZES {
        let mut a = app("weather.json", |_| {}, Theme::color());
        apply(&mut a, Action::Help);
        insta::assert_snapshot!(format!("help_{w}x{h}"), draw(&mut a, w, h).backend());
    }
}

#[test]
fn weather_answer_step_mid_run() {
    let mut a = app("weather.json", |_| {}, Theme::color());
    apply(&mut a, Action::NextRound);
    to_phase(&mut a, Phase::Reply);
    insta::assert_snapshot!(
        "weather_second_reply_120x40",
        draw(&mut a, 120, 40).backend()
    );
}

#[test]
fn compare_popup() {
    let mut a = app("weather_fx.json", first_reask, Theme::color());
    apply(&mut a, Action::ShowCompare);
    insta::assert_snapshot!("compare_120x40", draw(&mut a, 120, 40).backend());
}

/// The cell in row `y` whose symbol starts `text`.
fn find(terminal: &Terminal<TestBackend>, text: &str) -> Option<(u16, u16)> {
    let buf = terminal.backend().buffer();
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(i) = row.find(text) {
            let x = row[..i].chars().count() as u16;
            return Some((x, y));
        }
    }
    None
}

#[test]
fn the_current_phase_is_highlighted() {
    let mut a = app("weather_fx.json", first_reask, Theme::color());
    to_phase(&mut a, Phase::Extract);
    let t = draw(&mut a, 120, 40);
    let (x, y) = find(&t, "Extract →").unwrap();
    let style = t.backend().buffer()[(x, y)].style();
    assert!(style.add_modifier.contains(Modifier::REVERSED));
    let (x, y) = find(&t, "Reply →").unwrap();
    assert!(
        !t.backend().buffer()[(x, y)]
            .style()
            .add_modifier
            .contains(Modifier::REVERSED)
    );
}

#[test]
fn no_color_is_monochrome_and_keeps_the_selection_visible() {
    let mut a = app("weather_fx.json", first_reask, Theme::monochrome());
    to_phase(&mut a, Phase::Extract);
    let t = draw(&mut a, 120, 40);
    let buf = t.backend().buffer();
    for cell in buf.content() {
        assert!(
            matches!(cell.fg, Color::Reset),
            "colour {:?} under NO_COLOR",
            cell.fg
        );
        assert!(
            matches!(cell.bg, Color::Reset),
            "colour {:?} under NO_COLOR",
            cell.bg
        );
    }
    let (x, y) = find(&t, "Extract →").unwrap();
    assert!(
        buf[(x, y)]
            .style()
            .add_modifier
            .contains(Modifier::REVERSED)
    );
    // The selected message is reversed too.
    let (x, y) = find(&t, "assistant").unwrap();
    assert!(
        buf[(x, y)]
            .style()
            .add_modifier
            .contains(Modifier::REVERSED)
    );
}

#[test]
fn any_size_renders_without_panicking() {
    let mut a = app("weather_fx.json", first_reask, Theme::color());
    apply(&mut a, Action::Last);
    apply(&mut a, Action::Help);
    for (w, h) in [
        (1, 1),
        (2, 1),
        (1, 30),
        (59, 17),
        (60, 18),
        (61, 19),
        (200, 60),
        (1, 1),
    ] {
        draw(&mut a, w, h);
    }
    let t = draw(&mut a, 40, 10);
    assert!(find(&t, "needs at least").is_some());
}

#[test]
fn control_characters_from_sessions_never_reach_the_terminal() {
    let text = r#"{"title": "evil\u001b[2J\u0007", "user": "hi\u001b]0;pwned\u0007",
        "model": {"s": [{"reply": {"text": "ok\r\nbye\u001b[31m"}}]}}"#;
    let s = Session::parse("evil.json", text).unwrap();
    let strategy = Strategy::for_session(&s);
    let mut a = App::new("evil.json", s, strategy, Theme::color());
    apply(&mut a, Action::Last);
    let t = draw(&mut a, 120, 40);
    for cell in t.backend().buffer().content() {
        assert!(
            !cell.symbol().chars().any(char::is_control),
            "raw control character {:?}",
            cell.symbol()
        );
    }
    assert!(find(&t, "evil\\u{1b}[2J").is_some());
}

#[test]
fn anthropic_view_groups_the_results() {
    let mut a = app("weather_fx.json", |_| {}, Theme::color());
    apply(&mut a, Action::Last);
    apply(&mut a, Action::CycleView);
    insta::assert_snapshot!("anthropic_view_120x40", draw(&mut a, 120, 40).backend());
}

/// The debugger replaying the first conversation of a Claude Code fixture.
fn replayed_log(name: &str) -> App {
    let conv = crate::common::claude_code_log(name).remove(0);
    let findings = loopdbg_judge::check::check(&conv);
    let trace = loopdbg_export::replay::trace_of(&conv, &findings);
    let session = loopdbg_export::replay::session_for(&conv, "replay");
    let file = name.rsplit('/').next().unwrap_or(name);
    App::replay(file, session, trace, "claude-code", Theme::color())
}

#[test]
fn replay_of_an_interrupted_claude_code_log() {
    let mut a = replayed_log("claude_code_interrupted.jsonl");
    apply(&mut a, Action::Last);
    insta::assert_snapshot!(
        "replay_claude_code_end_120x40",
        draw(&mut a, 120, 40).backend()
    );
}

#[test]
fn replay_shows_the_requests_the_provider_refused_as_trips_with_no_reply() {
    let mut a = replayed_log("claude_code_v2/refused_400.jsonl");
    // The first refused request: the 400, confirmed by the log.
    while !(a.trace.step(a.cursor).phase == Phase::Request && a.trace.step(a.cursor).round == 3) {
        apply(&mut a, Action::StepForward);
    }
    insta::assert_snapshot!(
        "replay_refused_request_80x24",
        draw(&mut a, 80, 24).backend()
    );
}

#[test]
fn interrupt_mid_execution() {
    let mut a = app("fault_interrupt.json", |_| {}, Theme::color());
    while !(a.trace.step(a.cursor).phase == Phase::Execute && a.trace.step(a.cursor).time_ms == 200)
    {
        apply(&mut a, Action::StepForward);
    }
    insta::assert_snapshot!(
        "interrupt_mid_execution_120x40",
        draw(&mut a, 120, 40).backend()
    );
}

#[test]
fn stepping_into_a_sub_agent() {
    let s = session("fault_subagent.json");
    let strategy = Strategy::for_session(&s);
    let mut a = App::new("sessions/fault_subagent.json", s, strategy, Theme::color());
    // The Execute step of the research call itself (get_weather ends first).
    while !(a.trace.step(a.cursor).phase == Phase::Execute
        && a.trace
            .step(a.cursor)
            .execution
            .is_some_and(|e| a.trace.round(1).unwrap().executions[e].name.as_ref() == "research"))
    {
        apply(&mut a, Action::StepForward);
    }
    apply(&mut a, Action::StepInto);
    apply(&mut a, Action::StepForward);
    apply(&mut a, Action::StepForward);
    insta::assert_snapshot!("sub_agent_120x40", draw(&mut a, 120, 40).backend());
}

#[test]
fn anthropic_detail_shows_the_stop_reason() {
    let mut a = app("weather_fx.json", |_| {}, Theme::color());
    apply(&mut a, Action::Last);
    apply(&mut a, Action::CycleView);
    apply(&mut a, Action::ScrollUp);
    apply(&mut a, Action::ScrollUp);
    apply(&mut a, Action::Expand);
    let t = draw(&mut a, 120, 40);
    assert!(find(&t, "messages[1] · Anthropic Messages").is_some());
    apply(&mut a, Action::PageDown);
    apply(&mut a, Action::PageDown);
    let t = draw(&mut a, 120, 40);
    assert!(
        find(&t, "\"stop_reason\": \"tool_use\"").is_some(),
        "{}",
        t.backend()
    );
}

#[test]
fn execute_steps_count_the_calls_as_they_end() {
    // The second call is faster: it ends first, and is Execute 1.
    let text = r#"{"user": "both", "tools": [
        {"name": "slow", "latency_ms": 200, "table": [{"args": {}, "result": 1}]},
        {"name": "fast", "latency_ms": 10, "table": [{"args": {}, "result": 2}]}],
      "model": {"script": [
        {"when": {"round": 1}, "reply": {"tool_calls": [
          {"id": "c_slow", "name": "slow", "args": {}}, {"id": "c_fast", "name": "fast", "args": {}}]}},
        {"reply": {"text": "1 and 2"}}]}}"#;
    let s = loopdbg_engine::Session::parse("order.json", text).unwrap();
    let strategy = Strategy::for_session(&s);
    let mut a = App::new("order.json", s, strategy, Theme::color());
    let mut seen = Vec::new();
    while !a.at_end() {
        if a.trace.step(a.cursor).phase == Phase::Execute {
            let t = draw(&mut a, 120, 40);
            let label = if find(&t, "Execute 1 ·").is_some() {
                "Execute 1"
            } else if find(&t, "Execute 2 ·").is_some() {
                "Execute 2"
            } else {
                "?"
            };
            let e = a.trace.step(a.cursor).execution.unwrap();
            let round = a.trace.round(1).unwrap();
            seen.push((label, round.executions[e].id.to_string()));
        }
        apply(&mut a, Action::StepForward);
    }
    assert_eq!(
        seen,
        [
            ("Execute 1", "c_fast".to_string()),
            ("Execute 2", "c_slow".to_string())
        ]
    );
}

#[test]
fn a_reply_cut_by_max_tokens_is_called_cut_not_an_answer() {
    let mut a = app(
        "stop_truncated.json",
        |s| s.stop = StopRule::ToolCalls,
        Theme::color(),
    );
    while a.trace.step(a.cursor).phase != Phase::Reply {
        apply(&mut a, Action::StepForward);
    }
    let t = draw(&mut a, 120, 40);
    assert!(find(&t, "1:cut").is_some(), "the trips line says cut");
    assert!(find(&t, "cut off by max_tokens").is_some());
    assert!(find(&t, "1:answer").is_none());
}

#[test]
fn the_loops_code_under_first_and_under_all() {
    for (name, extract) in [("code_first", Extract::First), ("code_all", Extract::All)] {
        let mut a = app("weather_fx.json", |s| s.extract = extract, Theme::color());
        while a.trace.step(a.cursor).phase != Phase::Extract {
            apply(&mut a, Action::StepForward);
        }
        let t = draw(&mut a, 120, 40);
        insta::assert_snapshot!(name, t.backend());
        // The line of the current phase is lit.
        let lit = find(&t, "▶     calls = tool_uses(reply)").expect("the Extract line is lit");
        let cell = t.backend().buffer()[(lit.0 + 6, lit.1)].style();
        assert!(
            cell.add_modifier
                .contains(ratatui::style::Modifier::REVERSED),
            "{cell:?}"
        );
    }
}

#[test]
fn the_ledger_says_what_each_call_is_doing_and_marks_placeholders() {
    // At 40 ms of fault_interrupt's turn, read_file has ended and the others run.
    let mut a = app("fault_interrupt.json", |_| {}, Theme::color());
    while !(a.trace.step(a.cursor).phase == Phase::Execute && a.trace.step(a.cursor).time_ms == 40)
    {
        apply(&mut a, Action::StepForward);
    }
    let t = draw(&mut a, 120, 40);
    assert!(find(&t, "toolu_read read_file [finished]").is_some());
    assert!(find(&t, "toolu_grep grep [running]").is_some());
    // Under synthesize, a cancelled sibling's result is a placeholder, and
    // the ledger says so.
    let mut a = app("fault_sibling_error.json", |_| {}, Theme::color());
    while a.trace.step(a.cursor).phase != Phase::Decide {
        apply(&mut a, Action::StepForward);
    }
    let t = draw(&mut a, 120, 40);
    assert!(
        find(&t, "toolu_cfg_c fetch_slow_config [placeholder: cancel").is_some(),
        "{}",
        (0..40)
            .map(|y| (0..120)
                .map(|x| t.backend().buffer()[(x, y)].symbol())
                .collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn messages_use_the_panes_width_and_show_call_arguments() {
    // At 200 columns the fx rate and the whole answer fit; calls show
    // their arguments.
    let mut a = app("weather_fx.json", |_| {}, Theme::color());
    apply(&mut a, Action::Last);
    let t = draw(&mut a, 200, 50);
    let rows: Vec<String> = (0..50)
        .map(|y| {
            (0..200)
                .map(|x| t.backend().buffer()[(x, y)].symbol())
                .collect()
        })
        .collect();
    assert!(
        // A wide character's second cell holds a space.
        rows.iter().any(|r| r.contains("7.12。 \"")),
        "the answer is whole:\n{}",
        rows.join("\n")
    );
    let mut a = app("weather.json", |_| {}, Theme::color());
    apply(&mut a, Action::Last);
    let t = draw(&mut a, 120, 40);
    assert!(find(&t, "⚒ get_weather({\"city\":\"北").is_some());
}

fn screen_text(terminal: &Terminal<TestBackend>) -> Vec<String> {
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect()
}

/// The facts that matter are the last thing a small screen drops: at every
/// step of a run that leaves ids unpaired, 80×24 and 60×18 still show the
/// count with the 400 in the header, and the ledger's first row names it.
#[test]
fn the_unpaired_count_survives_small_screens() {
    for (w, h) in [(80, 24), (60, 18)] {
        let mut a = app("weather_fx.json", first_reask, Theme::color());
        let mut seen = 0;
        loop {
            let unpaired = a.trace.step(a.cursor).unpaired;
            let rows = screen_text(&draw(&mut a, w, h));
            if unpaired > 0 {
                seen += 1;
                let want = format!("unpaired: {unpaired} · a request now → 400");
                // Beside the step on a narrow screen, after the strategy
                // on a wide one: in the header either way.
                assert!(
                    rows[..2].iter().any(|r| r.contains(&want)),
                    "{w}x{h} step {}: header {:?}",
                    a.cursor,
                    &rows[..2]
                );
                assert!(
                    rows.iter()
                        .any(|r| r.contains("│") && r.contains(" unpaired · no result")),
                    "{w}x{h} step {}: ledger lost the unpaired row",
                    a.cursor
                );
            } else {
                assert!(
                    rows[..2].iter().any(|r| r.contains("unpaired: none")),
                    "{w}x{h}: {:?}",
                    &rows[..2]
                );
            }
            if a.cursor + 1 == a.trace.len() {
                break;
            }
            apply(&mut a, Action::StepForward);
        }
        assert!(
            seen > 10,
            "the run should leave ids unpaired for many steps"
        );
    }
}

/// Every cell under the second half of a wide character, as the terminal
/// will draw it: anything but a blank there is lost on screen.
fn hidden_symbols(terminal: &Terminal<TestBackend>) -> Vec<(u16, u16, String)> {
    use unicode_width::UnicodeWidthStr;
    let buf = terminal.backend().buffer();
    let mut hidden = Vec::new();
    for y in 0..buf.area.height {
        let mut x = 0;
        while x < buf.area.width {
            let width = buf[(x, y)].symbol().width().max(1) as u16;
            for covered in x + 1..(x + width).min(buf.area.width) {
                let symbol = buf[(covered, y)].symbol();
                if !symbol.trim().is_empty() {
                    hidden.push((covered, y, symbol.to_string()));
                }
            }
            x += width;
        }
    }
    hidden
}

/// Popups over Chinese text keep their frame: `G w Enter` in weather.json
/// once lost the popup's top-left corner under a wide character.
#[test]
fn popups_over_wide_characters_keep_their_frame() {
    let mut checked = 0;
    for w in (60..=200).step_by(5) {
        for h in [18, 24, 40, 60] {
            for popup in [Action::Expand, Action::Help, Action::ShowCompare] {
                for view_cycles in 0..2 {
                    let mut a = app("weather.json", |_| {}, Theme::color());
                    apply(&mut a, Action::Last);
                    for _ in 0..view_cycles {
                        apply(&mut a, Action::CycleView);
                    }
                    for up in 0..4 {
                        if up > 0 {
                            apply(&mut a, Action::ScrollUp);
                        }
                        apply(&mut a, popup.clone());
                        let hidden = hidden_symbols(&draw(&mut a, w, h));
                        assert!(hidden.is_empty(), "{w}x{h} {popup:?}: {hidden:?}");
                        apply(&mut a, Action::Back);
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 500);
}

/// `d` shows the tool definitions with their schemas, the local table and
/// the lint findings: the `location`/`city` trap of param_mismatch.json is
/// visible in the debugger, and announced when it opens.
#[test]
fn tools_popup_shows_the_schema_and_the_lint_finding() {
    let mut a = app("param_mismatch.json", |_| {}, Theme::color());
    assert!(
        a.notice
            .as_deref()
            .unwrap_or("")
            .contains("lint: 1 finding"),
        "{:?}",
        a.notice
    );
    apply(&mut a, Action::ShowTools);
    let terminal = draw(&mut a, 120, 40);
    let text = screen_text(&terminal).join("\n");
    for want in [
        "tools (1) · lint",
        "undeclared_table_key",
        "\"location\"",
        "local table (1 row(s)",
        "{\"city\":\"北",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    insta::assert_snapshot!("tools_param_mismatch_120x40", terminal.backend());
    // Small screens scroll the popup instead of losing its lines.
    let before = screen_text(&draw(&mut a, 60, 18)).join("\n");
    apply(&mut a, Action::PageDown);
    let after = screen_text(&draw(&mut a, 60, 18)).join("\n");
    assert_ne!(before, after);
    assert!(after.contains("j/k scroll"));
    // A session without findings says so and has no notice.
    let mut a = app("weather.json", |_| {}, Theme::color());
    assert_eq!(a.notice, None);
    apply(&mut a, Action::ShowTools);
    let text = screen_text(&draw(&mut a, 120, 40)).join("\n");
    assert!(text.contains("lint: no findings"), "{text}");
}

/// The key bar keeps `?:help` and `q:quit` at every width: they are how a
/// user finds everything else.
#[test]
fn the_key_bar_keeps_help_and_quit_at_every_width() {
    for w in 60..=200 {
        let mut a = app("weather.json", |_| {}, Theme::color());
        let rows = screen_text(&draw(&mut a, w, 24));
        let bar = rows.last().unwrap();
        assert!(
            bar.contains("?:help") && bar.contains("q:quit"),
            "{w}: {bar:?}"
        );
        assert!(bar.starts_with(" n:step"), "{w}: {bar:?}");
    }
}

/// Selecting a tool_result lights the tool_use it answers, in the messages
/// pane and in the ledger, and the reverse; nothing else is lit.
#[test]
fn selecting_a_result_lights_its_call_and_the_reverse() {
    let mut a = app("weather_fx.json", |_| {}, Theme::color());
    apply(&mut a, Action::Last);
    // The last message is the answer; two up is toolu_w1's result.
    apply(&mut a, Action::ScrollUp);
    apply(&mut a, Action::ScrollUp);
    assert_eq!(a.selected_message(), Some(2));
    let links = a.links();
    assert_eq!(links.messages, vec![1]);
    assert_eq!(links.calls.len(), 1);
    let terminal = draw(&mut a, 120, 40);
    let buf = terminal.backend().buffer();
    let lit = |text: &str| {
        let (x, y) = find(&terminal, text).unwrap_or_else(|| panic!("{text} not on screen"));
        buf[(x, y)].bg == Color::Blue
    };
    assert!(lit("1 assistant"), "the call's message is lit");
    assert!(!lit("3 tool"), "another result is not");
    assert!(lit("toolu_w1 get_weather"), "the ledger row is lit");
    assert!(!lit("toolu_f1 get_fx_rate"));

    // The reverse: the assistant message lights both of its results.
    apply(&mut a, Action::ScrollUp);
    assert_eq!(a.links().messages, vec![2, 3]);
    // Under a provider view the grouping changes, the links do not.
    apply(&mut a, Action::CycleView);
    apply(&mut a, Action::ScrollUp);
    apply(&mut a, Action::ScrollUp);
    assert!(!a.links().messages.is_empty());
    // Nothing is lit when another pane has the focus.
    apply(&mut a, Action::FocusNext);
    assert_eq!(a.links(), Default::default());
}

/// At a Request step the provider would reject, the explain pane gives the
/// provider's own 400 text for the wire view shown (Anthropic for the
/// canonical view), the same text `check` gives for that body.
#[test]
fn a_rejected_request_is_explained_in_the_providers_words() {
    use loopdbg_formats::provider::Format;
    use loopdbg_tui::explain::provider_rejection;
    let mut a = app("weather_fx.json", first_reask, Theme::color());
    // Round 2's request carries round 1's dropped toolu_f1.
    apply(&mut a, Action::NextRound);
    assert_eq!(a.trace.step(a.cursor).phase, Phase::Request);
    assert!(a.trace.step(a.cursor).unpaired > 0);
    let words = [
        (
            Format::Anthropic,
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1",
        ),
        (
            Format::Openai,
            "The following tool_call_ids did not have response messages: toolu_f1",
        ),
        (
            Format::Responses,
            "No tool output found for function call toolu_f1",
        ),
        (
            Format::Gemini,
            "the number of function response parts is equal to the number of function call parts",
        ),
    ];
    for (format, want) in words {
        let said = provider_rejection(&a.session, &a.trace, a.cursor, format)
            .unwrap_or_else(|| panic!("{format:?}: nothing said"));
        assert!(said.contains(want), "{format:?}: {said}");
        assert!(said.starts_with(&format!("{} would answer 400", format.title())));
    }
    let text = screen_text(&draw(&mut a, 120, 40)).join(" ");
    assert!(
        text.contains("⚠ Anthropic Messages would answer 400"),
        "{text}"
    );
    // Not at a request the provider accepts.
    apply(&mut a, Action::First);
    assert_eq!(
        provider_rejection(&a.session, &a.trace, a.cursor, Format::Anthropic),
        None
    );
}

#[test]
fn a_live_view_names_its_source_and_whether_it_follows() {
    use loopdbg_read::{Source, read};
    let doc = serde_json::json!([
        {"role": "user", "content": "weather and fx?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
            {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"}]}
    ]);
    let conv = read(
        &doc,
        Source::Provider(loopdbg_formats::provider::Format::Anthropic),
    )
    .unwrap();
    let findings = loopdbg_judge::check::check(&conv);
    let update = loopdbg_tui::app::LiveUpdate {
        session: loopdbg_export::replay::session_for(&conv, "live: exchange #2 of 2"),
        trace: loopdbg_export::replay::trace_of(&conv, &findings),
        source: "anthropic".into(),
        alarm: Some(
            "ALARM #2 (forwarded as it was): the provider would answer 400 (messages[1]): toolu_f1"
                .into(),
        ),
        waiting: None,
        derived: None,
        token: None,
    };
    let mut a = App::live(
        "proxy 127.0.0.1:8700",
        "proxy 127.0.0.1:8700",
        update,
        Theme::color(),
    );
    insta::assert_snapshot!("live_proxy_alarm_120x40", draw(&mut a, 120, 40).backend());
    apply(&mut a, Action::StepBack);
    insta::assert_snapshot!("live_proxy_paused_80x24", draw(&mut a, 80, 24).backend());
}

/// weather_fx forked at round 1's Reply (the second call removed), then
/// forked again (the reply's text changed).
fn forked() -> App {
    let mut a = app("weather_fx.json", |_| {}, Theme::color());
    apply(&mut a, Action::Resize(120, 40));
    while a.trace.step(a.cursor).phase != Phase::Reply {
        apply(&mut a, Action::StepForward);
    }
    let edit = |a: &mut App, text: Option<&str>| {
        apply(a, Action::Edit);
        let mut reply = a.trace.round(1).unwrap().reply.clone();
        reply.tool_calls.truncate(1);
        if let Some(t) = text {
            reply.text = Some(t.into());
        }
        apply(a, Action::EditDone(serde_json::to_string(&reply).unwrap()));
    };
    edit(&mut a, None);
    edit(&mut a, Some("checking the weather"));
    a
}

#[test]
fn a_fork_in_progress() {
    let mut a = forked();
    insta::assert_snapshot!("fork_in_progress_120x40", draw(&mut a, 120, 40).backend());
}

#[test]
fn the_fork_tree() {
    let mut a = forked();
    apply(&mut a, Action::ShowForks);
    insta::assert_snapshot!("fork_tree_120x40", draw(&mut a, 120, 40).backend());
}

#[test]
fn two_timelines_with_the_first_divergence() {
    let mut a = app("weather_fx.json", first_reask, Theme::color());
    apply(&mut a, Action::Resize(120, 40));
    apply(&mut a, Action::StepForward);
    apply(&mut a, Action::ShowDiff);
    insta::assert_snapshot!("diff_timelines_120x40", draw(&mut a, 120, 40).backend());
}

#[test]
fn a_tour_stop_with_an_answer_being_typed() {
    let sessions = loopdbg_lesson::tour::STOPS
        .iter()
        .map(|s| session(s.session))
        .collect();
    let mut a = App::tour(sessions, Default::default(), Theme::color());
    apply(&mut a, Action::Resize(120, 40));
    apply(&mut a, Action::TourAnswer);
    apply(&mut a, Action::SearchType('3'));
    insta::assert_snapshot!("tour_stop_1_120x40", draw(&mut a, 120, 40).backend());
}

/// The stop says when the learner is where it asked them to go (a
/// newcomer overshot stop 1's step): at 80×24, `do:` becomes `◉ here:`
/// on round 2's Request and only there (issue 60, item 7).
#[test]
fn a_tour_stop_says_you_are_here_on_the_step_it_asks_for() {
    let sessions = loopdbg_lesson::tour::STOPS
        .iter()
        .map(|s| session(s.session))
        .collect();
    let mut a = App::tour(sessions, Default::default(), Theme::color());
    apply(&mut a, Action::Resize(80, 24));
    let here = |a: &mut App| screen_text(&draw(a, 80, 24)).join("\n").contains("◉ here:");
    assert!(!here(&mut a), "not at the start");
    while !(a.trace.step(a.cursor).phase == Phase::Request && a.trace.step(a.cursor).round == 2) {
        apply(&mut a, Action::StepForward);
        if a.trace.step(a.cursor).round < 2 {
            assert!(!here(&mut a), "not before: step {}", a.cursor);
        }
    }
    assert!(
        here(&mut a),
        "{}",
        screen_text(&draw(&mut a, 80, 24)).join("\n")
    );
    insta::assert_snapshot!("tour_stop_1_reached_80x24", draw(&mut a, 80, 24).backend());
    apply(&mut a, Action::StepForward);
    assert!(!here(&mut a), "past it");
}

#[test]
fn the_close_step_under_leave_names_the_dangling_call() {
    let mut a = app(
        "weather_fx.json",
        |s| s.extract = Extract::First,
        Theme::color(),
    );
    apply(&mut a, Action::Resize(120, 40));
    while a.trace.step(a.cursor).phase != Phase::Close {
        apply(&mut a, Action::StepForward);
    }
    assert_eq!(
        a.strategy().closure,
        loopdbg_engine::strategy::Closure::Leave
    );
    let t = draw(&mut a, 120, 40);
    let text = format!("{:?}", t.backend());
    assert!(text.contains("toolu_f1"));
    insta::assert_snapshot!("close_under_leave_120x40", t.backend());
}

/// A reply cut by max_tokens is labelled `cut` on the trips line under
/// every stop rule; under `robust` (which refuses to take it) it read
/// `refused`, the word for a request the provider refused (issue 22,
/// item 6).
#[test]
fn a_cut_reply_is_cut_on_the_trips_line_under_every_stop_rule() {
    for stop in [StopRule::Robust, StopRule::ToolCalls] {
        let mut a = app("stop_truncated.json", |s| s.stop = stop, Theme::color());
        apply(&mut a, Action::Last);
        let text = screen_text(&draw(&mut a, 120, 40)).join("\n");
        let trips = text.lines().find(|l| l.contains(" trips ")).unwrap();
        assert!(trips.contains("1:cut"), "{stop:?}: {trips}");
        assert!(!trips.contains("refused"), "{stop:?}: {trips}");
    }
}

/// After `x` at the first Execute step of `fault_sibling_error`, the ids
/// pane and the explain box say the same of every call at every step: the
/// calls the interrupt stops end at the instant `toolu_cfg_a` finished, so
/// at that step they are still running, and each becomes "interrupted" at
/// its own step (issue 22, item 6: the pane said "interrupted" while the
/// box said "running").
#[test]
fn after_an_interrupt_the_ids_pane_and_the_explain_box_agree() {
    let mut a = app("fault_sibling_error.json", |_| {}, Theme::color());
    to_phase(&mut a, Phase::Execute);
    apply(&mut a, Action::Interrupt);
    assert!(a.strategy().interrupt.is_some());
    let rows = |t: &Terminal<TestBackend>| -> String {
        (0..50)
            .map(|y| {
                (0..160)
                    .map(|x| t.backend().buffer()[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut seen_interrupted = 0;
    while a.trace.step(a.cursor).phase == Phase::Execute {
        let t = rows(&draw(&mut a, 160, 50));
        let explain = t.split(" explain ").nth(1).unwrap().replace('\n', "");
        for id in ["toolu_deploy", "toolu_cfg_c"] {
            let in_box = if explain.contains(&format!("{id} running")) {
                "running"
            } else if explain.contains(&format!("{id} interrupted")) {
                "interrupted"
            } else {
                panic!("the box does not say how {id} stands:\n{t}")
            };
            assert!(
                t.contains(&format!("[{in_box}]"))
                    && t.lines()
                        .any(|l| l.contains(id) && l.contains(&format!("[{in_box}]"))),
                "the box says {id} {in_box}; the ids pane does not:\n{t}"
            );
            seen_interrupted += usize::from(in_box == "interrupted");
        }
        apply(&mut a, Action::StepForward);
    }
    assert!(seen_interrupted > 0, "no step showed an interrupted call");
}

/// The ids pane speaks the messages pane's language: in the Responses view
/// a call sits at `input[N]`, in the Gemini view at `contents[N].parts[M]`.
#[test]
fn the_ids_pane_locates_calls_as_the_provider_view_does() {
    for (format, expected) in [
        (
            loopdbg_formats::provider::Format::Responses,
            "input[2] → input[4]",
        ),
        (
            loopdbg_formats::provider::Format::Gemini,
            "contents[1].parts[1] → contents[2].parts[0]",
        ),
        (
            loopdbg_formats::provider::Format::Openai,
            "messages[1].tool_calls[0] → messages[2]",
        ),
    ] {
        let mut a = app("weather_fx.json", |_| {}, Theme::color());
        apply(&mut a, Action::Last);
        a.view = Some(format);
        let t = draw(&mut a, 200, 50);
        let screen: String = (0..50)
            .map(|y| {
                (0..200)
                    .map(|x| t.backend().buffer()[(x, y)].symbol())
                    .collect::<String>()
                    + "\n"
            })
            .collect();
        assert!(screen.contains(expected), "{format}: {screen}");
        assert!(!screen.contains("].content["), "{format}: {screen}");
    }
}

/// A replay (and a live view) shows an agent's loop, not a stub's: the
/// code pane's extraction is what the traffic shows. A body whose second
/// call went unanswered while the first was answered reads as the first
/// only; the pane said `# all of them` for the demo agent, whose bug is
/// exactly that (issue 60, item 2).
#[test]
fn a_replays_code_pane_shows_the_loop_its_traffic_shows() {
    let mut a = crate::common::replay_of_fixture("anthropic_parallel_one_missing.json");
    apply(&mut a, Action::Resize(120, 40));
    let text = screen_text(&draw(&mut a, 120, 40)).join("\n");
    assert!(text.contains("the agent's loop, by its traffic"), "{text}");
    assert!(
        text.contains("tool_uses(reply)[:1]  # the first only"),
        "{text}"
    );
    // A stub session's pane is the strategy's, as before.
    let mut stub = app("weather_fx.json", |_| {}, Theme::color());
    let text = screen_text(&draw(&mut stub, 120, 40)).join("\n");
    assert!(
        text.contains("the loop's code (◆ set by the strategy)"),
        "{text}"
    );
}

/// Every tour stop is whole at 80×24, a laptop's terminal, on the step it
/// asks for and at the end: the strategy line uncut, every ◆ line the
/// strategy writes (or the walkthrough, where the stop has one), the stop's
/// question, and the explain box either whole or naming the key that
/// scrolls it (issue 60, item 1).
#[test]
fn every_tour_stop_shows_what_it_teaches_at_80x24() {
    use loopdbg_lesson::tour::Lang;
    for lang in [Lang::En, Lang::Zh] {
        every_stop_of_the_tour_in(lang);
    }
}

fn every_stop_of_the_tour_in(lang: loopdbg_lesson::tour::Lang) {
    let sessions = loopdbg_lesson::tour::sessions(lang).unwrap();
    let mut a = App::tour_in(lang, sessions, Default::default(), Theme::color());
    apply(&mut a, Action::Resize(80, 24));
    for (index, stop) in loopdbg_lesson::tour::STOPS.iter().enumerate() {
        if index > 0 {
            apply(&mut a, Action::TourNext);
        }
        let asked = (stop.at)(&a.trace);
        while a.cursor < asked {
            apply(&mut a, Action::StepForward);
        }
        for place in ["asked", "end"] {
            if place == "end" {
                apply(&mut a, Action::Last);
            }
            let rows = screen_text(&draw(&mut a, 80, 24));
            let screen = rows.join("\n");
            let context = format!("stop {} at {place}:\n{screen}", index + 1);
            let s = a.strategy().clone();
            let header = rows[..2].join("\n");
            for part in [
                format!("extract {}", s.extract),
                format!("stop {}", s.stop),
                format!("behavior {}", s.behavior),
                format!("closure {}", s.closure),
            ] {
                assert!(header.contains(&part), "{part} missing: {context}");
            }
            assert!(!rows[1].contains('…'), "strategy line cut: {context}");
            assert!(rows[2].trim_end().ends_with("Done"), "{context}");
            if a.session.walkthrough {
                assert!(screen.contains("walkthrough: two trips"), "{context}");
            } else {
                for line in loopdbg_lesson::code::loop_code(&s)
                    .iter()
                    .filter(|l| l.strategy && !l.continuation)
                {
                    let shown: String = line.text.trim_start().chars().take(24).collect();
                    assert!(screen.contains(&shown), "◆ {shown:?} missing: {context}");
                }
            }
            // Wide characters are drawn with a blank cell after each.
            let bare = |s: &str| s.split_whitespace().collect::<String>();
            let question: String = stop.words(lang).question.chars().take(20).collect();
            assert!(
                bare(&screen).contains(&bare(&question)),
                "question missing: {context}"
            );
            let rule = rows
                .iter()
                .find(|r| r.starts_with(" explain ") || r.starts_with(" summary"))
                .cloned()
                .unwrap_or_default();
            assert!(
                !rule.contains("more ↓") || rule.contains("J: more ↓"),
                "a cut box names its key: {context}"
            );
            if place == "asked" {
                let name = match lang {
                    loopdbg_lesson::tour::Lang::En => {
                        format!("tour_stop_{}_asked_80x24", index + 1)
                    }
                    loopdbg_lesson::tour::Lang::Zh => {
                        format!("tour_stop_{}_asked_80x24_zh", index + 1)
                    }
                };
                insta::assert_snapshot!(name, screen);
            }
        }
    }
}

/// The debugger's default layout at 80×24, on every shipped session (the
/// English companions too) and every step of its opening run (the first
/// 60 of the long one): the strategy line is whole and every ◆ line of
/// the strategy is on screen, so a toggle is always seen (issue 60, item 1).
#[test]
fn every_step_of_every_session_shows_its_strategy_at_80x24() {
    for (name, session) in crate::common::shipped() {
        if session.walkthrough {
            continue;
        }
        let strategy = Strategy::for_session(&session);
        let mut a = App::new(name.clone(), session, strategy, Theme::color());
        apply(&mut a, Action::Resize(80, 24));
        for _ in 0..60 {
            let rows = screen_text(&draw(&mut a, 80, 24));
            let screen = rows.join("\n");
            let s = a.strategy().clone();
            let context = format!("{name} step {}:\n{screen}", a.cursor);
            assert!(!rows[1].contains('…'), "strategy line cut: {context}");
            for line in loopdbg_lesson::code::loop_code(&s)
                .iter()
                .filter(|l| l.strategy && !l.continuation)
            {
                let shown: String = line.text.trim_start().chars().take(24).collect();
                assert!(screen.contains(&shown), "◆ {shown:?} missing: {context}");
            }
            if a.cursor + 1 == a.trace.len() {
                break;
            }
            apply(&mut a, Action::StepForward);
        }
    }
}
