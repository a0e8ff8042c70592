//! `loopdbg proxy` end to end: the real binary between small agent loops
//! and a fake provider (tests/fake), on loopback. No sleeps: each step
//! waits for the proxy's own line about the exchange, which it prints only
//! after the exchange is in the capture.

use loopdbg_fake as fake;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

const SECRET: &str = "sk-ant-SECRET-0123456789";
const WAIT: Duration = Duration::from_secs(60);

struct Proxy {
    child: Child,
    url: String,
    /// The first line on stderr.
    banner: String,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Proxy {
    fn start(upstream: &str, capture: &Path, extra: &[&str]) -> Proxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args([
                "proxy",
                "--upstream",
                upstream,
                "--listen",
                "127.0.0.1:0",
                "--no-tui",
            ])
            .arg("--capture")
            .arg(capture)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (etx, stderr) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        let first = stderr
            .recv_timeout(WAIT)
            .expect("the proxy announces itself");
        let addr = crate::common::proxy_address(&first);
        // The banner says the policy and where exchanges go.
        let policy = extra
            .iter()
            .position(|a| *a == "--on-invalid")
            .map_or("forward", |i| extra[i + 1]);
        assert!(
            first.contains(&format!("--on-invalid {policy}")) && first.contains("capture "),
            "{first}"
        );
        Proxy {
            child,
            url: format!("http://{addr}"),
            banner: first.clone(),
            lines,
            stderr,
        }
    }

    /// The proxy's line about the next exchange (written after the capture).
    fn next_line(&self) -> String {
        self.lines.recv_timeout(WAIT).expect("a line per exchange")
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn capture(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tools_anthropic() -> Value {
    json!([
        {"name": "get_weather", "description": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"name": "get_fx_rate", "description": "fx", "input_schema": {"type": "object", "properties": {"pair": {"type": "string"}}}}
    ])
}

fn run_tool(name: &str) -> &'static str {
    match name {
        "get_weather" => "18°C",
        _ => "7.12",
    }
}

thread_local! {
    /// The raw bodies the agent received, in order, on this test's thread.
    static RECEIVED: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An Anthropic agent loop: `first_only` is the classic bug (only the
/// first tool_use runs).
async fn anthropic_agent(base: &str, prompt: &str, first_only: bool) -> (Vec<u16>, Vec<Value>) {
    let client = reqwest::Client::new();
    let mut messages = vec![json!({"role": "user", "content": prompt})];
    let mut statuses = Vec::new();
    let mut answers = Vec::new();
    for _ in 0..4 {
        let body = json!({"model": "claude-test", "max_tokens": 256, "tools": tools_anthropic(), "messages": messages});
        let r = client
            .post(format!("{base}/v1/messages"))
            .header("x-api-key", SECRET)
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        let raw = r.bytes().await.unwrap();
        RECEIVED.with(|r| r.borrow_mut().push(raw.to_vec()));
        let answer: Value = serde_json::from_slice(&raw).unwrap();
        answers.push(answer.clone());
        if statuses.last() != Some(&200) || answer["stop_reason"] != "tool_use" {
            break;
        }
        let content = answer["content"].clone();
        messages.push(json!({"role": "assistant", "content": content}));
        let mut results = Vec::new();
        for block in content.as_array().unwrap() {
            if block["type"] == "tool_use" {
                results.push(json!({"type": "tool_result", "tool_use_id": block["id"],
                    "content": run_tool(block["name"].as_str().unwrap())}));
                if first_only {
                    break;
                }
            }
        }
        messages.push(json!({"role": "user", "content": results}));
    }
    (statuses, answers)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn no_secret_in(capture: &Path, proxy: &Proxy, printed: &[String]) {
    let text = std::fs::read_to_string(capture).unwrap();
    assert!(!text.contains("SECRET"), "a credential reached the capture");
    for line in printed {
        assert!(!line.contains("SECRET"), "a credential was printed: {line}");
    }
    while let Ok(line) = proxy.stderr.try_recv() {
        assert!(!line.contains("SECRET"), "a credential was logged: {line}");
    }
}

/// The fake provider, the proxy in front of it with a capture, and a
/// runtime for the agent.
struct Rig {
    rt: tokio::runtime::Runtime,
    fake: fake::Fake,
    cap: Capture,
    proxy: Proxy,
}

/// The capture file, in a folder that lives as long as it does.
struct Capture {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for Capture {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Capture {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

fn rig(extra: &[&str]) -> Rig {
    let rt = runtime();
    let fake = rt.block_on(fake::start());
    let (dir, path) = temp();
    let proxy = Proxy::start(&fake.url, &path, extra);
    Rig {
        rt,
        fake,
        cap: Capture { dir, path },
        proxy,
    }
}

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    (dir, path)
}

#[test]
fn two_trips_through_the_proxy_are_forwarded_and_recorded() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&[]);
    let (statuses, answers) = rt.block_on(anthropic_agent(&proxy.url, "weather please", false));
    assert_eq!(statuses, [200, 200]);
    assert_eq!(answers[1]["content"][0]["text"], "北京 18°C, USD/CNY 7.12");
    let printed = vec![proxy.next_line(), proxy.next_line()];
    assert!(
        printed[0].starts_with("#1 anthropic POST /v1/messages → 200"),
        "{printed:?}"
    );
    assert!(printed[1].ends_with("· ok"), "{printed:?}");
    let records = capture(&cap);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["loopdbg"], "exchange");
    assert_eq!(records[0]["provider"], "anthropic");
    assert_eq!(records[1]["status"], 200);
    assert_eq!(
        records[1]["response"]["content"][0]["text"],
        "北京 18°C, USD/CNY 7.12"
    );
    // What the agent received is what the fake sent, byte for byte.
    let log = fake.log.lock().unwrap();
    let received = RECEIVED.with(|r| r.borrow().clone());
    assert_eq!(received, log.answers);
    // The key reached the provider, and nowhere else.
    assert_eq!(log.headers[0]["x-api-key"], SECRET);
    drop(log);
    no_secret_in(&cap, &proxy, &printed);
}

#[test]
fn a_dangling_id_is_forwarded_and_named_then_the_provider_answers_400() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&[]);
    let (statuses, answers) = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", true));
    assert_eq!(statuses, [200, 400]);
    assert_eq!(answers[1]["error"]["type"], "invalid_request_error");
    let _ = proxy.next_line();
    let second = proxy.next_line();
    assert!(second.contains("→ 400"), "{second}");
    assert!(second.contains("400 expected"), "{second}");
    assert!(second.contains("toolu_f1"), "{second}");
    let records = capture(&cap);
    assert_eq!(records[1]["findings"][0]["kind"], "unanswered_call");
    assert_eq!(records[1]["findings"][0]["ids"][0], "toolu_f1");
    assert_eq!(records[1]["action"], "forwarded");
    // The provider saw both requests.
    assert_eq!(fake.log.lock().unwrap().requests.len(), 2);
}

#[test]
fn block_answers_the_providers_400_locally_without_spending_tokens() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&["--on-invalid", "block"]);
    let (statuses, answers) = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", true));
    assert_eq!(statuses, [200, 400]);
    assert_eq!(answers[1]["type"], "error");
    assert_eq!(answers[1]["error"]["type"], "invalid_request_error");
    let message = answers[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains("toolu_f1"), "{message}");
    let _ = proxy.next_line();
    assert!(proxy.next_line().contains("BLOCKED"));
    assert_eq!(
        fake.log.lock().unwrap().requests.len(),
        1,
        "the blocked request never reached the provider"
    );
    assert_eq!(capture(&cap)[1]["action"], "blocked");
}

#[test]
fn repair_makes_the_upstream_receive_a_valid_request() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&["--on-invalid", "repair=synthesize"]);
    let (statuses, _) = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", true));
    assert_eq!(statuses, [200, 200], "the repaired request is accepted");
    let _ = proxy.next_line();
    assert!(proxy.next_line().contains("REPAIRED"));
    let records = capture(&cap);
    assert_eq!(records[1]["action"], "repaired");
    let sent = &fake.log.lock().unwrap().requests[1];
    assert_eq!(
        sent, &records[1]["forwarded"],
        "the capture keeps what was sent"
    );
    let results = sent["messages"][2]["content"].as_array().unwrap();
    assert_eq!(
        results.len(),
        2,
        "a placeholder closes toolu_f1: {results:?}"
    );
    assert_eq!(results[1]["tool_use_id"], "toolu_f1");
    assert_eq!(results[1]["is_error"], true);
}

/// A Responses agent that continues the stored response with
/// `previous_response_id`, answering only the first of its two calls
/// (`first_only`), streamed or not. Returns each trip's status and body.
async fn responses_agent(base: &str, stream: bool, first_only: bool) -> Vec<(u16, Value)> {
    let client = reqwest::Client::new();
    let post = |body: Value| {
        let client = client.clone();
        async move {
            let r = client
                .post(format!("{base}/v1/responses"))
                .bearer_auth("sk-test-responses")
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            let body = if stream && status == 200 {
                // The completed response is in the last `response.completed` event.
                text.lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                    .find(|e| e["type"] == "response.completed")
                    .map(|e| e["response"].clone())
                    .unwrap_or(Value::Null)
            } else {
                serde_json::from_str(&text).unwrap_or(Value::Null)
            };
            (status, body)
        }
    };
    let first = post(json!({"model": "m", "stream": stream, "input": "weather and fx"})).await;
    let calls: Vec<String> = first.1["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["call_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(calls.len(), 2, "{:?}", first.1);
    let answered = if first_only { &calls[..1] } else { &calls[..] };
    let outputs: Vec<Value> = answered
        .iter()
        .map(|c| json!({"type": "function_call_output", "call_id": c, "output": run_tool("get_weather")}))
        .collect();
    let second = post(json!({"model": "m", "stream": stream,
        "previous_response_id": first.1["id"], "input": outputs}))
    .await;
    vec![first, second]
}

/// A request that continues a stored response is checked against the
/// response the proxy relayed: its calls live on the provider's side, and
/// a missing output is the provider's 400 (issue 23, item 16).
#[test]
fn a_continued_response_is_checked_against_the_calls_the_proxy_relayed() {
    for stream in [false, true] {
        // Forward: the finding is named, and the provider answers 400.
        let Rig { rt, cap, proxy, .. } = rig(&[]);
        let trips = rt.block_on(responses_agent(&proxy.url, stream, true));
        assert_eq!(trips[1].0, 400, "{:?}", trips[1].1);
        let _ = proxy.next_line();
        let second = proxy.next_line();
        assert!(second.contains("400 expected"), "{second}");
        let records = capture(&cap);
        let finding = &records[1]["findings"][0];
        assert_eq!(finding["kind"], "unanswered_call", "{finding}");
        assert_eq!(finding["ids"][0], "call_f1");
        assert_eq!(
            finding["path"],
            format!(
                "previous_response_id {} output[1]",
                trips[0].1["id"].as_str().unwrap()
            )
        );
        // Block: answered here in OpenAI's words; the provider never sees it.
        let Rig {
            rt, fake, proxy, ..
        } = rig(&["--on-invalid", "block"]);
        let trips = rt.block_on(responses_agent(&proxy.url, stream, true));
        assert_eq!(trips[1].0, 400);
        let message = trips[1].1["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("No tool output found for function call call_f1."),
            "{message}"
        );
        assert_eq!(
            fake.log.lock().unwrap().requests.len(),
            1,
            "stream {stream}"
        );
        // Both outputs: verified and forwarded, no note.
        let trips = rt.block_on(responses_agent(&proxy.url, stream, false));
        assert_eq!(trips[1].0, 200, "{:?}", trips[1].1);
        // Repair: the missing output is synthesized and the provider accepts.
        let Rig {
            rt, fake, proxy, ..
        } = rig(&["--on-invalid", "repair=synthesize"]);
        let trips = rt.block_on(responses_agent(&proxy.url, stream, true));
        assert_eq!(trips[1].0, 200, "{:?}", trips[1].1);
        let sent = fake.log.lock().unwrap().requests[1].clone();
        let ids: Vec<_> = sent["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["call_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, ["call_f1", "call_w1"], "{sent}");
    }
}

/// A response the proxy never relayed cannot be vouched for: the request
/// goes on with a note, not a verdict.
#[test]
fn a_continued_response_the_proxy_never_saw_is_noted_unverifiable() {
    let Rig { rt, cap, proxy, .. } = rig(&["--on-invalid", "block"]);
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/v1/responses", proxy.url))
            .json(
                &json!({"model": "m", "previous_response_id": "resp_elsewhere",
                "input": [{"type": "function_call_output", "call_id": "call_x", "output": "1"}]}),
            )
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(status, 400, "the fake has no such response either");
    let line = proxy.next_line();
    assert!(!line.contains("BLOCKED"), "{line}");
    let records = capture(&cap);
    let kinds: Vec<_> = records[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unverifiable_result", "unverifiable_chain"]);
}

#[test]
fn two_calls_in_one_turn_over_openai_chat() {
    let Rig {
        rt,
        fake: _,
        cap,
        proxy,
    } = rig(&[]);
    let statuses = rt.block_on(async {
        let client = reqwest::Client::new();
        let mut messages = vec![json!({"role": "user", "content": "weather and fx"})];
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let r = client
                .post(format!("{}/v1/chat/completions", proxy.url))
                .bearer_auth(SECRET)
                .json(&json!({"model": "gpt-test", "messages": messages}))
                .send()
                .await
                .unwrap();
            statuses.push(r.status().as_u16());
            let v: Value = r.json().await.unwrap();
            let message = v["choices"][0]["message"].clone();
            let Some(calls) = message["tool_calls"].as_array().cloned() else {
                break;
            };
            messages.push(message);
            for c in calls {
                messages.push(json!({"role": "tool", "tool_call_id": c["id"],
                    "content": run_tool(c["function"]["name"].as_str().unwrap())}));
            }
        }
        statuses
    });
    assert_eq!(statuses, [200, 200]);
    let printed = vec![proxy.next_line(), proxy.next_line()];
    assert!(
        printed
            .iter()
            .all(|l| l.contains("openai") && l.ends_with("ok")),
        "{printed:?}"
    );
    let records = capture(&cap);
    assert_eq!(
        records[0]["response"]["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    no_secret_in(&cap, &proxy, &printed);
}

/// One streamed request: the agent gets every byte the fake sent, and the
/// capture holds the message the events carried.
fn streamed(path: &str, body: Value, check: impl Fn(&Value)) {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&[]);
    let received = rt.block_on(async {
        let r = reqwest::Client::new()
            .post(format!("{}{path}", proxy.url))
            .header("x-api-key", SECRET)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        assert_eq!(r.headers()["x-fake-provider"], "yes", "headers come back");
        r.bytes().await.unwrap()
    });
    let line = proxy.next_line();
    assert!(line.contains("streamed"), "{line}");
    assert_eq!(&received[..], &fake.log.lock().unwrap().answers[0][..]);
    let records = capture(&cap);
    assert_eq!(records[0]["streamed"], true);
    assert!(
        records[0].get("error").is_none(),
        "{:?}",
        records[0]["error"]
    );
    check(&records[0]["response"]);
    assert!(records[0]["first_byte_ms"].as_f64().is_some());
}

#[test]
fn a_streamed_anthropic_answer_is_forwarded_byte_for_byte_and_reassembled() {
    streamed(
        "/v1/messages",
        json!({"model": "m", "max_tokens": 100, "stream": true, "tools": tools_anthropic(),
               "messages": [{"role": "user", "content": "weather and fx"}]}),
        |m| {
            assert_eq!(m["stop_reason"], "tool_use");
            assert_eq!(m["content"][0]["input"], json!({"city": "北京"}));
            assert_eq!(m["content"][1]["id"], "toolu_f1");
        },
    );
}

#[test]
fn streamed_openai_chunks_are_reassembled_by_index() {
    streamed(
        "/v1/chat/completions",
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "weather and fx"}]}),
        |m| {
            let calls = &m["choices"][0]["message"]["tool_calls"];
            assert_eq!(calls[1]["id"], "call_f1");
            assert_eq!(calls[0]["function"]["arguments"], "{\"city\":\"北京\"}");
            assert_eq!(m["choices"][0]["finish_reason"], "tool_calls");
        },
    );
}

#[test]
fn streamed_responses_events_keep_the_completed_response() {
    streamed(
        "/v1/responses",
        json!({"model": "m", "stream": true, "input": "weather"}),
        |m| {
            assert_eq!(m["status"], "completed");
            assert_eq!(m["output"][0]["call_id"], "call_w1");
        },
    );
}

#[test]
fn a_stream_the_provider_breaks_reaches_the_agent_broken_and_is_recorded() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&[]);
    let outcome = rt.block_on(async {
        let mut r = reqwest::Client::new()
            .post(format!("{}/v1/messages", proxy.url))
            .json(&json!({"model": "m", "max_tokens": 100, "stream": true,
                "messages": [{"role": "user", "content": "weather, then break"}]}))
            .send()
            .await
            .unwrap();
        // The first events arrive; only then does the fake break.
        let first = r.chunk().await.unwrap().unwrap();
        assert!(String::from_utf8_lossy(&first).contains("message_start"));
        fake.breaker.notify_one();
        loop {
            match r.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        }
    });
    assert!(
        outcome.is_err(),
        "the agent sees the break, not a clean end"
    );
    let line = proxy.next_line();
    assert!(
        line.contains("broke off") || line.contains("without its closing event"),
        "{line}"
    );
    let records = capture(&cap);
    assert_eq!(records[0]["action"], "failed");
    assert_eq!(
        records[0]["response"]["content"][0]["type"], "tool_use",
        "what arrived is kept"
    );
}

#[test]
fn gemini_keys_in_the_query_never_reach_the_capture() {
    let Rig {
        rt,
        fake: _,
        cap,
        proxy,
    } = rig(&[]);
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(format!(
                "{}/v1beta/models/gemini-test:generateContent?key={SECRET}",
                proxy.url
            ))
            .header("x-goog-api-key", SECRET)
            .json(&json!({"contents": [{"role": "user", "parts": [{"text": "weather"}]}]}))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status, 200);
    let line = proxy.next_line();
    assert!(
        line.contains("gemini POST /v1beta/models/gemini-test:generateContent →"),
        "{line}"
    );
    let records = capture(&cap);
    assert_eq!(
        records[0]["path"],
        "/v1beta/models/gemini-test:generateContent"
    );
    no_secret_in(&cap, &proxy, &[line]);
}

#[test]
fn record_turns_the_capture_into_a_session_that_replays_the_rounds() {
    let Rig {
        rt,
        fake: _,
        cap,
        proxy,
    } = rig(&[]);
    let (statuses, _) = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", false));
    assert_eq!(statuses, [200, 200]);
    let _ = (proxy.next_line(), proxy.next_line());
    let session = cap.dir.path().join("recorded.json");
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .arg("record")
        .arg(&cap)
        .arg("-o")
        .arg(&session)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("recorded 2 round(s)"), "{said}");
    let run = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["run", "--format", "json"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(run.status.success());
    let trace: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(trace["rounds"], 2);
    assert_eq!(trace["final_text"], "北京 18°C, USD/CNY 7.12");
    assert_eq!(trace["tool_runs"], json!(["get_weather", "get_fx_rate"]));
    // Under `first`, the same recorded run drops toolu_f1.
    let first = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["run", "--extract", "first"])
        .arg(&session)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.contains("toolu_f1"), "{text}");
    // Never over an existing file.
    let again = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .arg("record")
        .arg(&cap)
        .arg("-o")
        .arg(&session)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("never overwrites"));
}

#[test]
fn check_reads_a_capture_and_judges_each_request() {
    let Rig {
        rt,
        fake: _,
        cap,
        proxy,
    } = rig(&[]);
    let _ = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", true));
    let _ = (proxy.next_line(), proxy.next_line());
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .arg("check")
        .arg(&cap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("toolu_f1"), "{text}");
    assert!(text.contains(":2"), "the finding names line 2: {text}");
    // The capture holds what the upstream answered: its 400 confirms it.
    assert!(
        text.contains("The recording confirms it: the provider answered 400"),
        "{text}"
    );
}

/// `--upstream` naming the proxy's own address (the agent's base URL
/// pasted into the wrong flag) is refused at start, exit 2, instead of a
/// proxy that forwards every request to itself until it runs out of
/// connections.
#[test]
fn an_upstream_that_is_the_proxys_own_address_is_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for upstream in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}/v1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args(["proxy", "--no-tui", "--upstream", &upstream])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("is this proxy's own address"), "{said}");
    }
}

#[test]
fn an_unreachable_upstream_is_a_502_with_a_reason() {
    // A port nothing listens on: bind one, then let it go. On 127.0.0.2,
    // since the proxy listens on 127.0.0.1:0 and may be given the same
    // port number: the upstream would then be the proxy itself, which
    // forwards to itself forever (a CI run hung so).
    let port = std::net::TcpListener::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_dir, cap) = temp();
    let proxy = Proxy::start(&format!("http://127.0.0.2:{port}"), &cap, &[]);
    let rt = runtime();
    let (status, body) = rt.block_on(async {
        let r = reqwest::Client::new()
            .post(format!("{}/v1/messages", proxy.url))
            .json(&json!({"model": "m", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_lost", "name": "get_weather", "input": {}}]},
                {"role": "user", "content": "and?"}]}))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    });
    assert_eq!(status, 502);
    // Forwarded unread, the request is still judged for the capture when
    // the exchange ends, even when it ends in failure.
    let line = proxy.next_line();
    assert!(
        line.contains("→ 502") && line.contains("toolu_lost"),
        "{line}"
    );
    let records = capture(&cap);
    assert_eq!(records[0]["action"], "failed");
    assert_eq!(records[0]["findings"][0]["ids"][0], "toolu_lost");
    assert_eq!(
        records[0]["request"]["messages"][1]["content"][0]["id"],
        "toolu_lost"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("could not be reached")
    );
}

#[test]
fn bad_flags_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["proxy", "--upstream", "ftp://example.test", "--no-tui"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("http:// or https://"));
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(["proxy", "--upstream", "http://x", "--on-invalid", "drop"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn it_is_never_an_open_proxy_every_request_goes_to_the_upstream() {
    let Rig {
        rt,
        fake,
        cap: _,
        proxy,
    } = rig(&[]);
    // Used as a forward proxy, asked for another host in absolute form.
    let status = rt.block_on(async {
        reqwest::Client::builder()
            .proxy(reqwest::Proxy::http(&proxy.url).unwrap())
            .build()
            .unwrap()
            .post("http://elsewhere.invalid/v1/messages")
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status, 200, "answered by the configured upstream");
    assert_eq!(fake.log.lock().unwrap().requests.len(), 1);
    let line = proxy.next_line();
    assert!(line.contains("POST /v1/messages"), "{line}");
}

#[test]
fn streamed_gemini_chunks_are_reassembled() {
    streamed(
        "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        json!({"contents": [{"role": "user", "parts": [{"text": "weather"}]}]}),
        |m| {
            let part = &m["candidates"][0]["content"]["parts"][0];
            assert_eq!(part["functionCall"]["name"], "get_weather");
            assert_eq!(m["candidates"][0]["finishReason"], "STOP");
        },
    );
}

#[test]
fn without_a_terminal_the_proxy_asks_for_no_tui() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args([
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-tui"));
}

#[test]
fn a_capture_that_cannot_be_opened_exits_2_before_listening() {
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args([
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
            "--no-tui",
        ])
        .args(["--capture", "/nonexistent-folder/capture.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--capture: opening the capture"), "{said}");
    assert!(!said.contains("listening"), "{said}");
}

/// `--capture` appends only to a capture: a session named by mistake is
/// refused before the proxy starts and left as it was (issue 23, item 5).
#[test]
fn capture_refuses_to_append_to_a_file_that_is_not_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("weather.json");
    let original = std::fs::read_to_string("sessions/weather.json").unwrap();
    std::fs::write(&session, &original).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args([
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--no-tui",
            "--capture",
        ])
        .arg(&session)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a capture"));
    assert_eq!(std::fs::read_to_string(&session).unwrap(), original);
}

/// An upstream on loopback that answers 404 with the request it got, word
/// for word (the URL and every header in the error's message): where a
/// real provider's error may echo a key.
fn echoing_upstream() -> String {
    use std::io::{Read, Write};
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}", echo.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut tcp in echo.incoming().map_while(Result::ok) {
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                let n = tcp.read(&mut buf).unwrap_or(0);
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                let done = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    body.len() >= len
                });
                if n == 0 || done {
                    break;
                }
            }
            let body = json!({"error": {"type": "not_found_error", "message": format!("no route for {}", String::from_utf8_lossy(&got))}}).to_string();
            let _ = tcp.write_all(
                format!("HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).as_bytes(),
            );
        }
    });
    upstream
}

/// A recognizable fake key planted in every place a key travels: the
/// agent's headers (Anthropic's, Azure's, a Basic credential), each query
/// spelling, the body, an upstream error that echoes the whole request,
/// an unreachable https upstream named with a key. Every byte loopdbg
/// writes about it is searched: the capture, the `--no-tui` lines, the
/// proxy's stderr, `check`, `record`'s session and its output, and the
/// handouts made from it (issue 23, item 3).
#[test]
fn a_planted_key_reaches_nothing_loopdbg_writes() {
    // No shape: only knowing the request's own values can mask these.
    const PLAIN: &str = "PLANTED0plain0azure0key0123456789";
    const QUERY: &str = "PLANTED0query0value0abcdef";
    // Shaped like a real key: masked by its shape in the body.
    const SHAPED: &str = "sk-ant-api03-PLANTEDshapedKEY0123456789";
    let upstream = echoing_upstream();
    let dir = tempfile::tempdir().unwrap();
    let capture_path = dir.path().join("capture.jsonl");
    let proxy = Proxy::start(&upstream, &capture_path, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let messages = json!([{"role": "user", "content": format!("my key is {SHAPED}, keep it")}]);
    let queries = [
        format!("?key={QUERY}"),
        format!("?Api-Key={QUERY}"),
        format!("?k%65y={QUERY}"),
        format!("?access-token={QUERY}&model=m"),
        format!("?x=1;key={QUERY}"),
    ];
    rt.block_on(async {
        let client = reqwest::Client::new();
        for q in &queries {
            let answer = client
                .post(format!("{}/v1/messages{q}", proxy.url))
                .header("x-api-key", SHAPED)
                .header("api-key", PLAIN)
                .basic_auth("user", Some(PLAIN))
                .json(&json!({"model": "m", "max_tokens": 8, "messages": messages}))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 404);
            // The agent gets the upstream's bytes as they were.
            assert!(answer.text().await.unwrap().contains(PLAIN));
        }
    });
    let mut written = String::new();
    for _ in &queries {
        written.push_str(&proxy.next_line());
        written.push('\n');
    }
    written.push_str(&proxy.banner);
    while let Ok(line) = proxy.stderr.try_recv() {
        written.push_str(&line);
    }
    drop(proxy);
    written.push_str(&std::fs::read_to_string(&capture_path).unwrap());
    // The upstream named with a key, and not reachable over https (on
    // 127.0.0.2: never the proxy's own 127.0.0.1 port).
    let unreachable = std::net::TcpListener::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let failed_capture = dir.path().join("failed.jsonl");
    let failing = Proxy::start(
        &format!("https://{unreachable}/?key={QUERY}"),
        &failed_capture,
        &[],
    );
    rt.block_on(async {
        let _ = reqwest::Client::new()
            .post(format!(
                "{}/v1beta/models/g:generateContent?key={QUERY}",
                failing.url
            ))
            .header("x-goog-api-key", PLAIN)
            .json(&json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}))
            .send()
            .await
            .unwrap();
    });
    written.push_str(&failing.next_line());
    // The banner and whatever else the proxy said on stderr.
    written.push_str(&failing.banner);
    while let Ok(line) = failing.stderr.try_recv() {
        written.push_str(&line);
    }
    drop(failing);
    written.push_str(&std::fs::read_to_string(&failed_capture).unwrap());
    // What the tools write from the capture.
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args(args)
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let capture = capture_path.to_str().unwrap();
    written.push_str(&run(&["check", capture]));
    written.push_str(&run(&["check", "--format", "json", capture]));
    let session = dir.path().join("recorded.json");
    written.push_str(&run(&["record", capture, "-o", session.to_str().unwrap()]));
    if session.exists() {
        written.push_str(&std::fs::read_to_string(&session).unwrap());
        for kind in ["md", "html", "json"] {
            written.push_str(&run(&["run", session.to_str().unwrap(), "--export", kind]));
        }
    }
    for secret in [PLAIN, QUERY, SHAPED, "PLANTED"] {
        assert!(
            !written.contains(secret),
            "{secret} was written:\n{}",
            written
                .lines()
                .filter(|l| l.contains(secret))
                .map(|l| l.chars().take(300).collect::<String>())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // Each of the five exchanges was recorded, masked, not dropped.
    assert_eq!(
        written.matches("\"loopdbg\":\"exchange\"").count(),
        6,
        "{written}"
    );
    assert!(written.contains("[secret]"));
}

/// Ctrl-C while a stream is in flight: the proxy takes no new agent, lets
/// the stream end, records it, and exits as SIGINT does (130); it used to
/// drop the exchange and exit 0 (issue 23, item 15).
#[cfg(unix)]
#[test]
fn ctrl_c_lets_the_exchange_in_flight_end_and_records_it() {
    use std::io::{Read, Write};
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (holding, is_held) = std::sync::mpsc::channel::<()>();
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", upstream.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut tcp, _) = upstream.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("\"messages\"") {
            let n = tcp.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let event = |e: &str| format!("{:x}\r\n{e}\r\n", e.len());
        let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_sig\",\"role\":\"assistant\",\"content\":[]}}\n\n";
        let stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        tcp.write_all(format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{}", event(start)).as_bytes()).unwrap();
        holding.send(()).unwrap();
        held.recv().unwrap();
        tcp.write_all(format!("{}0\r\n\r\n", event(stop)).as_bytes())
            .unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let capture_path = dir.path().join("capture.jsonl");
    let mut proxy = Proxy::start(&url, &capture_path, &[]);
    let base = proxy.url.clone();
    let agent = std::thread::spawn(move || {
        let body = r#"{"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
        let mut tcp = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
        write!(tcp, "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        answer
    });
    // The exchange is in flight once the upstream holds it.
    is_held.recv_timeout(WAIT).unwrap();
    let pid = proxy.child.id();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let said = proxy
        .stderr
        .recv_timeout(WAIT)
        .expect("the proxy says it is stopping");
    assert!(
        said.contains("SIGINT received; no new connections"),
        "{said}"
    );
    release.send(()).unwrap();
    let answer = agent.join().unwrap();
    assert!(
        answer.contains("message_stop"),
        "the agent got the whole stream: {answer}"
    );
    let line = proxy.next_line();
    assert!(
        line.starts_with("#1 anthropic POST /v1/messages → 200"),
        "{line}"
    );
    let status = proxy.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let recorded = capture(&capture_path);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["response"]["id"], "msg_sig");
}

// ------------------------------------------------------------ Bedrock Converse

const BEDROCK_HOST: &str = "bedrock-runtime.us-east-1.amazonaws.com";
const BEDROCK_MODEL: &str = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0";

/// A Bedrock Converse agent loop as an AWS SDK sends it: SigV4-signed
/// (the signature names `host`, so the proxy must pass it on as sent),
/// the body as the SDK wrote it (spacing and all), ConverseStream or
/// Converse. `first_only` answers only the first call. Returns each
/// trip's status, headers and body bytes.
async fn bedrock_agent(
    base: &str,
    stream: bool,
    first_only: bool,
) -> Vec<(u16, reqwest::header::HeaderMap, Vec<u8>)> {
    let client = reqwest::Client::new();
    let tools = json!({"tools": [
        {"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}},
        {"toolSpec": {"name": "get_fx_rate", "inputSchema": {"json": {"type": "object"}}}}]});
    let mut messages = vec![json!({"role": "user", "content": [{"text": "weather and fx"}]})];
    let op = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    let mut trips = Vec::new();
    for _ in 0..3 {
        let body = json!({"messages": messages, "toolConfig": tools});
        // The SDK's own spacing: the bytes must reach the provider as signed.
        let text = serde_json::to_string_pretty(&body).unwrap();
        let r = client
            .post(format!("{base}{BEDROCK_MODEL}/{op}"))
            .header("host", BEDROCK_HOST)
            .header("x-amz-date", "20261202T060000Z")
            .header("authorization", format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261202/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature={SECRET}"))
            .header("content-type", "application/json")
            .body(text)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let raw = r.bytes().await.unwrap().to_vec();
        trips.push((status, headers, raw));
        if status != 200 || trips.len() > 1 {
            break;
        }
        // The calls, as the fake scripts them for this prompt.
        let calls = [("tooluse_w1", "18°C"), ("tooluse_f1", "7.12")];
        messages.push(json!({"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_w1", "name": "get_weather", "input": {"city": "北京"}}},
            {"toolUse": {"toolUseId": "tooluse_f1", "name": "get_fx_rate", "input": {"pair": "USD/CNY"}}}]}));
        let results: Vec<Value> = calls
            .iter()
            .take(if first_only { 1 } else { 2 })
            .map(|(id, text)| json!({"toolResult": {"toolUseId": id, "content": [{"text": text}]}}))
            .collect();
        messages.push(json!({"role": "user", "content": results}));
    }
    trips
}

#[test]
fn a_signed_bedrock_converse_stream_passes_untouched_and_is_reassembled() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&[]);
    let trips = rt.block_on(bedrock_agent(&proxy.url, true, false));
    let statuses: Vec<u16> = trips.iter().map(|t| t.0).collect();
    assert_eq!(statuses, [200, 200]);
    assert_eq!(
        trips[0].1["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let printed = [proxy.next_line(), proxy.next_line()];
    let log = fake.log.lock().unwrap();
    for (k, trip) in trips.iter().enumerate() {
        // What the SDK signed arrives as it was signed.
        assert_eq!(log.headers[k]["host"], BEDROCK_HOST);
        assert!(log.headers[k].contains_key("authorization"));
        assert!(log.headers[k].contains_key("x-amz-date"));
        assert!(
            std::str::from_utf8(&log.bodies[k])
                .unwrap()
                .contains("\n  "),
            "spacing kept"
        );
        // The frames reach the agent byte for byte.
        assert_eq!(trip.2, log.answers[k]);
    }
    let records = capture(&cap);
    assert_eq!(records[0]["provider"], "bedrock");
    assert_eq!(records[0]["streamed"], true);
    let message = &records[0]["response"]["output"]["message"];
    assert_eq!(message["content"][0]["toolUse"]["toolUseId"], "tooluse_w1");
    assert_eq!(
        message["content"][0]["toolUse"]["input"],
        json!({"city": "北京"})
    );
    assert_eq!(
        message["content"][1]["toolUse"]["input"],
        json!({"pair": "USD/CNY"})
    );
    assert_eq!(records[0]["response"]["stopReason"], "tool_use");
    assert_eq!(
        records[1]["response"]["output"]["message"]["content"][0]["text"],
        "北京 18°C, USD/CNY 7.12"
    );
    drop(log);
    no_secret_in(&cap, &proxy, &printed);
    // The capture checks clean and replays through the reassembled replies.
    let out = crate::common::loopdbg()
        .arg("check")
        .arg(&cap.path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("(bedrock)"), "{text}");
}

#[test]
fn block_answers_bedrocks_validation_exception_locally() {
    let Rig {
        rt,
        fake,
        cap,
        proxy,
    } = rig(&["--on-invalid", "block"]);
    let trips = rt.block_on(bedrock_agent(&proxy.url, false, true));
    assert_eq!(trips.iter().map(|t| t.0).collect::<Vec<_>>(), [200, 400]);
    assert_eq!(trips[1].1["x-amzn-errortype"], "ValidationException");
    let body: Value = serde_json::from_slice(&trips[1].2).unwrap();
    assert_eq!(body["__type"], "ValidationException");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_f1"
        ),
        "{message}"
    );
    let _ = proxy.next_line();
    assert!(proxy.next_line().contains("BLOCKED"));
    assert_eq!(fake.log.lock().unwrap().requests.len(), 1);
    assert_eq!(capture(&cap)[1]["action"], "blocked");
}

#[test]
fn a_signed_request_is_never_repaired_on_the_way() {
    let Rig {
        rt,
        fake,
        cap: _cap,
        proxy,
    } = rig(&["--on-invalid", "repair=synthesize"]);
    let trips = rt.block_on(bedrock_agent(&proxy.url, false, true));
    assert_eq!(trips.iter().map(|t| t.0).collect::<Vec<_>>(), [200, 400]);
    let body: Value = serde_json::from_slice(&trips[1].2).unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("signed (AWS SigV4)"), "{message}");
    let _ = proxy.next_line();
    let _ = proxy.next_line();
    assert_eq!(
        fake.log.lock().unwrap().requests.len(),
        1,
        "nothing was sent"
    );
}

#[test]
fn without_the_proxy_the_fake_refuses_what_the_proxy_blocks() {
    // The fake enforces Bedrock's rules itself: the same broken request
    // sent straight gets the provider's 400 in the same words.
    let rt = runtime();
    let fake = rt.block_on(fake::start());
    let trips = rt.block_on(bedrock_agent(&fake.url, true, true));
    assert_eq!(trips.iter().map(|t| t.0).collect::<Vec<_>>(), [200, 400]);
    let body: Value = serde_json::from_slice(&trips[1].2).unwrap();
    assert_eq!(
        body["message"],
        "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_f1"
    );
}

/// Bedrock's InvokeModel carries Claude's own Messages body: it is checked
/// by Anthropic's rules, and blocked in Bedrock's error shape, which is
/// what the AWS SDKs read on that endpoint.
#[test]
fn invoke_model_is_checked_as_anthropic_and_refused_as_bedrock() {
    let Rig {
        rt,
        fake,
        cap: _cap,
        proxy,
    } = rig(&["--on-invalid", "block"]);
    let body = json!({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "weather and fx"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {}},
                {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"}]}]});
    let (status, headers, answer) = rt.block_on(async {
        let r = reqwest::Client::new()
            .post(format!(
                "{}/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
                proxy.url
            ))
            .header("host", BEDROCK_HOST)
            .header("authorization", format!("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/x, SignedHeaders=host, Signature={SECRET}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.headers().clone(), r.json::<Value>().await.unwrap())
    });
    assert_eq!(status, 400);
    assert_eq!(headers["x-amzn-errortype"], "ValidationException");
    assert_eq!(answer["__type"], "ValidationException");
    assert!(
        answer["message"].as_str().unwrap().contains(
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1"
        ),
        "{answer}"
    );
    assert!(proxy.next_line().contains("BLOCKED"));
    assert!(fake.log.lock().unwrap().requests.is_empty());
}

/// `--otlp`: each exchange reaches a collector as a span in the GenAI
/// conventions, the broken request's finding as a `loopdbg.finding`
/// event in the provider's words; the agent's answers are the same as
/// without it.
#[test]
fn otlp_sends_each_exchange_to_the_collector_as_a_span() {
    let rt = runtime();
    let fake = rt.block_on(fake::start());
    let collector = rt.block_on(fake::start_collector());
    let (_dir, path) = temp();
    let proxy = Proxy::start(&fake.url, &path, &["--otlp", &collector.url]);
    let (statuses, _) = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", true));
    assert_eq!(statuses, [200, 400]);
    let spans = rt.block_on(collector.spans(2, WAIT));
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let attribute = |span: &Value, key: &str| -> Value {
        span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| a["value"].clone())
            .unwrap_or(Value::Null)
    };
    for span in &spans {
        assert_eq!(
            attribute(span, "gen_ai.operation.name")["stringValue"],
            "chat"
        );
        assert_eq!(
            attribute(span, "gen_ai.provider.name")["stringValue"],
            "anthropic"
        );
        assert_eq!(
            attribute(span, "loopdbg.replied_by")["stringValue"],
            "provider"
        );
    }
    let refused = &spans[1];
    assert_eq!(
        attribute(refused, "http.response.status_code")["intValue"],
        "400"
    );
    assert_eq!(refused["status"]["code"], 2);
    let event = &refused["events"][0];
    assert_eq!(event["name"], "loopdbg.finding");
    let said = event.to_string();
    assert!(
        said.contains("unanswered_call") && said.contains("toolu_f1"),
        "{said}"
    );
    // The spans carry the messages: the request with both calls.
    let input = attribute(refused, "gen_ai.input.messages")["stringValue"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        input.contains("toolu_w1") && input.contains("toolu_f1"),
        "{input}"
    );
    // No credential reached the collector.
    let all = serde_json::to_string(&*collector.received.lock().unwrap()).unwrap();
    assert!(
        !all.contains("SECRET"),
        "a credential reached the collector"
    );
    drop(fake);
}

/// A collector that is not there changes nothing for the agent: the same
/// statuses and answers as straight to the provider.
#[test]
fn a_dead_collector_changes_nothing_for_the_agent() {
    let rt = runtime();
    let fake = rt.block_on(fake::start());
    // A port nobody listens on: bound, then let go.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (_dir, path) = temp();
    let proxy = Proxy::start(&fake.url, &path, &["--otlp", &dead]);
    for first_only in [false, true] {
        let direct = rt.block_on(anthropic_agent(&fake.url, "weather and fx", first_only));
        let proxied = rt.block_on(anthropic_agent(&proxy.url, "weather and fx", first_only));
        let ids = |v: &Value| v.to_string().replace(char::is_numeric, "");
        assert_eq!(direct.0, proxied.0);
        assert_eq!(
            direct.1.iter().map(ids).collect::<Vec<_>>(),
            proxied.1.iter().map(ids).collect::<Vec<_>>()
        );
    }
    // Every exchange was recorded all the same.
    for _ in 0..4 {
        let _ = proxy.next_line();
    }
    assert_eq!(capture(&path).len(), 4);
}

/// An agent's session through `--on-invalid block`, as Claude Code sends
/// it (the last two messages marked for the prompt cache, so each request
/// differs from the last two messages before its end): a call left
/// without its result is refused, retried and refused again, mended and
/// sent, and the session goes on. The proxy remembering each
/// conversation (its default: each next request read only past what it
/// shares with the last) answers every request as the proxy reading each
/// whole (`--history-memory 0`) does.
#[test]
fn a_session_refused_retried_and_mended_is_answered_alike_remembered_or_read_whole() {
    async fn session(base: &str) -> Vec<(u16, Vec<u8>)> {
        let client = reqwest::Client::new();
        let send = |messages: Vec<Value>| {
            let n = messages.len();
            let marked: Vec<Value> = messages
                .into_iter()
                .enumerate()
                .map(|(i, mut m)| {
                    if i + 2 >= n
                        && let Some(last) = m["content"].as_array_mut().and_then(|b| b.last_mut())
                    {
                        last["cache_control"] = json!({"type": "ephemeral"});
                    }
                    m
                })
                .collect();
            let body = json!({"model": "claude-test", "messages": marked,
                "tools": tools_anthropic(), "max_tokens": 256});
            client
                .post(format!("{base}/v1/messages"))
                .header("x-api-key", SECRET)
                .header("anthropic-version", "2023-06-01")
                .json(&body)
                .send()
        };
        let mut out = Vec::new();
        let user = json!({"role": "user", "content": [{"type": "text", "text": "weather and fx"}]});
        let r = send(vec![user.clone()]).await.unwrap();
        out.push((r.status().as_u16(), r.bytes().await.unwrap().to_vec()));
        let first: Value = serde_json::from_slice(&out[0].1).unwrap();
        let calls = json!({"role": "assistant", "content": first["content"]});
        let result = |block: &Value| {
            json!({"type": "tool_result", "tool_use_id": block["id"],
                "content": run_tool(block["name"].as_str().unwrap())})
        };
        let uses: Vec<&Value> = first["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect();
        let one = json!({"role": "user", "content": [result(uses[0])]});
        let all =
            json!({"role": "user", "content": uses.iter().map(|b| result(b)).collect::<Vec<_>>()});
        let mut history = vec![user.clone(), calls.clone(), one];
        for _ in 0..2 {
            let r = send(history.clone()).await.unwrap();
            out.push((r.status().as_u16(), r.bytes().await.unwrap().to_vec()));
        }
        history[2] = all;
        let r = send(history.clone()).await.unwrap();
        out.push((r.status().as_u16(), r.bytes().await.unwrap().to_vec()));
        let answer: Value = serde_json::from_slice(&out[3].1).unwrap();
        history.push(json!({"role": "assistant", "content": answer["content"]}));
        history.push(json!({"role": "user", "content": [{"type": "text", "text": "thanks"}]}));
        let r = send(history).await.unwrap();
        out.push((r.status().as_u16(), r.bytes().await.unwrap().to_vec()));
        out
    }
    let remembered = rig(&["--on-invalid", "block"]);
    let whole = rig(&["--on-invalid", "block", "--history-memory", "0"]);
    let a = remembered.rt.block_on(session(&remembered.proxy.url));
    let b = whole.rt.block_on(session(&whole.proxy.url));
    let statuses = |run: &[(u16, Vec<u8>)]| run.iter().map(|(s, _)| *s).collect::<Vec<_>>();
    assert_eq!(statuses(&a), [200, 400, 400, 200, 200]);
    assert_eq!(statuses(&b), statuses(&a));
    // The refusals word for word (the answers differ only in the fake's
    // message ids, counted across fakes).
    assert_eq!(a[1..3], b[1..3]);
    let refusal = String::from_utf8_lossy(&a[1].1);
    assert!(refusal.contains("toolu_f1"), "{refusal}");
    // The refused requests never reached the provider, on either.
    for rig in [&remembered, &whole] {
        assert_eq!(rig.fake.log.lock().unwrap().requests.len(), 3);
    }
}
