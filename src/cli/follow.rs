//! `loopdbg FILE --follow`: the replay of a file that is still being
//! written (an agent's log, a proxy capture), newer as it grows. Two
//! threads: the watcher reads what was appended and, on a large log,
//! shows its newest part at once; the judge builds the whole picture with
//! its findings and replaces it (on a log of a gigabyte that takes
//! seconds, and a new event waited for it).

use std::path::Path;
use std::process::ExitCode;

use loopdbg_corpus::conversations::Picked;
use loopdbg_corpus::follow::{Change, Followed, Recent, judge_changes};
use loopdbg_engine::LoadError;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::Failure;

/// The picture of conversation `picked` (`None`: the file holds none yet).
fn update_of(
    followed: &mut Followed,
    picked: Result<Option<Picked>, LoadError>,
) -> Result<LiveUpdate, LoadError> {
    let Some(picked) = picked? else {
        return match followed.take_error() {
            Some(e) => Err(e),
            None => Ok(LiveUpdate::no_conversation_yet(followed.origin())),
        };
    };
    let alarm = followed.alarm(&picked);
    let title = format!(
        "follow: conversation {} of {}",
        picked.place.thread + 1,
        picked.place.count
    );
    Ok(LiveUpdate::of(
        &picked.conversation,
        &picked.findings,
        &title,
        alarm,
    ))
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
    // The natural order is follower, then proxy or agent: a file that does
    // not exist yet, or holds no complete line yet, is waited for.
    // Read as it will be followed: a block at a time, a line past the
    // limit skipped, not held.
    let mut tail = loopdbg_io::tail::Tail::at(path, Vec::new());
    let read = tail.refresh(path).map(|_| tail.take_lines());
    let first = match read {
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
            let picked = followed.take_change(bytes, true, which);
            update_of(&mut followed, picked)?
        }
    };
    let alarms = followed.alarms();
    let (updates, feed) = mpsc::unbounded_channel();
    let (changes, judge_feed) = std::sync::mpsc::channel::<Change>();
    let judge_updates = updates.clone();
    let mut skipped = tail.skipped();
    std::thread::spawn(move || {
        judge_changes(
            &mut followed,
            &judge_feed,
            which,
            |followed, picked, change| {
                // A line the readers refuse: keep showing what was read.
                let Ok(mut update) = update_of(followed, picked) else {
                    return true;
                };
                if change.skipped > skipped {
                    skipped = change.skipped;
                    update.alarm.get_or_insert_with(|| skipped_words(skipped));
                }
                update.derive(super::prices::prices());
                let update = Box::new(update);
                let covers = change.covers;
                judge_updates
                    .send(LiveEvent::Judged { update, covers })
                    .is_ok()
            },
        );
    });
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        loopdbg_io::watch::follow(&watched, tail, |tail, from| {
            let lines = tail.take_lines();
            let replaced = from.is_none();
            recent.push(&lines, replaced);
            let covers = recent.sizes().1;
            if let Some((newest, findings)) = recent.preview() {
                // Alarmed now: the whole log's judgement comes seconds later.
                let alarm = alarms.newest(&findings);
                let update = Box::new(LiveUpdate::of(&newest, &findings, &recent.banner(), alarm));
                if updates.send(LiveEvent::Preview { update, covers }).is_err() {
                    return false;
                }
            }
            let skipped = tail.skipped();
            changes
                .send(Change {
                    lines,
                    replaced,
                    covers,
                    skipped,
                })
                .is_ok()
        });
    });
    let app = App::live(
        origin.clone(),
        format!("follow {origin}"),
        first,
        loopdbg_term::theme(),
    );
    super::show_live(app, feed)
}
