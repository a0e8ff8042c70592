//! The debugger's `update` driven by random key sequences over the shipped
//! sessions, drawn after every key at a random size (1x1 included).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_tui::keymap::KEYMAP;
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App, update};
use ratatui::{Terminal, backend::TestBackend};

const SESSIONS: &[(&str, &str)] = &[
    ("weather.json", include_str!("../../sessions/weather.json")),
    (
        "weather_fx.json",
        include_str!("../../sessions/weather_fx.json"),
    ),
    (
        "fault_interrupt.json",
        include_str!("../../sessions/fault_interrupt.json"),
    ),
    (
        "fault_fallback.json",
        include_str!("../../sessions/fault_fallback.json"),
    ),
    (
        "fault_timeout.json",
        include_str!("../../sessions/fault_timeout.json"),
    ),
    (
        "fault_sibling_error.json",
        include_str!("../../sessions/fault_sibling_error.json"),
    ),
    (
        "stop_truncated.json",
        include_str!("../../sessions/stop_truncated.json"),
    ),
    (
        "param_mismatch.json",
        include_str!("../../sessions/param_mismatch.json"),
    ),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, keys)) = data.split_first() else {
        return;
    };
    let (name, text) = SESSIONS[pick as usize % SESSIONS.len()];
    let session = loopdbg_engine::Session::parse(name, text).expect("shipped sessions load");
    let strategy = loopdbg_engine::Strategy::for_session(&session);
    let mut app = App::new(name, session, strategy, Theme::color());
    let mut size = (120u16, 40u16);
    update(&mut app, Action::Resize(size.0, size.1));
    for pair in keys.chunks(2).take(64) {
        let action = match pair {
            [0, w] => {
                size = (u16::from(*w % 200), size.1);
                Action::Resize(size.0, size.1)
            }
            [1, h] => {
                size = (size.0, u16::from(*h % 70));
                Action::Resize(size.0, size.1)
            }
            [2, at] => Action::Wheel {
                column: u16::from(*at),
                row: u16::from(*at / 3),
                down: at % 2 == 0,
            },
            // Typing into a `/` search, and submitting it.
            [3, c] => Action::SearchType(char::from(*c)),
            [4, _] => Action::SearchSubmit,
            [k, ..] => KEYMAP[*k as usize % KEYMAP.len()].action.clone(),
            [] => continue,
        };
        let mut next = Some(action);
        while let Some(a) = next {
            next = update(&mut app, a);
        }
        if app.quit {
            break;
        }
        if size.0 > 0 && size.1 > 0 {
            let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).expect("backend");
            terminal
                .draw(|f| f.render_widget(&app, f.area()))
                .expect("a frame");
        }
    }
});
