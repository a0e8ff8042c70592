//! The agent-log readers (Claude Code, Codex, Gemini CLI) on any lines:
//! the uuid graph, compactions, branches, upserts and rewinds. A Claude
//! Code log read in outline (as `check` reads it) must give the findings
//! it gives read in full.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_judge::check::{Finding, check};
use loopdbg_read::{Detail, Log, Source};

fn findings(source: Source, detail: Detail, lines: &[(usize, &str)]) -> Option<Vec<Vec<Finding>>> {
    let mut log = Log::new(source).expect("a log source");
    log.keep(detail);
    // Unreadable lines are left out, as check leaves them out.
    let _ = log.push_lines(lines);
    let convs = log.finish().ok()?;
    Some(convs.iter().map(check).collect())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    for source in [Source::Agent(loopdbg_read::Agent::ClaudeCode), Source::Agent(loopdbg_read::Agent::Codex), Source::Agent(loopdbg_read::Agent::GeminiCli)] {
        let whole = findings(source, Detail::Full, &lines);
        if source == Source::Agent(loopdbg_read::Agent::ClaudeCode) {
            assert_eq!(findings(source, Detail::Shape, &lines), whole);
        }
    }
});
