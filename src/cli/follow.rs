//! `loopdbg FILE --follow`: the replay of a file that is still being
//! written (an agent's log, a proxy capture), newer as it grows.

use std::path::Path;
use std::process::ExitCode;

use loopdbg_corpus::follow::Followed;
use loopdbg_tui::App;
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use tokio::sync::mpsc;

use super::{Failure, terminal};

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

/// The file's bytes up to its last newline: a half-written last line waits
/// for its end.
fn complete_lines(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(end);
    Ok(bytes)
}

/// `loopdbg FILE --follow`.
pub(super) fn follow(path: &Path, which: Option<usize>) -> Result<ExitCode, Failure> {
    let origin = path.display().to_string();
    let mut followed = Followed::new(&origin);
    // The natural order is follower, then proxy or agent: a file that does
    // not exist yet, or holds no complete line yet, is waited for.
    let (bytes, first) = match complete_lines(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (Vec::new(), LiveUpdate::no_file_yet(&origin))
        }
        Err(e) => {
            return Err(Failure::from(loopdbg_engine::LoadError::Unreadable {
                origin,
                reason: e.to_string(),
            }));
        }
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            (bytes, LiveUpdate::no_conversation_yet(&origin))
        }
        Ok(bytes) => {
            let first = update_of_file(&mut followed, &bytes, None, which)?;
            (bytes, first)
        }
    };
    let (updates, feed) = mpsc::unbounded_channel();
    let watched = path.to_path_buf();
    std::thread::spawn(move || {
        loopdbg_io::watch::follow(&watched, bytes, |all, from| {
            match update_of_file(&mut followed, all, from, which) {
                Ok(update) => updates.send(LiveEvent::Update(Box::new(update))).is_ok(),
                // A line the readers refuse: keep showing what was read.
                Err(_) => true,
            }
        });
    });
    let app = App::live(
        origin.clone(),
        format!("follow {origin}"),
        first,
        terminal::theme(),
    );
    terminal::run_live(app, feed)
}
