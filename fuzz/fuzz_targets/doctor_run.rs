//! What every doctor target checks of one input read as one agent's log:
//! the doctor never panics, on the input or on its own repair, and the
//! repair keeps, in order and byte for byte, every line it does not name.

use loopdbg_corpus::doctor::{Verdict, diagnose_as};
use loopdbg_read::Source;

pub fn run(data: &[u8], agent: Source) {
    let (verdict, _) = diagnose_as("session.jsonl", data.to_vec(), Some(agent), true);
    let Verdict::Needs(repair) = verdict else {
        return;
    };
    let Ok(text) = std::str::from_utf8(data) else {
        panic!("a repair planned for text that is not UTF-8");
    };
    let named: std::collections::HashSet<usize> =
        repair.plan.changes.iter().map(|c| c.line).collect();
    let mut kept = repair.plan.lines.iter();
    // Lines as the doctor splits them: at `\n` only (a `\r` is kept).
    let lines = text.split_inclusive('\n').map(|l| l.strip_suffix('\n').unwrap_or(l));
    for (k, line) in lines.enumerate() {
        if named.contains(&(k + 1)) || line.trim().is_empty() {
            continue;
        }
        assert!(
            kept.any(|l| l == line),
            "line {} is not named by a change, yet the repair does not keep it",
            k + 1
        );
    }
    let repaired = repair.plan.lines.join("\n") + "\n";
    let _ = diagnose_as("session.jsonl", repaired.into_bytes(), Some(agent), true);
}
