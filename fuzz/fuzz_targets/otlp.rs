//! OTLP traces: any bytes as an OTLP protobuf export and, when they are
//! text, as OTLP JSON; every span read in every dialect, with and without
//! the replies, then checked. Never a panic: a bad export is an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::otlp::{parse_json, parse_protobuf, read_traces, spans_of};

fuzz_target!(|data: &[u8]| {
    let mut exports = Vec::new();
    if let Ok(export) = parse_protobuf(data) {
        exports.push((None, export));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        for (n, line) in text.lines().enumerate() {
            if let Ok(export) = parse_json(line) {
                exports.push((Some(n + 1), export));
            }
        }
    }
    let spans = spans_of(exports);
    for replies in [false, true] {
        for conv in read_traces(&spans, replies).conversations {
            let _ = loopdbg_judge::check::check(&conv);
        }
    }
});
