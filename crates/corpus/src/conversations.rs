//! Which conversation request *k* belongs to, written once: an agent
//! sends its whole history with each request, so the requests that grow
//! one history are one conversation ([`loopdbg_read::threads`]), and its
//! newest request carries the rest. The debugger, `diff`, `run --export`,
//! `record` and `--follow` all pick a conversation here.
//!
//! Only each conversation's newest request is kept (with the tokens the
//! earlier ones recorded carried over), so a file of many requests costs
//! what its conversations cost.

use loopdbg_judge::check::{Finding, check};
use loopdbg_read::Conversation;
use loopdbg_read::threads::{Prefixes, Threads};

/// The requests of a file, grouped into conversations as they come.
#[derive(Default)]
pub struct Conversations {
    threads: Threads,
    /// Each conversation's newest request.
    newest: Vec<Newest>,
    /// The conversation of the newest request of all.
    latest: Option<usize>,
    /// Requests taken.
    requests: usize,
}

/// A conversation's newest request.
struct Newest {
    /// As the screen shows it (a capture's reply appended).
    shown: Conversation,
    /// As it was sent, when that differs: what is judged, so the calls of
    /// its last reply are the agent's next work, not unanswered.
    sent: Option<Conversation>,
    /// Its 1-based number among all requests.
    request: usize,
}

/// A conversation picked: its newest request and the findings on it.
#[derive(Debug, Clone)]
pub struct Picked {
    /// The request as shown.
    pub conversation: Conversation,
    /// The findings on the request as it was sent.
    pub findings: Vec<Finding>,
    /// Where it stands in its file.
    pub place: Place,
}

/// A conversation taken out unjudged: its newest request as shown, as
/// sent when that differs, and its place.
pub struct Taken {
    /// As shown.
    pub shown: Conversation,
    /// As sent, when that differs.
    pub sent: Option<Conversation>,
    /// Where it stands in its file.
    pub place: Place,
}

/// Where a picked conversation stands among a file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Which conversation (0-based) of how many.
    pub thread: usize,
    /// How many conversations the file holds.
    pub count: usize,
    /// Which request (1-based) of how many.
    pub request: usize,
    /// How many requests the file holds.
    pub requests: usize,
}

impl Place {
    /// The screen's title for it: `replay`, `replay: request 3 of 5, one
    /// conversation`, or `replay: conversation 2 of 3 (request 4 of 7)`.
    pub fn title(&self, prefix: &str) -> String {
        match (self.count, self.requests) {
            (1, 1) => prefix.to_string(),
            (1, _) => format!(
                "{prefix}: request {} of {}, one conversation",
                self.request, self.requests
            ),
            _ => format!(
                "{prefix}: conversation {} of {} (request {} of {})",
                self.thread + 1,
                self.count,
                self.request,
                self.requests
            ),
        }
    }
}

impl Conversations {
    /// Takes the next request: `shown` as the screen shows it, `sent` as
    /// it was sent when that differs.
    pub fn add(&mut self, shown: Conversation, sent: Option<Conversation>) {
        self.requests += 1;
        let prefixes = Prefixes::of_source(shown.source.as_str(), &shown.messages);
        let thread = self.threads.assign(&prefixes);
        let mut newest = Newest {
            shown,
            sent,
            request: self.requests,
        };
        match self.newest.get_mut(thread) {
            Some(slot) => {
                // The earlier request holds the tokens of the trips before
                // this one.
                newest.shown.carry_usage_from(&slot.shown);
                *slot = newest;
            }
            None => self.newest.push(newest),
        }
        self.latest = Some(thread);
    }

    /// How many conversations.
    pub fn count(&self) -> usize {
        self.threads.count()
    }

    /// How many requests.
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// Conversation `which` (1-based; the one of the newest request when
    /// `None`), at its newest request; `None` when there is no such one.
    pub fn pick(&self, which: Option<usize>) -> Option<Picked> {
        let thread = self.thread(which)?;
        let newest = &self.newest[thread];
        Some(Picked {
            conversation: newest.shown.clone(),
            findings: check(newest.sent.as_ref().unwrap_or(&newest.shown)),
            place: self.place(thread, newest),
        })
    }

    /// [`Conversations::pick`], the conversation taken out, not copied
    /// (for a picture built for one use, as `--follow` builds one per change).
    pub fn into_picked(self, which: Option<usize>) -> Option<Picked> {
        let taken = self.take(which)?;
        Some(Picked {
            findings: check(taken.sent.as_ref().unwrap_or(&taken.shown)),
            conversation: taken.shown,
            place: taken.place,
        })
    }

    /// [`Conversations::pick`], taking the conversation out unjudged.
    pub fn take(mut self, which: Option<usize>) -> Option<Taken> {
        let thread = self.thread(which)?;
        let place = self.place(thread, &self.newest[thread]);
        let newest = self.newest.swap_remove(thread);
        Some(Taken {
            shown: newest.shown,
            sent: newest.sent,
            place,
        })
    }

    /// Every conversation at its newest request, in the order each began.
    pub fn into_newest(self) -> Vec<Conversation> {
        self.newest.into_iter().map(|n| n.shown).collect()
    }

    fn thread(&self, which: Option<usize>) -> Option<usize> {
        let thread = match which {
            None => self.latest?,
            Some(n) => n.checked_sub(1)?,
        };
        (thread < self.newest.len()).then_some(thread)
    }

    fn place(&self, thread: usize, newest: &Newest) -> Place {
        Place {
            thread,
            count: self.threads.count(),
            request: newest.request,
            requests: self.requests,
        }
    }
}
