//! A conversation request read only past what it shares with the request
//! before it. An agent sends its whole history every time: the request
//! after a 2 MB one is the same 2 MB and two messages more, so a gate
//! that reads every request whole spends its time on bytes it has read
//! already (about 8 ms of a 2 MB body's 9, issue 62).
//!
//! [`Histories`] keeps the conversations of recent requests, each with
//! where its `messages` array's elements end in its body, and how the
//! conversation stood before each of its last four messages (a [`Mark`]:
//! Claude Code moves its `cache_control` marks to the newest messages, so
//! its next request differs two messages before the end; an agent that
//! mends its last message after a refusal differs one before). A request
//! whose bytes are the same up to one of those places, byte for byte
//! (kept and compared whole: a memcmp stops at the first byte that
//! differs, in another agent's history within its first message; a hash
//! had to read every candidate's whole prefix), and whose body after the
//! array is the same too, is read by going back to that place and
//! handing only the elements after it to the format's reader, a message
//! at a time, numbered on. Anything else — another order of keys, a
//! message further back edited, a body the short way cannot vouch for —
//! is read whole, as before: the short way is taken only when it gives
//! what reading the whole body gives, which the tests hold it to.
//!
//! Chat Completions, Anthropic Messages, Responses (its `input` items:
//! Codex sends its whole history with every request) and Gemini (its
//! `contents`: so does Gemini CLI) only: their readers read a message, an
//! item or a turn at a time. A remembered conversation is taken out when a
//! request continues it (an agent's next request replaces it), and the
//! idle go once the budget is spent; each is counted at [`COST`] times
//! its body's length (its body and its conversation: 64 kept 2.1 MB Chat
//! histories took 595 MB of resident memory, 4.4× theirs, tool results
//! being kept as values for the checks on their content).

use std::cell::Cell;
use std::sync::Mutex;

use loopdbg_formats::provider::Format;
use serde_json::Value;

use crate::bounded::{limit_for, value_spending};
use crate::{Conversation, Detail, Source};
use loopdbg_engine::diagnostics::json_span::JsonPath;

/// What a remembered conversation is counted at, per byte of its body.
pub const COST: usize = 5;

/// How many messages back from its last a remembered request can be
/// continued from: Claude Code marks its newest messages for the prompt
/// cache (`cache_control` on the last block of the last one, in the
/// requests of Claude Code 2 captured here; on the last two in some
/// clients), so the request after one differs from it one or two
/// messages before its end, and it also rewrites a `system` entry of its
/// messages between requests; an agent that mends its last message after
/// a refusal differs one before. Four leaves room for both.
const BACK: usize = 4;

/// Where a conversation stood before one of its last messages: how long
/// each list a message adds to was, and what a message may set. Made by
/// naming every field of [`Conversation`], so a field added there must
/// be said here (or why a message cannot change it).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    messages: usize,
    system: Option<String>,
    system_messages: usize,
    notes: usize,
    hosted: usize,
    notices: usize,
    cache_breakpoints: Option<usize>,
    call_types: usize,
    unsigned: usize,
    signatures: usize,
    opens_with_thinking: usize,
    written_empty: usize,
    /// How many blocks the last message had: a Responses call joins the
    /// assistant message before it, so a message can grow in place.
    last_blocks: usize,
    /// The last notice: the one a reader may take back (a Responses
    /// reasoning item's, once its call comes), which cutting the list to
    /// its length would not bring back.
    last_notice: Option<crate::Notice>,
}

impl Mark {
    fn of(conv: &Conversation) -> Mark {
        let Conversation {
            // Set from the body's other keys, or only by agents' logs,
            // never by a Chat or Messages message; a Responses item that
            // sets the tools or what a request continues is not read one
            // at a time (`responses::extend`).
            source: _,
            tools: _,
            rewrites: _,
            continues: _,
            label: _,
            open_tools: _,
            model: _,
            refusals: _,
            answer: _,
            synthetic: _,
            usage: _,
            thinking: _,
            thinking_adaptive: _,
            compaction: _,
            ended_by_compaction: _,
            // One entry per message.
            message_sources: _,
            block_sources: _,
            messages,
            system,
            system_messages,
            notes,
            hosted,
            notices,
            cache_breakpoints,
            call_types,
            unsigned,
            signatures,
            opens_with_thinking,
            written_empty,
        } = conv;
        Mark {
            messages: messages.len(),
            system: system.clone(),
            system_messages: *system_messages,
            notes: notes.len(),
            hosted: hosted.len(),
            notices: notices.len(),
            cache_breakpoints: *cache_breakpoints,
            call_types: call_types.len(),
            unsigned: unsigned.len(),
            signatures: *signatures,
            opens_with_thinking: opens_with_thinking.len(),
            written_empty: written_empty.len(),
            last_blocks: last_blocks(conv).unwrap_or(0),
            last_notice: notices.last().cloned(),
        }
    }

    /// `conv` as it stood at this mark.
    fn restore(&self, conv: &mut Conversation) {
        conv.messages.truncate(self.messages);
        conv.message_sources.truncate(self.messages);
        conv.block_sources.truncate(self.messages);
        if let (Some(last), Some(sources)) =
            (conv.messages.last_mut(), conv.block_sources.last_mut())
        {
            last.content.truncate(self.last_blocks);
            sources.truncate(self.last_blocks);
        }
        conv.system.clone_from(&self.system);
        conv.system_messages = self.system_messages;
        conv.notes.truncate(self.notes);
        conv.hosted.truncate(self.hosted);
        conv.notices.truncate(self.notices);
        if conv.notices.len() + 1 == self.notices {
            conv.notices.extend(self.last_notice.clone());
        }
        conv.cache_breakpoints = self.cache_breakpoints;
        conv.call_types.truncate(self.call_types);
        conv.unsigned.truncate(self.unsigned);
        conv.signatures = self.signatures;
        conv.opens_with_thinking.truncate(self.opens_with_thinking);
        conv.written_empty.truncate(self.written_empty);
    }
}

/// A place a remembered request can be continued from before its end.
#[derive(Debug, Clone)]
struct Boundary {
    /// The body's length up to there.
    end: usize,
    /// How many elements of `messages` come before it (not the
    /// conversation's messages: Chat's system messages are not one).
    elements: usize,
    /// How the conversation stood there.
    mark: Mark,
}

/// A request body read whole by [`read_whole`]: its conversation, and
/// the marks before its last messages.
pub struct Whole {
    /// The conversation, as [`crate::read_owned_as`] reads it.
    pub conv: Conversation,
    format: Format,
    detail: Detail,
    /// Before each of its last messages, in order; empty when it was not
    /// read so.
    marks: Vec<Mark>,
}

/// The conversations of recent requests, for reading the next request of
/// each past what they share, each with what its reader keeps beside it
/// (`S`: the gate keeps the check of the conversation's settled turns).
pub struct Histories<S = ()> {
    kept: Mutex<Kept<S>>,
}

struct Kept<S> {
    /// Oldest first.
    entries: Vec<Remembered<S>>,
    /// What the entries are counted at, in bytes.
    used: usize,
    budget: usize,
    /// Conversations offered to be kept so far.
    clock: u64,
}

/// A request's conversation, with what is needed to read a request that
/// continues it.
struct Remembered<S> {
    conv: Conversation,
    /// What the reader kept beside it.
    state: S,
    /// Where its messages end in its body, and what it was read as.
    next: Next,
    /// The body from the array's closing `]` on.
    tail: Box<[u8]>,
    /// What it is counted at: [`COST`] × its body's length.
    cost: usize,
    /// [`Kept::clock`] when it was kept.
    kept_at: u64,
}

/// What [`Histories::read`] gives: the conversation, and what to hand
/// back to [`Histories::keep`] once it is judged.
pub struct ReadPast<S = ()> {
    /// The request's conversation, as reading it whole gives it.
    pub conv: Conversation,
    /// What was kept beside the conversation it continues.
    pub state: S,
    /// The first of its messages read past the prefix: the ones before
    /// are the remembered conversation's.
    pub from: usize,
    next: Next,
}

/// Where a request's messages end in its body, and what it was read as:
/// what is needed, beside its conversation, to read a request that
/// continues it.
struct Next {
    /// The body up to `end` (being built: the earlier request's, which
    /// the body begins with, until it is kept); the next request's grows
    /// from it (a copy of 2 MB per request took fresh pages and their
    /// faults every time).
    prefix: Vec<u8>,
    /// Where it can be continued from before its end, oldest first: the
    /// places before each of its last [`BACK`] messages.
    back: Vec<Boundary>,
    format: Format,
    detail: Detail,
    path: Box<str>,
    /// The body's length up to the end of its last message element (just
    /// after `[` when there is none).
    end: usize,
    /// How many elements the `messages` array has.
    messages: usize,
    /// What parsing the body took of its memory limit (`bounded`).
    spent: usize,
}

impl<S> Histories<S> {
    /// Remembering conversations worth at most `budget` bytes (each
    /// counted at [`COST`] × its body); 0 remembers nothing.
    pub fn new(budget: usize) -> Histories<S> {
        Histories {
            kept: Mutex::new(Kept {
                entries: Vec::new(),
                used: 0,
                budget,
                clock: 0,
            }),
        }
    }

    /// The conversation of `bytes`, a request to `path` read as `format`,
    /// read past the messages it shares with a remembered request (which
    /// is taken out); `None` when no remembered request is a prefix of it
    /// in the sense above, or the rest cannot be read this way: read it
    /// whole then.
    pub fn read(
        &self,
        format: Format,
        path: &str,
        bytes: &[u8],
        detail: Detail,
    ) -> Option<ReadPast<S>> {
        let (earlier, from) = self.take(format, path, bytes, detail)?;
        past(earlier, from, bytes)
    }

    /// Remembers the conversation read past a prefix, with `state`
    /// beside it, for the request after `bytes`: the body it was read
    /// from (its prefix is not compared again).
    pub fn keep(&self, read: ReadPast<S>, bytes: &[u8]) {
        let ReadPast {
            conv, state, next, ..
        } = read;
        self.remember(conv, state, next, bytes);
    }

    /// Remembers what `bytes` (a request to `path`, parsed whole, taking
    /// `spent` of its memory limit) read as, with `state` beside it, when
    /// its `messages` array can be found in it.
    pub fn keep_whole(&self, path: &str, bytes: &[u8], spent: usize, whole: Whole, state: S) {
        let Whole {
            conv,
            format,
            detail,
            marks,
        } = whole;
        if !remembers(format) || conv.source != Source::Provider(format) || self.is_off() {
            return;
        }
        let Some(layout) = layout(bytes, history_key(format)) else {
            return;
        };
        // The marks are before the last of the messages, in order.
        let first = layout.messages.saturating_sub(marks.len());
        let back = (first..)
            .zip(marks)
            .filter_map(|(i, mark)| {
                let end = *layout.before.get(i)?;
                Some(Boundary {
                    end,
                    elements: i,
                    mark,
                })
            })
            .collect();
        let next = Next {
            prefix: Vec::new(),
            back,
            format,
            detail,
            path: path.into(),
            end: layout.end,
            messages: layout.messages,
            spent,
        };
        self.remember(conv, state, next, bytes);
    }

    fn is_off(&self) -> bool {
        self.kept.lock().map_or(true, |kept| kept.budget == 0)
    }

    /// Keeps `conv` for the request after `bytes`, when there is room.
    /// Room is made only of conversations idle through two rounds of every
    /// one kept: when more agents are busy than the budget holds, evicting
    /// the oldest evicts the one whose agent sends next, and every request
    /// would be read whole (a 64-agent bench went from 2.5 to 19.6 ms a
    /// request so); the newcomer is not kept instead, and the agents kept
    /// stay fast. An agent gone away frees its room two rounds later.
    fn remember(&self, conv: Conversation, state: S, next: Next, bytes: &[u8]) {
        let cost = COST.saturating_mul(bytes.len());
        let (Some(body_prefix), Some(close)) =
            (bytes.get(..next.end), closing_bracket(bytes, next.end))
        else {
            return;
        };
        let mut gone = Vec::new();
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        kept.clock += 1;
        while kept.used + cost > kept.budget {
            let idle_for = 2 * kept.entries.len() as u64;
            match kept.entries.first() {
                Some(oldest) if kept.clock - oldest.kept_at > idle_for => {
                    let oldest = kept.entries.remove(0);
                    kept.used -= oldest.cost;
                    gone.push(oldest);
                }
                _ => break,
            }
        }
        if kept.used + cost <= kept.budget {
            let entry = Remembered {
                conv,
                state,
                next: Next {
                    prefix: grown(next.prefix, body_prefix),
                    ..next
                },
                tail: bytes[close..].into(),
                cost,
                kept_at: kept.clock,
            };
            kept.used += cost;
            kept.entries.push(entry);
        }
        // What goes is freed after the lock: a 2 MB history's conversation
        // is thousands of allocations.
        drop(kept);
        drop(gone);
    }

    /// The remembered request `bytes` continues, taken out, with where it
    /// continues it from (`None`: its end; `Some(j)`: its boundary `j`):
    /// the one sharing the most messages when several do.
    fn take(
        &self,
        format: Format,
        path: &str,
        bytes: &[u8],
        detail: Detail,
    ) -> Option<(Remembered<S>, Option<usize>)> {
        let mut kept = self.kept.lock().ok()?;
        let from = |r: &Remembered<S>| -> Option<(usize, Option<usize>)> {
            let Remembered { next: r, tail, .. } = r;
            // A Responses body's keys after its history may change
            // between requests where the reader reads nothing (Codex's
            // `client_metadata` names each turn): compared as read, in
            // `past`. Any other body's must be the same bytes.
            let tail_as_read = format == Format::Responses;
            // As long as the earliest place it can be continued from, and
            // its end: a request mended before its end may be shorter than
            // the one it continues (a result cut to "result missing").
            let earliest = r.back.first().map_or(r.end, |b| b.end);
            if r.format != format
                || r.detail != detail
                || *r.path != *path
                || bytes.len() < earliest + if tail_as_read { 0 } else { tail.len() }
                || !(tail_as_read || bytes.ends_with(tail))
            {
                return None;
            }
            let shared = shared_len(bytes, &r.prefix);
            if shared == r.prefix.len() {
                return Some((r.end, None));
            }
            let j = r.back.iter().rposition(|b| b.end <= shared)?;
            Some((r.back[j].end, Some(j)))
        };
        let (at, from) = (0..kept.entries.len())
            .filter_map(|i| from(&kept.entries[i]).map(|f| (i, f)))
            .max_by_key(|(_, (end, _))| *end)
            .map(|(i, (_, from))| (i, from))?;
        let taken = kept.entries.remove(at);
        kept.used -= taken.cost;
        Some((taken, from))
    }
}

/// How many bytes `a` and `b` begin with alike: compared a few KiB at a
/// time (as memcmp does), then byte by byte in the block that differs.
fn shared_len(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// `body_prefix`, grown from `earlier` where there is one. `earlier` is a
/// prefix of it: [`Histories::take`] compared the body with it byte for
/// byte (and a boundary only shortens it), and [`Histories::keep`] is
/// given the body that was read. Comparing them again took a second
/// 2 MB memcmp per request.
fn grown(mut earlier: Vec<u8>, body_prefix: &[u8]) -> Vec<u8> {
    match body_prefix.get(earlier.len()..) {
        Some(rest) if !earlier.is_empty() => {
            debug_assert!(body_prefix.starts_with(&earlier), "kept with another body");
            earlier.extend_from_slice(rest);
            earlier
        }
        _ => body_prefix.to_vec(),
    }
}

/// Whether requests of `format` are read past their prefix.
fn remembers(format: Format) -> bool {
    matches!(
        format,
        Format::Openai | Format::Anthropic | Format::Responses | Format::Gemini
    )
}

/// The key of the array a `format` request's history is in.
fn history_key(format: Format) -> &'static str {
    match format {
        Format::Responses => "input",
        Format::Gemini => "contents",
        _ => "messages",
    }
}

/// `bytes`, which continue `earlier` up to its prefix's end (or, `from`,
/// up to its boundary there) and end with its tail, read as the earlier
/// conversation and the elements after.
fn past<S>(earlier: Remembered<S>, from: Option<usize>, bytes: &[u8]) -> Option<ReadPast<S>> {
    let Remembered {
        mut conv,
        state,
        next:
            Next {
                mut prefix,
                mut back,
                format,
                detail,
                path,
                mut end,
                mut messages,
                spent,
            },
        tail,
        ..
    } = earlier;
    if let Some(j) = from {
        let boundary = back.get(j)?.clone();
        boundary.mark.restore(&mut conv);
        back.truncate(j);
        prefix.truncate(boundary.end);
        end = boundary.end;
        messages = boundary.elements;
    }
    let limit = limit_for(bytes.len());
    let left = Cell::new(limit.checked_sub(spent)?);
    // (A conversation's messages are not the array's elements: Chat's
    // system messages are read into its system prompt.) A Responses call
    // joins the message before it: that message is read again, then.
    let mut first_read = conv.messages.len();
    let mut at = end;
    loop {
        at = after_space(bytes, at);
        match bytes.get(at)? {
            b']' => break,
            b',' if messages > 0 => at = after_space(bytes, at + 1),
            _ if messages == 0 => {}
            _ => return None,
        }
        let mut extents = serde_json::Deserializer::from_slice(&bytes[at..])
            .into_iter::<&serde_json::value::RawValue>();
        let raw = extents.next()?.ok()?;
        // An element's slot in its array, charged as reading it whole
        // charges it, and once more to be sure this way never takes a
        // body that way would refuse.
        left.set(left.get().checked_sub(2 * std::mem::size_of::<Value>())?);
        let item = value_spending(raw.get(), &left, limit).ok()?;
        back.push(Boundary {
            end,
            elements: messages,
            mark: Mark::of(&conv),
        });
        if back.len() > BACK {
            back.remove(0);
        }
        let (count, blocks) = (conv.messages.len(), last_blocks(&conv));
        extend(format, &mut conv, messages, item, detail)?;
        if count > 0 && conv.messages.get(count - 1).map(|m| m.content.len()) != blocks {
            first_read = first_read.min(count - 1);
        }
        messages += 1;
        at += extents.byte_offset();
        end = at;
    }
    // The body after the array must be the one remembered, byte for byte
    // (or, for Responses, the same to its reader): nothing but the
    // messages may have changed.
    if bytes[at..] != *tail
        && !(format == Format::Responses && crate::responses::tails_read_alike(&tail, &bytes[at..]))
    {
        return None;
    }
    Some(ReadPast {
        conv,
        state,
        from: first_read,
        next: Next {
            prefix,
            back,
            format,
            detail,
            path,
            end,
            messages,
            spent: limit - left.get(),
        },
    })
}

/// How many blocks `conv`'s last message has.
fn last_blocks(conv: &Conversation) -> Option<usize> {
    conv.messages.last().map(|m| m.content.len())
}

/// `conv` with the message `item`, `messages[i]` of a `format` body.
fn extend(
    format: Format,
    conv: &mut Conversation,
    i: usize,
    item: Value,
    detail: Detail,
) -> Option<()> {
    match format {
        Format::Openai => crate::openai_chat::extend(conv, i, item, detail),
        Format::Anthropic => crate::anthropic::extend(conv, i, item, detail),
        Format::Responses => crate::responses::extend(conv, i, item, detail),
        Format::Gemini => crate::gemini::extend(conv, i, item, detail),
        _ => None,
    }
}

/// Reads `doc`, a `format` request body, as [`crate::read_owned_as`] does
/// (the same conversation: the tests hold it to that), its last four (`BACK`)
/// messages one at a time with a [`Mark`] before each, for
/// [`Histories::keep_whole`]: a request that differs from it in those
/// messages is then read from the last one they share. Any other body, or
/// one whose last messages cannot be read so, is read whole, without marks.
pub fn read_whole(
    format: Format,
    mut doc: Value,
    bytes: &[u8],
    detail: Detail,
) -> Result<Whole, crate::ReadError> {
    let source = Source::Provider(format);
    let unmarked = |conv| Whole {
        conv,
        format,
        detail,
        marks: Vec::new(),
    };
    let split = match doc.get_mut(history_key(format)) {
        Some(Value::Array(items)) if remembers(format) => {
            let first = items.len().saturating_sub(BACK);
            Some((first, items.split_off(first)))
        }
        _ => None,
    };
    let Some((first, last)) = split else {
        return crate::read_owned_as(doc, source, detail).map(unmarked);
    };
    // Read whole after all, from the body's text: parsed again only when
    // the last messages cannot be read one at a time (a legacy call, a
    // task store's fields, an error), since a copy of every body kept for
    // that took 2.4 ms of a 2 MB one's 9.
    let whole = || {
        let doc = crate::bounded::value_of_slice(bytes)
            .map_err(|e| crate::err(&JsonPath::root(), e.to_string()))?;
        crate::read_owned_as(doc, source, detail).map(unmarked)
    };
    let Ok(mut conv) = crate::read_owned_as(doc, source, detail) else {
        return whole();
    };
    let mut marks = Vec::with_capacity(last.len());
    for (i, item) in (first..).zip(last) {
        marks.push(Mark::of(&conv));
        if extend(format, &mut conv, i, item, detail).is_none() {
            return whole();
        }
    }
    Ok(Whole {
        conv,
        format,
        detail,
        marks,
    })
}

/// Past the JSON whitespace at `at`.
fn after_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// The `]` closing the array whose last element ends at `end`.
fn closing_bracket(bytes: &[u8], end: usize) -> Option<usize> {
    let at = after_space(bytes, end);
    (bytes.get(at) == Some(&b']')).then_some(at)
}

/// Where a body's `messages` array is.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    /// Just past its last element (or past `[` when it has none).
    end: usize,
    /// How many elements it has.
    messages: usize,
    /// Where each element's place begins: just past `[` for the first,
    /// just past the element before for the others.
    before: Vec<usize>,
}

/// The top-level array `key` (`messages`, Responses' `input`, Gemini's
/// `contents`) of `bytes`, a JSON object already parsed whole (so valid
/// JSON: this only finds its way through it). `None` unless the object
/// has exactly one key `key`, written without escapes, holding an array:
/// what serde reads then is that array.
fn layout(bytes: &[u8], key: &str) -> Option<Layout> {
    let mut at = after_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut found = None;
    loop {
        at = after_space(bytes, at);
        match bytes.get(at)? {
            b'}' => break,
            b',' => {
                at = after_space(bytes, at + 1);
            }
            _ => {}
        }
        let key_end = string_end(bytes, at)?;
        let this = &bytes[at + 1..key_end - 1];
        if this.contains(&b'\\') {
            return None;
        }
        at = after_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = after_space(bytes, at + 1);
        if this == key.as_bytes() {
            if found.is_some() || bytes.get(at) != Some(&b'[') {
                return None;
            }
            let (layout, close) = elements(bytes, at)?;
            found = Some(layout);
            at = close + 1;
        } else {
            at = value_end(bytes, at)?;
        }
    }
    found
}

/// The elements of the array opening at `open`, and its closing `]`.
fn elements(bytes: &[u8], open: usize) -> Option<(Layout, usize)> {
    let mut at = open + 1;
    let mut layout = Layout {
        end: at,
        messages: 0,
        before: Vec::new(),
    };
    loop {
        at = after_space(bytes, at);
        match bytes.get(at)? {
            b']' => return Some((layout, at)),
            b',' => at = after_space(bytes, at + 1),
            _ => {}
        }
        layout.before.push(layout.end);
        at = value_end(bytes, at)?;
        layout.end = at;
        layout.messages += 1;
    }
}

/// Just past the string opening at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        match bytes[i] {
            b'\\' => i += 2,
            _ => return Some(i + 1),
        }
    }
}

/// Just past the JSON value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let rest = bytes.get(at..)?;
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            Some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::read_owned_as;
    use loopdbg_engine::message::Block;
    use serde_json::json;

    /// What reading `body` whole gives.
    fn whole(format: Format, body: &[u8]) -> Conversation {
        let doc = crate::bounded::value_of_slice(body).unwrap();
        read_owned_as(doc, Source::Provider(format), Detail::Shape).unwrap()
    }

    /// Remembers `body` read whole, as the gate reads it: the same
    /// conversation as [`crate::read_owned_as`], with marks.
    fn keep_whole(h: &Histories, format: Format, path: &str, body: &[u8]) {
        let (doc, spent) = crate::bounded::value_of_slice_spent(body).unwrap();
        let read = read_whole(format, doc, body, Detail::Shape).unwrap();
        assert_eq!(read.conv, whole(format, body));
        h.keep_whole(path, body, spent, read, ());
    }

    /// Each request of `requests` (one conversation growing) read past
    /// the one before: the same conversation as read whole, every time.
    fn grows_as_read_whole(format: Format, path: &str, requests: &[Vec<u8>]) {
        let h = Histories::new(64 << 20);
        keep_whole(&h, format, path, &requests[0]);
        let mut before = whole(format, &requests[0]);
        for (k, body) in requests.iter().enumerate().skip(1) {
            let read = h
                .read(format, path, body, Detail::Shape)
                .unwrap_or_else(|| panic!("request {k} was not read past its prefix"));
            assert_eq!(read.conv, whole(format, body), "request {k}");
            // What it says was not read again is the earlier request's.
            let same = read.from;
            assert!(same <= before.messages.len(), "request {k}");
            assert_eq!(read.conv.messages[..same], before.messages[..same]);
            before = read.conv.clone();
            h.keep(read, body);
        }
    }

    /// A Chat history, one step of an agent's loop at a time: each
    /// request is the last one's messages and two more.
    fn chat_steps(pretty: bool) -> Vec<Vec<u8>> {
        let mut messages = vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Weather in 北京, hour by hour? [\"x\"] {y}"}),
        ];
        let mut requests = Vec::new();
        let write = |messages: &Vec<Value>| {
            let body = json!({
                "model": "gpt-4o-mini",
                "messages": messages,
                "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
                "stream": true,
            });
            match pretty {
                true => serde_json::to_vec_pretty(&body).unwrap(),
                false => serde_json::to_vec(&body).unwrap(),
            }
        };
        requests.push(write(&messages));
        for k in 0..6 {
            let id = format!("call_{k}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": format!("{{\"hour\": {k}}}")}}
            ]}));
            // Step 3 leaves its call unanswered and step 4 answers an id
            // no call made: the fast way must find what the whole read does.
            if k != 3 {
                let answers = if k == 4 {
                    "call_nobody".to_string()
                } else {
                    id
                };
                messages.push(json!({"role": "tool", "tool_call_id": answers, "content": format!("hour {k}: 18°C \\\"clear\\\"")}));
            }
            if k == 2 {
                messages.push(json!({"role": "system", "content": "Now in Fahrenheit."}));
            }
            requests.push(write(&messages));
        }
        requests
    }

    #[test]
    fn a_chat_history_read_past_its_prefix_is_the_history_read_whole() {
        for pretty in [false, true] {
            grows_as_read_whole(Format::Openai, "/v1/chat/completions", &chat_steps(pretty));
        }
        // A system message among the last ones edited: the request is
        // read from before it, and says the edited prompt.
        let steps = chat_steps(false);
        let text = String::from_utf8(steps[4].clone()).unwrap();
        let edited = text
            .replacen("Now in Fahrenheit.", "Now in Kelvin.", 1)
            .into_bytes();
        grows_as_read_whole(
            Format::Openai,
            "/v1/chat/completions",
            &[steps[3].clone(), edited.clone()],
        );
        assert_eq!(
            whole(Format::Openai, &edited).system.as_deref(),
            Some("Now in Kelvin.")
        );
    }

    #[test]
    fn a_messages_history_read_past_its_prefix_is_the_history_read_whole() {
        let mut messages = vec![json!({"role": "user", "content": [
            {"type": "text", "text": "Rate and weather?", "cache_control": {"type": "ephemeral"}}
        ]})];
        let write = |messages: &Vec<Value>| {
            serde_json::to_vec(&json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "messages": messages,
                "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            }))
            .unwrap()
        };
        let mut requests = vec![write(&messages)];
        for k in 0..5 {
            let id = format!("toolu_{k}");
            messages.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("step {k}")},
                {"type": "tool_use", "id": id, "name": "get_weather", "input": {"k": k}},
                {"type": "server_tool_use", "id": format!("srvtoolu_{k}"), "name": "web_search", "input": {}}
            ]}));
            let mut results = vec![
                json!({"type": "tool_result", "tool_use_id": id, "content": "sunny", "cache_control": {"type": "ephemeral"}}),
            ];
            if k == 2 {
                // An empty text block and a second result for the same id.
                results.push(json!({"type": "text", "text": ""}));
                results.push(json!({"type": "tool_result", "tool_use_id": id, "content": "again"}));
            }
            messages.push(json!({"role": "user", "content": results}));
            if k == 3 {
                messages.push(json!({"role": "assistant", "content": []}));
            }
            requests.push(write(&messages));
        }
        grows_as_read_whole(Format::Anthropic, "/v1/messages", &requests);
        // The breakpoints are counted over the whole body, as read whole.
        let last = whole(Format::Anthropic, requests.last().unwrap());
        assert_eq!(last.cache_breakpoints, Some(2 + 5));
    }

    #[test]
    fn a_request_that_changed_before_the_new_messages_is_read_whole() {
        let requests = chat_steps(false);
        let path = "/v1/chat/completions";
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        // A message further back than the last few edited (requests[4]
        // holds eleven messages; the first is edited).
        let h = Histories::new(64 << 20);
        keep_whole(&h, Format::Openai, path, &requests[4]);
        let edited = text(&requests[5]).replacen("Be brief.", "Be terse.", 1);
        assert!(
            h.read(Format::Openai, path, edited.as_bytes(), Detail::Shape)
                .is_none()
        );
        let changed = [
            // Something after the messages changed.
            text(&requests[2]).replacen("\"stream\":true", "\"stream\":false", 1),
            // The keys in another order.
            {
                let moved = text(&requests[2]).replacen("{\"model\":\"gpt-4o-mini\",", "{", 1);
                format!("{},\"model\":\"gpt-4o-mini\"}}", &moved[..moved.len() - 1])
            },
        ];
        for (k, body) in changed.iter().enumerate() {
            let h = Histories::new(64 << 20);
            keep_whole(&h, Format::Openai, path, &requests[1]);
            assert!(
                h.read(Format::Openai, path, body.as_bytes(), Detail::Shape)
                    .is_none(),
                "change {k}"
            );
        }
        // Another path, another format: not the same conversation.
        let h = Histories::new(64 << 20);
        keep_whole(&h, Format::Openai, path, &requests[1]);
        assert!(
            h.read(
                Format::Openai,
                "/openai/v1/chat/completions",
                &requests[2],
                Detail::Shape
            )
            .is_none()
        );
        assert!(
            h.read(Format::Anthropic, path, &requests[2], Detail::Shape)
                .is_none()
        );
        // A body cut short, or not JSON past the prefix.
        let cut = &requests[2][..requests[2].len() - 40];
        assert!(h.read(Format::Openai, path, cut, Detail::Shape).is_none());
        let mut broken = requests[1].clone();
        let end = broken.len()
            - 1
            - text(&requests[1])
                .rfind(']')
                .map_or(0, |at| requests[1].len() - 1 - at);
        broken.splice(end..end, b",{\"role\":".iter().copied());
        assert!(
            h.read(Format::Openai, path, &broken, Detail::Shape)
                .is_none()
        );
        // And still there for the request that does continue it.
        assert!(
            h.read(Format::Openai, path, &requests[2], Detail::Shape)
                .is_some()
        );
    }

    #[test]
    fn a_legacy_function_call_or_a_task_store_is_read_whole() {
        let path = "/v1/chat/completions";
        let legacy = [
            json!({"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}}]}),
            json!({"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "ok"}]}),
        ]
        .map(|b| serde_json::to_vec(&b).unwrap());
        let h = Histories::new(64 << 20);
        keep_whole(&h, Format::Openai, path, &legacy[0]);
        assert!(
            h.read(Format::Openai, path, &legacy[1], Detail::Shape)
                .is_none()
        );
        // A Cline entry (its `ts`) makes the whole body a task store.
        let store = [
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "ok", "ts": 1}]}),
        ]
        .map(|b| serde_json::to_vec(&b).unwrap());
        let h = Histories::new(64 << 20);
        keep_whole(&h, Format::Anthropic, "/v1/messages", &store[0]);
        assert!(
            h.read(Format::Anthropic, "/v1/messages", &store[1], Detail::Shape)
                .is_none()
        );
    }

    /// Claude Code's requests: `cache_control` on the last two messages,
    /// so each request differs from the last two messages before its end;
    /// and an agent that mends its last message after a refusal. Each is
    /// read from the last message it shares with the request before, and
    /// is what reading it whole gives.
    #[test]
    fn a_request_that_differs_in_its_last_messages_is_read_from_the_last_one_shared() {
        let marked = |m: &Value, cached: bool| {
            let mut m = m.clone();
            if let Some(Value::Array(blocks)) = m.get_mut("content")
                && let Some(last) = blocks.last_mut()
            {
                match cached {
                    true => last["cache_control"] = json!({"type": "ephemeral"}),
                    false => drop(last.as_object_mut().map(|o| o.remove("cache_control"))),
                }
            }
            m
        };
        let write = |history: &[Value]| {
            let n = history.len();
            let messages: Vec<Value> = history
                .iter()
                .enumerate()
                .map(|(i, m)| marked(m, i + 2 >= n))
                .collect();
            serde_json::to_vec(&json!({
                "model": "claude-sonnet-4-5",
                "messages": messages,
                "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
                "max_tokens": 32000,
                "stream": true,
            }))
            .unwrap()
        };
        let mut history =
            vec![json!({"role": "user", "content": [{"type": "text", "text": "list the files"}]})];
        let mut requests = vec![write(&history)];
        for k in 0..6 {
            let id = format!("toolu_{k}");
            history.push(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "…", "signature": "sig"},
                {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "ls"}}]}));
            history.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": format!("file{k}")}]}));
            requests.push(write(&history));
        }
        // A refusal mended: the last result's content fixed, sent again.
        let mut mended = history.clone();
        if let Some(last) = mended.last_mut() {
            last["content"][0]["content"] = json!("file5, fixed");
        }
        requests.push(write(&mended));
        grows_as_read_whole(Format::Anthropic, "/v1/messages", &requests);
        // With no marks to go back to (a request read whole by a reader
        // that cannot mark), it is read whole, not wrongly.
        let h = Histories::new(64 << 20);
        let (_, spent) = crate::bounded::value_of_slice_spent(&requests[1]).unwrap();
        let unmarked = Whole {
            conv: whole(Format::Anthropic, &requests[1]),
            format: Format::Anthropic,
            detail: Detail::Shape,
            marks: Vec::new(),
        };
        h.keep_whole("/v1/messages", &requests[1], spent, unmarked, ());
        assert!(
            h.read(
                Format::Anthropic,
                "/v1/messages",
                &requests[2],
                Detail::Shape
            )
            .is_none()
        );
    }

    /// A Codex session as it sends it (Responses, `store: false`: the
    /// whole history as `input` every time, the tools after it):
    /// reasoning items with the calls they came with, calls joining the
    /// assistant's message, outputs; a request ending on a reasoning item
    /// (said to be without its item, and no longer when the next request
    /// brings it); a last output mended and sent again (read from before
    /// it: the call it answers stays joined as it was). Each read past
    /// the one before, as read whole.
    #[test]
    fn a_codex_history_grows_as_read_whole() {
        // Codex names each turn in `client_metadata`, after the input:
        // the body's end differs every time where the reader reads nothing.
        let turn = std::cell::Cell::new(0);
        let write = |input: &[Value]| {
            turn.set(turn.get() + 1);
            serde_json::to_vec(&json!({
                "model": "gpt-5-codex",
                "instructions": "You are Codex.",
                "input": input,
                "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
                "tool_choice": "auto",
                "parallel_tool_calls": true,
                "store": false,
                "stream": true,
                "include": ["reasoning.encrypted_content"],
                "client_metadata": {"turn_id": format!("turn-{}", turn.get())},
            }))
            .unwrap()
        };
        let mut input = vec![
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the test"}]}),
        ];
        let mut requests = vec![write(&input)];
        for k in 0..5 {
            input.push(json!({"type": "reasoning", "id": format!("rs_{k}"), "summary": [], "encrypted_content": "gAAA"}));
            if k == 2 {
                // Sent as it stood, cut after its reasoning.
                requests.push(write(&input));
            }
            input.push(json!({"type": "function_call", "call_id": format!("call_{k}a"), "name": "shell", "arguments": "{\"command\":[\"ls\"]}"}));
            input.push(json!({"type": "custom_tool_call", "call_id": format!("call_{k}b"), "name": "apply_patch", "input": "*** Begin Patch"}));
            input.push(json!({"type": "function_call_output", "call_id": format!("call_{k}a"), "output": format!("file{k}")}));
            input.push(json!({"type": "custom_tool_call_output", "call_id": format!("call_{k}b"), "output": "Done"}));
            requests.push(write(&input));
        }
        // Sent again cut back to the last reasoning item, whose call the
        // request before held: read from before the call, the item's
        // notice (taken back when the call came) is said again; then the
        // history as it was.
        let cut_back = &input[..input.len() - 4];
        assert_eq!(cut_back.last().unwrap()["type"], "reasoning");
        requests.push(write(cut_back));
        requests.push(write(&input));
        input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fixed"}]}));
        input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}));
        requests.push(write(&input));
        input.push(json!({"type": "local_shell_call", "call_id": "call_ls", "status": "completed", "action": {"type": "exec", "command": ["ls"]}}));
        requests.push(write(&input));
        // A call joined to the assistant's turn, then the request sent
        // again with another in its place: read from before it, the turn
        // holds the call it held then and the new one, not the old.
        let mut mended = input.clone();
        mended.push(json!({"type": "function_call", "call_id": "call_y", "name": "shell", "arguments": "{}"}));
        requests.push(write(&mended));
        mended.pop();
        mended.push(json!({"type": "function_call", "call_id": "call_z", "name": "shell", "arguments": "{}"}));
        mended
            .push(json!({"type": "local_shell_call_output", "call_id": "call_ls", "output": "b"}));
        mended.push(json!({"type": "function_call_output", "call_id": "call_z", "output": "c"}));
        requests.push(write(&mended));
        let waiting = |body: &[u8]| -> Vec<Vec<String>> {
            whole(Format::Responses, body)
                .notices
                .into_iter()
                .filter(|n| n.kind == crate::finding::Kind::ReasoningWithoutItem)
                .map(|n| n.ids)
                .collect()
        };
        assert_eq!(waiting(&requests[3]), [["rs_2"]]);
        assert!(waiting(&requests[4]).is_empty());
        assert_eq!(waiting(&requests[7]), [["rs_4"]]);
        assert!(waiting(requests.last().unwrap()).is_empty());
        grows_as_read_whole(Format::Responses, "/v1/responses", &requests);
        // A reference to a stored item sets what the request continues:
        // read whole, not past the prefix.
        let h = Histories::new(64 << 20);
        keep_whole(&h, Format::Responses, "/v1/responses", &requests[1]);
        let mut referencing = input.clone();
        referencing.truncate(7);
        referencing.push(json!({"type": "item_reference", "id": "msg_1"}));
        let referencing = write(&referencing);
        assert!(
            h.read(
                Format::Responses,
                "/v1/responses",
                &referencing,
                Detail::Shape
            )
            .is_none()
        );
        // Nor is one whose end differs in what is read (its tools, what it
        // continues), or is not a Responses body's end.
        let last = requests.last().unwrap();
        for (from, to) in [
            (&b"\"name\":\"shell\""[..], &b"\"name\":\"shel2\""[..]),
            (b"\"store\":false", b"\"previous_response_id\":\"r\""),
            (b"\"store\":false", b"\"contents\":[]"),
        ] {
            let h = Histories::new(64 << 20);
            keep_whole(
                &h,
                Format::Responses,
                "/v1/responses",
                &requests[requests.len() - 2],
            );
            let at = last.windows(from.len()).rposition(|w| w == from).unwrap();
            let changed = [&last[..at], to, &last[at + from.len()..]].concat();
            assert!(
                h.read(Format::Responses, "/v1/responses", &changed, Detail::Shape)
                    .is_none(),
                "{}",
                String::from_utf8_lossy(to)
            );
        }
    }

    /// A Gemini CLI session as it sends it (`contents` first, then its
    /// system instruction, tools and settings, the same every time):
    /// signed and unsigned calls, two parallel calls without ids answered
    /// in two response turns in a row (each response finds its call by
    /// name, past the earlier one's answer), a turn in OpenAI's role
    /// (said, and read as the model's), the last response mended and sent
    /// again. Each read past the one before, as read whole.
    #[test]
    fn a_gemini_cli_history_grows_as_read_whole() {
        let write = |contents: &[Value]| {
            serde_json::to_vec(&json!({
                "contents": contents,
                "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
                "tools": [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}]}],
                "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": true}},
            }))
            .unwrap()
        };
        let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
        let mut contents = vec![json!({"role": "user", "parts": [{"text": "read both files"}]})];
        let mut requests = vec![write(&contents)];
        contents.push(json!({"role": "model", "parts": [
            {"text": "Reading.", "thought": true},
            {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "read_file", "args": {"path": "b"}}}]}));
        requests.push(write(&contents));
        contents.push(json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read_file", "response": {"output": "A"}}}]}));
        requests.push(write(&contents));
        contents.push(json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read_file", "response": {"output": "B"}}}]}));
        requests.push(write(&contents));
        contents.push(json!({"role": "assistant", "parts": [
            {"functionCall": {"id": "call_3", "name": "read_file", "args": {"path": "c"}}}]}));
        contents.push(json!({"role": "user", "parts": [
            {"functionResponse": {"id": "call_3", "name": "read_file", "response": {"error": "no such file"}}}]}));
        requests.push(write(&contents));
        let mut mended = contents.clone();
        if let Some(last) = mended.last_mut() {
            last["parts"][0]["functionResponse"]["response"] = json!({"output": "C"});
        }
        requests.push(write(&mended));
        let last = whole(Format::Gemini, requests.last().unwrap());
        let answered: Vec<String> = last
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(answered, ["read_file#1.1", "read_file#1.2", "call_3"]);
        assert_eq!(last.unsigned, ["call_3"]);
        assert_eq!(last.notices.len(), 1, "{:?}", last.notices);
        grows_as_read_whole(Format::Gemini, path, &requests);
    }

    #[test]
    fn the_messages_array_is_found_only_where_serde_reads_it() {
        let found = |text: &str| layout(text.as_bytes(), "messages");
        let spaced = r#" { "a" : "]\"[" , "messages" : [ ] , "b": [1,{"c":"}"}] } "#;
        assert_eq!(
            found(spaced),
            Some(Layout {
                end: spaced.find("[ ]").unwrap() + 1,
                messages: 0,
                before: Vec::new(),
            })
        );
        let body = r#"{"messages":[{"x":"a\\"},[1,2],"s",3, null],"t":1}"#;
        let at = found(body).unwrap();
        let before: Vec<&str> = at.before.iter().map(|&b| &body[b..b + 2]).collect();
        assert_eq!(before, ["{\"", ",[", ",\"", ",3", ", "]);
        assert_eq!(
            (&body[..at.end], at.messages),
            (r#"{"messages":[{"x":"a\\"},[1,2],"s",3, null"#, 5)
        );
        assert_eq!(found(r#"{"messages":[],"messages":[]}"#), None);
        assert_eq!(found(r#"{"messag\u0065s":[{"role":"user"}]}"#), None);
        assert_eq!(found(r#"{"messages":{"role":"user"}}"#), None);
        assert_eq!(found(r#"[{"role":"user"}]"#), None);
        assert_eq!(found(r#"{"model":"m"}"#), None);
    }

    /// Sessions made at random (a fixed seed) of what agents and people do
    /// between two requests: a turn added, a call left unanswered, an id
    /// answered twice, a message edited near the end or far back, the
    /// cache mark moved, a system message added, a field after the
    /// messages changed, the same request sent again. Every request, in
    /// both formats, reads through the memory as it reads whole; and most
    /// are read the short way, or the test would prove nothing.
    #[test]
    fn random_sessions_read_as_they_read_whole() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for format in [
            Format::Openai,
            Format::Anthropic,
            Format::Responses,
            Format::Gemini,
        ] {
            let path = match format {
                Format::Openai => "/v1/chat/completions",
                Format::Responses => "/v1/responses",
                Format::Gemini => "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                _ => "/v1/messages",
            };
            let (mut short, mut requests) = (0, 0);
            for _session in 0..20 {
                let h = Histories::new(64 << 20);
                let mut messages: Vec<Value> = vec![user(format, "start")];
                let mut max_tokens = 1000;
                for step in 0..25 {
                    match next(10) {
                        0..=3 => {
                            let id = format!("call_{step}");
                            messages.push(call(format, &id));
                            messages.push(result(format, &id, "ok"));
                        }
                        4 => messages.push(call(format, &format!("open_{step}"))),
                        5 => {
                            let id = format!("call_{}", next(step + 1));
                            messages.push(result(format, &id, "again"));
                        }
                        6 => {
                            let at = messages.len() - 1 - next(messages.len().min(6));
                            messages[at] = user(format, &format!("edited {step}"));
                        }
                        7 if format == Format::Openai => {
                            messages
                                .push(json!({"role": "system", "content": format!("rule {step}")}));
                        }
                        7 if format == Format::Responses => messages.push(
                            json!({"type": "message", "role": "developer", "content": format!("rule {step}")}),
                        ),
                        // A reasoning item, the call it came with perhaps
                        // in the next request (Responses).
                        9 if format == Format::Responses => messages
                            .push(json!({"type": "reasoning", "id": format!("rs_{step}"), "summary": []})),
                        7 => messages.push(user(format, "more")),
                        8 => max_tokens += 1,
                        _ => {}
                    }
                    let body = write(format, &messages, max_tokens, next(2) == 0);
                    let read_whole_conv = whole(format, &body);
                    match h.read(format, path, &body, Detail::Shape) {
                        Some(read) => {
                            short += 1;
                            assert_eq!(read.conv, read_whole_conv, "{format:?} step {step}");
                            h.keep(read, &body);
                        }
                        None => keep_whole(&h, format, path, &body),
                    }
                    requests += 1;
                }
            }
            assert!(
                short * 2 > requests,
                "{format:?}: {short} of {requests} read the short way"
            );
        }
    }

    fn user(format: Format, text: &str) -> Value {
        match format {
            Format::Openai => json!({"role": "user", "content": text}),
            Format::Responses => json!({"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": text}]}),
            Format::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
            _ => json!({"role": "user", "content": [{"type": "text", "text": text}]}),
        }
    }

    fn call(format: Format, id: &str) -> Value {
        match format {
            Format::Openai => json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            // Calls in a row join one assistant turn.
            Format::Responses => {
                json!({"type": "function_call", "call_id": id, "name": "f", "arguments": "{}"})
            }
            // Without an id, as Gemini CLI's calls were: named by where
            // they stand, and answered by name.
            Format::Gemini => json!({"role": "model", "parts": [
                {"functionCall": {"name": id, "args": {}}}]}),
            _ => json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "f", "input": {}}]}),
        }
    }

    fn result(format: Format, id: &str, text: &str) -> Value {
        match format {
            Format::Openai => json!({"role": "tool", "tool_call_id": id, "content": text}),
            Format::Responses => {
                json!({"type": "function_call_output", "call_id": id, "output": text})
            }
            Format::Gemini => json!({"role": "user", "parts": [
                {"functionResponse": {"name": id, "response": {"output": text}}}]}),
            _ => json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": text}]}),
        }
    }

    /// The body, its last message's last block marked for the cache when
    /// `mark` (Messages).
    fn write(format: Format, messages: &[Value], max_tokens: u32, mark: bool) -> Vec<u8> {
        let mut messages = messages.to_vec();
        if mark
            && format == Format::Anthropic
            && let Some(last) = messages
                .last_mut()
                .and_then(|m| m["content"].as_array_mut())
                .and_then(|b| b.last_mut())
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        let body = match format {
            Format::Responses => {
                json!({"model": "m", "input": messages, "max_output_tokens": max_tokens})
            }
            Format::Gemini => {
                json!({"contents": messages, "generationConfig": {"maxOutputTokens": max_tokens}})
            }
            _ => json!({"model": "m", "messages": messages, "max_tokens": max_tokens}),
        };
        serde_json::to_vec(&body).unwrap()
    }

    #[test]
    fn busy_conversations_stay_and_idle_ones_make_room() {
        let requests = chat_steps(false);
        let path = "/v1/chat/completions";
        let cost = |k: usize| COST * requests[k].len();
        // Room for two: a third waits, the two kept stay.
        let h = Histories::new(cost(2) + cost(3));
        keep_whole(&h, Format::Openai, path, &requests[1]);
        keep_whole(&h, Format::Openai, path, &requests[2]);
        keep_whole(&h, Format::Openai, path, &requests[3]);
        let kept_messages = |h: &Histories| {
            let kept = h.kept.lock().unwrap();
            assert!(kept.used <= kept.budget);
            kept.entries
                .iter()
                .map(|e| e.next.messages)
                .collect::<Vec<_>>()
        };
        let (one, two) = (
            layout(&requests[1], "messages").unwrap().messages,
            layout(&requests[2], "messages").unwrap().messages,
        );
        assert_eq!(kept_messages(&h), [one, two]);
        // Once the oldest has been idle through two rounds of every one
        // kept, it makes room.
        for _ in 0..4 {
            keep_whole(&h, Format::Openai, "/elsewhere", &requests[0]);
        }
        keep_whole(&h, Format::Openai, path, &requests[3]);
        let three = layout(&requests[3], "messages").unwrap().messages;
        assert!(
            kept_messages(&h).contains(&three),
            "{:?}",
            kept_messages(&h)
        );
        assert!(!kept_messages(&h).contains(&one));
        // Nothing is remembered with no budget.
        let off = Histories::new(0);
        keep_whole(&off, Format::Openai, path, &requests[1]);
        assert!(
            off.read(Format::Openai, path, &requests[2], Detail::Shape)
                .is_none()
        );
    }
}
