//! `loopdbg doctor`: the smallest change that lets an agent send its
//! session again, made in the agent's own format.
//!
//! Claude Code logs are the first store it repairs. A call whose
//! `tool_result` event is missing (the result dropped, a crash between the
//! call and its result) gets one: a `user` event carrying an error result,
//! its `parentUuid` the event that made the call, its `sessionId`, `cwd`,
//! `version`, `gitBranch` and `timestamp` those of that event, so the
//! uuid chain Claude Code rebuilds on resume passes through it as through
//! a result it wrote itself. Events that pointed at a parent no longer in
//! the file (the dropped result) are re-parented to it. A torn last line
//! (Claude Code killed mid-write) is dropped. Every other line is kept
//! byte for byte.

use loopdbg_formats::edit::rewrite;
use serde_json::{Map, Value, json};

mod codex;
mod gemini_cli;

pub use codex::{ABORTED, codex};
pub use gemini_cli::gemini_cli;

use crate::check::Finding;
use crate::fix::PLACEHOLDER;
use loopdbg_read::finding::Kind;

/// One change the doctor makes, named by the line of the original file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The 1-based line of the original it is about.
    pub line: usize,
    /// What is done.
    pub what: String,
}

/// A repaired file: its lines (each without its `\n`) and what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The new file's lines.
    pub lines: Vec<String>,
    /// What changed, in the order of the original's lines.
    pub changes: Vec<Change>,
}

/// The repair of a Claude Code log `text` for `findings` (what `check`
/// found in it): every unanswered call gets its result event. Fails, with
/// why, when a finding names an event the text does not hold as a call.
pub fn claude_code(text: &str, findings: &[Finding]) -> Result<Plan, String> {
    let (mut lines, mut changes) = read_lines(text);
    let known: std::collections::HashSet<String> = lines
        .iter()
        .filter_map(|l| l.parsed.as_ref()?.get("uuid")?.as_str().map(str::to_string))
        .collect();
    let mut inserts: Vec<(usize, String)> = Vec::new();
    // The result events added: the line each goes after, its uuid.
    let mut added: Vec<(usize, String)> = Vec::new();
    for finding in findings.iter().filter(|f| f.kind == Kind::UnansweredCall) {
        let named = finding
            .line
            .ok_or_else(|| format!("a finding without a line: {}", finding.message))?;
        for id in &finding.ids {
            // The event that holds the call: a finding may name, for
            // calls of several turns read as one, the first turn's line.
            let line = call_line(&lines, named, id).ok_or_else(|| {
                format!("line {named} is not the assistant event the finding names")
            })?;
            let call = lines[line - 1].parsed.as_ref().unwrap_or(&Value::Null);
            let (at, event) = result_event(&lines, line, call, id);
            let uuid = event["uuid"].as_str().unwrap_or_default().to_string();
            changes.push(Change {
                line,
                what: format!("add the missing tool_result for {id} (an error result, after line {at}), as event {uuid}"),
            });
            added.push((at, uuid));
            inserts.push((at, event.to_string()));
        }
    }
    reparent_to_added(&mut lines, &known, &added, &mut changes);
    for finding in findings.iter().filter(|f| f.kind == Kind::InvalidId) {
        for id in &finding.ids {
            rename_id(&mut lines, id, &mut changes);
        }
    }
    for finding in findings.iter().filter(|f| f.kind == Kind::UnexpectedResult) {
        for id in &finding.ids {
            drop_orphan_result(&mut lines, id, &mut changes);
        }
    }
    for finding in findings.iter().filter(|f| f.kind == Kind::DuplicateId) {
        if let Some(insert) = split_duplicate(&mut lines, finding, &mut changes) {
            inserts.push(insert);
        }
    }
    let unrepaired: Vec<&Finding> = findings
        .iter()
        .filter(|f| {
            !matches!(
                f.kind,
                Kind::UnansweredCall
                    | Kind::InvalidId
                    | Kind::UnexpectedResult
                    | Kind::DuplicateId
                    | Kind::JoinedRecords
            )
        })
        .collect();
    if let Some(f) = unrepaired.first() {
        return Err(format!(
            "the doctor has no repair for {} yet: {}",
            f.kind.as_str(),
            f.message
        ));
    }
    Ok(assemble(lines, &inserts, changes))
}

/// The line (1-based) of the assistant event that holds the call `id`:
/// the first at or after `from`, else the first anywhere.
fn call_line(lines: &[Line], from: usize, id: &str) -> Option<usize> {
    let holds = |l: &Line| {
        l.parsed.as_ref().is_some_and(|v| {
            v["type"] == "assistant"
                && v["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|b| b["type"] == "tool_use" && b["id"] == id)
        })
    };
    let found = |skip: usize| {
        lines
            .iter()
            .enumerate()
            .skip(skip)
            .find(|(_, l)| holds(l))
            .map(|(k, _)| k + 1)
    };
    found(from.saturating_sub(1)).or_else(|| found(0))
}

/// Events whose parent is not in the file (the dropped results) hang from
/// the result event added nearest before them: with the results of two
/// turns dropped, each turn's reply hangs from its own turn's result, so
/// the chain Claude Code walks on resume passes through both.
fn reparent_to_added(
    lines: &mut [Line],
    known: &std::collections::HashSet<String>,
    added: &[(usize, String)],
    changes: &mut Vec<Change>,
) {
    for (k, line) in lines.iter_mut().enumerate() {
        let Some(v) = line.parsed.as_mut() else {
            continue;
        };
        let Some(parent) = v["parentUuid"].as_str().map(str::to_string) else {
            continue;
        };
        // The nearest insert point before the event; of several results
        // added there (parallel calls), the first.
        let Some(nearest) = added.iter().map(|(at, _)| *at).filter(|at| *at <= k).max() else {
            continue;
        };
        let Some((_, uuid)) = added.iter().find(|(at, _)| *at == nearest) else {
            continue;
        };
        if known.contains(&parent) || added.iter().any(|(_, u)| *u == parent) {
            continue;
        }
        if set(v, "parentUuid", Value::from(uuid.clone())) {
            line.text = rewrite(&line.text, v);
            changes.push(Change {
                line: k + 1,
                what: format!("re-parent it to {uuid} (its parent {parent} is not in the file)"),
            });
        }
    }
}

/// Two calls of one turn share an id (Anthropic refuses it): the later
/// call gets a fresh id, and the later of two results for the id goes with
/// it; with one result only, the renamed call gets an error result of its
/// own. Returns that result event and the line it goes after.
fn split_duplicate(
    lines: &mut [Line],
    finding: &Finding,
    changes: &mut Vec<Change>,
) -> Option<(usize, String)> {
    let id = finding.ids.first()?;
    let line = finding.line?;
    let block: usize = finding
        .path
        .rsplit_once('[')
        .and_then(|(_, k)| k.trim_end_matches(']').parse().ok())?;
    let mut fresh = format!("{id}_2");
    let mut n = 2;
    while lines
        .iter()
        .any(|l| l.text.contains(&format!("\"{fresh}\"")))
    {
        n += 1;
        fresh = format!("{id}_{n}");
    }
    let call = lines.get_mut(line - 1)?.parsed.as_mut()?;
    let target = call
        .get_mut("message")?
        .get_mut("content")?
        .get_mut(block)?
        .as_object_mut()?;
    if target.get("type")? != "tool_use" || target.get("id")? != id.as_str() {
        return None;
    }
    target.insert("id".into(), Value::from(fresh.clone()));
    let call = call.clone();
    lines[line - 1].text = rewrite(&lines[line - 1].text, &call);
    changes.push(Change {
        line,
        what: format!("give the second call named {id} in this turn its own id, {fresh}"),
    });
    // The results for the id after the call, in file order.
    let mut results = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(line) {
        let Some(v) = l.parsed.as_ref() else { continue };
        for (b, block) in v["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block["type"] == "tool_result" && block["tool_use_id"] == id.as_str() {
                results.push((k, b));
            }
        }
    }
    if let Some(&(k, b)) = results.get(1) {
        let v = lines[k].parsed.as_mut()?;
        let block = v.get_mut("message")?.get_mut("content")?.get_mut(b)?;
        if !set(block, "tool_use_id", Value::from(fresh.clone())) {
            return None;
        }
        lines[k].text = rewrite(&lines[k].text, v);
        changes.push(Change {
            line: k + 1,
            what: format!("this second result for {id} answers {fresh}"),
        });
        return None;
    }
    let (at, event) = result_event(lines, line, &call, &fresh);
    changes.push(Change {
        line,
        what: format!(
            "add an error result for {fresh} (one result came for the two calls), after line {at}"
        ),
    });
    Some((at, event.to_string()))
}

/// The uuids a compaction's boundary names as the messages it kept
/// (`compactMetadata.preservedSegment` / `preservedMessages`, Claude Code
/// 2.1): Claude Code relinks them after the summary on resume, and skips
/// the relink when one of them is gone, so they must stay in the file.
fn kept_by_compactions(lines: &[Line]) -> std::collections::HashSet<String> {
    let mut kept = std::collections::HashSet::new();
    for v in lines.iter().filter_map(|l| l.parsed.as_ref()) {
        if v["type"] != "system" || v["subtype"] != "compact_boundary" {
            continue;
        }
        let meta = &v["compactMetadata"];
        let segment = &meta["preservedSegment"];
        let named = ["headUuid", "tailUuid", "anchorUuid"]
            .iter()
            .filter_map(|k| segment[*k].as_str())
            .chain(meta["preservedMessages"]["anchorUuid"].as_str())
            .chain(
                meta["preservedMessages"]["uuids"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            );
        kept.extend(named.map(str::to_string));
    }
    kept
}

/// A `tool_result` block whose call is not in the history (a compaction
/// or a rewind left it) taken out; an event left with nothing is dropped
/// and the events that hung from it hang from its parent. An event a
/// compaction kept stays: its result becomes text (what the tool said is
/// kept for the model, and the compaction still relinks).
fn drop_orphan_result(lines: &mut [Line], id: &str, changes: &mut Vec<Change>) {
    let kept = kept_by_compactions(lines);
    let mut dropped: Vec<(String, Value)> = Vec::new();
    for (k, line) in lines.iter_mut().enumerate() {
        let Some(v) = line.parsed.as_mut().filter(|v| v["type"] == "user") else {
            continue;
        };
        let stays = v["uuid"].as_str().is_some_and(|u| kept.contains(u));
        let Some(blocks) = v
            .get_mut("message")
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        let before = blocks.len();
        let orphan = |b: &Value| b["type"] == "tool_result" && b["tool_use_id"] == id;
        if stays && blocks.iter().all(orphan) {
            let content = &blocks[0]["content"];
            let said = loopdbg_read::joined_text(Some(content), "\n")
                .unwrap_or_else(|| content.to_string());
            blocks.truncate(1);
            blocks[0] = serde_json::json!({"type": "text", "text": format!(
                "[The result of {id}, a call the compaction before this message summarised:]\n{said}"
            )});
            line.text = rewrite(&line.text, v);
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "turn the tool_result for {id}, a call not in the history, into text (a compaction kept this event: it stays, so the compaction still relinks)"
                ),
            });
            continue;
        }
        blocks.retain(|b| !orphan(b));
        if blocks.len() == before {
            continue;
        }
        if blocks.is_empty() {
            line.removed = true;
            if let Some(uuid) = v["uuid"].as_str() {
                dropped.push((uuid.to_string(), v["parentUuid"].clone()));
            }
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "drop this event: its only block is a tool_result for {id}, a call not in the history"
                ),
            });
        } else {
            line.text = rewrite(&line.text, v);
            changes.push(Change {
                line: k + 1,
                what: format!("take out the tool_result for {id}, a call not in the history"),
            });
        }
    }
    for (uuid, parent) in dropped {
        for (k, line) in lines.iter_mut().enumerate() {
            let Some(v) = line.parsed.as_mut() else {
                continue;
            };
            if line.removed || v["parentUuid"] != uuid.as_str() {
                continue;
            }
            set(v, "parentUuid", parent.clone());
            line.text = rewrite(&line.text, v);
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "re-parent it to {} (its parent {uuid} is dropped)",
                    parent.as_str().unwrap_or("null")
                ),
            });
        }
    }
}

/// A call id Anthropic refuses (outside `[a-zA-Z0-9_-]`) renamed
/// everywhere the log names it (the `tool_use`, its `tool_result`, the
/// events that quote it), to one it accepts that no other id has.
fn rename_id(lines: &mut [Line], id: &str, changes: &mut Vec<Change>) {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let base: String = id.chars().map(|c| if valid(c) { c } else { '_' }).collect();
    let base = if base.is_empty() {
        "toolu_loopdbg".to_string()
    } else {
        base
    };
    let taken = |candidate: &str| {
        lines
            .iter()
            .any(|l| l.text.contains(&format!("\"{candidate}\"")))
    };
    let mut new = base.clone();
    let mut n = 1;
    while taken(&new) {
        new = format!("{base}_{n}");
        n += 1;
    }
    fn walk(v: &mut Value, old: &str, new: &str) -> bool {
        match v {
            Value::String(s) if s == old => {
                *s = new.to_string();
                true
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |hit, x| walk(x, old, new) | hit),
            Value::Object(map) => map
                .values_mut()
                .fold(false, |hit, x| walk(x, old, new) | hit),
            _ => false,
        }
    }
    for (k, line) in lines.iter_mut().enumerate() {
        let Some(v) = line.parsed.as_mut() else {
            continue;
        };
        if walk(v, id, &new) {
            line.text = rewrite(&line.text, v);
            changes.push(Change {
                line: k + 1,
                what: format!("rename the call id {id} to {new} (Anthropic refuses the first)"),
            });
        }
    }
}

/// Sets `key` of `v` when `v` is an object (a record of any other shape is
/// left as it is: indexing it would panic); whether it was set.
fn set(v: &mut Value, key: &str, value: Value) -> bool {
    match v.as_object_mut() {
        Some(map) => {
            map.insert(key.to_string(), value);
            true
        }
        None => false,
    }
}

/// The lines of `text`, parsed where they are JSON, without a torn last
/// line: one that is not JSON and has no end is one the agent was killed
/// while writing, and it never reached any request. Its removal is the
/// first change. A line holding records joined is split: the agent reads
/// its log a line at a time and would drop both.
fn read_lines(text: &str) -> (Vec<Line>, Vec<Change>) {
    let mut changes = Vec::new();
    let mut lines: Vec<Line> = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(k, l)| {
            let text = l.strip_suffix('\n').unwrap_or(l).to_string();
            let parsed = serde_json::from_str::<Value>(&text).ok();
            if parsed.is_none()
                && let Some(mut parts) = joined_parts(&text)
            {
                changes.push(Change {
                    line: k + 1,
                    what: format!(
                        "split it: its {} records, joined with no newline, go on lines of their own",
                        parts.len()
                    ),
                });
                let first = parts.remove(0);
                return Line {
                    parsed: serde_json::from_str::<Value>(&first).ok(),
                    text: first,
                    removed: false,
                    split_off: parts,
                };
            }
            Line {
                parsed,
                text,
                removed: false,
                split_off: Vec::new(),
            }
        })
        .collect();
    let torn = !text.ends_with('\n')
        && lines
            .last()
            .is_some_and(|l| l.parsed.is_none() && !l.text.trim().is_empty());
    if torn {
        changes.push(Change {
            line: lines.len(),
            what: "drop the torn last line (kept in the backup)".into(),
        });
        lines.pop();
    }
    (lines, changes)
}

/// The records of a line holding two or more JSON objects one after the
/// other, each as the bytes it was written with; `None` when it is not that.
fn joined_parts(text: &str) -> Option<Vec<String>> {
    loopdbg_read::joined_records(text)?;
    let mut parts = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut start = 0;
    while let Some(Ok(_)) = stream.next() {
        let end = stream.byte_offset();
        parts.push(text[start..end].trim().to_string());
        start = end;
    }
    Some(parts)
}

/// The new file: `lines` (`None` where one is removed), each followed by
/// what `inserts` puts after its 1-based number.
fn assemble(lines: Vec<Line>, inserts: &[(usize, String)], mut changes: Vec<Change>) -> Plan {
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + inserts.len());
    for (k, line) in lines.into_iter().enumerate() {
        if !line.removed {
            out.push(line.text);
        }
        out.extend(line.split_off);
        for (_, record) in inserts.iter().filter(|(at, _)| *at == k + 1) {
            out.push(record.clone());
        }
    }
    changes.sort_by_key(|c| c.line);
    Plan {
        lines: out,
        changes,
    }
}

struct Line {
    text: String,
    parsed: Option<Value>,
    /// Left out of the repaired file.
    removed: bool,
    /// The records that followed the first on a joined line (`{…}{…}`, a
    /// write that lost its newline), each written on a line of its own.
    split_off: Vec<String>,
}

/// The result event for call `id` made by the event on `line`, and the
/// line it goes after: the last event of the same reply (parallel calls
/// are written one event each, sharing `message.id`), as Claude Code
/// writes its results after them.
fn result_event(lines: &[Line], line: usize, call: &Value, id: &str) -> (usize, Value) {
    let message_id = &call["message"]["id"];
    let mut at = line;
    for (k, other) in lines.iter().enumerate().skip(line) {
        let Some(v) = other.parsed.as_ref() else {
            continue;
        };
        match v["type"].as_str() {
            Some("assistant") if v["message"]["id"] == *message_id => at = k + 1,
            Some("assistant" | "user") => break,
            _ => {}
        }
    }
    let call_uuid = call["uuid"].as_str().unwrap_or_default();
    let mut event = Map::new();
    event.insert("parentUuid".into(), Value::from(call_uuid));
    for key in [
        "isSidechain",
        "userType",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
        "agentId",
    ] {
        if let Some(v) = call.get(key) {
            event.insert(key.into(), v.clone());
        }
    }
    event.insert("type".into(), Value::from("user"));
    event.insert(
        "message".into(),
        json!({"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": PLACEHOLDER, "is_error": true}
        ]}),
    );
    event.insert("uuid".into(), Value::from(uuid_for(call_uuid, id)));
    if let Some(t) = call.get("timestamp") {
        event.insert("timestamp".into(), t.clone());
    }
    event.insert(
        "toolUseResult".into(),
        Value::from(format!("Error: {PLACEHOLDER}")),
    );
    (at, Value::Object(event))
}

/// A uuid (version 4 layout) that is the same for the same call: running
/// the doctor twice on one broken file gives one file.
fn uuid_for(call_uuid: &str, id: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let seeded = ahash::RandomState::with_seeds(0x6c6f, 0x6f70, 0x6462, 0x6767);
    let mut a = seeded.build_hasher();
    a.write(call_uuid.as_bytes());
    a.write(id.as_bytes());
    let high = a.finish();
    let mut b = seeded.build_hasher();
    b.write(id.as_bytes());
    b.write(call_uuid.as_bytes());
    let low = b.finish();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0x0fff,
        0x8000 | (low >> 48) & 0x3fff,
        low & 0xffff_ffff_ffff
    )
}
