//! The findings of a conversation kept as it grows. A followed log's newest
//! conversation gets a few events at a time; checking it whole again cost
//! in proportion to the log (on a gigabyte, 385 ms a batch). A gateway
//! gets each agent's whole history again with every request: checking a
//! 2 MB Chat history whole took 1.2 ms of the gate's 1.35 (its arguments
//! held to their schemas again, call by call). Here what the turns before
//! a cut found, and what the check carries over the cut, is kept, and
//! only the last turns are checked again. Anthropic's rules and Chat
//! Completions' are kept so; other providers' are checked whole.
//!
//! The cut is three turns from the end: a turn's findings read the turn
//! before and the turn after it, and whether it is among the last two
//! (a server call is in flight only there), and nothing else but what is
//! carried forward (the calls made so far, by id; the server calls that
//! wait for a client call; the last assistant message said). A result
//! answering a call cut by `max_tokens` is the one finding that reaches
//! back over the cut: those calls' findings are made again each time.

use super::{
    HashMap, HashSet, Ids, Settled, Spin, Turn, add_lines, anthropic_turns, beyond_messages,
    cache_breakpoints_within_four, duplicates_in, no_blank_content, openai_messages, read_notes,
    thinking_opens_the_turn, truncated_executed, turns, weigh,
};
use loopdbg_engine::message::Role;
use loopdbg_formats::provider::Format;
use loopdbg_read::{Conversation, Source, ToolSpec, tool_results};
use std::ops::Range;

use super::{Finding, Kind};

/// The findings of a conversation that grows (see the module's words):
/// [`GrowingCheck::check`] gives what [`check`](super::check) gives, in
/// the same order.
#[derive(Default)]
pub struct GrowingCheck {
    settled: Option<Box<Settling>>,
}

impl GrowingCheck {
    /// The findings of `conv`. `from`: the first of its messages that
    /// changed since the conversation this last checked, which it grew
    /// from (`None`: another conversation, or one built again).
    pub fn check(&mut self, conv: &Conversation, from: Option<usize>) -> Vec<Finding> {
        // Anthropic's rules and Chat Completions' are kept as they grow
        // (a followed Claude Code log; the requests a gateway reads past
        // their prefix, `gate`).
        if !matches!(conv.source.provider(), Format::Anthropic | Format::Openai) {
            self.settled = None;
            return super::check(conv);
        }
        let settled = match (self.settled.take(), from) {
            (Some(s), Some(from)) if s.holds(conv, from) => s,
            _ => Box::new(Settling::new(conv)),
        };
        let (settled, out) = settled.grow(conv);
        self.settled = Some(settled);
        out
    }

    /// How many turns are settled.
    #[cfg(test)]
    fn settled_turns(&self) -> usize {
        self.settled.as_ref().map_or(0, |s| s.turns)
    }
}

/// What the conversation-wide facts the settled findings read were.
struct Shape {
    source: Source,
    continues: Option<String>,
    /// The declared tools, their schemas and whether any name goes: a
    /// settled call was held to them (a log's later notice can change
    /// them; a request's can differ only if its body does).
    tools: Vec<ToolSpec>,
    open_tools: bool,
    /// How many argument notes and call types there were at the last
    /// check: a settled call was read by its id in them, so a later one
    /// with a settled call's id (a reused id) unsettles it.
    notes: usize,
    call_types: usize,
}

impl Shape {
    fn of(conv: &Conversation) -> Shape {
        Shape {
            source: conv.source,
            continues: conv.continues.clone(),
            tools: conv.tools.clone(),
            open_tools: conv.open_tools,
            notes: conv.notes.len(),
            call_types: conv.call_types.len(),
        }
    }

    /// Whether `conv` has these facts for the calls in `seen` (compared
    /// in place: cloning a request's tools for every check cost more
    /// than checking its newest messages).
    fn holds(&self, conv: &Conversation, seen: &Ids) -> bool {
        let msgs = &conv.messages;
        let (Some(notes), Some(types)) = (
            conv.notes.get(self.notes..),
            conv.call_types.get(self.call_types..),
        ) else {
            return false;
        };
        self.source == conv.source
            && self.continues == conv.continues
            && self.open_tools == conv.open_tools
            && self.tools == conv.tools
            && !notes.iter().any(|n| seen.contains(msgs, &n.id))
            && !types.iter().any(|(id, _)| seen.contains(msgs, id))
    }
}

/// The check of a conversation's turns before a cut, and what it carries
/// over the cut.
struct Settling {
    shape: Shape,
    /// How many turns are settled.
    turns: usize,
    /// The first turn not settled (its findings read it: it must be the
    /// same), and the one before it.
    first: Turn,
    before: Option<Turn>,
    /// The settled turns' findings under the provider's rules.
    provider: Vec<Finding>,
    /// Server calls waiting for a client call's result.
    waiting: HashSet<String>,
    /// Every call id, where it was last made.
    seen: Ids,
    /// Ids used twice.
    duplicates: Vec<Finding>,
    /// Every result's id, of the messages before `answered_to`: made
    /// once a call is cut by `max_tokens` (only such a call's finding
    /// asks), then kept.
    answered: Ids,
    answered_to: usize,
    /// What no server checks, by message, but calls cut by `max_tokens`
    /// and executed (made again: a later result may answer them)…
    beyond: Vec<(usize, Finding)>,
    /// … which are these messages'.
    cut_short: Vec<usize>,
    spin: Spin,
    /// Where each line's message is, of the messages before `lines_to`:
    /// made once a finding is one the provider rejects (only such a
    /// finding asks), then kept.
    lines: HashMap<usize, usize>,
    lines_to: usize,
}

impl Settling {
    fn new(conv: &Conversation) -> Settling {
        Settling {
            shape: Shape::of(conv),
            turns: 0,
            first: Turn {
                role: Role::User,
                members: 0..0,
            },
            before: None,
            provider: Vec::new(),
            waiting: HashSet::default(),
            seen: Ids::default(),
            duplicates: Vec::new(),
            answered: Ids::default(),
            answered_to: 0,
            beyond: Vec::new(),
            cut_short: Vec::new(),
            spin: Spin::default(),
            lines: HashMap::default(),
            lines_to: 0,
        }
    }

    /// Whether what was settled holds for `conv`, whose messages from
    /// `from` on changed: the first turn not settled is the same.
    fn holds(&self, conv: &Conversation, from: usize) -> bool {
        let end = self.first.members.end;
        let same_role = |i: usize| {
            conv.messages.get(i).is_some_and(|m| {
                (m.role == Role::Assistant) == (self.first.role == Role::Assistant)
            })
        };
        // The settled calls' places are looked up (`Shape::holds`) only
        // once the messages they are in are known unchanged: a request
        // that took a call out of a settled message left them pointing
        // past its blocks (a fuzzed request panicked the gate so).
        end <= from
            && end <= conv.messages.len()
            && !(end == from && same_role(end))
            && self.shape.holds(conv, &self.seen)
    }

    /// Settles all but the last three turns of `conv` and checks those.
    fn grow(mut self: Box<Self>, conv: &Conversation) -> (Box<Settling>, Vec<Finding>) {
        let msgs = &conv.messages;
        let at = self.first.members.start;
        let tail = turns(msgs, at);
        // A settled turn must stay two from the end (see the module's words).
        if self.turns > 0 && tail.len() < 2 {
            return Box::new(Settling::new(conv)).grow(conv);
        }
        let settle = tail.len().saturating_sub(3);
        let cut = tail.get(settle).map_or(msgs.len(), |t| t.members.start);
        let before = self.before.clone();
        provider_turns(
            conv,
            &tail,
            0..settle,
            before.as_ref(),
            &mut self.waiting,
            &mut self.provider,
        );
        duplicates_in(conv, at..cut, &mut self.seen, None, &mut self.duplicates);
        let mut beyond = Vec::new();
        beyond_messages(conv, at..cut, &|_| false, &mut self.spin, &mut beyond);
        self.beyond.extend(
            beyond
                .into_iter()
                .filter(|(_, f)| f.kind != Kind::TruncatedTurnExecuted),
        );
        self.cut_short
            .extend((at..cut).filter_map(|i| cut_short(conv, i)));
        if settle > 0 {
            self.turns += settle;
            self.before = Some(tail[settle - 1].clone());
        }
        if let Some(first) = tail.get(settle) {
            self.first = first.clone();
        }
        let out = self.check_the_rest(conv, &tail, settle, cut);
        self.shape.notes = conv.notes.len();
        self.shape.call_types = conv.call_types.len();
        (self, out)
    }

    /// The findings of `conv`: the settled ones, and those of the turns
    /// from `tail[settle]` (message `cut`) on.
    fn check_the_rest(
        &mut self,
        conv: &Conversation,
        tail: &[Turn],
        settle: usize,
        cut: usize,
    ) -> Vec<Finding> {
        let msgs = &conv.messages;
        let mut out = self.provider.clone();
        let mut waiting = self.waiting.clone();
        provider_turns(
            conv,
            tail,
            settle..tail.len(),
            self.before.as_ref(),
            &mut waiting,
            &mut out,
        );
        // Request bodies' own rules (each says nothing of a log's).
        thinking_opens_the_turn(conv, &mut out);
        cache_breakpoints_within_four(conv, &mut out);
        no_blank_content(conv, &mut out);
        out.extend(self.duplicates.iter().cloned());
        duplicates_in(
            conv,
            cut..msgs.len(),
            &mut Ids::default(),
            Some(&self.seen),
            &mut out,
        );
        read_notes(conv, &mut out);
        let later: HashSet<&str> = msgs[cut..]
            .iter()
            .flat_map(|m| tool_results(m).map(|(_, id)| id))
            .collect();
        if !self.cut_short.is_empty() || (cut..msgs.len()).any(|i| cut_short(conv, i).is_some()) {
            for i in self.answered_to..cut {
                for (k, id) in tool_results(&msgs[i]) {
                    self.answered.insert(msgs, id, (i, k));
                }
            }
            self.answered_to = cut;
        }
        let answered_to = self.answered_to;
        // (Before `answered_to` only when a call is cut short.)
        let answered = |id: &str| {
            later.contains(id) || (answered_to == cut && self.answered.contains(msgs, id))
        };
        // Each settled message's findings, a call cut short's where the
        // check of the whole puts it: after its calls', before a spin's.
        let mut short = self.cut_short.iter().copied().peekable();
        for (i, f) in &self.beyond {
            while let Some(s) =
                short.next_if(|&s| s < *i || (s == *i && f.kind == Kind::RepeatedTurn))
            {
                out.extend(truncated_executed(conv, s, &answered));
            }
            out.push(f.clone());
        }
        for s in short {
            out.extend(truncated_executed(conv, s, &answered));
        }
        let mut spin = self.spin;
        let mut rest = Vec::new();
        beyond_messages(conv, cut..msgs.len(), &answered, &mut spin, &mut rest);
        out.extend(rest.into_iter().map(|(_, f)| f));
        if out.iter().any(Finding::rejected_by_provider) {
            add_lines(conv, self.lines_to..cut, &mut self.lines);
            self.lines_to = cut;
        }
        weigh(
            conv,
            out,
            Some(Settled {
                lines: &self.lines,
                at: cut,
            }),
        )
    }
}

/// The provider's rules over `tail[range]`, turns of `conv` (`before`: the
/// turn before `tail[range.start]`, Anthropic's rules read it).
fn provider_turns(
    conv: &Conversation,
    tail: &[Turn],
    range: Range<usize>,
    before: Option<&Turn>,
    waiting: &mut HashSet<String>,
    out: &mut Vec<Finding>,
) {
    if conv.source.provider() == Format::Openai {
        let (Some(first), Some(last)) = (tail.get(range.start), range.end.checked_sub(1)) else {
            return;
        };
        let end = tail
            .get(last)
            .map_or(first.members.start, |t| t.members.end);
        return openai_messages(conv, first.members.start..end, out);
    }
    anthropic_turns(conv, tail, range, before, waiting, out);
}

/// Message `i` when it is an assistant message cut by `max_tokens`.
fn cut_short(conv: &Conversation, i: usize) -> Option<usize> {
    let m = &conv.messages[i];
    let length = matches!(
        m.finish_reason,
        Some(loopdbg_engine::session::FinishReason::Length)
    );
    (m.role == Role::Assistant && length).then_some(i)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on what they set up
    use super::*;
    use crate::check::check;
    use serde_json::{Value, json};

    /// Every file under `dir`, at any depth.
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => files(&path, out),
                false => out.push(path),
            }
        }
    }

    /// Every Anthropic request body and Claude Code log the project ships.
    fn conversations() -> Vec<(String, Conversation)> {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/transcripts"
        );
        let mut paths = Vec::new();
        files(std::path::Path::new(root), &mut paths);
        let mut out = Vec::new();
        for path in paths {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let convs: Vec<Conversation> = match path.extension().and_then(|e| e.to_str()) {
                Some("json") => loopdbg_read::bounded::value(&text)
                    .ok()
                    .and_then(|doc| {
                        let source = loopdbg_read::detect(&doc)?;
                        loopdbg_read::read_owned(doc, source).ok()
                    })
                    .into_iter()
                    .collect(),
                Some("jsonl") => {
                    let Some(mut log) = Log::new(Source::Agent(loopdbg_read::Agent::ClaudeCode))
                    else {
                        continue;
                    };
                    let lines: Vec<(usize, &str)> =
                        text.lines().enumerate().map(|(n, l)| (n + 1, l)).collect();
                    log.push_lines(&lines);
                    log.finish().unwrap_or_default()
                }
                _ => Vec::new(),
            };
            let grown = convs
                .into_iter()
                .filter(|c| matches!(c.source.provider(), Format::Anthropic | Format::Openai));
            out.extend(grown.map(|c| (name.clone(), c)));
        }
        out
    }

    use loopdbg_read::Log;

    fn call(id: &str, name: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": name, "input": {"q": name}})
    }

    fn result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
    }

    /// A long request body with a finding of each kind the check makes,
    /// near and far from the end: what a grown check must keep.
    fn long_body() -> Conversation {
        let mut msgs = vec![json!({"role": "user", "content": "start"})];
        for t in 0..12 {
            let a = format!("toolu_a{t}");
            let b = format!("toolu_b{t}");
            let (calls, results) = match t % 6 {
                // Parallel calls, one answered.
                0 => (vec![call(&a, "read"), call(&b, "grep")], vec![result(&a)]),
                // An id used again by a later turn.
                1 => (
                    vec![call("toolu_again", "read")],
                    vec![result("toolu_again")],
                ),
                // Cut by max_tokens; its result comes turns later.
                2 => (vec![call(&a, "write")], Vec::new()),
                // The same turn twice (a spin), then an invalid id.
                3 => (vec![call("toolu_spin", "ls")], vec![result("toolu_spin")]),
                4 => (vec![call("bad id!", "ls")], vec![result("bad id!")]),
                _ => (
                    vec![
                        json!({"type": "server_tool_use", "id": format!("srvtoolu_{t}"), "name": "web_search", "input": {}}),
                    ],
                    vec![result("toolu_a2")],
                ),
            };
            let mut reply = json!({"role": "assistant", "content": calls});
            if t % 6 == 2 {
                reply["stop_reason"] = json!("max_tokens");
            }
            msgs.push(reply);
            if t % 6 == 3 {
                msgs.push(json!({"role": "assistant", "content": [call("toolu_spin", "ls")]}));
            }
            let content = match results.is_empty() {
                true => json!("go on"),
                false => Value::Array(results),
            };
            msgs.push(json!({"role": "user", "content": content}));
        }
        msgs.push(json!({"role": "assistant", "content": [call("toolu_last", "read")]}));
        let doc = json!({"model": "claude-sonnet-4-5", "messages": msgs});
        let source = loopdbg_read::detect(&doc).unwrap();
        loopdbg_read::read_owned(doc, source).unwrap()
    }

    fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
    }

    /// A long Chat Completions body with declared tools and a finding of
    /// each kind its check makes, near and far from the end, and an id
    /// reused turns later with arguments that are not JSON (which
    /// unsettles the earlier call of that id: its schema is no longer
    /// held to).
    fn long_chat_body() -> Conversation {
        chat_body(&long_chat_messages())
    }

    /// A Chat Completions request of `msgs`, with the tool they call.
    fn chat_body(msgs: &[Value]) -> Conversation {
        let tool = json!({"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}});
        let doc = json!({"model": "gpt-4o", "tools": [tool], "messages": msgs});
        loopdbg_read::read_owned(doc, Source::Provider(Format::Openai)).unwrap()
    }

    fn long_chat_messages() -> Vec<Value> {
        let mut msgs = vec![json!({"role": "user", "content": "start"})];
        for t in 0..14 {
            let (a, b) = (format!("call_a{t}"), format!("call_b{t}"));
            let good = r#"{"city": "Oslo"}"#;
            let (calls, results): (Vec<Value>, Vec<&str>) = match t % 7 {
                // Parallel calls, one answered; one breaks its schema.
                0 => (
                    vec![
                        chat_call(&a, "get_weather", good),
                        chat_call(&b, "get_weather", r#"{"town": 1}"#),
                    ],
                    vec![a.as_str()],
                ),
                // An id used again five turns later, with arguments that
                // are not JSON.
                1 => (
                    vec![chat_call("call_again", "get_weather", r#"{"town": 2}"#)],
                    vec!["call_again"],
                ),
                6 => (
                    vec![chat_call("call_again", "get_weather", "{\"city\":")],
                    Vec::new(),
                ),
                // An unknown tool; a result nothing asked for.
                3 => (
                    vec![chat_call(&a, "get_wether", good)],
                    vec![a.as_str(), "call_nobody"],
                ),
                // The same turn twice (a spin).
                4 => (
                    vec![chat_call("call_spin", "get_weather", good)],
                    vec!["call_spin"],
                ),
                // The same id twice in one turn.
                5 => (
                    vec![
                        chat_call("call_twice", "get_weather", good),
                        chat_call("call_twice", "get_weather", good),
                    ],
                    vec!["call_twice"],
                ),
                _ => (vec![chat_call(&a, "get_weather", good)], vec![a.as_str()]),
            };
            msgs.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
            if t % 7 == 4 {
                msgs.push(json!({"role": "tool", "tool_call_id": "call_spin", "content": "ok"}));
                msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [chat_call("call_spin", "get_weather", good)]}));
            }
            for id in results {
                msgs.push(json!({"role": "tool", "tool_call_id": id, "content": "ok"}));
            }
            if t % 3 == 0 {
                msgs.push(json!({"role": "user", "content": "go on"}));
            }
        }
        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [chat_call("call_last", "get_weather", r#"{"city": "Rome"}"#)]}));
        msgs
    }

    fn words(f: &[Finding]) -> Vec<String> {
        f.iter().map(|f| format!("{f:?}")).collect()
    }

    /// Grows `conv` `step` messages at a time (and, with `again`, makes
    /// each step's last message again, as a reply's later block changes
    /// it): at each size, what the whole check finds.
    fn grown_is_whole(name: &str, conv: &Conversation, step: usize, again: bool) -> usize {
        let mut growing = GrowingCheck::default();
        let mut settled = 0;
        let mut last = None;
        let mut n = 0;
        while n < conv.messages.len() {
            n = (n + step).min(conv.messages.len());
            let now = conv.prefix(n);
            let want = words(&check(&now));
            let got = words(&growing.check(&now, last));
            assert_eq!(got, want, "{name}: {n} messages, by {step}");
            last = Some(n);
            settled = settled.max(growing.settled_turns());
            if again {
                let got = words(&growing.check(&now, Some(n - 1)));
                assert_eq!(got, want, "{name}: the last of {n} again");
                let got = words(&growing.check(&now, Some(n.saturating_sub(2))));
                assert_eq!(got, want, "{name}: the last two of {n} again");
            }
        }
        // A conversation it did not grow from.
        assert_eq!(
            words(&growing.check(conv, None)),
            words(&check(conv)),
            "{name}"
        );
        settled
    }

    #[test]
    fn a_grown_check_finds_what_the_whole_check_finds() {
        let mut convs = conversations();
        assert!(convs.len() >= 30, "only {} conversations", convs.len());
        convs.push(("long body".to_string(), long_body()));
        convs.push(("long Chat body".to_string(), long_chat_body()));
        let mut settled = 0;
        for (name, conv) in &convs {
            let most = [1, 2, 3]
                .map(|step| grown_is_whole(name, conv, step, step == 1))
                .into_iter()
                .max();
            settled += usize::from(most > Some(0));
        }
        assert!(settled >= 10, "only {settled} conversations settle a turn");
        // The long body's turns but its last three are settled.
        let long = long_body();
        let turns = turns(&long.messages, 0).len();
        assert_eq!(grown_is_whole("long body", &long, 1, false), turns - 3);
    }

    #[test]
    fn the_long_chat_body_has_each_finding_the_grown_check_keeps() {
        let body = long_chat_body();
        let kinds: Vec<Kind> = check(&body).iter().map(|f| f.kind).collect();
        for kind in [
            Kind::UnansweredCall,
            Kind::UnexpectedResult,
            Kind::ReusedId,
            Kind::DuplicateId,
            Kind::RepeatedTurn,
            Kind::UnknownTool,
            Kind::SchemaViolation,
            Kind::InvalidArguments,
        ] {
            assert!(kinds.contains(&kind), "{kind:?} not in {kinds:?}");
        }
        let turns = turns(&body.messages, 0).len();
        assert!(grown_is_whole("long Chat body", &body, 1, false) > turns / 2);
    }

    /// The long Chat body's requests as an agent sends them, each read
    /// anew (a `Conversation::prefix` keeps the notes of later messages,
    /// so the reused id's would be seen from the start).
    #[test]
    fn each_request_of_a_growing_chat_history_gets_the_whole_checks_findings() {
        let msgs = long_chat_messages();
        let mut growing = GrowingCheck::default();
        let mut last = None;
        for n in 1..=msgs.len() {
            let request = chat_body(&msgs[..n]);
            let want = words(&check(&request));
            assert_eq!(words(&growing.check(&request, last)), want, "{n} messages");
            last = Some(n);
        }
        assert!(growing.settled_turns() > 10);
        // The same messages with other tools declared: nothing settled
        // holds (the schema broken and the unknown name are not so now).
        let doc = json!({"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "get_wether"}}], "messages": msgs});
        let other = loopdbg_read::read_owned(doc, Source::Provider(Format::Openai)).unwrap();
        assert_eq!(words(&growing.check(&other, last)), words(&check(&other)));
    }

    #[test]
    fn the_long_body_has_each_finding_the_grown_check_keeps() {
        let kinds: Vec<Kind> = check(&long_body()).iter().map(|f| f.kind).collect();
        for kind in [
            Kind::UnansweredCall,
            Kind::ReusedId,
            Kind::TruncatedTurnExecuted,
            Kind::RepeatedTurn,
            Kind::InvalidId,
            Kind::UnexpectedResult,
            Kind::UnansweredServerCall,
            Kind::ConsecutiveSameRole,
        ] {
            assert!(kinds.contains(&kind), "{kind:?} not in {kinds:?}");
        }
    }
}
