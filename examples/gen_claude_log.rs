//! Generates a Claude Code 2.x session log for benchmarking `check` and
//! replay: `cargo run --release --example gen_claude_log -- OUT EVENTS`.
//! The shape follows real logs: bookkeeping events, one assistant event per
//! content block, parallel calls whose results point at their own blocks,
//! progress events, a rewind every 500 turns (an abandoned branch), and
//! uuids as long as real ones. Exactly EVENTS lines are written.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

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
        "Reading the module to see where the totals are computed, line by line. ".to_string();
    let mut written = 0;
    let mut parent = String::from("null");
    let mut n = 0usize;
    let mut turn = 0usize;
    let mut second = 0usize;
    let emit = |w: &mut std::io::BufWriter<std::fs::File>, line: String| {
        writeln!(w, "{line}").unwrap();
    };
    // Real logs name events by UUID v4; short names would flatter every
    // reader that keeps them.
    let uuid = |tag: u32, n: usize| {
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            n as u32 ^ 0x5a17_c0de,
            tag,
            n % 0xfff,
            (n / 7) % 0xfff,
            n as u64 * 2_654_435_761 % 0xffff_ffff_ffff
        )
    };
    // Days go on (a log over a day long would otherwise wrap to 00:00 and
    // its newest events look oldest). November has room for 2.5 million
    // seconds, more than any log this writes.
    let mut stamp = || {
        second += 1;
        format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.000Z",
            2 + second / 86_400,
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
        let mut lines = Vec::new();
        if turn.is_multiple_of(500) {
            // A rewind: a prompt and its answer the user stepped back from.
            // The next prompt hangs from the same parent, so these two are
            // a branch off the live conversation.
            let (x, y) = (uuid(0xb0, n), uuid(0xb1, n));
            let ts = stamp();
            lines.push(format!(
                r#"{{{},"message":{{"role":"user","content":"Turn {turn}, first try. {filler}"}}}}"#,
                head(&x, &parent, "user", &ts)
            ));
            lines.push(format!(
                r#"{{{},"message":{{"model":"claude-sonnet-4-5-20250929","id":"msg_{turn:08}r","type":"message","role":"assistant","content":[{{"type":"text","text":"Abandoned. {filler}"}}],"stop_reason":"end_turn","stop_sequence":null}}}}"#,
                head(&y, &x, "assistant", &ts)
            ));
        }
        let u = uuid(0x01, n);
        let ts = stamp();
        lines.push(format!(
            r#"{{{},"message":{{"role":"user","content":"Turn {turn}: fix the next failing test. {filler}"}}}}"#,
            head(&u, &parent, "user", &ts)
        ));
        // Two parallel calls: one assistant event per block, same message id.
        let mid = format!("msg_{turn:08}");
        let a1 = uuid(0xa1, n);
        let a2 = uuid(0xa2, n);
        let t1 = format!("toolu_{turn:08}a");
        let t2 = format!("toolu_{turn:08}b");
        let usage = r#""usage":{"input_tokens":4,"cache_creation_input_tokens":1200,"cache_read_input_tokens":13000,"output_tokens":90,"service_tier":"standard"}"#;
        let ts = stamp();
        lines.push(format!(
            r#"{{{},"requestId":"req_{turn}","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"{t1}","name":"Read","input":{{"file_path":"/home/dev/shop/src/cart_{turn}.rs"}}}}],"stop_reason":null,"stop_sequence":null,{usage}}}}}"#,
            head(&a1, &u, "assistant", &ts)
        ));
        lines.push(format!(
            r#"{{{},"requestId":"req_{turn}","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"{t2}","name":"Grep","input":{{"pattern":"total","path":"/home/dev/shop/src"}}}}],"stop_reason":"tool_use","stop_sequence":null,{usage}}}}}"#,
            head(&a2, &a1, "assistant", &ts)
        ));
        let p = uuid(0x0b, n);
        lines.push(format!(
            r#"{{"type":"progress","data":{{"type":"hook_progress","hookEvent":"PostToolUse"}},"parentUuid":"{a1}","uuid":"{p}","timestamp":"{ts}","sessionId":"{session}","isSidechain":false}}"#
        ));
        let ts = stamp();
        let r1 = uuid(0xc1, n);
        let r2 = uuid(0xc2, n);
        lines.push(format!(
            r#"{{{},"message":{{"role":"user","content":[{{"tool_use_id":"{t1}","type":"tool_result","content":"pub fn total() -> u32 {{ 0 }} // {filler}"}}]}},"toolUseResult":{{"type":"text","file":{{"filePath":"/home/dev/shop/src/cart_{turn}.rs","numLines":1}}}},"sourceToolAssistantUUID":"{a1}"}}"#,
            head(&r1, &a1, "user", &ts)
        ));
        lines.push(format!(
            r#"{{{},"message":{{"role":"user","content":[{{"tool_use_id":"{t2}","type":"tool_result","content":"src/cart.rs:3: total"}}]}},"toolUseResult":{{"mode":"content","numFiles":1}},"sourceToolAssistantUUID":"{a2}"}}"#,
            head(&r2, &a2, "user", &ts)
        ));
        let a3 = uuid(0xa3, n);
        let ts = stamp();
        lines.push(format!(
            r#"{{{},"requestId":"req_{turn}b","message":{{"model":"claude-sonnet-4-5-20250929","id":"{mid}z","type":"message","role":"assistant","content":[{{"type":"text","text":"Fixed turn {turn}. {filler}"}}],"stop_reason":"end_turn","stop_sequence":null,{usage}}}}}"#,
            head(&a3, &r2, "assistant", &ts)
        ));
        let s = uuid(0x05, n);
        lines.push(format!(
            r#"{{"type":"system","subtype":"turn_duration","durationMs":5900,"parentUuid":"{a3}","uuid":"{s}","timestamp":"{ts}","sessionId":"{session}","isSidechain":false,"isMeta":false}}"#
        ));
        for line in lines {
            if written == events {
                break;
            }
            emit(&mut w, line);
            written += 1;
        }
        parent = s;
    }
    w.flush().unwrap();
    eprintln!("wrote {out}: {written} events, {turn} turns");
}
