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
//!
//! Memory: a log is held once, as the text it was read as. Each line is
//! kept as a slice of it and an `Event` (what the repair decides by:
//! types, ids, uuids, parents; text and tool output left out); a line
//! that changes is parsed whole again, edited and written over its own
//! text.
//! A 631 MB log took 2.7 GB when every line was copied and parsed whole.

use std::borrow::Cow;

use loopdbg_formats::edit::rewrite;
use serde_json::{Map, Value, json};

mod codex;
mod event;
mod gemini_cli;
mod kimi_code;

use event::Event;

pub use codex::{ABORTED, codex};
pub use gemini_cli::gemini_cli;
pub use kimi_code::kimi_code;

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

/// A repaired file: the lines of the text it was made from that it keeps
/// (not copied), the lines written new, and what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pieces: Vec<Piece>,
    /// What changed, in the order of the original's lines.
    pub changes: Vec<Change>,
}

/// A line of a repaired file.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// This range of the original text, kept as it was.
    Kept(std::ops::Range<usize>),
    /// A line written by the repair.
    Written(String),
}

impl Plan {
    /// The new file's lines, each without its `\n`, given `text`, the text
    /// the plan was made from.
    pub fn lines<'s>(&'s self, text: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.pieces.iter().map(move |piece| match piece {
            Piece::Kept(range) => text.get(range.clone()).unwrap_or_default(),
            Piece::Written(line) => line.as_str(),
        })
    }

    /// How many lines the new file has.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether the new file has no line.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}

/// What a line's JSON is kept as while a repair is planned.
trait Parsed: Sized {
    /// The line's JSON in this shape; `None` when it is not JSON.
    fn parse(text: &str) -> Option<Self>;
}

/// Whole (Gemini CLI chats, whose records are written back whole, and
/// Codex rollouts, which are read record by record).
impl Parsed for Value {
    fn parse(text: &str) -> Option<Value> {
        loopdbg_read::bounded::value(text).ok()
    }
}

/// What the repair of a Claude Code log decides by.
impl Parsed for Event {
    fn parse(text: &str) -> Option<Event> {
        Event::parse(text)
    }
}

/// The repair of a Claude Code log `text` for `findings` (what `check`
/// found in it): every unanswered call gets its result event. Fails, with
/// why, when a finding names an event the text does not hold as a call.
pub fn claude_code(text: &str, findings: &[Finding]) -> Result<Plan, String> {
    let (mut lines, mut changes) = read_lines::<Event>(text);
    let known: std::collections::HashSet<Box<str>> = lines
        .iter()
        .filter_map(|l| l.parsed.as_ref()?.uuid.clone())
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
            let (at, event) = result_event(&lines, line, id);
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
fn call_line(lines: &[Line<Event>], from: usize, id: &str) -> Option<usize> {
    let holds = |l: &Line<Event>| {
        l.parsed.as_ref().is_some_and(|e| {
            e.is("assistant")
                && e.blocks
                    .iter()
                    .any(|b| b.kind.as_deref() == Some("tool_use") && b.id.as_deref() == Some(id))
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
    lines: &mut [Line<Event>],
    known: &std::collections::HashSet<Box<str>>,
    added: &[(usize, String)],
    changes: &mut Vec<Change>,
) {
    for (k, line) in lines.iter_mut().enumerate() {
        let Some(parent) = line.parsed.as_ref().and_then(|e| e.parent.clone()) else {
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
        if known.contains(&parent) || added.iter().any(|(_, u)| **u == *parent) {
            continue;
        }
        if line.edit(|v| set(v, "parentUuid", Value::from(uuid.clone()))) {
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
    lines: &mut [Line<Event>],
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
    let call = lines.get(line - 1)?.parsed.as_ref()?;
    let target = call.blocks.get(block)?;
    if target.kind.as_deref() != Some("tool_use") || target.id.as_deref() != Some(id.as_str()) {
        return None;
    }
    let renamed = lines[line - 1].edit(|call| {
        let target = call
            .get_mut("message")
            .and_then(|m| m.get_mut("content"))
            .and_then(|c| c.get_mut(block))
            .and_then(Value::as_object_mut);
        target.is_some_and(|t| t.insert("id".into(), Value::from(fresh.clone())).is_some())
    });
    if !renamed {
        return None;
    }
    changes.push(Change {
        line,
        what: format!("give the second call named {id} in this turn its own id, {fresh}"),
    });
    // The results for the id after the call, in file order.
    let mut results = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(line) {
        let Some(e) = l.parsed.as_ref() else { continue };
        for (b, block) in e.blocks.iter().enumerate() {
            if block.kind.as_deref() == Some("tool_result")
                && block.tool_use_id.as_deref() == Some(id.as_str())
            {
                results.push((k, b));
            }
        }
    }
    if let Some(&(k, b)) = results.get(1) {
        let answered = lines[k].edit(|v| {
            let block = v
                .get_mut("message")
                .and_then(|m| m.get_mut("content"))
                .and_then(|c| c.get_mut(b));
            block.is_some_and(|block| set(block, "tool_use_id", Value::from(fresh.clone())))
        });
        if !answered {
            return None;
        }
        changes.push(Change {
            line: k + 1,
            what: format!("this second result for {id} answers {fresh}"),
        });
        return None;
    }
    let (at, event) = result_event(lines, line, &fresh);
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
fn kept_by_compactions(lines: &[Line<Event>]) -> std::collections::HashSet<Box<str>> {
    lines
        .iter()
        .filter_map(|l| l.parsed.as_ref())
        .filter(|e| e.is("system") && e.compact_boundary)
        .flat_map(|e| e.kept.iter().cloned())
        .collect()
}

/// A `tool_result` block whose call is not in the history (a compaction
/// or a rewind left it) taken out; an event left with nothing is dropped
/// and the events that hung from it hang from its parent. An event a
/// compaction kept stays: its result becomes text (what the tool said is
/// kept for the model, and the compaction still relinks).
fn drop_orphan_result(lines: &mut [Line<Event>], id: &str, changes: &mut Vec<Change>) {
    let kept = kept_by_compactions(lines);
    let mut dropped: Vec<(Box<str>, Value)> = Vec::new();
    let orphan = |b: &event::Block| {
        b.kind.as_deref() == Some("tool_result") && b.tool_use_id.as_deref() == Some(id)
    };
    let orphan_value = |b: &Value| b["type"] == "tool_result" && b["tool_use_id"] == id;
    for (k, line) in lines.iter_mut().enumerate() {
        let Some(e) = line.parsed.as_ref().filter(|e| e.is("user")) else {
            continue;
        };
        if !e.blocks.iter().any(orphan) {
            continue;
        }
        let every = e.blocks.iter().all(orphan);
        let uuid = e.uuid.clone();
        let parent = e.parent_value();
        if every && uuid.as_ref().is_some_and(|u| kept.contains(u)) {
            line.edit(|v| {
                let Some(blocks) = content_mut(v) else {
                    return false;
                };
                let Some(first) = blocks.first() else {
                    return false;
                };
                let content = &first["content"];
                let said = loopdbg_read::joined_text(Some(content), "\n")
                    .unwrap_or_else(|| content.to_string());
                blocks.truncate(1);
                blocks[0] = serde_json::json!({"type": "text", "text": format!(
                    "[The result of {id}, a call the compaction before this message summarised:]\n{said}"
                )});
                true
            });
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "turn the tool_result for {id}, a call not in the history, into text (a compaction kept this event: it stays, so the compaction still relinks)"
                ),
            });
        } else if every {
            line.removed = true;
            if let Some(uuid) = uuid {
                dropped.push((uuid, parent));
            }
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "drop this event: its only block is a tool_result for {id}, a call not in the history"
                ),
            });
        } else {
            line.edit(|v| {
                content_mut(v).is_some_and(|blocks| {
                    blocks.retain(|b| !orphan_value(b));
                    true
                })
            });
            changes.push(Change {
                line: k + 1,
                what: format!("take out the tool_result for {id}, a call not in the history"),
            });
        }
    }
    for (uuid, parent) in dropped {
        for (k, line) in lines.iter_mut().enumerate() {
            let Some(e) = line.parsed.as_ref() else {
                continue;
            };
            if line.removed || e.parent.as_deref() != Some(&*uuid) {
                continue;
            }
            if line.edit(|v| set(v, "parentUuid", parent.clone())) {
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
}

/// `message.content` of an event, when it is an array.
fn content_mut(v: &mut Value) -> Option<&mut Vec<Value>> {
    v.get_mut("message")?.get_mut("content")?.as_array_mut()
}

/// A call id Anthropic refuses (outside `[a-zA-Z0-9_-]`) renamed
/// everywhere the log names it (the `tool_use`, its `tool_result`, the
/// events that quote it), to one it accepts that no other id has.
fn rename_id(lines: &mut [Line<Event>], id: &str, changes: &mut Vec<Change>) {
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
    // The events that quote the id (a progress event's `toolUseID`) are
    // not in a skeleton: an id of plain characters is found in the text
    // as it is, any other in the whole value.
    let plain = id
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
    for (k, line) in lines.iter_mut().enumerate() {
        if line.parsed.is_none() || (plain && !line.text.contains(id)) {
            continue;
        }
        if line.edit(|v| walk(v, id, &new)) {
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

/// The lines of `text`, parsed where they are JSON (into `P`), without a
/// torn last line: one that is not JSON and has no end is one
/// the agent was killed while writing, and it never reached any request.
/// Its removal is the first change. A line holding records joined is
/// split: the agent reads its log a line at a time and would drop both.
fn read_lines<P: Parsed>(text: &str) -> (Vec<Line<'_, P>>, Vec<Change>) {
    let mut changes = Vec::new();
    let mut start = 0;
    let mut lines: Vec<Line<P>> = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(k, l)| {
            let at = start;
            start += l.len();
            let own = l.strip_suffix('\n').unwrap_or(l);
            let parsed = P::parse(own);
            if parsed.is_none()
                && let Some(mut parts) = joined_parts(own)
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
                    start: at,
                    parsed: P::parse(&first),
                    text: Cow::Owned(first),
                    removed: false,
                    split_off: parts,
                };
            }
            Line {
                start: at,
                parsed,
                text: Cow::Borrowed(own),
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
fn assemble<P>(lines: Vec<Line<P>>, inserts: &[(usize, String)], mut changes: Vec<Change>) -> Plan {
    let mut pieces: Vec<Piece> = Vec::with_capacity(lines.len() + inserts.len());
    for (k, line) in lines.into_iter().enumerate() {
        if !line.removed {
            pieces.push(match line.text {
                Cow::Borrowed(own) => Piece::Kept(line.start..line.start + own.len()),
                Cow::Owned(text) => Piece::Written(text),
            });
        }
        pieces.extend(line.split_off.into_iter().map(Piece::Written));
        for (_, record) in inserts.iter().filter(|(at, _)| *at == k + 1) {
            pieces.push(Piece::Written(record.clone()));
        }
    }
    changes.sort_by_key(|c| c.line);
    Plan { pieces, changes }
}

struct Line<'a, P = Value> {
    /// Where the line starts in the text it was read from.
    start: usize,
    /// Its text: that slice, until a change writes it anew.
    text: Cow<'a, str>,
    /// Its JSON, as much as the repair decides by ([`Parsed`]).
    parsed: Option<P>,
    /// Left out of the repaired file.
    removed: bool,
    /// The records that followed the first on a joined line (`{…}{…}`, a
    /// write that lost its newline), each written on a line of its own.
    split_off: Vec<String>,
}

impl<P: Parsed> Line<'_, P> {
    /// Changes the line's JSON as `edit` does, on the whole value parsed
    /// again from its text (`parsed` holds only what the repair decides
    /// by). `edit` says whether it changed anything; when it did, the text
    /// is written over (values it did not change keep their text) and
    /// parsed again.
    fn edit(&mut self, edit: impl FnOnce(&mut Value) -> bool) -> bool {
        let Ok(mut whole) = loopdbg_read::bounded::value(&self.text) else {
            return false;
        };
        if !edit(&mut whole) {
            return false;
        }
        self.text = Cow::Owned(rewrite(&self.text, &whole));
        self.parsed = P::parse(&self.text);
        true
    }
}

/// The result event for call `id` made by the event on `line`, and the
/// line it goes after: the last event of the same reply (parallel calls
/// are written one event each, sharing `message.id`), as Claude Code
/// writes its results after them.
fn result_event(lines: &[Line<Event>], line: usize, id: &str) -> (usize, Value) {
    // Whole: the event copies members of its call no `Event` keeps.
    let call = lines
        .get(line - 1)
        .and_then(|l| serde_json::from_str::<Value>(&l.text).ok())
        .unwrap_or(Value::Null);
    let message_id = call["message"]["id"].as_str();
    let mut at = line;
    for (k, other) in lines.iter().enumerate().skip(line) {
        let Some(e) = other.parsed.as_ref() else {
            continue;
        };
        match e.kind.as_deref() {
            Some("assistant") if e.message_id.as_deref() == message_id => at = k + 1,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A log with one result dropped, as `check` reports it.
    fn dropped_result() -> (String, Vec<Finding>) {
        let head = r#""sessionId":"s","cwd":"/w","version":"2.0.76""#;
        let text = [
            format!(r#"{{"type":"user","uuid":"u1","parentUuid":null,{head},"message":{{"role":"user","content":"list files"}}}}"#),
            format!(r#"{{"type":"assistant","uuid":"a1","parentUuid":"u1",{head},"message":{{"id":"m1","role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"ls","input":{{}}}}]}}}}"#),
            format!(r#"{{"type":"assistant","uuid":"a2","parentUuid":"r1",{head},"message":{{"id":"m2","role":"assistant","content":[{{"type":"text","text":"done"}}]}}}}"#),
        ]
        .join("\n")
            + "\n";
        let finding = Finding {
            kind: Kind::UnansweredCall,
            path: "messages[1].content[0]".into(),
            line: Some(2),
            uuid: Some("a1".into()),
            ids: vec!["toolu_1".into()],
            message: "toolu_1 has no result".into(),
            severity: crate::check::Severity::Rejected,
            evidence: None,
        };
        (text, vec![finding])
    }

    /// The repaired file keeps every line no change names as a range of
    /// the original (never copied), and writes only what changed.
    #[test]
    fn kept_lines_are_not_copied() {
        let (text, findings) = dropped_result();
        let plan = claude_code(&text, &findings).unwrap();
        let written: Vec<&Piece> = plan
            .pieces
            .iter()
            .filter(|p| matches!(p, Piece::Written(_)))
            .collect();
        // The result event added, and the reply re-parented to it.
        assert_eq!(written.len(), 2, "{:?}", plan.pieces);
        let lines: Vec<&str> = plan.lines(&text).collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], text.lines().next().unwrap());
        assert_eq!(lines[1], text.lines().nth(1).unwrap());
        assert!(
            lines[2].contains(r#""tool_use_id":"toolu_1""#),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains(r#""parentUuid":""#) && !lines[3].contains("r1"));
    }
}
