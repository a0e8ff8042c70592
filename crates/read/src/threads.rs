//! Which conversation a request belongs to. An agent sends its whole
//! history with every request, so a capture holds one line per request and
//! a conversation of five rounds is five lines. Counting lines as
//! conversations made "conversation 2 of 2" out of one loop; a request
//! continues a conversation when an earlier request of it (with its reply,
//! when the reply is appended) is a prefix of its messages.
//!
//! Messages are compared by a fingerprint of what pairing depends on and
//! what a person reads: role, text, and the ids of calls and results. Two
//! conversations that open with the same prompt are told apart because a
//! conversation is matched only at its newest request, not at any request
//! it has grown past; the same request sent twice (a retry) stays in its
//! conversation.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use loopdbg_engine::message::{Block, Message, Role};

/// The hash's keys: fixed, so a request fingerprints alike on every
/// thread (prefixes are made in parallel) and in every run. aHash, not
/// the standard SipHash: this hashes every message's text of every
/// request, a few percent of `check` over JSON Lines.
static KEYS: ahash::RandomState =
    ahash::RandomState::with_seeds(0x6c6f_6f70, 0x6462_6721, 0x7072_6566, 0x6978_6573);

/// A running fingerprint of each prefix of one request's messages: entry
/// `i` stands for `messages[..=i]`. Computed apart from [`Threads::assign`]
/// so many requests can be fingerprinted in parallel and assigned in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefixes(Vec<u64>);

impl Prefixes {
    /// The fingerprints of every prefix of `messages`.
    pub fn of(messages: &[Message]) -> Prefixes {
        Prefixes::of_source("", messages)
    }

    /// [`Prefixes::of`] for a conversation read as `source` (`openai`,
    /// `claude-code`, …): one conversation never spans two providers, so
    /// the same prompt sent to two of them stays two conversations.
    pub fn of_source(source: &str, messages: &[Message]) -> Prefixes {
        let mut prefixes = Prefixes::default();
        prefixes.regrow(source, messages, 0);
        prefixes
    }

    /// Brings the fingerprints up to `messages` (read as `source`) when
    /// only the messages from `from` on changed since they were taken: a
    /// conversation that grew costs what it gained.
    pub fn regrow(&mut self, source: &str, messages: &[Message], from: usize) {
        self.0.truncate(from.min(messages.len()));
        let mut running = self
            .0
            .last()
            .copied()
            .unwrap_or_else(|| KEYS.hash_one(source));
        let kept = self.0.len();
        self.0
            .extend(messages[kept.min(messages.len())..].iter().map(|m| {
                let mut h = KEYS.build_hasher();
                running.hash(&mut h);
                fingerprint(m, &mut h);
                running = h.finish();
                running
            }));
    }

    /// The fingerprints of the prefixes from `from` messages long on
    /// (1-based lengths: the first is the prefix of `from + 1` messages).
    pub fn since(&self, from: usize) -> &[u64] {
        &self.0[from.min(self.0.len())..]
    }

    /// The fingerprint of the whole conversation, if it holds a message.
    pub fn full(&self) -> Option<u64> {
        self.0.last().copied()
    }
}

/// Feeds what identifies a message to `h`: its side of the conversation,
/// its text without surrounding space, the ids of its calls and results.
fn fingerprint(m: &Message, h: &mut impl Hasher) {
    // A tool result travels as a user message to some providers and a
    // tool message to others; both are the caller's side.
    let side = match m.role {
        Role::Assistant => 1u8,
        Role::User | Role::Tool => 0u8,
    };
    side.hash(h);
    for b in &m.content {
        match b {
            Block::Text { text } => {
                let text = text.trim();
                if !text.is_empty() {
                    (0u8, text).hash(h);
                }
            }
            Block::ToolUse { id, .. } => (1u8, &**id).hash(h),
            Block::ToolResult { tool_use_id, .. } => (2u8, &**tool_use_id).hash(h),
        }
    }
}

/// The conversations seen so far, each known by its newest request.
#[derive(Debug, Default)]
pub struct Threads {
    /// The fingerprint of each conversation's newest request → its index.
    newest: HashMap<u64, usize>,
    /// Each conversation's newest fingerprint, to forget it when it grows.
    tip: Vec<Option<u64>>,
}

impl Threads {
    /// The 0-based conversation the request with `prefixes` belongs to:
    /// the one whose newest request is the longest prefix of it, else a
    /// new one.
    pub fn assign(&mut self, prefixes: &Prefixes) -> usize {
        let found = prefixes
            .0
            .iter()
            .rev()
            .find_map(|h| self.newest.get(h).copied());
        let thread = found.unwrap_or_else(|| {
            self.tip.push(None);
            self.tip.len() - 1
        });
        if let Some(&full) = prefixes.0.last() {
            if let Some(old) = self.tip[thread].replace(full) {
                self.newest.remove(&old);
            }
            self.newest.insert(full, thread);
        }
        thread
    }

    /// How many conversations were seen.
    pub fn count(&self) -> usize {
        self.tip.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_engine::message::{Json, Reply, ToolCall};

    fn call(id: &str) -> Message {
        Message::assistant(&Reply {
            text: Some("Let me check.".into()),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "get_weather".into(),
                args: Json::new(serde_json::json!({})),
                arguments: None,
            }],
            ..Reply::default()
        })
    }

    fn result(id: &str) -> Message {
        Message::tool_result(id.into(), Json::new(serde_json::json!("18")), false)
    }

    #[test]
    fn requests_that_grow_one_history_are_one_conversation() {
        let prompt = Message::user("weather?");
        let first = vec![prompt.clone()];
        let second = vec![prompt.clone(), call("c1"), result("c1")];
        let third = vec![prompt, call("c1"), result("c1"), call("c2"), result("c2")];
        let mut threads = Threads::default();
        for request in [&first, &second, &third] {
            assert_eq!(threads.assign(&Prefixes::of(request)), 0);
        }
        assert_eq!(threads.count(), 1);
    }

    #[test]
    fn the_same_prompt_again_after_a_loop_is_a_new_conversation() {
        let prompt = Message::user("weather?");
        let mut threads = Threads::default();
        assert_eq!(
            threads.assign(&Prefixes::of(std::slice::from_ref(&prompt))),
            0
        );
        let grown = [prompt.clone(), call("c1"), result("c1")];
        assert_eq!(threads.assign(&Prefixes::of(&grown)), 0);
        // The second run of the same agent: the first request again.
        assert_eq!(
            threads.assign(&Prefixes::of(std::slice::from_ref(&prompt))),
            1
        );
        // Its next request (new ids) continues the second, not the first.
        let other = [prompt, call("c9"), result("c9")];
        assert_eq!(threads.assign(&Prefixes::of(&other)), 1);
        assert_eq!(threads.count(), 2);
    }

    #[test]
    fn a_retry_and_interleaved_side_requests_keep_their_conversations() {
        let prompt = Message::user("weather?");
        let title = Message::user("Write a title for this chat");
        let mut threads = Threads::default();
        assert_eq!(
            threads.assign(&Prefixes::of(std::slice::from_ref(&prompt))),
            0
        );
        assert_eq!(threads.assign(&Prefixes::of(&[title])), 1);
        // The same request again (a retry after a 529).
        assert_eq!(
            threads.assign(&Prefixes::of(std::slice::from_ref(&prompt))),
            0
        );
        let grown = [prompt, call("c1"), result("c1")];
        assert_eq!(threads.assign(&Prefixes::of(&grown)), 0);
        assert_eq!(threads.count(), 2);
    }

    #[test]
    fn the_same_prompt_to_two_providers_is_two_conversations() {
        let prompt = [Message::user("weather?")];
        let mut threads = Threads::default();
        assert_eq!(threads.assign(&Prefixes::of_source("openai", &prompt)), 0);
        assert_eq!(
            threads.assign(&Prefixes::of_source("anthropic", &prompt)),
            1
        );
    }
}
