//! The pairing ledger: for a history (and the calls the loop is still
//! running), which tool_use ids are pending, paired or unpaired, which are
//! duplicated, and which results answer no call.
//!
//! The ledger is derived, never stored: [`Ledger::of`] reads a prefix of the
//! history, so stepping back in time just reads a shorter prefix.

use std::collections::HashMap;

use serde::Serialize;

use crate::engine::message::{Block, Message};
use crate::engine::session::Text;

/// Where a block sits: `messages[message].content[block]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Position {
    /// Index into the history.
    pub message: usize,
    /// Index into that message's content.
    pub block: usize,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "messages[{}].content[{}]", self.message, self.block)
    }
}

/// The state of one tool_use id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdState {
    /// Called, taken by the loop, result not appended yet.
    Pending,
    /// Has a result.
    Paired,
    /// Called, no result, and the loop is not running it: a request sent now
    /// would carry a tool_use without its tool_result.
    Unpaired,
}

impl IdState {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            IdState::Pending => "pending",
            IdState::Paired => "paired",
            IdState::Unpaired => "unpaired",
        }
    }
}

/// Everything the ledger knows about one id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdEntry {
    /// The call id.
    pub id: Text,
    /// The tool named by its first call.
    pub name: Text,
    /// The first tool_use block with this id.
    pub first_call: Position,
    /// How many tool_use blocks carry it (more than one: a duplicate id).
    pub calls: usize,
    /// The first tool_result answering it.
    pub first_result: Option<Position>,
    /// How many tool_results answer it.
    pub results: usize,
    /// Pending, paired or unpaired.
    pub state: IdState,
}

impl IdEntry {
    /// True when the id was used by more than one tool_use block.
    pub fn is_duplicate(&self) -> bool {
        self.calls > 1
    }
}

/// A tool_result whose id no earlier tool_use carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Orphan {
    /// The id it claims to answer.
    pub tool_use_id: Text,
    /// Where it sits.
    pub at: Position,
}

/// The pairing state of a history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ledger {
    /// One entry per distinct id, in order of first call.
    pub entries: Vec<IdEntry>,
    /// Results that answer no call.
    pub orphans: Vec<Orphan>,
}

/// Where every id is called and answered in a history, built once, so the
/// ledger of any prefix costs O(ids · log n) instead of a rescan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairingIndex {
    ids: Vec<IdRecord>,
    orphans: Vec<Orphan>,
    slots: HashMap<Text, usize>,
}

#[derive(Debug, Clone, PartialEq)]
struct IdRecord {
    id: Text,
    name: Text,
    calls: Vec<Position>,
    results: Vec<Position>,
}

impl PairingIndex {
    /// Indexes `history`.
    pub fn new(history: &[Message]) -> PairingIndex {
        let mut slot: HashMap<&str, usize> = HashMap::new();
        let mut index = PairingIndex::default();
        index.slots.reserve(history.len());
        for (m, msg) in history.iter().enumerate() {
            for (b, block) in msg.content.iter().enumerate() {
                let at = Position {
                    message: m,
                    block: b,
                };
                match block {
                    Block::ToolUse { id, name, .. } => {
                        let i = *slot.entry(id).or_insert_with(|| {
                            index.slots.insert(id.clone(), index.ids.len());
                            index.ids.push(IdRecord {
                                id: id.clone(),
                                name: name.clone(),
                                calls: Vec::new(),
                                results: Vec::new(),
                            });
                            index.ids.len() - 1
                        });
                        index.ids[i].calls.push(at);
                    }
                    // A result only pairs with a call made before it.
                    Block::ToolResult { tool_use_id, .. } => match slot.get(&**tool_use_id) {
                        Some(&i) => index.ids[i].results.push(at),
                        None => index.orphans.push(Orphan {
                            tool_use_id: tool_use_id.clone(),
                            at,
                        }),
                    },
                    Block::Text { .. } => {}
                }
            }
        }
        index
    }

    /// The state of one id in the first `len` messages (`None` before its
    /// first call), without building the whole ledger.
    pub fn state_of(&self, id: &str, len: usize, in_flight: &[&str]) -> Option<IdState> {
        let rec = &self.ids[*self.slots.get(id)?];
        let before = |p: &Position| p.message < len;
        if rec.calls.partition_point(before) == 0 {
            return None;
        }
        Some(if rec.results.partition_point(before) > 0 {
            IdState::Paired
        } else if in_flight.contains(&id) {
            IdState::Pending
        } else {
            IdState::Unpaired
        })
    }

    /// The ledger of the first `len` messages, with `in_flight` the ids the
    /// loop has taken and not yet answered.
    pub fn ledger(&self, len: usize, in_flight: &[&str]) -> Ledger {
        let before = |p: &Position| p.message < len;
        let mut ledger = Ledger::default();
        for rec in &self.ids {
            let calls = rec.calls.partition_point(before);
            if calls == 0 {
                // Ids are indexed in order of first call: the rest come later.
                break;
            }
            let results = rec.results.partition_point(before);
            let state = if results > 0 {
                IdState::Paired
            } else if in_flight.contains(&&*rec.id) {
                IdState::Pending
            } else {
                IdState::Unpaired
            };
            ledger.entries.push(IdEntry {
                id: rec.id.clone(),
                name: rec.name.clone(),
                first_call: rec.calls[0],
                calls,
                first_result: (results > 0).then(|| rec.results[0]),
                results,
                state,
            });
        }
        ledger.orphans = self
            .orphans
            .iter()
            .take_while(|o| before(&o.at))
            .cloned()
            .collect();
        ledger
    }
}

impl Ledger {
    /// The ledger of `history`, with `in_flight` the ids the loop has taken
    /// and not yet answered.
    pub fn of(history: &[Message], in_flight: &[&str]) -> Ledger {
        PairingIndex::new(history).ledger(history.len(), in_flight)
    }

    /// Ids in `state`, in order of first call.
    pub fn ids_in(&self, state: IdState) -> impl Iterator<Item = &IdEntry> {
        self.entries.iter().filter(move |e| e.state == state)
    }

    /// The unpaired ids, each once.
    pub fn unpaired(&self) -> Vec<String> {
        self.ids_in(IdState::Unpaired)
            .map(|e| e.id.to_string())
            .collect()
    }

    /// Ids carried by more than one tool_use block.
    pub fn duplicates(&self) -> impl Iterator<Item = &IdEntry> {
        self.entries.iter().filter(|e| e.is_duplicate())
    }

    /// Counts per state, for headers and summaries.
    pub fn counts(&self) -> LedgerCounts {
        let mut c = LedgerCounts::default();
        for e in &self.entries {
            match e.state {
                IdState::Pending => c.pending += 1,
                IdState::Paired => c.paired += 1,
                IdState::Unpaired => c.unpaired += 1,
            }
            if e.is_duplicate() {
                c.duplicate += 1;
            }
        }
        c.orphan = self.orphans.len();
        c
    }
}

/// How many ids are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LedgerCounts {
    /// Taken, not yet answered.
    pub pending: usize,
    /// Answered.
    pub paired: usize,
    /// Left without a result.
    pub unpaired: usize,
    /// Used by more than one tool_use.
    pub duplicate: usize,
    /// Results answering no call.
    pub orphan: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::session::{Reply, ToolCall};
    use serde_json::json;

    fn plan() -> Message {
        Message::assistant(&Reply {
            text: Some("两个一起查".into()),
            tool_calls: vec![
                ToolCall {
                    id: "w1".into(),
                    name: "get_weather".into(),
                    args: json!({}).into(),
                    arguments: None,
                },
                ToolCall {
                    id: "f1".into(),
                    name: "get_fx_rate".into(),
                    args: json!({}).into(),
                    arguments: None,
                },
            ],
            finish_reason: None,
        })
    }

    #[test]
    fn states_follow_the_history() {
        let history = vec![
            Message::user("q"),
            plan(),
            Message::tool_result("w1".into(), json!(1).into(), false),
        ];
        let l = Ledger::of(&history, &["f1"]);
        assert_eq!(l.entries[0].state, IdState::Paired);
        assert_eq!(l.entries[1].state, IdState::Pending);
        let l = Ledger::of(&history, &[]);
        assert_eq!(l.unpaired(), vec!["f1"]);
        assert_eq!(
            l.entries[0].first_result,
            Some(Position {
                message: 2,
                block: 0
            })
        );
    }

    #[test]
    fn prefixes_of_the_index_match_a_fresh_ledger() {
        let history = vec![
            Message::user("q"),
            plan(),
            Message::tool_result("w1".into(), json!(1).into(), false),
            plan(),
            Message::tool_result("f1".into(), json!(2).into(), false),
        ];
        let index = PairingIndex::new(&history);
        for len in 0..=history.len() {
            assert_eq!(
                index.ledger(len, &["f1"]),
                Ledger::of(&history[..len], &["f1"]),
                "prefix {len}"
            );
        }
    }

    #[test]
    fn duplicates_and_orphans_are_counted() {
        let history = vec![
            Message::tool_result("ghost".into(), json!(null).into(), true),
            plan(),
            plan(),
        ];
        let c = Ledger::of(&history, &[]).counts();
        assert_eq!(
            c,
            LedgerCounts {
                pending: 0,
                paired: 0,
                unpaired: 2,
                duplicate: 2,
                orphan: 1
            }
        );
    }
}
