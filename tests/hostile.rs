//! Hostile input: no panic, no hang, nothing destroyed. One regression test
//! per finding of the fuzzing and review round (issue 11).

use crate::common::{loopdbg, scratch};
use std::path::PathBuf;

use predicates::prelude::*;

const T: &str = "tests/fixtures/transcripts";

#[test]
fn an_error_past_column_65536_is_located_without_a_panic() {
    let dir = scratch("long");
    let file = dir.join("minified.json");
    let text = format!(
        r#"{{"user": "x", "model": {{"script": [{{"reply": {{"text": "{}", "bogus": 1}}}}]}}}}"#,
        "a".repeat(200_000)
    );
    std::fs::write(&file, text).unwrap();
    for command in [vec!["run"], vec!["lint"], vec!["compare"]] {
        let out = loopdbg()
            .args(&command)
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                ":1:200065: model.script[0].reply.bogus: unknown field `bogus`",
            ))
            .get_output()
            .stderr
            .clone();
        // The snippet is a window around the column, not the whole line.
        assert!(out.len() < 2_000, "{} bytes of stderr", out.len());
    }
}

#[test]
fn a_json_lines_snippet_shows_the_real_line() {
    let dir = scratch("jsonl");
    let file = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(format!("{T}/dataset.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(&file, format!("{first}\n{first}\n{{\"messages\": [}}\n")).unwrap();
    loopdbg()
        .arg("check")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(":3:"))
        .stderr(predicate::str::contains(" 3 │ {\"messages\": [}"));
}

#[test]
fn a_byte_order_mark_is_accepted_and_bad_utf8_is_located() {
    let dir = scratch("utf8");
    let bom = dir.join("bom.json");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(std::fs::read("sessions/weather.json").unwrap());
    std::fs::write(&bom, bytes).unwrap();
    loopdbg().arg("run").arg(&bom).assert().success();
    let mut capture = b"\xef\xbb\xbf".to_vec();
    capture.extend(std::fs::read(format!("{T}/anthropic_clean.json")).unwrap());
    let bom_capture = dir.join("bom_capture.json");
    std::fs::write(&bom_capture, capture).unwrap();
    loopdbg().arg("check").arg(&bom_capture).assert().code(0);

    let bad = dir.join("bad.json");
    std::fs::write(&bad, b"{\"user\": \"h\xffi\"}").unwrap();
    loopdbg()
        .arg("run")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad.json:1:12: expected UTF-8 text: byte 0xff at byte 12 of line 1 is not UTF-8",
        ));
    let bad_lines = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(format!("{T}/dataset.jsonl")).unwrap();
    let mut bytes = good.lines().next().unwrap().as_bytes().to_vec();
    bytes.extend(b"\n{\"messages\": \"\xfe\"}\n");
    std::fs::write(&bad_lines, bytes).unwrap();
    loopdbg()
        .arg("check")
        .arg(&bad_lines)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad.jsonl:2:15: expected UTF-8 text: byte 0xfe",
        ));
}

#[test]
fn special_files_are_refused_not_read_forever() {
    loopdbg()
        .args(["check", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/dev/zero: not a regular file or a pipe",
        ));
    loopdbg()
        .args(["run", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a regular file"));
}

/// A new FIFO in a scratch folder of its own (removed when the folder's
/// guard is dropped).
fn new_fifo(name: &str) -> (crate::common::Scratch, std::path::PathBuf) {
    let dir = scratch(name);
    let fifo = dir.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    (dir, fifo)
}

/// Writes `data` into a new FIFO from another thread while `command`
/// (given the FIFO's path) reads it; the command must end on its own.
fn through_a_fifo(
    name: &str,
    data: Vec<u8>,
    command: impl FnOnce(&std::path::Path) -> assert_cmd::assert::Assert,
) -> assert_cmd::assert::Assert {
    let (_dir, fifo) = new_fifo(name);
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(writer_path, data).unwrap());
    let done = command(&fifo);
    writer.join().unwrap();
    done
}

/// An id or a tool name carrying escapes (an OSC 52 clipboard write, a
/// screen clear, a C1 CSI, a right-to-left override) is printed inert by
/// `diff` and `run --export md`, with the report's own lines kept.
#[test]
fn diff_and_run_print_escapes_inert() {
    let dir = scratch("escapes-diff");
    let bad = "call_\u{1b}]52;c;aGk=\u{7}x\u{9b}31m\u{202e}";
    let mut body = serde_json::json!({"model": "gpt-4.1", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": bad, "type": "function",
            "function": {"name": "get\u{1b}[2Jw", "arguments": "{}"}}]}
    ]});
    let a = dir.join("a.jsonl");
    std::fs::write(&a, format!("{body}\n")).unwrap();
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"role": "tool", "tool_call_id": bad, "content": "ok"}));
    let b = dir.join("b.jsonl");
    std::fs::write(&b, format!("{body}\n")).unwrap();
    let runs: [Vec<&std::ffi::OsStr>; 2] = [
        vec!["diff".as_ref(), a.as_os_str(), b.as_os_str()],
        vec![
            "run".as_ref(),
            b.as_os_str(),
            "--export".as_ref(),
            "md".as_ref(),
        ],
    ];
    for args in runs {
        let out = loopdbg().args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("call_\\u{1b}]52"), "{args:?}: {text}");
        for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
            assert!(!text.contains(c), "{args:?} printed {c:?} raw");
        }
        assert!(text.lines().count() > 3, "{args:?} kept its lines");
    }
    // `record` names the ids it saw on stderr: inert too (the call left
    // without a result was printed raw).
    let out = loopdbg()
        .args(["record".as_ref(), a.as_os_str(), "-o".as_ref()])
        .arg(dir.join("recorded.json"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(!said.contains(c), "record printed {c:?} raw: {said}");
    }
}

/// `check --fix -o FIFO --force` writes the repair into the FIFO (a
/// reader takes it) and ends: what is not a regular file is not read back
/// to be checked again (it used to wait there for another writer).
#[test]
fn a_repair_written_into_a_fifo_is_not_read_back() {
    let (_dir, fifo) = new_fifo("fifo-fix");
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(reader_path).unwrap());
    loopdbg()
        .arg("check")
        .arg(format!("{T}/dataset.jsonl"))
        .args(["--fix", "synthesize", "--force", "-o"])
        .arg(&fifo)
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stderr(predicate::str::contains("not checked again"));
    let repaired = reader.join().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&repaired).lines().count(),
        4,
        "every line written"
    );
}

/// Every command that takes a file reads it once, so a FIFO (or a pipe
/// from a process substitution) works: `check`, a replay's export,
/// `record`, and a session run from one.
#[test]
fn a_fifo_is_read_once() {
    let dataset = || std::fs::read(format!("{T}/dataset.jsonl")).unwrap();
    let out = through_a_fifo("fifo-check", dataset(), |fifo| {
        loopdbg()
            .arg("check")
            .arg(fifo)
            .args(["--format", "json"])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(1)
    });
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["conversations"], 3);
    let capture = std::fs::read(format!("{T}/proxy/openai_sdk_first_only.jsonl")).unwrap();
    let export = through_a_fifo("fifo-export", capture.clone(), |fifo| {
        loopdbg()
            .arg("run")
            .arg(fifo)
            .args(["--export", "json"])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .success()
    });
    let v: serde_json::Value = serde_json::from_slice(&export.get_output().stdout).unwrap();
    assert!(
        v["trace"]["steps"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    let dir = scratch("fifo-record-out");
    let session = dir.join("recorded.json");
    through_a_fifo("fifo-record", capture, |fifo| {
        loopdbg()
            .arg("record")
            .arg(fifo)
            .arg("-o")
            .arg(&session)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .success()
    });
    assert!(session.exists());
    let weather = std::fs::read("sessions/weather.json").unwrap();
    through_a_fifo("fifo-session", weather, |fifo| {
        loopdbg()
            .arg("run")
            .arg(fifo)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .success()
            .stdout(predicate::str::contains("end"))
    });
}

#[test]
fn fix_never_writes_over_the_input_through_a_hard_link() {
    let dir = scratch("hardlink");
    let input = dir.join("in.jsonl");
    std::fs::copy(format!("{T}/dataset.jsonl"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let link = dir.join("link.jsonl");
    std::fs::hard_link(&input, &link).unwrap();
    for force in [false, true] {
        let mut cmd = loopdbg();
        cmd.arg("check")
            .arg(&input)
            .args(["--fix", "synthesize", "-o"])
            .arg(&link);
        if force {
            cmd.arg("--force");
        }
        cmd.assert()
            .code(2)
            .stderr(predicate::str::contains("refusing to overwrite the input"));
        assert_eq!(std::fs::read(&input).unwrap(), before, "input intact");
    }
}

#[test]
fn fix_refuses_an_existing_output_and_never_leaves_a_partial_one() {
    let dir = scratch("atomic");
    let out = dir.join("out.jsonl");
    std::fs::write(&out, "precious\n").unwrap();
    loopdbg()
        .arg("check")
        .arg(format!("{T}/dataset.jsonl"))
        .args(["--fix", "synthesize", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "exists; pass --force to replace it",
        ));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");

    // A bad line midway: with --force, the old output is still intact.
    let input = dir.join("midway.jsonl");
    let good = std::fs::read_to_string(format!("{T}/dataset.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(&input, format!("{first}\n{first}\n{{oops\n{first}\n")).unwrap();
    loopdbg()
        .arg("check")
        .arg(&input)
        .args(["--fix", "synthesize", "--force", "-o"])
        .arg(&out)
        .assert()
        .code(2);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".loopdbg-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // And a good run with --force replaces it whole.
    loopdbg()
        .arg("check")
        .arg(format!("{T}/dataset.jsonl"))
        .args(["--fix", "synthesize", "--force", "-o"])
        .arg(&out)
        .assert()
        .code(0);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().lines().count(),
        good.lines().count()
    );
}

#[test]
fn a_sub_agent_may_not_reach_outside_the_session_folder() {
    let dir = scratch("agents");
    let session = std::fs::read_to_string("sessions/fault_subagent.json").unwrap();
    for (name, agent) in [
        ("passwd", "/etc/passwd"),
        ("zero", "/dev/zero"),
        ("up", "../x.json"),
    ] {
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, session.replace("child_research.json", agent)).unwrap();
        loopdbg()
            .arg("run")
            .arg(&file)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "lies outside the session's folder",
            ))
            .stderr(predicate::str::contains("root:").not());
    }
}

#[test]
fn control_characters_from_input_are_printed_inert() {
    let dir = scratch("escapes");
    let file = dir.join("evil.json");
    // A tool name with a clear-screen, an OSC 52 clipboard write and a bidi
    // override, which lint names in its output.
    std::fs::write(
        &file,
        r#"{"user": "x", "tools": [{"name": "w\u001b[2J\u001b]52;c;aGk=\u0007\u202e"}], "model": {"script": [{"reply": {"text": "ok\u202e"}}]}}"#,
    )
    .unwrap();
    for args in [
        vec!["lint"],
        vec!["run"],
        vec!["run", "--format", "json"],
        vec!["compare"],
    ] {
        let out = loopdbg().args(&args).arg(&file).output().unwrap();
        let all = [out.stdout, out.stderr].concat();
        assert!(
            !all.contains(&0x1b),
            "{args:?}: a raw escape reached the terminal"
        );
        assert!(!all.contains(&0x07), "{args:?}: a raw bell");
        assert!(
            !String::from_utf8_lossy(&all).contains('\u{202e}'),
            "{args:?}: a raw bidi override"
        );
    }
    // JSON stays the same data: its escapes parse back to the text.
    let out = loopdbg()
        .args(["run", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["final_text"], "ok\u{202e}");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} run sessions/large_loop.json --format json | head -c 10 > /dev/null; echo ${{PIPESTATUS:-}}",
            env!("CARGO_BIN_EXE_loopdbg")
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut loopdbg_alone = std::process::Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["run", "sessions/large_loop.json", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(loopdbg_alone.stdout.take());
    let status = loopdbg_alone.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "a reader that left is not a failure"
    );
}

fn write_session(dir: &std::path::Path, name: &str, value: serde_json::Value) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, serde_json::to_string(&value).unwrap()).unwrap();
    file
}

#[test]
fn wide_inputs_stay_near_linear() {
    let dir = scratch("wide");
    // 4,000 calls in one reply: recorded, paired and counted in linear work.
    let calls: Vec<serde_json::Value> = (0..4000)
        .map(|i| serde_json::json!({"id": format!("c{i}"), "name": "t", "args": {"i": i}}))
        .collect();
    let wide = write_session(
        &dir,
        "wide.json",
        serde_json::json!({"user": "go", "tools": [{"name": "t"}],
            "model": {"script": [{"when": {"round": 1}, "reply": {"tool_calls": calls}}, {"reply": {"text": "done"}}]}}),
    );
    loopdbg()
        .arg("run")
        .arg(&wide)
        .args(["--format", "json"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success();
    // 100,000 tools: the duplicate check and lint's locations stay linear.
    let tools: Vec<serde_json::Value> = (0..100_000)
        .map(|i| serde_json::json!({"name": format!("t{i}")}))
        .collect();
    let many = write_session(
        &dir,
        "tools.json",
        serde_json::json!({"user": "go", "tools": tools, "model": {"script": [{"reply": {"text": "done"}}]}}),
    );
    for command in ["run", "lint"] {
        loopdbg()
            .arg(command)
            .arg(&many)
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .success();
    }
}

#[test]
fn sub_agents_fanning_out_run_once_each() {
    let dir = scratch("fanout");
    for level in 1..=5 {
        let (tools, script) = if level < 5 {
            let tools: Vec<serde_json::Value> = (0..5)
                .map(|k| serde_json::json!({"name": format!("a{k}"), "agent": format!("s{}.json", level + 1)}))
                .collect();
            let calls: Vec<serde_json::Value> = (0..5)
                .map(|k| serde_json::json!({"id": format!("c{k}"), "name": format!("a{k}"), "args": {}}))
                .collect();
            (
                tools,
                serde_json::json!([{"when": {"round": 1}, "reply": {"tool_calls": calls}}, {"reply": {"text": "done"}}]),
            )
        } else {
            (vec![], serde_json::json!([{"reply": {"text": "leaf"}}]))
        };
        write_session(
            &dir,
            &format!("s{level}.json"),
            serde_json::json!({"user": format!("level {level}"), "tools": tools, "model": {"script": script}}),
        );
    }
    loopdbg()
        .arg("run")
        .arg(dir.join("s1.json"))
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success();
}

#[test]
fn limits_are_located_errors() {
    let dir = scratch("limits");
    let calls: Vec<serde_json::Value> = (0..200)
        .map(|i| serde_json::json!({"id": format!("c{i}"), "name": "t", "args": {}}))
        .collect();
    let budget = write_session(
        &dir,
        "budget.json",
        serde_json::json!({"user": "x", "tools": [{"name": "t"}], "strategy": {"max_rounds": 100000},
            "model": {"script": [{"reply": {"tool_calls": calls}}]}}),
    );
    loopdbg()
        .arg("run")
        .arg(&budget)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("budget.json:1:"))
        .stderr(predicate::str::contains(
            "could make 20000000 calls, more than the 200000 a run may make",
        ));
    let small = write_session(
        &dir,
        "small.json",
        serde_json::json!({"user": "x", "tools": [{"name": "t"}],
            "model": {"script": [{"reply": {"tool_calls": calls}}]}}),
    );
    loopdbg()
        .arg("run")
        .arg(&small)
        .args(["--max-rounds", "100000"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--max-rounds: 100000 rounds of up to 200 calls",
        ));
    let too_wide: Vec<serde_json::Value> = (0..10_001)
        .map(|i| serde_json::json!({"id": format!("c{i}"), "name": "t", "args": {}}))
        .collect();
    let wide = write_session(
        &dir,
        "wide.json",
        serde_json::json!({"user": "x", "tools": [{"name": "t"}], "model": {"script": [{"reply": {"tool_calls": too_wide}}]}}),
    );
    loopdbg()
        .arg("run")
        .arg(&wide)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "10001 calls, more than the 10000 one reply may make",
        ));
    let slow = write_session(
        &dir,
        "slow.json",
        serde_json::json!({"user": "x", "tools": [{"name": "t", "latency_ms": 946_000_000_000_000u64, "timeout_ms": 10}],
            "model": {"script": [{"reply": {"text": "x"}}]}}),
    );
    loopdbg()
        .arg("run")
        .arg(&slow)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tools[0].latency_ms: 946000000000000 ms is longer than a day",
        ));
}

#[test]
fn emit_selects_requests_and_refuses_gigabytes_by_default() {
    loopdbg()
        .args(["run", "sessions/large_loop.json", "--emit", "anthropic"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "pick one with --request N or --last, or pass --all",
        ));
    let last = loopdbg()
        .args([
            "run",
            "sessions/large_loop.json",
            "--emit",
            "openai",
            "--last",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let body: serde_json::Value = serde_json::from_slice(&last.stdout).unwrap();
    assert!(body["messages"].as_array().unwrap().len() > 1000);
    assert!(String::from_utf8_lossy(&last.stderr).starts_with("# request 5000 (round 5000)"));
    let second = loopdbg()
        .args([
            "run",
            "sessions/weather.json",
            "--emit",
            "gemini",
            "--request",
            "2",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let body: serde_json::Value = serde_json::from_slice(&second).unwrap();
    assert_eq!(body["contents"].as_array().unwrap().len(), 3);
    loopdbg()
        .args([
            "run",
            "sessions/weather.json",
            "--emit",
            "gemini",
            "--request",
            "9",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--request 9: the run sends 2 request(s)",
        ));
}

#[test]
fn a_missing_sub_agent_is_located_in_the_session_that_names_it() {
    let dir = scratch("missing-agent");
    let session = std::fs::read_to_string("sessions/fault_subagent.json").unwrap();
    let file = dir.join("parent.json");
    std::fs::write(&file, session.replace("child_research.json", "gone.json")).unwrap();
    loopdbg()
        .arg("run")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "parent.json:7:15: agent `gone.json`: cannot read:",
        ));
}

/// Ctrl-C while an output is being written removes the hidden temporary
/// file and ends the process as SIGINT does; nothing is left beside the
/// output (issue 23, item 5: a `.loopdbg-*` of up to 100 MB stayed).
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_write_leaves_no_temporary_file() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("sigint");
    let line = r#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"w","input":{}}]}]}"#;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("loopdbg"))
        .args(["check", "--fix", "synthesize", "-", "-o"])
        .arg(dir.join("out.jsonl"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    for _ in 0..3 {
        writeln!(input, "{line}").unwrap();
    }
    input.flush().unwrap();
    // The input stays open: the repair waits for more, its temporary file
    // beside the output.
    let temporary = || {
        std::fs::read_dir(&*dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(".loopdbg-"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !temporary() {
        assert!(
            std::time::Instant::now() < deadline,
            "no temporary file appeared"
        );
        std::thread::yield_now();
    }
    assert!(unsafe_free_kill(child.id(), "INT"), "kill -INT failed");
    let status = child.wait().unwrap();
    drop(input);
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert!(!temporary(), "the temporary file was left behind");
    assert!(!dir.join("out.jsonl").exists());
}

/// `kill -SIG pid`, without `unsafe` in the tests.
#[cfg(unix)]
fn unsafe_free_kill(pid: u32, signal: &str) -> bool {
    std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .is_ok_and(|s| s.success())
}

/// `-o` naming the session being run is refused even with `--force`: the
/// export would replace the file it was made from (issue 23, item 5).
#[cfg(unix)]
#[test]
fn an_export_never_replaces_the_session_being_run() {
    let dir = scratch("self-export");
    let session = dir.join("weather.json");
    let original = std::fs::read_to_string("sessions/weather.json").unwrap();
    std::fs::write(&session, &original).unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&session, &link).unwrap();
    for target in [&session, &link] {
        loopdbg()
            .args([
                "run",
                session.to_str().unwrap(),
                "--export",
                "json",
                "--force",
                "-o",
            ])
            .arg(target)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("that is the session being run"));
    }
    assert_eq!(std::fs::read_to_string(&session).unwrap(), original);
}

/// A loop that leaves a new id unpaired every round carries all of them in
/// every later request; what the trace keeps of each request stays
/// bounded, so a run's memory grows with its rounds, not their square
/// (issue 23, item 11: `large_loop.json` took 1.6 GB, 20,000 rounds 5.6 GB).
#[test]
fn a_violation_stays_small_however_many_ids_are_left() {
    let rounds = 1500;
    let script: Vec<serde_json::Value> = (1..=rounds)
        .map(|r| {
            serde_json::json!({"when": {"round": r}, "reply": {"tool_calls": [
                {"id": format!("kept_{r}"), "name": "t", "args": {}},
                {"id": format!("left_{r}"), "name": "t", "args": {}}]}})
        })
        .collect();
    let text = serde_json::json!({"user": "go", "tools": [{"name": "t", "table": [{"args": {}, "result": 1}]}],
        "model": {"script": script}, "strategy": {"extract": "first", "max_rounds": rounds}})
    .to_string();
    let session = loopdbg_engine::Session::parse("left.json", &text).unwrap();
    let trace = loopdbg_engine::run(&session, &loopdbg_engine::Strategy::for_session(&session));
    let last = trace.violations.last().unwrap();
    assert_eq!(last.unpaired, rounds as usize - 1);
    assert!(
        last.message.contains("… and 1487 more call(s)"),
        "{}",
        last.message
    );
    for v in &trace.violations {
        assert!(v.ids.len() <= loopdbg_engine::trace::LISTED_IDS);
        assert!(v.message.len() < 400, "{}", v.message);
    }
    // The handout writes out the first and last requests, and says how many
    // it left out between them.
    let opts = loopdbg_handout::Options {
        kind: loopdbg_handout::Kind::Markdown,
        format: loopdbg_formats::provider::Format::Anthropic,
        model: "m".into(),
        redact: false,
        redact_patterns: Vec::new(),
        origin: "left.json".into(),
        prices: std::sync::Arc::new(loopdbg_formats::prices::Prices::builtin()),
    };
    let md = loopdbg_handout::render(&session, &trace, &opts);
    assert_eq!(md.matches("### Request ").count(), 6);
    assert!(
        md.contains("… 1494 request(s) left out (rounds 5 to 1498)"),
        "{}",
        &md[..2000]
    );
    assert!(md.contains("### Request 1500 (round 1500)"));
}

/// A YAML cassette nested two million brackets deep (a 2 KB `.gz`) is
/// refused by its depth, located, before the parser (whose time is
/// quadratic in it) sees it: it ran past a minute (issue 23, item 10).
#[test]
fn deeply_nested_yaml_is_refused_before_parsing() {
    use std::io::Write;
    let dir = scratch("yaml-depth");
    let file = dir.join("bomb.yaml.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(b"interactions:\n- request: ").unwrap();
    gz.write_all(&vec![b'['; 2_000_000]).unwrap();
    std::fs::write(&file, gz.finish().unwrap()).unwrap();
    loopdbg()
        .args(["check", file.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bomb.yaml.gz:2:139: the YAML nests deeper than 128 levels",
        ));
}

/// A JSON Lines line over 1 GiB is said, by its number, and the lines
/// after it are still checked (issue 23, item 13: nothing after it was).
/// The 1.1 GB line goes through a pipe, so no disk holds it.
#[test]
fn the_lines_after_one_over_a_gibibyte_are_still_checked() {
    use std::io::Write;
    let line = r#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"w","input":{}}]},{"role":"user","content":"go"}]}"#;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("loopdbg"))
        .args(["check", "-"])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        writeln!(input, "{line}").unwrap();
        input.write_all(b"{\"x\":\"").unwrap();
        let block = vec![b'a'; 1 << 20];
        for _ in 0..1100 {
            input.write_all(&block).unwrap();
        }
        input.write_all(b"\"}\n").unwrap();
        writeln!(input, "{line}").unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout.contains("<stdin>:3 (anthropic, 3 messages): 1 problem(s)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("line 2 is longer than 1024 MiB, the longest line loopdbg reads: skipped; the lines after it are read"),
        "{stderr}"
    );
}

/// Invalid UTF-8 in a document read whole (a YAML cassette, a HAR file)
/// is located by line and column like every other error (issue 23,
/// item 20: it had neither).
#[test]
fn invalid_utf8_in_a_whole_document_is_located() {
    let dir = scratch("utf8-whole");
    let yaml = dir.join("bad.yaml");
    std::fs::write(&yaml, b"interactions:\n- request:\n    body: \"caf\xe9\"\n").unwrap();
    let har = dir.join("bad.har");
    std::fs::write(&har, b"{\"log\": {\"entries\": [\n{\"x\": \"\xff\"}]}}").unwrap();
    for (file, at) in [(&yaml, "bad.yaml:3:15: "), (&har, "bad.har:2:8: ")] {
        loopdbg()
            .args(["check", file.to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{at}expected UTF-8 text")));
    }
}

/// Text from a session reaches no output raw: the text run, `diff`, and
/// the Markdown and HTML handouts printed to stdout escape terminal
/// controls (OSC 52, screen clear), bidi overrides and Unicode tag
/// characters, and Markdown shows HTML from input as text (issue 23,
/// item 19).
#[test]
fn escapes_bidi_tags_and_html_from_input_stay_inert_in_every_output() {
    let dir = scratch("inert-all");
    let mut session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("sessions/weather.json").unwrap()).unwrap();
    session["title"] = "T\u{1b}]52;c;aGk=\u{7} \u{202e} <script>alert(1)</script> \u{e0041}".into();
    let script = session["model"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .next()
        .unwrap();
    let last = script.as_array_mut().unwrap().last_mut().unwrap();
    last["reply"]["text"] = "done \u{1b}[2J <img src=x onerror=alert(1)> \u{2066}x".into();
    let file = dir.join("evil.json");
    std::fs::write(&file, session.to_string()).unwrap();
    let file = file.to_str().unwrap();
    for args in [
        vec!["run", file],
        vec!["diff", file],
        vec!["run", file, "--export", "md"],
        vec!["run", file, "--export", "html"],
        vec!["run", file, "--export", "json"],
    ] {
        let out = loopdbg().args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        for raw in ['\u{1b}', '\u{7}', '\u{202e}', '\u{2066}', '\u{e0041}'] {
            assert!(!text.contains(raw), "{args:?} printed {:?} raw", raw);
        }
        if args.contains(&"md") {
            assert!(
                !text.contains("<script>") && !text.contains("<img"),
                "{text}"
            );
            assert!(text.contains("&lt;script&gt;"), "{text}");
        }
    }
}

/// Issue 59's goal, held by the real binary: no input under 1 MB takes
/// over 1 GB. Each input below (each under 1 MB, each a finding of the
/// round: it took 4–15 GB or ran past a minute) is checked under a 1 GiB
/// address-space limit (`ulimit -v`), and ends with a verdict or a
/// located refusal — never an abort, which is what running out of the
/// limit is.
#[cfg(target_os = "linux")]
#[test]
fn inputs_under_a_megabyte_are_checked_within_a_gibibyte() {
    use std::io::Write;
    let dir = scratch("under-a-megabyte");
    let gz = |parts: &[(&[u8], usize)]| {
        // Members one after another (a gzip stream may hold many): a run
        // of 100 MB made of one compressed megabyte, written 100 times.
        let mut out = Vec::new();
        for (bytes, times) in parts {
            let mut one = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            one.write_all(bytes).unwrap();
            let member = one.finish().unwrap();
            for _ in 0..*times {
                out.extend_from_slice(&member);
            }
        }
        out
    };
    let zeros = "0,".repeat(1 << 19);
    let inputs: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            // 15 GB before: a document read whole, inflated whole.
            "bomb.json.gz",
            gz(&[(b"{\"messages\":[", 1), (zeros.as_bytes(), 100), (b"0]}", 1)]),
            "refused as a decompression bomb",
        ),
        (
            // Under the inflation floor, but 8 million values: 244 MiB of
            // them is where the parse stops.
            "values.json.gz",
            gz(&[
                (b"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"name\":\"t\",\"input_schema\":[", 1),
                (zeros.as_bytes(), 15),
                (b"0]}]}", 1),
            ]),
            "would take more than",
        ),
        (
            // 4 GB before: one observation of 100 KB copied for each of
            // 20,000 ids. SWE-agent sends it once, for the first id.
            "ids.traj",
            serde_json::to_vec(&serde_json::json!({
                "trajectory": [],
                "info": {},
                "history": [
                    {"role": "system", "content": "s"},
                    {"role": "assistant", "content": "a", "tool_calls": [
                        {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                    ]},
                    {"role": "tool", "content": "x".repeat(100_000),
                     "tool_call_ids": (0..20_000).map(|i| format!("c{i}")).collect::<Vec<_>>()},
                ],
            }))
            .unwrap(),
            "",
        ),
        (
            // Streamed text joined by copying: quadratic in the events.
            "stream.jsonl",
            {
                let mut text = String::from(
                    "{\"type\":\"init\",\"session_id\":\"s\",\"model\":\"gemini-2.5-pro\"}\n{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}\n",
                );
                let event = format!(
                    "{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"{}\",\"delta\":true}}\n",
                    "w".repeat(40)
                );
                while text.len() < 950_000 {
                    text.push_str(&event);
                }
                text.into_bytes()
            },
            "",
        ),
    ];
    let bin = assert_cmd::cargo::cargo_bin("loopdbg");
    for (name, bytes, says) in inputs {
        assert!(bytes.len() < 1 << 20, "{name} is {} bytes", bytes.len());
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", "ulimit -v 1048576 && exec \"$0\" check \"$1\""])
            .arg(&bin)
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{name}: {:?}\n{stderr}",
            out.status
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("memory allocation"),
            "{name}: {stderr}"
        );
        assert!(
            stderr.contains(says),
            "{name} should say {says:?}: {stderr}"
        );
    }
}
