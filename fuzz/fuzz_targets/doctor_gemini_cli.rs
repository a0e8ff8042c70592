//! The doctor on any bytes read as a GeminiCli log: no panic, on the input or
//! on its own repair, and every line no change names kept
//! (`loopdbg_corpus::doctor::verify_repair`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = loopdbg_corpus::doctor::verify_repair(data, loopdbg_read::Source::Agent(loopdbg_read::Agent::GeminiCli)) {
        panic!("{broken}");
    }
});
