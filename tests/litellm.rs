//! loopdbg's guardrail inside a real LiteLLM proxy (the gateway, from
//! PyPI: `scripts/install-litellm.sh`, a virtualenv in `target/litellm`
//! with the loopdbg wheel), the fake provider behind it on loopback: a
//! clean history goes through; a broken one is blocked with the
//! provider's words and never reaches the provider, or is repaired and
//! reaches it paired.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use loopdbg_fake as fake;
use serde_json::{Value, json};

fn litellm() -> Option<PathBuf> {
    let dir = std::env::var_os("LOOPDBG_LITELLM")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/litellm"));
    let bin = dir.join("bin/litellm");
    bin.exists().then_some(bin)
}

/// The LiteLLM proxy, killed when dropped.
struct Gateway {
    child: Child,
    port: u16,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// LiteLLM on a free port with `config`, once it says it is serving (its
/// output is drained on a thread so it never blocks on a full pipe).
fn gateway(bin: &Path, config: &Path) -> Gateway {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(bin)
        .args(["--config", config.to_str().unwrap(), "--host", "127.0.0.1"])
        .args(["--port", &port.to_string(), "--num_workers", "1"])
        // The model price list is fetched from GitHub otherwise.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_TELEMETRY", "False")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for out in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
    }
    let mut said = Vec::new();
    loop {
        match rx.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(line) if line.contains("Uvicorn running on") => break,
            Ok(line) => said.push(line),
            Err(_) => panic!("LiteLLM did not start: {}", said.join("\n")),
        }
    }
    // The rest of its output is drained by the threads.
    std::thread::spawn(move || while rx.recv().is_ok() {});
    Gateway { child, port }
}

/// `POST /chat/completions` to the gateway: status and JSON body.
fn chat(port: u16, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        tcp,
        "POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-loopdbg-test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let text = match chunked {
        true => dechunk(rest),
        false => rest.to_string(),
    };
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

/// A weather-and-FX loop whose second request lost the FX call's result
/// (`answered` false) or kept it.
fn history(model: &str, guardrail: &str, answered: bool) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": "Weather in Beijing and USD/CNY?"}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Beijing\"}"}},
            {"id": "call_f1", "type": "function", "function": {"name": "get_fx_rate", "arguments": "{\"pair\":\"USD/CNY\"}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "call_w1", "content": "18°C"}),
    ];
    if answered {
        messages.push(json!({"role": "tool", "tool_call_id": "call_f1", "content": "7.12"}));
    }
    let function = |name: &str, arg: &str| {
        json!({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}})
    };
    json!({
        "model": model,
        "messages": messages,
        "tools": [function("get_weather", "city"), function("get_fx_rate", "pair")],
        "guardrails": [guardrail],
    })
}

#[test]
#[ignore = "end-to-end: a real LiteLLM proxy (scripts/install-litellm.sh)"]
fn litellm_blocks_or_repairs_what_the_provider_would_refuse() {
    let Some(bin) = litellm() else {
        return crate::common::skip(
            "litellm_blocks_or_repairs_what_the_provider_would_refuse",
            "no LiteLLM virtualenv in target/litellm (run scripts/install-litellm.sh)",
        );
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(fake::start());
    let dir = crate::common::scratch("litellm");
    let config = dir.join("config.yaml");
    let guardrail = |name: &str, on_invalid: &str| {
        format!(
            "  - guardrail_name: {name}\n    litellm_params:\n      guardrail: loopdbg.litellm_guardrail.LoopdbgGuardrail\n      mode: pre_call\n      on_invalid: {on_invalid}\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: fake-gpt\n    litellm_params:\n      model: openai/gpt-4o-mini\n      api_base: {}/v1\n      api_key: sk-fake\nguardrails:\n{}{}",
            fake.url,
            guardrail("loopdbg-block", "block"),
            guardrail("loopdbg-repair", "repair"),
        ),
    )
    .unwrap();
    let gw = gateway(&bin, &config);
    let reached = || fake.log.lock().unwrap().requests.len();

    // Clean: through to the provider and its answer back.
    let (status, answer) = chat(gw.port, &history("fake-gpt", "loopdbg-block", true));
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(reached(), 1);

    // Broken, blocked: OpenAI's words, and the provider never asked.
    let (status, answer) = chat(gw.port, &history("fake-gpt", "loopdbg-block", false));
    assert_eq!(status, 400, "{answer:#}");
    let said = answer.to_string();
    assert!(
        said.contains("The following tool_call_ids did not have response messages: call_f1"),
        "{said}"
    );
    assert!(said.contains("loopdbg guardrail"), "{said}");
    assert_eq!(reached(), 1, "a blocked request reached the provider");

    // Broken, repaired: the provider gets the history paired (a
    // placeholder result for call_f1) and answers 200.
    let (status, answer) = chat(gw.port, &history("fake-gpt", "loopdbg-repair", false));
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(reached(), 2);
    let sent = fake.log.lock().unwrap().requests[1].clone();
    let results: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["call_w1", "call_f1"], "{sent:#}");
    drop(gw);
}
