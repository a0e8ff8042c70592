//! The Codex reader's one pass over a line (`codex::parse_line`: items
//! read straight from the text, records it reads nothing from passed
//! over) against building every record as a value first: any bytes read
//! as the lines of a rollout must give the same conversations (or the
//! same error), and no line the bounded parser reads may be refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::{Agent, Log, Source};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Lines the bounded parser reads: a line it refuses (or reads as
    // records joined) goes another way on both paths, tested elsewhere.
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && loopdbg_read::bounded::value(l).is_ok())
        .collect();
    let mut one_pass = Log::new(Source::Agent(Agent::Codex)).expect("a log");
    let refused = one_pass.push_lines(&lines);
    assert!(refused.is_empty(), "refused: {refused:?}");
    let mut built = Log::new(Source::Agent(Agent::Codex)).expect("a log");
    for &(n, line) in &lines {
        let value = loopdbg_read::bounded::value(line).expect("read above");
        // A record the reader refuses is refused on both paths alike, at
        // `finish` (`push_owned` refuses nothing of a rollout).
        built.push_owned(n, value).expect("a rollout refuses no record");
    }
    assert_eq!(
        format!("{:?}", one_pass.finish()),
        format!("{:?}", built.finish())
    );
});
