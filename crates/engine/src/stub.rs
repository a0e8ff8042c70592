//! The scripted stub model: for each request, the first rule of the chosen
//! behavior whose `when` holds gives the reply.
//!
//! Conditions are read from a [`CallIndex`], which the engine keeps up to
//! date as messages are appended, so a reply costs O(conditions), not a
//! scan of the whole history.

use ahash::AHashMap as HashMap;

use crate::message::{Block, Message, Role};
use crate::message::{Reply, Text};
use crate::session::{Rule, When};

/// Incremental pairing facts about a growing history, per call: every
/// tool_use block is its own call, answered only by a result in the tool
/// messages right after its turn (as providers pair them), so a stub that
/// reuses an id every round leaves each old call unanswered.
#[derive(Debug, Default, Clone)]
pub struct CallIndex {
    /// Every call in order: id, tool name, answered.
    calls: Vec<(Text, Text, bool)>,
    /// Where the calls of the latest assistant message (the open turn) start.
    open: usize,
    unanswered: usize,
    unanswered_by_tool: HashMap<Text, usize>,
    answered_by_tool: HashMap<Text, usize>,
}

impl CallIndex {
    /// Records a message appended to the history.
    pub fn push(&mut self, message: &Message) {
        if message.role == Role::Assistant {
            // A new turn: results can no longer answer the calls before it.
            self.open = self.calls.len();
        }
        for block in &message.content {
            match block {
                Block::ToolUse { id, name, .. } => {
                    self.calls.push((id.clone(), name.clone(), false));
                    self.unanswered += 1;
                    *self.unanswered_by_tool.entry(name.clone()).or_default() += 1;
                }
                Block::ToolResult { tool_use_id, .. } => {
                    let open = &mut self.calls[self.open..];
                    if let Some((_, name, answered)) = open
                        .iter_mut()
                        .find(|(id, _, answered)| !*answered && **id == **tool_use_id)
                    {
                        *answered = true;
                        self.unanswered -= 1;
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

    /// The ids of the calls without a result, one per call, in call order.
    pub fn unanswered(&self) -> impl Iterator<Item = &str> {
        self.calls
            .iter()
            .filter(|(_, _, answered)| !answered)
            .map(|(id, _, _)| &**id)
    }

    /// True when some call of `tool` has no result.
    pub fn has_missing(&self, tool: &str) -> bool {
        self.unanswered_by_tool.get(tool).copied().unwrap_or(0) > 0
    }

    /// True when some call of `tool` has a result.
    pub fn has_answered(&self, tool: &str) -> bool {
        self.answered_by_tool.get(tool).copied().unwrap_or(0) > 0
    }

    /// How many calls have no result.
    pub fn unanswered_len(&self) -> usize {
        self.unanswered
    }

    /// Sets how many calls have no result, for an index that holds only
    /// the latest turn of a longer history
    /// ([`crate::agent_loop::count_unpaired_from`]).
    pub(crate) fn set_unanswered(&mut self, unanswered: usize) {
        self.unanswered = unanswered;
    }

    /// How many calls of the open turn have no result and an id in
    /// `in_flight` (the loop is still handling them).
    pub fn open_unanswered_in(&self, in_flight: &ahash::AHashSet<&str>) -> usize {
        self.calls[self.open..]
            .iter()
            .filter(|(id, _, answered)| !answered && in_flight.contains(&**id))
            .count()
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
    use crate::message::ToolCall;
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
            ..Reply::default()
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
    fn a_reused_id_is_a_new_call() {
        let mut idx = CallIndex::default();
        let plan = Message::assistant(&Reply {
            text: None,
            tool_calls: vec![call("a", "w")],
            ..Reply::default()
        });
        idx.push(&plan);
        idx.push(&Message::tool_result("a".into(), json!(1).into(), false));
        assert!(!idx.has_missing("w"));
        // The same id in a later turn is another call, not yet answered.
        idx.push(&plan);
        assert!(idx.has_missing("w") && idx.has_answered("w"));
        assert_eq!(idx.unanswered().collect::<Vec<_>>(), ["a"]);
        // A result answers only the turn right before it.
        idx.push(&Message::tool_result("a".into(), json!(2).into(), false));
        assert!(!idx.has_missing("w"));
        assert_eq!(idx.unanswered_len(), 0);
    }
}
