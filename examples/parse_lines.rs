//! What parsing a Claude Code log's lines costs, on one thread, beside
//! the floor of skipping the same lines with serde_json (`IgnoredAny`):
//! `cargo run --release --example parse_lines -- FILE...` (the files are
//! read first; only the parsing is timed, best of 5).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use loopdbg_read::{Detail, Log, Source};

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let texts: Vec<String> = std::env::args()
        .skip(1)
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let lines: Vec<&str> = texts.iter().flat_map(|t| t.lines()).collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    let skip = best_of(5, || {
        for l in &lines {
            let _: serde::de::IgnoredAny = serde_json::from_str(l).unwrap();
        }
    });
    let mut log = Log::new(Source::Agent(loopdbg_read::Agent::ClaudeCode)).unwrap();
    log.keep(Detail::Shape);
    let parser = log.line_parser();
    let parse = best_of(5, || {
        for (n, l) in lines.iter().enumerate() {
            std::hint::black_box(parser.parse(n + 1, l));
        }
    });
    let mb = bytes as f64 / 1e6;
    println!(
        "{} lines, {mb:.1} MB: skipped in {skip:.1?} ({:.0} MB/s), parsed as events in {parse:.1?} ({:.0} MB/s, {:.2}x the skip)",
        lines.len(),
        mb / skip.as_secs_f64(),
        mb / parse.as_secs_f64(),
        parse.as_secs_f64() / skip.as_secs_f64()
    );
}
