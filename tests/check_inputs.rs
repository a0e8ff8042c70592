//! `loopdbg check` on the inputs people have: formats detected by content
//! (also behind bookkeeping lines), every file of a run checked even when
//! one cannot be read, standard input, a forced format that does not fit,
//! nothing to check, and one JSON record per conversation for sharded runs.

use crate::common::{loopdbg, scratch};
use predicates::prelude::*;
use serde_json::Value;

const T: &str = "tests/fixtures/transcripts";

/// A fixture written to a scratch folder with `bad` inserted before line
/// `at` (0-based): the folder, the file, and the fixture as it was.
fn with_a_bad_line(
    name: &str,
    fixture: &str,
    at: usize,
    bad: &str,
) -> (crate::common::Scratch, std::path::PathBuf, String) {
    let dir = scratch(name);
    let file = dir.join(fixture.replace('/', "_"));
    let good = std::fs::read_to_string(format!("{T}/{fixture}")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(at, bad);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    (dir, file, good)
}

#[test]
fn every_format_is_detected_by_content_and_named() {
    for (file, format) in [
        ("claude_code_v2/parallel.jsonl", "claude-code"),
        ("claude_code_v2/compact.jsonl", "claude-code"),
        ("codex/rollout-2026-11-03T08-00-00-clean.jsonl", "codex"),
        (
            "gemini_cli/session-2026-11-03T09-00-8f0e1c2d.jsonl",
            "gemini-cli",
        ),
        ("gemini_clean.json", "gemini"),
        ("responses_string_input.json", "responses"),
        ("anthropic_server_tools.json", "anthropic"),
        ("openai_clean.json", "openai"),
    ] {
        loopdbg()
            .args(["check", &format!("{T}/{file}")])
            .assert()
            .code(0)
            .stdout(predicate::str::contains(format!("{T}/{file} ({format}): ")));
    }
}

#[test]
fn codex_and_gemini_cli_logs_name_the_line_of_the_dangling_call() {
    loopdbg()
        .args(["check", "--strict", &format!("{T}/codex/rollout-2026-11-03T08-10-00-interrupted.jsonl")])
        .assert()
        .code(1)
        // Codex fills in `aborted` for a call without output before every
        // request (and the model answered the next one): a warning, never
        // a 400, at the call's line.
        .stdout(predicate::str::contains(
            "line 5 payload  unanswered_call (warning)  [call_Wc1]\n    no output answers call_Wc1 in the rollout; Codex sends `aborted` as its output right after the call",
        ))
        .stdout(predicate::str::contains("(0 a provider would reject with a 400)"));
    loopdbg()
        .args(["check", &format!("{T}/gemini_cli/session-2026-11-03T09-30-5d6e7f80.jsonl")])
        .assert()
        // A warning alone: it passes (--strict fails on it).
        .code(0)
        // The call interrupted, then a prompt: the call is answered by
        // text, which gemini-2.5-pro (the model of this log) accepts.
        .stdout(predicate::str::contains("unanswered_call (warning)  [run_shell_command-1762162203000-d4]"))
        .stdout(predicate::str::contains(
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        ))
        .stdout(predicate::str::contains("(the request is for gemini-2.5-pro)"));
}

#[test]
fn a_rewound_gemini_cli_call_is_gone_from_the_history() {
    // m5's call awaited approval when the user rewound to before m4.
    loopdbg()
        .args([
            "check",
            &format!("{T}/gemini_cli/session-2026-11-03T09-00-8f0e1c2d.jsonl"),
            "--format",
            "json",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\"problems\": 0"));
}

#[test]
fn an_unreadable_file_is_reported_and_the_others_are_still_checked() {
    let out = loopdbg()
        .args([
            "check",
            &format!("{T}/anthropic_parallel_one_missing.json"),
            "tests/fixtures/bad/truncated_json.json",
            "nope.json",
            &format!("{T}/openai_clean.json"),
            "--format",
            "json",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tests/fixtures/bad/truncated_json.json:4:1:",
        ))
        .stderr(predicate::str::contains("nope.json: cannot read"))
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 4);
    assert_eq!(
        v["files"][0]["results"][0]["findings"][0]["kind"],
        "unanswered_call"
    );
    assert_eq!(v["files"][1]["errors"][0]["line"], 4);
    assert_eq!(v["files"][1]["errors"][0]["column"], 1);
    assert!(
        v["files"][2]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot read")
    );
    assert_eq!(v["files"][3]["conversations"], 1);
    assert_eq!(v["unreadable"], 2);
}

#[test]
fn a_bad_line_does_not_hide_the_other_lines() {
    let (dir, file, good) = with_a_bad_line("badline", "dataset.jsonl", 1, "{\"messages\": [");
    let out = loopdbg()
        .arg("check")
        .arg(&file)
        .args(["--format", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(":2:"))
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["conversations"],
        good.lines().filter(|l| !l.trim().is_empty()).count()
    );
    assert_eq!(v["files"][0]["errors"][0]["line"], 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_agent_log_cut_mid_line_is_checked_up_to_the_cut() {
    // Claude Code was killed while it wrote the last line: the events
    // before it are one conversation, checked; the half line is reported
    // where it stops, and the run says it could not read everything.
    let file = format!("{T}/claude_code_v2/modern_cut_last_line.jsonl");
    loopdbg()
        .args(["check", &file])
        .assert()
        .code(2)
        .stdout(predicate::str::contains(format!(
            "{file} (claude-code): 1 conversation(s), no problems in what could be read; 1 part(s) could not be read"
        )))
        .stderr(predicate::str::contains(format!(
            "{file}:14:108: expected one JSON value per line"
        )));
}

#[test]
fn a_bad_line_in_the_middle_of_a_log_leaves_the_rest_checked() {
    let (dir, file, _) = with_a_bad_line(
        "badlogline",
        "claude_code_interrupted.jsonl",
        2,
        "{\"type\":\"user\",\"message\":",
    );
    let out = loopdbg()
        .arg("check")
        .arg(&file)
        .args(["--format", "json"])
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["format"], "claude-code");
    assert_eq!(f["errors"][0]["line"], 3, "{f:#}");
    assert!(f["conversations"].as_u64().unwrap() >= 1, "{f:#}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn standard_input_is_read_once_like_a_file() {
    let data = std::fs::read(format!("{T}/dataset.jsonl")).unwrap();
    let from_file = loopdbg()
        .args(["check", &format!("{T}/dataset.jsonl"), "--format", "json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let from_stdin = loopdbg()
        .args(["check", "-", "--format", "json"])
        .write_stdin(data)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let a: Value = serde_json::from_slice(&from_file).unwrap();
    let b: Value = serde_json::from_slice(&from_stdin).unwrap();
    assert_eq!(a["conversations"], b["conversations"]);
    assert_eq!(a["files"][0]["results"], b["files"][0]["results"]);
    assert_eq!(b["files"][0]["file"], "<stdin>");
    // A Claude Code log through a pipe: detection does not eat its lines.
    let log = std::fs::read(format!("{T}/claude_code_v2/parallel.jsonl")).unwrap();
    loopdbg()
        .args(["check", "-"])
        .write_stdin(log)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "<stdin> (claude-code): 1 conversation(s), no problems",
        ));
}

/// A Claude Code log of bookkeeping events only is an agent's session
/// holding no conversation yet: nothing a provider could refuse, exit 0
/// (1 under --strict, where nothing checked is not a pass).
#[test]
fn an_agents_log_with_nothing_to_check_passes_unless_strict() {
    let dir = scratch("empty");
    let file = dir.join("only-bookkeeping.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"file-history-snapshot\",\"messageId\":\"m1\",\"snapshot\":{},\"isSnapshotUpdate\":false}\n{\"type\":\"summary\",\"summary\":\"x\",\"leafUuid\":\"u9\"}\n",
    )
    .unwrap();
    loopdbg()
        .arg("check")
        .arg(&file)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "(claude-code): the session holds no conversation yet: nothing to send, nothing to check",
        ))
        .stdout(predicate::str::contains("1 file(s) had nothing to check"));
    loopdbg()
        .args(["check", "--strict"])
        .arg(&file)
        .assert()
        .code(1);
    // A sub-agent log is not empty: it is a conversation of its own.
    loopdbg()
        .args([
            "check",
            &format!("{T}/claude_code_v2/subagents/agent-a7f3c2e1.jsonl"),
        ])
        .assert()
        // Its last call has no result yet: in flight, which no request
        // has carried, so a note and not a 400.
        .code(0)
        .stdout(predicate::str::contains(
            "(claude-code, sub-agent a7f3c2e1, 4 messages): 1 note(s)",
        ))
        .stdout(predicate::str::contains(
            "unanswered_call (note)  [toolu_05Read]",
        ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jsonl_output_is_one_record_per_conversation_for_sharded_runs() {
    let out = loopdbg()
        .args([
            "check",
            &format!("{T}/dataset.jsonl"),
            &format!("{T}/claude_code_v2/compact.jsonl"),
            "nope.json",
            "--format",
            "jsonl",
        ])
        .assert()
        .code(2)
        .get_output()
        .stdout
        .clone();
    let records: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dataset = std::fs::read_to_string(format!("{T}/dataset.jsonl")).unwrap();
    let conversations = dataset.lines().filter(|l| !l.trim().is_empty()).count() + 2;
    assert_eq!(
        records.len(),
        conversations + 1,
        "one per conversation, one for the bad file"
    );
    assert_eq!(records[0]["file"], format!("{T}/dataset.jsonl"));
    assert_eq!(records[0]["conversation"]["line"], 1);
    let compact: Vec<&Value> = records
        .iter()
        .filter(|r| r["file"] == format!("{T}/claude_code_v2/compact.jsonl"))
        .collect();
    assert_eq!(compact[1]["conversation"]["label"], "after compaction 1");
    assert!(
        records.last().unwrap()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nope.json")
    );
}

#[test]
fn a_forced_log_format_that_does_not_fit_is_an_error() {
    loopdbg()
        .args([
            "check",
            &format!("{T}/codex/rollout-2026-11-03T08-00-00-clean.jsonl"),
            "--format",
            "claude-code",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--input-format claude-code does not fit: the content is a Codex CLI rollout",
        ));
    loopdbg()
        .args([
            "check",
            &format!("{T}/claude_code_v2/parallel.jsonl"),
            "--format",
            "anthropic",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--input-format anthropic does not fit: the content is a Claude Code log",
        ));
}

#[test]
fn api_test_recordings_are_checked_by_the_status_the_provider_answered() {
    // A VCR cassette (YAML, pydantic-ai's `parsed_body` form): the model
    // list is no conversation; the 400 the provider sent confirms the
    // dangling toolu_01Fx, in the very words loopdbg uses.
    let file = format!("{T}/recordings/test_weather_agent.yaml");
    loopdbg()
        .args(["check", &file])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "request 2 (anthropic, interaction 2: POST /v1/messages → 400, 3 messages): 1 problem(s)",
        ))
        .stdout(predicate::str::contains(
            "interactions[1].request.messages[1]  unanswered_call (400)  [toolu_01Fx]",
        ))
        .stdout(predicate::str::contains(
            "The recording confirms it: the provider answered 400 in these words.",
        ))
        // Its two requests grow one history: one conversation.
        .stdout(predicate::str::contains(
            "checked 2 request(s) in 1 conversation(s) in 1 file(s)",
        ));
    // A HAR file: the endpoint names the provider of a plain-text request,
    // and a 400 loopdbg's rules do not foresee is still the provider's word.
    let out = loopdbg()
        .args([
            "check",
            &format!("{T}/recordings/openai_session.har"),
            "--format",
            "json",
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let results = &v["files"][0]["results"];
    assert_eq!(results[0]["format"], "openai");
    assert_eq!(results[0]["findings"][0]["kind"], "refused_request");
    assert_eq!(results[0]["findings"][0]["severity"], "400");
    assert!(
        results[0]["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length is 128000 tokens")
    );
    assert_eq!(results[1]["findings"][0]["kind"], "unanswered_call");
    assert_eq!(results[1]["findings"][0]["evidence"]["outcome"], "refused");
}

#[test]
fn har_bodies_kept_in_base64_are_read_in_their_own_words() {
    // Browsers' HAR exports keep some bodies base64-encoded
    // (`content.encoding`): the 400's words are the decoded ones, and the
    // streamed answer is the reply a recorded session replays.
    let file = format!("{T}/recordings/base64_bodies.har");
    loopdbg()
        .args(["check", &file])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "The following tool_call_ids did not have response messages: call_w1 The recording confirms it: the provider answered 400 in these words.",
        ));
    recorded_run_ends_with(&file, "北京 is 18°C.");
}

/// `record` on `file`, then `run` on the session: its final text.
fn recorded_run_ends_with(file: &str, final_text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("recorded.json");
    loopdbg()
        .args(["record", file, "-o"])
        .arg(&session)
        .assert()
        .success();
    loopdbg()
        .arg("run")
        .arg(&session)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "final text: {final_text}"
        )));
}

#[test]
fn gzip_compressed_inputs_are_read_as_their_text() {
    // LangChain keeps its cassettes as `.yaml.gz`: known by the first
    // bytes, decompressed as read, checked and replayed as the plain file.
    let file = format!("{T}/recordings/streamed_two_calls.yaml.gz");
    loopdbg()
        .args(["check", &file])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "(anthropic): 2 request(s) in 1 conversation(s), no problems",
        ));
    recorded_run_ends_with(&file, "Beijing 18°C, Shanghai 21°C.");
    // A damaged stream is a clear error, not a panic.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl.gz");
    std::fs::write(&bad, b"\x1f\x8b\x08\x00garbage").unwrap();
    loopdbg()
        .arg("check")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the gzip stream is damaged"));
}

/// A capture the proxy wrote for the real `openai` Python SDK (a loop that
/// answers only the first of two calls): every exchange is labelled by the
/// provider the proxy routed it to, not by a guess from a first request
/// that holds one user message; and its two requests, the second growing
/// the first's history, are one conversation (issue 22, item 13: the file
/// said "anthropic" and "2 conversation(s)").
#[test]
fn a_capture_is_labelled_by_its_route_and_counted_by_conversation() {
    let file = format!("{T}/proxy/openai_sdk_first_only.jsonl");
    let out = loopdbg()
        .args(["check", "--format", "json", &file])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["format"], "openai", "{f:#}");
    assert_eq!(
        (f["requests"].as_u64(), f["conversations"].as_u64()),
        (Some(2), Some(1))
    );
    // Clean requests are listed too, for their tokens.
    let results = f["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{f:#}");
    assert_eq!(results[0]["findings"], serde_json::json!([]));
    assert!(results[0]["usage"]["total"]["input"].as_u64().unwrap() > 0);
    let found = &results[1];
    assert_eq!(found["format"], "openai");
    assert_eq!(found["request"], 2);
    assert_eq!(found["conversation"], 1);
    loopdbg()
        .args(["check", &file])
        .env("NO_COLOR", "1")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "openai_sdk_first_only.jsonl:2 (openai, 3 messages)",
        ))
        .stdout(predicate::str::contains(
            "checked 2 request(s) in 1 conversation(s) in 1 file(s)",
        ));
    // Each line alone is labelled the same way, through the one-document path.
    let dir = crate::common::scratch("route");
    let first = dir.join("first.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&first, text.lines().next().unwrap()).unwrap();
    loopdbg()
        .args(["check", first.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "(openai): 1 conversation(s), no problems",
        ));
}

/// Two runs of one agent that open with the same prompt are two
/// conversations: a conversation is matched at its newest request only.
#[test]
fn two_loops_with_the_same_prompt_are_two_conversations() {
    let line = |seq: u64, messages: Value| {
        serde_json::json!({"loopdbg": "exchange", "seq": seq, "method": "POST",
            "path": "/v1/messages", "provider": "anthropic", "status": 200,
            "request": {"model": "m", "max_tokens": 64, "messages": messages},
            "response": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}})
        .to_string()
    };
    let prompt = serde_json::json!({"role": "user", "content": "weather?"});
    let grown = |id: &str| {
        serde_json::json!([prompt,
            {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "w", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "18"}]}])
    };
    let text = [
        line(1, serde_json::json!([prompt])),
        line(2, grown("toolu_a")),
        line(3, serde_json::json!([prompt])),
        line(4, grown("toolu_b")),
    ]
    .join("\n");
    let dir = crate::common::scratch("threads");
    let file = dir.join("two.jsonl");
    std::fs::write(&file, text).unwrap();
    let out = loopdbg()
        .args(["check", "--format", "jsonl", file.to_str().unwrap()])
        .output()
        .unwrap();
    let threads: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["conversation"]["conversation"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(threads, [1, 1, 2, 2]);
}

/// `record` on the real SDK's capture of a loop that answered only the
/// first call: the session replays as `first`, and says so; the default
/// run shows the dangling id a provider refuses (issue 22, item 14).
#[test]
fn record_keeps_what_the_loop_did_with_its_calls() {
    let dir = crate::common::scratch("record-first");
    let session = dir.join("recorded.json");
    loopdbg()
        .args(["record", &format!("{T}/proxy/openai_sdk_first_only.jsonl"), "-o"])
        .arg(&session)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the recorded loop answered only the first call of each turn (call_f1 left without a result): recorded with extract first",
        ));
    loopdbg()
        .arg("run")
        .arg(&session)
        .assert()
        .stdout(predicate::str::contains("extract first"))
        .stdout(predicate::str::contains("unpaired tool_use: call_f1"));
}

/// A capture is known by its first line: one exchange is a capture, not a
/// session with an unknown field; an exchange that holds no conversation
/// (`GET /v1/models`) is skipped and counted, not an unreadable line
/// (issue 23, item 18).
#[test]
fn captures_are_known_by_their_first_line_and_other_traffic_is_skipped() {
    let dir = crate::common::scratch("first-line");
    let two = std::fs::read_to_string(format!("{T}/proxy/openai_sdk_first_only.jsonl")).unwrap();
    let one = dir.join("one.jsonl");
    std::fs::write(&one, two.lines().next().unwrap()).unwrap();
    let one = one.to_str().unwrap();
    loopdbg()
        .args(["diff", one, one])
        .assert()
        .success()
        .stdout(predicate::str::contains("[replay]"));
    // The debugger without a terminal points to `check`: it took the file
    // for what it is.
    loopdbg()
        .arg(one)
        .assert()
        .stderr(predicate::str::contains("loopdbg check"))
        .stderr(predicate::str::contains("unknown field").not());
    let get = serde_json::json!({"loopdbg": "exchange", "seq": 1, "method": "GET",
        "path": "/v1/models", "provider": "openai", "request": null, "status": 200,
        "response": {"data": []}});
    let mixed = dir.join("mixed.jsonl");
    std::fs::write(&mixed, format!("{get}\n{two}")).unwrap();
    loopdbg()
        .args(["check", mixed.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("unanswered_call (400)  [call_f1]"))
        .stdout(predicate::str::contains(
            "1 recorded exchange(s) without a conversation skipped",
        ));
    let alone = dir.join("get.jsonl");
    std::fs::write(&alone, get.to_string()).unwrap();
    loopdbg()
        .args(["check", alone.to_str().unwrap()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("no conversation found"));
}

/// A session file with text after its object is a located error, not a
/// session that loads (issue 23, item 20).
#[test]
fn text_after_the_session_object_is_a_located_error() {
    let dir = crate::common::scratch("trailing");
    let file = dir.join("s.json");
    let session = std::fs::read_to_string("sessions/weather.json").unwrap();
    let lines = session.lines().count();
    std::fs::write(&file, format!("{session}garbage\n")).unwrap();
    loopdbg()
        .args(["run", file.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "s.json:{}:1: unexpected text after the session object",
            lines + 1
        )));
}

/// A cassette that also recorded embeddings calls is read around them
/// (skipped and counted), and a recorded request that is no conversation
/// is said where it is while the other interactions are checked
/// (issue 25 items 7 and 8; see the fixtures' SOURCE.md).
#[test]
fn a_cassette_is_read_around_what_is_not_a_conversation() {
    let dir = "tests/fixtures/transcripts/recordings/mixed";
    loopdbg()
        .args(["check", &format!("{dir}/embeddings_and_chat.json")])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("unanswered_call (400)  [call_b]"))
        .stdout(predicates::str::contains(
            "1 recorded exchange(s) without a conversation skipped",
        ));
    loopdbg()
        .args(["check", &format!("{dir}/one_bad_request.json")])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "one_bad_request.json:25:13: interactions[1].request.body.messages: expected `messages` to be an array",
        ))
        .stdout(predicates::str::contains("unanswered_call (warning)  [call_b]"))
        .stdout(predicates::str::contains("checked 2 request(s)"));
}

#[test]
fn two_records_joined_on_one_line_are_both_read_and_the_line_is_named() {
    // A Claude Code 2.1.5 log held a line where one write lost its newline:
    // `{…}{…}`. The joined copy of `parallel.jsonl` (its lines 5 and 6 made
    // one) must check exactly like the original, plus one note for line 5.
    let read = |name: &str| -> Value {
        let out = loopdbg()
            .args(["check", &format!("{T}/claude_code_v2/{name}.jsonl")])
            .args(["--format", "json"])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    };
    let whole = read("parallel");
    let joined = read("joined_records");
    let result = &joined["files"][0]["results"][0];
    assert_eq!(
        result["messages"],
        whole["files"][0]["results"][0]["messages"]
    );
    let findings = result["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{result:#}");
    assert_eq!(findings[0]["kind"], "joined_records");
    assert_eq!(findings[0]["line"], 5);
    assert_eq!(findings[0]["severity"], "note");
    assert!(
        joined["files"][0]["errors"]
            .as_array()
            .is_none_or(|e| e.is_empty())
    );
}

#[test]
fn a_codex_rollout_with_two_records_on_one_line_reads_as_before() {
    let whole =
        std::fs::read_to_string(format!("{T}/codex/rollout-2026-11-03T08-00-00-clean.jsonl"))
            .unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let joined = format!(
        "{}\n{}{}\n{}\n",
        lines[..4].join("\n"),
        lines[4],
        lines[5],
        lines[6..].join("\n")
    );
    let dir = scratch("joined-codex");
    let file = dir.join("rollout-2026-11-03T08-00-00-joined.jsonl");
    std::fs::write(&file, joined).unwrap();
    let out = loopdbg()
        .arg("check")
        .arg(&file)
        .args(["--format", "json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["format"], "codex", "{f:#}");
    let findings = f["results"][0]["findings"].as_array().unwrap();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["joined_records"], "{f:#}");
    assert_eq!(findings[0]["line"], 5);
}

/// Every finding of `file` as (kind, severity, rejected, evidence outcome).
fn verdicts(file: &str) -> Vec<(String, String, bool, String)> {
    let out = loopdbg()
        .args(["check", file, "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    for f in v["files"].as_array().unwrap() {
        for r in f["results"].as_array().unwrap() {
            for x in r["findings"].as_array().unwrap() {
                found.push((
                    x["kind"].as_str().unwrap().to_string(),
                    x["severity"].as_str().unwrap().to_string(),
                    x["rejected_by_provider"].as_bool().unwrap(),
                    x["evidence"]["outcome"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    found
}

#[test]
fn gemini_calls_answered_in_text_are_graded_by_the_model_and_the_recording() {
    let dir = format!("{T}/gemini_text_answers");
    let warned = |evidence: &str| {
        (
            "unanswered_call".to_string(),
            "warning".to_string(),
            false,
            evidence.to_string(),
        )
    };
    // gemini-2.5-flash and gemini-1.5-flash answered these with 200.
    assert_eq!(
        verdicts(&format!("{dir}/accepted_by_2_5_and_1_5.json")),
        [warned("answered"), warned("answered")]
    );
    // The bare body does not name its model: a warning that says both.
    assert_eq!(verdicts(&format!("{dir}/body_no_model.json")), [warned("")]);
    // Gemini 3 refuses it, and the recording says so.
    assert_eq!(
        verdicts(&format!("{dir}/refused_by_gemini_3.json")),
        [(
            "unanswered_call".to_string(),
            "400".to_string(),
            true,
            "refused".to_string()
        )]
    );
    // One call of two answered by a response is still Gemini's 400.
    assert!(verdicts(&format!("{T}/gemini_missing_response.json"))[0].2);
}

/// The recordings other ecosystems commit, each read whole and weighed by
/// its recorded status (SOURCE.md in the folder says where each shape is
/// from): LangChain's gzipped `requests:`/`responses:` cassette, nock's
/// array, the Datadog test agent's and ReqLLM's one-interaction files, a
/// Go httprr trace, a Ruby VCR cassette with `!binary` bodies, Mastra's
/// LLM recorder file, an Azure SDK test-proxy recording and a Langfuse
/// trace export.
#[test]
fn other_ecosystems_recordings_are_read_and_weighed_by_their_status() {
    let dir = format!("{T}/recordings/ecosystems");
    // (file, requests read, findings confirmed by a recorded 400)
    let expected = [
        ("langchain_test_tool_calling.yaml.gz", 2, 1),
        ("nock_tool_loop.json", 2, 1),
        ("datadog_anthropic_v1_messages_post_1a2b3c4d.json", 1, 1),
        ("req_llm_multi_tool.json", 1, 0),
        ("TestToolLoop.httprr", 2, 1),
        ("ruby_vcr_binary.yml", 1, 0),
        ("mastra_agent_tool_loop.json", 2, 1),
        ("azure_test_proxy_tool_loop.json", 2, 1),
        // Langfuse: a generation whose level is ERROR, its status message
        // the SDK's "Error code: 400 - {…}".
        ("langfuse_trace_export.json", 2, 1),
    ];
    for (file, requests, refused) in expected {
        let out = loopdbg()
            .args(["check", &format!("{dir}/{file}"), "--format", "json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let f = &v["files"][0];
        assert_eq!(f["format"], "anthropic", "{file}: {f:#}");
        assert_eq!(f["requests"], requests, "{file}: {f:#}");
        assert!(
            f["errors"].as_array().is_none_or(|e| e.is_empty()),
            "{file}: {f:#}"
        );
        let confirmed: Vec<&Value> = f["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["findings"].as_array().unwrap())
            .filter(|x| x["evidence"]["outcome"] == "refused")
            .collect();
        assert_eq!(confirmed.len(), refused, "{file}: {f:#}");
        for x in confirmed {
            assert_eq!(x["ids"], serde_json::json!(["toolu_01R"]), "{file}");
            assert!(
                x["message"]
                    .as_str()
                    .unwrap()
                    .contains("The recording confirms it")
            );
        }
    }
}

#[test]
fn a_cut_httprr_trace_is_an_error_at_its_byte() {
    let text =
        std::fs::read_to_string(format!("{T}/recordings/ecosystems/TestToolLoop.httprr")).unwrap();
    let dir = scratch("httprr-cut");
    let cut = dir.join("cut.httprr");
    std::fs::write(&cut, &text[..text.len() - 40]).unwrap();
    loopdbg()
        .arg("check")
        .arg(&cut)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "expected an httprr trace: the exchange announces",
        ));
}

/// Agent stores that hold plain provider histories are read as their agent
/// sends them: Roo Code's condensed messages and reasoning items left out;
/// a Cline task stopped mid-tool, and an opencode call left running, sent
/// with the result the agent fills in (a warning, never a 400); a Copilot
/// CLI log rebuilt from its events, checked as Chat Completions.
#[test]
fn agent_stores_are_read_as_their_agent_sends_them() {
    let warned = |evidence: &str| {
        (
            "unanswered_call".to_string(),
            "warning".to_string(),
            false,
            evidence.to_string(),
        )
    };
    let dir = format!("{T}/agent_stores");
    assert_eq!(
        verdicts(&format!("{dir}/roo_api_conversation_history.json")),
        []
    );
    assert_eq!(
        verdicts(&format!("{dir}/cline_api_conversation_history.json")),
        [warned("repaired")]
    );
    // Cline's native tool calling: outputs kept as user text, no
    // tool_result, and no `ts` (an export). Cline sends "result missing"
    // for each call before every request: notes that the agent repairs
    // them, never the 400 the stored history alone would give.
    let noted = (
        "unanswered_call".to_string(),
        "note".to_string(),
        false,
        "repaired".to_string(),
    );
    assert_eq!(
        verdicts(&format!("{dir}/cline_native_tools_export.json")),
        vec![noted; 4]
    );
    assert_eq!(
        verdicts(&format!("{dir}/opencode_export.json")),
        [warned("")]
    );
    assert_eq!(verdicts(&format!("{T}/copilot_cli/events.jsonl")), []);
    assert_eq!(
        verdicts(&format!("{T}/copilot_cli/interrupted.jsonl")),
        [warned("answered")]
    );
}

#[test]
fn agent_stores_replay_in_the_debugger_headless() {
    for file in [
        format!("{T}/agent_stores/opencode_export.json"),
        format!("{T}/copilot_cli/events.jsonl"),
        format!("{T}/agent_stores/roo_api_conversation_history.json"),
    ] {
        let dir = scratch("store-replay");
        let session = dir.join("session.json");
        let recorded = loopdbg()
            .args(["record", &file, "-o"])
            .arg(&session)
            .output()
            .unwrap();
        assert!(
            recorded.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&recorded.stderr)
        );
        let out = loopdbg().arg("run").arg(&session).output().unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A Claude Code session dumped by a hook as one JSON array is read as the
/// log it was: the same findings, ids and lines (the event's place in the
/// array) as the JSON Lines file (issue 41).
#[test]
fn a_claude_code_session_as_one_json_array_reads_as_its_log() {
    let log = "tests/fixtures/transcripts/claude_code_v2/doctor_dropped_result.jsonl";
    let events: Vec<serde_json::Value> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("session.json");
    std::fs::write(&array, serde_json::to_string_pretty(&events).unwrap()).unwrap();
    let findings = |file: &std::path::Path| -> Vec<serde_json::Value> {
        let (_, report) = crate::common::check_json(file);
        assert_eq!(report["files"][0]["format"], "claude-code", "{report}");
        crate::common::findings(&report)
    };
    let from_lines = findings(std::path::Path::new(log));
    assert!(!from_lines.is_empty());
    assert_eq!(findings(&array), from_lines);
}

/// A HAR file written as YAML (Polly.JS can persist recordings so; the
/// fixture is `openai_session.har` dumped by PyYAML) reads to the same
/// findings as the JSON HAR (issue 41).
#[test]
fn a_har_written_as_yaml_reads_as_the_har() {
    let findings = |file: &str| crate::common::findings(&crate::common::check_json(file).1);
    let json = findings("tests/fixtures/transcripts/recordings/openai_session.har");
    assert!(!json.is_empty());
    assert_eq!(
        findings("tests/fixtures/transcripts/recordings/openai_session.har.yaml"),
        json
    );
}

/// Files agents and their harnesses write, read as what they record
/// (SOURCE.md beside each says where the shape is from): a SWE-agent
/// trajectory's history, a Gemini CLI `--output-format stream-json`
/// transcript (a real Gemini CLI 0.61 run against the fake), and a goose
/// MCP replay (`STDIN:` / `STDOUT:` lines). Each clean one is clean; each
/// broken one names the call, as the provider or the MCP peer would.
#[test]
fn agent_harness_files_are_read_as_what_they_record() {
    // (file, format, problems, the id named)
    let expected = [
        ("swe_agent/weather-fix.traj", "openai", 0, None),
        (
            "swe_agent/weather-fix-lost-observation.traj",
            "openai",
            1,
            Some("call_x2"),
        ),
        ("gemini_cli_stream/stream-json.jsonl", "gemini", 0, None),
        (
            "gemini_cli_stream/stream-json-result-dropped.jsonl",
            "gemini",
            1,
            Some("run_shell_command__e2e_3"),
        ),
    ];
    for (file, format, problems, id) in expected {
        let (code, report) = crate::common::check_json(format!("{T}/{file}"));
        let f = &report["files"][0];
        assert_eq!(f["format"], format, "{file}: {report:#}");
        assert_eq!(report["problems"], problems, "{file}: {report:#}");
        // Exit 1 only for what a provider refuses (warnings pass without
        // --strict).
        let refused = f["results"].as_array().unwrap().iter().any(|r| {
            r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["severity"] == "400")
        });
        assert_eq!(code, Some(u8::from(refused).into()), "{file}");
        if let Some(id) = id {
            let finding = &f["results"][0]["findings"][0];
            assert_eq!(finding["kind"], "unanswered_call", "{file}");
            assert_eq!(finding["ids"], serde_json::json!([id]), "{file}");
            assert_eq!(finding["severity"], "400", "{file}");
        }
    }
    // goose's replay: the capture's finding, on the replay's own line.
    let (code, report) =
        crate::common::check_json("tests/fixtures/mcp/goose_replay_unanswered_call");
    assert_eq!(code, Some(0), "a warning alone passes: {report:#}");
    assert_eq!(report["files"][0]["format"], "mcp");
    let finding = &report["files"][0]["results"][0]["findings"][0];
    assert_eq!(finding["kind"], "mcp_unanswered_request");
    assert_eq!(finding["line"], 6, "{finding:#}");
}

/// opencode keeps its sessions in SQLite: `check` on the database says
/// what it is and the two ways to read it, not that byte 107 is not UTF-8.
#[test]
fn check_on_opencodes_database_says_how_to_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE session (id text PRIMARY KEY);")
        .unwrap();
    loopdbg()
        .args(["check", db.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("a SQLite database")
                .and(predicate::str::contains("loopdbg doctor --scan"))
                .and(predicate::str::contains("opencode export SESSION")),
        );
}

/// A JSON array of request bodies or sessions (an export of several
/// conversations), one line or pretty-printed: each read as its own
/// conversation, not its first element taken for a message.
#[test]
fn an_array_of_bodies_is_read_body_by_body() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = serde_json::json!([
        {"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": "go on"}]},
        {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    ]);
    for (name, text) in [
        ("one_line.json", bodies.to_string()),
        (
            "pretty.json",
            serde_json::to_string_pretty(&bodies).unwrap(),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        loopdbg()
            .args(["check", path.to_str().unwrap()])
            .assert()
            .code(1)
            .stdout(
                predicate::str::contains("unanswered_call (400)  [toolu_1]")
                    .and(predicate::str::contains("checked 2 conversation(s)")),
            );
    }
}

/// A recording whose one request body is not JSON (cut by the recorder):
/// that interaction is said at its place, the others are read and judged.
#[test]
fn a_malformed_body_in_a_recording_is_said_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassette.json");
    let broken = r#"{"model":"m","messages":[{"role":"user","content":"#;
    let dangling = serde_json::json!({"model": "m", "max_tokens": 9, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": "x"}]});
    let uri = "https://api.anthropic.com/v1/messages";
    let cassette = serde_json::json!({"interactions": [
        {"request": {"method": "POST", "uri": uri, "body": dangling.to_string()},
         "response": {"status": {"code": 400}, "body": {"string": "{}"}}},
        {"request": {"method": "POST", "uri": uri, "body": broken},
         "response": {"status": {"code": 400}, "body": {"string": "{}"}}},
    ]});
    std::fs::write(&path, serde_json::to_string_pretty(&cassette).unwrap()).unwrap();
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("unanswered_call (400)  [toolu_1]"))
        .stderr(predicate::str::contains(
            "interactions[1].request.body: the recorded request body is not JSON",
        ));
}

/// A small compressed input that opens to more than 16 MiB, read where the
/// address space is limited (`ulimit -v`, as the issue's 4 GB): the buffer
/// once reserved its 4 GiB limit at once, and the process aborted
/// (SIGABRT) before reading a byte. It is read now, growing as it goes.
#[test]
#[cfg(unix)]
fn a_large_document_is_read_where_address_space_is_limited() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json.gz");
    // Text that does not repeat (a run of one letter is refused now as
    // the decompression bomb it would be: `a_stream_that_expands_past…`).
    let mut state = 7u64;
    let varied: String = (0..(20 << 20) / 8)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            format!("{:08x}", state >> 32)
        })
        .collect();
    let body = serde_json::json!({"model": "claude-x", "max_tokens": 10,
        "messages": [{"role": "user", "content": varied}]});
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    // Several lines: a document is read whole (a one-line one is read as
    // a line, whose limit is smaller).
    gz.write_all(serde_json::to_string_pretty(&body).unwrap().as_bytes())
        .unwrap();
    gz.finish().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 4000000 && exec "$0" check "$1""#)
        .arg(env!("CARGO_BIN_EXE_loopdbg"))
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("1 conversation(s), no problems"), "{said}");
}
