//! The baseline for `loopdbg check` on JSON Lines: read the file line by
//! line and parse every line with serde_json, nothing else.
//! `cargo run --release --example serde_only -- FILE`
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(missing_docs)]

use std::io::BufRead;

fn main() {
    let path = std::env::args().nth(1).expect("usage: serde_only FILE");
    let reader = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut n = 0usize;
    for line in reader.lines() {
        let line = line.unwrap();
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        std::hint::black_box(&v);
        n += 1;
    }
    println!("{n} lines parsed");
}
