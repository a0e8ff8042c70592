//! Kimi Code context files. Kimi Code appends a step's reply and its tool
//! results together once the tools end, but a process killed between the
//! two appends leaves the reply's calls without results, and a resume
//! sends the file as it stands (no pairing repair), which the provider
//! refuses. The doctor writes the missing `tool` messages right after the
//! reply (after its `_usage` record), each an error result, in the shape
//! kosong writes them.

use serde_json::{Value, json};

use super::{Change, Plan, assemble, read_lines};
use crate::check::Finding;
use crate::fix::PLACEHOLDER;
use loopdbg_read::finding::Kind;

/// The repair of a Kimi Code context file `text` for `findings`.
pub fn kimi_code(text: &str, findings: &[Finding]) -> Result<Plan, String> {
    let (lines, mut changes) = read_lines::<Value>(text);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for finding in findings.iter().filter(|f| f.kind == Kind::UnansweredCall) {
        for id in &finding.ids {
            let reply = lines.iter().rposition(|line| {
                line.parsed.as_ref().is_some_and(|v| {
                    v["role"] == "assistant"
                        && v["tool_calls"]
                            .as_array()
                            .is_some_and(|calls| calls.iter().any(|c| c["id"] == id.as_str()))
                })
            });
            let Some(k) = reply else {
                return Err(format!("the call {id} is not in a reply of the file"));
            };
            // After the reply's own `_usage` record, where the results go.
            let after = (k + 1..lines.len())
                .take_while(|&j| {
                    lines[j]
                        .parsed
                        .as_ref()
                        .is_some_and(|v| v["role"] == "_usage")
                })
                .last()
                .unwrap_or(k);
            let result = json!({
                "role": "tool",
                "content": [{"type": "text", "text": PLACEHOLDER}],
                "tool_call_id": id,
            });
            changes.push(Change {
                line: k + 1,
                what: format!(
                    "add an error result for the call {id} after line {}: Kimi Code was stopped before it wrote the call's result, and sends the file as it stands",
                    after + 1
                ),
            });
            inserts.push((after + 1, result.to_string()));
        }
    }
    Ok(assemble(lines, &inserts, changes))
}
