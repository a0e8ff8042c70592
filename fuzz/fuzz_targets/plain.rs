//! `check`'s fast path against the general readers: any text as a JSON
//! Lines body, detected and under each forced format. Whatever the fast
//! path takes, the general reader must read the same line into the same
//! conversation; the fast path may decline anything.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_formats::provider::Format;
use loopdbg_read::{Source, detect_with_evidence, plain, read_owned};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let formats = [
        None,
        Some(Format::Anthropic),
        Some(Format::Openai),
        Some(Format::Responses),
        Some(Format::Gemini),
        Some(Format::Bedrock),
    ];
    for forced in formats.map(|f| f.map(Source::Provider)) {
        let Some(fast) = plain::every_shape(text, forced) else {
            continue;
        };
        let doc: serde_json::Value = serde_json::from_str(text).expect("the fast path took bad JSON");
        let detected = detect_with_evidence(&doc);
        if let (Some(f), Some((found, true))) = (forced, detected) {
            assert_eq!(f, found, "the general path refuses this --format");
        }
        let source = forced.or(detected.map(|d| d.0)).expect("the fast path took an undetectable body");
        let general = read_owned(doc, source).expect("the fast path took what the general reader refuses");
        assert_eq!(fast, general);
    }
});
