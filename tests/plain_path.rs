//! `check` reads a JSON Lines body of the plain shape by a fast path
//! (`read::plain`) and anything else by the general readers. The two must
//! give the same conversation: here every request body found anywhere in
//! the fixtures (a file, a line, a capture's or a cassette's recorded
//! request, a body inside a string) and the benchmark's generated lines
//! are read both ways, as detected and under each forced format.

use loopdbg_formats::provider::Format;
use loopdbg_read::{Source, detect_with_evidence, plain, read_owned};
use serde_json::Value;

/// Every object in `v` that could be a request body, with its text.
fn bodies(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if ["messages", "input", "contents"]
                .iter()
                .any(|k| o.contains_key(*k))
            {
                out.push(serde_json::to_string(v).unwrap());
            }
            o.values().for_each(|v| bodies(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| bodies(v, out)),
        Value::String(s) if s.trim_start().starts_with('{') => {
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                bodies(&inner, out);
            }
        }
        _ => {}
    }
}

fn fixture_bodies() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from("tests/fixtures")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(doc) => bodies(&doc, &mut out),
                Err(_) => text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .for_each(|doc| bodies(&doc, &mut out)),
            }
        }
    }
    out
}

/// Reads `text` both ways under `forced`; the format, when the plain path
/// took it.
fn same_both_ways(text: &str, forced: Option<Source>) -> Option<Source> {
    let plain = plain::every_shape(text, forced)?;
    let doc: Value = serde_json::from_str(text).unwrap();
    let detected = detect_with_evidence(&doc);
    if let (Some(f), Some((found, true))) = (forced, detected) {
        assert_eq!(f, found, "the general path refuses --format here: {text}");
    }
    let source = forced.or(detected.map(|d| d.0)).unwrap();
    let general = read_owned(doc, source).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(plain, general, "{forced:?}: {text}");
    Some(source)
}

#[test]
fn the_plain_path_reads_every_fixture_body_as_the_general_readers_do() {
    let forced = [
        None,
        Some(Source::Provider(Format::Openai)),
        Some(Source::Provider(Format::Anthropic)),
        Some(Source::Provider(Format::Responses)),
        Some(Source::Provider(Format::Gemini)),
        Some(Source::Provider(Format::Bedrock)),
    ];
    let bodies = fixture_bodies();
    assert!(bodies.len() > 100, "found {} bodies", bodies.len());
    let mut taken = std::collections::BTreeMap::new();
    for body in &bodies {
        for f in forced {
            if let Some(source) = same_both_ways(body, f) {
                *taken.entry(source.as_str()).or_insert(0) += 1;
            }
        }
    }
    // Each format's path must be exercised, not skipped by every body.
    for format in ["anthropic", "openai", "responses", "gemini", "bedrock"] {
        let n = taken.get(format).copied().unwrap_or(0);
        assert!(n >= 2, "the plain path took {n} {format} bodies: {taken:?}");
    }
}

#[test]
fn the_plain_path_takes_every_benchmark_line() {
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(3);
    for format in ["openai", "anthropic", "responses", "gemini", "bedrock"] {
        for n in 1..=14 {
            let line = loopdbg_fake::bodies::conversation(format, n, n % 7 == 0, &filler);
            assert!(
                same_both_ways(&line, None).is_some(),
                "{format} line {n} not taken"
            );
            // As `check` reads it: the shape that read the line before first.
            assert!(plain::conversation(&line, None).is_some());
        }
    }
}

/// Bodies whose messages say nothing of their format, which the detector
/// leans by model and `max_tokens`: both paths read each alike (the first
/// is the CI fuzz smoke's find: an untyped part is Bedrock's before any lean).
#[test]
fn bodies_leaned_by_model_or_max_tokens_read_alike_both_ways() {
    for text in [
        r#"{"messages":[{"role":"user","content":[{}]}]}"#,
        r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
        r#"{"model":"claude-x","messages":[{"role":"user","content":"hi"}],"max_tokens":9}"#,
        r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":9}"#,
    ] {
        same_both_ways(text, None);
    }
}
