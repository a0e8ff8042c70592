//! Repairing captured conversations in their own format: `synthesize` adds
//! a placeholder error result for each unanswered call (as Claude Code does
//! on interrupt); `strip` removes the dangling calls and the results that
//! answer nothing. Edits the provider JSON in place so every field loopdbg
//! does not model (images, metadata) survives.

use std::collections::HashSet;

use loopdbg_read::responses::{CALLS, answered_id, is_call, is_output};
use serde_json::{Value, json};

use loopdbg_formats::provider::Format;

/// The text of a synthesized result.
pub const PLACEHOLDER: &str = "[loopdbg] no result was recorded for this call (the loop was interrupted or the result was lost); this placeholder closes the call so the conversation can continue";

/// How to repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// Add placeholder error results.
    Synthesize,
    /// Remove dangling calls and orphan results.
    Strip,
}

impl std::str::FromStr for Repair {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "synthesize" => Ok(Repair::Synthesize),
            "strip" => Ok(Repair::Strip),
            _ => Err(format!(
                "unknown repair `{s}` (expected synthesize or strip)"
            )),
        }
    }
}

/// Repairs `doc` (a request body or bare array) in place; returns how many
/// calls or results were added or removed.
pub fn repair(doc: &mut Value, format: Format, how: Repair) -> usize {
    let key = match format {
        Format::Responses => "input",
        Format::Gemini => "contents",
        _ => "messages",
    };
    let continues = ["previous_response_id", "conversation"]
        .iter()
        .any(|k| doc.get(*k).is_some_and(|v| !v.is_null()));
    let items = match doc {
        Value::Array(items) => items,
        Value::Object(o) => match o.get_mut(key) {
            Some(Value::Array(items)) => items,
            _ => return 0,
        },
        _ => return 0,
    };
    let paired = match (format, how) {
        (Format::Anthropic, Repair::Synthesize) => anthropic_synthesize(items),
        (Format::Anthropic, Repair::Strip) => anthropic_strip(items),
        (Format::Openai, Repair::Synthesize) => openai_synthesize(items),
        (Format::Openai, Repair::Strip) => openai_strip(items),
        (Format::Responses, Repair::Synthesize) => responses_synthesize(items),
        (Format::Responses, Repair::Strip) => responses_strip(items, continues),
        (Format::Gemini, Repair::Synthesize) => gemini_synthesize(items),
        (Format::Gemini, Repair::Strip) => gemini_strip(items),
        (Format::Bedrock, Repair::Synthesize) => bedrock_synthesize(items),
        (Format::Bedrock, Repair::Strip) => bedrock_strip(items),
    };
    paired + fill_blanks(items, format)
}

/// The text a message left with nothing to say is given.
pub const EMPTY_PLACEHOLDER: &str = "[loopdbg] (this message was empty)";

/// Anthropic and Bedrock refuse a text block that is empty or only
/// whitespace, and a message with no content (Anthropic excepts the final
/// assistant message, a prefill). A blank block says nothing, so it goes;
/// a message left with nothing gets [`EMPTY_PLACEHOLDER`] rather than
/// going too, since dropping it would join its two neighbours into one
/// role's run, which Bedrock refuses. Returns how many blocks and messages
/// were changed.
fn fill_blanks(items: &mut [Value], format: Format) -> usize {
    let text_of = |b: &Value| -> Option<String> {
        match format {
            Format::Anthropic => (b.get("type")?.as_str()? == "text")
                .then(|| b.get("text")?.as_str().map(str::to_string))?,
            Format::Bedrock if b.as_object()?.len() == 1 => {
                b.get("text")?.as_str().map(str::to_string)
            }
            _ => None,
        }
    };
    if !matches!(format, Format::Anthropic | Format::Bedrock) {
        return 0;
    }
    let last = items.len().saturating_sub(1);
    let mut fixed = 0;
    for (i, message) in items.iter_mut().enumerate() {
        let prefill = format == Format::Anthropic && i == last && role(message) == "assistant";
        let Some(content) = message.get_mut("content") else {
            continue;
        };
        if let Value::String(s) = content {
            if s.trim().is_empty() && !prefill {
                *s = EMPTY_PLACEHOLDER.to_string();
                fixed += 1;
            }
            continue;
        }
        let Value::Array(blocks) = content else {
            continue;
        };
        let before = blocks.len();
        blocks.retain(|b| text_of(b).is_none_or(|t| !t.trim().is_empty()));
        fixed += before - blocks.len();
        if blocks.is_empty() && !prefill {
            blocks.push(match format {
                Format::Bedrock => json!({"text": EMPTY_PLACEHOLDER}),
                _ => json!({"type": "text", "text": EMPTY_PLACEHOLDER}),
            });
            fixed += 1;
        }
    }
    fixed
}

/// The `toolUseId`s of a Converse message's `kind` blocks (`toolUse` or
/// `toolResult`).
fn bedrock_ids(v: &Value, kind: &str) -> Vec<String> {
    v.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get(kind)?.get("toolUseId")?.as_str().map(str::to_string))
        .collect()
}

/// Bedrock: each turn of `toolUse` blocks gets a `toolResult` (status
/// `error`, the placeholder as text) for every call the next user turn
/// does not answer, ahead of that turn's other blocks.
fn bedrock_synthesize(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut i = 0;
    while i < items.len() {
        let calls = bedrock_ids(&items[i], "toolUse");
        if role(&items[i]) != "assistant" || calls.is_empty() {
            i += 1;
            continue;
        }
        if items.get(i + 1).is_none_or(|n| role(n) != "user") {
            items.insert(i + 1, json!({"role": "user", "content": []}));
        }
        let answered = bedrock_ids(&items[i + 1], "toolResult");
        let missing: Vec<Value> = calls
            .iter()
            .filter(|id| !answered.contains(id))
            .map(|id| {
                json!({"toolResult": {
                    "toolUseId": id,
                    "content": [{"text": PLACEHOLDER}],
                    "status": "error",
                }})
            })
            .collect();
        fixed += missing.len();
        let next = content_array(&mut items[i + 1]);
        let at = next
            .iter()
            .take_while(|b| b.get("toolResult").is_some())
            .count();
        next.splice(at..at, missing);
        i += 1;
    }
    fixed
}

/// Bedrock: calls the next turn does not answer and results that answer
/// no call of the turn before are removed; a message this empties goes too
/// (one written empty is left to [`fill_blanks`]: dropping it would join
/// its neighbours, which Bedrock refuses).
fn bedrock_strip(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut emptied = vec![false; items.len()];
    let mut previous_calls: Vec<String> = Vec::new();
    for i in 0..items.len() {
        let (kind, keep): (&str, Vec<String>) = if role(&items[i]) == "assistant" {
            let answered = items
                .get(i + 1)
                .filter(|n| role(n) == "user")
                .map(|n| bedrock_ids(n, "toolResult"))
                .unwrap_or_default();
            ("toolUse", answered)
        } else {
            ("toolResult", std::mem::take(&mut previous_calls))
        };
        if let Some(Value::Array(blocks)) = items[i].get_mut("content") {
            let before = blocks.len();
            blocks.retain(|b| {
                b.get(kind).is_none_or(|x| {
                    x.get("toolUseId")
                        .and_then(Value::as_str)
                        .is_some_and(|id| keep.iter().any(|k| k == id))
                })
            });
            fixed += before - blocks.len();
            emptied[i] = before > 0 && blocks.is_empty();
        }
        if kind == "toolUse" {
            previous_calls = bedrock_ids(&items[i], "toolUse");
        }
    }
    let mut emptied = emptied.into_iter();
    items.retain(|_| !emptied.next().unwrap_or(false));
    fixed
}

fn role(v: &Value) -> &str {
    v.get("role").and_then(Value::as_str).unwrap_or("")
}

fn blocks_of_type<'a>(
    v: &'a Value,
    kind: &'a str,
    id_key: &'a str,
) -> impl Iterator<Item = String> + 'a {
    v.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |b| b.get("type").and_then(Value::as_str) == Some(kind))
        .filter_map(move |b| b.get(id_key).and_then(Value::as_str).map(str::to_string))
}

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "made an array just above"
)]
fn content_array(message: &mut Value) -> &mut Vec<Value> {
    let content = message
        .as_object_mut()
        .expect("messages are objects")
        .entry("content")
        .or_insert(Value::Array(Vec::new()));
    if let Value::String(s) = content {
        let text = std::mem::take(s);
        *content = json!([{"type": "text", "text": text}]);
    }
    if !content.is_array() {
        *content = Value::Array(Vec::new());
    }
    content.as_array_mut().expect("made an array")
}

fn anthropic_synthesize(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut i = 0;
    while i < items.len() {
        if role(&items[i]) != "assistant" {
            i += 1;
            continue;
        }
        let calls: Vec<String> = blocks_of_type(&items[i], "tool_use", "id").collect();
        if calls.is_empty() {
            i += 1;
            continue;
        }
        if items.get(i + 1).is_none_or(|n| role(n) != "user") {
            items.insert(i + 1, json!({"role": "user", "content": []}));
        }
        let next = content_array(&mut items[i + 1]);
        let original_first = next.first().cloned();
        // Results for this turn first, in call order; then everything else.
        let (mut results, rest): (Vec<Value>, Vec<Value>) = next.drain(..).partition(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("tool_use_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| calls.iter().any(|c| c == id))
        });
        for id in &calls {
            if !results.iter().any(|r| r["tool_use_id"] == json!(id)) {
                results.push(json!({"type": "tool_result", "tool_use_id": id, "content": PLACEHOLDER, "is_error": true}));
                fixed += 1;
            }
        }
        results.sort_by_key(|r| calls.iter().position(|c| r["tool_use_id"] == json!(c)));
        // Results that came after other blocks are moved to the front.
        let opened_with_results = original_first
            .as_ref()
            .is_some_and(|f| f.get("type").and_then(Value::as_str) == Some("tool_result"));
        if !results.is_empty() && !rest.is_empty() && !opened_with_results {
            fixed += 1;
        }
        next.extend(results);
        next.extend(rest);
        i += 1;
    }
    fixed
}

fn anthropic_strip(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut previous_calls: HashSet<String> = HashSet::new();
    for i in 0..items.len() {
        if role(&items[i]) == "assistant" {
            let answered: HashSet<String> = items
                .get(i + 1)
                .filter(|n| role(n) == "user")
                .map(|n| blocks_of_type(n, "tool_result", "tool_use_id").collect())
                .unwrap_or_default();
            if let Some(Value::Array(blocks)) = items[i].get_mut("content") {
                let before = blocks.len();
                blocks.retain(|b| {
                    b.get("type").and_then(Value::as_str) != Some("tool_use")
                        || b.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| answered.contains(id))
                });
                fixed += before - blocks.len();
            }
            previous_calls = blocks_of_type(&items[i], "tool_use", "id").collect();
        } else {
            if let Some(Value::Array(blocks)) = items[i].get_mut("content") {
                let before = blocks.len();
                blocks.retain(|b| {
                    b.get("type").and_then(Value::as_str) != Some("tool_result")
                        || b.get("tool_use_id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| previous_calls.contains(id))
                });
                fixed += before - blocks.len();
            }
            previous_calls.clear();
        }
    }
    // A message left with no content is dropped.
    items.retain(|m| !matches!(m.get("content"), Some(Value::Array(a)) if a.is_empty()));
    // Results that follow text move to the front, where Anthropic wants them.
    for i in 1..items.len() {
        if role(&items[i - 1]) == "assistant"
            && role(&items[i]) == "user"
            && let Some(Value::Array(blocks)) = items[i].get_mut("content")
        {
            let is_result =
                |b: &Value| b.get("type").and_then(Value::as_str) == Some("tool_result");
            let leading = blocks.iter().take_while(|b| is_result(b)).count();
            if blocks.iter().filter(|b| is_result(b)).count() > leading {
                let (results, rest): (Vec<Value>, Vec<Value>) =
                    blocks.drain(..).partition(is_result);
                blocks.extend(results);
                blocks.extend(rest);
                fixed += 1;
            }
        }
    }
    fixed
}

fn call_ids(v: &Value) -> Vec<String> {
    v.get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The run of tool messages after the assistant message at `i`: where it
/// ends and which call ids it answers.
fn tool_run(items: &[Value], i: usize) -> (usize, HashSet<String>) {
    let mut end = i + 1;
    while end < items.len() && role(&items[end]) == "tool" {
        end += 1;
    }
    let answered = items[i + 1..end]
        .iter()
        .filter_map(|t| {
            t.get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    (end, answered)
}

/// The call ids of the message at `i` when it is an assistant message.
fn assistant_calls(items: &[Value], i: usize) -> Vec<String> {
    if role(&items[i]) == "assistant" {
        call_ids(&items[i])
    } else {
        Vec::new()
    }
}

fn openai_synthesize(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut i = 0;
    while i < items.len() {
        let calls = assistant_calls(items, i);
        if calls.is_empty() {
            i += 1;
            continue;
        }
        let (mut end, answered) = tool_run(items, i);
        for id in calls.iter().filter(|id| !answered.contains(*id)) {
            items.insert(
                end,
                json!({"role": "tool", "tool_call_id": id, "content": PLACEHOLDER}),
            );
            end += 1;
            fixed += 1;
        }
        i = end;
    }
    fixed
}

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the caller checked it is an object"
)]
fn openai_strip(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut keep = vec![true; items.len()];
    let mut i = 0;
    while i < items.len() {
        if role(&items[i]) == "tool" {
            // A tool message with no assistant turn before its run.
            keep[i] = false;
            fixed += 1;
            i += 1;
            continue;
        }
        let calls = assistant_calls(items, i);
        if calls.is_empty() {
            i += 1;
            continue;
        }
        let (end, answered) = tool_run(items, i);
        {
            for (k, t) in items[i + 1..end].iter().enumerate() {
                let id = t.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                if !calls.iter().any(|c| c == id) {
                    keep[i + 1 + k] = false;
                    fixed += 1;
                }
            }
            let msg = items[i].as_object_mut().expect("object");
            if let Some(Value::Array(tc)) = msg.get_mut("tool_calls") {
                let before = tc.len();
                tc.retain(|c| {
                    c.get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| answered.contains(id))
                });
                fixed += before - tc.len();
                if tc.is_empty() {
                    msg.remove("tool_calls");
                    if msg.get("content").is_none_or(Value::is_null) {
                        msg.insert("content".into(), json!(""));
                    }
                }
            }
        }
        i = end;
    }
    let mut k = 0;
    items.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    fixed
}

fn item_type(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("message")
}

fn call_id(v: &Value) -> Option<&str> {
    v.get("call_id").and_then(Value::as_str)
}

/// The output item type that answers a call item type.
fn output_for(call: &str) -> &'static str {
    CALLS
        .iter()
        .find(|(c, _)| *c == call)
        .map_or("function_call_output", |(_, o)| o)
}

fn responses_answered(items: &[Value]) -> HashSet<String> {
    items
        .iter()
        .filter(|v| is_output(item_type(v)))
        .filter_map(|v| answered_id(v).map(str::to_string))
        .collect()
}

fn responses_synthesize(items: &mut Vec<Value>) -> usize {
    let answered = responses_answered(items);
    let mut fixed = 0;
    let mut i = 0;
    while i < items.len() {
        if !is_call(item_type(&items[i])) {
            i += 1;
            continue;
        }
        // After the run of calls this one belongs to.
        let mut end = i;
        while end < items.len() && is_call(item_type(&items[end])) {
            end += 1;
        }
        let missing: Vec<(String, &'static str)> = items[i..end]
            .iter()
            .filter_map(|v| call_id(v).map(|id| (id.to_string(), output_for(item_type(v)))))
            .filter(|(id, _)| !answered.contains(id))
            .collect();
        for (id, output) in missing {
            items.insert(
                end,
                json!({"type": output, "call_id": id, "output": PLACEHOLDER}),
            );
            end += 1;
            fixed += 1;
        }
        i = end;
    }
    fixed
}

/// Removes calls without outputs and outputs without calls. A request that
/// continues a stored response keeps every output (its call may be stored),
/// and nothing is stripped if it would leave the input empty.
fn responses_strip(items: &mut Vec<Value>, continues: bool) -> usize {
    let answered = responses_answered(items);
    let mut called: HashSet<String> = HashSet::new();
    let keep: Vec<bool> = items
        .iter()
        .map(|v| {
            let kind = item_type(v);
            if is_call(kind) {
                let keep = call_id(v).is_some_and(|id| answered.contains(id));
                if let (true, Some(id)) = (keep, call_id(v)) {
                    called.insert(id.to_string());
                }
                keep
            } else if is_output(kind) {
                continues || answered_id(v).is_some_and(|id| called.contains(id))
            } else {
                true
            }
        })
        .collect();
    if !keep.iter().any(|k| *k) {
        return 0;
    }
    let before = items.len();
    let mut flags = keep.into_iter();
    items.retain(|_| flags.next().unwrap_or(true));
    before - items.len()
}

/// `(id, name)` of a Gemini content's `functionCall` or `functionResponse`
/// parts, with their part index.
fn gemini_parts(content: &Value, key: &str) -> Vec<(usize, Option<String>, String)> {
    content
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(k, p)| {
            let f = p.get(key)?;
            Some((
                k,
                f.get("id").and_then(Value::as_str).map(str::to_string),
                f.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ))
        })
        .collect()
}

/// For each call of `calls`, whether a response of `responses` answers it
/// (by id when both have one, else the first open call with that name),
/// and for each response whether it answers a call.
fn gemini_match(
    calls: &[(usize, Option<String>, String)],
    responses: &[(usize, Option<String>, String)],
) -> (Vec<bool>, Vec<bool>) {
    let mut answered = vec![false; calls.len()];
    let mut answers = vec![false; responses.len()];
    for (r, (_, rid, rname)) in responses.iter().enumerate() {
        let hit = calls.iter().enumerate().position(|(c, (_, cid, cname))| {
            !answered[c]
                && match (cid, rid) {
                    (Some(a), Some(b)) => a == b,
                    _ => cname == rname,
                }
        });
        if let Some(c) = hit {
            answered[c] = true;
            answers[r] = true;
        }
    }
    (answered, answers)
}

fn is_model(v: &Value) -> bool {
    v.get("role").and_then(Value::as_str) == Some("model")
}

fn gemini_synthesize(items: &mut Vec<Value>) -> usize {
    let mut fixed = 0;
    let mut i = 0;
    while i < items.len() {
        let calls = gemini_parts(&items[i], "functionCall");
        if !is_model(&items[i]) || calls.is_empty() {
            i += 1;
            continue;
        }
        let next_answers = items
            .get(i + 1)
            .filter(|n| !is_model(n) && !gemini_parts(n, "functionResponse").is_empty());
        let responses = next_answers.map_or_else(Vec::new, |n| gemini_parts(n, "functionResponse"));
        let next_answers = next_answers.is_some();
        let (answered, answers) = gemini_match(&calls, &responses);
        // A second response to a call that has one (a resumed Gemini CLI
        // session sends each call's `result` and its `_response` record):
        // a copy, dropped, or Gemini refuses the count whatever is added.
        let copies: Vec<usize> = responses
            .iter()
            .zip(&answers)
            .filter(|((_, rid, _), a)| {
                !**a && rid
                    .as_ref()
                    .is_some_and(|r| calls.iter().any(|(_, cid, _)| cid.as_ref() == Some(r)))
            })
            .map(|((k, _, _), _)| *k)
            .collect();
        if !copies.is_empty() {
            fixed += remove_parts(&mut items[i + 1], copies);
        }
        let missing: Vec<Value> = calls
            .iter()
            .zip(&answered)
            .filter(|(_, a)| !**a)
            .map(|((_, id, name), _)| {
                let mut f = json!({"name": name, "response": {"error": PLACEHOLDER}});
                if let Some(id) = id {
                    f["id"] = json!(id);
                }
                json!({"functionResponse": f})
            })
            .collect();
        fixed += missing.len();
        if missing.is_empty() {
            i += 1;
        } else if let Some(parts) = next_answers
            .then(|| items.get_mut(i + 1)?.get_mut("parts")?.as_array_mut())
            .flatten()
        {
            parts.extend(missing);
            i += 2;
        } else {
            items.insert(i + 1, json!({"role": "user", "parts": missing}));
            i += 2;
        }
    }
    fixed
}

fn gemini_strip(items: &mut Vec<Value>) -> usize {
    let mut removed = 0;
    let mut i = 0;
    while i < items.len() {
        let calls = gemini_parts(&items[i], "functionCall");
        if !is_model(&items[i]) || calls.is_empty() {
            // Responses that follow no call turn answer nothing.
            let stray = gemini_parts(&items[i], "functionResponse");
            let after_calls = i > 0
                && is_model(&items[i - 1])
                && !gemini_parts(&items[i - 1], "functionCall").is_empty();
            if !stray.is_empty() && !after_calls {
                removed += remove_parts(&mut items[i], stray.iter().map(|p| p.0).collect());
            }
            i += 1;
            continue;
        }
        let responses = match items.get(i + 1) {
            Some(n) if !is_model(n) => gemini_parts(n, "functionResponse"),
            _ => Vec::new(),
        };
        let (answered, answers) = gemini_match(&calls, &responses);
        let dangling: Vec<usize> = calls
            .iter()
            .zip(&answered)
            .filter(|(_, a)| !**a)
            .map(|(c, _)| c.0)
            .collect();
        let stray: Vec<usize> = responses
            .iter()
            .zip(&answers)
            .filter(|(_, a)| !**a)
            .map(|(r, _)| r.0)
            .collect();
        removed += remove_parts(&mut items[i], dangling);
        if !stray.is_empty() {
            removed += remove_parts(&mut items[i + 1], stray);
        }
        i += 1;
    }
    // A turn left with no parts is not a turn.
    items.retain(|c| {
        c.get("parts")
            .and_then(Value::as_array)
            .is_none_or(|p| !p.is_empty())
    });
    removed
}

fn remove_parts(content: &mut Value, mut at: Vec<usize>) -> usize {
    let Some(parts) = content.get_mut("parts").and_then(Value::as_array_mut) else {
        return 0;
    };
    at.sort_unstable();
    for k in at.iter().rev() {
        parts.remove(*k);
    }
    at.len()
}
