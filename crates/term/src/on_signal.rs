//! Temporary files removed when a signal ends the process: a hidden
//! `.loopdbg-*` of up to the size of a handout was left beside the output
//! by Ctrl-C (issue 23, item 5). `loopdbg_io::files` hands each temporary
//! file to the hook [`install_hook`] sets; after removing what is registered the
//! handler ends the process as the signal would have, unless the debugger
//! owns the signals (it restores the terminal first and then leaves as `q`
//! does).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static INSTALLED: Once = Once::new();
static DEBUGGER_OWNS_SIGNALS: AtomicBool = AtomicBool::new(false);

/// Says that the debugger's event loop handles SIGINT, SIGTERM and
/// SIGHUP itself while it runs.
pub fn debugger_owns_signals(owns: bool) {
    DEBUGGER_OWNS_SIGNALS.store(owns, Ordering::SeqCst);
}

/// A path removed if a signal ends the process before this is dropped.
pub struct Removes(PathBuf);

impl Removes {
    /// Registers `path` for removal until the result is dropped.
    pub fn new(path: &Path) -> Removes {
        install();
        if let Ok(mut pending) = PENDING.lock() {
            pending.push(path.to_path_buf());
        }
        Removes(path.to_path_buf())
    }
}

impl Drop for Removes {
    fn drop(&mut self) {
        if let Ok(mut pending) = PENDING.lock()
            && let Some(i) = pending.iter().position(|p| *p == self.0)
        {
            pending.swap_remove(i);
        }
    }
}

#[cfg(unix)]
fn install() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    INSTALLED.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            for signal in signals.forever() {
                if let Ok(pending) = PENDING.lock() {
                    for path in pending.iter() {
                        let _ = std::fs::remove_file(path);
                    }
                }
                if !DEBUGGER_OWNS_SIGNALS.load(Ordering::SeqCst) {
                    // The conventional end: killed by that signal.
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
            }
        });
    });
}

#[cfg(not(unix))]
fn install() {
    INSTALLED.call_once(|| {});
}

/// Registers every temporary file `loopdbg_io::files` writes for removal
/// on a signal.
pub fn install_hook() {
    loopdbg_io::files::on_temp_file(|path| Box::new(Removes::new(path)));
}
