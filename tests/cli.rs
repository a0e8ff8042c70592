//! The real binary, headless: `run`, `compare`, `lint`, `schema`, and bad input.

use crate::common::loopdbg;
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let out = loopdbg()
        .arg("run")
        .args(args)
        .args(["--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn run_text_mirrors_the_seed_trace() {
    loopdbg()
        .arg("run")
        .args(crate::common::FX_FIRST_REASK)
        .assert()
        .success()
        .stdout(predicate::str::contains("dropped (not executed): get_fx_rate(toolu_f1)"))
        .stdout(predicate::str::contains(
            "roles: user assistant tool assistant tool assistant tool assistant tool assistant tool assistant tool",
        ))
        .stdout(predicate::str::contains("unpaired tool_use: toolu_f1"))
        .stdout(predicate::str::contains("tool runs: 6 (get_weather, get_weather"))
        .stdout(predicate::str::contains("end: max_rounds"))
        .stdout(predicate::str::contains("final text: 汇率还没拿到，再要一次。"))
        .stdout(predicate::str::contains("spin: the same reply came back 5 times"));
}

#[test]
fn run_json_has_the_contract_fields() {
    let v = run_json(&["sessions/weather_fx.json"]);
    assert_eq!(v["rounds"], 2);
    assert_eq!(
        v["tool_runs"],
        serde_json::json!(["get_weather", "get_fx_rate"])
    );
    assert_eq!(v["unpaired"], serde_json::json!([]));
    assert_eq!(v["end"], "model_done");
    assert_eq!(v["final_text"], "北京今天晴，24 度；美元兑人民币 7.12。");
    assert_eq!(
        v["roles"],
        serde_json::json!(["user", "assistant", "tool", "tool", "assistant"])
    );
    assert_eq!(v["messages"].as_array().unwrap().len(), 5);
    assert_eq!(v["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(v["messages"][2]["content"][0]["tool_use_id"], "toolu_w1");
    assert_eq!(v["violations"], serde_json::json!([]));
    assert_eq!(v["strategy"]["extract"], "all");
    assert_eq!(v["strategy"]["stop"], "robust");
    assert_eq!(v["strategy"]["max_rounds"], 6);
    assert_eq!(v["strategy"]["behavior"], "complete");
    assert!(v["end_detail"].is_string());
}

#[test]
fn run_json_first_skip() {
    let v = run_json(&[
        "sessions/weather_fx.json",
        "--extract",
        "first",
        "--behavior",
        "skip",
        "--stop",
        "tool-calls",
    ]);
    assert_eq!(v["rounds"], 2);
    assert_eq!(v["tool_runs"], serde_json::json!(["get_weather"]));
    assert_eq!(v["unpaired"], serde_json::json!(["toolu_f1"]));
    assert_eq!(v["violations"][0]["ids"], serde_json::json!(["toolu_f1"]));
    assert_eq!(v["violations"][0]["round"], 2);
}

#[test]
fn run_json_truncated_under_robust_is_an_error_without_text() {
    let v = run_json(&["sessions/stop_truncated.json", "--stop", "robust"]);
    assert_eq!(v["rounds"], 1);
    assert_eq!(v["end"], "error");
    assert_eq!(v["final_text"], Value::Null);
    assert!(v["end_detail"].as_str().unwrap().contains("max_tokens"));
}

#[test]
fn run_json_whitelist_refusal_is_not_a_run() {
    let v = run_json(&["sessions/unknown_tool.json"]);
    assert_eq!(v["tool_runs"], serde_json::json!(["get_weather"]));
    assert_eq!(v["messages"][2]["content"][0]["is_error"], true);
}

#[test]
fn compare_prints_the_seed_001_table() {
    let out = loopdbg()
        .args([
            "compare",
            "sessions/stop_truncated.json",
            "--format",
            "json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(rows.len(), 8, "2 extractions × 4 stop rules × 1 behavior");
    let rounds = |stop: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| r["stop"] == stop)
            .map(|r| r["rounds"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(rounds("content"), vec![8, 8]);
    assert_eq!(rounds("finish-reason"), vec![8, 8]);
    assert_eq!(rounds("tool-calls"), vec![1, 1]);
    assert_eq!(rounds("robust"), vec![1, 1]);
}

#[test]
fn compare_markdown_over_several_sessions() {
    loopdbg()
        .args([
            "compare",
            "sessions/weather_fx.json",
            "sessions/stop_text_only.json",
        ])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("| session | extract | stop |"))
        .stdout(predicate::function(|s: &str| {
            s.lines().count() == 2 + 3 * 8 + 8
        }));
}

#[test]
fn lint_reports_the_parameter_trap_with_a_location() {
    loopdbg()
        .args(["lint", "sessions/param_mismatch.json"])
        .assert()
        .success()
        .stdout(predicate::str::is_match(
            r"sessions/param_mismatch\.json:\d+:\d+: warning\[undeclared_table_key\]: `get_weather` table row 0 is keyed by `city`",
        )
        .unwrap());
}

#[test]
fn schema_is_json_and_names_the_required_fields() {
    let out = loopdbg()
        .arg("schema")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["required"], serde_json::json!(["user", "model"]));
}

#[test]
fn bad_flags_exit_2() {
    loopdbg()
        .args(["run", "sessions/weather.json", "--behavior", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`nope` is not a behavior"));
    loopdbg()
        .args(["run", "sessions/weather.json", "--stop", "sometimes"])
        .assert()
        .code(2);
    loopdbg()
        .args(["run", "sessions/weather.json", "--max-rounds", "0"])
        .assert()
        .code(2);
}

#[test]
fn missing_file_exits_2_naming_it() {
    loopdbg()
        .args(["run", "sessions/does_not_exist.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "sessions/does_not_exist.json: cannot read",
        ));
}

/// Each malformed variant: exit 2, `file:line:column: message` on one line.
#[test]
fn malformed_sessions_give_located_errors() {
    let cases: &[(&str, &str, &str)] = &[
        ("truncated_json", "4:1", "EOF while parsing"),
        ("trailing_comma", "3:42", "trailing comma"),
        ("unknown_top_key", "3:9", "unknown field `modle`"),
        (
            "user_not_string",
            "2:12",
            "user: invalid type: integer `42`, expected a string",
        ),
        ("missing_model", "3:1", "missing field `model`"),
        ("duplicate_tool", "5:14", "duplicate tool name `w`"),
        (
            "when_undefined_tool",
            "4:42",
            "`nope` is not a tool this session defines",
        ),
        ("bad_finish_reason", "3:65", "unknown variant `done`"),
        ("round_zero", "3:38", "rounds count from 1"),
        ("undefined_behavior", "4:28", "`other` is not a behavior"),
        ("bad_stop_rule", "4:34", "unknown variant `sometimes`"),
        ("empty_model", "3:12", "expected at least one stub behavior"),
        ("call_without_id", "3:57", "missing field `id`"),
        ("duplicate_behavior", "3:46", "duplicate behavior name `s`"),
        (
            "parameters_not_object",
            "3:41",
            "expected a JSON Schema object",
        ),
        ("empty_file", "1:1", "EOF while parsing"),
        ("not_an_object", "1:1", "expected a session object"),
        ("max_rounds_zero", "4:30", "expected a number from 1 to"),
    ];
    for (name, at, what) in cases {
        let path = format!("tests/fixtures/bad/{name}.json");
        let out = loopdbg()
            .args(["run", &path])
            .assert()
            .code(2)
            .get_output()
            .clone();
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let first = stderr.lines().next().unwrap_or_default();
        let expected = format!("{path}:{at}: ");
        assert!(
            first.contains(&expected),
            "{name}: {first:?} lacks {expected:?}"
        );
        assert!(first.contains(what), "{name}: {first:?} lacks {what:?}");
        assert!(!stderr.contains("panicked"), "{name}");
    }
}

#[test]
fn the_debugger_rejects_a_bad_session_before_touching_the_terminal() {
    let out = loopdbg()
        .arg("tests/fixtures/bad/duplicate_tool.json")
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(out.stdout.is_empty(), "no escape sequences were written");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("tests/fixtures/bad/duplicate_tool.json:5:14: duplicate tool name"));
}

#[test]
fn the_debugger_without_a_terminal_says_so() {
    loopdbg()
        .arg("sessions/weather.json")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the debugger needs a terminal"));
}

const T: &str = "tests/fixtures/transcripts";

#[test]
fn check_exit_codes_clean_problems_unreadable() {
    loopdbg()
        .args([
            "check",
            &format!("{T}/anthropic_clean.json"),
            &format!("{T}/openai_clean.json"),
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "checked 2 conversation(s) in 2 file(s): no problems",
        ));
    loopdbg()
        .args(["check", &format!("{T}/anthropic_parallel_one_missing.json")])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "messages[1]  unanswered_call (400)  [toolu_f1]",
        ));
    loopdbg()
        .args(["check", "tests/fixtures/bad/truncated_json.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tests/fixtures/bad/truncated_json.json:4:1:",
        ));
    loopdbg()
        .args(["check", "nope.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nope.jsonl: cannot read"));
}

#[test]
fn check_json_lines_names_lines_and_claude_code_names_events() {
    let out = loopdbg()
        .args([
            "check",
            &format!("{T}/dataset.jsonl"),
            &format!("{T}/claude_code_interrupted.jsonl"),
            "--format",
            "json",
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["conversations"], 5,
        "the sidechain is a conversation of its own"
    );
    assert_eq!(v["files"][0]["results"][0]["line"], 2);
    assert_eq!(
        v["files"][0]["results"][0]["findings"][0]["ids"],
        serde_json::json!(["call_1"])
    );
    let cc = &v["files"][1]["results"][0];
    assert_eq!(cc["format"], "claude-code");
    assert_eq!(cc["findings"][0]["line"], 5);
    assert_eq!(cc["findings"][0]["uuid"], "u4");
}

#[test]
fn check_format_can_force_the_input_and_pick_the_output() {
    // A forced format that does not fit is an error, never "no problems".
    loopdbg()
        .args([
            "check",
            &format!("{T}/anthropic_parallel_one_missing.json"),
            "--format",
            "openai",
            "--format",
            "json",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--input-format openai does not fit: the content is Anthropic Messages",
        ));
    // Plain text messages fit any format: forcing one is taken.
    loopdbg()
        .args([
            "check",
            &format!("{T}/responses_string_input.json"),
            "--format",
            "responses",
            "--format",
            "json",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("\"problems\": 0"));
    loopdbg()
        .args([
            "check",
            &format!("{T}/anthropic_clean.json"),
            "--format",
            "xml",
        ])
        .assert()
        .code(2);
}

/// What is read is `--input-format`, what is written `--format` (one word
/// had both meanings, issue 60 item 5). The old spelling still reads the
/// same and says the new one; two different input formats are refused.
#[test]
fn input_format_names_what_is_read_and_format_what_is_written() {
    let file = format!("{T}/responses_string_input.json");
    let new = loopdbg()
        .args([
            "check",
            &file,
            "--input-format",
            "responses",
            "--format",
            "json",
        ])
        .assert()
        .code(0)
        .stderr("");
    let old = loopdbg()
        .args(["check", &file, "--format", "responses", "--format", "json"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "note: --format responses names what is read; it is spelled --input-format responses now",
        ));
    assert_eq!(new.get_output().stdout, old.get_output().stdout);
    loopdbg()
        .args([
            "check",
            &file,
            "--input-format",
            "openai",
            "--format",
            "responses",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--input-format openai and --format responses name two input formats",
        ));
    loopdbg()
        .args(["check", &file, "--input-format", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown input format `json`"));
}

/// `check --fix` writes what it did not repair as it was: numbers as
/// written, a key written twice, the other requests' lines byte for byte.
#[test]
fn check_fix_leaves_numbers_and_keys_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bodies.jsonl");
    let broken = r#"{"model":"m","max_tokens":1e3,"seed":123456789012345678901234567890,"metadata":{"k":1,"k":2},"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"n":1E2}},{"type":"tool_use","id":"toolu_2","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}"#;
    let clean = r#"{"model":"m","max_tokens":1e3,"messages":[{"role":"user","content":"hi"}]}"#;
    std::fs::write(&input, format!("{clean}\n{broken}\n")).unwrap();
    let out = dir.path().join("fixed.jsonl");
    loopdbg()
        .arg("check")
        .arg(&input)
        .args(["--fix", "synthesize", "-o"])
        .arg(&out)
        .assert()
        .code(0);
    let fixed = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = fixed.lines().collect();
    assert_eq!(lines[0], clean);
    for kept in [
        r#""max_tokens":1e3"#,
        "123456789012345678901234567890",
        r#"{"k":1,"k":2}"#,
        r#"{"n":1E2}"#,
        r#"{"role":"user","content":"go"}"#,
    ] {
        assert!(lines[1].contains(kept), "{kept} lost: {}", lines[1]);
    }
    assert!(lines[1].contains("toolu_2"), "{}", lines[1]);
}

#[test]
fn check_fix_writes_a_repaired_copy_and_never_the_input() {
    let dir = std::env::temp_dir().join(format!("loopdbg-fix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = format!("{T}/anthropic_parallel_one_missing.json");
    let before = std::fs::read(&input).unwrap();
    let out = dir.join("fixed.json");
    loopdbg()
        .args(["check", &input, "--fix", "synthesize", "-o"])
        .arg(&out)
        .assert()
        .code(0)
        .stderr(predicate::str::contains("1 repair(s)"));
    let fixed: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        fixed["messages"][2]["content"][1]["tool_use_id"],
        "toolu_f1"
    );
    assert_eq!(fixed["messages"][2]["content"][1]["is_error"], true);
    assert_eq!(std::fs::read(&input).unwrap(), before, "input untouched");
    loopdbg()
        .args(["check", &input, "--fix", "strip", "-o", &input])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("refusing to overwrite the input"));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    loopdbg()
        .args([
            "check",
            &format!("{T}/claude_code_interrupted.jsonl"),
            "--fix",
            "synthesize",
            "-o",
        ])
        .arg(dir.join("cc.jsonl"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "does not rewrite a Claude Code log",
        ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_emit_prints_every_request_body() {
    let out = loopdbg()
        .args(["run", "sessions/weather_fx.json", "--emit", "anthropic"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let bodies: Vec<Value> = serde_json::Deserializer::from_slice(&out)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    assert_eq!(bodies.len(), 2, "two requests");
    assert_eq!(bodies[0]["messages"].as_array().unwrap().len(), 1);
    assert_eq!(bodies[0]["tools"][1]["name"], "get_fx_rate");
    assert_eq!(bodies[0]["tools"][0]["input_schema"]["required"][0], "city");
    let second = bodies[1]["messages"].as_array().unwrap();
    // Anthropic: both results in one user message.
    assert_eq!(second.len(), 3);
    assert_eq!(second[2]["role"], "user");
    assert_eq!(second[2]["content"].as_array().unwrap().len(), 2);

    let out = loopdbg()
        .args([
            "run",
            "sessions/weather_fx.json",
            "--emit",
            "openai",
            "--model",
            "my-model",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let bodies: Vec<Value> = serde_json::Deserializer::from_slice(&out)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    assert_eq!(bodies[1]["model"], "my-model");
    let roles: Vec<&str> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert!(bodies[1]["messages"][1]["tool_calls"][0]["function"]["arguments"].is_string());
}

#[test]
fn run_closure_flag_and_fault_sessions() {
    let v = run_json(&["sessions/fault_sibling_error.json", "--closure", "leave"]);
    assert_eq!(v["unpaired"], serde_json::json!(["toolu_cfg_c"]));
    assert_eq!(v["strategy"]["closure"], "leave");
    assert_eq!(v["round_details"][0]["executed"][2]["status"], "cancelled");
    let v = run_json(&[
        "sessions/fault_sibling_error.json",
        "--closure",
        "synthesize",
    ]);
    assert_eq!(v["unpaired"], serde_json::json!([]));
    assert_eq!(
        v["round_details"][0]["executed"][2]["result"],
        "cancelled: sibling failed"
    );
    let v = run_json(&["sessions/fault_interrupt.json", "--closure", "leave"]);
    assert_eq!(v["end"], "error");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "dangling_at_end")
    );
    loopdbg()
        .args(["run", "sessions/fault_subagent.json"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "research -> {\"status\":\"completed\"",
        ));
    loopdbg()
        .args(["run", "sessions/weather.json", "--closure", "sometimes"])
        .assert()
        .code(2);
}

#[test]
fn compare_marks_silent_wrong_answers() {
    let out = loopdbg()
        .args(["compare", "sessions/stop_truncated.json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("| end | warnings | final text |")
    );
    let row = text
        .lines()
        .find(|l| l.contains("| all | tool-calls |"))
        .unwrap();
    assert!(
        row.contains("| model_done | truncated_answer | null |"),
        "{row}"
    );
}

#[test]
fn record_turns_a_claude_code_log_into_a_session_that_replays_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("recorded.json");
    loopdbg()
        .args([
            "record",
            "tests/fixtures/transcripts/claude_code_v2/parallel.jsonl",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("recorded 2 round(s)"))
        .stderr(predicate::str::contains(
            "the file keeps no tool definitions",
        ));
    let run = loopdbg()
        .args(["run", "--format", "json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success());
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["rounds"], 2);
    assert_eq!(
        report["tool_runs"].as_array().unwrap().len(),
        2,
        "both parallel calls"
    );
    assert_eq!(report["unpaired"].as_array().unwrap().len(), 0);
}

#[test]
fn record_refuses_what_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.json");
    loopdbg()
        .args([
            "record",
            "tests/fixtures/transcripts/anthropic_clean.json",
            "--conversation",
            "3",
            "-o",
        ])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds 1 conversation(s)"));
    assert!(!out.exists());
}

#[test]
fn diff_of_first_and_all_parts_at_round_1_over_toolu_f1() {
    let out = loopdbg()
        .args([
            "diff",
            "sessions/weather_fx.json",
            "--left-strategy",
            "extract=first",
            "--right-strategy",
            "extract=all",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the runs differ");
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["first_divergence"]["round"], 1);
    assert_eq!(
        d["first_divergence"]["dropped_by_left"],
        serde_json::json!(["toolu_f1"])
    );
    let text = loopdbg()
        .args([
            "diff",
            "sessions/weather_fx.json",
            "--left-strategy",
            "extract=first",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("first divergence: round 1"), "{text}");
    assert!(text.contains("left does not run: toolu_f1"), "{text}");
}

#[test]
fn diff_of_a_run_with_itself_exits_0_and_bad_specs_exit_2() {
    loopdbg()
        .args(["diff", "sessions/weather.json", "sessions/weather.json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("the runs are the same"));
    loopdbg()
        .args([
            "diff",
            "sessions/weather.json",
            "--left-strategy",
            "extract=some",
        ])
        .assert()
        .code(2);
    loopdbg()
        .args([
            "diff",
            "tests/fixtures/transcripts/anthropic_clean.json",
            "--left-strategy",
            "extract=first",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no strategy to set"));
}

#[test]
fn diff_of_two_captures_compares_their_replays() {
    loopdbg()
        .args([
            "diff",
            "tests/fixtures/transcripts/anthropic_clean.json",
            "tests/fixtures/transcripts/anthropic_parallel_one_missing.json",
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("first divergence"));
}

/// Without a terminal the debugger names the headless command for what it
/// opened: `check` for a captured conversation, `run` for a session. So
/// this shows what the file was taken for.
fn taken_for(path: &std::path::Path) -> &'static str {
    let out = loopdbg().arg(path).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("use `loopdbg check") {
        "conversation"
    } else if said.contains("use `loopdbg run") {
        "session"
    } else {
        panic!("{said}")
    }
}

#[test]
fn the_debugger_tells_logs_and_bodies_from_sessions_by_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let log = std::fs::read_to_string(format!("{T}/claude_code_v2/parallel.jsonl")).unwrap();
    let mut lines = log.lines();
    let first = lines.next().unwrap();
    let rest: Vec<&str> = lines.collect();
    // Known from its first line and the start of the next, with blank
    // lines between them.
    let spaced = write(
        "spaced.jsonl",
        &format!("{first}\n\n  \n{}\n", rest.join("\n")),
    );
    assert_eq!(taken_for(&spaced), "conversation");
    let body = std::fs::read_to_string(format!("{T}/anthropic_clean.json")).unwrap();
    let one_line: Value = serde_json::from_str(&body).unwrap();
    let one_line = write("body.json", &format!("{one_line}\n\n"));
    assert_eq!(taken_for(&one_line), "conversation");
    let pretty = write("pretty.json", &body);
    assert_eq!(taken_for(&pretty), "conversation");
    let session = std::fs::read_to_string("sessions/weather.json").unwrap();
    let session_one_line: Value = serde_json::from_str(&session).unwrap();
    let session_one_line = write("session.json", &format!("{session_one_line}\n"));
    assert_eq!(taken_for(&session_one_line), "session");
    assert_eq!(
        taken_for(std::path::Path::new("sessions/weather.json")),
        "session"
    );
}

#[test]
fn run_on_a_capture_says_what_works_on_it() {
    let file = "tests/fixtures/transcripts/claude_code_v2/parallel.jsonl";
    Command::cargo_bin("loopdbg")
        .unwrap()
        .args(["run", file])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "this is a captured conversation, not a session: `loopdbg {file}` replays it, `loopdbg check {file}` checks it"
        )));
}

/// Whether a trace is a replay is a fact of the trace, never a behavior's
/// name: a session whose behavior is called `replay` is warned about as
/// under any other name (the `uncited` warning once went silent).
#[test]
fn a_behavior_named_replay_gets_the_same_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sessions/weather.json"
    ))
    .unwrap();
    let renamed = dir.path().join("weather_replay.json");
    std::fs::write(&renamed, text.replace("\"ignores_result\"", "\"replay\"")).unwrap();
    let original = run_json(&["sessions/weather.json", "--behavior", "ignores_result"]);
    let named_replay = run_json(&[renamed.to_str().unwrap(), "--behavior", "replay"]);
    let kinds = |v: &Value| -> Vec<Value> {
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["kind"].clone())
            .collect()
    };
    assert!(
        kinds(&original).contains(&Value::from("uncited")),
        "{original}"
    );
    assert_eq!(kinds(&named_replay), kinds(&original));
}

/// A typo of a subcommand is named as one, with the nearest subcommand,
/// instead of clap's word about the next argument.
#[test]
fn a_mistyped_subcommand_gets_the_nearest_one() {
    let out = loopdbg().args(["chek", "x.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("unknown subcommand `chek`"), "{said}");
    assert!(said.contains("`check`"), "{said}");
    // Another typo, of another subcommand.
    let out = loopdbg().args(["lnit"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("`lint`"));
}

#[test]
fn completions_and_the_man_page_come_from_the_same_definitions() {
    let out = loopdbg().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("complete -F") && script.contains("proxy"),
        "{script}"
    );
    let out = loopdbg().args(["completions", "fish"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete -c loopdbg"));
    let out = loopdbg().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH loopdbg 1"), "{page}");
    assert!(page.contains("proxy"), "{page}");
}

/// `--agents-anywhere` is offered where sessions are loaded, nowhere else.
#[test]
fn agents_anywhere_is_offered_only_where_sessions_load() {
    let help = |args: &[&str]| {
        let out = loopdbg().args(args).arg("--help").output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for sub in ["run", "compare", "lint", "diff"] {
        assert!(help(&[sub]).contains("--agents-anywhere"), "{sub}");
    }
    for sub in ["proxy", "check", "record", "schema"] {
        assert!(!help(&[sub]).contains("--agents-anywhere"), "{sub}");
    }
}

/// Without a terminal the tour says it needs one, instead of suggesting
/// `loopdbg run` on its first stop's session (issue 22, item 7).
#[test]
fn the_tour_without_a_terminal_asks_for_one() {
    let out = loopdbg().arg("tour").output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("the tour needs a terminal"), "{said}");
    assert!(!said.contains("loopdbg run"), "{said}");
}

/// A number only a synthesized placeholder could have supplied is called
/// out: under `synthesize` the stub's "7.12" was taken as a fact with no
/// warning (issue 22, item 2).
#[test]
fn an_answer_stating_a_number_no_tool_returned_is_warned_about() {
    let mut args = crate::common::FX_FIRST_REASK.to_vec();
    args.extend(["--closure", "synthesize"]);
    let report = run_json(&args);
    let warnings = report["warnings"].as_array().unwrap();
    let unsourced: Vec<&Value> = warnings
        .iter()
        .filter(|w| w["kind"] == "unsourced")
        .collect();
    assert_eq!(unsourced.len(), 1, "{warnings:?}");
    let said = unsourced[0]["message"].as_str().unwrap();
    assert!(
        said.contains("7.12") && said.contains("placeholder"),
        "{said}"
    );
    assert!(!said.contains("24"), "24 came from get_weather: {said}");
    // The same session answered by every tool says nothing of the kind.
    let report = run_json(&["sessions/weather_fx.json"]);
    assert!(
        !report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "unsourced")
    );
}

/// `hooks install` finds Claude Code's settings as Claude Code does
/// (`CLAUDE_CONFIG_DIR`, else `~/.claude`), writes hooks that run this
/// very binary, refuses settings that are not JSON (where, exit 2, nothing
/// written), refuses agents it does not install for; `run` never fails
/// the agent whatever its input.
#[test]
fn hooks_install_where_claude_code_reads_and_never_fail_the_agent() {
    let home = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    loopdbg()
        .args(["hooks", "install", "claude-code"])
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", config.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("installed loopdbg's hooks"));
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(config.path().join("settings.json")).unwrap(),
    )
    .unwrap();
    let command = written["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.starts_with(env!("CARGO_BIN_EXE_loopdbg"))
            && command.ends_with(" hooks run claude-code session-start"),
        "{command}"
    );
    assert!(!home.path().join(".claude").exists());
    std::fs::write(config.path().join("settings.json"), "{\"a\": 1,,}").unwrap();
    loopdbg()
        .args(["hooks", "install", "claude-code"])
        .env("CLAUDE_CONFIG_DIR", config.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("settings.json:1:9: not JSON"));
    assert_eq!(
        std::fs::read_to_string(config.path().join("settings.json")).unwrap(),
        "{\"a\": 1,,}"
    );
    loopdbg()
        .args(["hooks", "install", "codex"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Codex CLI runs no hook before"));
    for input in [
        "",
        "not json",
        "{\"transcript_path\": \"/nonexistent/x.jsonl\"}",
    ] {
        loopdbg()
            .args(["hooks", "run", "claude-code", "session-start"])
            .write_stdin(input)
            .assert()
            .success()
            .stdout("");
    }
}
