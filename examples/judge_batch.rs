//! What one batch of `--follow`'s judge costs on a long log: the log is
//! taken as the first change, then its last line again as an appended
//! one, timed `ROUNDS` times (default 3).
//! `cargo run --release --example judge_batch -- LOG`; prints milliseconds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::time::Instant;

use loopdbg_corpus::follow::Followed;
use loopdbg_tui::app::LiveUpdate;

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: judge_batch LOG");
    let rounds: usize = std::env::var("ROUNDS").map_or(3, |r| r.parse().expect("a number"));
    let text = std::fs::read(&path).expect("readable");
    let last = {
        let body = &text[..text.len() - 1];
        let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
        text[start..].to_vec()
    };
    let prices = loopdbg_formats::prices::Prices::builtin();
    let mut followed = Followed::new(&path);
    let start = Instant::now();
    let picked = followed.take_change(text, true, None).expect("readable");
    println!(
        "first: {:.1} ms, {} findings",
        start.elapsed().as_secs_f64() * 1000.0,
        picked.map_or(0, |p| p.findings.len())
    );
    for _ in 0..rounds {
        let start = Instant::now();
        let picked = followed
            .take_change(last.clone(), false, None)
            .expect("readable")
            .expect("a conversation");
        let built = start.elapsed();
        let mut update = LiveUpdate::of(&picked.conversation, &picked.findings, "follow", None);
        let traced = start.elapsed();
        update.derive(&prices);
        let derived = start.elapsed();
        drop(update);
        drop(picked);
        println!(
            "appended: built {:.1} ms, traced {:.1} ms, derived {:.1} ms, freed {:.1} ms",
            ms(built),
            ms(traced - built),
            ms(derived - traced),
            ms(start.elapsed() - derived),
        );
    }
}
