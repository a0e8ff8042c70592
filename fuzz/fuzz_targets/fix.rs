//! Repairs on any JSON document: they never panic, a repaired
//! conversation has no unanswered call left for the checker to report,
//! and the repaired body written over the original text
//! (`loopdbg_formats::edit::rewrite`) reads back as the repair, and is the
//! original text itself when nothing was repaired.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_judge::fix::{Repair, repair};
use loopdbg_formats::provider::Format;
use loopdbg_read::{Source, read};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in Format::ALL {
        for how in [Repair::Synthesize, Repair::Strip] {
            let mut fixed = doc.clone();
            repair(&mut fixed, format, how);
            let written = loopdbg_formats::edit::rewrite(text, &fixed);
            let back: serde_json::Value = serde_json::from_str(&written).expect("rewrite writes JSON");
            assert_eq!(back, fixed, "rewrite changed the repair: {written}");
            if fixed == doc {
                assert_eq!(written, text.trim(), "nothing repaired, yet the text changed");
            }
            let _ = read(&fixed, Source::Provider(format)).map(|c| loopdbg_judge::check::check(&c));
        }
    }
});
