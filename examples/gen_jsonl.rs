//! Generates a JSON Lines file of conversations for benchmarking `loopdbg
//! check`: `cargo run --release --example gen_jsonl -- OUT MEGABYTES
//! [FORMAT]`, FORMAT one of anthropic (the default), openai, responses,
//! gemini, bedrock. Each line is one request body of the same two-call
//! loop in that provider's own shape; every 7th conversation loses one
//! tool result (an unanswered call).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: gen_jsonl OUT MEGABYTES [FORMAT]");
    let megabytes: u64 = args.next().map_or(100, |s| s.parse().expect("a number"));
    let format = args.next().unwrap_or_else(|| "anthropic".to_string());
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let mut written = 0u64;
    let mut n = 0u64;
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(8);
    while written < megabytes << 20 {
        n += 1;
        let line = loopdbg_fake::bodies::conversation(&format, n, n.is_multiple_of(7), &filler);
        writeln!(w, "{line}").unwrap();
        written += line.len() as u64 + 1;
    }
    w.flush().unwrap();
    eprintln!(
        "wrote {out}: {n} {format} conversations, {} MB",
        written >> 20
    );
}
