//! Generates a Claude Code 2.x session log for benchmarking `check` and
//! replay: `cargo run --release --example gen_claude_log -- OUT EVENTS`.
//! The shape follows real logs: bookkeeping events, one assistant event per
//! content block, parallel calls whose results point at their own blocks,
//! progress events, and a rewind every 500 turns.

use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().expect("usage: gen_claude_log OUT EVENTS");
    let events: usize = args
        .next()
        .map_or(100_000, |s| s.parse().expect("a number"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let session = "6c1f0d52-8a0e-4d7b-9a51-2f3c8b1e0a77";
    let filler =
        "Reading the module to see where the totals are computed, line by line. ".repeat(4);
    let mut written = 0;
    let mut parent = String::from("null");
    let mut n = 0usize;
    let mut turn = 0usize;
    let mut second = 0usize;
    let emit = |w: &mut std::io::BufWriter<std::fs::File>, line: String| {
        writeln!(w, "{line}").unwrap();
    };
    let mut stamp = || {
        second += 1;
        format!(
            "2026-11-02T{:02}:{:02}:{:02}.000Z",
            (second / 3600) % 24,
            (second / 60) % 60,
            second % 60
        )
    };
    emit(&mut w, r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{"messageId":"m0","trackedFileBackups":{},"timestamp":"2026-11-02T00:00:00.000Z"},"isSnapshotUpdate":false}"#.to_string());
    written += 1;
    let head = |uuid: &str, parent: &str, kind: &str, ts: &str| {
        let parent = if parent == "null" {
            "null".to_string()
        } else {
            format!("\"{parent}\"")
        };
        format!(
            r#""parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":"/home/dev/shop","sessionId":"{session}","version":"2.0.76","gitBranch":"main","type":"{kind}","uuid":"{uuid}","timestamp":"{ts}""#
        )
    };
    while written < events {
        turn += 1;
        n += 1;
        let u = format!("u{n}");
        let ts = stamp();
        emit(
            &mut w,
            format!(
                r#"{{{},"message":{{"role":"user","content":"Turn {turn}: fix the next failing test. {filler}"}}}}"#,
                head(&u, &parent, "user", &ts)
            ),
        );
        written += 1;
        parent = u;
        // Two parallel calls: one assistant event per block, same message id.
        let mid = format!("msg_{turn:08}");
        let a1 = format!("a{n}x");
        let a2 = format!("a{n}y");
        let t1 = format!("toolu_{turn:08}a");
        let t2 = format!("toolu_{turn:08}b");
        let usage = r#""usage":{"input_tokens":4,"cache_creation_input_tokens":1200,"cache_read_input_tokens":13000,"output_tokens":90,"service_tier":"standard"}"#;
        let ts = stamp();
        emit(
            &mut w,
            format!(
                r#"{{{},"requestId":"req_{turn}","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"{t1}","name":"Read","input":{{"file_path":"/home/dev/shop/src/cart_{turn}.rs"}}}}],"stop_reason":null,"stop_sequence":null,{usage}}}}}"#,
                head(&a1, &parent, "assistant", &ts)
            ),
        );
        emit(
            &mut w,
            format!(
                r#"{{{},"requestId":"req_{turn}","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"{t2}","name":"Grep","input":{{"pattern":"total","path":"/home/dev/shop/src"}}}}],"stop_reason":"tool_use","stop_sequence":null,{usage}}}}}"#,
                head(&a2, &a1, "assistant", &ts)
            ),
        );
        emit(
            &mut w,
            format!(
                r#"{{"type":"progress","data":{{"type":"hook_progress","hookEvent":"PostToolUse"}},"parentUuid":"{a1}","uuid":"p{n}","timestamp":"{ts}","sessionId":"{session}","isSidechain":false}}"#
            ),
        );
        let ts = stamp();
        let r1 = format!("r{n}x");
        let r2 = format!("r{n}y");
        emit(
            &mut w,
            format!(
                r#"{{{},"message":{{"role":"user","content":[{{"tool_use_id":"{t1}","type":"tool_result","content":"pub fn total() -> u32 {{ 0 }} // {filler}"}}]}},"toolUseResult":{{"type":"text","file":{{"filePath":"/home/dev/shop/src/cart_{turn}.rs","numLines":1}}}},"sourceToolAssistantUUID":"{a1}"}}"#,
                head(&r1, &a1, "user", &ts)
            ),
        );
        emit(
            &mut w,
            format!(
                r#"{{{},"message":{{"role":"user","content":[{{"tool_use_id":"{t2}","type":"tool_result","content":"src/cart.rs:3: total"}}]}},"toolUseResult":{{"mode":"content","numFiles":1}},"sourceToolAssistantUUID":"{a2}"}}"#,
                head(&r2, &a2, "user", &ts)
            ),
        );
        let a3 = format!("a{n}z");
        let ts = stamp();
        emit(
            &mut w,
            format!(
                r#"{{{},"requestId":"req_{turn}b","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}z","type":"message","role":"assistant","content":[{{"type":"text","text":"Fixed turn {turn}. {filler}"}}],"stop_reason":"end_turn","stop_sequence":null,{usage}}}}}"#,
                head(&a3, &r2, "assistant", &ts)
            ),
        );
        emit(
            &mut w,
            format!(
                r#"{{"type":"system","subtype":"turn_duration","durationMs":5900,"parentUuid":"{a3}","uuid":"s{n}","timestamp":"{ts}","sessionId":"{session}","isSidechain":false,"isMeta":false}}"#
            ),
        );
        written += 8;
        parent = format!("s{n}");
    }
    w.flush().unwrap();
    eprintln!("wrote {out}: {written} events, {turn} turns");
}
