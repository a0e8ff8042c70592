//! What the proxy costs an agent: one request on loopback straight to the
//! fake provider (tests/fake) against the same request through the real
//! `loopdbg proxy` binary (checking, forwarding, recording a capture), in
//! the same run. Also the time to the first streamed byte, both ways: from
//! a fake that answers at once, and from one paced as a model writes (its
//! first event after 20 ms, then one every 2 ms), requests alternating
//! between the two ways so both see the same machine, with the spread of
//! the single requests printed beside the medians.
//!
//! The paced stream is also timed through three floors, each this bench
//! binary started again as a process of its own: a byte relay (copies TCP
//! both ways and nothing else: what any second process on the path pays),
//! a bare HTTP proxy with a pooled client (axum in, reqwest out), and a
//! bare HTTP proxy with its upstream connection in the agent's own task
//! (axum in, one hyper connection out: the stack `loopdbg proxy` used
//! before it relayed a plain upstream's bytes as they come). The floors
//! do no checking and keep no capture, so that what
//! loopdbg adds can be told from what any proxy adds. One more way runs
//! `loopdbg proxy`'s own code (src/cli/proxy.rs) in this bench binary
//! started again, without a capture, to tell the code's cost from the
//! `loopdbg` binary's. Each round takes the ways in a shuffled order, so
//! none always follows another.
//!
//! Each way's change of the paced median is given with its 95% interval
//! (bootstrap) and judged by criterion's own rule for noise: slower only
//! when the whole interval lies above criterion's default noise
//! threshold, 1%.
//!
//! `cargo bench --bench proxy`; figures in the README.

use loopdbg_fake as fake;
use loopdbg_proxy as proxy;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group};
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let fake = rt.block_on(fake::start_unlogged());
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
    let (mut pooled, pooled_url) = floor(BARE_PROXY_TO, &fake.url);
    let (mut one_task, one_task_url) =
        floor(ONE_TASK_PROXY_TO, fake.url.trim_start_matches("http://"));
    let (mut its_code, its_code_url) = floor(LOOPDBG_CODE_TO, &fake.url);
    paced_first_byte(
        &rt,
        &client,
        &[
            ("direct", &fake.url),
            ("through a byte relay", &relayed),
            ("through a pooled-client proxy", &pooled_url),
            ("through a one-task proxy", &one_task_url),
            ("through loopdbg's code here", &its_code_url),
            ("through loopdbg proxy", &through),
        ],
        &streamed,
    );
    for child in [
        &mut proxy,
        &mut relay,
        &mut pooled,
        &mut one_task,
        &mut its_code,
    ] {
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
/// HTTP proxy with a pooled client (axum in, reqwest out, with no
/// checking and no capture): its value is the upstream URL.
const BARE_PROXY_TO: &str = "LOOPDBG_BENCH_BARE_PROXY_TO";

/// The environment variable that turns this bench binary into a bare
/// HTTP proxy with one hyper HTTP/1 connection to the upstream driven in
/// the agent's own task (axum in, no checking and no capture): its value
/// is the upstream address.
const ONE_TASK_PROXY_TO: &str = "LOOPDBG_BENCH_ONE_TASK_PROXY_TO";

/// The environment variable that turns this bench binary into a proxy
/// running `loopdbg proxy`'s own code (checking, no capture): its value is
/// the upstream URL.
const LOOPDBG_CODE_TO: &str = "LOOPDBG_BENCH_LOOPDBG_CODE_TO";

/// `loopdbg proxy`'s code outside the `loopdbg` binary: what the code
/// costs, told from what the binary around it costs.
fn loopdbg_code(upstream: String) {
    let rt = runtime();
    rt.block_on(async move {
        let config = proxy::Config {
            upstream: reqwest::Url::parse(&upstream).unwrap(),
            listen: "127.0.0.1:0".parse().unwrap(),
            capture: None,
            on_invalid: loopdbg_proxy::gate::OnInvalid::Forward,
        };
        let mut running = proxy::start(&config).await.unwrap();
        println!("{}", running.addr);
        // The records are made as the binary makes them, then dropped.
        while let Some(ended) = running.exchanges.recv().await {
            drop(ended.into_exchange());
        }
    });
}

/// What a proxy with a pooled client (its connections in tasks of their
/// own) costs before it does anything of its own: the request read whole
/// and sent on, the answer streamed back with its status and headers.
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
/// user can tell from it. Medians and spread of each way; `ways[0]` is
/// the direct one the others are measured against.
fn paced_first_byte(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    ways: &[(&str, &str)],
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
    for (_, base) in ways {
        first_byte(base);
    }
    let mut times = vec![Vec::with_capacity(ROUNDS); ways.len()];
    let mut order: Vec<usize> = (0..ways.len()).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut last = usize::MAX;
    for _ in 0..ROUNDS {
        // A fixed-seed shuffle (xorshift, Fisher-Yates): the same orders
        // every run, and no way always right after another.
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            order.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        // Never the same way twice in a row: a stream asked for again the
        // instant the last one ended (on any of the ways, direct too)
        // waits 20 ms more, an effect of the client and the fake, not of
        // any proxy.
        if order[0] == last {
            let other = 1 + (seed % (order.len() as u64 - 1)) as usize;
            order.swap(0, other);
        }
        last = order[order.len() - 1];
        for &way in &order {
            times[way].push(first_byte(ways[way].1));
        }
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
        (v[v.len() / 2], sd)
    };
    let (direct, sd) = stats(&mut times[0]);
    println!(
        "paced stream (first event at 20 ms), first byte over {ROUNDS} rounds:\n  {:<32} median {direct:.3} ms, sd {sd:.3} ms",
        ways[0].0
    );
    let base = times[0].clone();
    for (k, v) in times.iter_mut().enumerate().skip(1) {
        let (m, sd) = stats(v);
        let (low, high) = change_interval(&base, v);
        // criterion's rule (`noise_threshold`, 1% by default): a change
        // is a regression only when its whole 95% interval lies above.
        // Stricter still: the whole interval under the threshold.
        let verdict = if low > NOISE_THRESHOLD {
            "slower, beyond noise"
        } else if high > NOISE_THRESHOLD {
            "within noise by criterion's rule, the interval reaching past 1%"
        } else {
            "within noise, the whole interval under 1%"
        };
        println!(
            "  {:<32} median {m:.3} ms, sd {sd:.3} ms, added {:.3} ms ({:+.2}%, 95% interval {:+.2}% to {:+.2}%): {verdict}",
            ways[k].0,
            m - direct,
            (m / direct - 1.0) * 100.0,
            low * 100.0,
            high * 100.0,
        );
    }
}

/// criterion's default noise threshold: a change smaller than 1% is
/// taken for noise.
const NOISE_THRESHOLD: f64 = 0.01;

/// The 95% interval of the relative change of the median from `base` to
/// `way`, by bootstrap (2000 resamples of each, a fixed seed).
fn change_interval(base: &[f64], way: &[f64]) -> (f64, f64) {
    const RESAMPLES: usize = 2000;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut median_of = |v: &[f64]| {
        let mut sample: Vec<f64> = (0..v.len()).map(|_| v[next(v.len())]).collect();
        sample.sort_by(f64::total_cmp);
        sample[sample.len() / 2]
    };
    let mut changes: Vec<f64> = (0..RESAMPLES)
        .map(|_| median_of(way) / median_of(base) - 1.0)
        .collect();
    changes.sort_by(f64::total_cmp);
    (
        changes[RESAMPLES * 25 / 1000],
        changes[RESAMPLES * 975 / 1000],
    )
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
    if let Ok(upstream) = std::env::var(ONE_TASK_PROXY_TO) {
        return one_task_proxy(upstream);
    }
    if let Ok(upstream) = std::env::var(LOOPDBG_CODE_TO) {
        return loopdbg_code(upstream);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

type OneSender = hyper::client::conn::http1::SendRequest<http_body_util::Full<axum::body::Bytes>>;
type OneConnection = hyper::client::conn::http1::Connection<
    hyper_util::rt::TokioIo<tokio::net::TcpStream>,
    http_body_util::Full<axum::body::Bytes>,
>;
type Idle = std::sync::Arc<std::sync::Mutex<Vec<(OneSender, OneConnection)>>>;

/// An answer's body that drives its connection as it is read, and gives
/// the connection back once the body has ended.
struct Driven {
    connection: Option<(OneSender, OneConnection)>,
    body: hyper::body::Incoming,
    idle: Idle,
}

impl futures::Stream for Driven {
    type Item = Result<axum::body::Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use hyper::body::Body as _;
        use std::future::Future;
        use std::task::Poll;
        let this = &mut *self;
        if let Some((_, connection)) = this.connection.as_mut()
            && std::pin::Pin::new(connection).poll(cx).is_ready()
        {
            this.connection = None;
        }
        loop {
            match std::pin::Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    if let Some(c) = this.connection.take() {
                        this.idle.lock().unwrap().push(c);
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Some(Err(std::io::Error::other(e))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

/// What a proxy on the usual HTTP stack costs at best, before it does
/// anything of its own: one HTTP/1 connection to the upstream,
/// driven by the task of the agent's connection while the answer is
/// awaited and read.
fn one_task_proxy(upstream: String) {
    use axum::body::Body;
    let rt = runtime();
    rt.block_on(async move {
        let idle: Idle = Default::default();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let (idle, upstream) = (idle.clone(), upstream.clone());
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                let reused = idle.lock().unwrap().pop();
                let (mut sender, mut connection) = match reused {
                    Some(c) => c,
                    None => {
                        let tcp = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                        tcp.set_nodelay(true).unwrap();
                        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                            .await
                            .unwrap()
                    }
                };
                let mut outgoing = axum::http::Request::builder()
                    .method(parts.method)
                    .uri(parts.uri.path_and_query().unwrap().as_str());
                for (name, value) in &parts.headers {
                    if !["connection", "accept-encoding"].contains(&name.as_str()) {
                        outgoing = outgoing.header(name, value);
                    }
                }
                let outgoing = outgoing.body(http_body_util::Full::new(bytes)).unwrap();
                let answer = {
                    let response = sender.send_request(outgoing);
                    tokio::pin!(response);
                    tokio::select! {
                        biased;
                        r = &mut response => r.unwrap(),
                        _ = &mut connection => panic!("the upstream closed the connection"),
                    }
                };
                let (mut head, body) = answer.into_parts();
                head.headers.remove("transfer-encoding");
                let driven = Driven {
                    connection: Some((sender, connection)),
                    body,
                    idle,
                };
                axum::response::Response::from_parts(head, Body::from_stream(driven))
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
