//! A HAR file as `check` reads one (browser devtools, Playwright and
//! mitmproxy write them): the input is split into a request body, a
//! response body and its encoding, placed in a HAR entry as text (the
//! response also as base64, as HAR keeps bodies it could not store as
//! text), and read as a recording; every conversation read is checked and
//! replayed. The whole input as one HAR document is read too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::recording;
use serde_json::{Value, json};

fn read_all(doc: &Value) {
    if let Some(Ok(convs)) = recording::read_recording(doc) {
        for conv in convs {
            let findings = loopdbg_judge::check::check(&conv);
            let trace = loopdbg_export::replay::trace_of(&conv, &findings);
            let _ = trace.ledger_at(trace.len() - 1);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\u{1}');
    let request = parts.next().unwrap_or("");
    let response = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("/v1/messages");
    let entry = |content: Value| {
        json!({"log": {"version": "1.2", "entries": [{
            "request": {"method": "POST", "url": format!("https://api.example.com{path}"),
                "postData": {"mimeType": "application/json", "text": request}},
            "response": {"status": 200, "content": content}
        }]}})
    };
    read_all(&entry(
        json!({"mimeType": "application/json", "text": response}),
    ));
    read_all(&entry(
        json!({"mimeType": "application/json", "text": response, "encoding": "base64"}),
    ));
    if let Ok(doc) = serde_json::from_slice::<Value>(data) {
        read_all(&doc);
    }
});
