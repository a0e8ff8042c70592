//! `loopdbg FILE --follow`: the replay of a file that is still being
//! written (an agent's log, a proxy capture), newer as it grows. Two
//! threads: the watcher reads what was appended and, on a large log,
//! shows its newest part at once; the judge builds the whole picture with
//! its findings and replaces it (on a log of a gigabyte that takes
//! seconds, and a new event waited for it).

use std::path::Path;
use std::process::ExitCode;

use loopdbg_corpus::follow::{
    Change, Followed, Judged, Judging, Recent, judge_changes, whole_held_up_to,
};
use loopdbg_engine::LoadError;
use loopdbg_io::tail::Tail;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::Failure;

/// The picture of the conversation `judged` (`None`: the file `origin`
/// holds none yet), its trace grown from one `grower` takes back from the
/// screen when there is one.
fn update_of(
    origin: &str,
    judged: Result<Option<Judged<'_>>, LoadError>,
    grower: Option<&mut Grower>,
) -> Result<LiveUpdate, LoadError> {
    let judged = match judged {
        Ok(Some(judged)) => judged,
        other => {
            // Whatever the screen gives back no longer grows into this.
            if let Some(grower) = grower {
                grower.forget();
            }
            return other.map(|_| LiveUpdate::no_conversation_yet(origin));
        }
    };
    let title = format!(
        "follow: conversation {} of {}",
        judged.place.thread + 1,
        judged.place.count
    );
    let Some(grower) = grower else {
        return Ok(LiveUpdate::of(
            judged.conversation,
            &judged.findings,
            &title,
            judged.alarm,
        ));
    };
    let (trace, token) = grower.trace(&judged);
    let mut update = LiveUpdate::of_trace(judged.conversation, trace, &title, judged.alarm);
    update.token = Some(token);
    Ok(update)
}

/// How many of the pictures sent may still come back to be grown: the one
/// on the screen, those on their way to it, and one held back by a newer
/// part (which frees it).
const GROWN_BACK: usize = 4;

/// The whole pictures sent to the screen, which come back when newer ones
/// take their place: the next is grown from the newest back, by what
/// changed since it was made, instead of built (a replay of a gigabyte's
/// log was built again for each appended event).
struct Grower {
    /// Pictures taken off the screen.
    back: std::sync::mpsc::Receiver<loopdbg_tui::app::Displaced>,
    /// Each picture sent that may come back, by token, oldest first, with
    /// the first message that changed since it was made (`usize::MAX`:
    /// none).
    sent: std::collections::VecDeque<(u64, usize)>,
    next: u64,
    /// How many pictures were grown rather than built.
    grown: u64,
    /// What was derived of the picture the last trace was grown from,
    /// and the first message that changed since: the next derived is
    /// grown from it ([`Grower::derive`]).
    derived_back: Option<(loopdbg_tui::app::DerivedBack, usize)>,
    /// Where the last trace's findings were found: given to the screen
    /// with it, and back.
    placed: Option<loopdbg_export::replay::Placed>,
    /// Whether a spare is made of each picture built: only for a pinned
    /// conversation. The screen gives a picture back when a newer one
    /// takes its place; a followed log's newest part, shown at once for
    /// each change, takes the judged picture down, but no part is shown
    /// for a pinned conversation (the part may not hold it), so its next
    /// picture was built whole (1.6 s on a gigabyte) and the judge rested
    /// four times that: an event in the rest waited 5.8 s, where the ones
    /// after took 40 ms. With a part shown, a spare would only hold the
    /// judge up: an event coming while it is made waits for it.
    spares: bool,
    /// A second picture of the last one built, made after it was sent
    /// ([`Grower::keep_spare`]), with the first message that changed
    /// since.
    spare: Option<Growable>,
    /// The findings of the last trace built, until its spare is made.
    to_spare: Option<Vec<loopdbg_judge::check::Finding>>,
    /// How many pictures were grown from a spare.
    spared: u64,
}

/// A picture to grow from: a trace, what was derived of it, and the first
/// message that changed since it was made.
type Growable = (loopdbg_engine::Trace, loopdbg_tui::app::DerivedBack, usize);

impl Grower {
    /// A grower taking back from `back` the pictures the screen takes
    /// down; `spares`: see [`Grower::spares`].
    fn new(back: std::sync::mpsc::Receiver<loopdbg_tui::app::Displaced>, spares: bool) -> Grower {
        Grower {
            spares,
            back,
            sent: Default::default(),
            next: 0,
            grown: 0,
            derived_back: None,
            placed: None,
            spare: None,
            to_spare: None,
            spared: 0,
        }
    }

    /// Forgets every picture made: none grows into what comes next.
    fn forget(&mut self) {
        self.sent.clear();
        self.spare = None;
        self.to_spare = None;
    }

    /// After the picture of a trace built (not grown) was sent: makes a
    /// second of `conversation` to grow the next from, while the first is
    /// on the screen. It costs what the build cost, once, off the screen's
    /// thread and within the follower's rest; and it holds what the
    /// screen's picture taken back would hold from the next change on.
    fn keep_spare(
        &mut self,
        conversation: &loopdbg_read::Conversation,
        prices: &loopdbg_formats::prices::Prices,
    ) {
        let Some(findings) = self.to_spare.take() else {
            return;
        };
        let (trace, placed) = loopdbg_export::replay::trace_placed(conversation, &findings);
        let mut update = LiveUpdate::of_trace(conversation, trace, "", None);
        update.derive(prices);
        if let Some(derived) = update.derived.as_mut() {
            derived.placed = Some(placed);
        }
        let (trace, back) = update.into_parts();
        self.spare = Some((trace, back, usize::MAX));
    }

    /// The trace of `judged` and its picture's token: a trace back from
    /// the screen grown to it, or one made.
    fn trace(&mut self, judged: &Judged<'_>) -> (loopdbg_engine::Trace, u64) {
        match judged.grown {
            loopdbg_read::Grown::Rebuilt => self.forget(),
            loopdbg_read::Grown::Unchanged => {}
            loopdbg_read::Grown::Extended { from, .. } => {
                let spare = self.spare.as_mut().map(|(_, _, since)| since);
                for since in self.sent.iter_mut().map(|(_, since)| since).chain(spare) {
                    *since = (*since).min(from);
                }
            }
        }
        // The newest of those back; the others are freed here, off the
        // screen's thread.
        let mut newest: Option<(usize, loopdbg_tui::app::Displaced)> = None;
        for back in self.back.try_iter() {
            let at = back
                .token()
                .and_then(|t| self.sent.iter().position(|&(sent, _)| sent == t));
            if let Some(at) = at
                && newest.as_ref().is_none_or(|(was, _)| at > *was)
            {
                newest = Some((at, back));
            }
        }
        self.derived_back = None;
        let back: Option<Growable> = newest
            .and_then(|(at, back)| Some((self.sent.remove(at)?, back)))
            .map(|((_, since), back)| {
                let (trace, derived) = back.into_parts();
                (trace, derived, since)
            });
        // A picture back from the screen is as good, and the spare is
        // freed; with none back, the spare is grown.
        let spare = self.spare.take();
        let from_spare = back.is_none() && spare.is_some();
        let trace = match back.or(spare) {
            Some((mut trace, mut derived, since)) => {
                self.spared += u64::from(from_spare);
                let placed = derived.take_placed();
                self.derived_back = Some((derived, since));
                self.placed = Some(loopdbg_export::replay::regrow_placed(
                    &mut trace,
                    judged.conversation,
                    since,
                    &judged.findings,
                    placed,
                ));
                self.grown += 1;
                trace
            }
            None => {
                let (trace, placed) =
                    loopdbg_export::replay::trace_placed(judged.conversation, &judged.findings);
                self.placed = Some(placed);
                if self.spares {
                    self.to_spare = Some(judged.findings.clone());
                }
                trace
            }
        };
        let token = self.next;
        self.next += 1;
        self.sent.push_back((token, usize::MAX));
        while self.sent.len() > GROWN_BACK {
            self.sent.pop_front();
        }
        (trace, token)
    }

    /// Computes what the screen shows of `update` at its newest step,
    /// grown from what was derived of the picture its trace was grown
    /// from, if it was.
    fn derive(&mut self, update: &mut LiveUpdate, prices: &loopdbg_formats::prices::Prices) {
        update.derive_grown(prices, self.derived_back.take());
        if let Some(derived) = update.derived.as_mut() {
            derived.placed = self.placed.take();
        }
    }
}

/// The picture of a log's newest part ([`Recent::preview`]), judged
/// within it and alarmed at once (the whole log's judgement, when there
/// is one, comes seconds later); `None` when there is no part to show.
fn part_update(recent: &Recent, alarms: &loopdbg_corpus::follow::Alarms) -> Option<LiveUpdate> {
    let (newest, findings) = recent.preview()?;
    let alarm = alarms.newest(&findings);
    Some(LiveUpdate::of(&newest, &findings, &recent.banner(), alarm))
}

/// The first frame of a large log no part stands for.
fn reading(origin: &str, which: Option<usize>, size: u64) -> LiveUpdate {
    let what = match which {
        Some(n) => format!("conversation {n}"),
        None => "the newest conversation".to_string(),
    };
    LiveUpdate::reading(origin, &what, size, &format!("follow: reading {what}")).0
}

/// What the follower says of the lines it left out.
fn skipped_words(count: u64) -> String {
    format!(
        "{count} line(s) longer than {} MiB, the longest line loopdbg reads, were skipped",
        loopdbg_io::tail::MAX_FOLLOWED_LINE >> 20
    )
}

/// Why a log is not held whole: it is past what the follower given
/// `memory` bytes (`--follow-memory`) holds.
fn past_the_cap(memory: u64, size: u64) -> String {
    format!(
        "the log ({}) is past what --follow-memory {} MiB holds whole ({})",
        loopdbg_corpus::replay::mib(size),
        memory >> 20,
        loopdbg_corpus::replay::mib(whole_held_up_to(memory))
    )
}

/// A log past what the follower may hold, opened: followed by its newest
/// part only (`recent`, read from the file's end), nothing else held.
/// What the part cannot see (an id reused from before it) is not judged.
fn follow_part_only(path: &Path, origin: String, mut recent: Recent) -> Result<ExitCode, Failure> {
    let alarms = Followed::new(&origin).alarms();
    let covers = recent.sizes().1;
    let first =
        part_update(&recent, &alarms).unwrap_or_else(|| LiveUpdate::no_conversation_yet(&origin));
    let tail = Tail::after(path, covers);
    let (updates, feed) = mpsc::unbounded_channel();
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        loopdbg_io::watch::follow(&watched, tail, |tail, from| {
            recent.push(&tail.take_lines(), from.is_none());
            let covers = recent.sizes().1;
            let Some(update) = part_update(&recent, &alarms) else {
                return true;
            };
            let update = Box::new(update);
            updates.send(LiveEvent::Preview { update, covers }).is_ok()
        });
    });
    let from = format!("follow {origin}");
    let app = App::live_from_part(origin, from, first, covers, loopdbg_term::theme());
    super::show_live(app, feed)
}

/// `loopdbg FILE --follow`, holding at most about `memory` bytes: a log
/// past [`whole_held_up_to`] it is followed by its newest part only.
pub(super) fn follow(path: &Path, which: Option<usize>, memory: u64) -> Result<ExitCode, Failure> {
    let origin = path.display().to_string();
    let whole_up_to = whole_held_up_to(memory);
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    if size > whole_up_to {
        let mut recent = Recent::new(&origin);
        recent.hold_part_only();
        // Not a log (a proxy capture): held whole, as its memory follows
        // its conversations, not its lines.
        if recent.read_end(path).unwrap_or(false) {
            if let Some(n) = which {
                let why = past_the_cap(memory, size);
                return Err(Failure::from(LoadError::Refused {
                    origin,
                    reason: format!(
                        "conversation {n}: {why}, and a conversation pinned by --conversation is not followed by the log's newest part: raise --follow-memory, or follow the newest without --conversation"
                    ),
                }));
            }
            return follow_part_only(path, origin, recent);
        }
    }
    let mut followed = Followed::new(&origin);
    let mut recent = Recent::new(&origin);
    let alarms = followed.alarms();
    // Read as it will be followed: a block at a time, a line past the
    // limit skipped, not held.
    let mut tail = loopdbg_io::tail::Tail::at(path, Vec::new());
    // A large log opens on its newest part, read from its end; its whole
    // is read and judged on the threads below (a gigabyte was read whole
    // before the first frame: 10 s). Not when a conversation is pinned,
    // which the part may not hold.
    let part = match which {
        None if recent.read_end(path).unwrap_or(false) => part_update(&recent, &alarms),
        _ => None,
    };
    let mut opened_on_part = part.is_some().then(|| recent.sizes().1);
    // No part stands for a pinned conversation (or a part that holds
    // none): a large log's first frame says what is read, and the whole
    // comes as the first change, as after a part.
    let part = part.or_else(|| {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        (size >= loopdbg_corpus::replay::PREVIEW_FROM).then(|| {
            opened_on_part = Some(0);
            reading(&origin, which, size)
        })
    });
    let first = match part {
        Some(part) => part,
        None => opening(path, &mut tail, &mut followed, &mut recent, which)?,
    };
    let (updates, feed) = mpsc::unbounded_channel();
    let (changes, judge_feed) = std::sync::mpsc::channel::<Change>();
    let (recycle, back) = std::sync::mpsc::channel();
    let grower = Grower::new(back, which.is_some());
    spawn_judge(
        followed,
        judge_feed,
        which,
        (updates.clone(), grower),
        &tail,
        opened_on_part.is_some(),
    );
    let watched = path.to_path_buf();
    let mut changes = Some(changes);
    std::thread::spawn(move || {
        let mut changed = |tail: &mut Tail, from: Option<usize>| {
            let lines = tail.take_lines();
            let replaced = from.is_none();
            recent.push(&lines, replaced);
            let covers = recent.sizes().1;
            if !recent.part_only() && recent.is_log() && covers > whole_up_to {
                // Past what may be held: the judge's thread ends and frees
                // the whole; from here on the part is all there is.
                recent.hold_part_only();
                changes = None;
                let why = past_the_cap(memory, covers);
                let said = match which {
                    Some(n) => format!("conversation {n} is no longer followed: {why}"),
                    None => format!("{why}: from here on only its newest part is held and shown"),
                };
                if updates.send(LiveEvent::Notice(said)).is_err() || which.is_some() {
                    return false;
                }
            }
            // The part shows the newest conversation: not one pinned.
            let part = || part_update(&recent, &alarms);
            if let Some(update) = which.is_none().then(part).flatten() {
                let update = Box::new(update);
                if updates.send(LiveEvent::Preview { update, covers }).is_err() {
                    return false;
                }
            }
            let skipped = tail.skipped();
            let change = Change {
                lines,
                replaced,
                covers,
                skipped,
            };
            match &changes {
                Some(changes) => changes.send(change).is_ok(),
                None => true,
            }
        };
        if opened_on_part.is_some() {
            // The whole of a log opened on its part, as its first change.
            if let Err(e) = tail.refresh(&watched) {
                let _ = updates.send(LiveEvent::NotLoaded(e.to_string()));
            } else if !changed(&mut tail, None) {
                return;
            }
        }
        loopdbg_io::watch::follow(&watched, tail, changed);
    });
    let from = format!("follow {origin}");
    let app = match opened_on_part {
        Some(covers) => App::live_from_part(origin, from, first, covers, loopdbg_term::theme()),
        None => App::live(origin, from, first, loopdbg_term::theme()),
    };
    super::show_live_recycling(app, feed, recycle)
}

/// The first picture of a followed file read whole: the file so far, or
/// what the screen waits for. The natural order is follower, then proxy
/// or agent: a file that does not exist yet, or holds no complete line
/// yet, is waited for.
fn opening(
    path: &Path,
    tail: &mut Tail,
    followed: &mut Followed,
    recent: &mut Recent,
    which: Option<usize>,
) -> Result<LiveUpdate, Failure> {
    let origin = followed.origin().to_string();
    let read = tail.refresh(path).map(|_| tail.take_lines());
    Ok(match read {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LiveUpdate::no_file_yet(&origin),
        Err(e) => {
            return Err(Failure::from(LoadError::Unreadable {
                origin,
                reason: e.to_string(),
            }));
        }
        // Only lines past the limit: nothing to show, and why.
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) && tail.skipped() > 0 => {
            return Err(Failure::from(LoadError::Refused {
                origin,
                reason: skipped_words(tail.skipped()),
            }));
        }
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            recent.push(&bytes, true);
            // Blank lines count for the lines' numbers; nothing to show yet.
            let _ = followed.take_change(bytes, true, which);
            LiveUpdate::no_conversation_yet(&origin)
        }
        Ok(bytes) => {
            recent.push(&bytes, true);
            let judged = followed.take_change(bytes, true, which);
            update_of(&origin, judged, None)?
        }
    })
}

/// Starts the thread that judges the followed file's changes and sends
/// their whole pictures to the screen. `on_part`: the screen opened on a
/// part of the file, not judged yet, so a whole that cannot be read is
/// said (later, the last picture judged stays).
fn spawn_judge(
    mut followed: Followed,
    changes: std::sync::mpsc::Receiver<Change>,
    which: Option<usize>,
    (updates, mut grower): (mpsc::UnboundedSender<LiveEvent>, Grower),
    tail: &Tail,
    on_part: bool,
) {
    let mut skipped = tail.skipped();
    std::thread::spawn(move || {
        let mut judged_once = !on_part;
        let origin = followed.origin().to_string();
        let shown = |sent: bool| match sent {
            true => Judging::Shown {
                ahead: std::time::Duration::ZERO,
            },
            false => Judging::Stop,
        };
        judge_changes(&mut followed, &changes, which, |judged, change| {
            let conversation = judged.as_ref().ok().and_then(Option::as_ref);
            let conversation = conversation.map(|judged| judged.conversation);
            // A line the readers refuse: keep showing what was read, and
            // when that is only the opening part, say why.
            let mut update = match update_of(&origin, judged, Some(&mut grower)) {
                Ok(update) => update,
                Err(_) if judged_once => return shown(true),
                Err(e) => return shown(updates.send(LiveEvent::NotLoaded(e.to_string())).is_ok()),
            };
            judged_once = true;
            if change.skipped > skipped {
                skipped = change.skipped;
                update.alarm.get_or_insert_with(|| skipped_words(skipped));
            }
            grower.derive(&mut update, super::prices::prices());
            let update = Box::new(update);
            let covers = change.covers;
            if updates.send(LiveEvent::Judged { update, covers }).is_err() {
                return Judging::Stop;
            }
            let ahead = std::time::Instant::now();
            if let Some(conversation) = conversation {
                grower.keep_spare(conversation, super::prices::prices());
            }
            Judging::Shown {
                ahead: ahead.elapsed(),
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Claude Code log of `turns` turns, each a prompt, two calls
    /// streamed as two events of one reply, their results as two events
    /// (both read into one message, as the two calls are: what an appended
    /// event changes starts before the end) and an answer, every event
    /// chained on the one before.
    fn agent_log(turns: usize) -> Vec<u8> {
        let mut out = String::new();
        let mut parent = "null".to_string();
        let mut event = |uuid: String, kind: &str, message: String| {
            out.push_str(&format!(
                r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"sessionId":"s","timestamp":"2026-12-05T10:00:00.000Z","message":{message}}}"#
            ));
            out.push('\n');
            parent = format!("\"{uuid}\"");
        };
        for t in 0..turns {
            let prompt = format!(r#"{{"role":"user","content":"turn {t}"}}"#);
            event(format!("u{t}"), "user", prompt);
            // Tokens as Claude Code writes them: the same on each event
            // of one reply.
            let usage = format!(
                r#""model":"claude-sonnet-4-5","usage":{{"input_tokens":{},"output_tokens":{},"cache_read_input_tokens":{}}}"#,
                10 + t,
                3 + t % 5,
                100 * t
            );
            for call in ["a", "b"] {
                let reply = format!(
                    r#"{{"id":"m{t}","role":"assistant",{usage},"content":[{{"type":"tool_use","id":"toolu_{call}{t}","name":"ls","input":{{}}}}]}}"#
                );
                event(format!("{call}{t}"), "assistant", reply);
            }
            for call in ["a", "b"] {
                let result = format!(
                    r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{call}{t}","content":"ok"}}]}}"#
                );
                event(format!("r{call}{t}"), "user", result);
            }
            let answer = format!(
                r#"{{"id":"n{t}","role":"assistant",{usage},"content":[{{"type":"text","text":"done"}}]}}"#
            );
            event(format!("d{t}"), "assistant", answer);
        }
        out.into_bytes()
    }

    /// A log followed line by line with the screen between: each picture
    /// the judge sends takes the last one's place, which comes back (some
    /// late, some never), and the next is grown from the newest back. Each
    /// is the replay the judge would have built; so is one grown from a
    /// spare, when the grower makes them.
    #[test]
    fn a_picture_grown_from_one_back_from_the_screen_is_the_one_built() {
        grown_pictures_are_the_ones_built(false);
        grown_pictures_are_the_ones_built(true);
    }

    fn grown_pictures_are_the_ones_built(spares: bool) {
        let name = "session.jsonl";
        let bytes = agent_log(30);
        let mut followed = Followed::new(name);
        let (recycle, back) = std::sync::mpsc::channel();
        let mut grower = Grower::new(back, spares);
        let mut app: Option<App> = None;
        let mut held = Vec::new();
        let prices = loopdbg_formats::prices::Prices::builtin();
        let (mut summed_grown, mut read_grown) = (0, 0);
        for (k, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
            let judged = followed.take_change(line.to_vec(), k == 0, None);
            let Ok(Some(judged)) = judged else {
                continue;
            };
            let want = loopdbg_export::replay::trace_of(judged.conversation, &judged.findings);
            let conversation = judged.conversation;
            let mut update = update_of(name, Ok(Some(judged)), Some(&mut grower)).unwrap();
            assert!(update.trace == want, "line {}", k + 1);
            // What the screen shows at the end, grown as the trace was.
            let mut made = update.clone();
            made.derive(&prices);
            grower.derive(&mut update, &prices);
            let (got, made) = (update.derived.as_ref().unwrap(), made.derived.unwrap());
            assert_eq!(got.analysis, made.analysis, "line {}", k + 1);
            assert_eq!(got.tokens, made.tokens, "line {}", k + 1);
            assert_eq!(got.so_far, made.so_far, "line {}", k + 1);
            summed_grown += usize::from(got.tally.as_ref().is_some_and(|t| t.grown()));
            read_grown += usize::from(got.rounds.as_ref().is_some_and(|t| t.grown()));
            let update = Box::new(update);
            let old = match app.as_mut() {
                None => {
                    app = Some(App::live(name, "follow", *update, loopdbg_term::theme()));
                    None
                }
                Some(app) => app.apply_live_event(LiveEvent::Judged { update, covers: 0 }),
            };
            // As the judge does once the picture is sent.
            grower.keep_spare(conversation, &prices);
            // Every third picture comes back two changes late, every
            // fifth never.
            if let Some(old) = old {
                match k % 5 {
                    0 => drop(old),
                    _ if k % 3 == 0 => held.push(old),
                    _ => recycle.send(old).unwrap(),
                }
            }
            if held.len() > 1 {
                recycle.send(held.remove(0)).unwrap();
            }
        }
        let built = grower.next - grower.grown;
        assert!(
            grower.grown > 5 && built > 1 && (grower.spared > 0) == spares,
            "grown {}, built {built}, from a spare {}",
            grower.grown,
            grower.spared
        );
        // The tokens grew with each trace grown (but before its first trip).
        assert!(
            summed_grown as u64 + 3 >= grower.grown && summed_grown > 5,
            "tokens grown {summed_grown} of {}",
            grower.grown
        );
        assert!(
            read_grown as u64 + 3 >= grower.grown && read_grown > 5,
            "end summary grown {read_grown} of {}",
            grower.grown
        );
    }

    /// A pinned conversation opened and shown whole, then one event
    /// appended, then another: no part is shown for a pinned conversation,
    /// so the screen has given back no picture when the first comes (the
    /// one it opened on is still shown), and the first is grown from the
    /// spare made once the opening picture was sent, not built again; the
    /// second grows from the picture the first displaced. Both are the
    /// pictures built afresh. A replaced file forgets the spare.
    #[test]
    fn a_pinned_conversation_s_first_event_grows_from_the_spare() {
        let name = "session.jsonl";
        let bytes = agent_log(12);
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        let (opening, appended) = lines.split_at(lines.len() - 2);
        let mut followed = Followed::new(name);
        let (recycle, back) = std::sync::mpsc::channel();
        let mut grower = Grower::new(back, true);
        let prices = loopdbg_formats::prices::Prices::builtin();
        let mut judge = |grower: &mut Grower, bytes: Vec<u8>, replaced: bool| {
            let judged = followed
                .take_change(bytes, replaced, Some(0))
                .unwrap()
                .unwrap();
            let want = loopdbg_export::replay::trace_of(judged.conversation, &judged.findings);
            let conversation = judged.conversation;
            let mut update = update_of(name, Ok(Some(judged)), Some(grower)).unwrap();
            assert!(update.trace == want);
            let mut made = update.clone();
            made.derive(&prices);
            grower.derive(&mut update, &prices);
            let (got, made) = (
                update.derived.as_ref().unwrap(),
                made.derived.as_ref().unwrap(),
            );
            assert_eq!(got.analysis, made.analysis);
            assert_eq!(got.tokens, made.tokens);
            assert_eq!(got.so_far, made.so_far);
            grower.keep_spare(conversation, &prices);
            update
        };
        let first = judge(&mut grower, opening.concat(), true);
        assert_eq!((grower.grown, grower.spared), (0, 0));
        assert!(
            grower.spare.is_some(),
            "a spare is made after a picture built"
        );
        // As a large log opens: on its part, which the whole replaces.
        let part = LiveUpdate::no_conversation_yet(name);
        let mut app = App::live(name, "follow", part, loopdbg_term::theme());
        // A picture shown in place of the last, which comes back.
        let mut show = |update: LiveUpdate| {
            let update = Box::new(update);
            let old = app.apply_live_event(LiveEvent::Judged { update, covers: 0 });
            recycle.send(old.unwrap()).unwrap();
        };
        show(first);
        let next = judge(&mut grower, appended[0].to_vec(), false);
        assert_eq!(
            (grower.grown, grower.spared),
            (1, 1),
            "grown from the spare"
        );
        assert!(grower.spare.is_none(), "a grown picture makes no spare");
        show(next);
        let _ = judge(&mut grower, appended[1].to_vec(), false);
        assert_eq!(
            (grower.grown, grower.spared),
            (2, 1),
            "grown from the one back"
        );
        // The file replaced: built again, and a spare of the new one made.
        let _ = judge(&mut grower, opening.concat(), true);
        assert_eq!((grower.grown, grower.spared), (2, 1));
        assert!(grower.spare.is_some());
    }
}
