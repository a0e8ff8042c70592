//! Claude Code session logs (`~/.claude/projects/*/<session>.jsonl` and the
//! sub-agent logs under `<session>/subagents/agent-*.jsonl`): JSON Lines of
//! events linked by `uuid` / `parentUuid`.
//!
//! The log is a graph, not a list, so it is read whole and rebuilt the way
//! Claude Code rebuilds it on resume:
//!
//! - The live conversation is the chain from the newest leaf back to its
//!   root. Events on other branches (a rewind, an edited prompt, a resume
//!   that kept one branch) are not part of it; they are reported as an
//!   `off_branch` notice, never as pairing errors of the live conversation.
//! - Streaming writes one assistant event per content block, all sharing
//!   `message.id`, and each tool_result event points at the assistant event
//!   of its own call. With parallel calls the single-parent chain passes
//!   through only one of them, so the sibling blocks and their results are
//!   recovered and spliced in after the chain's last sibling.
//! - A compaction writes an event with `parentUuid: null` and a
//!   `logicalParentUuid`: the chain goes on through it, and the conversation
//!   after it is a new one (its requests no longer carry what came before).
//! - Sidechain events (`isSidechain: true`: a sub-agent's own loop, in this
//!   file or in a log of its own) are separate conversations, labelled as
//!   sub-agents.
//!
//! Bookkeeping events (`file-history-snapshot`, `summary`, `queue-operation`,
//! `progress`, `system`, `attachment`, …) take part in the graph when they
//! carry a uuid and are otherwise ignored.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::anthropic::{Blocks, blocks};
use super::{BlockSource, Conversation, Notice, ReadError, Source, finish_reason_of};
use crate::engine::message::{Block, Message, Role};
use crate::engine::session::FinishReason;

/// Reads a Claude Code session log one event at a time; [`finish`] builds
/// the conversations once every event is in.
///
/// [`finish`]: ClaudeCodeLog::finish
#[derive(Debug, Default)]
pub struct ClaudeCodeLog {
    events: Vec<Event>,
}

/// What one line of the log says, kept small: content is read into blocks
/// at once and the JSON is dropped.
#[derive(Debug)]
struct Event {
    line: usize,
    uuid: Option<String>,
    parent: Option<String>,
    logical_parent: Option<String>,
    sidechain: bool,
    agent: Option<String>,
    session: Option<String>,
    timestamp: Option<String>,
    body: Option<Body>,
}

/// A user or assistant event's message.
#[derive(Debug)]
struct Body {
    role: Role,
    message_id: Option<String>,
    finish: Option<FinishReason>,
    read: Blocks,
}

impl Body {
    fn only_results(&self) -> bool {
        !self.read.blocks.is_empty()
            && self
                .read
                .blocks
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }))
    }
}

fn string_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

impl ClaudeCodeLog {
    /// Adds the event on 1-based `line`.
    pub fn push(&mut self, line: usize, event: &Value) -> Result<(), ReadError> {
        self.push_owned(line, event.clone())
    }

    /// [`ClaudeCodeLog::push`], taking the event so its contents move.
    pub fn push_owned(&mut self, line: usize, mut event: Value) -> Result<(), ReadError> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let is_message = matches!(kind, "user" | "assistant");
        let uuid = string_at(&event, "uuid");
        if uuid.is_none() && !is_message {
            return Ok(());
        }
        let mut ev = Event {
            line,
            parent: string_at(&event, "parentUuid"),
            logical_parent: string_at(&event, "logicalParentUuid"),
            sidechain: event.get("isSidechain").and_then(Value::as_bool) == Some(true),
            agent: string_at(&event, "agentId"),
            session: string_at(&event, "sessionId"),
            timestamp: string_at(&event, "timestamp"),
            uuid,
            body: None,
        };
        let kind = kind.to_string();
        if is_message && let Some(message) = event.get_mut("message") {
            let role = match message.get("role").and_then(Value::as_str).unwrap_or(&kind) {
                "assistant" => Role::Assistant,
                _ => Role::User,
            };
            let uuid = ev.uuid.clone();
            ev.body = Some(Body {
                role,
                message_id: string_at(message, "id"),
                finish: finish_reason_of(message.get("stop_reason")),
                read: blocks(message.get_mut("content"), "message", |p| BlockSource {
                    path: p,
                    line: Some(line),
                    uuid: uuid.clone(),
                })?,
            });
        }
        self.events.push(ev);
        Ok(())
    }

    /// The conversations read, in the order they start in the file: the
    /// main thread's (one per compaction segment), then each sub-agent's.
    pub fn finish(self) -> Vec<Conversation> {
        let events = self.events;
        let mut groups: Vec<(Option<String>, Vec<usize>)> = Vec::new();
        let mut main = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if !e.sidechain {
                main.push(i);
                continue;
            }
            let agent = e.agent.clone().unwrap_or_default();
            match groups
                .iter_mut()
                .find(|(a, _)| a.as_deref() == Some(&agent))
            {
                Some((_, members)) => members.push(i),
                None => groups.push((Some(agent), vec![i])),
            }
        }
        let mut out = Thread::new(&events, &main).conversations(None);
        for (agent, members) in groups {
            let label = match agent.as_deref() {
                Some("") | None => "sub-agent".to_string(),
                Some(a) => format!("sub-agent {a}"),
            };
            out.extend(Thread::new(&events, &members).conversations(Some(label)));
        }
        out
    }
}

/// One thread of the log (the main one, or one sub-agent's) as a graph.
struct Thread<'a> {
    events: &'a [Event],
    members: &'a [usize],
    by_uuid: HashMap<&'a str, usize>,
}

impl<'a> Thread<'a> {
    fn new(events: &'a [Event], members: &'a [usize]) -> Thread<'a> {
        let by_uuid = members
            .iter()
            .filter_map(|&i| events[i].uuid.as_deref().map(|u| (u, i)))
            .collect();
        Thread {
            events,
            members,
            by_uuid,
        }
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        self.events[i]
            .parent
            .as_deref()
            .and_then(|p| self.by_uuid.get(p).copied())
    }

    fn is_message(&self, i: usize) -> bool {
        self.events[i].body.is_some()
    }

    /// Every conversation of the thread. The newest leaf's chain first; what
    /// it leaves out is a branch (a notice) when it shares the live chain's
    /// root or session, and otherwise another session written into the same
    /// file (read the same way, on its own).
    fn conversations(&self, label: Option<String>) -> Vec<Conversation> {
        let mut visited: HashSet<usize> = HashSet::new();
        let mut threads: Vec<(usize, Vec<Conversation>)> = Vec::new();
        let mut branches: Vec<Notice> = Vec::new();
        let roots = self.roots();
        let mut left: Vec<usize> = self
            .members
            .iter()
            .copied()
            .filter(|&i| self.is_message(i))
            .collect();
        let mut live_session: Option<Option<&str>> = None;
        while let Some(tip) = self.tip(&left) {
            let session = self.events[tip].session.as_deref();
            if live_session.is_some_and(|live| live == session) {
                // An unlinked start in the live session: a rewind to the
                // first prompt left this tree behind.
                let root = roots[&tip];
                let off: Vec<usize> = left.iter().copied().filter(|i| roots[i] == root).collect();
                branches.extend(self.branch_notices(&off, &visited));
                visited.extend(off.iter().copied());
                left.retain(|i| !visited.contains(i));
                continue;
            }
            live_session.get_or_insert(session);
            let chain = self.recover_parallel(self.chain(tip), &visited);
            visited.extend(chain.iter().copied());
            let trees: HashSet<usize> = chain.iter().map(|&i| roots[&i]).collect();
            // Message events of the same trees not on the chain are branches.
            let off: Vec<usize> = left
                .iter()
                .copied()
                .filter(|i| !visited.contains(i) && trees.contains(&roots[i]))
                .collect();
            branches.extend(self.branch_notices(&off, &visited));
            visited.extend(off.iter().copied());
            left.retain(|i| !visited.contains(i));
            let first = chain.first().map_or(0, |&i| self.events[i].line);
            threads.push((first, self.segments(&chain, label.as_deref())));
        }
        threads.sort_by_key(|(first, _)| *first);
        let mut out: Vec<Conversation> = threads.into_iter().flat_map(|(_, c)| c).collect();
        // A branch is told where the live conversation is: the last one.
        if let Some(last) = out.last_mut() {
            last.notices.extend(branches);
        }
        out
    }

    /// The root of every member (following `parentUuid` only), so chains
    /// can tell a branch of theirs from an unrelated start.
    fn roots(&self) -> HashMap<usize, usize> {
        let mut root: HashMap<usize, usize> = HashMap::with_capacity(self.members.len());
        for &start in self.members {
            let mut path = Vec::new();
            let mut on_path = HashSet::new();
            let mut at = start;
            let found = loop {
                if let Some(&r) = root.get(&at) {
                    break r;
                }
                path.push(at);
                on_path.insert(at);
                match self.parent_of(at) {
                    // A cycle ends the walk where it closes.
                    Some(p) if !on_path.contains(&p) => at = p,
                    _ => break at,
                }
            };
            for p in path {
                root.insert(p, found);
            }
        }
        root
    }

    /// The newest leaf among `candidates`: a message event no other message
    /// event descends from; ties go to the later line.
    fn tip(&self, candidates: &[usize]) -> Option<usize> {
        let pool: HashSet<usize> = candidates.iter().copied().collect();
        let mut has_child: HashSet<usize> = HashSet::new();
        for &i in candidates {
            let mut at = self.parent_of(i);
            let mut steps = 0;
            while let Some(p) = at {
                if pool.contains(&p) || steps > self.members.len() {
                    has_child.insert(p);
                    break;
                }
                at = self.parent_of(p);
                steps += 1;
            }
        }
        candidates
            .iter()
            .copied()
            .filter(|i| !has_child.contains(i))
            .max_by(|&a, &b| {
                let key = |i: usize| (self.events[i].timestamp.as_deref().unwrap_or(""), i);
                key(a).cmp(&key(b))
            })
    }

    /// Root → `tip`, through compaction boundaries (`logicalParentUuid`).
    fn chain(&self, tip: usize) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut at = Some(tip);
        while let Some(i) = at {
            if !seen.insert(i) {
                break;
            }
            chain.push(i);
            let e = &self.events[i];
            at = match &e.parent {
                Some(_) => self.parent_of(i),
                None => e
                    .logical_parent
                    .as_deref()
                    .and_then(|p| self.by_uuid.get(p).copied()),
            };
        }
        chain.reverse();
        chain
    }

    /// Splices in the parallel siblings of the chain's assistant messages
    /// (same `message.id`, other uuid) and the tool results that answer any
    /// of them, right after the group's last event on the chain.
    fn recover_parallel(&self, chain: Vec<usize>, taken: &HashSet<usize>) -> Vec<usize> {
        let on_chain: HashSet<usize> = chain.iter().copied().collect();
        let message_id = |i: usize| {
            self.events[i]
                .body
                .as_ref()
                .filter(|b| b.role == Role::Assistant)
                .and_then(|b| b.message_id.as_deref())
        };
        let mut siblings: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut results_of: HashMap<usize, Vec<usize>> = HashMap::new();
        for &i in self.members {
            if let Some(id) = message_id(i) {
                siblings.entry(id).or_default().push(i);
            } else if self.events[i]
                .body
                .as_ref()
                .is_some_and(|b| b.role == Role::User && b.only_results())
                && let Some(p) = self.parent_of(i)
            {
                results_of.entry(p).or_default().push(i);
            }
        }
        let mut anchor: HashMap<&str, usize> = HashMap::new();
        for &i in &chain {
            if let Some(id) = message_id(i) {
                anchor.insert(id, i);
            }
        }
        let free = |i: &usize| !on_chain.contains(i) && !taken.contains(i);
        let mut inserts: HashMap<usize, Vec<usize>> = HashMap::new();
        for (id, &at) in &anchor {
            let group = &siblings[id];
            let mut found: Vec<usize> = group.iter().copied().filter(free).collect();
            let mut results: Vec<usize> = group
                .iter()
                .flat_map(|m| results_of.get(m).into_iter().flatten().copied())
                .filter(free)
                .collect();
            if found.is_empty() && results.is_empty() {
                continue;
            }
            found.sort_unstable();
            results.sort_unstable();
            found.extend(results);
            inserts.insert(at, found);
        }
        if inserts.is_empty() {
            return chain;
        }
        let mut out = Vec::with_capacity(chain.len());
        for i in chain {
            out.push(i);
            if let Some(extra) = inserts.remove(&i) {
                out.extend(extra);
            }
        }
        out
    }

    /// One notice per branch: the off-chain message events under one fork.
    fn branch_notices(&self, off: &[usize], on: &HashSet<usize>) -> Vec<Notice> {
        // Where each off-chain event leaves the chain, memoized: events come
        // in file order, so a parent is usually resolved before its child.
        let mut fork_of: HashMap<usize, Option<usize>> = HashMap::new();
        let mut by_fork: Vec<(Option<usize>, Vec<usize>)> = Vec::new();
        for &i in off {
            let mut path = Vec::new();
            let mut on_path = HashSet::new();
            let mut at = i;
            let fork = loop {
                if let Some(&f) = fork_of.get(&at) {
                    break f;
                }
                path.push(at);
                on_path.insert(at);
                match self.parent_of(at) {
                    Some(p) if on.contains(&p) => break Some(p),
                    Some(p) if !on_path.contains(&p) => at = p,
                    _ => break None,
                }
            };
            for p in path {
                fork_of.insert(p, fork);
            }
            match by_fork.iter_mut().find(|(f, _)| *f == fork) {
                Some((_, members)) => members.push(i),
                None => by_fork.push((fork, vec![i])),
            }
        }
        by_fork
            .into_iter()
            .map(|(fork, members)| {
                let lines: Vec<usize> = members.iter().map(|&i| self.events[i].line).collect();
                let (lo, hi) = (
                    *lines.iter().min().expect("non-empty"),
                    *lines.iter().max().expect("non-empty"),
                );
                let ids: Vec<String> = members
                    .iter()
                    .filter_map(|&i| self.events[i].body.as_ref())
                    .flat_map(|b| b.read.blocks.iter())
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.to_string()),
                        _ => None,
                    })
                    .collect();
                let first = members[0];
                let from = match fork {
                    Some(f) => format!(
                        "branch off line {} (uuid {})",
                        self.events[f].line,
                        self.events[f].uuid.as_deref().unwrap_or("?")
                    ),
                    None => "start over from a new first prompt".to_string(),
                };
                Notice {
                    kind: "off_branch",
                    source: BlockSource {
                        path: "message".into(),
                        line: Some(self.events[first].line),
                        uuid: self.events[first].uuid.clone(),
                    },
                    ids,
                    message: format!(
                        "{} message event(s) on lines {lo}–{hi} {from} and are not part of the live conversation (a rewind, an edited prompt or a resume left them behind); they were never sent with it, so they are not checked as part of it",
                        members.len()
                    ),
                }
            })
            .collect()
    }

    /// The chain cut at each compaction into conversations of API messages.
    fn segments(&self, chain: &[usize], label: Option<&str>) -> Vec<Conversation> {
        let mut out = Vec::new();
        let mut conv = Conversation::new(Source::ClaudeCode);
        conv.label = label.map(str::to_string);
        let mut builder = Builder::default();
        let mut compactions = 0;
        for (k, &i) in chain.iter().enumerate() {
            let e = &self.events[i];
            // Past the first event, a null parent is a compaction the chain
            // was bridged through.
            if k > 0 && e.parent.is_none() && !conv.messages.is_empty() {
                compactions += 1;
                let mut next = Conversation::new(Source::ClaudeCode);
                next.label = Some(match label {
                    Some(l) => format!("{l}, after compaction {compactions}"),
                    None => format!("after compaction {compactions}"),
                });
                out.push(std::mem::replace(&mut conv, next));
                builder = Builder::default();
            }
            if let Some(body) = &e.body {
                builder.add(&mut conv, e, body);
            }
        }
        if !conv.messages.is_empty() {
            out.push(conv);
        }
        out
    }
}

/// Rebuilds API messages from message events in chain order.
#[derive(Default)]
struct Builder {
    /// The last assistant message's index and `message.id`.
    last_assistant: Option<(usize, String)>,
}

impl Builder {
    fn add(&mut self, conv: &mut Conversation, e: &Event, body: &Body) {
        let read = &body.read;
        let hosted = read.hosted.clone();
        let target = match body.role {
            // Blocks of one streamed message join it, even when tool results
            // of its earlier calls were written between them.
            Role::Assistant => self
                .last_assistant
                .as_ref()
                .filter(|(at, id)| {
                    body.message_id.as_deref() == Some(id.as_str())
                        && conv.messages[at + 1..]
                            .iter()
                            .all(|m| m.role == Role::User && only_results(m))
                })
                .map(|(at, _)| *at),
            _ => conv.messages.len().checked_sub(1).filter(|&last| {
                body.only_results()
                    && conv.messages[last].role == Role::User
                    && only_results(&conv.messages[last])
            }),
        };
        match target {
            Some(at) => {
                // Positions only order blocks within a message: the later
                // event's blocks come after every earlier one.
                let offset = 1 + conv
                    .hosted
                    .iter()
                    .filter(|h| h.message == at)
                    .map(|h| h.position)
                    .max()
                    .unwrap_or(0)
                    .max(conv.messages[at].content.len());
                let m = &mut conv.messages[at];
                m.content.extend(read.blocks.iter().cloned());
                if body.finish.is_some() {
                    m.finish_reason = body.finish;
                }
                conv.block_sources[at].extend(read.sources.iter().cloned());
                conv.hosted
                    .extend(hosted.into_iter().map(|h| super::Hosted {
                        message: at,
                        position: h.position + offset,
                        ..h
                    }));
            }
            None => {
                let at = conv.messages.len();
                conv.push_read(
                    Message {
                        role: body.role,
                        content: read.blocks.clone(),
                        finish_reason: body.finish,
                    },
                    BlockSource {
                        path: "message".into(),
                        line: Some(e.line),
                        uuid: e.uuid.clone(),
                    },
                    read.sources.clone(),
                    hosted,
                );
                if body.role == Role::Assistant {
                    self.last_assistant = body.message_id.clone().map(|id| (at, id));
                }
            }
        }
        if body.role == Role::User && !body.only_results() {
            self.last_assistant = None;
        }
    }
}

fn only_results(m: &Message) -> bool {
    !m.content.is_empty()
        && m.content
            .iter()
            .all(|b| matches!(b, Block::ToolResult { .. }))
}
