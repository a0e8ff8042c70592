//! The fake provider refuses what the providers refuse, and `check`
//! predicts it: every request-body fixture is judged by both, and the
//! test fails where they disagree. The fake's rules are written from the
//! providers' documented behavior and their error bodies
//! (`crates/fake`), apart from loopdbg's checker; `check` has more rules
//! than the fake models (thinking blocks, schemas, Bedrock's
//! `toolConfig`, Gemini 3's thought signatures), so only the kinds both
//! model are compared.

use std::path::{Path, PathBuf};

use loopdbg_read::Source;
use loopdbg_read::finding::Kind;

/// The kinds of 400 the fake models: calls and results that do not pair,
/// call ids off the pattern, roles Gemini does not take, reasoning items
/// alone, too many cache breakpoints, blank text and empty messages.
const MODELLED: [Kind; 9] = [
    Kind::UnansweredCall,
    Kind::UnexpectedResult,
    Kind::DuplicateResult,
    Kind::InvalidId,
    Kind::InvalidRole,
    Kind::ReasoningWithoutItem,
    Kind::CacheControlLimit,
    Kind::BlankText,
    Kind::EmptyContent,
];

fn bodies(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            bodies(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn the_fake_and_check_agree_on_every_request_body_fixture() {
    let mut files = Vec::new();
    bodies(Path::new("tests/fixtures/transcripts"), &mut files);
    files.sort();
    let mut compared = 0;
    let mut refused = 0;
    let mut disagree = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            continue;
        };
        // A body (not a bare array of messages, which no provider takes
        // as is), and not one continuing a response stored elsewhere.
        let body = ["messages", "contents", "input"]
            .iter()
            .any(|key| doc.get(key).is_some());
        if !body || doc.get("previous_response_id").is_some() {
            continue;
        }
        let origin = path.display().to_string();
        let report = loopdbg_corpus::report::check_bytes(&origin, bytes, None, &[], &mut |_, _| {});
        let Some(Source::Provider(format)) = report.format else {
            continue;
        };
        if !report.errors.is_empty() {
            continue;
        }
        let predicted: Vec<String> = report
            .results
            .iter()
            .flat_map(|r| &r.findings)
            .filter(|f| f.rejected_by_provider() && MODELLED.contains(&f.kind))
            .map(|f| format!("{} at {}", f.kind, f.path))
            .collect();
        let fake = loopdbg_fake::refusal(format.as_str(), &doc);
        compared += 1;
        refused += usize::from(fake.is_some());
        let predicts_400 = !predicted.is_empty();
        if fake.is_some() != predicts_400 {
            disagree.push(format!(
                "{origin} ({}): the fake says {}; check predicts {}",
                format.as_str(),
                fake.as_deref().unwrap_or("200"),
                match predicted.is_empty() {
                    true => "no 400 it models".to_string(),
                    false => predicted.join("; "),
                }
            ));
        }
    }
    assert!(compared >= 30, "only {compared} request bodies compared");
    assert!(refused >= 10, "only {refused} refused by the fake");
    assert!(
        disagree.is_empty(),
        "{} of {compared} bodies judged differently:\n{}",
        disagree.len(),
        disagree.join("\n")
    );
}
