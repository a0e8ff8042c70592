//! The proxy's request path, its pure half: which provider a path and body
//! are for, the path as recorded (credentials out), the request's own
//! secrets masked in what is recorded, and the gate's read and check.
//! Never a panic; a planted key never survives the masking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loopdbg_read::{Source, read};
use loopdbg_formats::route::redacted_path;
use loopdbg_read::provider_of_request;
use loopdbg_formats::secrets::Known;

fuzz_target!(|data: &[u8]| {
    // First line: the path and query; the rest: the body.
    let text = String::from_utf8_lossy(data);
    let (path, body) = text.split_once('\n').unwrap_or((&text, ""));
    let path = format!("/{}", path.trim_start_matches('/'));
    let recorded = redacted_path(&path);
    let planted = "PLANTEDfuzzKEY0123456789";
    let known = Known::of_request(
        [
            ("x-api-key", planted),
            ("authorization", "Bearer PLANTEDfuzzKEY0123456789"),
        ]
        .into_iter(),
        &path,
    );
    let doc: Option<serde_json::Value> = serde_json::from_str(body).ok();
    if let Some(format) = provider_of_request(&path, doc.as_ref())
        && let Some(doc) = &doc
        && let Ok(conv) = read(doc, Source::Provider(format))
    {
        let _ = loopdbg_judge::check::check(&conv);
    }
    let mut echoed = serde_json::json!({"echo": format!("{recorded} {body} {planted}")});
    known.mask_value(&mut echoed);
    assert!(!echoed.to_string().contains(planted));
});
