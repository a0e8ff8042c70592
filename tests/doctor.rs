//! `loopdbg doctor` on a real Claude Code 2.1.332 log (written against the
//! fake provider) whose parallel call lost its `tool_result` event.

mod common;

use std::path::{Path, PathBuf};

use common::loopdbg;
use predicates::prelude::*;

const BROKEN: &str = "tests/fixtures/transcripts/claude_code_v2/doctor_dropped_result.jsonl";

/// A copy of `fixture` in a scratch folder, made to look untouched for a
/// minute (the doctor leaves alone what an agent may still be writing).
fn copy(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    std::fs::copy(fixture, &path).unwrap();
    age(&path);
    (dir, path)
}

fn age(path: &Path) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    file.set_modified(minute_ago).unwrap();
}

fn backups(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".loopdbg-bak"))
        .collect();
    names.sort();
    names
}

#[test]
fn doctor_says_what_it_would_change_and_changes_nothing_without_write() {
    let (dir, path) = copy(BROKEN);
    let before = std::fs::read(&path).unwrap();
    loopdbg()
        .args(["doctor", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "line 25: add the missing tool_result for toolu_e2e_2",
        ))
        .stdout(predicate::str::contains("nothing written"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(backups(dir.path()).is_empty());
}

/// The repair: a backup byte for byte, every original line kept, the new
/// file clean; a second run finds nothing and makes no second backup.
#[test]
fn doctor_write_repairs_a_dropped_result_and_keeps_every_line() {
    let (dir, path) = copy(BROKEN);
    let before = std::fs::read_to_string(&path).unwrap();
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(1);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "checked again: nothing keeps it from being sent",
        ));
    assert_eq!(backups(dir.path()), ["session.jsonl.loopdbg-bak"]);
    let backup = dir.path().join("session.jsonl.loopdbg-bak");
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        before,
        "the backup is the original"
    );
    let after = std::fs::read_to_string(&path).unwrap();
    let mut kept = after.lines();
    for line in before.lines() {
        assert!(
            kept.any(|l| l == line),
            "a line of the original was lost or changed: {line}"
        );
    }
    assert_eq!(after.lines().count(), before.lines().count() + 1);
    let added: serde_json::Value = serde_json::from_str(after.lines().nth(26).unwrap()).unwrap();
    assert_eq!(added["message"]["content"][0]["tool_use_id"], "toolu_e2e_2");
    assert_eq!(added["parentUuid"], "895abd02-dbe5-46a4-9023-efcda95021a7");
    assert_eq!(added["sessionId"], "0bd04be1-bc7d-4a4a-a90a-c15ed008d400");
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(0);
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "nothing keeps this session from being sent",
        ));
    assert_eq!(backups(dir.path()).len(), 1, "no second backup");
}

/// A torn last line (Claude Code killed mid-write) is dropped and kept in
/// the backup; a second repair numbers its backup.
#[test]
fn doctor_drops_a_torn_last_line_and_numbers_backups() {
    let (dir, path) = copy(BROKEN);
    std::fs::write(
        dir.path().join("session.jsonl.loopdbg-bak"),
        "an older backup\n",
    )
    .unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"type":"user","message":{"role":"user","content":"half"#);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("line 34: drop the torn last line"));
    assert_eq!(
        backups(dir.path()),
        ["session.jsonl.loopdbg-bak", "session.jsonl.loopdbg-bak.1"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("session.jsonl.loopdbg-bak.1")).unwrap(),
        text
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("session.jsonl.loopdbg-bak")).unwrap(),
        "an older backup\n",
        "an earlier backup is never overwritten"
    );
}

/// A file an agent may still be writing is left alone without --force;
/// a file the doctor cannot repair is left alone and it says why.
#[test]
fn doctor_leaves_alone_what_it_must_not_or_cannot_change() {
    let (dir, path) = copy(BROKEN);
    let fresh = dir.path().join("fresh.jsonl");
    std::fs::copy(&path, &fresh).unwrap();
    let before = std::fs::read(&fresh).unwrap();
    loopdbg()
        .args(["doctor", "--write", fresh.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("an agent may still be writing it"));
    assert_eq!(std::fs::read(&fresh).unwrap(), before);
    loopdbg()
        .args(["doctor", "--write", "--force", fresh.to_str().unwrap()])
        .assert()
        .code(0);

    let body = dir.path().join("body.json");
    std::fs::copy(
        "tests/fixtures/transcripts/anthropic_parallel_one_missing.json",
        &body,
    )
    .unwrap();
    age(&body);
    let before = std::fs::read(&body).unwrap();
    loopdbg()
        .args(["doctor", "--write", body.to_str().unwrap()])
        .assert()
        .code(2)
        .stdout(predicate::str::contains(
            "not changed: it is read as anthropic",
        ));
    assert_eq!(std::fs::read(&body).unwrap(), before);
    assert_eq!(backups(dir.path()), ["fresh.jsonl.loopdbg-bak"]);
}
