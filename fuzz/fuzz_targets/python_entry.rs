//! The Rust under the Python package's entry points, on any bytes:
//! `loopdbg.check` and `loopdbg.rows` (`check_bytes`, `rows_of_bytes`),
//! `loopdbg.fix` (`write_repaired_bytes`, both repairs), and the guard's
//! gate (`judge_as`) on each provider's path. Never a panic (PyO3 turns
//! one into a `PanicException` that `except Exception` does not catch),
//! and what a repair writes is checked again as `loopdbg.fix` hands it on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_judge::fix::Repair;
use loopdbg_judge::gate::{Gatekeeper, Memory, OnInvalid, OnUnjudged, judge_as};

const PATHS: &[&str] = &[
    "/v1/messages",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1beta/models/gemini-2.5-pro:generateContent",
    "/model/anthropic.claude-3/converse",
];

fuzz_target!(|data: &[u8]| {
    let _ = loopdbg_corpus::check_bytes("fuzz", data.to_vec(), None, &[], &mut |_, _| {});
    let _ = loopdbg_corpus::table::rows_of_bytes("fuzz", data.to_vec(), None);
    for how in [Repair::Synthesize, Repair::Strip] {
        let mut out = Vec::new();
        let unwritable = |e: std::io::Error| loopdbg_engine::LoadError::Unwritable {
            origin: "fuzz".into(),
            reason: e.to_string(),
        };
        let written =
            loopdbg_corpus::write_repaired_bytes("fuzz", data.to_vec(), None, how, &mut out, &unwritable);
        if written.is_ok() {
            let _ = loopdbg_corpus::check_bytes("fixed", out, None, &[], &mut |_, _| {});
        }
    }
    // The guard's memory, small: the same bytes judged again under the
    // next policy are read past their remembered prefix.
    let memory = Memory::new(1 << 20);
    for path in PATHS {
        for policy in [OnInvalid::Forward, OnInvalid::Block, OnInvalid::Repair(Repair::Synthesize)] {
            let _ = judge_as(Gatekeeper::Guard, path, data, policy, OnUnjudged::Forward, &memory);
        }
    }
});
