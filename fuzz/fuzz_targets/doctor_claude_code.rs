//! The doctor on any bytes read as a ClaudeCode log (see doctor_run.rs).
#![no_main]

#[path = "doctor_run.rs"]
mod doctor_run;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| doctor_run::run(data, loopdbg_read::Source::ClaudeCode));
