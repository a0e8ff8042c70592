//! The session parser on any text; a session that loads is run (with a
//! small round limit, so a case stays fast) and linted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(session) = loopdbg_engine::Session::parse("fuzz.json", text) else {
        return;
    };
    let _ = loopdbg_lesson::lint::lint(&session);
    let mut strategy = loopdbg_engine::Strategy::for_session(&session);
    strategy.max_rounds = strategy.max_rounds.min(8);
    let trace = loopdbg_engine::run(&session, &strategy);
    let _ = loopdbg_lesson::report::RunReport::new(&session, &trace);
});
