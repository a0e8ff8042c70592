//! A file watched as it grows: woken by the file system's notifications
//! (a `notify` watcher on the folder, so a file replaced by rename is
//! seen), with a poll every half second for file systems that send none;
//! each wake reads only what was appended ([`crate::tail`]).

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::tail::{Change, REST, Tail};

/// How long a wait lasts without a notification: the polling fallback.
const POLL: Duration = Duration::from_millis(500);

/// Watches `path` (read so far into `tail`) until `changed` returns
/// false: `changed` gets the tail (every complete line so far, or since
/// it forgot them) and where the new lines start (`None`: the file was
/// replaced, all is new).
/// Blocks; run it on a thread of its own.
pub fn follow(
    path: &Path,
    mut tail: Tail,
    mut changed: impl FnMut(&mut Tail, Option<usize>) -> bool,
) {
    let (wake, woken) = mpsc::channel::<()>();
    // Watch the folder, not the file: a file replaced by rename is a new
    // inode that a watch on the old one would never report.
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let _watcher = watcher(&folder, path, wake);
    loop {
        match woken.recv_timeout(POLL) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(POLL),
        }
        while woken.try_recv().is_ok() {}
        // Only what was appended is read; a file replaced or cut is read
        // again from its start.
        let from = match tail.refresh(path) {
            Ok(Change::Appended { from }) => Some(from),
            Ok(Change::Replaced) => None,
            Ok(Change::Nothing) | Err(_) => continue,
        };
        let started = Instant::now();
        if !changed(&mut tail, from) {
            break;
        }
        std::thread::sleep(started.elapsed() * REST);
    }
}

fn watcher(folder: &Path, file: &Path, wake: mpsc::Sender<()>) -> Option<Box<dyn notify::Watcher>> {
    use notify::{EventKind, RecursiveMode, Watcher};
    let name = file.file_name().map(std::ffi::OsStr::to_os_string);
    // Only changes to the followed file wake the reader: its own reads
    // raise access events, and waking on those kept an idle follower at
    // 80 % of a core (issue 23, item 8).
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else {
            let _ = wake.send(());
            return;
        };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let ours = event.paths.is_empty()
            || event
                .paths
                .iter()
                .any(|p| p.file_name().map(std::ffi::OsStr::to_os_string) == name);
        if ours {
            let _ = wake.send(());
        }
    };
    let mut watcher = notify::recommended_watcher(handler).ok()?;
    watcher.watch(folder, RecursiveMode::NonRecursive).ok()?;
    Some(Box::new(watcher))
}
