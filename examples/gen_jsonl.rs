//! Generates a JSON Lines file of Anthropic conversations for benchmarking
//! `loopdbg check`: `cargo run --release --example gen_jsonl -- OUT MEGABYTES`.
//! Every 7th conversation loses one tool result (an unanswered call).

use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().expect("usage: gen_jsonl OUT MEGABYTES");
    let megabytes: u64 = args.next().map_or(100, |s| s.parse().expect("a number"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let mut written = 0u64;
    let mut n = 0u64;
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(8);
    while written < megabytes << 20 {
        n += 1;
        let drop_one = n.is_multiple_of(7);
        let results = if drop_one {
            format!(
                r#"[{{"type":"tool_result","tool_use_id":"toolu_{n}_a","content":"{{\"temp_c\":24,\"note\":\"{filler}\"}}"}}]"#
            )
        } else {
            format!(
                r#"[{{"type":"tool_result","tool_use_id":"toolu_{n}_a","content":"{{\"temp_c\":24,\"note\":\"{filler}\"}}"}},{{"type":"tool_result","tool_use_id":"toolu_{n}_b","content":"7.12"}}]"#
            )
        };
        let line = format!(
            r#"{{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{{"role":"user","content":"Conversation {n}: weather and FX, please. {filler}"}},{{"role":"assistant","content":[{{"type":"text","text":"Two lookups."}},{{"type":"tool_use","id":"toolu_{n}_a","name":"get_weather","input":{{"city":"Beijing"}}}},{{"type":"tool_use","id":"toolu_{n}_b","name":"get_fx_rate","input":{{"base":"USD","quote":"CNY"}}}}]}},{{"role":"user","content":{results}}},{{"role":"assistant","content":[{{"type":"text","text":"Sunny, 24 degrees; 7.12. {filler}"}}]}}]}}"#
        );
        writeln!(w, "{line}").unwrap();
        written += line.len() as u64 + 1;
    }
    w.flush().unwrap();
    eprintln!("wrote {out}: {n} conversations, {} MB", written >> 20);
}
