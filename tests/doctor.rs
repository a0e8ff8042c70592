//! `loopdbg doctor` on real logs written against the fake provider: a
//! Claude Code 2.1.332 log whose parallel call lost its `tool_result`
//! event, a Codex 0.171.0 rollout whose parallel call lost its output, and
//! a Gemini CLI 0.61.0 log as the CLI writes it.

use loopdbg_read::Agent;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::loopdbg;
use predicates::prelude::*;

const BROKEN: &str = "tests/fixtures/transcripts/claude_code_v2/doctor_dropped_result.jsonl";
const INVALID_ID: &str = "tests/fixtures/transcripts/claude_code_v2/doctor_invalid_id.jsonl";
const CODEX: &str =
    "tests/fixtures/transcripts/codex/rollout-2026-12-02T04-27-23-dropped-output.jsonl";
const GEMINI_CLI: &str =
    "tests/fixtures/transcripts/gemini_cli/session-2026-12-02T04-27-6a20c2cd.jsonl";

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
    // Claude Code mends this itself as it resumes: resumable, exit 0, as
    // `doctor --scan` counts it; the plan writes the mending down.
    loopdbg()
        .args(["doctor", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "its agent resumes it, mending what it sends; 1 change(s) would write that down:",
        ))
        .stdout(predicate::str::contains(
            "line 25: add the missing tool_result for toolu_e2e_2",
        ))
        .stdout(predicate::str::contains("nothing written, nothing needed"));
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
        .args(["check", "--strict", path.to_str().unwrap()])
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
    a_second_doctor_changes_nothing(&path);
    assert_eq!(backups(dir.path()).len(), 1, "no second backup");
}

/// A private log stays private: the repaired file and its backup keep
/// the original's mode (Claude Code writes its logs 0600).
#[cfg(unix)]
#[test]
fn doctor_write_keeps_a_private_log_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path) = copy(BROKEN);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let backup = dir.path().join("session.jsonl.loopdbg-bak");
    assert_eq!((mode(&path), mode(&backup)), (0o600, 0o600));
}

/// The agent appends a line between the diagnosis and the write (the user
/// read the plan, the agent went on): nothing is written, the line is in
/// the file, no backup is left, and the doctor says to run it again.
#[test]
fn doctor_leaves_a_file_that_grew_since_it_was_read() {
    use loopdbg_corpus::doctor::{Verdict, Written, apply, diagnose};
    let (dir, path) = copy(BROKEN);
    let Verdict::Needs(repair) = diagnose(&path) else {
        panic!("the broken log needs a repair");
    };
    let line = "{\"type\":\"system\",\"uuid\":\"late\"}\n";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    let grown = std::fs::read(&path).unwrap();
    match apply(&path, repair, true) {
        Written::Not { why, failed } => {
            assert!(why.contains("changed since it was read"), "{why}");
            assert!(!failed);
        }
        Written::Done { .. } => panic!("written over a file that grew"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), grown);
    assert!(backups(dir.path()).is_empty());
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
        .stdout(
            predicate::str::contains("not changed: messages.2: `tool_use` ids").and(
                predicate::str::contains("(it is read as anthropic; the doctor repairs"),
            ),
        );
    assert_eq!(std::fs::read(&body).unwrap(), before);
    assert_eq!(backups(dir.path()), ["fresh.jsonl.loopdbg-bak"]);
}

/// A real Codex 0.171.0 rollout whose parallel call lost its output: the
/// doctor adds the `aborted` output record Codex itself sends, right after
/// the call, and every original line is kept.
#[test]
fn doctor_writes_the_aborted_output_codex_would_send() {
    let (dir, path) = copy(CODEX);
    let before = std::fs::read_to_string(&path).unwrap();
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 15: add the `aborted` function_call_output Codex itself sends for call_e2e_3",
        ))
        .stdout(predicate::str::contains("checked again: nothing keeps it"));
    let after = std::fs::read_to_string(&path).unwrap();
    let after: Vec<&str> = after.lines().collect();
    let mut expected: Vec<&str> = before.lines().collect();
    let added: serde_json::Value = serde_json::from_str(after[15]).unwrap();
    assert_eq!(
        added["payload"],
        serde_json::json!({"type": "function_call_output", "call_id": "call_e2e_3", "output": "aborted"})
    );
    assert_eq!(added["timestamp"], "2026-12-02T04:27:24.310Z");
    expected.insert(15, after[15]);
    assert_eq!(after, expected, "only the one record is added");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("session.jsonl.loopdbg-bak")).unwrap(),
        before
    );
}

/// Codex keeps its rollout open while the session runs: the doctor will
/// not repair it under a running agent, even with --force, since every
/// line Codex writes after the rename would go into the backup (issue 59,
/// item 2). Once the agent has quit, the same command repairs it.
#[cfg(target_os = "linux")]
#[test]
fn doctor_leaves_a_rollout_an_agent_holds_open_and_repairs_it_once_it_quit() {
    use std::io::BufRead;
    let (dir, path) = copy(CODEX);
    let before = std::fs::read(&path).unwrap();
    let mut agent = std::process::Command::new("sh")
        .args(["-c", "exec 3>>\"$0\"; echo ready; read x; exit 0"])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    std::io::BufReader::new(agent.stdout.as_mut().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(said, "ready\n");
    loopdbg()
        .args(["doctor", "--write", "--force", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(format!(
            "sh (pid {}) has it open for writing; nothing was changed (quit it, then run the doctor again",
            agent.id()
        )));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(backups(dir.path()), Vec::<String>::new());
    drop(agent.stdin.take());
    assert!(agent.wait().unwrap().success());
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("checked again: nothing keeps it"));
}

/// A real Gemini CLI 0.61.0 log as the CLI wrote it: every response is
/// held twice (the call's `result` and a response record), and the CLI
/// resumes with both, so `check` predicts Gemini's 400 for each call, and
/// the doctor drops the response records.
#[test]
fn doctor_drops_the_second_copy_of_gemini_cli_responses() {
    let (dir, path) = copy(GEMINI_CLI);
    let before = std::fs::read_to_string(&path).unwrap();
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "2 a provider would reject with a 400",
        ))
        .stdout(predicate::str::contains("`gemini --resume` gets this 400"));
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 8: drop the second copy of the response for run_shell_command__e2e_1",
        ))
        .stdout(predicate::str::contains(
            "line 13: drop the second copy of the response for run_shell_command__e2e_2, run_shell_command__e2e_3",
        ));
    let after = std::fs::read_to_string(&path).unwrap();
    let expected: Vec<&str> = before
        .lines()
        .enumerate()
        .filter(|(k, _)| ![7, 12].contains(k))
        .map(|(_, l)| l)
        .collect();
    assert_eq!(after.lines().collect::<Vec<_>>(), expected);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("session.jsonl.loopdbg-bak")).unwrap(),
        before
    );
}

/// Gemini CLI killed while a tool ran: the call has no `result` and no
/// response record. The doctor gives it an error result where the CLI
/// keeps results; nothing else in the record changes.
#[test]
fn doctor_gives_a_gemini_cli_call_without_a_result_an_error_result() {
    let (_dir, path) = copy(GEMINI_CLI);
    let text: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(k, _)| *k != 12)
        .map(|(k, l)| {
            if k != 11 {
                return format!("{l}\n");
            }
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let call = v["toolCalls"][1].as_object_mut().unwrap();
            call.remove("result");
            call.insert("status".into(), "executing".into());
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 12: give the call run_shell_command__e2e_3 (run_shell_command) the error result it never got",
        ));
    let after = std::fs::read_to_string(&path).unwrap();
    let record: serde_json::Value = serde_json::from_str(after.lines().nth(10).unwrap()).unwrap();
    let call = &record["toolCalls"][1];
    assert_eq!(call["status"], "error");
    assert_eq!(
        call["result"][0]["functionResponse"]["id"],
        "run_shell_command__e2e_3"
    );
    assert_eq!(
        call["args"]["command"], "echo loopdbg-three",
        "the rest is kept"
    );
}

/// A real Claude Code 2.1.332 session whose model named a call with an id
/// Anthropic refuses (`toolu_e2e.1`): every resume gets the 400. The
/// doctor renames the id in the call and its result, and nowhere else.
#[test]
fn doctor_renames_a_call_id_anthropic_refuses() {
    let (_dir, path) = copy(INVALID_ID);
    let before = std::fs::read_to_string(&path).unwrap();
    // The user's sequence: check says no, the doctor repairs, check again.
    says(
        &["check"],
        &path,
        1,
        &["invalid_id (400)", "refused_request (400)"],
    );
    let renamed = [
        "line 19: rename the call id toolu_e2e.1 to toolu_e2e_1 (Anthropic refuses the first)",
        "line 20: rename the call id toolu_e2e.1 to toolu_e2e_1",
    ];
    says(&["doctor", "--write"], &path, 0, &renamed);
    let after = std::fs::read_to_string(&path).unwrap();
    for (k, (old, new)) in before.lines().zip(after.lines()).enumerate() {
        match k {
            18 | 19 => assert_eq!(old.replace("toolu_e2e.1", "toolu_e2e_1"), new),
            _ => assert_eq!(old, new, "line {} changed", k + 1),
        }
    }
    assert!(!after.contains("toolu_e2e.1\""));
    loopdbg()
        .args(["check", path.to_str().unwrap(), "--format", "json"])
        .assert()
        .stdout(predicate::str::contains("invalid_id").not());
    // The refusal the log records is the past once nothing has its cause:
    // check agrees with the doctor that the session can be sent.
    let past = ["refused_request (note)", "no problems; 1 note(s)"];
    says(&["check"], &path, 0, &past);
}

/// `loopdbg ARGS… PATH` exits `code` and says each of `said`.
fn says(args: &[&str], path: &Path, code: i32, said: &[&str]) {
    let mut assert = loopdbg().args(args).arg(path).assert().code(code);
    for words in said {
        assert = assert.stdout(predicate::str::contains(*words));
    }
}

/// A log whose unanswered call the provider refused twice: `check` says
/// the 400 with the log's refusals as its evidence; once the doctor has
/// given the call its result, the refusals are the past (notes), and
/// `check` agrees with the doctor that the session can be sent.
#[test]
fn check_after_the_doctor_takes_the_logs_refusals_as_the_past() {
    let (_dir, path) = copy("tests/fixtures/transcripts/claude_code_v2/refused_400.jsonl");
    says(
        &["check"],
        &path,
        1,
        &["unanswered_call (400)", "The log confirms it"],
    );
    let repaired = ["checked again: nothing keeps it from being sent"];
    says(&["doctor", "--write"], &path, 0, &repaired);
    says(
        &["check"],
        &path,
        0,
        &[
            "no problems; 2 note(s)",
            "the past: nothing in the history as it stands",
        ],
    );
}

/// Lines of a small Claude Code log, one JSON event each.
/// `doctor --write` on a file it has repaired: nothing left to do, and
/// the file byte for byte as it was.
fn a_second_doctor_changes_nothing(path: &Path) {
    let repaired = std::fs::read(path).unwrap();
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "nothing keeps this session from being sent",
        ));
    assert_eq!(std::fs::read(path).unwrap(), repaired);
}

fn log_of(events: &[&str]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

/// A result whose call is gone (left by a compaction or a rewind) is taken
/// out, and the event after it hangs from the event before.
#[test]
fn doctor_drops_an_orphan_result_and_re_parents_what_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = log_of(&[
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_gone","content":"x"}]}}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    ]);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("unexpected_result"));
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 3: drop this event: its only block is a tool_result for toolu_gone",
        ))
        .stdout(predicate::str::contains("line 4: re-parent it to a1"));
    let after: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(after.len(), 3);
    assert_eq!(after[2]["uuid"], "a2");
    assert_eq!(after[2]["parentUuid"], "a1");
}

/// A compaction that kept, after its summary, a message holding only the
/// result of a call it summarised (`compactMetadata.preservedSegment`,
/// Claude Code 2.1): on resume Claude Code sends the summary, that result
/// and what followed, and gets the 400. `check` names the compaction; the
/// doctor turns the result into text rather than dropping the event
/// (Claude Code stops relinking a segment one of whose messages is gone,
/// and would then send the whole history before the compaction, its call
/// without a result: a second 400). A second run has nothing left to do.
#[test]
fn doctor_keeps_a_message_a_compaction_kept_and_unsplits_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = log_of(&[
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-12-04T10:00:00.000Z","message":{"role":"user","content":"list the files"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-12-04T10:00:01.000Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use"}}"#,
        r#"{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s","timestamp":"2026-12-04T10:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"a b c"}]}}"#,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"r1","sessionId":"s","timestamp":"2026-12-04T10:05:00.000Z","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preservedSegment":{"headUuid":"r1","anchorUuid":"sum","tailUuid":"r1"}}}"#,
        r#"{"type":"user","uuid":"sum","parentUuid":"b1","sessionId":"s","timestamp":"2026-12-04T10:05:01.000Z","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation. The user asked for the files."}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"r1","sessionId":"s","timestamp":"2026-12-04T10:06:00.000Z","message":{"role":"user","content":"go on"}}"#,
    ]);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "line 3 uuid r1 message.content[0]  unexpected_result (400)",
        ))
        .stdout(predicate::str::contains(
            "The compaction on line 4 (2026-12-04 10:05:00 UTC, its summary beginning \"This session is being continued",
        ))
        .stdout(predicate::str::contains(
            "the compaction on line 4 came while these calls waited for their results: toolu_01",
        ));
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 3: turn the tool_result for toolu_01, a call not in the history, into text",
        ))
        .stdout(predicate::str::contains("re-parent").not());
    let after = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = after
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6, "no event dropped");
    let kept = &lines[2]["message"]["content"][0];
    assert_eq!(kept["type"], "text");
    assert!(kept["text"].as_str().unwrap().ends_with("a b c"), "{kept}");
    // Only that line changed.
    for (k, (old, new)) in text.lines().zip(after.lines()).enumerate() {
        assert_eq!(old == new, k != 2, "line {}", k + 1);
    }
    a_second_doctor_changes_nothing(&path);
}

/// The results of two turns dropped: `check` reads both calls as
/// unanswered from the first turn's line, yet each result goes after its
/// own call and each turn's reply hangs from its own turn's result, so the
/// chain Claude Code walks on resume holds both turns, in order.
#[test]
fn doctor_repairs_two_turns_whose_results_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = log_of(&[
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"r1","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"f","input":{"n":2}}]}}"#,
        r#"{"type":"assistant","uuid":"a3","parentUuid":"r2","sessionId":"s","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    ]);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 3: add the missing tool_result for toolu_2 (an error result, after line 3)",
        ))
        .stdout(predicate::str::contains(
            "checked again: nothing keeps it from being sent",
        ));
    let after: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let shape: Vec<(String, String)> = after
        .iter()
        .map(|v| {
            let block = &v["message"]["content"][0];
            let what = block["id"]
                .as_str()
                .or(block["tool_use_id"].as_str())
                .unwrap_or("text");
            (
                what.to_string(),
                v["parentUuid"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let uuid = |k: usize| after[k]["uuid"].as_str().unwrap().to_string();
    assert_eq!(
        shape,
        [
            ("text".to_string(), String::new()),
            ("toolu_1".to_string(), "u1".to_string()),
            ("toolu_1".to_string(), "a1".to_string()),
            ("toolu_2".to_string(), uuid(2)),
            ("toolu_2".to_string(), "a2".to_string()),
            ("text".to_string(), uuid(4)),
        ]
    );
}

/// Two calls of one turn share an id (Anthropic refuses it): the second
/// gets its own id and, as only one result came, an error result.
#[test]
fn doctor_splits_a_duplicate_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let text = log_of(&[
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}}"#,
    ]);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("duplicate_id (400)"));
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 2: give the second call named toolu_1 in this turn its own id, toolu_1_2",
        ))
        .stdout(predicate::str::contains(
            "add an error result for toolu_1_2",
        ));
}

/// A 400 the doctor has no repair for is said, and nothing is written:
/// never "clean".
#[test]
fn doctor_says_when_it_has_no_repair() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    // The result is not at the front of its message.
    let text = log_of(&[
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"first"},{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}}"#,
    ]);
    std::fs::write(&path, &text).unwrap();
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(2)
        .stdout(predicate::str::contains(
            "not changed: the doctor has no repair for results_not_first yet",
        ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(backups(dir.path()).is_empty());
}

/// The dropped result was the chain's link: the reply after it names a
/// parent the file does not hold. Read as Claude Code resumes it (after
/// the message event before it), the calls are found unanswered instead
/// of the history before the gap being taken for a left-behind branch;
/// the doctor gives them results and hangs the reply from one.
#[test]
fn a_dropped_link_is_read_through_and_repaired() {
    let (_dir, path) = copy("tests/fixtures/transcripts/claude_code_v2/doctor_dropped_link.jsonl");
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "unanswered_call (warning)  [toolu_e2e_2, toolu_e2e_3]",
        ))
        .stdout(predicate::str::contains("broken_link (note)"))
        .stdout(predicate::str::contains("off_branch").not());
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "add the missing tool_result for toolu_e2e_2",
        ))
        .stdout(predicate::str::contains(
            "add the missing tool_result for toolu_e2e_3",
        ))
        .stdout(predicate::str::contains("line 30: re-parent it to"));
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(0);
}

/// A line holding two records joined (a Claude Code 2.1.5 log had one) is
/// split back into the lines the agent wrote: the agent reads its log a
/// line at a time and would lose both records on resume.
#[test]
fn doctor_splits_two_records_joined_on_one_line() {
    let (_dir, path) = copy("tests/fixtures/transcripts/claude_code_v2/joined_records.jsonl");
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "line 5: split it: its 2 records, joined with no newline, go on lines of their own",
        ));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        std::fs::read_to_string("tests/fixtures/transcripts/claude_code_v2/parallel.jsonl")
            .unwrap(),
        "the split file is the log as it was written, byte for byte"
    );
}

/// What a resumed Gemini CLI session writes before its first request: the
/// whole history it loaded, folded, as one `$set` of `messages`, then the
/// user's new prompt. Gemini refuses that request (each response is sent
/// twice), so the user resumes again: each try adds a `$set` line and a
/// prompt.
fn failed_resume(text: &str, try_number: usize) -> String {
    let mut records: Vec<serde_json::Value> = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(messages) = v.get("$set").and_then(|s| s.get("messages")) {
            records = messages.as_array().unwrap().clone();
        } else if let Some(id) = v.get("id") {
            match records.iter_mut().find(|r| r["id"] == *id) {
                Some(slot) => *slot = v.clone(),
                None => records.push(v.clone()),
            }
        }
    }
    let set = serde_json::json!({"$set": {"messages": records}});
    let prompt = serde_json::json!({
        "id": format!("resume-prompt-{try_number}"),
        "timestamp": "2026-12-02T05:00:00.000Z",
        "type": "user",
        "content": [{"text": "go on"}],
    });
    format!(
        "{text}{set}\n{prompt}\n{{\"$set\":{{\"lastUpdated\":\"2026-12-02T05:00:00.000Z\"}}}}\n"
    )
}

/// The path a user takes: `gemini --resume` first (refused, and the file
/// grows), again, then the doctor. It repairs the file in one write, names
/// only lines it changes, keeps the original byte for byte, and a second
/// run finds nothing to do and leaves the file as it is.
#[test]
fn doctor_repairs_a_gemini_cli_chat_after_failed_resumes() {
    for tries in [1, 2, 3] {
        let (dir, path) = copy(GEMINI_CLI);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for n in 1..=tries {
            text = failed_resume(&text, n);
        }
        std::fs::write(&path, &text).unwrap();
        age(&path);
        loopdbg()
            .args(["check", path.to_str().unwrap()])
            .assert()
            .code(1)
            .stdout(predicate::str::contains("`gemini --resume` gets this 400"));
        let out = loopdbg()
            .args(["doctor", "--write", path.to_str().unwrap()])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "after {tries} failed resume(s): {said}"
        );
        let named: Vec<usize> = said
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix("line ")?
                    .split(':')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        assert!(!named.is_empty(), "{said}");
        let changes: Vec<&str> = said
            .lines()
            .filter(|l| l.trim().starts_with("line "))
            .collect();
        let mut distinct = changes.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            changes.len(),
            "no change said twice: {said}"
        );
        // Only the named lines differ (none is added: responses are
        // dropped, from their own lines or from a `$set`).
        let after = std::fs::read_to_string(&path).unwrap();
        let before_lines: Vec<&str> = text.lines().collect();
        let after_lines: Vec<&str> = after.lines().collect();
        let kept: Vec<&str> = before_lines
            .iter()
            .enumerate()
            .filter(|(k, _)| !named.contains(&(k + 1)))
            .map(|(_, l)| *l)
            .collect();
        assert!(
            kept.iter().all(|l| after_lines.contains(l)),
            "a line the doctor did not name changed"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("session.jsonl.loopdbg-bak")).unwrap(),
            text,
            "the backup is the original"
        );
        loopdbg()
            .args(["check", path.to_str().unwrap()])
            .assert()
            .code(0);
        age(&path);
        loopdbg()
            .args(["doctor", "--write", path.to_str().unwrap()])
            .assert()
            .code(0);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            after,
            "a second run leaves the file byte for byte"
        );
        assert_eq!(backups(dir.path()).len(), 1, "and makes no second backup");
    }
}

/// Every node of `v` up to `depth` levels down, as a path of keys and
/// indices.
fn node_paths(
    v: &serde_json::Value,
    depth: usize,
    at: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    out.push(at.clone());
    if depth == 0 {
        return;
    }
    let children: Vec<(String, &serde_json::Value)> = match v {
        serde_json::Value::Object(map) => map.iter().map(|(k, x)| (k.clone(), x)).collect(),
        // The first and the last item stand for the rest: the walks treat
        // items alike, and a store's message list is long.
        serde_json::Value::Array(items) => {
            let mut ends: Vec<usize> = vec![0, items.len().saturating_sub(1)];
            ends.dedup();
            ends.into_iter()
                .filter_map(|i| Some((i.to_string(), items.get(i)?)))
                .collect()
        }
        _ => Vec::new(),
    };
    for (key, child) in children {
        at.push(key);
        node_paths(child, depth - 1, at, out);
        at.pop();
    }
}

fn shorten(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) if s.len() > 64 => {
            *s = s.chars().take(64).collect();
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(shorten),
        serde_json::Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

fn at<'v>(v: &'v serde_json::Value, path: &[String]) -> &'v serde_json::Value {
    path.iter().fold(v, |v, key| match v {
        serde_json::Value::Array(items) => &items[key.parse::<usize>().unwrap()],
        _ => &v[key.as_str()],
    })
}

/// Whether a replacement would leave the node as it was in kind (an empty
/// object for an object, a scalar for a scalar).
fn same_kind(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Array(x), Array(y)) => x.is_empty() == y.is_empty(),
        (Object(_), Object(_)) => true,
        (Array(_) | Object(_), _) | (_, Array(_) | Object(_)) => false,
        _ => true,
    }
}

fn replace_at(v: &mut serde_json::Value, path: &[String], new: serde_json::Value) {
    let mut target = v;
    for key in path {
        target = match target {
            serde_json::Value::Object(map) => map.get_mut(key).unwrap(),
            serde_json::Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
    }
    *target = new;
}

/// The doctor never panics, whatever shape a record of an agent's store
/// has: every node (three levels down) of every record of each agent's
/// broken session, a Gemini CLI chat after a failed resume included, is
/// replaced in turn by a value of each other JSON type, and the doctor
/// diagnoses the file, writes its repair and checks it again.
#[test]
fn the_doctor_never_panics_on_a_record_of_another_shape() {
    let gemini_resumed = failed_resume(&std::fs::read_to_string(GEMINI_CLI).unwrap(), 1);
    // Long texts (system prompts, tool lists) are cut to keep each check
    // short; ids, kinds and structure stay as the agents wrote them.
    let stores = [
        std::fs::read_to_string(BROKEN).unwrap(),
        std::fs::read_to_string(INVALID_ID).unwrap(),
        std::fs::read_to_string(CODEX).unwrap(),
        gemini_resumed,
    ]
    .map(|text| {
        text.lines()
            .map(
                |line| match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(mut v) => {
                        shorten(&mut v);
                        v.to_string()
                    }
                    Err(_) => line.to_string(),
                },
            )
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    });
    // One value of each kind the doctor's walks treat differently: a
    // scalar, an empty array, an array of arrays, an empty object.
    let others = [
        serde_json::json!(true),
        serde_json::json!([]),
        serde_json::json!([[1]]),
        serde_json::json!({}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    // Every fifth of the ~6,200 candidates (a prime stride walks every
    // value over every path): all of them take 90 s in a debug build.
    const STRIDE: usize = 5;
    let mut candidates = 0;
    let mut tried = 0;
    let mut panics = Vec::new();
    for (s, text) in stores.iter().enumerate() {
        let lines: Vec<&str> = text.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let mut paths = Vec::new();
            node_paths(&record, 3, &mut Vec::new(), &mut paths);
            for p in paths {
                for other in others.iter().filter(|o| !same_kind(o, at(&record, &p))) {
                    candidates += 1;
                    if candidates % STRIDE != 0 {
                        continue;
                    }
                    let mut mutated = record.clone();
                    replace_at(&mut mutated, &p, other.clone());
                    let mut out = lines.clone();
                    let new_line = mutated.to_string();
                    out[k] = &new_line;
                    std::fs::write(&path, out.join("\n") + "\n").unwrap();
                    tried += 1;
                    let run = std::panic::catch_unwind(|| {
                        if let loopdbg_corpus::doctor::Verdict::Needs(plan) =
                            loopdbg_corpus::doctor::diagnose(&path)
                        {
                            loopdbg_corpus::doctor::apply(&path, plan, true);
                        }
                    });
                    if run.is_err() {
                        panics.push(format!("store {s}, line {}, {:?} = {other}", k + 1, p));
                    }
                    let backup = dir.path().join("session.jsonl.loopdbg-bak");
                    if backup.exists() {
                        std::fs::remove_file(backup).unwrap();
                    }
                }
            }
        }
    }
    assert!(tried > 1000, "only {tried} of {candidates} mutations");
    assert!(
        panics.is_empty(),
        "{} of {tried} panicked:\n{}",
        panics.len(),
        panics[..panics.len().min(20)].join("\n")
    );
}

/// A home as a user's machine holds it: sessions of five agents, some
/// clean, some each agent mends as it resumes them, two that no resume
/// can send (a Claude Code id the provider refuses, a Gemini CLI chat
/// whose responses are kept twice), Codex's store moved by `CODEX_HOME`,
/// opencode's database, and files that are not sessions.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    codex_home: PathBuf,
}

impl Home {
    fn plant() -> Home {
        const T: &str = "tests/fixtures/transcripts";
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let codex_home = dir.path().join("codex-elsewhere");
        let put = |from: &str, to: PathBuf| {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(format!("{T}/{from}"), &to).unwrap();
            age(&to);
        };
        let claude = ".claude/projects/-home-ann-app";
        let codex = "sessions/2026/12/02";
        let extensions = ".config/Code/User/globalStorage";
        let planted = [
            (
                "claude_code_v2/doctor_invalid_id.jsonl",
                format!("{claude}/c0ffee00-0000-4000-8000-000000000001.jsonl"),
            ),
            (
                "claude_code_v2/parallel.jsonl",
                format!("{claude}/c0ffee00-0000-4000-8000-000000000002.jsonl"),
            ),
            (
                "claude_code_v2/doctor_dropped_result.jsonl",
                format!("{claude}/c0ffee00-0000-4000-8000-000000000003.jsonl"),
            ),
            (
                "gemini_cli/session-2026-12-02T04-27-6a20c2cd.jsonl",
                ".gemini/tmp/ann-app/chats/session-2026-12-02T04-27-6a20c2cd.jsonl".into(),
            ),
            (
                "copilot_cli/events.jsonl",
                ".copilot/session-state/5e55/events.jsonl".into(),
            ),
            (
                "copilot_cli/interrupted.jsonl",
                ".copilot/session-state/older.jsonl".into(),
            ),
            (
                "agent_stores/cline_api_conversation_history.json",
                format!(
                    "{extensions}/saoudrizwan.claude-dev/tasks/1733/api_conversation_history.json"
                ),
            ),
            (
                "agent_stores/roo_api_conversation_history.json",
                format!(
                    "{extensions}/rooveterinaryinc.roo-cline/tasks/1734/api_conversation_history.json"
                ),
            ),
        ];
        for (from, to) in planted {
            put(from, home.join(to));
        }
        // Codex's store is where CODEX_HOME says.
        for name in [
            "rollout-2026-11-03T08-00-00-clean.jsonl",
            "rollout-2026-12-02T04-27-23-dropped-output.jsonl",
        ] {
            put(&format!("codex/{name}"), codex_home.join(codex).join(name));
        }
        std::fs::write(home.join(claude).join("notes.txt"), "not a session").unwrap();
        std::fs::write(
            home.join(".gemini/tmp/ann-app/.project_root"),
            "/home/ann/app\n",
        )
        .unwrap();
        plant_opencode(&home.join(".local/share/opencode"));
        Home {
            _dir: dir,
            home,
            codex_home,
        }
    }

    fn doctor(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        let mut cmd = loopdbg();
        cmd.arg("doctor").arg("--scan").args(args);
        for var in loopdbg_corpus::stores::VARIABLES {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("CODEX_HOME", &self.codex_home)
            .assert()
    }

    /// Every file under the home, with its bytes; but SQLite's own
    /// `-wal` and `-shm` files, which any reader of a database in WAL mode
    /// may leave beside it (opencode's while it runs).
    fn files(&self) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut stack = vec![self._dir.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.to_string_lossy();
                if path.is_dir() {
                    stack.push(path);
                } else if !name.ends_with(".db-wal") && !name.ends_with(".db-shm") {
                    out.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }
}

/// opencode's database as opencode 1.18.33 writes it (WAL; the tables the
/// scan reads, their columns and indexes as opencode creates them): one
/// session opencode was killed in while a call ran (the call still
/// `running`, as tests/agents.rs saw it) and one clean.
fn plant_opencode(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let db = rusqlite::Connection::open(dir.join("opencode.db")).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode=WAL;
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
            slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
        CREATE INDEX part_message_id_id_idx ON part (message_id, id);",
    )
    .unwrap();
    let tool = |id: &str, state: serde_json::Value| {
        serde_json::json!({"type": "tool", "tool": "bash", "callID": id, "state": state})
            .to_string()
    };
    let sessions = [
        ("ses_killed", "/home/ann/app", 1),
        ("ses_clean", "/home/ann/site", 2),
    ];
    for (id, folder, at) in sessions {
        db.execute(
            "INSERT INTO session VALUES (?1, 'global', NULL, 'slug', ?2, 'title', '1.18.33', ?3, ?3)",
            rusqlite::params![id, folder, at],
        )
        .unwrap();
    }
    let user = r#"{"role":"user","time":{"created":1},"agent":"build"}"#;
    let assistant = r#"{"role":"assistant","providerID":"anthropic","modelID":"claude-sonnet-4-5","finish":"tool-calls"}"#;
    let rows: [(&str, &str, &str, Vec<String>); 4] = [
        (
            "msg_1",
            "ses_killed",
            user,
            vec![r#"{"type":"text","text":"run it"}"#.into()],
        ),
        (
            "msg_2",
            "ses_killed",
            assistant,
            vec![
                r#"{"type":"step-start"}"#.into(),
                tool(
                    "toolu_01",
                    serde_json::json!({"status": "completed", "input": {"command": "echo one"}, "output": "one\n"}),
                ),
                tool(
                    "toolu_02",
                    serde_json::json!({"status": "running", "input": {"command": "sleep 60"}, "metadata": {"output": ""}}),
                ),
            ],
        ),
        (
            "msg_3",
            "ses_clean",
            user,
            vec![r#"{"type":"text","text":"hi"}"#.into()],
        ),
        (
            "msg_4",
            "ses_clean",
            assistant,
            vec![r#"{"type":"text","text":"hello"}"#.into()],
        ),
    ];
    for (k, (id, session, data, parts)) in rows.iter().enumerate() {
        db.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, session, k as i64, data],
        )
        .unwrap();
        for (j, part) in parts.iter().enumerate() {
            db.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, 0, 0, ?4)",
                rusqlite::params![format!("prt_{k}{j}"), id, session, part],
            )
            .unwrap();
        }
    }
}

fn scanned(assert: &assert_cmd::assert::Assert) -> serde_json::Value {
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

/// The paths of the sessions a scan found in `standing`, by file name.
fn standing(scan: &serde_json::Value, standing: &str) -> Vec<String> {
    let mut names: Vec<String> = scan["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["standing"] == standing)
        .map(|u| {
            let path = Path::new(u["path"].as_str().unwrap());
            path.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn doctor_scan_finds_every_session_no_resume_can_send_and_repairs_them() {
    let home = Home::plant();
    let before = home.files();
    let first = home.doctor(&["--format", "json"]).code(1);
    let scan = scanned(&first);
    assert_eq!(scan["sessions"], 12, "{scan:#}");
    let agents: Vec<&str> = scan["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        agents,
        [
            "claude-code",
            "codex",
            "gemini-cli",
            "copilot-cli",
            "cline",
            "roo-code",
            "opencode"
        ]
    );
    assert_eq!(
        standing(&scan, "refused"),
        [
            "c0ffee00-0000-4000-8000-000000000001.jsonl",
            "session-2026-12-02T04-27-6a20c2cd.jsonl"
        ]
    );
    // Each agent resumes these by mending them itself: listed, not changed.
    assert_eq!(
        standing(&scan, "mended"),
        [
            "api_conversation_history.json",
            "c0ffee00-0000-4000-8000-000000000003.jsonl",
            "older.jsonl",
            "opencode.db",
            "rollout-2026-12-02T04-27-23-dropped-output.jsonl"
        ]
    );
    // opencode's killed session, by its id, with opencode's resume.
    let killed = scan["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["agent"] == "opencode")
        .unwrap();
    assert_eq!(killed["session"], "ses_killed", "{killed:#}");
    assert_eq!(
        killed["resume"],
        "cd /home/ann/app && opencode --session ses_killed"
    );
    assert!(
        killed["why"]
            .as_str()
            .unwrap()
            .contains("toolu_02 is still `running`")
    );
    assert_eq!(standing(&scan, "unread"), Vec::<String>::new());
    let resume: Vec<&str> = scan["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["standing"] == "refused")
        .map(|u| u["resume"].as_str().unwrap())
        .collect();
    assert_eq!(
        resume,
        [
            "cd /tmp/u/work && claude --resume c0ffee00-0000-4000-8000-000000000001",
            "cd /home/ann/app && gemini --resume 6a20c2cd-1176-49ca-971a-fb9e1d759208"
        ]
    );
    assert_eq!(
        home.files(),
        before,
        "a scan without --write changed a file"
    );

    let text = home.doctor(&[]).code(1);
    let said = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(said.contains("Gemini CLI: 1 session(s) in "), "{said}");
    assert!(said.contains("12 session(s) in 7 store(s): 2 cannot be resumed; nothing written: pass --write to repair the 2"), "{said}");
    assert!(
        said.contains("resumes only as opencode mends it: ")
            && said.contains("opencode.db session ses_killed"),
        "{said}"
    );

    let written = home.doctor(&["--write", "--format", "json"]).code(0);
    let scan = scanned(&written);
    let after = home.files();
    let changed: Vec<String> = after
        .iter()
        .filter(|(path, bytes)| before.get(*path) != Some(*bytes))
        .map(|(path, _)| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        changed,
        [
            "c0ffee00-0000-4000-8000-000000000001.jsonl",
            "c0ffee00-0000-4000-8000-000000000001.jsonl.loopdbg-bak",
            "session-2026-12-02T04-27-6a20c2cd.jsonl",
            "session-2026-12-02T04-27-6a20c2cd.jsonl.loopdbg-bak"
        ],
        "{scan:#}"
    );
    for (path, bytes) in &after {
        let name = path.to_string_lossy();
        if let Some(original) = name.strip_suffix(".loopdbg-bak") {
            assert_eq!(
                bytes,
                &before[Path::new(original)],
                "{name} is not the original"
            );
        }
    }
    for u in scan["unresumable"].as_array().unwrap() {
        if u["standing"] == "refused" {
            assert_eq!(u["written"]["outcome"], "written", "{u:#}");
            assert_eq!(u["written"]["resumable"], true, "{u:#}");
        }
    }

    // Again: nothing left that no resume can send, nothing written.
    for file in after.keys() {
        age(file);
    }
    let again = home.doctor(&["--write", "--format", "json"]).code(0);
    assert_eq!(standing(&scanned(&again), "refused"), Vec::<String>::new());
    assert_eq!(home.files(), after);
}

#[test]
fn doctor_scan_of_a_home_without_agents_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = loopdbg();
    for var in loopdbg_corpus::stores::VARIABLES {
        cmd.env_remove(var);
    }
    cmd.env("HOME", dir.path())
        .args(["doctor", "--scan"])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains("no session store found")
                .and(predicate::str::contains("CLAUDE_CONFIG_DIR, CODEX_HOME")),
        );
}

/// A compaction that split a call from its result (the call made before
/// it, the result written after its summary, as reported in Claude Code,
/// opencode and OpenClaw sessions) is named by `check`, the doctor and a
/// scan: its line, its time and its summary's first words.
#[test]
fn the_compaction_that_split_a_call_from_its_result_is_named() {
    let text =
        std::fs::read_to_string("tests/fixtures/transcripts/claude_code_v2/compact.jsonl").unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The Edit call's result, written after the compaction instead of
    // before it; the next call hangs from it.
    let mut result = lines.remove(3);
    result["uuid"] = "r01-late".into();
    result["parentUuid"] = "u02".into();
    result["timestamp"] = "2026-11-02T12:05:00.200Z".into();
    lines.insert(5, result);
    lines[6]["parentUuid"] = "r01-late".into();
    // The boundary bridges the chain from the last event before it: the call.
    lines[3]["logicalParentUuid"] = "a01".into();
    let (dir, path) = copy("tests/fixtures/transcripts/claude_code_v2/compact.jsonl");
    let body: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
    age(&path);
    let named = "The compaction on line 4 (2026-11-02 12:05:00 UTC, its summary beginning \"This session is being continued from a previous conversation that ran out…\")";
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains(named)
                .and(predicate::str::contains("split this result from its call")),
        );
    loopdbg()
        .args(["doctor", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains(named).and(predicate::str::contains(
                "line 6: drop this event: its only block is a tool_result for toolu_04Edit",
            )),
        );
    drop(dir);
}

/// Gemini CLI 0.61.0 killed mid-tool, then `gemini --resume` tried (and
/// refused): the resume rewrote the history as a `$set` whose model turn
/// holds its calls as `functionCall` parts, each answered by a
/// `<id>_response` record, beside the record the CLI had written the
/// response in before. The doctor drops that second copy; a second run
/// finds nothing. (Written by tests/agents.rs's journey.)
#[test]
fn doctor_repairs_a_gemini_cli_chat_killed_mid_tool_then_resumed() {
    let (_dir, path) = copy(
        "tests/fixtures/transcripts/gemini_cli/session-2026-12-04T06-01-killed-then-resumed.jsonl",
    );
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains(
                "line 18: drop the second copy of the response for run_shell_command__e2e_1",
            )
            .and(predicate::str::contains(
                "checked again: nothing keeps it from being sent",
            )),
        );
    age(&path);
    a_second_doctor_changes_nothing(&path);
}

/// What the fuzz targets check, on every agent log of the fixtures (and
/// the first fuzz find: a `\r` the doctor keeps): the repair keeps every
/// line it does not name, and the doctor takes its own repair.
#[test]
fn every_repair_of_the_fixtures_keeps_what_it_does_not_name() {
    let logs = repaired_agents_logs();
    for (path, bytes, agent) in &logs {
        loopdbg_corpus::doctor::verify_repair(bytes, *agent)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    assert!(logs.len() > 20, "{} logs", logs.len());
    loopdbg_corpus::doctor::verify_repair(
        b"0\r\n\0\0",
        loopdbg_read::Source::Agent(Agent::GeminiCli),
    )
    .unwrap();
}

/// What a repair does not touch is written as it was: a number as
/// written (`1e2`, an integer past 64 bits) and a key written twice, on
/// the line the doctor edits (serde_json wrote `100.0`,
/// `1.2345678901234568e+29` and one key).
#[test]
fn doctor_edits_leave_numbers_and_keys_as_written() {
    let (_dir, path) = copy(INVALID_ID);
    let text = std::fs::read_to_string(&path).unwrap();
    let odd = r#""loopdbgTest":{"n":1e2,"big":123456789012345678901234567890,"d":1,"d":2},"#;
    let marked: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(k, l)| match k {
            18 | 19 => l.replacen('{', &format!("{{{odd}"), 1),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(&path, marked.join("\n") + "\n").unwrap();
    age(&path);
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0);
    let after = std::fs::read_to_string(&path).unwrap();
    for (k, (old, new)) in marked.iter().zip(after.lines()).enumerate() {
        match k {
            18 | 19 => assert_eq!(old.replace("toolu_e2e.1", "toolu_e2e_1"), new),
            _ => assert_eq!(old, new, "line {} changed", k + 1),
        }
    }
}

/// Gemini CLI, two parallel calls, Ctrl-C during one, then two resumes
/// refused with the 400: each failed resume rewrote the history whole,
/// leaving each call of the cancelled batch holding *both* responses in
/// its `result`, beside the `<id>_response` record. Gemini CLI sends every
/// part of every result (`convertSessionToClientHistory`), so six
/// responses for two calls: `check` says so, and one doctor run repairs
/// all of it (it once removed one copy a run and called the file
/// resumable); a second run changes nothing.
#[test]
fn doctor_repairs_a_gemini_cli_cancelled_batch_after_failed_resumes_in_one_run() {
    let (_dir, path) = copy(
        "tests/fixtures/transcripts/gemini_cli/session-2026-12-05T08-00-cancelled-batch-resumed-twice.jsonl",
    );
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("duplicate_result (400)")
                .and(predicate::str::contains("(2 call(s), 6 response(s))")),
        );
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains("keep only the call run_shell_command_1's own response")
                .and(predicate::str::contains(
                    "keep only the call run_shell_command_2's own response",
                ))
                .and(predicate::str::contains("drop the second copy"))
                .and(predicate::str::contains(
                    "checked again: nothing keeps it from being sent",
                )),
        );
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(0);
    age(&path);
    a_second_doctor_changes_nothing(&path);
}

/// Gemini CLI 0.61 killed while a call ran, then `gemini --resume` refused
/// twice: the last failed resume's `$set` holds the `<id>_response` record
/// twice (the CLI keeps messages in a map by id, so they are one record at
/// the first's place). The doctor once dropped the later copy's element
/// and left the first, and said "it still cannot be resumed" (seen in the
/// real-agent journey); it drops every element of the record now.
#[test]
fn doctor_drops_a_gemini_cli_record_written_twice_in_one_set() {
    let (_dir, path) = copy(
        "tests/fixtures/transcripts/gemini_cli/session-2026-12-06T23-43-killed-resumes-copied-in-one-set.jsonl",
    );
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("(1 call(s), 3 response(s))"));
    loopdbg()
        .args(["doctor", "--write", "--force", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "checked again: nothing keeps it from being sent",
        ));
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(0);
    age(&path);
    a_second_doctor_changes_nothing(&path);
}

/// One doctor run is enough, for every agent log of the fixtures: the
/// repair it plans, read again, needs no further repair (a repair that
/// leaves work for a second run is one the user is told is done when it
/// is not).
#[test]
fn every_repair_of_the_fixtures_is_whole_in_one_run() {
    use loopdbg_corpus::doctor::{Verdict, diagnose_as};
    let mut repaired = 0;
    for (path, bytes, agent) in repaired_agents_logs() {
        let (Verdict::Needs(repair), _) = diagnose_as("session.jsonl", bytes, Some(agent), true)
        else {
            continue;
        };
        let text = repair.lines().collect::<Vec<_>>().join("\n") + "\n";
        let (again, _) = diagnose_as("session.jsonl", text.into_bytes(), Some(agent), true);
        if let Verdict::Needs(more) = again {
            panic!(
                "{}: a second doctor run would still change: {}",
                path.display(),
                more.plan
                    .changes
                    .iter()
                    .map(|c| format!("line {}: {}", c.line, c.what))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        repaired += 1;
    }
    assert!(repaired > 10, "{repaired} repaired logs");
}

/// Kimi Code killed between writing a step's reply and its tool results:
/// `check` gives the 400 its resume gets (Kimi Code sends the file as it
/// stands); the doctor writes the missing result where the CLI would have,
/// once; a second run changes nothing.
#[test]
fn doctor_repairs_a_kimi_code_context_killed_between_its_appends() {
    let (_dir, path) =
        copy("tests/fixtures/transcripts/kimi_code/context_killed_between_appends.jsonl");
    loopdbg()
        .args(["check", "--strict", path.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("(kimi-code, 3 messages)")
                .and(predicate::str::contains("unanswered_call (400)  [Shell:0]")),
        );
    loopdbg()
        .args(["doctor", "--write", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains(
                "line 4: add an error result for the call Shell:0 after line 5",
            )
            .and(predicate::str::contains(
                "checked again: nothing keeps it from being sent",
            )),
        );
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(lines[5].starts_with(r#"{"role":"tool""#), "{lines:#?}");
    age(&path);
    a_second_doctor_changes_nothing(&path);
}

/// `doctor --scan` finds Kimi Code's sessions where the CLI keeps them
/// (`~/.kimi/sessions/<md5>/<id>/context.jsonl`, or `$KIMI_SHARE_DIR`),
/// names the one its resume cannot send with `kimi -r ID`, leaves a
/// clean one and `/undo`'s rotated copies alone, and repairs it with
/// `--write`.
#[test]
fn doctor_scan_finds_and_repairs_kimi_code_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let sessions = home.join(".kimi/sessions/3f2a9c0d1e4b5a6978c1d2e3f4a5b6c7");
    let put = |from: &str, to: PathBuf| {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(format!("tests/fixtures/transcripts/kimi_code/{from}"), &to).unwrap();
        age(&to);
    };
    let killed = sessions.join("5b1e7c2a-9d40-4f3e-8a61-0c2d4e6f8a10/context.jsonl");
    put("context_killed_between_appends.jsonl", killed.clone());
    put(
        "context_killed_between_appends.jsonl",
        sessions.join("5b1e7c2a-9d40-4f3e-8a61-0c2d4e6f8a10/context_1.jsonl"),
    );
    put(
        "context.jsonl",
        sessions.join("9e0f1a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b/context.jsonl"),
    );
    let scan = |write: bool| {
        let mut cmd = loopdbg();
        cmd.args(["doctor", "--scan"]);
        if write {
            cmd.arg("--write");
        }
        for var in loopdbg_corpus::stores::VARIABLES {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &home).assert()
    };
    scan(false).code(1).stdout(
        predicate::str::contains("Kimi Code: 2 session(s) in")
            .and(predicate::str::contains("1 cannot be resumed"))
            .and(predicate::str::contains(
                "resume: kimi -r 5b1e7c2a-9d40-4f3e-8a61-0c2d4e6f8a10",
            )),
    );
    scan(true)
        .code(0)
        .stdout(predicate::str::contains("checked again: it can be resumed"));
    scan(false)
        .code(0)
        .stdout(predicate::str::contains("every one can be resumed"));
}

/// Every agent-log fixture of the agents the doctor repairs: its path, its
/// bytes and what it is read as.
fn repaired_agents_logs() -> Vec<(PathBuf, Vec<u8>, loopdbg_read::Source)> {
    use loopdbg_read::Source;
    let stores = [
        ("claude_code_v2", Agent::ClaudeCode),
        ("codex", Agent::Codex),
        ("gemini_cli", Agent::GeminiCli),
        ("kimi_code", Agent::KimiCode),
    ];
    let mut out = Vec::new();
    for (dir, agent) in stores {
        assert!(agent.repaired(), "{agent} is repaired by the doctor");
        for entry in std::fs::read_dir(format!("tests/fixtures/transcripts/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes, Source::Agent(agent)));
            }
        }
    }
    out
}

/// Crush's database as Crush creates it (internal/db/migrations up to
/// 20260127, the tables the scan reads), with the rows Crush writes:
/// parts as `[{type, data}]`, each tool result a `tool` message of its
/// own, `created_at` in seconds (so several rows share one).
fn plant_crush(data_dir: &Path) -> rusqlite::Connection {
    std::fs::create_dir_all(data_dir).unwrap();
    let db = rusqlite::Connection::open(data_dir.join("crush.db")).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode=WAL;
        CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
            updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
            summary_message_id TEXT, todos TEXT);
        CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
            parts TEXT NOT NULL default '[]', model TEXT, created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
            is_summary_message INTEGER DEFAULT 0 NOT NULL);
        CREATE INDEX idx_messages_session_id ON messages (session_id);
        CREATE INDEX idx_messages_created_at ON messages (created_at);",
    )
    .unwrap();
    db
}

fn crush_session(db: &rusqlite::Connection, id: &str, parent: Option<&str>, at: i64) {
    db.execute(
        "INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at) VALUES (?1, ?2, 't', ?3, ?3)",
        rusqlite::params![id, parent, at],
    )
    .unwrap();
}

/// One message row; `parts` as Crush's `marshalParts` writes them.
fn crush_message(
    db: &rusqlite::Connection,
    session: &str,
    id: &str,
    role: &str,
    at: i64,
    parts: serde_json::Value,
) {
    db.execute(
        "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        rusqlite::params![id, session, role, parts.to_string(), at],
    )
    .unwrap();
}

fn crush_call(id: &str, command: &str) -> serde_json::Value {
    let input = serde_json::json!({ "command": command }).to_string();
    serde_json::json!({"type": "tool_call", "data": {"id": id, "name": "bash", "input": input, "provider_executed": false, "finished": true}})
}

fn crush_result(id: &str, content: &str) -> serde_json::Value {
    serde_json::json!({"type": "tool_result", "data": {"tool_call_id": id, "name": "bash", "content": content, "data": "", "mime_type": "", "metadata": "", "is_error": false}})
}

fn crush_text(text: &str) -> serde_json::Value {
    serde_json::json!({"type": "text", "data": {"text": text}})
}

#[test]
fn doctor_scan_reads_crush_projects_as_crush_sends_them() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("work/app");
    let data_dir = project.join(".crush");
    let global = home.join(".local/share/crush");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("projects.json"),
        json!({"projects": [
            {"path": project, "data_dir": data_dir, "last_accessed": "2026-12-05T09:14:31Z"},
            // A project whose folder is gone: nothing to read, no error.
            {"path": "/gone", "data_dir": "/gone/.crush", "last_accessed": "2026-11-01T00:00:00Z"}
        ]})
        .to_string(),
    )
    .unwrap();
    let db = plant_crush(&data_dir);
    let stop = json!({"type": "finish", "data": {"reason": "stop", "time": 0}});
    let tool_use = json!({"type": "finish", "data": {"reason": "tool_use", "time": 0}});
    let end_turn = json!({"type": "finish", "data": {"reason": "end_turn", "time": 0}});
    // Sessions: id, parent, created.
    let sessions = [
        // Killed while the second of two parallel calls ran.
        ("killed", None, 10),
        // Summarized after a killed call: Crush sends from the summary on.
        ("summarized", None, 20),
        // A sub-agent's session, left open: Crush's own, never resumed.
        ("agent-tool-call", Some("killed"), 12),
        ("clean", None, 30),
    ];
    for (id, parent, at) in sessions {
        crush_session(&db, id, parent, at);
    }
    // Messages: session, id, role, created, parts.
    let messages = [
        (
            "killed",
            "k1",
            "user",
            10,
            json!([crush_text("run both"), stop]),
        ),
        (
            "killed",
            "k2",
            "assistant",
            11,
            json!([
                crush_call("call_a", "make test"),
                crush_call("call_b", "make lint"),
                tool_use
            ]),
        ),
        (
            "killed",
            "k3",
            "tool",
            11,
            json!([crush_result("call_a", "ok"), stop]),
        ),
        (
            "summarized",
            "s1",
            "user",
            20,
            json!([crush_text("look"), stop]),
        ),
        (
            "summarized",
            "s2",
            "assistant",
            21,
            json!([crush_call("call_c", "ls"), tool_use]),
        ),
        (
            "summarized",
            "s3",
            "assistant",
            22,
            json!([crush_text("Summary: we looked."), end_turn]),
        ),
        (
            "summarized",
            "s4",
            "user",
            23,
            json!([crush_text("go on"), stop]),
        ),
        (
            "agent-tool-call",
            "a1",
            "assistant",
            12,
            json!([crush_call("call_d", "grep"), tool_use]),
        ),
        ("clean", "c1", "user", 30, json!([crush_text("hi"), stop])),
        (
            "clean",
            "c2",
            "assistant",
            30,
            json!([crush_text("hello"), end_turn]),
        ),
    ];
    for (session, id, role, at, parts) in messages {
        crush_message(&db, session, id, role, at, parts);
    }
    db.execute(
        "UPDATE sessions SET summary_message_id = 's3' WHERE id = 'summarized'",
        [],
    )
    .unwrap();
    drop(db);
    let before = std::fs::read(data_dir.join("crush.db")).unwrap();

    let mut cmd = loopdbg();
    cmd.args(["doctor", "--scan", "--format", "json"]);
    for var in loopdbg_corpus::stores::VARIABLES {
        cmd.env_remove(var);
    }
    // Every session resumes (Crush mends the killed one itself): exit 0.
    let out = cmd.env("HOME", &home).assert().code(0);
    let scan = scanned(&out);
    assert_eq!(scan["sessions"], 3, "{scan:#}");
    assert_eq!(scan["stores"][0]["agent"], "crush", "{scan:#}");
    let listed = scan["unresumable"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{scan:#}");
    let killed = &listed[0];
    assert_eq!(killed["session"], "killed");
    assert_eq!(killed["standing"], "mended");
    assert_eq!(
        killed["resume"],
        format!("cd {} && crush --session killed", project.display())
    );
    let why = killed["why"].as_str().unwrap();
    assert!(
        why.contains("call_b") && why.contains("tool call was interrupted"),
        "{why}"
    );
    assert!(!why.contains("call_a"), "{why}");
    assert_eq!(std::fs::read(data_dir.join("crush.db")).unwrap(), before);
}

/// A hostile home: Gemini CLI's `.project_root` a FIFO, Copilot CLI's
/// `workspace.yaml` a link to `/dev/zero`, Crush's `projects.json` a FIFO,
/// a session linked to `/dev/zero`. The scan once waited on the FIFO
/// forever and read `/dev/zero` until memory ran out; it finishes now,
/// each session still listed (without a folder to resume in).
#[test]
#[cfg(unix)]
fn doctor_scan_finishes_in_a_home_of_fifos_and_devices() {
    let home = Home::plant();
    let mkfifo = |path: &Path| {
        let _ = std::fs::remove_file(path);
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {path:?}");
    };
    mkfifo(&home.home.join(".gemini/tmp/ann-app/.project_root"));
    let crush = home.home.join(".local/share/crush");
    std::fs::create_dir_all(&crush).unwrap();
    mkfifo(&crush.join("projects.json"));
    std::os::unix::fs::symlink(
        "/dev/zero",
        home.home.join(".copilot/session-state/5e55/workspace.yaml"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "/dev/zero",
        home.home
            .join(".claude/projects/-home-ann-app/c0ffee00-0000-4000-8000-00000000000f.jsonl"),
    )
    .unwrap();
    let mut cmd = loopdbg();
    cmd.args(["doctor", "--scan", "--format", "json"]);
    for var in loopdbg_corpus::stores::VARIABLES {
        cmd.env_remove(var);
    }
    // A bound on a wait that once never ended, not a timing assertion.
    let out = cmd
        .env("HOME", &home.home)
        .env("CODEX_HOME", &home.codex_home)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(1);
    let scan = scanned(&out);
    assert_eq!(scan["sessions"], 12, "{scan:#}");
    let gemini = scan["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["agent"] == "gemini-cli")
        .unwrap();
    assert_eq!(
        gemini["resume"],
        "gemini --resume 6a20c2cd-1176-49ca-971a-fb9e1d759208"
    );
}

/// Run as root (a scan of every user's home, a container), `doctor
/// --write` leaves the session, and its backup, owned by the user whose
/// agent writes it: it once left them root's, and the agent could no
/// longer append. Skipped, saying so, where the test cannot give a file
/// away (not root).
#[test]
#[cfg(unix)]
fn a_repair_made_as_root_keeps_the_sessions_owner() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, path) =
        copy("tests/fixtures/transcripts/gemini_cli/session-2026-12-02T04-27-6a20c2cd.jsonl");
    if std::os::unix::fs::chown(&path, Some(4242), Some(4343)).is_err() {
        crate::common::skip(
            "a_repair_made_as_root_keeps_the_sessions_owner",
            "only root can give a file to another user",
        );
        return;
    }
    loopdbg()
        .args(["doctor", "--write", "--force", path.to_str().unwrap()])
        .assert()
        .code(0);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
    let backup = path.with_extension("jsonl.loopdbg-bak");
    let meta = std::fs::metadata(&backup).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
}

/// `doctor LINK --write` repairs the file the link leads to, keeps the
/// backup beside it as a file of its own, and leaves the link a link (it
/// once put the repair in the link's place and called a second link the
/// backup). The scan writes nothing a link inside a store leads it to.
#[test]
#[cfg(unix)]
fn a_session_reached_through_a_link_is_repaired_where_it_is_and_the_scan_does_not_follow() {
    let (dir, target) =
        copy("tests/fixtures/transcripts/gemini_cli/session-2026-12-02T04-27-6a20c2cd.jsonl");
    let link = dir.path().join("linked.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let original = std::fs::read(&target).unwrap();
    loopdbg()
        .args(["doctor", "--write", "--force", link.to_str().unwrap()])
        .assert()
        .code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let backup = target.with_extension("jsonl.loopdbg-bak");
    let meta = std::fs::symlink_metadata(&backup).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the backup is a file of its own"
    );
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    assert_ne!(std::fs::read(&target).unwrap(), original);

    // In a store: a project folder that is a link to elsewhere.
    let home = Home::plant();
    let elsewhere = home.home.parent().unwrap().join("elsewhere");
    let project = home.home.join(".gemini/tmp/ann-app");
    std::fs::rename(&project, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &project).unwrap();
    let chat = elsewhere.join("chats/session-2026-12-02T04-27-6a20c2cd.jsonl");
    let before = std::fs::read(&chat).unwrap();
    let out = home.doctor(&["--write", "--force", "--format", "json"]);
    let scan = scanned(&out);
    let gemini = scan["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["agent"] == "gemini-cli")
        .unwrap();
    assert!(
        gemini["written"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("symbolic link")),
        "{gemini:#}"
    );
    assert_eq!(std::fs::read(&chat).unwrap(), before);
}

/// opencode's sessions are rows of one database: their verdicts are kept
/// while the database and its write-ahead log are as they were (a reader's
/// open, which truncates the empty log, is no change), and every row is
/// judged again once opencode writes to it.
#[test]
fn a_databases_sessions_are_kept_until_the_database_changes() {
    let home = Home::plant();
    let cache = crate::common::scratch("scan-cache-db");
    let run = || {
        let mut cmd = loopdbg();
        cmd.args(["doctor", "--scan", "--format", "json"]);
        for var in loopdbg_corpus::stores::VARIABLES {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &home.home)
            .env("CODEX_HOME", &home.codex_home)
            .env("XDG_CACHE_HOME", &*cache);
        scanned(&cmd.assert().code(1))
    };
    let dir = home.home.join(".local/share/opencode");
    let age_db = || {
        for name in ["opencode.db", "opencode.db-wal"] {
            if dir.join(name).exists() {
                age(&dir.join(name));
            }
        }
    };
    age_db();
    let first = run();
    // The first read may leave the log beside the database (a new file):
    // as opencode's own runs leave it, aged.
    age_db();
    run();
    let kept = run();
    assert_eq!(kept["unchanged"], 12, "{kept:#}");
    assert_eq!(kept["unresumable"], first["unresumable"]);
    // opencode finishes the killed session's call: a write to the
    // database, so every row of it is read again.
    let db = rusqlite::Connection::open(dir.join("opencode.db")).unwrap();
    db.execute(
        "UPDATE part SET data = replace(data, '\"running\"', '\"completed\"')",
        [],
    )
    .unwrap();
    drop(db);
    let changed = run();
    assert_eq!(changed["unchanged"], 10, "{changed:#}");
}

/// A second scan of an unchanged home reads no session file again (each
/// verdict from the cache, the report the same); a file that changed is
/// read again, even aged back to an old time; `--no-cache` reads all;
/// `--write` reads again the sessions it will repair.
#[test]
fn a_second_scan_takes_unchanged_sessions_from_its_cache() {
    let home = Home::plant();
    let cache = crate::common::scratch("scan-cache");
    let run = |args: &[&str], code: i32| {
        let mut cmd = loopdbg();
        cmd.args(["doctor", "--scan", "--format", "json"])
            .args(args);
        for var in loopdbg_corpus::stores::VARIABLES {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &home.home)
            .env("CODEX_HOME", &home.codex_home)
            .env("XDG_CACHE_HOME", &*cache);
        scanned(&cmd.assert().code(code))
    };
    let first = run(&[], 1);
    assert_eq!(first["unchanged"], 0);
    assert!(cache.join("loopdbg/scan-cache.json").exists());
    let second = run(&[], 1);
    // Ten files; opencode's two sessions are rows of a database written
    // just now (too recent to keep: a_databases_sessions_are_kept_…).
    assert_eq!(second["unchanged"], 10, "{second:#}");
    assert_eq!(second["unresumable"], first["unresumable"]);
    assert_eq!(second["sessions"], first["sessions"]);
    let mut text = loopdbg();
    text.args(["doctor", "--scan"]);
    for var in loopdbg_corpus::stores::VARIABLES {
        text.env_remove(var);
    }
    let text = text
        .env("HOME", &home.home)
        .env("CODEX_HOME", &home.codex_home)
        .env("XDG_CACHE_HOME", &*cache)
        .assert()
        .code(1);
    let said = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(
        said.ends_with("(10 of them unchanged since the last scan: their verdicts kept, not read again; --no-cache reads every one)\n"),
        "{said}"
    );

    // A clean session becomes one no resume can send: its stamp changed.
    let changed = home
        .home
        .join(".claude/projects/-home-ann-app/c0ffee00-0000-4000-8000-000000000002.jsonl");
    std::fs::copy(
        "tests/fixtures/transcripts/claude_code_v2/doctor_invalid_id.jsonl",
        &changed,
    )
    .unwrap();
    age(&changed);
    let third = run(&[], 1);
    assert_eq!(third["unchanged"], 9, "{third:#}");
    assert_eq!(
        standing(&third, "refused"),
        [
            "c0ffee00-0000-4000-8000-000000000001.jsonl",
            "c0ffee00-0000-4000-8000-000000000002.jsonl",
            "session-2026-12-02T04-27-6a20c2cd.jsonl"
        ]
    );
    let fresh = run(&["--no-cache"], 1);
    assert_eq!(fresh["unchanged"], 0);
    assert_eq!(fresh["unresumable"], third["unresumable"]);

    // --write takes the clean ones from the cache and repairs the three.
    let written = run(&["--write"], 0);
    assert_eq!(written["unchanged"], 7, "{written:#}");
    let repaired = written["unresumable"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["written"]["outcome"] == "written")
        .count();
    assert_eq!(repaired, 3, "{written:#}");
    // The repaired files changed: the next scan reads them again (not
    // the verdict kept before the repair) and finds them resumable.
    age(&changed);
    let after = run(&[], 0);
    assert_eq!(after["unchanged"], 7, "{after:#}");
    assert_eq!(standing(&after, "refused"), Vec::<String>::new());
}
