//! A Claude Code log's conversations kept while the log grows, so that
//! what an agent appends costs what it holds, not what the log holds.
//!
//! An agent writes its log by appending events to its live chain: each new
//! event's parent is the one before it. Those are added to the live
//! chain's conversation by the same [`Builder`] that built it. Anything
//! else (a rewind, a compaction, a sub-agent, a uuid seen before, a reply
//! that joins a parallel group, a tip older than the last) builds every
//! conversation again, as reading the log whole does: the fast path is
//! taken only where building again would give the same conversations,
//! which the tests check on every prefix of every Claude Code fixture.

use super::{BlockFate, ClaudeCodeLog, Conversation, Event, HashMap, HashSet, LiveEnd, Role};

/// A Claude Code log's conversations, kept as it grows
/// ([`ClaudeCodeLog::grow`]).
pub struct Growing {
    conversations: Vec<Conversation>,
    /// How many of the log's events they hold.
    built: usize,
    /// How many unknown event types and joined lines the log had said:
    /// each is a notice on the first conversation.
    unknown: usize,
    joined: usize,
    /// Where the main thread's live chain ends, when it can be added to.
    live: Option<Live>,
}

/// What a change did to the conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grown {
    /// They were built again, every one.
    Rebuilt,
    /// Conversation `conversation` changed from message `from` on (a
    /// message before may have gained blocks: a streamed reply's later
    /// event); the others are as they were.
    Extended {
        /// Which conversation.
        conversation: usize,
        /// The first message that changed (its length when only a refusal
        /// after the last was added).
        from: usize,
    },
    /// Nothing the conversations hold changed.
    Unchanged,
}

/// The main thread's graph, kept so an appended event can be linked.
pub(super) struct Live {
    pub(super) end: LiveEnd,
    /// Main thread events by uuid key.
    pub(super) by_uuid: HashMap<u64, usize>,
    /// Every uuid the graph looked for and did not find.
    pub(super) dangling: HashSet<u64>,
    /// The summary the newest compaction's kept messages were moved after:
    /// what was written under it hangs from the last of them.
    pub(super) moved_from: Option<u64>,
}

impl Growing {
    /// The conversations, in the order [`ClaudeCodeLog::finish`] gives.
    pub fn conversations(&self) -> &[Conversation] {
        &self.conversations
    }

    /// Conversations built whole by another reader: built again at every
    /// change.
    pub fn whole(conversations: Vec<Conversation>) -> Growing {
        Growing {
            conversations,
            built: 0,
            unknown: 0,
            joined: 0,
            live: None,
        }
    }

    /// Adds the events `log` holds past those built, when they only extend
    /// the live chain; `None` when the conversations are to be built again
    /// (what was looked at may then be left half updated).
    fn extend(&mut self, log: &ClaudeCodeLog) -> Option<Grown> {
        let events = &log.events;
        if log.unknown.len() != self.unknown
            || log.joined.len() != self.joined
            || events.len() < self.built
        {
            return None;
        }
        if events.len() == self.built {
            return Some(Grown::Unchanged);
        }
        let live = self.live.as_mut()?;
        for (i, e) in events.iter().enumerate().skip(self.built) {
            if !plain(e)
                || live.dangling.contains(&e.key)
                || live.by_uuid.insert(e.key, i).is_some()
            {
                return None;
            }
        }
        let path = linear_path(events, live, self.built)?;
        let Some(last) = path.iter().rposition(|&i| events[i].is_message) else {
            // Bookkeeping after the tip: on no chain until a message
            // hangs from it.
            self.built = events.len();
            return Some(Grown::Unchanged);
        };
        let added = &path[..=last];
        let tip = &events[added[last]];
        // The newest message event's chain is the live one; a tip written
        // with an older time, or in another session, changes which chains
        // are branches and which are conversations of their own.
        let joins_group = |e: &Event| {
            e.body
                .as_ref()
                .filter(|b| b.role == Role::Assistant)
                .and_then(|b| b.message_id)
                .is_some_and(|id| live.end.tainted.contains(&id))
        };
        if tip.time < live.end.time
            || tip.session != live.end.session
            || added.iter().any(|&i| joins_group(&events[i]))
        {
            return None;
        }
        let conv = &mut self.conversations[live.end.at];
        let mut from = conv.messages.len();
        for &i in added {
            if let Some(at) = live
                .end
                .builder
                .add_event(conv, &events[i], BlockFate::Copied)
            {
                from = from.min(at);
            }
        }
        live.end.tip = added[last];
        live.end.time = tip.time;
        self.built = events.len();
        Some(Grown::Extended {
            conversation: live.end.at,
            from,
        })
    }
}

/// An event that can be added alone: on the main thread (a sub-agent's
/// is another conversation), with a uuid and a parent (no new start, no
/// compaction), and not a compaction's boundary (the newest one's kept
/// messages are moved after its summary).
fn plain(e: &Event) -> bool {
    let boundary = e.rare.as_ref().is_some_and(|r| r.boundary.is_some());
    !e.sidechain && e.key != 0 && e.parent != 0 && !boundary
}

/// The events from the live chain's tip to the log's last event, in file
/// order without the tip, when the last descends from the tip through
/// every event appended (`built` on); `None` otherwise. Events written
/// before them on the way are bookkeeping hanging from the tip: a message
/// event descending from it would have been the tip. Parents are looked
/// up as written, so the walk stops at an event the newest compaction
/// moved (one written under its summary).
fn linear_path(events: &[Event], live: &Live, built: usize) -> Option<Vec<usize>> {
    let mut path = Vec::new();
    let mut at = events.len() - 1;
    while at != live.end.tip {
        if at < live.end.tip {
            return None;
        }
        let e = &events[at];
        if live.moved_from == Some(e.parent) {
            return None;
        }
        path.push(at);
        let parent = *live.by_uuid.get(&e.parent)?;
        if parent >= at {
            return None;
        }
        at = parent;
    }
    let appended = path.iter().filter(|&&i| i >= built).count();
    if appended != events.len() - built {
        return None;
    }
    path.reverse();
    Some(path)
}

impl ClaudeCodeLog {
    /// The log's conversations, `growing` brought up to the events pushed
    /// since it was: events that extend the live chain are added to its
    /// conversation, at a cost in proportion to them; any other change
    /// builds every conversation again (from a copy of the blocks: the log
    /// keeps its events for that).
    pub fn grow(&self, growing: &mut Option<Growing>) -> Grown {
        if let Some(grown) = growing.as_mut().and_then(|g| g.extend(self)) {
            return grown;
        }
        let (conversations, live) = self.build(BlockFate::Copied);
        *growing = Some(Growing {
            conversations,
            built: self.events.len(),
            unknown: self.unknown.len(),
            joined: self.joined.len(),
            live,
        });
        Grown::Rebuilt
    }
}

#[cfg(test)]
mod tests {
    use crate::{Detail, Log, Source};

    use super::Grown;

    /// Every Claude Code log among the fixtures (each names its events'
    /// parents), by path.
    fn claude_code_fixtures() -> Vec<std::path::PathBuf> {
        let root = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
        let mut found = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl")
                    && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("\"parentUuid\""))
                {
                    found.push(path);
                }
            }
        }
        found.sort();
        found
    }

    /// `text`'s lines pushed `chunk` at a time into one log grown after
    /// each push: the conversations are those of the lines so far read
    /// whole. Gives how many pushes were added without building again.
    fn grown_is_whole(name: &str, text: &str, chunk: usize) -> usize {
        let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(k, l)| (k + 1, l)).collect();
        let mut log = Log::new(Source::Agent(crate::Agent::ClaudeCode)).unwrap();
        log.keep(Detail::Full);
        let mut growing = None;
        let mut extended = 0;
        for group in lines.chunks(chunk) {
            log.push_lines(group);
            let grown = log.grow(&mut growing).unwrap();
            extended += usize::from(matches!(grown, Grown::Extended { .. }));
            let whole = log.clone().finish().unwrap();
            let kept = growing.as_ref().unwrap().conversations();
            let at = group[0].0;
            assert_eq!(
                kept.len(),
                whole.len(),
                "{name}: line {at}, chunk {chunk}: {grown:?}"
            );
            for (k, (a, b)) in kept.iter().zip(&whole).enumerate() {
                assert!(
                    a == b,
                    "{name}: line {at}, chunk {chunk}, conversation {k}: {grown:?}\n{a:#?}\n{b:#?}"
                );
            }
        }
        extended
    }

    /// A Claude Code event line: `kind` user or assistant, `id` the
    /// reply's `message.id`.
    fn event(
        kind: &str,
        uuid: &str,
        parent: &str,
        session: &str,
        second: u32,
        content: &str,
        id: &str,
    ) -> String {
        let parent = match parent {
            "" => "null".to_string(),
            p => format!("\"{p}\""),
        };
        let id = match id {
            "" => String::new(),
            id => format!(",\"id\":\"{id}\""),
        };
        format!(
            r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"sessionId":"{session}","timestamp":"2026-12-01T10:00:{second:02}.000Z","message":{{"role":"{kind}","content":{content}{id}}}}}"#
        )
    }

    fn prompt(uuid: &str, parent: &str, session: &str, second: u32) -> String {
        event("user", uuid, parent, session, second, r#""go on""#, "")
    }

    fn call(uuid: &str, parent: &str, second: u32, tool: &str, id: &str) -> String {
        let content = format!(r#"[{{"type":"tool_use","id":"{tool}","name":"ls","input":{{}}}}]"#);
        event("assistant", uuid, parent, "s", second, &content, id)
    }

    fn result(uuid: &str, parent: &str, second: u32, tool: &str) -> String {
        let content =
            format!(r#"[{{"type":"tool_result","tool_use_id":"{tool}","content":"ok"}}]"#);
        event("user", uuid, parent, "s", second, &content, "")
    }

    fn text(uuid: &str, parent: &str, second: u32, id: &str) -> String {
        event(
            "assistant",
            uuid,
            parent,
            "s",
            second,
            r#"[{"type":"text","text":"done"}]"#,
            id,
        )
    }

    /// Each log's last line is one the live chain's conversation cannot
    /// take alone: grown line by line, the log still reads as read whole
    /// (each of these failed when its guard was left out).
    #[test]
    fn an_event_that_changes_the_graph_builds_it_again() {
        let logs = [
            // A tip older than a branch's leaf: the branch becomes live.
            vec![
                prompt("u1", "", "s", 1),
                call("a1", "u1", 2, "t1", "m1"),
                text("b1", "u1", 5, "m2"),
                result("r1", "a1", 3, "t1"),
                text("a2", "r1", 9, "m3"),
                text("a3", "a2", 4, "m4"),
            ],
            // A tip in another session: the first session's other start
            // is a conversation of its own, no longer a rewind.
            vec![
                prompt("u0", "", "s", 1),
                prompt("u1", "", "s", 2),
                text("a1", "u1", 3, "m1"),
                prompt("u2", "a1", "s2", 4),
            ],
            // A reply joining a parallel group with a part off the chain:
            // the part goes after it.
            vec![
                prompt("u1", "", "s", 1),
                call("a1b", "u1", 2, "t2", "m1"),
                call("a1", "u1", 2, "t1", "m1"),
                text("a2", "a1", 3, "m1"),
            ],
            // A compaction's boundary written under the tip, keeping a
            // message after another: the newest boundary's kept messages
            // are moved.
            vec![
                prompt("u1", "", "s", 1),
                call("a1", "u1", 2, "t1", "m1"),
                result("r1", "a1", 3, "t1"),
                text("a2", "r1", 4, "m2"),
                r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":"a2","sessionId":"s","timestamp":"2026-12-01T10:00:05.000Z","compactMetadata":{"preservedMessages":{"anchorUuid":"r1","uuids":["a1"]}}}"#.to_string(),
            ],
            // The uuid a cut log's first event names as its parent.
            vec![
                result("r1", "gone", 1, "t0"),
                text("a1", "r1", 2, "m1"),
                prompt("gone", "a1", "s", 3),
            ],
            // A uuid written before, again.
            vec![
                prompt("u1", "", "s", 1),
                call("a1", "u1", 2, "t1", "m1"),
                result("r1", "a1", 3, "t1"),
                text("a1", "r1", 4, "m2"),
            ],
        ];
        for (k, lines) in logs.iter().enumerate() {
            let text = lines.join("\n");
            grown_is_whole(&format!("log {k}"), &text, 1);
        }
    }

    #[test]
    fn a_grown_log_holds_the_conversations_of_the_log_read_whole() {
        let fixtures = claude_code_fixtures();
        assert!(fixtures.len() >= 20, "{fixtures:?}");
        let mut extended = 0;
        for path in &fixtures {
            let text = std::fs::read_to_string(path).unwrap();
            let name = path.display().to_string();
            for chunk in [1, 2, 3, 7] {
                extended += grown_is_whole(&name, &text, chunk);
            }
        }
        // The fast path is taken, not only the rebuild.
        assert!(extended > 100, "extended {extended} times");
    }
}
