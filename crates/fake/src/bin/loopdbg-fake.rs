//! The fake provider as a process of its own, for benches that drive it
//! from another language (`benches/proxy_vs_mitmproxy.py`): it prints its
//! URL on the first line of standard output and serves until killed. It
//! keeps no log of what it is sent, so thousands of requests cost the
//! last one nothing more than the first. `GET /__fake/requests` answers
//! how many requests it served, for a test asking whether any reached it.
//! `--pace FIRST,EACH` paces every streamed answer as the header
//! `x-fake-pace-ms` does one (`benches/gateway_load.py`: a gateway such as
//! LiteLLM does not pass the agent's headers on).

#[allow(
    clippy::expect_used,
    reason = "a test fake: a runtime it cannot start is a failed test"
)]
fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pace = match args.as_slice() {
        [] => None,
        [flag, pace] if flag == "--pace" => pace
            .split_once(',')
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?))),
        _ => None,
    };
    if !args.is_empty() && pace.is_none() {
        eprintln!("usage: loopdbg-fake [--pace FIRST_MS,EACH_MS]");
        std::process::exit(2);
    }
    runtime.block_on(async {
        let fake = match pace {
            Some(pace) => loopdbg_fake::try_start_unlogged_paced(pace)
                .await
                .expect("the fake listens on 127.0.0.1"),
            None => loopdbg_fake::start_unlogged().await,
        };
        println!("{}", fake.url);
        std::future::pending::<()>().await;
    });
}
