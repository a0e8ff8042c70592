//! What the proxy costs an agent: one request on loopback straight to the
//! fake provider (tests/fake) against the same request through the real
//! `loopdbg proxy` binary (checking, forwarding, recording a capture), in
//! the same run. Also the time to the first streamed byte, both ways: from
//! a fake that answers at once, and from one paced as a model writes (its
//! first event after 20 ms, then one every 2 ms), requests alternating
//! between the two ways so both see the same machine, with the spread of
//! the single requests printed beside the medians.
//!
//! The paced stream is also timed through two floors, each this bench
//! binary started again as a process of its own: a byte relay (copies TCP
//! both ways and nothing else: what any second process on the path pays)
//! and a bare HTTP proxy on the proxy's own stack (axum in, reqwest out,
//! no checking, no capture), so that what loopdbg adds can be told from
//! what any proxy adds.
//!
//! `cargo bench --bench proxy`; figures in the README.

#[path = "../tests/fake/mod.rs"]
mod fake;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group};
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let fake = rt.block_on(fake::start());
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args([
            "proxy",
            "--no-tui",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &fake.url,
        ])
        .arg("--capture")
        .arg(dir.path().join("capture.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(proxy.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let through = first
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();

    // A request of a loop in its second round: a history with both calls
    // answered, so the gate reads and checks a real conversation.
    let body = json!({"model": "m", "max_tokens": 256,
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                  {"name": "get_fx_rate", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "weather and fx"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
                {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {"pair": "USD/CNY"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"},
                {"type": "tool_result", "tool_use_id": "toolu_f1", "content": "7.12"}]}]});
    // A request late in a long loop: 150 answered rounds of two calls,
    // each result a kilobyte (about 400 KB), as agents send them.
    let mut long = body.clone();
    let mut history = vec![json!({"role": "user", "content": "weather and fx, again and again"})];
    let filler = "18°C, light wind; ".repeat(56);
    for round in 0..150 {
        let (w, f) = (format!("toolu_w{round}"), format!("toolu_f{round}"));
        history.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": w, "name": "get_weather", "input": {"city": "北京"}},
            {"type": "tool_use", "id": f, "name": "get_fx_rate", "input": {"pair": "USD/CNY"}}]}));
        history.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": w, "content": filler},
            {"type": "tool_result", "tool_use_id": f, "content": "7.12"}]}));
    }
    long["messages"] = json!(history);
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["messages"] = json!([{"role": "user", "content": "weather and fx"}]);
    let client = reqwest::Client::new();

    let mut group = c.benchmark_group("proxy");
    for (name, base) in [
        ("direct", fake.url.clone()),
        ("through loopdbg proxy", through.clone()),
    ] {
        for (case, request) in [("request", &body), ("long request", &long)] {
            group.bench_function(format!("{case}, {name}"), |b| {
                b.iter(|| {
                    rt.block_on(async {
                        client
                            .post(format!("{base}/v1/messages"))
                            .json(request)
                            .send()
                            .await
                            .unwrap()
                            .bytes()
                            .await
                            .unwrap()
                    })
                })
            });
        }
        // Only the wait for the first chunk is timed: the rest of the
        // stream is drained after the clock stops, so the connection can
        // be reused.
        group.bench_function(format!("first streamed byte, {name}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut took = std::time::Duration::ZERO;
                    for _ in 0..iters {
                        let start = std::time::Instant::now();
                        let mut r = client
                            .post(format!("{base}/v1/messages"))
                            .json(&streamed)
                            .send()
                            .await
                            .unwrap();
                        let first = r.chunk().await.unwrap();
                        took += start.elapsed();
                        assert!(first.is_some_and(|c| !c.is_empty()));
                        while r.chunk().await.unwrap().is_some() {}
                    }
                    took
                })
            })
        });
    }
    group.finish();
    let (mut relay, relayed) = floor(RELAY_TO, fake.url.trim_start_matches("http://"));
    let (mut bare, bare_url) = floor(BARE_PROXY_TO, &fake.url);
    paced_first_byte(
        &rt, &client, &fake.url, &relayed, &bare_url, &through, &streamed,
    );
    for child in [&mut proxy, &mut relay, &mut bare] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// This bench binary started again as one of the floors: `var` says
/// which, `to` where it forwards. Gives the child and its base URL.
fn floor(var: &str, to: &str) -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(var, to)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut addr = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut addr)
        .unwrap();
    (child, format!("http://{}", addr.trim()))
}

/// The environment variable that turns this bench binary into the byte
/// relay: its value is the address to relay to.
const RELAY_TO: &str = "LOOPDBG_BENCH_RELAY_TO";

/// The environment variable that turns this bench binary into a bare
/// HTTP proxy (the proxy's own stack, axum in and reqwest out, with no
/// checking and no capture): its value is the upstream URL.
const BARE_PROXY_TO: &str = "LOOPDBG_BENCH_BARE_PROXY_TO";

/// What a proxy built on `loopdbg proxy`'s stack costs before it does
/// anything of its own: the request read whole and sent on, the answer
/// streamed back with its status and headers.
fn bare_proxy(upstream: String) {
    use axum::body::Body;
    use futures::StreamExt;
    let rt = runtime();
    rt.block_on(async move {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .unwrap();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let (client, upstream) = (client.clone(), upstream.clone());
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                let mut headers = parts.headers.clone();
                for hop in ["host", "content-length", "connection", "accept-encoding"] {
                    headers.remove(hop);
                }
                let answer = client
                    .request(parts.method, format!("{upstream}{}", parts.uri))
                    .headers(headers)
                    .body(bytes)
                    .send()
                    .await
                    .unwrap();
                let (status, mut headers) = (answer.status(), answer.headers().clone());
                headers.remove("transfer-encoding");
                let mut response = axum::response::Response::new(Body::from_stream(
                    answer
                        .bytes_stream()
                        .map(|c| c.map_err(std::io::Error::other)),
                ));
                *response.status_mut() = status;
                *response.headers_mut() = headers;
                response
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.unwrap();
    });
}

/// A TCP relay that copies bytes both ways, as fast as a proxy process
/// can: what a second process on the path costs before any work. Prints
/// the address it listens on, then serves until killed.
fn relay(upstream: String) {
    let rt = runtime();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        loop {
            let (mut agent, _) = listener.accept().await.unwrap();
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let mut provider = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let _ = agent.set_nodelay(true);
                let _ = provider.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut agent, &mut provider).await;
            });
        }
    });
}

/// The first byte of a paced stream: the model's own time to its first
/// event is what an agent waits for, and the proxy must add nothing a
/// user can tell from it. Medians and spread of each way.
fn paced_first_byte(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    direct: &str,
    relayed: &str,
    bare: &str,
    through: &str,
    body: &serde_json::Value,
) {
    const ROUNDS: usize = 200;
    let first_byte = |base: &str| {
        rt.block_on(async {
            let start = std::time::Instant::now();
            let mut r = client
                .post(format!("{base}/v1/messages"))
                .header("x-fake-pace-ms", "20,2")
                .json(body)
                .send()
                .await
                .unwrap();
            let first = r.chunk().await.unwrap();
            let took = start.elapsed().as_secs_f64() * 1000.0;
            assert!(first.is_some_and(|c| !c.is_empty()));
            while r.chunk().await.unwrap().is_some() {}
            took
        })
    };
    // Warm every connection first.
    first_byte(direct);
    first_byte(relayed);
    first_byte(bare);
    first_byte(through);
    // Each round takes the four ways in a turned order, so that none is
    // always the one that follows another.
    let ways = [direct, relayed, bare, through];
    let mut times: [Vec<f64>; 4] = Default::default();
    for round in 0..ROUNDS {
        for k in 0..ways.len() {
            let way = (round + k) % ways.len();
            times[way].push(first_byte(ways[way]));
        }
    }
    let [mut a, mut r, mut h, mut b] = times;
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
        (v[v.len() / 2], sd)
    };
    let (ma, sa) = stats(&mut a);
    println!(
        "paced stream (first event at 20 ms), first byte over {ROUNDS} rounds:\n  {:<26} median {ma:.3} ms, sd {sa:.3} ms",
        "direct"
    );
    for (name, v) in [
        ("a byte relay", &mut r),
        ("a bare HTTP proxy", &mut h),
        ("loopdbg proxy", &mut b),
    ] {
        let (m, sd) = stats(v);
        println!(
            "  {:<26} median {m:.3} ms, sd {sd:.3} ms, added {:.3} ms",
            format!("through {name}"),
            m - ma
        );
    }
}

/// The runtime of the bench and of each floor: two workers, as the proxy.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(upstream) = std::env::var(RELAY_TO) {
        return relay(upstream);
    }
    if let Ok(upstream) = std::env::var(BARE_PROXY_TO) {
        return bare_proxy(upstream);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
