//! The bounded JSON parse (`loopdbg_read::bounded`) against serde_json's
//! own: on any text under its limit they agree value for value, or both
//! refuse it; under a small limit it refuses, never panics; values one
//! after another are those serde_json's stream finds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = loopdbg_read::bounded::value(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        _ => panic!("bounded {ours:?} but serde_json {theirs:?}"),
    }
    // A limit this small refuses most documents; none may panic.
    let _ = loopdbg_read::bounded::value_within(text, 256);
    let ours: Vec<_> = loopdbg_read::bounded::values(text).map(|v| v.ok()).collect();
    let theirs: Vec<_> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(|v| v.ok())
        .collect();
    // The stream stops at its first error; so does ours, one value later
    // at most (an extent found, its value refused).
    let agree = ours.iter().zip(&theirs).take_while(|(a, b)| a.is_some() && b.is_some());
    for (a, b) in agree {
        assert_eq!(a, b);
    }
});
