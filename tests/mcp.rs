//! `loopdbg mcp`, the tap on a stdio MCP server, with `cat` as the server:
//! what the agent writes comes back byte for byte, whatever the bytes; the
//! server's exit code is the tap's; the capture masks credentials the
//! relay passes on untouched; and `check` reads a capture, finding what
//! went wrong between the two sides. The official SDK's client and server
//! through the tap are in tests/clients.rs.

use crate::common::{loopdbg, scratch};
use serde_json::Value;

#[test]
fn the_tap_changes_no_byte() {
    let dir = scratch("mcp-bytes");
    let capture = dir.join("mcp.jsonl");
    let key = ["sk-ant-api03-", &"k".repeat(40)].concat();
    let mut input: Vec<u8> = Vec::new();
    input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
    input.extend_from_slice(b"\n");
    input.extend_from_slice(format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"key\":\"{key}\"}}}}\n").as_bytes());
    input.extend_from_slice(&[0xff, 0xfe, b'x', b'\n']);
    input.extend_from_slice(&vec![b'a'; 200_000]);
    input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
    let out = loopdbg()
        .args(["mcp", "--capture"])
        .arg(&capture)
        .args(["--", "cat"])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout == input, "the relay changed the bytes");
    let text = std::fs::read_to_string(&capture).unwrap();
    assert!(!text.contains(&key), "a key reached the capture");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The start, then five lines each way (the blank one is not a message).
    assert_eq!(records.len(), 11);
    assert_eq!(records[0]["command"], serde_json::json!(["cat"]));
    let from_client: Vec<&Value> = records.iter().filter(|r| r["from"] == "client").collect();
    assert_eq!(from_client.len(), 5);
    assert_eq!(from_client[0]["message"]["method"], "ping");
    assert_eq!(from_client[2]["text"], "\u{fffd}\u{fffd}x");
    assert_eq!(
        from_client[4]["message"]["method"],
        "notifications/cancelled"
    );
}

/// The tap ends when its server does, even while the agent keeps its
/// standard input open (as agents do): it waited on that input before
/// (issue 38). Bounded wait, no sleep.
#[test]
fn the_tap_exits_with_its_server_while_the_agents_input_stays_open() {
    let dir = scratch("mcp-open-stdin");
    let mut tap = std::process::Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["mcp", "--capture"])
        .arg(dir.join("mcp.jsonl"))
        .args(["--", "sh", "-c", "exit 4"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _agent_input = tap.stdin.take();
    let (done, status) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(tap.wait()));
    let status = status
        .recv_timeout(crate::common::pty::PATIENCE)
        .expect("the tap exits once its server has")
        .unwrap();
    assert_eq!(status.code(), Some(4));
}

#[test]
fn the_servers_exit_is_the_taps() {
    let dir = scratch("mcp-exit");
    let capture = dir.join("mcp.jsonl");
    loopdbg()
        .args(["mcp", "--capture"])
        .arg(&capture)
        .args(["--", "sh", "-c", "exit 3"])
        .assert()
        .code(3);
    // A second run appends to the same capture, after its own start.
    loopdbg()
        .args(["mcp", "--capture"])
        .arg(&capture)
        .args(["--", "true"])
        .assert()
        .code(0);
    let starts = std::fs::read_to_string(&capture)
        .unwrap()
        .matches("\"event\":\"start\"")
        .count();
    assert_eq!(starts, 2);
}

#[test]
fn a_file_that_is_not_an_mcp_capture_is_not_appended_to() {
    let dir = scratch("mcp-refuse");
    let session = dir.join("weather.json");
    std::fs::copy("sessions/weather.json", &session).unwrap();
    let before = std::fs::read(&session).unwrap();
    loopdbg()
        .args(["mcp", "--capture"])
        .arg(&session)
        .args(["--", "cat"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is not a capture"));
    assert_eq!(std::fs::read(&session).unwrap(), before);
    loopdbg()
        .args(["mcp", "--capture"])
        .arg(dir.join("new.jsonl"))
        .args(["--", "/no/such/server"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("/no/such/server"));
}

#[test]
fn check_finds_what_went_wrong_in_an_mcp_capture() {
    let out = loopdbg()
        .args([
            "check",
            "--strict",
            "--format",
            "json",
            "tests/fixtures/mcp/broken_session.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(file["format"], "mcp");
    assert_eq!(file["conversations"], 2, "two runs of the tap");
    let found: Vec<(String, u64, String)> = file["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["findings"].as_array().unwrap().iter())
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["ids"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("mcp_unanswered_request".to_string(), 6, "3".to_string()),
            ("mcp_answered_twice".to_string(), 11, "\"list\"".to_string()),
            ("mcp_unknown_response".to_string(), 12, "41".to_string()),
        ]
    );
    // A line that is not a record: located, exit 2.
    let dir = scratch("mcp-bad");
    let bad = dir.join("bad.jsonl");
    let text = std::fs::read_to_string("tests/fixtures/mcp/broken_session.jsonl").unwrap();
    std::fs::write(
        &bad,
        text.replacen("\"event\":\"message\"", "\"event\":\"mesage\"", 1),
    )
    .unwrap();
    loopdbg()
        .arg("check")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("bad.jsonl:2:"));
}

/// A capture replays as the agent's calls: `record` turns it into a
/// session that runs them again, `run --export otlp` writes each answered
/// call as a tool span, and a capture read from a pipe (where `check`
/// cannot look ahead at the file) still says an open call in MCP's words.
#[test]
fn a_capture_replays_records_and_exports_as_the_agents_calls() {
    let dir = scratch("mcp-replay");
    let fixture = "tests/fixtures/mcp/broken_session.jsonl";
    let session = dir.join("session.json");
    loopdbg()
        .args(["record", fixture, "--conversation", "1", "-o"])
        .arg(&session)
        .assert()
        .success();
    let run: Value = serde_json::from_slice(
        &loopdbg()
            .args(["run", "--format", "json"])
            .arg(&session)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        run["tool_runs"],
        serde_json::json!(["get_weather"]),
        "{run:#}"
    );
    // `run --export` replays a file's newest conversation: the first run
    // of the tap alone.
    let first_run = dir.join("first.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let lines: Vec<&str> = text.lines().take(7).collect();
    std::fs::write(&first_run, lines.join("\n")).unwrap();
    let export = dir.join("mcp.otlp.jsonl");
    loopdbg()
        .args(["run", "--export", "otlp", "-o"])
        .arg(&export)
        .arg(&first_run)
        .assert()
        .success();
    let text = std::fs::read_to_string(&export).unwrap();
    assert!(text.contains("execute_tool get_weather"), "{text}");
    let piped = loopdbg()
        .args(["check", "--format", "json", "-"])
        .write_stdin(std::fs::read(fixture).unwrap())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&piped.stdout).unwrap();
    let kinds: Vec<&str> = report["files"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["findings"].as_array().unwrap())
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"mcp_unanswered_request"), "{report:#}");
    assert!(!kinds.contains(&"unanswered_call"), "{report:#}");
}

/// `check --mcp`: each call the model made is matched to the MCP
/// `tools/call` that ran it; one the server failed whose result reached
/// the model without its error flag is `mcp_error_as_data`, and the same
/// history with the flag is clean.
#[test]
fn a_failed_mcp_call_sent_to_the_model_as_data_is_found() {
    let dir = scratch("mcp-correlate");
    let capture = dir.join("mcp.jsonl");
    std::fs::write(
        &capture,
        [
            r#"{"event":"start","loopdbg":"mcp","command":["weather-server"]}"#,
            r#"{"event":"message","loopdbg":"mcp","from":"client","ms":5,"message":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}}"#,
            r#"{"event":"message","loopdbg":"mcp","from":"server","ms":9,"message":{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"upstream timed out"}],"isError":true}}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let body = |flagged: bool| {
        let mut result = serde_json::json!({"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "upstream timed out"});
        if flagged {
            result["is_error"] = Value::Bool(true);
        }
        serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
            "tools": [{"name": "mcp__weather__get_weather", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "weather in Paris?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                    "name": "mcp__weather__get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [result]}]})
    };
    for flagged in [false, true] {
        let path = dir.join(format!("body-{flagged}.json"));
        std::fs::write(&path, body(flagged).to_string()).unwrap();
        let out = loopdbg()
            .args(["check", "--format", "json", "--mcp"])
            .arg(&capture)
            .arg(&path)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let found: Vec<&Value> = report["files"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["findings"].as_array().unwrap())
            .filter(|f| f["kind"] == "mcp_error_as_data")
            .collect();
        match flagged {
            false => {
                assert_eq!(found.len(), 1, "{report:#}");
                assert_eq!(found[0]["ids"], serde_json::json!(["toolu_1", "7"]));
                assert_eq!(found[0]["severity"], "warning");
                // A warning alone passes; --strict fails on it.
                assert_eq!(out.status.code(), Some(0));
            }
            true => {
                assert!(found.is_empty(), "{report:#}");
                assert_eq!(out.status.code(), Some(0), "{report:#}");
            }
        }
    }
    // Not an MCP capture: said, exit 2.
    let out = loopdbg()
        .args([
            "check",
            "--mcp",
            "sessions/weather.json",
            "sessions/weather.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
