//! Cline's task history as Cline sends it.
//!
//! Cline keeps each task's history in `tasks/<id>/api_conversation_history.json`,
//! an Anthropic `MessageParam[]` (read by [`crate::anthropic`]). Since native
//! tool calling (cline/cline #6921, 2025-10-28) the stored history often
//! holds a `tool_use` whose output was written as user text
//! (`[read_file for 'src/x.ts'] Result: …`) with no `tool_result` at all,
//! and before *every* request Cline rebuilds the next user message:
//! `ContextManager.ensureToolResultsFollowToolUse`
//! (src/core/context/context-management/ContextManager.ts) puts each call's
//! result first, in the calls' order, gives a call without one
//! `{"type": "tool_result", "content": "result missing"}`, keeps one result
//! per id (the last), and drops a result for a call the turn did not make,
//! whenever anything had to change. The SDK build that replaced it in
//! June 2026 (`sanitizeInitialMessagesForSessionStart`,
//! apps/vscode/src/sdk/initial-message-sanitizer.ts) does the same when a
//! task is resumed. So the provider never sees those calls open: what the
//! history stores is not what is sent, and judging the store as sent
//! would predict hundreds of 400s that never came.

use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::Json;
use serde_json::Value;

use crate::conversation::{Conversation, Rewrite};
use crate::finding::Kind;

/// What Cline sends for a call its history left without a result.
pub const RESULT_MISSING: &str = "result missing";

/// Applies `ensureToolResultsFollowToolUse` to `conv` (the stored history,
/// read) and records what it changed as [`Rewrite`]s.
pub(crate) fn ensure_results_follow_calls(conv: &mut Conversation) {
    for i in 0..conv.messages.len().saturating_sub(1) {
        if conv.messages[i].role != Role::Assistant || conv.messages[i + 1].role != Role::User {
            continue;
        }
        let calls: Vec<String> = crate::tool_uses(&conv.messages[i])
            .map(|(_, id, _)| id.to_string())
            .collect();
        if calls.is_empty() {
            continue;
        }
        rebuild_answer(conv, i + 1, &calls);
    }
}

/// Rebuilds user message `at` after a turn that made `calls`, as Cline
/// does, when it is not already results-first in order.
fn rebuild_answer(conv: &mut Conversation, at: usize, calls: &[String]) {
    let message = &conv.messages[at];
    let results: Vec<(usize, String)> = crate::tool_results(message)
        .map(|(block, id)| (block, id.to_string()))
        .collect();
    // Already results-first, one per call, in the calls' order: sent as is.
    let in_order = results.len() == calls.len()
        && results
            .iter()
            .enumerate()
            .all(|(k, (block, id))| *block == k && *id == calls[k]);
    if in_order {
        return;
    }
    let mut by_id: Vec<Option<usize>> = vec![None; calls.len()];
    let mut dropped = Vec::new();
    for (block, id) in &results {
        let block = *block;
        match calls.iter().position(|c| c == id) {
            // A Map keyed by id: the last result for an id is the one sent.
            Some(k) => {
                if let Some(earlier) = by_id[k].replace(block) {
                    dropped.push(earlier);
                }
            }
            None => dropped.push(block),
        }
    }
    let missing: Vec<String> = calls
        .iter()
        .zip(&by_id)
        .filter(|(_, b)| b.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    let dropped_ids: Vec<String> = dropped
        .iter()
        .filter_map(|&b| {
            results
                .iter()
                .find(|(k, _)| *k == b)
                .map(|(_, id)| id.clone())
        })
        .collect();
    let told = told_in_text(message);
    let source = conv.message_sources[at].clone();
    // Moved, not copied: a long task rebuilds most of its messages.
    let mut old_blocks: Vec<Option<Block>> = std::mem::take(&mut conv.messages[at].content)
        .into_iter()
        .map(Some)
        .collect();
    let mut old_sources: Vec<Option<crate::BlockSource>> =
        std::mem::take(&mut conv.block_sources[at])
            .into_iter()
            .map(Some)
            .collect();
    let mut blocks = Vec::with_capacity(old_blocks.len() + missing.len());
    let mut sources = Vec::with_capacity(blocks.capacity());
    for (k, id) in calls.iter().enumerate() {
        match by_id[k] {
            Some(b) => {
                blocks.extend(old_blocks[b].take());
                sources.extend(old_sources[b].take());
            }
            None => {
                blocks.push(Block::ToolResult {
                    tool_use_id: id.as_str().into(),
                    content: Json::new(Value::String(RESULT_MISSING.to_string())),
                    is_error: false,
                });
                sources.push(source.clone());
            }
        }
    }
    for (block, source) in old_blocks.into_iter().zip(old_sources) {
        if let (Some(block), Some(source)) = (block, source)
            && !matches!(block, Block::ToolResult { .. })
        {
            blocks.push(block);
            sources.push(source);
        }
    }
    conv.messages[at] = Message {
        role: Role::User,
        content: blocks,
        finish_reason: None,
    };
    conv.block_sources[at] = sources;
    if !missing.is_empty() {
        let (cost, harmless) = match told {
            true => (
                "the tool's output reaches the model as the text after it",
                true,
            ),
            false => ("the model gets no real result for them", false),
        };
        conv.rewrites.push(Rewrite {
            kind: Kind::UnansweredCall,
            source: source.clone(),
            ids: missing.clone(),
            message: format!(
                "no tool_result answers {} in the task's history; Cline sends {RESULT_MISSING:?} as each one's result before every request (`ensureToolResultsFollowToolUse`), so the provider never sees them open, and {cost}",
                missing.join(", ")
            ),
            harmless,
        });
    }
    if missing.is_empty() && dropped_ids.is_empty() {
        conv.rewrites.push(Rewrite {
            kind: Kind::ResultsNotFirst,
            source: source.clone(),
            ids: calls.to_vec(),
            message: "the results of these calls do not open the next user message in the calls' order in the task's history; Cline moves them there before every request (`ensureToolResultsFollowToolUse`)".to_string(),
            harmless: true,
        });
    }
    if !dropped_ids.is_empty() {
        conv.rewrites.push(Rewrite {
            kind: Kind::UnexpectedResult,
            source,
            ids: dropped_ids.clone(),
            message: format!(
                "the task's history holds results the turn before does not call for, or a second result for one call ({}); Cline drops them before every request (`ensureToolResultsFollowToolUse`), so the provider never sees them",
                dropped_ids.join(", ")
            ),
            harmless: true,
        });
    }
}

/// Whether a user message carries tool output as Cline writes it in text
/// (`[read_file for 'x'] Result:`, `[execute_command for '…'] Result:`).
fn told_in_text(message: &Message) -> bool {
    message.content.iter().any(|b| match b {
        Block::Text { text } => text.contains("] Result:"),
        _ => false,
    })
}

/// Whether a bare history array is a Cline (or Roo / Kilo) task's, when it
/// carries none of the store's own fields (an export, or a history Cline
/// wrote without `ts`): its user messages hold what only those extensions
/// write, the `<environment_details>` block or a tool's output as text.
pub(crate) fn looks_like_task(texts: impl Iterator<Item = String>) -> bool {
    texts
        .into_iter()
        .any(|t| t.contains("<environment_details>") || t.contains("] Result:"))
}
