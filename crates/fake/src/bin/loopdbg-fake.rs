//! The fake provider as a process of its own, for benches that drive it
//! from another language (`benches/proxy_vs_mitmproxy.py`): it prints its
//! URL on the first line of standard output and serves until killed. It
//! keeps no log of what it is sent, so thousands of requests cost the
//! last one nothing more than the first. `GET /__fake/requests` answers
//! how many requests it served, for a test asking whether any reached it.

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
    runtime.block_on(async {
        let fake = loopdbg_fake::start_unlogged().await;
        println!("{}", fake.url);
        std::future::pending::<()>().await;
    });
}
