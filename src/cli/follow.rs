//! `loopdbg FILE --follow`: the replay of a file that is still being
//! written (an agent's log, a proxy capture), newer as it grows.

use std::path::Path;
use std::process::ExitCode;

use loopdbg_corpus::follow::Followed;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::Failure;

/// The picture of a followed file after a change: `all` is every complete
/// line so far, those from byte `from` on new (`None`: all of it), and
/// conversation `which` (default: the newest) is replayed.
fn update_of_file(
    followed: &mut Followed,
    all: &[u8],
    from: Option<usize>,
    which: Option<usize>,
) -> Result<LiveUpdate, loopdbg_engine::LoadError> {
    let Some(picked) = followed.take(all, from, which)? else {
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
    // The natural order is follower, then proxy or agent: a file that does
    // not exist yet, or holds no complete line yet, is waited for.
    // Read as it will be followed: a block at a time, a line past the
    // limit skipped, not held.
    let mut tail = loopdbg_io::tail::Tail::at(path, Vec::new());
    let read = tail.refresh(path).map(|_| tail.lines());
    let first = match read {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LiveUpdate::no_file_yet(&origin),
        Err(e) => {
            return Err(Failure::from(loopdbg_engine::LoadError::Unreadable {
                origin,
                reason: e.to_string(),
            }));
        }
        // Only lines past the limit: nothing to show, and why.
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) && tail.skipped() > 0 => {
            return Err(Failure::from(loopdbg_engine::LoadError::Refused {
                origin,
                reason: skipped_words(tail.skipped()),
            }));
        }
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            LiveUpdate::no_conversation_yet(&origin)
        }
        Ok(bytes) => update_of_file(&mut followed, bytes, None, which)?,
    };
    let (updates, feed) = mpsc::unbounded_channel();
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        let mut skipped = tail.skipped();
        loopdbg_io::watch::follow(&watched, tail, |tail, from| {
            match update_of_file(&mut followed, tail.lines(), from, which) {
                Ok(mut update) => {
                    if tail.skipped() > skipped {
                        skipped = tail.skipped();
                        update.alarm.get_or_insert_with(|| skipped_words(skipped));
                    }
                    updates.send(LiveEvent::Update(Box::new(update))).is_ok()
                }
                // A line the readers refuse: keep showing what was read.
                Err(_) => true,
            }
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
