//! `--follow`'s incremental reader on a real file, driven by a script of
//! appends, replacements (a new file renamed over the name) and refreshes
//! decoded from the input. After each refresh the tail holds exactly the
//! file's text (complete lines, then the start of the last), or it refused
//! a line past its bound because there is one. A replacement is refreshed
//! at once, as the watcher's rename event makes `--follow` do: two
//! replacements unseen in between can reuse the first file's inode, and
//! no follower by name (nor `tail -F`) can tell that from an append.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use loopdbg_io::tail::{Change, Tail};

const MAX_LINE: u64 = 32;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    std::fs::write(&path, b"").unwrap();
    let mut tail = Tail::bounded(&path, Vec::new(), MAX_LINE);
    let mut content: Vec<u8> = Vec::new();
    let mut script = data;
    while let [op, len, rest @ ..] = script {
        let take = (*len as usize % 48).min(rest.len());
        let (payload, after) = rest.split_at(take);
        script = after;
        match op % 3 {
            0 => {
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                file.write_all(payload).unwrap();
                content.extend_from_slice(payload);
            }
            1 => {
                let fresh = dir.path().join("fresh");
                std::fs::write(&fresh, payload).unwrap();
                std::fs::rename(&fresh, &path).unwrap();
                content = payload.to_vec();
            }
            _ => {}
        }
        if op % 3 != 0 {
            let before = tail.lines().len();
            match tail.refresh(&path) {
                Ok(change) => {
                    if let Change::Appended { from } = change {
                        assert_eq!(from, before, "the new lines start where the old ended");
                        assert!(op % 3 != 1, "a replacement is not an append");
                    }
                    let mut seen = tail.lines().to_vec();
                    seen.extend_from_slice(tail.partial());
                    assert_eq!(seen, content, "the tail is the file");
                    assert!(tail.lines().is_empty() || tail.lines().ends_with(b"\n"));
                    assert!(!tail.partial().contains(&b'\n'));
                }
                Err(e) => {
                    let last = content.rsplit(|&b| b == b'\n').next().unwrap_or(&[]);
                    assert!(last.len() as u64 > MAX_LINE, "refused without cause: {e}");
                    return;
                }
            }
        }
    }
});
