//! `loopdbg FILE --follow`: the replay of a file that is still being
//! written (an agent's log, a proxy capture), newer as it grows. Two
//! threads: the watcher reads what was appended and, on a large log,
//! shows its newest part at once; the judge builds the whole picture with
//! its findings and replaces it (on a log of a gigabyte that takes
//! seconds, and a new event waited for it).

use std::path::Path;
use std::process::ExitCode;

use loopdbg_corpus::follow::{Change, Followed, Judged, Recent, judge_changes};
use loopdbg_engine::LoadError;
use loopdbg_io::tail::Tail;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::Failure;

/// The picture of the conversation `judged` (`None`: the file `origin`
/// holds none yet).
fn update_of(
    origin: &str,
    judged: Result<Option<Judged<'_>>, LoadError>,
) -> Result<LiveUpdate, LoadError> {
    let Some(judged) = judged? else {
        return Ok(LiveUpdate::no_conversation_yet(origin));
    };
    let title = format!(
        "follow: conversation {} of {}",
        judged.place.thread + 1,
        judged.place.count
    );
    Ok(LiveUpdate::of(
        judged.conversation,
        &judged.findings,
        &title,
        judged.alarm,
    ))
}

/// The picture of a large log's newest part, `newest` judged within it
/// (`findings`), alarmed at once: the whole log's judgement comes seconds
/// later.
fn part_update(
    recent: &Recent,
    newest: &loopdbg_read::Conversation,
    findings: &[loopdbg_judge::check::Finding],
    alarms: &loopdbg_corpus::follow::Alarms,
) -> LiveUpdate {
    let alarm = alarms.newest(findings);
    LiveUpdate::of(newest, findings, &recent.banner(), alarm)
}

/// The first frame of a large log no part stands for.
fn reading(origin: &str, which: Option<usize>, size: u64) -> LiveUpdate {
    let what = match which {
        Some(n) => format!("conversation {n}"),
        None => "the newest conversation".to_string(),
    };
    let mib = size >> 20;
    LiveUpdate::placeholder(
        format!("(reading {what} of {origin} ({mib} MiB): the whole file first; q quits)"),
        &format!("follow: reading {what}"),
    )
}

/// What the follower says of the lines it left out.
fn skipped_words(count: u64) -> String {
    format!(
        "{count} line(s) longer than {} MiB, the longest line loopdbg reads, were skipped",
        loopdbg_io::tail::MAX_FOLLOWED_LINE >> 20
    )
}

/// `loopdbg FILE --follow`.
pub(super) fn follow(path: &Path, which: Option<usize>) -> Result<ExitCode, Failure> {
    let origin = path.display().to_string();
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
        None if recent.read_end(path).unwrap_or(false) => recent
            .preview()
            .map(|(newest, findings)| part_update(&recent, &newest, &findings, &alarms)),
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
    spawn_judge(
        followed,
        judge_feed,
        which,
        updates.clone(),
        &tail,
        opened_on_part.is_some(),
    );
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        let mut changed = |tail: &mut Tail, from: Option<usize>| {
            let lines = tail.take_lines();
            let replaced = from.is_none();
            recent.push(&lines, replaced);
            let covers = recent.sizes().1;
            // The part shows the newest conversation: not one pinned.
            if let Some((newest, findings)) = recent.preview().filter(|_| which.is_none()) {
                let update = Box::new(part_update(&recent, &newest, &findings, &alarms));
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
            changes.send(change).is_ok()
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
    super::show_live(app, feed)
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
            update_of(&origin, judged)?
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
    updates: mpsc::UnboundedSender<LiveEvent>,
    tail: &Tail,
    on_part: bool,
) {
    let mut skipped = tail.skipped();
    std::thread::spawn(move || {
        let mut judged_once = !on_part;
        let origin = followed.origin().to_string();
        judge_changes(&mut followed, &changes, which, |judged, change| {
            // A line the readers refuse: keep showing what was read, and
            // when that is only the opening part, say why.
            let mut update = match update_of(&origin, judged) {
                Ok(update) => update,
                Err(_) if judged_once => return true,
                Err(e) => return updates.send(LiveEvent::NotLoaded(e.to_string())).is_ok(),
            };
            judged_once = true;
            if change.skipped > skipped {
                skipped = change.skipped;
                update.alarm.get_or_insert_with(|| skipped_words(skipped));
            }
            update.derive(super::prices::prices());
            let update = Box::new(update);
            let covers = change.covers;
            updates.send(LiveEvent::Judged { update, covers }).is_ok()
        });
    });
}
