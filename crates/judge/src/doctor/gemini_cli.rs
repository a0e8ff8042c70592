//! Gemini CLI chat recordings. The history Gemini CLI resumes with is the
//! folded records sent as they stand (no repair, unless its context
//! management is on): each `gemini` record's calls, then their `result`s,
//! then every user record, which since 0.5x includes a `functionResponse`
//! record of its own after the calls ran. So a resumed session sends each
//! response twice and Gemini refuses it ("the number of function response
//! parts is equal to the number of function call parts"), and a call whose
//! result was never written is sent without one. The doctor drops the
//! second copy and gives a call without a result an error result, in the
//! record where the CLI keeps results (`toolCalls[k].result`).

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{Change, Line, Plan, assemble, read_lines};
use crate::fix::PLACEHOLDER;

/// Where the latest version of a message record is: a line of its own, or
/// an element of a `$set` (or legacy whole-file) `messages` array.
#[derive(Debug, Clone, Copy)]
struct Loc {
    line: usize,
    element: Option<usize>,
}

/// A folded message record.
struct Record {
    id: String,
    loc: Loc,
    value: Value,
}

/// What the doctor changes in one record.
enum Edit {
    /// Drop these `functionResponse` parts (copies of a call's `result`).
    DropParts { record: usize, parts: Vec<usize> },
    /// Give call `k` an error result.
    FillResult { record: usize, call: usize },
}

/// The repair of a Gemini CLI chat recording `text`.
pub fn gemini_cli(text: &str) -> Result<Plan, String> {
    let (mut lines, mut changes) = read_lines(text);
    let records = fold(&lines);
    let edits = plan(&records);
    for edit in &edits {
        match edit {
            Edit::DropParts { record, parts } => {
                let rec = &records[*record];
                let parts_of = rec.value["content"].as_array().cloned().unwrap_or_default();
                let ids: Vec<&str> = parts
                    .iter()
                    .filter_map(|&p| parts_of.get(p)?["functionResponse"]["id"].as_str())
                    .collect();
                let kept: Vec<Value> = parts_of
                    .iter()
                    .enumerate()
                    .filter(|(p, _)| !parts.contains(p))
                    .map(|(_, v)| v.clone())
                    .collect();
                let what = format!(
                    "drop the second copy of the response for {} (the call's `result` holds it; Gemini CLI would send both and Gemini refuses the count)",
                    ids.join(", ")
                );
                if kept.is_empty() {
                    remove_record(&mut lines, rec, &mut changes, &what);
                } else {
                    edit_record(&mut lines, rec.loc, |v| {
                        v["content"] = Value::Array(kept.clone())
                    })?;
                    changes.push(Change {
                        line: rec.loc.line + 1,
                        what,
                    });
                }
            }
            Edit::FillResult { record, call } => {
                let rec = &records[*record];
                let target = &rec.value["toolCalls"][*call];
                let id = target["id"].as_str().unwrap_or("").to_string();
                let name = target["name"].as_str().unwrap_or("").to_string();
                let call = *call;
                edit_record(&mut lines, rec.loc, |v| {
                    let slot = &mut v["toolCalls"][call];
                    slot["result"] = json!([{"functionResponse": {
                        "id": id, "name": name, "response": {"error": PLACEHOLDER}
                    }}]);
                    slot["status"] = Value::from("error");
                })?;
                changes.push(Change {
                    line: rec.loc.line + 1,
                    what: format!("give the call {id} ({name}) the error result it never got"),
                });
            }
        }
    }
    Ok(assemble(lines, &[], changes))
}

/// The message records as the CLI folds them: a record whose `id` was seen
/// replaces it, `$rewindTo` cuts from a record on, `$set.messages` (or the
/// legacy file's `messages`) replaces them all.
fn fold(lines: &[Line]) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    let upsert = |records: &mut Vec<Record>, loc: Loc, value: &Value| {
        let Some(id) = value.get("id").and_then(Value::as_str) else {
            return;
        };
        let record = Record {
            id: id.to_string(),
            loc,
            value: value.clone(),
        };
        match records.iter_mut().find(|r| r.id == id) {
            Some(slot) => *slot = record,
            None => records.push(record),
        }
    };
    for (k, line) in lines.iter().enumerate() {
        let Some(v) = line.parsed.as_ref() else {
            continue;
        };
        if let Some(target) = v.get("$rewindTo").and_then(Value::as_str) {
            let cut = records.iter().position(|r| r.id == target).unwrap_or(0);
            records.truncate(cut);
        } else if v.get("$set").is_none() && v.get("id").is_some() {
            upsert(
                &mut records,
                Loc {
                    line: k,
                    element: None,
                },
                v,
            );
        } else if let Some(Value::Array(messages)) = v.get("$set").unwrap_or(v).get("messages") {
            records.clear();
            for (e, m) in messages.iter().enumerate() {
                upsert(
                    &mut records,
                    Loc {
                        line: k,
                        element: Some(e),
                    },
                    m,
                );
            }
        }
    }
    records
}

/// Walks the folded history as the CLI sends it and names what to change.
fn plan(records: &[Record]) -> Vec<Edit> {
    let mut edits = Vec::new();
    // Ids the last model turn's `result`s answer, and its calls without one.
    let mut answered: HashSet<String> = HashSet::new();
    let mut open: Vec<(usize, usize, String)> = Vec::new();
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
                for (k, call) in calls.iter().enumerate() {
                    let id = call["id"].as_str().unwrap_or("").to_string();
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

/// Applies `change` to the record at `loc` and rewrites its line.
fn edit_record(
    lines: &mut [Line],
    loc: Loc,
    change: impl FnOnce(&mut Value),
) -> Result<(), String> {
    let line = &mut lines[loc.line];
    let parsed = line
        .parsed
        .as_mut()
        .ok_or_else(|| format!("line {} is not JSON", loc.line + 1))?;
    let target = match loc.element {
        None => parsed,
        Some(e) => {
            let patch = if parsed.get("$set").is_some() {
                &mut parsed["$set"]
            } else {
                parsed
            };
            patch["messages"]
                .get_mut(e)
                .ok_or_else(|| format!("line {}: no message {e}", loc.line + 1))?
        }
    };
    change(target);
    line.text = line
        .parsed
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    Ok(())
}

/// Removes every version of `rec`: its own lines, or its element of a
/// `messages` array.
fn remove_record(lines: &mut [Line], rec: &Record, changes: &mut Vec<Change>, what: &str) {
    if let Some(e) = rec.loc.element {
        let line = &mut lines[rec.loc.line];
        if let Some(parsed) = line.parsed.as_mut() {
            let patch = if parsed.get("$set").is_some() {
                &mut parsed["$set"]
            } else {
                &mut *parsed
            };
            if let Some(Value::Array(messages)) = patch.get_mut("messages") {
                messages.remove(e);
            }
            line.text = parsed.to_string();
        }
        changes.push(Change {
            line: rec.loc.line + 1,
            what: what.to_string(),
        });
        return;
    }
    for (k, line) in lines.iter_mut().enumerate() {
        let same = line.parsed.as_ref().is_some_and(|v| {
            v.get("$set").is_none() && v.get("id").and_then(Value::as_str) == Some(&rec.id)
        });
        if same {
            line.removed = true;
            changes.push(Change {
                line: k + 1,
                what: what.to_string(),
            });
        }
    }
}
