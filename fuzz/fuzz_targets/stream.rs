//! What a provider streams back, through the proxy's reassembly: any bytes,
//! cut at any point, in each format; then the exchange as a capture line
//! is turned back into a conversation. Never a panic, never a huge
//! allocation from a hostile `index`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::capture::conversation_of;
use loopdbg_formats::provider::Format;
use loopdbg_formats::stream::Reassembler;

fuzz_target!(|data: &[u8]| {
    // The first byte says where the stream is cut in two.
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let cut = (cut as usize).min(rest.len());
    for format in Format::ALL {
        let mut r = Reassembler::new(format);
        r.feed(&rest[..cut]);
        r.feed(&rest[cut..]);
        let message = r.finish();
        let line = serde_json::json!({
            "loopdbg": "exchange", "provider": format.as_str(), "status": 200,
            "request": {"model": "m", "messages": [], "input": "x", "contents": []},
            "response": message,
        });
        let _ = conversation_of(line);
    }
    // Bedrock's InvokeModel stream: a model's own events in AWS frames.
    let mut r = Reassembler::framed(Format::Anthropic);
    r.feed(&rest[..cut]);
    r.feed(&rest[cut..]);
    let _ = r.finish();
});
