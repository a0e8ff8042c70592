//! Time from nothing to the debugger's first frame on a captured file, as
//! `loopdbg FILE` does it minus the terminal: read the file, rebuild the
//! conversation, check it, record the replay trace, draw 120x40 once.
//! `cargo run --release --example first_frame -- FILE`; prints milliseconds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::io::BufRead;
use std::time::Instant;

use loopdbg_read::{Log, Source};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App, update};
use ratatui::{Terminal, backend::TestBackend};

fn main() {
    let path = std::env::args().nth(1).expect("usage: first_frame FILE");
    let start = Instant::now();
    let file = std::io::BufReader::new(std::fs::File::open(&path).expect("readable"));
    let lines: Vec<(usize, String)> = file
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.expect("UTF-8")))
        .collect();
    let lines: Vec<(usize, &str)> = lines.iter().map(|(n, l)| (*n, l.as_str())).collect();
    let mut log = Log::new(Source::Agent(loopdbg_read::Agent::ClaudeCode)).expect("a log");
    let bad = log.push_lines(&lines);
    assert!(
        bad.is_empty(),
        "unreadable lines: {:?}",
        bad.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    drop(lines);
    let conv = log.finish().expect("conversations").remove(0);
    let findings = loopdbg_judge::check::check(&conv);
    let trace = loopdbg_export::replay::trace_of(&conv, &findings);
    let session = loopdbg_export::replay::session_for(&conv, "replay");
    let mut app = App::replay(&path, session, trace, "claude-code", Theme::color());
    update(&mut app, Action::Resize(120, 40));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("backend");
    terminal
        .draw(|f| f.render_widget(&app, f.area()))
        .expect("a frame");
    println!("{:.1} ms", start.elapsed().as_secs_f64() * 1000.0);
}
