//! `loopdbg bundle`: a session's structure without the user's words,
//! showing `check` the same problems (issue 61, item 5).

use crate::common::loopdbg;
use predicates::prelude::*;
use serde_json::{Value, json};

const PLANTED: &[&str] = &[
    "sk-ant-api03-abcdefghijklmnopqrstuvwx",
    "ada@corp.io",
    "/home/ada/payroll",
    "hunter2",
    "4111 1111 1111 1111",
    "the merger with Initech",
    "feature/secret-merger",
    "db7.corp.internal",
];

/// `loopdbg bundle FILE -o OUT`.
fn bundle(file: &std::path::Path, out: &std::path::Path) -> assert_cmd::Command {
    let mut command = loopdbg();
    command.arg("bundle").arg(file).arg("-o").arg(out);
    command
}

/// `check --format json FILE`: the findings as (kind, path, ids, severity).
fn findings(file: &std::path::Path) -> Vec<(Value, Value, Value, Value)> {
    let out = loopdbg()
        .args(["check", "--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["files"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["findings"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            (
                f["kind"].clone(),
                f["path"].clone(),
                f["ids"].clone(),
                f["severity"].clone(),
            )
        })
        .collect()
}

/// A Claude Code log full of a user's work, with a call id Anthropic
/// refuses: the bundle holds none of the work, keeps the agent, its
/// version and the ids, and `check` finds the same 400 in it.
#[test]
fn a_bundle_keeps_the_400_and_none_of_the_users_words() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("7d0c0ffe.jsonl");
    let base = json!({"sessionId": "7d0c0ffe", "version": "2.1.332", "cwd": "/home/ada/payroll", "gitBranch": "feature/secret-merger", "userType": "external", "isSidechain": false});
    let event = |extra: Value| {
        let mut e = base.clone();
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e.to_string()
    };
    let lines = [
        event(
            json!({"type": "user", "uuid": "u1", "parentUuid": null, "timestamp": "2026-12-01T10:00:00Z",
            "message": {"role": "user", "content": "draft the merger with Initech; key sk-ant-api03-abcdefghijklmnopqrstuvwx, mail ada@corp.io"}}),
        ),
        event(
            json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-12-01T10:00:01Z",
            "message": {"role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use", "content": [
                {"type": "text", "text": "Reading the payroll for the merger with Initech."},
                {"type": "tool_use", "id": "toolu.1", "name": "Bash", "input": {"command": "psql -h db7.corp.internal -p hunter2"}}]}}),
        ),
        event(
            json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-12-01T10:00:02Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu.1", "content": "card 4111 1111 1111 1111"}]}}),
        ),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("bundle.jsonl");
    bundle(&log, &out)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("(claude-code, ").and(predicate::str::contains(
                "invalid_id (400) at message.content[1] [toolu.1]",
            )),
        );
    let bundled = std::fs::read_to_string(&out).unwrap();
    for value in PLANTED {
        assert!(!bundled.contains(value), "kept {value}: {bundled}");
    }
    for kept in [
        "2.1.332",
        "toolu.1",
        "\"Bash\"",
        "claude-sonnet-4-5",
        "\"u1\"",
        "\"a1\"",
        "tool_result",
    ] {
        assert!(bundled.contains(kept), "lost {kept}: {bundled}");
    }
    let original = findings(&log);
    assert!(!original.is_empty());
    assert_eq!(findings(&out), original);
    // Never over the input, never over a file without --force.
    bundle(&log, &log).assert().code(2);
    bundle(&log, &out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("exists"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), bundled);
}

/// Every fixture `check` reads either bundles to a file `check` finds the
/// same problems in, or is refused saying why (exit 1, nothing written):
/// never a bundle that shows something else.
#[test]
fn every_fixture_bundles_to_the_same_verdict_or_is_refused() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/transcripts");
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(root)];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => stack.push(path),
                false
                    if matches!(
                        path.extension().and_then(|e| e.to_str()),
                        Some("json" | "jsonl")
                    ) =>
                {
                    files.push(path)
                }
                false => {}
            }
        }
    }
    files.sort();
    let (mut written, mut refused) = (0, Vec::new());
    for (k, file) in files.iter().enumerate() {
        let out = dir.path().join(format!(
            "{k}-{}",
            file.file_name().unwrap().to_string_lossy()
        ));
        let ran = bundle(file, &out).output().unwrap();
        match ran.status.code() {
            Some(0) => {
                written += 1;
                assert_eq!(findings(&out), findings(file), "{}", file.display());
            }
            Some(1) => {
                assert!(!out.exists(), "{}", file.display());
                assert!(
                    String::from_utf8_lossy(&ran.stderr)
                        .contains("the bundle would not show what the file shows"),
                    "{}",
                    file.display()
                );
                refused.push(file.clone());
            }
            other => panic!(
                "{}: {other:?} {}",
                file.display(),
                String::from_utf8_lossy(&ran.stderr)
            ),
        }
    }
    assert!(written >= 110, "{written} written; refused: {refused:#?}");
}
