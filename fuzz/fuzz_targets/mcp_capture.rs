//! MCP captures (`loopdbg mcp --capture`): any text, one record per line,
//! grouped into sessions, each read as a conversation and checked; and
//! the same bytes opened by content, as `check` opens them. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::mcp::{Record, conversation, sessions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let records = text
        .lines()
        .enumerate()
        .filter_map(|(n, line)| Some((n + 1, serde_json::from_str::<Record>(line).ok()?)));
    for session in sessions(records) {
        let _ = loopdbg_judge::check::check(&conversation(&session));
    }
    let _ = loopdbg_corpus::check_bytes("fuzz.jsonl", data.to_vec(), None, &[], &mut |_, _| {});
});
