#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use loopdbg_read::{Detail, Log, Source};
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read(&path).unwrap();
    let mut log = Log::new(Source::ClaudeCode).unwrap();
    log.keep(Detail::Full);
    let s = std::str::from_utf8(&text).unwrap();
    let lines: Vec<(usize, &str)> = s.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    log.push_lines(&lines);
    let prices = loopdbg_formats::prices::Prices::builtin();
    for _ in 0..3 {
        let t = Instant::now();
        let c = log.clone();
        let a = t.elapsed();
        let (convs, left) = c.finish_leaving().unwrap();
        let b = t.elapsed();
        let mut g = loopdbg_corpus::conversations::Conversations::default();
        for conv in convs {
            g.add(conv, None);
        }
        let c2 = t.elapsed();
        let taken = g.take(None).unwrap();
        let findings = loopdbg_judge::check::check(&taken.shown);
        let d = t.elapsed();
        let session = loopdbg_export::replay::session_for(&taken.shown, "x");
        let e = t.elapsed();
        let t0 = Instant::now();
        let msgs = taken.shown.messages.clone();
        let t1 = t0.elapsed();
        let pi = loopdbg_engine::ledger::PairingIndex::new(&msgs);
        let t2 = t0.elapsed();
        drop((msgs, pi));
        let t3 = t0.elapsed();
        let rep = loopdbg_export::replay::replayed(&taken.shown);
        let t4 = t0.elapsed();
        let trace = rep.with_findings(&taken.shown, &findings);
        let t5 = t0.elapsed();
        let mut tr2 = trace.clone();
        let t6 = t0.elapsed();
        loopdbg_engine::count_unpaired(&mut tr2);
        let t7 = t0.elapsed();
        drop(tr2);
        eprintln!(
            "  msgclone {:.0} pairing {:.0} drop {:.0} replayed {:.0} with_findings {:.0} | count_unpaired {:.0}",
            (t1).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t3 - t2).as_secs_f64() * 1e3,
            (t4 - t3).as_secs_f64() * 1e3,
            (t5 - t4).as_secs_f64() * 1e3,
            (t7 - t6).as_secs_f64() * 1e3
        );
        let f = t.elapsed();
        let an = loopdbg_lesson::checks::RunAnalysis::of(&trace);
        let g2 = t.elapsed();
        let tok = loopdbg_formats::usage::of_trace(&trace, &prices);
        let h = t.elapsed();
        drop(left);
        let i = t.elapsed();
        drop((session, trace, an, tok));
        let j = t.elapsed();
        drop(taken);
        let k = t.elapsed();
        let ms = |x: std::time::Duration| x.as_secs_f64() * 1000.0;
        println!(
            "clone {:.0} finish {:.0} group {:.0} check {:.0} session {:.0} trace {:.0} analysis {:.0} tokens {:.0} free-left {:.0} free-trace {:.0} free-conv {:.0}",
            ms(a),
            ms(b - a),
            ms(c2 - b),
            ms(d - c2),
            ms(e - d),
            ms(f - e),
            ms(g2 - f),
            ms(h - g2),
            ms(i - h),
            ms(j - i),
            ms(k - j)
        );
    }
}
