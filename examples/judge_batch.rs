//! What one batch of `--follow`'s judge costs on a long log: the log is
//! taken as the first change, then an event appended as an agent appends
//! it (the last line again, under a new uuid whose parent is the last
//! one's: a Claude Code log's live chain grows), timed `ROUNDS` times
//! (default 3). `AGAIN=1` appends the last line as it is (a uuid written
//! twice), which builds every conversation again. Each appended event's
//! replay and what the screen shows at its end (the tokens, per trip and
//! so far) are grown from the last one's, as `--follow` grows the picture
//! the screen gives back (`BUILD=1`: made afresh, as before).
//! `cargo run --release --example judge_batch -- LOG`; prints milliseconds.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::time::Instant;

use loopdbg_corpus::follow::Followed;
use loopdbg_read::Grown;
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
    let again = std::env::var("AGAIN").is_ok_and(|a| a == "1");
    let build = std::env::var("BUILD").is_ok_and(|a| a == "1");
    let mut event: serde_json::Value = serde_json::from_slice(&last).expect("a JSON line");
    let prices = loopdbg_formats::prices::Prices::builtin();
    let mut followed = Followed::new(&path);
    let start = Instant::now();
    let judged = followed
        .take_change(text, true, None)
        .expect("readable")
        .expect("a conversation");
    let findings = judged.findings.len();
    let (trace, placed) =
        loopdbg_export::replay::trace_placed(judged.conversation, &judged.findings);
    let mut first = LiveUpdate::of_trace(judged.conversation, trace, "follow", None);
    first.derive(&prices);
    if let Some(derived) = first.derived.as_mut() {
        derived.placed = Some(placed);
    }
    let mut shown = Some(first.into_parts());
    println!(
        "first: {:.1} ms, {findings} findings",
        start.elapsed().as_secs_f64() * 1000.0,
    );
    for round in 0..rounds {
        let line = match again {
            true => last.clone(),
            false => next_event(&mut event, round),
        };
        let start = Instant::now();
        let judged = followed
            .take_change(line, false, None)
            .expect("readable")
            .expect("a conversation");
        let built = start.elapsed();
        let (mut old, mut derived_back) = shown.take().expect("the last picture's");
        let (trace, back, placed) = match judged.grown {
            Grown::Extended { from, .. } if !build => {
                let placed = loopdbg_export::replay::regrow_placed(
                    &mut old,
                    judged.conversation,
                    from,
                    &judged.findings,
                    derived_back.take_placed(),
                );
                (old, Some((derived_back, from)), placed)
            }
            _ => {
                let (trace, placed) =
                    loopdbg_export::replay::trace_placed(judged.conversation, &judged.findings);
                drop((old, derived_back));
                (trace, None, placed)
            }
        };
        let mut update = LiveUpdate::of_trace(judged.conversation, trace, "follow", None);
        let traced = start.elapsed();
        update.derive_grown(&prices, back);
        if let Some(derived) = update.derived.as_mut() {
            derived.placed = Some(placed);
        }
        let derived = start.elapsed();
        // The screen's last picture, given back: what the next is grown from.
        shown = Some(update.into_parts());
        println!(
            "appended: built {:.1} ms, traced {:.1} ms, derived {:.1} ms, freed {:.1} ms",
            ms(built),
            ms(traced - built),
            ms(derived - traced),
            ms(start.elapsed() - derived),
        );
    }
}

/// `event` again as the next one on its chain: a new uuid, the last one's
/// as its parent.
fn next_event(event: &mut serde_json::Value, round: usize) -> Vec<u8> {
    let parent = event["uuid"].clone();
    event["parentUuid"] = parent;
    event["uuid"] = format!("judge-batch-{round}").into();
    let mut line = serde_json::to_vec(event).expect("JSON");
    line.push(b'\n');
    line
}
