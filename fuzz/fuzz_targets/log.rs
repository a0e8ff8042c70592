//! The agent-log readers (Claude Code, Codex, Gemini CLI) on any lines:
//! the uuid graph, compactions, branches, upserts and rewinds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg::wire::read::{Log, Source};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    for source in [Source::ClaudeCode, Source::Codex, Source::GeminiCli] {
        let mut log = Log::new(source).expect("a log source");
        if log.push_lines(&lines).is_err() {
            continue;
        }
        if let Ok(convs) = log.finish() {
            for conv in convs {
                let _ = loopdbg::wire::check::check(&conv);
            }
        }
    }
});
