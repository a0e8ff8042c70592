//! The readers that build a log's lines in one pass, each against
//! building every record as a value first, on any text read as the lines
//! of a Codex rollout (`codex::parse_line`: the response item straight
//! from the text, a record read for nothing passed over) and of a Gemini
//! CLI chat (`gemini_cli::parse_line`: only the fields the reader reads
//! built, and under `Shape` a result only in outline). Both ways must
//! give the same conversations (or the same error), in full and in
//! outline; no line the bounded parser reads may be refused, and none it
//! refuses read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::{Agent, Detail, Log, Source};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let each = [Agent::Codex, Agent::GeminiCli]
        .into_iter()
        .flat_map(|agent| [(agent, Detail::Full), (agent, Detail::Shape)]);
    for (agent, detail) in each {
        let log = || {
            let mut log = Log::new(Source::Agent(agent)).expect("a log");
            log.keep(detail);
            log
        };
        // A line the bounded parser refuses must be refused by the one
        // pass too (unless it holds records joined, read as such on both
        // paths).
        for line in text.lines() {
            if !line.trim().is_empty()
                && loopdbg_read::bounded::value(line).is_err()
                && loopdbg_read::joined_records(line).is_none()
            {
                assert_eq!(log().push_lines(&[(1, line)]).len(), 1, "{agent:?} {detail:?} read: {line}");
            }
        }
        // The lines it reads, read two ways.
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(n, l)| (n + 1, l))
            .filter(|(_, l)| !l.trim().is_empty() && loopdbg_read::bounded::value(l).is_ok())
            .collect();
        let mut one_pass = log();
        let refused = one_pass.push_lines(&lines);
        assert!(refused.is_empty(), "{agent:?} {detail:?} refused: {refused:?}");
        let mut built = log();
        for &(n, line) in &lines {
            let value = loopdbg_read::bounded::value(line).expect("read above");
            // Neither reader refuses a record as it comes; what they
            // refuse, they refuse at `finish`.
            built.push_owned(n, value).expect("no record refused");
        }
        assert_eq!(
            format!("{:?}", one_pass.finish()),
            format!("{:?}", built.finish()),
            "{agent:?} {detail:?}"
        );
    }
});
