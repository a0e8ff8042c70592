//! What the proxy costs an agent: one request on loopback straight to the
//! fake provider (tests/fake) against the same request through the real
//! `loopdbg proxy` binary (checking, forwarding, recording a capture), in
//! the same run. Also the time to the first streamed byte, both ways: from
//! a fake that answers at once, and from one paced as a model writes (its
//! first event after 20 ms, then one every 2 ms), requests alternating
//! between the two ways so both see the same machine, with the spread of
//! the single requests printed beside the medians.
//!
//! `cargo bench --bench proxy`; figures in the README.

#[path = "../tests/fake/mod.rs"]
mod fake;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
    paced_first_byte(&rt, &client, &fake.url, &through, &streamed);
    let _ = proxy.kill();
    let _ = proxy.wait();
}

/// The first byte of a paced stream: the model's own time to its first
/// event is what an agent waits for, and the proxy must add nothing a
/// user can tell from it. Alternating requests, medians and spread.
fn paced_first_byte(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    direct: &str,
    through: &str,
    body: &serde_json::Value,
) {
    const ROUNDS: usize = 60;
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
    // Warm both connections first.
    first_byte(direct);
    first_byte(through);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        a.push(first_byte(direct));
        b.push(first_byte(through));
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
        (v[v.len() / 2], sd)
    };
    let ((ma, sa), (mb, sb)) = (stats(&mut a), stats(&mut b));
    println!(
        "paced stream (first event at 20 ms), first byte over {ROUNDS} alternating requests:\n  direct:               median {ma:.3} ms, sd {sa:.3} ms\n  through loopdbg proxy: median {mb:.3} ms, sd {sb:.3} ms\n  added: {:.3} ms (the direct requests' own spread: {sa:.3} ms)",
        mb - ma
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
