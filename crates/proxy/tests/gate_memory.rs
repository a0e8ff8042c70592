//! What the gate costs in memory beyond the request it judges. Counted by
//! a global allocator (not timed, not sampled from the OS), so the figure
//! is exact and the same on every machine. One test in this binary, so no
//! other test's allocations are counted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests, benches and examples may panic on what they set up
#![allow(unsafe_code)] // a counting global allocator: the only unsafe code in the workspace
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use loopdbg_formats::provider::Format;
use loopdbg_judge::chain::Chain;
use loopdbg_proxy::gate::{OnInvalid, inspect};
use serde_json::json;

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A 32 MB prompt and an unanswered call: the gate finds the call and
/// holds next to nothing more than the body (it held two more copies of
/// the prompt while it read it: issue 23, item 12).
#[test]
fn judging_a_large_request_holds_it_about_once() {
    const TEXT: usize = 32 << 20;
    let body = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "x".repeat(TEXT)},
            {"role": "assistant", "content": [
                {"type": "text", "text": "y".repeat(TEXT / 2)},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
            ]},
            {"role": "user", "content": "z".repeat(TEXT / 4)}
        ]
    });
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let verdict = inspect(Format::Anthropic, body, OnInvalid::Forward, &Chain::Starts);
    let extra = PEAK.load(Ordering::Relaxed) - before;
    assert!(
        verdict
            .findings
            .iter()
            .any(|f| f.ids.iter().any(|id| id == "toolu_1")),
        "{:?}",
        verdict.findings
    );
    assert!(
        extra < (1 << 20),
        "the gate held {} MB beyond a {} MB body",
        extra >> 20,
        (TEXT + TEXT / 2 + TEXT / 4) >> 20
    );
}
