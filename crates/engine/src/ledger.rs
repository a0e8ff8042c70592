//! The pairing ledger: for a history (and the calls the loop is still
//! running), which tool_use ids are pending, paired or unpaired, which are
//! duplicated, and which results answer no call.
//!
//! The ledger is derived, never stored: [`Ledger::of`] reads a prefix of the
//! history, so stepping back in time just reads a shorter prefix.

use ahash::AHashMap as HashMap;

use serde::Serialize;

use crate::message::Text;
use crate::message::{Block, Message};

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

/// Everything the ledger knows about one call (one tool_use block).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdEntry {
    /// The call id.
    pub id: Text,
    /// The tool it calls.
    pub name: Text,
    /// Its tool_use block.
    pub first_call: Position,
    /// How many tool_use blocks carry this id so far (more than one: a
    /// duplicate or reused id).
    pub calls: usize,
    /// The tool_result answering it.
    pub first_result: Option<Position>,
    /// 1 when answered, else 0.
    pub results: usize,
    /// Pending, paired or unpaired.
    pub state: IdState,
    /// How many earlier calls carry the same id (0 for the first).
    pub repeat: usize,
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

/// `toolu_a, toolu_b ×3`: ids each once, with how many calls carry them.
pub fn counted_ids(ids: &[String]) -> String {
    // Linear however many distinct ids: a run may leave thousands.
    let mut seen: Vec<(&str, usize)> = Vec::new();
    let mut at: ahash::AHashMap<&str, usize> = ahash::AHashMap::with_capacity(ids.len().min(4096));
    for id in ids {
        match at.get(id.as_str()) {
            Some(&i) => seen[i].1 += 1,
            None => {
                at.insert(id, seen.len());
                seen.push((id, 1));
            }
        }
    }
    seen.iter()
        .map(|(id, n)| {
            if *n > 1 {
                format!("{id} ×{n}")
            } else {
                id.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every call of a history and the result that answers it, built once, so
/// the ledger of any prefix costs O(calls) instead of a rescan.
///
/// A call is one tool_use block. A result answers the first unanswered call
/// with its id in the assistant message right before it (as providers pair
/// them); anything else is an orphan. So an id reused in a later turn is a
/// new call, and an earlier call left without a result stays unpaired.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairingIndex {
    calls: Vec<CallRecord>,
    orphans: Vec<Orphan>,
    /// Message index of every assistant message, in order.
    assistants: Vec<usize>,
    /// Every answered call: its result's message and the call's index,
    /// in the order of the results (so by message).
    results: Vec<(usize, u32)>,
    /// The calls that reuse an id for the first time (their id's second
    /// call), by index: how many ids are duplicated in any prefix.
    second_calls: Vec<u32>,
    /// The last call with each id, by index: where the next call with it
    /// links, as the history grows ([`PairingIndex::regrow`]).
    last_of_id: HashMap<Text, u32>,
    /// The calls no result answers, by index: what the whole history
    /// leaves unpaired, read without every call's state
    /// ([`PairingIndex::unanswered`]).
    unanswered: std::collections::BTreeSet<u32>,
}

/// No call: the end of a chain of calls with one id.
const NO_CALL: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq)]
struct CallRecord {
    id: Text,
    name: Text,
    at: Position,
    result: Option<Position>,
    /// Earlier calls with the same id (0 for the first).
    earlier_same_id: usize,
    /// The first call with the same id (its index among the calls; its
    /// own for the first): what counts a reused id without hashing every
    /// id again for each step's ledger.
    first_same_id: usize,
    /// The next call with the same id ([`NO_CALL`]: none).
    next_same_id: u32,
}

impl PairingIndex {
    /// Indexes `history`.
    pub fn new(history: &[Message]) -> PairingIndex {
        let mut index = PairingIndex::default();
        index.push_from(history, 0);
        index
    }

    /// Brings the index up to `history` when only its messages from
    /// `from` on changed since it was made (a followed log grew): what was
    /// indexed of them is taken back, and they are indexed again. Costs
    /// what changed, not the history.
    pub fn regrow(&mut self, history: &[Message], from: usize) {
        self.truncate(from);
        self.push_from(history, from);
    }

    /// Forgets every message from `len` on.
    fn truncate(&mut self, len: usize) {
        let keep = self.calls.partition_point(|c| c.at.message < len);
        for k in (keep..self.calls.len()).rev() {
            let call = &self.calls[k];
            let id = call.id.clone();
            if call.earlier_same_id == 0 {
                self.last_of_id.remove(&id);
                continue;
            }
            // The call with its id before it: the chain is walked from the
            // id's first call (ids are seldom reused many times).
            let mut before = call.first_same_id;
            while self.calls[before].next_same_id as usize != k {
                before = self.calls[before].next_same_id as usize;
            }
            self.calls[before].next_same_id = NO_CALL;
            self.last_of_id.insert(id, to_u32(before));
        }
        self.calls.truncate(keep);
        self.unanswered.split_off(&to_u32(keep));
        let second = self.second_calls.partition_point(|&c| (c as usize) < keep);
        self.second_calls.truncate(second);
        let answered = self.results.partition_point(|&(m, _)| m < len);
        for &(_, k) in &self.results[answered..] {
            if let Some(call) = self.calls.get_mut(k as usize) {
                call.result = None;
                self.unanswered.insert(k);
            }
        }
        self.results.truncate(answered);
        let orphans = self.orphans.partition_point(|o| o.at.message < len);
        self.orphans.truncate(orphans);
        let assistants = self.assistants.partition_point(|&m| m < len);
        self.assistants.truncate(assistants);
    }

    /// Indexes `history`'s messages from `from` on, those before it
    /// indexed already.
    fn push_from(&mut self, history: &[Message], from: usize) {
        // The first call of the latest turn: what a result may answer.
        let mut turn_start = match self.assistants.last() {
            Some(&a) => self.calls.partition_point(|c| c.at.message < a),
            None => 0,
        };
        for (m, msg) in history.iter().enumerate().skip(from) {
            if msg.role == crate::message::Role::Assistant {
                self.assistants.push(m);
                turn_start = self.calls.len();
            }
            for (b, block) in msg.content.iter().enumerate() {
                let at = Position {
                    message: m,
                    block: b,
                };
                match block {
                    Block::ToolUse { id, name, .. } => self.push_call(id, name, at),
                    Block::ToolResult { tool_use_id, .. } => {
                        let answers =
                            self.calls[turn_start..]
                                .iter_mut()
                                .enumerate()
                                .find(|(_, c)| {
                                    c.result.is_none() && c.id == *tool_use_id && c.at.message < m
                                });
                        match answers {
                            Some((k, call)) => {
                                call.result = Some(at);
                                self.results.push((m, to_u32(turn_start + k)));
                                self.unanswered.remove(&to_u32(turn_start + k));
                            }
                            None => self.orphans.push(Orphan {
                                tool_use_id: tool_use_id.clone(),
                                at,
                            }),
                        }
                    }
                    Block::Text { .. } => {}
                }
            }
        }
    }

    /// Indexes a call, linked to the calls before it with its id.
    fn push_call(&mut self, id: &Text, name: &Text, at: Position) {
        let here = self.calls.len();
        let (earlier, first) = match self.last_of_id.get(id) {
            Some(&last) => {
                let last = &mut self.calls[last as usize];
                last.next_same_id = to_u32(here);
                (last.earlier_same_id + 1, last.first_same_id)
            }
            None => (0, here),
        };
        if earlier == 1 {
            self.second_calls.push(to_u32(here));
        }
        self.calls.push(CallRecord {
            id: id.clone(),
            name: name.clone(),
            at,
            result: None,
            earlier_same_id: earlier,
            first_same_id: first,
            next_same_id: NO_CALL,
        });
        self.last_of_id.insert(id.clone(), to_u32(here));
        self.unanswered.insert(to_u32(here));
    }

    /// The calls no result answers, in order: the entries the ledger of
    /// the whole history lists as unpaired, nothing in flight. Read from
    /// the calls the index keeps unanswered as it grows: in time that
    /// grows with them, not with every call (a followed gigabyte's
    /// 900,000 calls were read for each picture's one or two).
    pub fn unanswered(&self) -> impl Iterator<Item = IdEntry> + '_ {
        let view = self.at(usize::MAX, &[]);
        self.unanswered
            .iter()
            .map(move |&k| view.entry(k as usize, view.calls_of(k as usize)))
    }

    /// The ledger of the first `len` messages as a view, built as it is
    /// read: its counts in O(log calls), its entries one at a time. The
    /// debugger reads one at every step, where building the whole
    /// [`Ledger`] cost each step of a 1 GB log 40 ms and 50 MB.
    pub fn at<'a>(&'a self, len: usize, in_flight: &'a [&'a str]) -> LedgerAt<'a> {
        LedgerAt {
            index: self,
            len,
            made: self.calls.partition_point(|c| c.at.message < len),
            last_turn: self.last_turn(len),
            in_flight,
        }
    }

    /// The latest assistant message among the first `len` messages.
    fn last_turn(&self, len: usize) -> Option<usize> {
        let k = self.assistants.partition_point(|&m| m < len);
        k.checked_sub(1).map(|k| self.assistants[k])
    }

    fn state(&self, call: &CallRecord, len: usize, in_flight: &[&str]) -> IdState {
        Self::state_after(call, len, self.last_turn(len), in_flight)
    }

    /// [`PairingIndex::state`], the latest assistant message of the
    /// first `len` given (found once per ledger, not once per call).
    fn state_after(
        call: &CallRecord,
        len: usize,
        last_turn: Option<usize>,
        in_flight: &[&str],
    ) -> IdState {
        if call.result.is_some_and(|r| r.message < len) {
            IdState::Paired
        } else if Some(call.at.message) == last_turn && in_flight.contains(&&*call.id) {
            IdState::Pending
        } else {
            IdState::Unpaired
        }
    }

    /// The state of the call at `call` in the first `len` messages (`None`
    /// before it is made), without building the whole ledger.
    pub fn state_of(&self, call: Position, len: usize, in_flight: &[&str]) -> Option<IdState> {
        if call.message >= len {
            return None;
        }
        let k = self
            .calls
            .binary_search_by(|c| (c.at.message, c.at.block).cmp(&(call.message, call.block)))
            .ok()?;
        Some(self.state(&self.calls[k], len, in_flight))
    }

    /// The ledger of the first `len` messages, with `in_flight` the ids the
    /// loop has taken and not yet answered.
    pub fn ledger(&self, len: usize, in_flight: &[&str]) -> Ledger {
        let view = self.at(len, in_flight);
        // Calls per id among those made, counted at each id's first call
        // (hashing every id for each prefix held a step 0.3 s).
        let mut same_id = vec![0u32; view.made];
        for call in &self.calls[..view.made] {
            same_id[call.first_same_id] += 1;
        }
        Ledger {
            entries: (0..view.made)
                .map(|k| view.entry(k, same_id[self.calls[k].first_same_id] as usize))
                .collect(),
            orphans: view.orphans().to_vec(),
        }
    }
}

/// Links as [`LedgerAt::links`] gives them: the messages outside `range`
/// once each, both lists in order.
fn settled_links(
    range: std::ops::Range<usize>,
    mut calls: Vec<Position>,
    mut messages: Vec<usize>,
) -> (Vec<Position>, Vec<usize>) {
    messages.retain(|m| !range.contains(m));
    messages.sort_unstable();
    messages.dedup();
    calls.sort_unstable_by_key(|p| (p.message, p.block));
    (calls, messages)
}

/// `k` as a call's index (a history holds far fewer calls).
fn to_u32(k: usize) -> u32 {
    u32::try_from(k).unwrap_or(NO_CALL)
}

/// The ledger of a prefix of a history, read from its [`PairingIndex`]
/// without building it ([`PairingIndex::at`]): what [`Ledger`] says, in
/// time that grows with what is read of it, not with the history.
#[derive(Debug, Clone, Copy)]
pub struct LedgerAt<'a> {
    index: &'a PairingIndex,
    len: usize,
    /// How many calls the prefix holds.
    made: usize,
    last_turn: Option<usize>,
    in_flight: &'a [&'a str],
}

impl<'a> LedgerAt<'a> {
    /// What [`Ledger::counts`] says.
    pub fn counts(&self) -> LedgerCounts {
        let index = self.index;
        let paired = index.results.partition_point(|&(m, _)| m < self.len);
        let pending = match self.last_turn {
            Some(turn) => {
                let from = index.calls.partition_point(|c| c.at.message < turn);
                index.calls[from..self.made]
                    .iter()
                    .filter(|c| self.state(c) == IdState::Pending)
                    .count()
            }
            None => 0,
        };
        LedgerCounts {
            pending,
            paired,
            unpaired: self.made - paired - pending,
            duplicate: index
                .second_calls
                .partition_point(|&k| (k as usize) < self.made),
            orphan: self.orphans().len(),
        }
    }

    /// What [`Ledger::ids_in`] yields, each entry made as it is read.
    pub fn ids_in(&self, state: IdState) -> impl Iterator<Item = IdEntry> + 'a {
        let view = *self;
        self.index.calls[..self.made]
            .iter()
            .enumerate()
            .filter(move |(_, c)| view.state(c) == state)
            .map(move |(k, _)| view.entry(k, view.calls_of(k)))
    }

    /// What [`Ledger::duplicates`] yields: the first call of each id that
    /// more than one call carries, in order of first call.
    pub fn duplicates(&self) -> Vec<IdEntry> {
        let calls = &self.index.calls;
        let second = self
            .index
            .second_calls
            .partition_point(|&k| (k as usize) < self.made);
        let mut firsts: Vec<usize> = self.index.second_calls[..second]
            .iter()
            .map(|&k| calls[k as usize].first_same_id)
            .collect();
        firsts.sort_unstable();
        firsts
            .into_iter()
            .map(|first| self.entry(first, self.calls_of(first)))
            .collect()
    }

    /// The results that answer no call.
    pub fn orphans(&self) -> &'a [Orphan] {
        let orphans = &self.index.orphans;
        &orphans[..orphans.partition_point(|o| o.at.message < self.len)]
    }

    /// The calls made in messages `range` or answered there: each call's
    /// block, and the messages outside `range` on the other end of each
    /// pair, both in order (what the debugger lights when a message is
    /// selected).
    pub fn links(&self, range: std::ops::Range<usize>) -> (Vec<Position>, Vec<usize>) {
        let index = self.index;
        let (mut calls, mut messages) = (Vec::new(), Vec::new());
        let from = index
            .calls
            .partition_point(|c| c.at.message < range.start)
            .min(self.made);
        for call in index.calls[from..self.made]
            .iter()
            .take_while(|c| c.at.message < range.end)
        {
            calls.push(call.at);
            if let Some(r) = call.result.filter(|r| r.message < self.len) {
                messages.push(r.message);
            }
        }
        let from = index.results.partition_point(|&(m, _)| m < range.start);
        for &(m, k) in &index.results[from..] {
            if m >= range.end || m >= self.len {
                break;
            }
            let call = &index.calls[k as usize];
            if !range.contains(&call.at.message) {
                calls.push(call.at);
                messages.push(call.at.message);
            }
        }
        settled_links(range, calls, messages)
    }

    fn state(&self, call: &CallRecord) -> IdState {
        PairingIndex::state_after(call, self.len, self.last_turn, self.in_flight)
    }

    /// How many calls made carry call `k`'s id.
    fn calls_of(&self, k: usize) -> usize {
        let calls = &self.index.calls;
        let mut at = calls[k].first_same_id;
        let mut n = 0;
        while at < self.made {
            n += 1;
            match calls[at].next_same_id {
                NO_CALL => break,
                next => at = next as usize,
            }
        }
        n
    }

    /// Call `k`'s entry, `calls` calls made carrying its id.
    fn entry(&self, k: usize, calls: usize) -> IdEntry {
        let call = &self.index.calls[k];
        let result = call.result.filter(|r| r.message < self.len);
        IdEntry {
            id: call.id.clone(),
            name: call.name.clone(),
            first_call: call.at,
            calls,
            first_result: result,
            results: usize::from(result.is_some()),
            state: self.state(call),
            repeat: call.earlier_same_id,
        }
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

    /// The ids of the unpaired calls, one per call (an id reused by several
    /// unpaired calls appears that many times).
    pub fn unpaired(&self) -> Vec<String> {
        self.ids_in(IdState::Unpaired)
            .map(|e| e.id.to_string())
            .collect()
    }

    /// Ids carried by more than one tool_use block, each once (its first
    /// call).
    pub fn duplicates(&self) -> impl Iterator<Item = &IdEntry> {
        self.entries
            .iter()
            .filter(|e| e.is_duplicate() && e.repeat == 0)
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
            if e.is_duplicate() && e.repeat == 0 {
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
    use crate::message::{Reply, ToolCall};
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
            ..Reply::default()
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
            let ledger = index.ledger(len, &["f1"]);
            assert_eq!(ledger, Ledger::of(&history[..len], &["f1"]), "prefix {len}");
            // A reused id counts its calls within the prefix only, as a
            // plain count over the prefix's blocks says.
            for e in &ledger.entries {
                let carried = history[..len]
                    .iter()
                    .flat_map(|m| &m.content)
                    .filter(|b| matches!(b, Block::ToolUse { id, .. } if *id == e.id))
                    .count();
                assert_eq!(e.calls, carried, "{} in prefix {len}", e.id);
            }
        }
    }

    /// The view of every prefix says what a ledger built for it says:
    /// counts, the ids in each state, duplicates, orphans, and the links of
    /// every range of messages, on a history with reused ids, orphans, a
    /// late result and calls in flight.
    /// A history with an orphan first, a result a turn late, reused ids
    /// and (`open`) a last turn whose calls are unanswered.
    fn tangled_history(open: bool) -> Vec<Message> {
        let mut history = vec![Message::tool_result(
            "ghost".into(),
            json!(null).into(),
            true,
        )];
        history.extend(a_result_a_turn_late());
        history.extend([
            Message::user("again"),
            plan(),
            Message::tool_result("f1".into(), json!(2).into(), false),
        ]);
        if open {
            history.push(plan());
        }
        history
    }

    #[test]
    fn the_view_of_a_prefix_is_its_ledger() {
        let history = tangled_history(false);
        let index = PairingIndex::new(&history);
        for in_flight in [&[][..], &["w1"][..], &["w1", "f1"][..]] {
            for len in 0..=history.len() {
                let built = Ledger::of(&history[..len], in_flight);
                let view = index.at(len, in_flight);
                assert_eq!(view.counts(), built.counts(), "prefix {len}");
                for state in [IdState::Pending, IdState::Paired, IdState::Unpaired] {
                    let read: Vec<IdEntry> = view.ids_in(state).collect();
                    let want: Vec<IdEntry> = built.ids_in(state).cloned().collect();
                    assert_eq!(read, want, "{state:?} in prefix {len}");
                }
                let want: Vec<IdEntry> = built.duplicates().cloned().collect();
                assert_eq!(view.duplicates(), want, "prefix {len}");
                assert_eq!(view.orphans(), &built.orphans[..], "prefix {len}");
                for start in 0..len {
                    for end in start + 1..=len {
                        assert_eq!(
                            view.links(start..end),
                            links_of(&built, start..end),
                            "links of {start}..{end} in prefix {len}"
                        );
                    }
                }
                // A range past the prefix links nothing (and is no panic).
                let past = len + 1..len + 3;
                assert_eq!(view.links(past), (vec![], vec![]), "prefix {len}");
            }
        }
    }

    /// An index regrown from any earlier state of a history (the messages
    /// from `from` on different, or not yet there) is the index of the
    /// history made afresh: on a history with reused ids, orphans, a late
    /// result and a result appended to a message that held results.
    #[test]
    fn a_regrown_index_is_the_index_made_afresh() {
        let history = tangled_history(true);
        let whole = PairingIndex::new(&history);
        for from in 0..=history.len() {
            for len in from..=history.len() {
                // What the earlier state held from `from` on: the messages
                // then, an answer, or calls reusing ids where they stood.
                let answers = Message::tool_result("w1".into(), json!(0).into(), false);
                let then = |extra: Message| {
                    let mut e = history[..from].to_vec();
                    e.push(extra);
                    e
                };
                for earlier in [history[..len].to_vec(), then(answers), then(plan())] {
                    let mut index = PairingIndex::new(&earlier);
                    index.regrow(&history, from);
                    assert_eq!(index, whole, "from {from}, earlier of {}", earlier.len());
                }
            }
        }
        // Regrown as a log grows, one message at a time.
        let mut index = PairingIndex::default();
        for len in 0..=history.len() {
            index.regrow(&history[..len], len.saturating_sub(1));
            assert_eq!(index, PairingIndex::new(&history[..len]), "{len}");
        }
    }

    /// The links of `range` as the debugger read them off a built ledger.
    fn links_of(ledger: &Ledger, range: std::ops::Range<usize>) -> (Vec<Position>, Vec<usize>) {
        let (mut calls, mut messages) = (Vec::new(), Vec::new());
        for e in &ledger.entries {
            let result = e.first_result.map(|r| r.message);
            let call_here = range.contains(&e.first_call.message);
            let result_here = result.is_some_and(|r| range.contains(&r));
            if call_here || result_here {
                calls.push(e.first_call);
                if call_here && let Some(r) = result {
                    messages.push(r);
                }
                if result_here {
                    messages.push(e.first_call.message);
                }
            }
        }
        settled_links(range, calls, messages)
    }

    /// Two turns calling w1 and f1; f1's first result comes a turn late.
    fn a_result_a_turn_late() -> Vec<Message> {
        vec![
            Message::user("q"),
            plan(),
            Message::tool_result("w1".into(), json!(1).into(), false),
            plan(),
            Message::tool_result("w1".into(), json!(1).into(), false),
            Message::tool_result("f1".into(), json!(2).into(), false),
        ]
    }

    #[test]
    fn a_result_answers_only_the_turn_before_it() {
        let history = a_result_a_turn_late();
        let l = Ledger::of(&history, &[]);
        let states: Vec<(&str, IdState)> = l.entries.iter().map(|e| (&*e.id, e.state)).collect();
        assert_eq!(
            states,
            [
                ("w1", IdState::Paired),
                ("f1", IdState::Unpaired),
                ("w1", IdState::Paired),
                ("f1", IdState::Paired)
            ]
        );
        // The first turn's f1 stays unanswered: its result came a turn late.
        assert_eq!(l.unpaired(), ["f1"]);
        assert_eq!(
            counted_ids(&["f1".into(), "f1".into(), "w1".into()]),
            "f1 ×2, w1"
        );
    }

    #[test]
    fn duplicates_and_orphans_are_counted() {
        let history = vec![
            Message::tool_result("ghost".into(), json!(null).into(), true),
            plan(),
            plan(),
        ];
        let c = Ledger::of(&history, &[]).counts();
        // Four calls (two ids, each in two turns), none answered.
        assert_eq!(
            c,
            LedgerCounts {
                pending: 0,
                paired: 0,
                unpaired: 4,
                duplicate: 2,
                orphan: 1
            }
        );
    }
}
