//! A load generator for the gateway bench (`benches/gateway_load.py`):
//! AGENTS agents, each POSTing the same request body REQUESTS times in a
//! closed loop, as an agent's loop does (its next request once the answer
//! to the last has ended), reading streamed answers to their end. The
//! first request of each agent opens its connection and is not counted.
//!
//! Prints one JSON line: the requests counted, the seconds they took,
//! requests per second, the statuses seen, and the p50/p90/p99/max in
//! milliseconds of the time to the answer's first byte (`ttfb`) and to its
//! end (`total`), and, when the upstream is `loopdbg-fake`, of the time
//! the request took to reach it whole (`transit`: each request says when
//! it was sent in `x-load-sent-ns`, the fake answers how long it took;
//! through a gateway, what the gateway held it). A streamed answer's
//! first byte waits on the fake's pace, so `transit` is the finer
//! measure of what a gateway adds to a request.
//!
//! Usage: `loopdbg-load [--grow] [--spread MS] URL BODY_FILE AGENTS REQUESTS [NAME:VALUE]...`
//! (each NAME:VALUE a request header).
//!
//! `--spread MS`: agent k of n sends its first counted request k·MS/n
//! milliseconds after the others' connections are open, rather than all
//! at once, as agents that started at different times do; without it
//! every agent starts together, and a paced fake keeps them in step, so
//! their requests reach the gateway in waves of AGENTS at a time.
//!
//! `--grow`: each agent's history is its own and grows as an agent's
//! does: the body's `messages` (its last key; or `input`, a Responses
//! request's, as Codex sends its history) open with a message naming the
//! agent, and after each answer the next request carries two messages (or
//! items) more, a call and its result. Without it every request is the
//! body as written.
//!
//! A client of its own rather than a Python one: a Python client sending
//! 2 MB bodies from 256 agents would take the cores the gateways under
//! test need, on a machine of two. It runs on one thread.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

/// What one counted request took, and how it ended.
struct Timing {
    ttfb: Duration,
    total: Duration,
    status: u16,
    /// As the fake measured it.
    transit: Option<Duration>,
}

#[allow(
    clippy::expect_used,
    reason = "a bench's load generator: bad arguments end it with their reason"
)]
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let (mut grow, mut spread) = (false, Duration::ZERO);
    loop {
        match args.first().map(String::as_str) {
            Some("--grow") => {
                grow = true;
                args.remove(0);
            }
            Some("--spread") if args.len() > 1 => {
                let ms: u64 = args[1].parse().expect("--spread MS, a number");
                spread = Duration::from_millis(ms);
                args.drain(..2);
            }
            _ => break,
        }
    }
    let [url, body_file, agents, requests, headers @ ..] = args.as_slice() else {
        eprintln!(
            "usage: loopdbg-load [--grow] [--spread MS] URL BODY_FILE AGENTS REQUESTS [NAME:VALUE]..."
        );
        std::process::exit(2);
    };
    let body = Bytes::from(std::fs::read(body_file).expect("the body file"));
    let agents: usize = agents.parse().expect("AGENTS, a number");
    let requests: usize = requests.parse().expect("REQUESTS, a number");
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|h| {
            let (name, value) = h.split_once(':').expect("a header as NAME:VALUE");
            (name.trim().to_string(), value.trim().to_string())
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if grow && !body.trim_ascii_end().ends_with(b"]}") {
        eprintln!("--grow: the body must end with its `messages` array (`...]}}`)");
        std::process::exit(2);
    }
    let load = Load {
        grow,
        spread,
        agents,
        requests,
    };
    let (timings, took) = runtime.block_on(run(url, body, &load, &headers));
    println!("{}", summary(&timings, took));
}

/// How the agents send: see the usage above.
struct Load {
    grow: bool,
    spread: Duration,
    agents: usize,
    requests: usize,
}

/// Runs the agents to their end: every counted request's timing, and the
/// time from the first counted request to the last answer's end.
async fn run(
    url: &str,
    body: Bytes,
    load: &Load,
    headers: &[(String, String)],
) -> (Vec<Timing>, Duration) {
    let &Load {
        grow,
        spread,
        agents,
        requests,
    } = load;
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(agents)
        .build_http::<Full<Bytes>>();
    // Every agent's connection opens (its first request) before the clock
    // starts, so the run measures the gateway, not connection setup.
    let warm = tokio::sync::Barrier::new(agents);
    let began = std::sync::OnceLock::new();
    let tasks = (0..agents).map(|agent| {
        let client = client.clone();
        let mut history = History::of(&body, grow.then_some(agent));
        let (warm, began) = (&warm, &began);
        async move {
            let mut timings = Vec::with_capacity(requests);
            exchange(&client, url, &history.body(), headers).await;
            history.grow();
            warm.wait().await;
            began.get_or_init(Instant::now);
            // Agent k of n starts k/n of the spread later.
            let offset = spread.mul_f64(agent as f64 / agents as f64);
            tokio::time::sleep(offset).await;
            for _ in 0..requests {
                timings.push(exchange(&client, url, &history.body(), headers).await);
                history.grow();
            }
            timings
        }
    });
    let timings: Vec<Timing> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .flatten()
        .collect();
    let took = began.get().map_or(Duration::ZERO, Instant::elapsed);
    (timings, took)
}

/// An agent's request body: the one given, or, growing, its own history.
struct History {
    bytes: Vec<u8>,
    /// The agent, when its history grows.
    agent: Option<usize>,
    turn: usize,
    /// The history is a Responses `input`, not Chat `messages`.
    responses: bool,
}

impl History {
    fn of(body: &Bytes, agent: Option<usize>) -> History {
        let mut bytes = body.to_vec();
        let input = b"\"input\": [";
        let responses = bytes.windows(input.len()).any(|w| w == input);
        if let Some(agent) = agent {
            let key: &[u8] = match responses {
                true => input,
                false => b"\"messages\": [",
            };
            if let Some(at) = bytes.windows(key.len()).position(|w| w == key) {
                let first = match responses {
                    true => format!(
                        "{{\"type\": \"message\", \"role\": \"user\", \"content\": \"(agent {agent})\"}}, "
                    ),
                    false => format!("{{\"role\": \"user\", \"content\": \"(agent {agent})\"}}, "),
                };
                bytes.splice(at + key.len()..at + key.len(), first.into_bytes());
            }
            let end = bytes.trim_ascii_end().len();
            bytes.truncate(end);
        }
        History {
            bytes,
            agent,
            turn: 0,
            responses,
        }
    }

    fn body(&self) -> Bytes {
        Bytes::copy_from_slice(&self.bytes)
    }

    /// Two messages more before the closing `]}`: a call and its result.
    fn grow(&mut self) {
        let Some(agent) = self.agent else {
            return;
        };
        self.turn += 1;
        let id = format!("call_{agent}_{}", self.turn);
        let more = match self.responses {
            true => format!(
                ", {{\"type\": \"function_call\", \"call_id\": \"{id}\", \"name\": \"get_weather\", \"arguments\": \"{{\\\"turn\\\": {}}}\"}}, {{\"type\": \"function_call_output\", \"call_id\": \"{id}\", \"output\": \"turn {}: 18°C, clear. {}\"}}",
                self.turn,
                self.turn,
                "x".repeat(900)
            ),
            false => format!(
                ", {{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{{\"id\": \"{id}\", \"type\": \"function\", \"function\": {{\"name\": \"get_weather\", \"arguments\": \"{{\\\"turn\\\": {}}}\"}}}}]}}, {{\"role\": \"tool\", \"tool_call_id\": \"{id}\", \"content\": \"turn {}: 18°C, clear. {}\"}}",
                self.turn,
                self.turn,
                "x".repeat(900)
            ),
        };
        let end = self.bytes.len() - 2;
        self.bytes.splice(end..end, more.into_bytes());
    }
}

/// One request, its answer read to the end. A failure to connect or an
/// answer cut off is status 0.
async fn exchange(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    url: &str,
    body: &Bytes,
    headers: &[(String, String)],
) -> Timing {
    let mut request = hyper::Request::post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(now) = loopdbg_fake::unix_nanos() {
        request = request.header("x-load-sent-ns", now.to_string());
    }
    let Ok(request) = request.body(Full::new(body.clone())) else {
        return failed(Duration::ZERO);
    };
    let sent = Instant::now();
    let Ok(answer) = client.request(request).await else {
        return failed(sent.elapsed());
    };
    let status = answer.status().as_u16();
    let transit = answer
        .headers()
        .get("x-fake-transit-us")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .map(Duration::from_micros);
    let mut body = answer.into_body();
    let mut ttfb = None;
    loop {
        match body.frame().await {
            Some(Ok(_)) => {
                ttfb.get_or_insert_with(|| sent.elapsed());
            }
            Some(Err(_)) => return failed(sent.elapsed()),
            None => break,
        }
    }
    let total = sent.elapsed();
    Timing {
        ttfb: ttfb.unwrap_or(total),
        total,
        status,
        transit,
    }
}

fn failed(total: Duration) -> Timing {
    Timing {
        ttfb: total,
        total,
        status: 0,
        transit: None,
    }
}

/// The JSON line printed at the end.
fn summary(timings: &[Timing], took: Duration) -> serde_json::Value {
    let mut statuses = BTreeMap::<String, usize>::new();
    for t in timings {
        *statuses.entry(t.status.to_string()).or_default() += 1;
    }
    let seconds = took.as_secs_f64();
    json!({
        "requests": timings.len(),
        "seconds": seconds,
        "rps": if seconds > 0.0 { timings.len() as f64 / seconds } else { 0.0 },
        "statuses": statuses,
        "ttfb": percentiles(timings.iter().map(|t| t.ttfb)),
        "total": percentiles(timings.iter().map(|t| t.total)),
        "transit": percentiles(timings.iter().filter_map(|t| t.transit)),
        "transits": timings.iter().filter(|t| t.transit.is_some()).count(),
    })
}

/// p50, p90, p99 and max of `durations`, in milliseconds (nearest rank).
fn percentiles(durations: impl Iterator<Item = Duration>) -> serde_json::Value {
    let mut ms: Vec<f64> = durations.map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let rank = |p: f64| -> f64 {
        if ms.is_empty() {
            return 0.0;
        }
        let i = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
        ms[i]
    };
    json!({"p50": rank(0.50), "p90": rank(0.90), "p99": rank(0.99), "max": rank(1.0)})
}
