//! `loopdbg demo`: everything a newcomer needs to see the live side with no
//! network and no key. A fake provider on loopback (the tests' own, which
//! enforces Anthropic's pairing rule with Anthropic's error body), and a
//! small agent whose loop has the most common real bug: it runs only the
//! first `tool_use` of a reply (`content.find`, seed 000) and answers that
//! one, so its second request leaves the other call without a result and
//! the provider refuses it with a 400.
//!
//! The binary puts `loopdbg proxy` between the two and shows the traffic in
//! the live debugger (or, without a terminal, one line per exchange).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use loopdbg_proxy::capture::Exchange;
use serde_json::{Value, json};

/// The demo's provider: the fake, listening on 127.0.0.1.
pub struct Provider {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

/// Starts the fake provider on the current runtime.
pub async fn start_provider() -> std::io::Result<Provider> {
    let fake = loopdbg_fake::try_start_unlogged().await?;
    Ok(Provider { url: fake.url })
}

/// What the agent asks: two things at once, so the model names two tools
/// in one turn (the fake answers `weather` and `fx` with one call each).
pub const PROMPT: &str = "What is the weather in Beijing today, and the USD/CNY fx rate?";

/// The agent's local tools, backed by fixed answers.
fn run_tool(name: &str) -> Value {
    match name {
        "get_weather" => json!({"city": "北京", "temp_c": 18, "cond": "晴"}),
        "get_fx_rate" => json!({"pair": "USD/CNY", "rate": 7.12}),
        other => json!({"error": format!("no tool named {other}")}),
    }
}

fn tools() -> Value {
    json!([
        {"name": "get_weather", "description": "Today's weather in a city",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        {"name": "get_fx_rate", "description": "The exchange rate of a currency pair",
         "input_schema": {"type": "object", "properties": {"pair": {"type": "string"}}, "required": ["pair"]}}
    ])
}

/// How the agent's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRun {
    /// Requests sent (each is one exchange in the proxy's capture).
    pub requests: usize,
    /// What the agent printed as it went, one line per step.
    pub lines: Vec<String>,
    /// The provider's error message when a request was refused.
    pub refused: Option<String>,
}

/// The buggy agent: asks [`PROMPT`] of Anthropic Messages at `base_url`
/// (the proxy), runs the first `tool_use` of each reply only, and stops at
/// an answer, a refusal or 6 rounds. `pace` is waited before each request
/// and while a tool "runs", so a person watching the live debugger sees
/// each phase arrive; 0 for tests.
pub async fn buggy_agent(base_url: &str, pace: Duration) -> anyhow::Result<AgentRun> {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let url = format!("{}/v1/messages", base_url.trim_end_matches('/'));
    let mut messages = vec![json!({"role": "user", "content": PROMPT})];
    let mut run = AgentRun {
        requests: 0,
        lines: vec![format!("agent: asking {PROMPT:?}")],
        refused: None,
    };
    for _round in 0..6 {
        tokio::time::sleep(pace).await;
        let body = json!({"model": "claude-demo", "max_tokens": 1024,
            "tools": tools(), "messages": messages});
        let (status, answer) = post(&client, &url, &body).await?;
        run.requests += 1;
        if status != 200 {
            let message = answer["error"]["message"]
                .as_str()
                .unwrap_or("(no message)")
                .to_string();
            run.lines.push(format!(
                "agent: the provider refused request {}: {status} {message}",
                run.requests
            ));
            run.refused = Some(message);
            return Ok(run);
        }
        let content = answer["content"].clone();
        messages.push(json!({"role": "assistant", "content": content}));
        // The bug: `find` takes the first tool_use; a reply may hold more.
        let first_call = content
            .as_array()
            .into_iter()
            .flatten()
            .find(|b| b["type"] == "tool_use");
        let Some(call) = first_call else {
            let text: String = content
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect();
            run.lines.push(format!("agent: the answer: {text}"));
            return Ok(run);
        };
        let name = call["name"].as_str().unwrap_or_default();
        let id = call["id"].as_str().unwrap_or_default();
        run.lines.push(format!("agent: running {name} ({id})"));
        tokio::time::sleep(pace).await;
        let result = run_tool(name);
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result.to_string()}
        ]}));
    }
    run.lines.push("agent: gave up after 6 rounds".into());
    Ok(run)
}

/// One POST: the status and the JSON it answered.
async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    body: &Value,
) -> anyhow::Result<(u16, Value)> {
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("x-api-key", "demo-no-key")
        .body(Full::new(Bytes::from(body.to_string())))
        .context("building the agent's request")?;
    let response = client
        .request(request)
        .await
        .with_context(|| format!("the agent could not reach {url}"))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .context("reading the provider's answer")?
        .to_bytes();
    let Ok(answer) = serde_json::from_slice(&bytes) else {
        bail!("the provider answered {status} with a body that is not JSON");
    };
    Ok((status, answer))
}

/// What the agent did, read once the demo is over.
#[derive(Clone, Default)]
pub struct Report(Arc<Mutex<Option<anyhow::Result<AgentRun>>>>);

impl Report {
    /// The agent's lines, its error, or that it did not finish (the
    /// debugger was closed first).
    pub fn lines(&self) -> Vec<String> {
        match self.0.lock().ok().and_then(|mut slot| slot.take()) {
            Some(Ok(run)) => run.lines,
            Some(Err(e)) => vec![format!("agent: {e:#}")],
            None => vec!["agent: did not finish (the debugger was closed first)".into()],
        }
    }
}

/// The buggy agent, ready to start: the function spawns it on a runtime
/// against the proxy at an address (call it once the proxy listens); the
/// report holds what it did.
pub fn agent(pace: Duration) -> (impl FnOnce(&tokio::runtime::Handle, SocketAddr), Report) {
    let report = Report::default();
    let slot = report.0.clone();
    let start = move |runtime: &tokio::runtime::Handle, addr: SocketAddr| {
        runtime.spawn(async move {
            let run = buggy_agent(&format!("http://{addr}"), pace).await;
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(run);
            }
        });
    };
    (start, report)
}

/// The demo without a screen: the fake provider, `loopdbg proxy` in front
/// of it and the agent through the proxy, on the current runtime; each
/// exchange the proxy recorded (one per request the agent sent, in order)
/// and what the agent did.
pub async fn headless(pace: Duration) -> anyhow::Result<(Vec<Exchange>, AgentRun)> {
    let provider = start_provider()
        .await
        .context("starting the demo's provider on 127.0.0.1")?;
    let upstream = loopdbg_proxy::parse_upstream(&provider.url).map_err(anyhow::Error::msg)?;
    let listen = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut running = loopdbg_proxy::start(&loopdbg_proxy::Config::new(upstream, listen)).await?;
    let run = buggy_agent(&format!("http://{}", running.addr), pace).await?;
    let mut exchanges = Vec::with_capacity(run.requests);
    while exchanges.len() < run.requests {
        let Some(ended) = running.exchanges.recv().await else {
            bail!("the proxy stopped before it recorded every request");
        };
        exchanges.push(ended.into_exchange());
    }
    Ok((exchanges, run))
}

/// What to try on the capture the demo left, one command a line, each
/// with what it shows: the steps of the README's walkthrough. The session
/// and handout are named after the capture (`loopdbg-demo-2.jsonl` →
/// `loopdbg-demo-2-session.json`), so a second demo's steps do not meet
/// the first one's files.
pub fn next_steps(capture: &str) -> Vec<String> {
    let stem = capture.strip_suffix(".jsonl").unwrap_or(capture);
    let session = format!("{stem}-session.json");
    let steps = [
        (
            format!("loopdbg check {capture}"),
            "which request the provider refused, and why",
        ),
        (format!("loopdbg {capture}"), "replay it in the debugger"),
        (
            format!("loopdbg record {capture} -o {session}"),
            "a session that runs the loop again",
        ),
        (
            format!("loopdbg {session}"),
            "step it: e runs every call, E forks a reply",
        ),
        (
            format!("loopdbg diff {session} --left extract=first --right extract=all"),
            "the bug beside the fix",
        ),
        (
            format!("loopdbg run {session} --export html -o {stem}.html"),
            "a handout of the run",
        ),
    ];
    let width = steps
        .iter()
        .map(|(c, _)| c.chars().count())
        .max()
        .unwrap_or(0);
    std::iter::once(format!("the demo's exchanges are in {capture}; try:"))
        .chain(
            steps
                .iter()
                .map(|(command, what)| format!("  {command:width$}  # {what}")),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straight to the fake (no proxy): the bug gets the 400 Anthropic
    /// gives, naming the call the agent did not answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_buggy_agent_is_refused_for_the_call_it_dropped() {
        let provider = start_provider().await.unwrap();
        let run = buggy_agent(&provider.url, Duration::ZERO).await.unwrap();
        assert_eq!(run.requests, 2, "{:?}", run.lines);
        let refused = run.refused.expect("the second request is refused");
        assert!(refused.contains("toolu_f1"), "{refused}");
        assert!(
            run.lines
                .iter()
                .any(|l| l.contains("running get_weather (toolu_w1)"))
        );
    }

    #[test]
    fn next_steps_name_their_files_after_the_capture() {
        let steps = next_steps("loopdbg-demo-2.jsonl").join("\n");
        assert!(
            steps.contains("record loopdbg-demo-2.jsonl -o loopdbg-demo-2-session.json"),
            "{steps}"
        );
        assert!(steps.contains("-o loopdbg-demo-2.html"), "{steps}");
    }
}
