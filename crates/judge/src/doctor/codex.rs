//! Codex rollouts. Before every request Codex gives each call that has no
//! output an output of its own, `"aborted"`, placed right after the call,
//! and drops each output whose call is gone. The doctor writes those
//! records into the rollout, so the file says what Codex sends.

use serde_json::{Value, json};

use super::{Change, Plan, assemble, read_lines};
use crate::check::Finding;
use loopdbg_read::finding::Kind;

/// The output Codex fills in for a call that has none.
pub use loopdbg_read::CODEX_ABORTED as ABORTED;

/// Item types that are calls Codex answers with an output item.
const CALLS: [&str; 3] = ["function_call", "custom_tool_call", "local_shell_call"];

/// The repair of a Codex rollout `text` for `findings`: every unanswered
/// call gets the `aborted` output record Codex itself would send, and an
/// output whose call is gone is dropped, as Codex drops it.
pub fn codex(text: &str, findings: &[Finding]) -> Result<Plan, String> {
    let (mut lines, mut changes) = read_lines::<Value>(text);
    let item_of = |v: &Value| -> Option<Value> {
        match v.get("payload") {
            Some(p) if v["type"] == "response_item" => Some(p.clone()),
            Some(_) => None,
            None => Some(v.clone()),
        }
    };
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for finding in findings {
        match finding.kind {
            Kind::UnansweredCall => {}
            Kind::UnexpectedResult => {
                for id in &finding.ids {
                    for (k, line) in lines.iter_mut().enumerate() {
                        let Some(item) = line.parsed.as_ref().and_then(item_of) else {
                            continue;
                        };
                        let is_output = item["type"]
                            .as_str()
                            .is_some_and(|t| t.ends_with("_output"));
                        if is_output && item["call_id"] == id.as_str() {
                            line.removed = true;
                            changes.push(Change {
                                line: k + 1,
                                what: format!(
                                    "drop the output for {id}: its call is not in the history (Codex drops it too)"
                                ),
                            });
                        }
                    }
                }
                continue;
            }
            _ => continue,
        }
        for id in &finding.ids {
            let found = lines.iter().enumerate().rev().find_map(|(k, line)| {
                let record = line.parsed.as_ref()?;
                let item = item_of(record)?;
                let is_call = item["type"].as_str().is_some_and(|t| CALLS.contains(&t));
                (is_call && item["call_id"] == id.as_str()).then(|| (k, record.clone(), item))
            });
            let Some((k, record, item)) = found else {
                return Err(format!(
                    "the call {id} is not a record of its own (it is inside a compacted history); Codex answers it with `aborted` itself"
                ));
            };
            let output_type = match item["type"].as_str() {
                Some("custom_tool_call") => "custom_tool_call_output",
                _ => "function_call_output",
            };
            let output = json!({"type": output_type, "call_id": id, "output": ABORTED});
            let new = match record.get("payload") {
                Some(_) => {
                    json!({"timestamp": record["timestamp"], "type": "response_item", "payload": output})
                }
                None => output,
            };
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "add the `{ABORTED}` {output_type} Codex itself sends for {id}, after line {}",
                    k + 1
                ),
            });
            inserts.push((k + 1, new.to_string()));
        }
    }
    Ok(assemble(lines, &inserts, changes))
}
