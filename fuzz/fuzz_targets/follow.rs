//! `--follow`'s incremental reader on a real file, driven by a script of
//! appends, replacements (a new file renamed over the name) and refreshes
//! decoded from the input. After each refresh the tail holds exactly the
//! file's text (complete lines, then the start of the last), each line
//! past its bound left out as an empty line (the start of the last, when
//! it is past the bound, not held). A replacement is refreshed
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
                    let (lines, partial) = expected(&content);
                    assert_eq!(tail.lines(), lines, "the tail is the file");
                    assert_eq!(tail.partial(), partial, "the tail is the file");
                    assert!(tail.lines().is_empty() || tail.lines().ends_with(b"\n"));
                    assert!(!tail.partial().contains(&b'\n'));
                }
                Err(e) => panic!("a regular file refused: {e}"),
            }
        }
    }
});

/// The file's complete lines, each past the bound an empty line, and the
/// start of its last line unless that is past the bound.
fn expected(content: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut lines = Vec::new();
    let mut parts = content.split(|&b| b == b'\n').peekable();
    while let Some(line) = parts.next() {
        if parts.peek().is_none() {
            let partial = match line.len() as u64 > MAX_LINE {
                true => Vec::new(),
                false => line.to_vec(),
            };
            return (lines, partial);
        }
        if line.len() as u64 <= MAX_LINE {
            lines.extend_from_slice(line);
        }
        lines.push(b'\n');
    }
    (lines, Vec::new())
}

