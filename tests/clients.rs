//! Real SDK clients against the fake provider on loopback, direct and
//! through `loopdbg proxy`: boto3's Bedrock Runtime client (Converse and
//! ConverseStream, SigV4-signed, its own event stream parser and error
//! mapping) runs `tests/clients/bedrock_loop.py`. The clients come from
//! `scripts/install-clients.sh` (a virtualenv in `target/clients`, which
//! `.ci/run` installs).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use loopdbg_fake as fake;
use serde_json::Value;

fn python() -> Option<PathBuf> {
    let dir = std::env::var_os("LOOPDBG_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/clients"));
    let python = dir.join("bin/python");
    python.exists().then_some(python)
}

/// A script of `tests/clients/` run by the clients' Python, from the
/// repository's root: what it printed (it must succeed).
fn python_script(python: &Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `loopdbg proxy` in front of `upstream`, killed when dropped.
struct Proxy {
    child: Child,
    url: String,
}

impl Proxy {
    fn start(upstream: &str, capture: &Path, extra: &[&str]) -> Proxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args([
                "proxy",
                "--no-tui",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream,
            ])
            .arg("--capture")
            .arg(capture)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let url = format!("http://{}", crate::common::proxy_address(&banner));
        Proxy { child, url }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The loop's trips as boto3 saw them.
fn run_loop(python: &Path, endpoint: &str, mode: &str, answer: &str) -> Vec<Value> {
    let printed = python_script(
        python,
        "tests/clients/bedrock_loop.py",
        &[endpoint, mode, answer],
    );
    serde_json::from_str(&printed).unwrap()
}

#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn boto3_bedrock_loops_behave_through_the_proxy_as_direct() {
    let Some(python) = python() else {
        return crate::common::skip(
            "boto3_bedrock_loops_behave_through_the_proxy_as_direct",
            "no boto3 virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(fake::start());
    let dir = crate::common::scratch("clients");
    let capture = dir.join("capture.jsonl");
    let proxy = Proxy::start(&fake.url, &capture, &[]);
    for mode in ["stream", "plain"] {
        for answer in ["all", "first"] {
            let direct = run_loop(&python, &fake.url, mode, answer);
            let proxied = run_loop(&python, &proxy.url, mode, answer);
            assert_eq!(direct, proxied, "{mode} {answer}");
            assert_eq!(direct[0][0], "tool_use", "{direct:?}");
            match answer {
                "all" => assert_eq!(direct[1][1][0]["text"], "北京 18°C, USD/CNY 7.12"),
                _ => {
                    assert_eq!(direct[1][0], "ValidationException");
                    let said = direct[1][1].as_str().unwrap();
                    assert!(
                        said.ends_with("Expected toolResult blocks at messages.2.content for the following Ids: tooluse_f1"),
                        "{said}"
                    );
                }
            }
        }
    }
    // Every exchange is in the capture, the streamed ones rebuilt, and no
    // credential: the secret key signs, it is never sent, and the
    // signature stays out.
    let text = std::fs::read_to_string(&capture).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r["provider"] == "bedrock"));
    assert_eq!(
        records[0]["response"]["output"]["message"]["content"][1]["toolUse"]["input"],
        serde_json::json!({"pair": "USD/CNY"})
    );
    assert!(!text.contains("Signature=") && !text.contains("AKIDEXAMPLE"));
    drop(proxy);
    // Under --on-invalid block the SDK raises Bedrock's own exception type,
    // and the fake never sees the broken request.
    let before = fake.log.lock().unwrap().requests.len();
    let blocking = Proxy::start(
        &fake.url,
        &dir.join("blocked.jsonl"),
        &["--on-invalid", "block"],
    );
    let trips = run_loop(&python, &blocking.url, "stream", "first");
    assert_eq!(trips[1][0], "ValidationException");
    assert!(
        trips[1][1]
            .as_str()
            .unwrap()
            .contains("(blocked by loopdbg proxy before it reached the provider)"),
        "{trips:?}"
    );
    assert_eq!(fake.log.lock().unwrap().requests.len(), before + 1);
}

/// The official MCP Python SDK's client (`tests/clients/mcp_server_client.py`)
/// driving `loopdbg mcp-server` as an agent would: it checks a request body
/// whose second parallel call has no result and gets Anthropic's 400 for
/// that id and a repaired copy that checks clean; asks what the finding
/// means; scans a home holding a real Gemini CLI chat that `gemini
/// --resume` cannot send and finds it; has its repair planned (nothing
/// written) and then written (a backup kept), after which the chat checks
/// clean.
#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn the_official_mcp_client_checks_and_repairs_through_loopdbg_mcp_server() {
    let Some(python) = python() else {
        return crate::common::skip(
            "the_official_mcp_client_checks_and_repairs_through_loopdbg_mcp_server",
            "no mcp virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let home = crate::common::scratch("mcp-server");
    let chats = home.join(".gemini/tmp/ann-app/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(
        home.join(".gemini/tmp/ann-app/.project_root"),
        "/work/ann-app",
    )
    .unwrap();
    let name = "session-2026-12-02T04-27-6a20c2cd.jsonl";
    let original =
        std::fs::read(Path::new("tests/fixtures/transcripts/gemini_cli").join(name)).unwrap();
    let chat = chats.join(name);
    std::fs::write(&chat, &original).unwrap();
    let out = python_script(
        &python,
        "tests/clients/mcp_server_client.py",
        &[env!("CARGO_BIN_EXE_loopdbg"), path(&home), path(&chat)],
    );
    let got: Value = serde_json::from_str(&out).unwrap();
    let text = |key: &str| got[key][0].as_str().unwrap().to_string();
    assert_eq!(got["server"], "loopdbg");
    assert_eq!(
        got["tools"],
        serde_json::json!([
            "check_file",
            "check_request",
            "explain_finding",
            "list_unresumable_sessions",
            "repair_session"
        ])
    );
    // The request: Anthropic's words, the id, and a repair that holds.
    let checked = text("checked");
    assert!(
        checked.contains("unanswered_call (400)  [toolu_fx]"),
        "{checked}"
    );
    assert!(
        checked.contains("Each `tool_use` block must have a corresponding `tool_result` block")
    );
    assert!(checked.contains("checked again: no problems"), "{checked}");
    let report: Value = serde_json::from_str(got["checked"][1].as_str().unwrap()).unwrap();
    assert_eq!(
        report["files"][0]["results"][0]["findings"][0]["ids"],
        serde_json::json!(["toolu_fx"])
    );
    assert_eq!(report["repaired_clean"], true);
    assert_eq!(
        report["repaired"]["messages"][2]["content"][1]["tool_use_id"],
        "toolu_fx"
    );
    assert!(text("explained").starts_with("unanswered_call: a tool call without its result"));
    assert_eq!(got["unknown_error"], true);
    // The scan finds the chat, says Gemini's 400 and the resume command.
    let scanned = text("scanned");
    assert!(
        scanned.contains("1 cannot be resumed") && scanned.contains(name),
        "{scanned}"
    );
    assert!(scanned.contains(
        "number of function response parts is equal to the number of function call parts"
    ));
    assert!(scanned.contains("gemini --resume 6a20c2cd"));
    assert!(
        scanned.contains("call repair_session with write: true"),
        "{scanned}"
    );
    // Planned: nothing written. Written: the original kept, clean after.
    let planned = text("planned");
    assert!(
        planned.contains("2 change(s) would make it sendable"),
        "{planned}"
    );
    assert!(planned.contains("call repair_session with write: true to repair it"));
    assert_eq!(got["plan_wrote"], original.len());
    let written = text("written");
    assert!(
        written.contains("checked again: nothing keeps it from being sent"),
        "{written}"
    );
    let backup = chats.join(format!("{name}.loopdbg-bak"));
    assert_eq!(std::fs::read(backup).unwrap(), original);
    assert!(text("again").contains("no problems"));
}

/// The official MCP Python SDK's client (`tests/clients/mcp_client.py`)
/// run against its server (`tests/clients/mcp_server.py`), once directly
/// and once through `loopdbg mcp`: what it gets must be the same, and the
/// capture must hold the session, checked clean.
#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn the_official_mcp_client_and_server_behave_through_the_tap_as_direct() {
    let Some(python) = python() else {
        return crate::common::skip(
            "the_official_mcp_client_and_server_behave_through_the_tap_as_direct",
            "no mcp virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let dir = crate::common::scratch("mcp-clients");
    let capture = dir.join("mcp.jsonl");
    let client = |command: &[&str]| python_script(&python, "tests/clients/mcp_client.py", command);
    let server = python.to_str().unwrap();
    let direct = client(&[server, "tests/clients/mcp_server.py"]);
    let tapped = client(&[
        env!("CARGO_BIN_EXE_loopdbg"),
        "mcp",
        "--capture",
        capture.to_str().unwrap(),
        "--",
        server,
        "tests/clients/mcp_server.py",
    ]);
    assert_eq!(tapped, direct);
    assert!(direct.contains("18°C, haze") && direct.contains("\"broken_error\": true"));
    // The capture: the start, then each message in order, by side.
    let records: Vec<Value> = std::fs::read_to_string(&capture)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<String> = records[1..]
        .iter()
        .map(|r| {
            let m = &r["message"];
            let what = m["method"]
                .as_str()
                .map_or_else(|| format!("reply {}", m["id"]), str::to_string);
            format!("{} {what}", r["from"].as_str().unwrap())
        })
        .collect();
    assert_eq!(records[0]["event"], "start");
    assert_eq!(
        seen,
        [
            "client initialize",
            "server reply 1",
            "client notifications/initialized",
            "client tools/list",
            "server reply 2",
            "client tools/call",
            "server reply 3",
            "client tools/call",
            "server reply 4",
        ]
    );
    let out = crate::common::loopdbg()
        .args(["check", "--format", "json"])
        .arg(&capture)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["files"][0]["format"], "mcp");
    assert_eq!(report["files"][0]["results"][0]["messages"], 9);
    // Replayed, the session is the agent's two calls and their results,
    // the failed tool's an error: what `run --export otlp` writes.
    let export = dir.join("mcp.otlp.jsonl");
    crate::common::loopdbg()
        .args(["run", "--export", "otlp", "-o"])
        .arg(&export)
        .arg(&capture)
        .assert()
        .success();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let tools: Vec<(&str, &Value)> = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("execute_tool "))
        .map(|s| (s["name"].as_str().unwrap(), &s["status"]["code"]))
        .collect();
    assert_eq!(
        tools,
        [
            ("execute_tool get_weather", &serde_json::json!(0)),
            ("execute_tool broken", &serde_json::json!(2))
        ],
        "{doc:#}"
    );
}

/// Real instrumentation libraries over the real SDKs against the fake
/// (`tests/clients/otel_loop.py`), their spans exported by the
/// OpenTelemetry SDK as OTLP JSON Lines and protobuf: `check` finds the
/// fake's 400 in the trace whose loop dropped a result, naming the call,
/// and nothing in the trace whose loop answered both calls.
#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn real_instrumentation_traces_check_as_the_provider_answered() {
    let Some(python) = python() else {
        return crate::common::skip(
            "real_instrumentation_traces_check_as_the_provider_answered",
            "no instrumentation virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(fake::start());
    let dir = crate::common::scratch("otel-clients");
    for (library, id) in [
        ("openinference-openai", "call_f1"),
        ("openinference-anthropic", "toolu_f1"),
        ("openllmetry-anthropic", "toolu_f1"),
        ("otel-openai-v2", "call_f1"),
        // The <= 1.36 conventions: the messages are log records beside the
        // spans (OUT.logs.jsonl), which is where the check looks.
        ("otel-openai-v2-events", "call_f1"),
    ] {
        for mode in ["all", "first"] {
            let json = dir.join(format!("{library}-{mode}.jsonl"));
            let pb = dir.join(format!("{library}-{mode}.pb"));
            let ran: Value = serde_json::from_str(&python_script(
                &python,
                "tests/clients/otel_loop.py",
                &[library, &fake.url, mode, path(&json), path(&pb)],
            ))
            .unwrap();
            let checked = match library.ends_with("-events") {
                true => vec![dir.join(format!("{library}-{mode}.logs.jsonl"))],
                false => vec![json.clone(), pb.clone()],
            };
            for file in &checked {
                let (code, report) = crate::common::check_json(file);
                let findings: Vec<Value> = crate::common::findings(&report)
                    .into_iter()
                    .filter(|f| f["kind"] == "unanswered_call")
                    .collect();
                match mode {
                    "all" => {
                        assert_eq!(ran["answer"], "北京 18°C, USD/CNY 7.12", "{ran}");
                        assert_eq!(code, Some(0), "{library} {report:#}");
                    }
                    _ => {
                        assert_eq!(ran["status"], 400, "{ran}");
                        assert_eq!(code, Some(1), "{library} {report:#}");
                        assert_eq!(findings.len(), 1, "{library} {report:#}");
                        assert_eq!(findings[0]["ids"][0], id);
                        assert_eq!(findings[0]["rejected_by_provider"], true);
                    }
                }
                assert!(
                    !String::from_utf8_lossy(&std::fs::read(file).unwrap()).contains("sk-"),
                    "an API key reached the trace"
                );
            }
        }
    }
}

/// `run --export otlp` (a run, and a replay of a trace) parses with the
/// OpenTelemetry project's own protobuf schema (opentelemetry-proto's
/// Python messages, strictly: no unknown field, no wrong type).
#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn exported_otlp_parses_with_the_opentelemetry_proto_schema() {
    let Some(python) = python() else {
        return crate::common::skip(
            "exported_otlp_parses_with_the_opentelemetry_proto_schema",
            "no opentelemetry-proto virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let dir = crate::common::scratch("otlp-schema");
    let run = dir.join("run.jsonl");
    let replay = dir.join("replay.jsonl");
    for (input, out, extra) in [
        (
            "sessions/weather_fx.json",
            &run,
            &["--extract", "first"][..],
        ),
        (
            "tests/fixtures/otlp/openllmetry-anthropic-all.jsonl",
            &replay,
            &[][..],
        ),
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args(["run", input, "--export", "otlp", "-o"])
            .arg(out)
            .args(extra)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let parsed: Value = serde_json::from_str(&python_script(
        &python,
        "tests/clients/otlp_validate.py",
        &[path(&run), path(&replay)],
    ))
    .unwrap();
    assert_eq!(
        parsed[0]["spans"],
        serde_json::json!([
            "invoke_agent Two calls in one turn: weather and FX, and what `first` costs",
            "chat claude-sonnet-4-5",
            "execute_tool get_weather",
            "chat claude-sonnet-4-5"
        ])
    );
    assert_eq!(parsed[1]["spans"].as_array().unwrap().len(), 5, "{parsed}");
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for a line on `from` containing `what` (a server's "listening"
/// line), and keeps draining the rest so the child never blocks on it.
fn wait_for_line(from: impl std::io::Read + Send + 'static, what: &'static str) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if line.contains(what) {
                let _ = tx.send(line);
            }
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no line with {what:?}"))
}

/// The official MCP Python SDK's Streamable HTTP server and client, once
/// directly and once through `loopdbg mcp --upstream`: the same answers,
/// and the capture holds the session's messages in order (the answers
/// came as server-sent events), checked clean and replayed.
#[test]
#[ignore = "end-to-end: the real SDK clients (scripts/install-clients.sh)"]
fn the_official_mcp_http_client_and_server_behave_through_the_tap_as_direct() {
    let Some(python) = python() else {
        return crate::common::skip(
            "the_official_mcp_http_client_and_server_behave_through_the_tap_as_direct",
            "no mcp virtualenv in target/clients (run scripts/install-clients.sh)",
        );
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(&python)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tests/clients/mcp_server.py", "http", &port.to_string()])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let err = server.stderr.take().unwrap();
    let _server = Killed(server);
    wait_for_line(err, "Uvicorn running on");
    let dir = crate::common::scratch("mcp-http");
    let capture = dir.join("mcp.jsonl");
    let mut tap = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args([
            "mcp",
            "--upstream",
            &format!("http://127.0.0.1:{port}"),
            "--listen",
            "127.0.0.1:0",
            "--capture",
        ])
        .arg(&capture)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = tap.stderr.take().unwrap();
    let _tap = Killed(tap);
    let banner = wait_for_line(err, "listening on http://");
    let addr = banner
        .split("listening on http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let client =
        |url: String| python_script(&python, "tests/clients/mcp_client.py", &["--http", &url]);
    let direct = client(format!("http://127.0.0.1:{port}/mcp"));
    let tapped = client(format!("http://{addr}/mcp"));
    assert_eq!(tapped, direct);
    assert!(direct.contains("18°C, haze") && direct.contains("\"broken_error\": true"));
    let records: Vec<Value> = std::fs::read_to_string(&capture)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<String> = records[1..]
        .iter()
        .map(|r| {
            let m = &r["message"];
            let what = m["method"]
                .as_str()
                .map_or_else(|| format!("reply {}", m["id"]), str::to_string);
            format!("{} {what}", r["from"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        seen,
        [
            "client initialize",
            "server reply 1",
            "client notifications/initialized",
            "client tools/list",
            "server reply 2",
            "client tools/call",
            "server reply 3",
            "client tools/call",
            "server reply 4",
        ],
        "{records:#?}"
    );
    let (code, report) = crate::common::check_json(&capture);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["files"][0]["format"], "mcp");
}
