//! A YAML cassette as `check` reads one: the depth scan first (it must
//! never panic, and whatever it lets through must parse in bounded time),
//! then the YAML parser and the recording reader on what passed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::recording;
use loopdbg_read::yaml_depth::{MAX_YAML_DEPTH, too_deep};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let text = format!("interactions:\n{text}");
    if too_deep(&text, MAX_YAML_DEPTH).is_some() {
        return;
    }
    if let Ok(doc) = serde_yaml_ng::from_str::<serde_json::Value>(&text)
        && recording::is_recording(&doc)
    {
        let _ = recording::read_recording(&doc);
    }
});
