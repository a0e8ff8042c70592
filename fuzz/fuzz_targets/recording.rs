//! Recordings of other ecosystems: any text as a Go httprr trace, and any
//! JSON through the shapes that become VCR interactions (nock arrays,
//! LangChain's requests/responses, one-interaction files), then read as
//! conversations. Never a panic; a cut trace is an error at its byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::cassettes::{httprr, normalized};
use loopdbg_read::recording::read_recording;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let traced = format!("httprr trace v1\n{text}");
    if let Ok(doc) = httprr(&traced) {
        let _ = read_recording(&doc);
    }
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = read_recording(&normalized(doc));
    }
});
