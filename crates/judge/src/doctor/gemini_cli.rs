//! Gemini CLI chat recordings. The history Gemini CLI resumes with is the
//! folded records sent as they stand (no repair, unless its context
//! management is on): each `gemini` record's calls, then their `result`s,
//! then every user record, which since 0.5x includes a `functionResponse`
//! record of its own after the calls ran. So a resumed session sends each
//! response twice and Gemini refuses it ("the number of function response
//! parts is equal to the number of function call parts"), and a call whose
//! result was never written is sent without one. The doctor drops the
//! second copy and gives a call without a result an error result, in the
//! record where the CLI keeps results (`toolCalls[k].result`). A cancelled
//! batch whose resume failed leaves each call's `result` holding the whole
//! batch's responses, every part of which the CLI sends
//! (`convertSessionToClientHistory`): the doctor keeps the call's own.
//! What the CLI sends is read by `loopdbg_read::gemini_cli`; one run
//! leaves nothing for a second (`tests/doctor.rs`,
//! `every_repair_of_the_fixtures_is_whole_in_one_run`).

use loopdbg_formats::edit::rewrite;
use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use super::{Change, Line, Plan, assemble, read_lines};
use crate::fix::PLACEHOLDER;

/// A folded message record, where its latest version is
/// (`record.place`): the reader's fold, so the doctor edits exactly the
/// records the CLI sends.
type Record = loopdbg_read::GeminiCliRecord;

/// What the doctor changes in one record.
enum Edit {
    /// Drop these `functionResponse` parts (copies of a call's `result`).
    DropParts { record: usize, parts: Vec<usize> },
    /// Give call `k` an error result.
    FillResult { record: usize, call: usize },
    /// Keep only part `keep` of call `k`'s `result` (the one that answers
    /// it): a cancelled batch whose resume failed leaves each call's
    /// `result` holding the whole batch's responses, all of which the CLI
    /// sends.
    TrimResult {
        record: usize,
        call: usize,
        keep: usize,
    },
}

/// The repair of a Gemini CLI chat recording `text`.
///
/// The edits are made on the folded records first and written back once
/// per line: a resumed session rewrites the whole history as one `$set`
/// line, so several records of one line may change, and each is found by
/// its element as the CLI wrote it, never by an index an earlier removal
/// moved.
pub fn gemini_cli(text: &str) -> Result<Plan, String> {
    // Records are written back whole (a chat is small).
    let (mut lines, mut changes) = read_lines::<Value>(text);
    let mut records = fold(&lines);
    let edits = plan(&records);
    // What becomes of each record an edit touches: `None` when dropped.
    let mut touched: BTreeMap<usize, Option<Value>> = BTreeMap::new();
    for edit in &edits {
        match edit {
            Edit::DropParts { record, parts } => {
                let rec = &mut records[*record];
                let Some(content) = rec.value.get_mut("content").and_then(Value::as_array_mut)
                else {
                    continue;
                };
                let ids: Vec<String> = parts
                    .iter()
                    .filter_map(|&p| content.get(p)?.get("functionResponse")?.get("id")?.as_str())
                    .map(str::to_string)
                    .collect();
                let mut p = 0;
                content.retain(|_| {
                    p += 1;
                    !parts.contains(&(p - 1))
                });
                let what = format!(
                    "drop the second copy of the response for {} (the call's first response holds it; Gemini CLI would send both and Gemini refuses the count)",
                    ids.join(", ")
                );
                let keep = !content.is_empty();
                touched.insert(*record, keep.then(|| rec.value.clone()));
                match (keep, rec.place.element) {
                    (false, None) => {
                        for k in own_lines(&lines, &rec.id) {
                            note(&mut changes, k + 1, what.clone());
                        }
                    }
                    _ => note(&mut changes, rec.place.line + 1, what),
                }
            }
            Edit::TrimResult { record, call, keep } => {
                let rec = &mut records[*record];
                let Some((slot, id, _)) = call_slot(&mut rec.value, *call) else {
                    continue;
                };
                let Some(Value::Array(parts)) = slot.get_mut("result") else {
                    continue;
                };
                let others: Vec<String> = parts
                    .iter()
                    .enumerate()
                    .filter(|(p, _)| p != keep)
                    .filter_map(|(_, part)| part.get("functionResponse")?.get("id")?.as_str())
                    .map(str::to_string)
                    .collect();
                let kept = parts.swap_remove(*keep);
                *parts = vec![kept];
                touched.insert(*record, Some(rec.value.clone()));
                note(
                    &mut changes,
                    rec.place.line + 1,
                    format!(
                        "keep only the call {id}'s own response in its result, dropping the {} other response(s) it holds ({}): Gemini CLI sends every part of a result, and Gemini refuses the count",
                        others.len(),
                        others.join(", ")
                    ),
                );
            }
            Edit::FillResult { record, call } => {
                let rec = &mut records[*record];
                let Some((slot, id, name)) = call_slot(&mut rec.value, *call) else {
                    continue;
                };
                slot.insert(
                    "result".into(),
                    json!([{"functionResponse": {
                        "id": id, "name": name, "response": {"error": PLACEHOLDER}
                    }}]),
                );
                slot.insert("status".into(), Value::from("error"));
                touched.insert(*record, Some(rec.value.clone()));
                note(
                    &mut changes,
                    rec.place.line + 1,
                    format!("give the call {id} ({name}) the error result it never got"),
                );
            }
        }
    }
    write_back(&mut lines, &records, &touched)?;
    Ok(assemble(lines, &[], changes))
}

/// Call `k` of a model record's `toolCalls`, with its id and name.
fn call_slot(
    record: &mut Value,
    k: usize,
) -> Option<(&mut serde_json::Map<String, Value>, String, String)> {
    let slot = record.get_mut("toolCalls")?.get_mut(k)?.as_object_mut()?;
    let field = |key: &str| {
        slot.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (id, name) = (field("id"), field("name"));
    Some((slot, id, name))
}

/// Says `what` of `line`, once.
fn note(changes: &mut Vec<Change>, line: usize, what: String) {
    if !changes.iter().any(|c| c.line == line && c.what == what) {
        changes.push(Change { line, what });
    }
}

/// Writes the touched records back: a record on a line of its own is
/// rewritten there (or every line of it removed); records that are
/// elements of a `messages` array are replaced or dropped in one pass
/// over that array.
fn write_back(
    lines: &mut [Line],
    records: &[Record],
    touched: &BTreeMap<usize, Option<Value>>,
) -> Result<(), String> {
    let mut by_element: BTreeMap<usize, BTreeMap<usize, Option<Value>>> = BTreeMap::new();
    for (&r, value) in touched {
        let rec = &records[r];
        match (rec.place.element, value) {
            (Some(e), _) => {
                let elements = by_element.entry(rec.place.line).or_default();
                elements.insert(e, value.clone());
                // The copies go: the record is written once, at its place.
                for &copy in &rec.place.copies {
                    elements.insert(copy, None);
                }
            }
            (None, Some(v)) => {
                let line = &mut lines[rec.place.line];
                line.text = rewrite(&line.text, v).into();
                line.parsed = Some(v.clone());
            }
            (None, None) => {
                for k in own_lines(lines, &rec.id) {
                    lines[k].removed = true;
                }
            }
        }
    }
    for (k, elements) in by_element {
        let line = &mut lines[k];
        let parsed = line
            .parsed
            .as_mut()
            .ok_or_else(|| format!("line {} is not JSON", k + 1))?;
        let patch = match parsed.get("$set").is_some() {
            true => parsed.get_mut("$set"),
            false => Some(&mut *parsed),
        };
        let Some(Value::Array(messages)) = patch.and_then(|p| p.get_mut("messages")) else {
            return Err(format!("line {}: no `messages` array", k + 1));
        };
        let old = std::mem::take(messages);
        *messages = old
            .into_iter()
            .enumerate()
            .filter_map(|(e, m)| match elements.get(&e) {
                Some(new) => new.clone(),
                None => Some(m),
            })
            .collect();
        line.text = rewrite(&line.text, parsed).into();
    }
    Ok(())
}

/// The lines that are a version of record `id` (not a `$set`).
fn own_lines(lines: &[Line], id: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            line.parsed.as_ref().is_some_and(|v| {
                v.get("$set").is_none() && v.get("id").and_then(Value::as_str) == Some(id)
            })
        })
        .map(|(k, _)| k)
        .collect()
}

/// The message records as the CLI folds them ([`loopdbg_read::GeminiCliFold`]),
/// lines numbered from 0.
fn fold(lines: &[Line]) -> Vec<Record> {
    let mut fold = loopdbg_read::GeminiCliFold::default();
    for (k, line) in lines.iter().enumerate() {
        if let Some(v) = line.parsed.as_ref() {
            fold.push(k, v.clone());
        }
    }
    fold.into_records()
}

/// Walks the folded history as the CLI sends it and names what to change.
fn plan(records: &[Record]) -> Vec<Edit> {
    let mut edits = Vec::new();
    // Ids the last model turn's `result`s answer, and its calls without one.
    let mut answered: HashSet<String> = HashSet::new();
    let mut open: Vec<(usize, usize, String)> = Vec::new();
    // Calls the last model turn holds as `functionCall` parts of its
    // `content` (how a resume that failed rewrites the history in its
    // `$set`: each answered by a `<id>_response` user record) and no
    // response has answered yet.
    let mut called: HashSet<String> = HashSet::new();
    let close = |open: &mut Vec<(usize, usize, String)>, edits: &mut Vec<Edit>| {
        for (record, call, _) in open.drain(..) {
            edits.push(Edit::FillResult { record, call });
        }
    };
    for (r, rec) in records.iter().enumerate() {
        let v = &rec.value;
        match v["type"].as_str() {
            Some("gemini") => {
                let calls = v["toolCalls"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let text = v["content"].as_str().is_some_and(|t| !t.is_empty())
                    || v["content"].as_array().is_some_and(|p| !p.is_empty());
                if calls.is_empty() && !text {
                    continue;
                }
                close(&mut open, &mut edits);
                answered.clear();
                called = v["content"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|p| p.get("functionCall")?.get("id")?.as_str())
                    .map(str::to_string)
                    .collect();
                for (k, call) in calls.iter().enumerate() {
                    let id = call["id"].as_str().unwrap_or("").to_string();
                    if let Some(keep) = own_response(call, &id) {
                        edits.push(Edit::TrimResult {
                            record: r,
                            call: k,
                            keep,
                        });
                    }
                    if call.get("result").is_some_and(|r| !r.is_null()) {
                        answered.insert(id);
                    } else {
                        open.push((r, k, id));
                    }
                }
            }
            Some("user") => {
                let parts = v["content"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let responses: Vec<(usize, &str)> = parts
                    .iter()
                    .enumerate()
                    .filter_map(|(p, part)| {
                        Some((p, part.get("functionResponse")?["id"].as_str()?))
                    })
                    .collect();
                if responses.is_empty() {
                    if parts
                        .iter()
                        .any(|p| p["text"].as_str().is_some_and(|t| !t.trim().is_empty()))
                        || v["content"].as_str().is_some_and(|t| !t.trim().is_empty())
                    {
                        close(&mut open, &mut edits);
                        answered.clear();
                        called.clear();
                    }
                    continue;
                }
                let mut dropped = Vec::new();
                for (p, id) in responses {
                    if answered.contains(id) {
                        dropped.push(p);
                    } else if let Some(at) = open.iter().position(|(_, _, o)| o == id) {
                        open.remove(at);
                        answered.insert(id.to_string());
                    } else if called.remove(id) {
                        answered.insert(id.to_string());
                    }
                }
                if !dropped.is_empty() {
                    edits.push(Edit::DropParts {
                        record: r,
                        parts: dropped,
                    });
                }
            }
            _ => {}
        }
    }
    close(&mut open, &mut edits);
    edits
}

/// For a call whose `result` holds more than one `functionResponse`, the
/// part to keep: the first that names the call's id (or, with none that
/// does, the first response). `None` when the result is one response.
fn own_response(call: &Value, id: &str) -> Option<usize> {
    let parts = call.get("result")?.as_array()?;
    let responses: Vec<(usize, Option<&str>)> = parts
        .iter()
        .enumerate()
        .filter_map(|(p, part)| {
            let f = part.get("functionResponse")?;
            Some((p, f.get("id").and_then(Value::as_str)))
        })
        .collect();
    if responses.len() < 2 {
        return None;
    }
    responses
        .iter()
        .find(|(_, named)| *named == Some(id))
        .or(responses.first())
        .map(|(p, _)| *p)
}
