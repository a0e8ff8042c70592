//! The scripted stub model: for each request, the first rule of the chosen
//! behaviour whose `when` holds gives the reply.
//!
//! Conditions are read from a [`CallIndex`], which the engine keeps up to
//! date as messages are appended, so a reply costs O(conditions), not a
//! scan of the whole history.

use std::collections::{BTreeMap, HashMap};

use crate::engine::message::{Block, Message};
use crate::engine::session::{Reply, Rule, Text, When};

/// Incremental pairing facts about a growing history: which ids are
/// answered, and per tool name how many calls are answered or not.
#[derive(Debug, Default, Clone)]
pub struct CallIndex {
    /// id → (tool name, answered, order of first call)
    ids: HashMap<Text, (Text, bool, usize)>,
    /// Unanswered ids by order of first call.
    unanswered: BTreeMap<usize, Text>,
    unanswered_by_tool: HashMap<Text, usize>,
    answered_by_tool: HashMap<Text, usize>,
}

impl CallIndex {
    /// Records a message appended to the history.
    pub fn push(&mut self, message: &Message) {
        for block in &message.content {
            match block {
                Block::ToolUse { id, name, .. } => {
                    if !self.ids.contains_key(id) {
                        let order = self.ids.len();
                        self.ids.insert(id.clone(), (name.clone(), false, order));
                        self.unanswered.insert(order, id.clone());
                        *self.unanswered_by_tool.entry(name.clone()).or_default() += 1;
                    }
                }
                Block::ToolResult { tool_use_id, .. } => {
                    if let Some((name, answered, order)) = self.ids.get_mut(tool_use_id)
                        && !*answered
                    {
                        *answered = true;
                        self.unanswered.remove(order);
                        if let Some(n) = self.unanswered_by_tool.get_mut(name) {
                            *n -= 1;
                        }
                        *self.answered_by_tool.entry(name.clone()).or_default() += 1;
                    }
                }
                Block::Text { .. } => {}
            }
        }
    }

    /// Ids called and not answered, in order of first call.
    pub fn unanswered(&self) -> impl Iterator<Item = &str> {
        self.unanswered.values().map(|id| &**id)
    }

    /// True when some call of `tool` has no result.
    pub fn has_missing(&self, tool: &str) -> bool {
        self.unanswered_by_tool.get(tool).copied().unwrap_or(0) > 0
    }

    /// True when some call of `tool` has a result.
    pub fn has_answered(&self, tool: &str) -> bool {
        self.answered_by_tool.get(tool).copied().unwrap_or(0) > 0
    }

    /// How many called ids have no result.
    pub fn unanswered_len(&self) -> usize {
        self.unanswered.len()
    }

    /// True when `id` was called and has no result.
    pub fn is_unanswered(&self, id: &str) -> bool {
        self.ids.get(id).is_some_and(|(_, a, _)| !*a)
    }

    /// True when `id` has a result.
    pub fn is_answered(&self, id: &str) -> bool {
        self.ids.get(id).is_some_and(|(_, a, _)| *a)
    }
}

/// True when every condition of `when` holds for this request.
pub fn matches(when: &When, round: u32, calls: &CallIndex) -> bool {
    when.round.is_none_or(|r| r == round)
        && when.missing.iter().all(|t| calls.has_missing(t))
        && when.answered.iter().all(|t| calls.has_answered(t))
}

/// The first rule that replies to request number `round`, with its index.
pub fn reply_for<'r>(
    rules: &'r [Rule],
    round: u32,
    calls: &CallIndex,
) -> Option<(usize, &'r Reply)> {
    rules
        .iter()
        .enumerate()
        .find(|(_, r)| matches(&r.when, round, calls))
        .map(|(i, r)| (i, &r.reply))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::session::ToolCall;
    use serde_json::json;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            args: json!({}).into(),
            arguments: None,
        }
    }

    #[test]
    fn conditions_follow_appended_messages() {
        let mut idx = CallIndex::default();
        idx.push(&Message::assistant(&Reply {
            text: None,
            tool_calls: vec![call("a", "w"), call("b", "f")],
            finish_reason: None,
        }));
        assert!(idx.has_missing("w") && idx.has_missing("f"));
        idx.push(&Message::tool_result("a".into(), json!(1).into(), false));
        assert!(idx.has_answered("w") && !idx.has_missing("w"));
        assert_eq!(idx.unanswered().collect::<Vec<_>>(), vec!["b"]);
        let when = When {
            round: Some(2),
            missing: vec!["f".into()],
            answered: vec!["w".into()],
        };
        assert!(matches(&when, 2, &idx));
        assert!(!matches(&when, 3, &idx));
    }

    #[test]
    fn a_repeated_id_is_counted_once() {
        let mut idx = CallIndex::default();
        let plan = Message::assistant(&Reply {
            text: None,
            tool_calls: vec![call("a", "w")],
            finish_reason: None,
        });
        idx.push(&plan);
        idx.push(&Message::tool_result("a".into(), json!(1).into(), false));
        idx.push(&plan);
        assert!(!idx.has_missing("w"));
        assert!(idx.is_answered("a"));
    }
}
