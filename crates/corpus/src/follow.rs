//! What `--follow` has read of a growing file, kept between refreshes so
//! each one parses only what was appended (it parsed the whole file on
//! every change: a 56 MB Claude Code log cost about 200 ms per appended
//! line; issue 23, item 8).
//!
//! JSON Lines of request bodies and proxy captures are one conversation
//! per line: each new line is read once, and the conversations are
//! grouped into threads as they come. An agent log keeps its events: new
//! lines are parsed and pushed, and the conversations are built from a
//! copy of the events (a walk over what is held, no parsing). A file that
//! is one document, or not yet known, is read whole each time, as before.

use loopdbg_engine::LoadError;
use loopdbg_read::{Detail, Log};

use crate::conversations::{Conversations, Picked};
use crate::open::{GrowingLayout, Replies, conversation_of_line, growing_layout};

/// A followed file, read so far.
pub struct Followed {
    origin: String,
    read: Read,
    /// Complete lines taken so far.
    lines: usize,
    /// The first line taken that could not be read.
    error: Option<LoadError>,
    /// The rejections already alarmed (kind, path, line, ids).
    alarmed: std::collections::HashSet<String>,
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
    /// An agent log's events.
    Log(Box<Log>),
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
            alarmed: Default::default(),
        }
    }

    /// The alarm for `picked`: its last finding the provider rejects that
    /// was not alarmed before, if any.
    pub fn alarm(&mut self, picked: &Picked) -> Option<String> {
        let mut newest = None;
        for f in picked.findings.iter().filter(|f| f.rejected_by_provider()) {
            let key = format!("{}|{}|{:?}|{}", f.kind, f.path, f.line, f.ids.join(","));
            if self.alarmed.insert(key) {
                newest = Some(f);
            }
        }
        newest.map(|f| f.alarm("ALARM"))
    }

    /// Takes the file's complete lines after a change: `all` is every
    /// complete line so far, of which those from byte `from` on are new
    /// (`None`: the file was replaced, everything is new). Gives the
    /// conversation `which` (1-based, kept in range; the newest when
    /// `None`), or `None` while the file holds none.
    pub fn take(
        &mut self,
        all: &[u8],
        from: Option<usize>,
        which: Option<usize>,
    ) -> Result<Option<Picked>, LoadError> {
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
        let grouped = match &mut self.read {
            Read::Whole => return whole(&self.origin, all, which),
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
                return Ok(pick(conversations, which));
            }
            Read::Log(log) => {
                self.lines = push_log_lines(log, appended, self.lines);
                // A copy: building the conversations moves the blocks out of
                // the events, and the next change builds them again.
                let convs = (**log).clone().finish().map_err(|e| LoadError::Refused {
                    origin: self.origin.clone(),
                    reason: e.to_string(),
                })?;
                let mut grouped = Conversations::default();
                for conv in convs {
                    grouped.add(conv, None);
                }
                grouped
            }
        };
        // Built for this change alone: the conversation is taken, not copied.
        let which = clamped(&grouped, which);
        Ok(grouped.into_picked(which))
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
        Ok(match growing_layout(&self.origin, all)? {
            GrowingLayout::Whole => Read::Whole,
            GrowingLayout::Lines { capture } => Read::Lines {
                conversations: Conversations::default(),
                capture,
            },
            GrowingLayout::Log(source) => {
                let mut log = Log::new(source).expect("a log source");
                log.keep(Detail::Full);
                Read::Log(Box::new(log))
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

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../../tests/fixtures/transcripts/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// The file fed one line at a time, as an agent writes it: after each
    /// line the follower shows what reading the file whole shows.
    fn line_by_line_is_whole(name: &str) {
        let bytes = fixture(name);
        let mut followed = Followed::new(name);
        let mut upto = 0;
        let mut checked = 0;
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let from = upto;
            upto += line.len();
            let all = &bytes[..upto];
            let step = followed
                .take(all, (from > 0).then_some(from), None)
                .unwrap();
            let mut fresh = Followed::new(name);
            let whole = fresh.take(all, None, None).unwrap();
            match (step, whole) {
                (Some(a), Some(b)) => {
                    assert_eq!(a.conversation, b.conversation, "{name} at byte {upto}");
                    assert_eq!(a.findings, b.findings, "{name} at byte {upto}");
                    assert_eq!(a.place, b.place);
                    checked += 1;
                }
                (None, None) => {}
                (a, b) => panic!(
                    "{name} at byte {upto}: {:?} / {:?}",
                    a.is_some(),
                    b.is_some()
                ),
            }
        }
        assert!(checked > 0, "{name}: nothing compared");
    }

    #[test]
    fn a_file_followed_line_by_line_shows_what_reading_it_whole_shows() {
        line_by_line_is_whole("claude_code_v2/parallel.jsonl");
        line_by_line_is_whole("claude_code_v2/compact.jsonl");
        line_by_line_is_whole("dataset.jsonl");
        line_by_line_is_whole("proxy/openai_sdk_first_only.jsonl");
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
        let picked = followed.take(&changed, Some(two), None).unwrap().unwrap();
        assert!(
            followed.take_error().is_none(),
            "the old line was read again"
        );
        assert_eq!(picked.place.count, 3, "the appended lines were read");
    }
}
