//! The gate's memory of recent conversations (`loopdbg_read::prefix`): any
//! bytes split at `0xFF` into the requests of one agent, judged in order
//! by a gate that remembers them (so a request that continues an earlier
//! one is read only past the bytes they share) and by one that remembers
//! nothing. The two must give the same verdict on every request, under
//! the policy the first byte picks, on every path that is remembered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_judge::fix::Repair;
use loopdbg_judge::gate::{Memory, OnInvalid, OnUnjudged, judge};

const PATHS: &[&str] = &[
    "/v1/messages",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let policy = match pick % 4 {
        0 => OnInvalid::Forward,
        1 => OnInvalid::Block,
        2 => OnInvalid::Repair(Repair::Synthesize),
        _ => OnInvalid::Repair(Repair::Strip),
    };
    let requests: Vec<&[u8]> = rest.split(|&b| b == 0xFF).take(8).collect();
    for path in PATHS {
        let remembering = Memory::new(1 << 20);
        let whole = Memory::new(0);
        for (k, request) in requests.iter().enumerate() {
            let verdict = |memory: &Memory| {
                let judged = judge(path, request, policy, OnUnjudged::Block, memory);
                judged.verdict.map(|v| {
                    format!("{:?} {:?} {:?} {:?}", v.findings, v.rejected, v.decision, v.unread)
                })
            };
            assert_eq!(
                verdict(&remembering),
                verdict(&whole),
                "request {k} to {path} under {policy}"
            );
        }
    }
});
