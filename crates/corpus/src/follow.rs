//! What `--follow` has read of a growing file, kept between refreshes so
//! each one parses only what was appended (it parsed the whole file on
//! every change: a 56 MB Claude Code log cost about 200 ms per appended
//! line; issue 23, item 8).
//!
//! JSON Lines of request bodies and proxy captures are one conversation
//! per line: each new line is read once, and the conversations are
//! grouped into threads as they come. An agent log keeps its events and
//! its conversations: new lines are parsed and pushed, and what extends a
//! Claude Code log's live chain is added to its conversation
//! ([`loopdbg_read::Log::grow`]); any other change builds them again from
//! a copy of the events (a walk over what is held, no parsing). A file
//! that is one document, or not yet known, is read whole each time.
//!
//! The judging runs on a thread of its own ([`judge_changes`]), since on a
//! long log it takes seconds; meanwhile the watcher shows a large log's
//! newest part ([`Recent`]).

use std::sync::PoisonError;

use loopdbg_engine::LoadError;
use loopdbg_judge::check::growing::GrowingCheck;
use loopdbg_judge::check::{Finding, Kind};
use loopdbg_read::threads::Prefixes;
use loopdbg_read::{Conversation, Detail, Growing, Grown, Log, Source};

use crate::conversations::{Conversations, Picked, Place};
use crate::open::{GrowingLayout, Replies, conversation_of_line, growing_layout};
use crate::replay::{PREVIEW_BYTES, PREVIEW_FROM, judged_part, mib, newest_of_part};

/// A followed file, read so far.
pub struct Followed {
    origin: String,
    read: Read,
    /// Complete lines taken so far.
    lines: usize,
    /// The first line taken that could not be read.
    error: Option<LoadError>,
    /// The rejections already alarmed, shared with the watcher.
    alarms: Alarms,
    /// The conversation (its place among the file's) whose picture last
    /// held a rejection, which was alarmed: when its picture holds none
    /// any more (the file was repaired), the screen is told.
    standing: Option<usize>,
    /// The text of the lines taken, while the file is read whole each
    /// time (a document, or nothing known yet); once the lines are held
    /// as conversations or events, only a change's own text.
    held: Vec<u8>,
    /// The picture last shown, when it was made for the change (not kept
    /// by a growing log): what a [`Judged`] borrows.
    shown: Option<Picked>,
    /// The conversation last shown (its place among the file's), for what
    /// the next change did to it.
    last_shown: Option<usize>,
}

/// The picture of a followed file's conversation after a change.
pub struct Judged<'a> {
    /// The conversation, as shown.
    pub conversation: &'a Conversation,
    /// The findings on it.
    pub findings: Vec<Finding>,
    /// Where it stands in its file.
    pub place: Place,
    /// What to say now: the alarm on its last finding a provider rejects
    /// that was not alarmed before, if any; or, when the conversation
    /// alarmed on holds no such finding any more (the file was repaired),
    /// that the alarm is resolved ([`RESOLVED`]).
    pub alarm: Option<String>,
    /// What the change did to it, when it is the conversation the last
    /// picture showed: [`Grown::Extended`] when only its messages from
    /// some index on changed (a picture of the last one can be brought up
    /// to it); otherwise [`Grown::Rebuilt`].
    pub grown: Grown,
}

/// How the lines taken so far are held.
enum Read {
    /// Nothing read yet, or a file read whole each time.
    Whole,
    /// One conversation per line; `capture` for a proxy capture, whose
    /// requests are judged as sent.
    Lines {
        conversations: Conversations,
        capture: bool,
    },
    /// An agent log's events and conversations.
    Log(Box<GrowingLog>),
}

/// An agent log followed: its events, its conversations kept as it grows,
/// and how they group.
struct GrowingLog {
    log: Log,
    growing: Option<Growing>,
    grouping: Grouping,
    /// The findings of the conversation last picked (its index), kept as
    /// it grows.
    checked: Option<(usize, GrowingCheck)>,
}

/// How a log's conversations group into conversations of requests, as
/// [`Conversations`] would group them, kept as the last one grows. Each
/// is its own nearly always: then the one picked is shown as it is kept,
/// with no copy and no grouping of every message again.
#[derive(Default)]
struct Grouping {
    /// No conversation is a prefix of a later one: each is its own.
    apart: bool,
    /// The full fingerprint of every conversation but the last.
    earlier: std::collections::HashSet<u64>,
    /// The last one's prefixes.
    last: Prefixes,
}

impl GrowingLog {
    fn conversations(&self) -> &[Conversation] {
        self.growing.as_ref().map_or(&[], Growing::conversations)
    }

    /// Brings the conversations and their grouping up to the events pushed.
    fn grow(&mut self) -> Result<Grown, loopdbg_read::ReadError> {
        let grown = self.log.grow(&mut self.growing)?;
        let convs = self
            .growing
            .as_ref()
            .map_or(&[][..], Growing::conversations);
        self.grouping.update(convs, grown);
        Ok(grown)
    }

    /// Conversation `which` (1-based, kept in range; the newest when
    /// `None`) judged, as [`Conversations`] would pick it.
    fn pick(&mut self, grown: Grown, which: Option<usize>) -> Option<Taken> {
        let convs = self
            .growing
            .as_ref()
            .map_or(&[][..], Growing::conversations);
        if !self.grouping.apart {
            // Some conversation is a later one's history (seldom): grouped
            // as a file of requests is, from copies.
            let mut grouped = Conversations::default();
            for conv in convs {
                grouped.add(conv.clone(), None);
            }
            let which = clamped(&grouped, which);
            return grouped.into_picked(which).map(|p| Taken::Made(Box::new(p)));
        }
        let count = convs.len();
        let at = match which {
            Some(n) => n.clamp(1, count.max(1)) - 1,
            None => count.checked_sub(1)?,
        };
        let conv = convs.get(at)?;
        let grown = match grown {
            Grown::Extended { conversation, .. } if conversation != at => Grown::Unchanged,
            other => other,
        };
        // What changed since the conversation's findings were last made.
        let from = match (grown, &self.checked) {
            (_, Some((checked, _))) if *checked != at => None,
            (Grown::Unchanged, _) => Some(conv.messages.len()),
            (Grown::Extended { from, .. }, _) => Some(from),
            (Grown::Rebuilt, _) => None,
        };
        let (checked, checks) = self
            .checked
            .get_or_insert_with(|| (at, GrowingCheck::default()));
        *checked = at;
        let findings = checks.check(conv, from);
        Some(Taken::Kept {
            findings,
            place: Place {
                thread: at,
                count,
                request: at + 1,
                requests: count,
            },
            grown,
        })
    }
}

impl Grouping {
    /// Brings the grouping up to `convs` after `grown`.
    fn update(&mut self, convs: &[Conversation], grown: Grown) {
        let last = convs.len().wrapping_sub(1);
        match grown {
            Grown::Unchanged => {}
            Grown::Extended { conversation, from } if conversation == last => {
                if self.apart {
                    let conv = &convs[last];
                    self.last.regrow(conv.source.as_str(), &conv.messages, from);
                    // Grown into an earlier conversation's history, it
                    // would be its newest request.
                    self.apart = !self
                        .last
                        .since(from)
                        .iter()
                        .any(|h| self.earlier.contains(h));
                }
            }
            Grown::Extended { .. } | Grown::Rebuilt => *self = Grouping::of(convs),
        }
    }

    fn of(convs: &[Conversation]) -> Grouping {
        let mut grouping = Grouping {
            apart: true,
            ..Grouping::default()
        };
        for conv in convs {
            let prefixes = Prefixes::of_source(conv.source.as_str(), &conv.messages);
            if prefixes
                .since(0)
                .iter()
                .any(|h| grouping.earlier.contains(h))
            {
                grouping.apart = false;
            }
            if let Some(full) = std::mem::take(&mut grouping.last).full() {
                grouping.earlier.insert(full);
            }
            grouping.last = prefixes;
        }
        grouping
    }
}

/// What [`Followed::take`] picked: a conversation kept by a growing log
/// (the one its place names), or one made for the change.
enum Taken {
    Kept {
        findings: Vec<Finding>,
        place: Place,
        grown: Grown,
    },
    Made(Box<Picked>),
}

impl Followed {
    /// The file's name in errors.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// A file named `origin`, nothing read yet.
    pub fn new(origin: &str) -> Followed {
        Followed {
            origin: origin.to_string(),
            read: Read::Whole,
            lines: 0,
            error: None,
            alarms: Alarms::default(),
            standing: None,
            held: Vec::new(),
            shown: None,
            last_shown: None,
        }
    }

    /// Takes a change of the file: `lines`, the complete lines read since
    /// the last change (`replaced`: the file started over, and `lines` is
    /// all of it). Gives conversation `which` (1-based, kept in range; the
    /// newest when `None`) with what to say of it ([`Judged::alarm`]),
    /// or `None` while the file holds none (an error when it holds only
    /// lines that cannot be read). The caller need not keep the file's
    /// text: what is needed of it is kept here.
    pub fn take_change(
        &mut self,
        lines: Vec<u8>,
        replaced: bool,
        which: Option<usize>,
    ) -> Result<Option<Judged<'_>>, LoadError> {
        let from = if replaced {
            self.held.clear();
            None
        } else {
            Some(self.held.len())
        };
        // Moved, not copied, when nothing is held (a log's first gigabyte).
        if self.held.is_empty() {
            self.held = lines;
        } else {
            self.held.extend_from_slice(&lines);
        }
        let held = std::mem::take(&mut self.held);
        let taken = self.take(&held, from, which);
        if !self.holds_what_it_took() {
            self.held = held;
        }
        self.shown = None;
        let Some(taken) = taken? else {
            self.last_shown = None;
            return match self.take_error() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        };
        let (findings, place, grown) = match taken {
            Taken::Kept {
                findings,
                place,
                grown,
            } => (findings, place, grown),
            Taken::Made(picked) => {
                let taken = (picked.findings.clone(), picked.place, Grown::Rebuilt);
                self.shown = Some(*picked);
                taken
            }
        };
        let alarm = self.alarm(&findings, place.thread);
        // What the change did to the conversation the screen showed.
        let same = self.last_shown.replace(place.thread) == Some(place.thread);
        let grown = if same { grown } else { Grown::Rebuilt };
        let conversation = match (&self.shown, &self.read) {
            (Some(picked), _) => Some(&picked.conversation),
            (None, Read::Log(growing)) => growing.conversations().get(place.thread),
            (None, _) => None,
        };
        // Always one or the other: a picture is kept or made.
        let Some(conversation) = conversation else {
            return Ok(None);
        };
        Ok(Some(Judged {
            conversation,
            findings,
            place,
            alarm,
            grown,
        }))
    }

    /// What to say of a picture of the whole file, conversation `thread`
    /// with `findings`: the alarm on its last finding the provider
    /// rejects that was not alarmed before, if any; or, when the
    /// conversation that held rejections holds none any more (the file was
    /// repaired, `loopdbg doctor --write` say), that the alarm is
    /// resolved, so an alarm said before does not stand over a history
    /// that would now be sent.
    fn alarm(&mut self, findings: &[Finding], thread: usize) -> Option<String> {
        let alarm = self.alarms.newest(findings);
        // A refusal the log records is the past, whatever was repaired
        // since (as for the doctor): what counts is what the next request
        // would carry.
        let blocks = |f: &Finding| f.rejected_by_provider() && f.kind != Kind::RefusedRequest;
        if findings.iter().any(blocks) {
            self.standing = Some(thread);
            return alarm;
        }
        match self.standing {
            Some(was) if was == thread => {
                self.standing = None;
                Some(RESOLVED.to_string())
            }
            _ => alarm,
        }
    }

    /// The rejections alarmed so far, shared: the watcher that judges a
    /// large log's newest part alarms through it too.
    pub fn alarms(&self) -> Alarms {
        self.alarms.clone()
    }

    /// Takes the file's complete lines after a change: `all` is every
    /// complete line so far (once [`Followed::holds_what_it_took`], every
    /// line since the last change will do), of which those from byte
    /// `from` on are new
    /// (`None`: the file was replaced, everything is new). Gives the
    /// conversation `which` (1-based, kept in range; the newest when
    /// `None`), or `None` while the file holds none.
    fn take(
        &mut self,
        all: &[u8],
        from: Option<usize>,
        which: Option<usize>,
    ) -> Result<Option<Taken>, LoadError> {
        let from = match (from, &self.read) {
            (Some(from), Read::Lines { .. } | Read::Log(_)) => from,
            _ => {
                self.read = self.layout_of(all)?;
                self.lines = 0;
                self.error = None;
                0
            }
        };
        let appended = &all[from.min(all.len())..];
        let made = |picked: Option<Picked>| picked.map(|p| Taken::Made(Box::new(p)));
        match &mut self.read {
            Read::Whole => whole(&self.origin, all, which).map(made),
            Read::Lines {
                conversations,
                capture,
            } => {
                let lines = numbered(appended, self.lines);
                self.lines += lines.len();
                for (n, line) in lines {
                    take_line(
                        &self.origin,
                        n,
                        &line,
                        *capture,
                        conversations,
                        &mut self.error,
                    );
                }
                Ok(made(pick(conversations, which)))
            }
            Read::Log(growing) => {
                self.lines = push_log_lines(&mut growing.log, appended, self.lines);
                let grown = growing.grow().map_err(|e| LoadError::Refused {
                    origin: self.origin.clone(),
                    reason: e.to_string(),
                })?;
                Ok(growing.pick(grown, which))
            }
        }
    }

    /// True once the lines taken are held here (parsed), so the caller
    /// need not keep their text: the next change may pass only what was
    /// appended, `from` counting in it. A file read whole each time (one
    /// document, or nothing yet) needs every line each time.
    fn holds_what_it_took(&self) -> bool {
        matches!(self.read, Read::Lines { .. } | Read::Log(_))
    }

    /// How the file is to be read from now on, from its text so far.
    #[allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "the layout was sniffed as a log"
    )]
    fn layout_of(&self, all: &[u8]) -> Result<Read, LoadError> {
        if all.iter().all(u8::is_ascii_whitespace) {
            return Ok(Read::Whole);
        }
        // The first lines tell a log or lines of requests (a gigabyte was
        // copied whole to be told); anything else is told from all of it.
        let layout = match growing_layout(&self.origin, head(all)) {
            Ok(layout @ (GrowingLayout::Log(_) | GrowingLayout::Lines { .. })) => layout,
            _ => growing_layout(&self.origin, all)?,
        };
        Ok(match layout {
            GrowingLayout::Whole => Read::Whole,
            GrowingLayout::Lines { capture } => Read::Lines {
                conversations: Conversations::default(),
                capture,
            },
            GrowingLayout::Log(source) => {
                let mut log = Log::new(source).expect("a log source");
                log.keep(Detail::Full);
                Read::Log(Box::new(GrowingLog {
                    log,
                    growing: None,
                    grouping: Grouping::default(),
                    checked: None,
                }))
            }
        })
    }

    /// The first line taken that could not be read, when no conversation
    /// could be: the error to show instead of an empty screen.
    pub fn take_error(&mut self) -> Option<LoadError> {
        match &self.read {
            Read::Lines { conversations, .. } if conversations.requests() == 0 => self.error.take(),
            _ => None,
        }
    }
}

/// What the screen says when a conversation alarmed on holds nothing a
/// provider would reject any more.
pub const RESOLVED: &str = "resolved: this conversation holds nothing a provider would reject any more (the file changed since the alarm)";

/// The rejections already alarmed, shared by the watcher, which judges a
/// large log's newest part as it comes, and the judge, which judges the
/// whole log seconds later: each is alarmed once, by whichever finds it
/// first. A finding is known by what names it in both pictures: its kind,
/// path, ids and event uuid (its line is counted from the part's start in
/// one of them); by its line when it has no uuid.
#[derive(Clone, Default)]
pub struct Alarms(std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>);

impl Alarms {
    /// The alarm for the last of `findings` the provider rejects that was
    /// not alarmed before, if any.
    pub fn newest(&self, findings: &[Finding]) -> Option<String> {
        let mut alarmed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut newest = None;
        for f in findings.iter().filter(|f| f.rejected_by_provider()) {
            let at = match &f.uuid {
                Some(uuid) => format!("uuid {uuid}"),
                None => format!("line {:?}", f.line),
            };
            let key = format!("{}|{}|{at}|{}", f.kind, f.path, f.ids.join(","));
            if alarmed.insert(key) {
                newest = Some(f);
            }
        }
        newest.map(|f| f.alarm("ALARM"))
    }
}

/// A change of a followed file, as its watcher hands it to the thread
/// that judges it.
#[derive(Debug, Default)]
pub struct Change {
    /// The complete lines read since the last change (all of the file
    /// when `replaced`).
    pub lines: Vec<u8>,
    /// The file started over (replaced, or cut).
    pub replaced: bool,
    /// How many bytes of complete lines the file holds after it.
    pub covers: u64,
    /// How many lines past the longest readable were skipped so far.
    pub skipped: u64,
}

/// What [`judge_changes`]' caller did with a change's picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judging {
    /// Nothing more to judge for (the screen is gone).
    Stop,
    /// Shown; `ahead` of the time since the change was taken went to work
    /// for a later change (a spare picture to grow the next from), which
    /// the rest after this change holds rather than follows.
    Shown {
        /// The time spent ahead.
        ahead: std::time::Duration,
    },
}

impl Change {
    /// `later` taken with this one, as one change.
    fn merge(&mut self, later: Change) {
        if later.replaced {
            *self = later;
            return;
        }
        self.lines.extend_from_slice(&later.lines);
        self.covers = later.covers;
        self.skipped = later.skipped;
    }
}

/// Judges a followed file's changes as they come, until `changes` ends or
/// `judged` says to stop: the changes that arrived while the last was
/// judged are taken at once, and after each but the first (the file as
/// opened) the thread rests a multiple
/// of the time it took ([`loopdbg_io::tail::REST`]), so a busy agent's
/// long log costs a fraction of a core while its newest part is shown
/// at once by the watcher ([`Recent`]). `judged` gets the picture of
/// conversation `which` (see [`Followed::take_change`]) and the change,
/// and answers [`Judging`]. What a change appended to a log's live chain
/// costs what it holds, and so does the rest after it.
pub fn judge_changes(
    followed: &mut Followed,
    changes: &std::sync::mpsc::Receiver<Change>,
    which: Option<usize>,
    mut judged: impl FnMut(Result<Option<Judged<'_>>, LoadError>, &Change) -> Judging,
) {
    // The first change is the file as it was opened (a large log's whole,
    // read after its part was shown): the agent's next event is not
    // made to wait four times that.
    let mut first = true;
    let mut waiting: Option<Change> = None;
    while let Some(mut change) = waiting.take().or_else(|| changes.recv().ok()) {
        while let Ok(later) = changes.try_recv() {
            change.merge(later);
        }
        let started = std::time::Instant::now();
        let lines = std::mem::take(&mut change.lines);
        let picked = followed.take_change(lines, change.replaced, which);
        let ahead = match judged(picked, &change) {
            Judging::Stop => return,
            Judging::Shown { ahead } => ahead,
        };
        if !std::mem::take(&mut first) {
            // Work done ahead is done within the rest, not before it.
            let took = started.elapsed().saturating_sub(ahead);
            let rest = (took * loopdbg_io::tail::REST).saturating_sub(ahead);
            // Changes that come meanwhile wait for the rest's end; a
            // follower that lets the whole go (`--follow-memory`) ends
            // the rest, and the whole is freed at once, not tens of
            // seconds later.
            let until = std::time::Instant::now() + rest;
            loop {
                let left = until.saturating_duration_since(std::time::Instant::now());
                match changes.recv_timeout(left) {
                    Ok(later) => match waiting.as_mut() {
                        Some(change) => change.merge(later),
                        None => waiting = Some(later),
                    },
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }
}

/// The newest part of a followed agent log, kept as text: what the screen
/// shows at once after a change while the whole log is judged again on
/// another thread (on a log of a gigabyte that takes seconds, and a
/// new event waited for it).
pub struct Recent {
    origin: String,
    /// The log's kind, once its first lines said it is a log.
    source: Option<Source>,
    sniffed: bool,
    /// The newest complete lines, at most about [`PREVIEW_BYTES`].
    text: Vec<u8>,
    /// How many bytes of complete lines the file holds.
    size: u64,
    /// From what size a change is shown from the newest part first.
    from: u64,
    /// How much of the newest part is kept.
    keep: u64,
    /// Only the part is held: the whole log is past what the follower
    /// may hold ([`whole_held_up_to`]).
    part_only: bool,
}

/// At most how many bytes of memory a followed log's whole picture takes
/// per byte of log: about 1.7 while it grows, 3.5 at the peak of opening a
/// large one (docs/performance.md, "Memory over a day").
pub const HELD_PER_LOG_BYTE: u64 = 4;

/// The largest log whose whole a follower given `memory` bytes holds
/// (`--follow-memory`); past it, only the newest part is held and shown
/// ([`Recent::hold_part_only`]).
pub fn whole_held_up_to(memory: u64) -> u64 {
    memory / HELD_PER_LOG_BYTE
}

impl Recent {
    /// A followed file named `origin`; a log of [`PREVIEW_FROM`] bytes or
    /// more is previewed from its newest [`PREVIEW_BYTES`].
    pub fn new(origin: &str) -> Recent {
        Recent::with(origin, PREVIEW_FROM, PREVIEW_BYTES)
    }

    /// [`Recent::new`] with its thresholds given (tests use small ones).
    pub fn with(origin: &str, from: u64, keep: u64) -> Recent {
        Recent {
            origin: origin.to_string(),
            source: None,
            sniffed: false,
            text: Vec::new(),
            size: 0,
            from,
            keep,
            part_only: false,
        }
    }

    /// From now on the part is all that is shown, whatever the log's size
    /// (its whole is past what the follower may hold), and the banner
    /// says so.
    pub fn hold_part_only(&mut self) {
        self.part_only = true;
        self.from = 0;
    }

    /// Whether only the part is held ([`Recent::hold_part_only`]).
    pub fn part_only(&self) -> bool {
        self.part_only
    }

    /// Whether the followed file is an agent log, whose newest part can
    /// be shown alone.
    pub fn is_log(&self) -> bool {
        self.source.is_some()
    }

    /// Takes the complete lines read since the last change (`replaced`:
    /// the file started over, and they are all of it).
    pub fn push(&mut self, lines: &[u8], replaced: bool) {
        if replaced {
            let part_only = self.part_only;
            *self = Recent::with(&self.origin, self.from, self.keep);
            self.part_only = part_only;
        }
        self.size += lines.len() as u64;
        if !self.sniffed && !lines.iter().all(u8::is_ascii_whitespace) {
            self.sniffed = true;
            // The first lines decide, as they do for the judge.
            self.source = log_source(&self.origin, head(lines));
        }
        if self.source.is_none() {
            return;
        }
        let keep = usize::try_from(self.keep).unwrap_or(usize::MAX);
        let newest = line_end_after(lines, lines.len().saturating_sub(1))
            - lines[..lines.len().saturating_sub(1)]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |k| k + 1);
        if newest > keep {
            // The newest line alone is longer than the part (a pasted
            // screenshot): it is the part, up to a limit, rather than
            // nothing (the screen waited for the whole log).
            self.text.clear();
            if newest as u64 <= loopdbg_io::lines::MAX_PART_LINE {
                self.text.extend_from_slice(&lines[lines.len() - newest..]);
            }
            return;
        }
        // A byte more than is kept: it says whether the kept part starts
        // a line.
        let lines = &lines[lines.len().saturating_sub(keep.saturating_add(1))..];
        self.text.extend_from_slice(lines);
        if self.text.len() > keep {
            // Cut at a line's start: the part holds whole lines only.
            let cut = line_end_after(&self.text, self.text.len() - keep - 1);
            self.text.drain(..cut);
        }
    }

    /// Reads a large log's part straight from the file at `path`, before
    /// its whole is read: its first lines for its kind, its last
    /// [`PREVIEW_BYTES`] for the part (whole lines only; a half-written
    /// last line waits). True when the file is a log of at least
    /// [`PREVIEW_FROM`] bytes, so that [`Recent::preview`] has a part to
    /// show; false leaves this as it was. The first frame of a followed
    /// gigabyte then costs what its last megabyte costs, where the whole
    /// file was read first (1 GB: 10 s).
    pub fn read_end(&mut self, path: &std::path::Path) -> std::io::Result<bool> {
        use loopdbg_io::lines::read_range;
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() || meta.len() < self.from {
            return Ok(false);
        }
        let within = (DETECTED_WITHIN as u64) * 2;
        let first = read_range(&mut std::fs::File::open(path)?, 0, within.min(meta.len()))?;
        let Some(source) = log_source(&self.origin, whole_lines(&first)) else {
            return Ok(false);
        };
        let mut file = std::fs::File::open(path)?;
        let size = meta.len();
        let limit = loopdbg_io::lines::MAX_PART_LINE;
        // Where the complete lines end: a half-written last line waits.
        // (Unless the file ends with a newline, the last newline is found
        // by reading back from the end as if a line ended past it: the
        // "line" it starts is the half-written one.)
        let end = match read_range(&mut file, size.saturating_sub(1), size)?.as_slice() {
            [b'\n'] => size,
            _ => match loopdbg_io::lines::last_line_start(&mut file, size + 1, limit)? {
                Some(end) => end,
                None => return Ok(false),
            },
        };
        // The newest line whole, however long (up to the limit), and a
        // byte more than is kept, as `push` keeps: it says whether the
        // part starts a line.
        let Some(newest) = loopdbg_io::lines::last_line_start(&mut file, end, limit)? else {
            return Ok(false);
        };
        let window = self.keep.saturating_add(1);
        let last = read_range(&mut file, newest.min(end.saturating_sub(window)), end)?;
        *self = Recent {
            source: Some(source),
            sniffed: true,
            part_only: self.part_only,
            ..Recent::with(&self.origin, self.from, self.keep)
        };
        self.push(&last, false);
        self.size = end;
        Ok(self.size >= self.from)
    }

    /// The newest conversation of the part kept, when the log is large
    /// enough for its whole picture to take a while, with its findings.
    /// `None` for a small log or anything but a log.
    ///
    /// The part is read from its newest conversation's first prompt
    /// ([`newest_of_part`]), so no call and result straddle its start, and
    /// judged when it can be alone ([`judged_part`]). What the provider
    /// rejects is judged within a turn, so the part's rejections are the
    /// whole log's, found in time proportional to the part, not the log;
    /// what it cannot see (an id reused from before it) waits for the
    /// whole log's judgement.
    pub fn preview(&self) -> Option<(Conversation, Vec<Finding>)> {
        let source = self.source?;
        if self.size < self.from {
            return None;
        }
        let newest = newest_of_part(source, &String::from_utf8_lossy(&self.text))?;
        let findings = judged_part(&newest);
        Some((newest, findings))
    }

    /// How many bytes the part holds, and the log.
    pub fn sizes(&self) -> (u64, u64) {
        (self.text.len() as u64, self.size)
    }

    /// What a preview's title says.
    pub fn banner(&self) -> String {
        // What matters first: a narrow header cuts the end.
        if self.part_only {
            return format!(
                "follow: the newest {} of {} only (past --follow-memory, the whole is not held)",
                mib(self.text.len() as u64),
                mib(self.size)
            );
        }
        format!(
            "follow: judging the whole log; its newest {} of {} shown (lines counted from there)",
            mib(self.text.len() as u64),
            mib(self.size)
        )
    }
}

/// How far into a log its kind is sure to be told: detection reads the
/// first lines, not megabytes of them.
const DETECTED_WITHIN: usize = 1 << 20;

/// The kind of log whose first lines are `head`, if they are a log's.
fn log_source(origin: &str, head: &[u8]) -> Option<Source> {
    match growing_layout(origin, head) {
        Ok(GrowingLayout::Log(source)) => Some(source),
        _ => None,
    }
}

/// `text` up to the end of its last complete line.
fn whole_lines(text: &[u8]) -> &[u8] {
    &text[..text.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1)]
}

/// The whole lines of `text` within its first [`DETECTED_WITHIN`] bytes
/// (and the line that crosses it): what tells a log's kind.
fn head(text: &[u8]) -> &[u8] {
    &text[..line_end_after(text, DETECTED_WITHIN)]
}

/// The end of the line that holds byte `at` (past its newline), or the
/// end of `text`.
fn line_end_after(text: &[u8], at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    text[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |k| at + k + 1)
}

/// Conversation `which`, kept in range, or the newest.
fn pick(grouped: &Conversations, which: Option<usize>) -> Option<Picked> {
    grouped.pick(clamped(grouped, which))
}

/// `which` kept among `grouped`'s conversations.
fn clamped(grouped: &Conversations, which: Option<usize>) -> Option<usize> {
    which.map(|n| n.clamp(1, grouped.count().max(1)))
}

/// Reads one new line of a file of one conversation per line.
fn take_line(
    origin: &str,
    n: usize,
    line: &str,
    capture: bool,
    grouped: &mut Conversations,
    error: &mut Option<LoadError>,
) {
    match conversation_of_line(origin, None, n, line, Replies::Appended) {
        Ok(Some(conv)) => {
            let sent = capture
                .then(|| conversation_of_line(origin, None, n, line, Replies::Left))
                .and_then(|sent| sent.ok().flatten());
            grouped.add(conv, sent);
        }
        Ok(None) => {}
        Err(e) => {
            error.get_or_insert(e);
        }
    }
}

/// The lines of `bytes` numbered from `after + 1`, as text; a line that is
/// not UTF-8 is read lossily (the reader then names what it cannot parse).
/// No line is past the limit: the follower's `Tail` skips those.
fn numbered(bytes: &[u8], after: usize) -> Vec<(usize, String)> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| {
            let n = after + i + 1;
            let mut line = line.strip_suffix(b"\n").unwrap_or(line);
            line = line.strip_suffix(b"\r").unwrap_or(line);
            if n == 1 {
                line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
            }
            (n, String::from_utf8_lossy(line).into_owned())
        })
        .collect()
}

/// Pushes the new lines of an agent log; returns how many lines it holds.
fn push_log_lines(log: &mut Log, appended: &[u8], after: usize) -> usize {
    let lines = numbered(appended, after);
    let borrowed: Vec<(usize, &str)> = lines.iter().map(|(n, l)| (*n, l.as_str())).collect();
    // A line an agent half-wrote or wrote wrong is skipped, as agents skip
    // it when they resume; the rest is shown.
    let _ = crate::open::push_lines_on_every_core(log, &borrowed);
    after + lines.len()
}

/// A file read whole, as `check` reads it.
fn whole(origin: &str, all: &[u8], which: Option<usize>) -> Result<Option<Picked>, LoadError> {
    let reader = Box::new(std::io::Cursor::new(all.to_vec()));
    let opened = crate::open::sniff_reader(origin.to_string(), reader, None)?;
    let (grouped, read) = crate::replay::conversations(opened)?;
    match pick(&grouped, which) {
        Some(picked) => Ok(Some(picked)),
        None => match read.errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(None),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_judge::check::check;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../../tests/fixtures/transcripts/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// The file fed one line at a time, as an agent writes it, each change
    /// handed over alone: after each line the follower shows what
    /// reading the file whole shows.
    /// Gives how many changes only extended the conversation shown.
    fn line_by_line_is_whole(name: &str) -> usize {
        let bytes = fixture(name);
        let mut followed = Followed::new(name);
        let mut upto = 0;
        let mut checked = 0;
        let mut extended = 0;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let step = followed.take_change(line.to_vec(), upto == 0, None);
            upto += line.len();
            let all = &bytes[..upto];
            let mut fresh = Followed::new(name);
            let whole = fresh.take_change(all.to_vec(), true, None);
            match (step, whole) {
                (Ok(Some(a)), Ok(Some(b))) => {
                    assert_eq!(a.conversation, b.conversation, "{name} at byte {upto}");
                    assert_eq!(a.findings, b.findings, "{name} at byte {upto}");
                    assert_eq!(a.place, b.place);
                    extended += usize::from(matches!(a.grown, Grown::Extended { .. }));
                    checked += 1;
                }
                // A document half written is refused alike.
                (Ok(None), Ok(None)) | (Err(_), Err(_)) => {}
                (a, b) => panic!(
                    "{name} at byte {upto}: {:?} / {:?}",
                    a.map(|a| a.is_some()),
                    b.map(|b| b.is_some())
                ),
            }
        }
        assert!(checked > 0, "{name}: nothing compared");
        extended
    }

    #[test]
    fn a_file_followed_line_by_line_shows_what_reading_it_whole_shows() {
        line_by_line_is_whole("anthropic_clean.json");
        line_by_line_is_whole("dataset.jsonl");
        line_by_line_is_whole("proxy/openai_sdk_first_only.jsonl");
        // Every agent log: what a Claude Code log's live chain gains is
        // added to the conversation kept, the rest builds it again.
        let mut extended = 0;
        for name in agent_logs() {
            extended += line_by_line_is_whole(&name);
        }
        assert!(extended > 50, "extended {extended} times");
    }

    /// The newest part of a log holds whole lines, at most what it keeps,
    /// however the log arrives; its preview is the newest conversation of
    /// those lines, and only once the log is large enough; a file of
    /// requests is not previewed (each of its changes is read alone).
    #[test]
    fn the_newest_part_of_a_log_is_whole_lines_and_previews_the_newest_conversation() {
        let name = "claude_code_v2/compact_kept_segment.jsonl";
        let bytes = fixture(name);
        let keep = 80_000;
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        // Complete lines, some at a time, as the follower's tail hands them.
        for chunk in [1, 3, 20, lines.len()] {
            let mut recent = Recent::with(name, 20_000, keep as u64);
            let mut replaced = true;
            for group in lines.chunks(chunk) {
                recent.push(&group.concat(), replaced);
                replaced = false;
                let (held, size) = recent.sizes();
                assert!(held <= keep as u64 && held <= size);
            }
            let tail = &bytes[bytes.len() - recent.text.len()..];
            assert_eq!(recent.text, tail, "chunks of {chunk}");
            let before = bytes.len() - recent.text.len();
            assert!(
                before == 0 || bytes[before - 1] == b'\n',
                "a whole line first"
            );
            let longest = bytes.split(|&b| b == b'\n').map(<[u8]>::len).max().unwrap();
            assert!(
                bytes.len() - before <= keep && bytes.len() - before > keep - longest - 1,
                "chunks of {chunk}: {} kept",
                bytes.len() - before
            );
            let (shown, findings) = recent.preview().expect("a log past the threshold");
            let source = loopdbg_read::Source::Agent(loopdbg_read::Agent::ClaudeCode);
            let expected = newest_of_part(source, std::str::from_utf8(tail).unwrap()).unwrap();
            assert_eq!(shown, expected);
            assert_eq!(findings, judged_part(&expected));
            assert_eq!(findings, check(&expected), "a Claude Code part is judged");
            assert!(!shown.messages.is_empty());
            // What a narrow header keeps comes first.
            assert!(
                recent
                    .banner()
                    .starts_with("follow: judging the whole log; its newest ")
            );
        }
        let mut small = Recent::with(name, bytes.len() as u64 + 1, 4096);
        small.push(&bytes, true);
        assert!(
            small.preview().is_none(),
            "a small log is judged whole at once"
        );
        let mut requests = Recent::with("dataset.jsonl", 0, 4096);
        requests.push(&fixture("dataset.jsonl"), true);
        assert!(requests.preview().is_none());
        assert_eq!(requests.sizes().0, 0, "nothing kept of what is not a log");
        assert!(!requests.is_log());
        // Past what the follower may hold (`--follow-memory`): the part is
        // shown whatever the log's size, replaced or not, and the banner
        // says why the whole is not coming.
        let mut capped = Recent::with(name, bytes.len() as u64 + 1, keep as u64);
        capped.hold_part_only();
        capped.push(&bytes, true);
        assert!(capped.is_log() && capped.part_only());
        let (shown, _) = capped.preview().expect("the part, below the threshold");
        assert!(!shown.messages.is_empty());
        let banner = capped.banner();
        assert!(
            banner.starts_with("follow: the newest ")
                && banner.contains(" MiB only (past --follow-memory, the whole is not held)"),
            "{banner}"
        );
        capped.push(&bytes, true);
        assert!(
            capped.part_only(),
            "a replaced file stays followed by its part"
        );
        assert!(capped.preview().is_some());
    }

    #[test]
    fn a_follower_holds_a_log_whole_up_to_a_quarter_of_its_memory() {
        assert_eq!(whole_held_up_to(2048 << 20), 512 << 20);
        assert_eq!(whole_held_up_to(0), 0);
    }

    /// What names a rejection in both pictures (see [`Alarms`]).
    fn rejected(findings: &[Finding]) -> Vec<String> {
        let mut keys: Vec<String> = findings
            .iter()
            .filter(|f| f.rejected_by_provider())
            .map(|f| format!("{}|{}|{:?}|{:?}", f.kind, f.path, f.uuid, f.ids))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Every agent log fixture (Claude Code, Codex, Gemini CLI, Copilot
    /// CLI), its newest part cut at every line: what the part's preview
    /// says the provider rejects, the whole log says too (a cut never
    /// makes a false alarm), and a rejection inside the part's newest turn
    /// is found by the part.
    /// The agent logs among the fixtures: Claude Code, Codex, Gemini CLI,
    /// Copilot CLI.
    fn agent_logs() -> Vec<String> {
        let root = format!(
            "{}/../../tests/fixtures/transcripts",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut names: Vec<String> = Vec::new();
        for dir in [
            "claude_code_v2",
            "codex",
            "gemini_cli",
            "copilot_cli",
            "usage",
        ] {
            let mut here: Vec<String> = std::fs::read_dir(format!("{root}/{dir}"))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.ends_with(".jsonl") && n != "capture.jsonl")
                .map(|n| format!("{dir}/{n}"))
                .collect();
            here.sort();
            names.extend(here);
        }
        names.extend(
            [
                "claude_code_interrupted.jsonl",
                "claude_code_compacted.jsonl",
            ]
            .map(String::from),
        );
        names
    }

    /// A log's part read from the file's end, before the file is read
    /// (the first frame of `--follow`), is the part pushed from the whole
    /// file: the same lines, size and preview, a half-written last line
    /// left for later; a small file or one of requests is not previewed.
    #[test]
    fn a_part_read_from_the_end_is_the_part_of_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut compared = 0;
        for name in agent_logs() {
            let bytes = fixture(&name);
            let path = dir.path().join("log.jsonl");
            let mut written = bytes.clone();
            written.extend_from_slice(br#"{"type":"user","uuid":"half"#);
            std::fs::write(&path, &written).unwrap();
            // 100 bytes: the newest line alone is longer than the part.
            for keep in [100, bytes.len() / 3, bytes.len() / 2, bytes.len()] {
                // As the follower's tail hands them: complete lines (a
                // fixture may end cut, as a log being written does).
                let mut pushed = Recent::with(&name, 0, keep as u64);
                pushed.push(whole_lines(&bytes), true);
                let mut read = Recent::with(&name, 0, keep as u64);
                assert!(read.read_end(&path).unwrap(), "{name}");
                assert_eq!(read.sizes(), pushed.sizes(), "{name}, keeping {keep}");
                assert_eq!(read.text, pushed.text, "{name}, keeping {keep}");
                assert_eq!(read.source, pushed.source, "{name}");
                assert_eq!(read.preview(), pushed.preview(), "{name}, keeping {keep}");
                compared += 1;
            }
            let mut small = Recent::with(&name, written.len() as u64 + 1, 4096);
            assert!(!small.read_end(&path).unwrap(), "{name}: small");
            assert_eq!(small.sizes(), (0, 0), "{name}: left as it was");
        }
        assert!(compared > 40, "{compared}");
        let path = dir.path().join("requests.jsonl");
        std::fs::write(&path, fixture("dataset.jsonl")).unwrap();
        let mut requests = Recent::with("requests.jsonl", 0, 4096);
        assert!(!requests.read_end(&path).unwrap(), "not a log");
        assert!(requests.preview().is_none());
        assert!(
            Recent::new("none")
                .read_end(&dir.path().join("none"))
                .is_err()
        );
    }

    #[test]
    fn a_parts_rejections_are_the_whole_logs() {
        let names = agent_logs();
        let mut logs = 0;
        let mut parts = 0;
        for name in &names {
            let bytes = fixture(name);
            // Every conversation of the log, judged: the part's newest
            // conversation may be any of them.
            let mut judged = Vec::new();
            for which in 1.. {
                let mut fresh = Followed::new(name);
                match fresh.take_change(bytes.clone(), true, Some(which)) {
                    Ok(Some(p)) if p.place.thread + 1 == which => judged.extend(p.findings),
                    _ => break,
                }
            }
            let judged = rejected(&judged);
            logs += 1;
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    bytes
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(k, _)| k + 1),
                )
                .filter(|&k| k < bytes.len())
                .collect();
            for start in starts {
                let mut recent = Recent::with(name, 0, (bytes.len() - start) as u64);
                recent.push(&bytes, true);
                let Some((_, findings)) = recent.preview() else {
                    continue;
                };
                parts += 1;
                for key in rejected(&findings) {
                    // A refusal the log records is the provider's own
                    // answer, true in any part; the whole log tells it as
                    // evidence of the finding that explains it, when the
                    // cut left that finding out of the part.
                    let refusal_explained =
                        key.starts_with("refused_request|") && !judged.is_empty();
                    assert!(
                        judged.contains(&key) || refusal_explained,
                        "{name} from byte {start}: {key} is not the whole log's ({judged:?})"
                    );
                }
            }
        }
        assert!(
            parts > 100 && logs > 20,
            "{parts} parts of {logs} logs judged"
        );
        // A Gemini CLI part from a prompt is judged; cut inside the turn
        // after it (no prompt left in it) it is not, since the cut would
        // read as a call turn with no user turn before it.
        let name = "gemini_cli/session-2026-11-04T10-00-2b7c4e9a.jsonl";
        let bytes = fixture(name);
        let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let third_line = second_line
            + bytes[second_line..]
                .iter()
                .position(|&b| b == b'\n')
                .unwrap()
            + 1;
        for (start, judged) in [(second_line, true), (third_line, false)] {
            let mut recent = Recent::with(name, 0, (bytes.len() - start) as u64);
            recent.push(&bytes, true);
            let (_, findings) = recent.preview().unwrap();
            assert_eq!(!rejected(&findings).is_empty(), judged, "from byte {start}");
        }
        // The interrupted session's unanswered call, in its newest turn,
        // is found by a part that holds that turn.
        let bytes = fixture("claude_code_interrupted.jsonl");
        let mut recent = Recent::with("interrupted", 0, bytes.len() as u64);
        recent.push(&bytes, true);
        let (_, findings) = recent.preview().unwrap();
        assert_eq!(rejected(&findings).len(), 1, "{findings:?}");
    }

    /// One alarm per rejection, whichever picture finds it first: the
    /// part's (lines counted from its start) or the whole log's.
    #[test]
    fn a_rejection_is_alarmed_once_by_the_part_or_the_whole() {
        let bytes = fixture("claude_code_interrupted.jsonl");
        let mut followed = Followed::new("interrupted");
        let watcher = followed.alarms();
        let mut recent = Recent::with("interrupted", 0, bytes.len() as u64);
        recent.push(&bytes, true);
        let (_, findings) = recent.preview().unwrap();
        let alarm = watcher.newest(&findings).expect("the part alarms");
        assert!(
            alarm.starts_with("ALARM: the provider would answer 400"),
            "{alarm}"
        );
        assert_eq!(watcher.newest(&findings), None, "once");
        // The main thread's conversation (the newest is a sub-agent's).
        let picked = followed
            .take_change(bytes.clone(), true, Some(1))
            .unwrap()
            .unwrap();
        assert!(picked.findings.iter().any(Finding::rejected_by_provider));
        assert_eq!(picked.alarm, None, "said by the part already");
        // A follower of its own alarms afresh.
        let mut other = Followed::new("interrupted");
        let picked = other.take_change(bytes, true, Some(1)).unwrap().unwrap();
        assert_eq!(picked.alarm.as_deref(), Some(alarm.as_str()));
    }

    /// The user's sequence: the log breaks (alarm), is repaired in place
    /// (the file replaced: read again from its start), and the screen is
    /// told the alarm is resolved, once; a clean log never says so.
    #[test]
    fn a_repaired_file_resolves_its_alarm_once() {
        let name = "claude_code_v2/doctor_invalid_id.jsonl";
        let broken = fixture(name);
        let mut followed = Followed::new(name);
        let picked = followed
            .take_change(broken.clone(), true, Some(1))
            .unwrap()
            .unwrap();
        let alarm = picked.alarm.expect("the break is alarmed");
        assert!(alarm.starts_with("ALARM"), "{alarm}");
        // The same picture again (a line appended elsewhere): nothing new.
        let picked = followed
            .take_change(broken.clone(), true, Some(1))
            .unwrap()
            .unwrap();
        assert_eq!(picked.alarm, None);
        // Repaired as the doctor repairs it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, &broken).unwrap();
        let mut said = Vec::new();
        let code = crate::doctor::report(std::slice::from_ref(&path), true, true, &mut said);
        assert_eq!(code, 0, "{}", String::from_utf8_lossy(&said));
        let repaired = std::fs::read(&path).unwrap();
        let picked = followed
            .take_change(repaired.clone(), true, Some(1))
            .unwrap()
            .unwrap();
        // The provider's refusal the log recorded stays, as the past.
        let refusals: Vec<bool> = picked
            .findings
            .iter()
            .map(|f| f.kind == Kind::RefusedRequest && f.is_note())
            .collect();
        assert_eq!(refusals, [true]);
        assert_eq!(picked.alarm.as_deref(), Some(RESOLVED));
        let picked = followed
            .take_change(repaired.clone(), true, Some(1))
            .unwrap()
            .unwrap();
        assert_eq!(picked.alarm, None, "said once");
        // A follower started on the repaired file has nothing to alarm on
        // and nothing to resolve.
        let mut fresh = Followed::new(name);
        let picked = fresh.take_change(repaired, true, Some(1)).unwrap().unwrap();
        assert_eq!(picked.alarm, None);
    }

    /// The grouping kept as the last conversation grows says what
    /// [`Conversations`] says: each apart until the last grows into an
    /// earlier one's history.
    #[test]
    fn a_grown_conversation_is_grouped_as_conversations_group_it() {
        let conv = |texts: &[&str]| {
            let messages: Vec<serde_json::Value> = texts
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let role = ["user", "assistant"][k % 2];
                    serde_json::json!({"role": role, "content": t})
                })
                .collect();
            let format = loopdbg_formats::provider::Format::Anthropic;
            loopdbg_read::read(&serde_json::json!(messages), Source::Provider(format)).unwrap()
        };
        let apart = |convs: &[Conversation]| {
            let mut grouped = Conversations::default();
            for c in convs {
                grouped.add(c.clone(), None);
            }
            grouped.count() == convs.len()
        };
        let mut convs = vec![conv(&["a", "b", "c"]), conv(&["a"])];
        let mut grouping = Grouping::of(&convs);
        assert!(grouping.apart && apart(&convs));
        for (texts, from) in [
            (&["a", "x"][..], 1),
            (&["a", "b"][..], 1),
            (&["a", "b", "c", "d"][..], 2),
        ] {
            convs[1] = conv(texts);
            let grown = Grown::Extended {
                conversation: 1,
                from,
            };
            grouping.update(&convs, grown);
            assert_eq!(grouping.apart, apart(&convs), "{texts:?}");
            if !grouping.apart {
                break;
            }
        }
        assert!(!grouping.apart, "grew into the first one's history");
    }

    /// Lines already taken are not read again: a line changed behind the
    /// follower's back (which no appending writer does) is not noticed,
    /// while the appended one is.
    #[test]
    fn only_the_appended_lines_are_read() {
        let bytes = fixture("dataset.jsonl");
        let mut followed = Followed::new("dataset.jsonl");
        let first_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let two = bytes[first_line..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
            + first_line
            + 1;
        followed.take(&bytes[..two], None, None).unwrap().unwrap();
        let mut changed = bytes.clone();
        changed[..first_line - 1].fill(b'x');
        let Some(Taken::Made(picked)) = followed.take(&changed, Some(two), None).unwrap() else {
            panic!("a file of requests makes its picture");
        };
        assert!(
            followed.take_error().is_none(),
            "the old line was read again"
        );
        assert_eq!(picked.place.count, 3, "the appended lines were read");
    }
}
