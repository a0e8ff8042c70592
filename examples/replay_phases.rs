//! Times each phase of opening a replay of a Claude Code log, in process:
//! `cargo run --release --example replay_phases -- FILE [RUNS]`. The
//! first-frame bench (`benches/first_frame.py`) times the whole binary;
//! this says which phase the time goes to.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::time::{Duration, Instant};

// The binary's allocator, so the phases cost what they cost there (when
// it is built with it: `--no-default-features` leaves the system's).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use loopdbg_lesson::checks::RunAnalysis;
use loopdbg_read::{Log, Source};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: replay_phases FILE [RUNS]");
    let runs: usize = args.next().map_or(5, |s| s.parse().expect("a number"));
    let text = std::fs::read_to_string(&path).expect("a readable UTF-8 file");
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    let mut phases: Vec<(&str, Vec<Duration>)> = Vec::new();
    let mut time =
        |name: &'static str, took: Duration| match phases.iter_mut().find(|p| p.0 == name) {
            Some(p) => p.1.push(took),
            None => phases.push((name, vec![took])),
        };
    for _ in 0..runs {
        let t = Instant::now();
        let mut log = Log::new(Source::Agent(loopdbg_read::Agent::ClaudeCode)).expect("a log");
        for chunk in lines.chunks(4096) {
            assert!(log.push_lines(chunk).is_empty(), "readable lines");
        }
        time("parse", t.elapsed());
        let t = Instant::now();
        let convs = log.finish().expect("a log");
        time("finish", t.elapsed());
        let conv = &convs[0];
        let t = Instant::now();
        let findings = loopdbg_judge::check::check(conv);
        time("check", t.elapsed());
        let t = Instant::now();
        let replayed = loopdbg_export::replay::replayed(conv);
        time("replayed", t.elapsed());
        let t = Instant::now();
        let trace = replayed.with_findings(conv, &findings);
        time("with_findings", t.elapsed());
        let t = Instant::now();
        let analysis = RunAnalysis::of(&trace);
        time("analysis", t.elapsed());
        std::hint::black_box((analysis, trace));
    }
    for (name, mut took) in phases {
        took.sort();
        println!("{name:>14}: median {:>8.2?}", took[took.len() / 2]);
    }
}
