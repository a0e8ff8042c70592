//! Every request-body reader and the checker on any JSON document, under
//! every provider's rules and as every agent's document (Crush's and
//! opencode's sessions, the extensions' task histories); a conversation that reads is also replayed. The
//! same document read as an HTTP recording (a cassette, a HAR file).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_formats::provider::Format;
use loopdbg_read::{Source, read};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = loopdbg_read::detect(&doc);
    let _ = loopdbg_read::classify_line(&doc);
    // Every provider, and every agent (those whose store is a document
    // read it; the logs' readers refuse a document at once).
    let sources = Format::ALL
        .into_iter()
        .map(Source::Provider)
        .chain(loopdbg_read::Agent::ALL.into_iter().map(Source::Agent));
    for source in sources {
        if let Ok(conv) = read(&doc, source) {
            let findings = loopdbg_judge::check::check(&conv);
            let trace = loopdbg_export::replay::trace_of(&conv, &findings);
            let _ = trace.ledger_at(trace.len() - 1);
        }
    }
    let wrapped = serde_json::json!({"interactions": [{"request": {"uri": "https://x/v1/messages", "parsed_body": doc.clone()}, "response": {"status": {"code": 400}, "parsed_body": doc}}]});
    for recording in [&wrapped] {
        if let Some(Ok(convs)) = loopdbg_read::recording::read_recording(recording) {
            for conv in convs {
                let findings = loopdbg_judge::check::check(&conv);
                let trace = loopdbg_export::replay::trace_of(&conv, &findings);
                let _ = trace.ledger_at(trace.len() - 1);
            }
        }
    }
});
