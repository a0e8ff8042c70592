//! What `doctor --scan` said of each session file, kept between runs so a
//! second scan of years of sessions reads only what changed.
//!
//! A session's verdict is a function of its bytes (and the agent whose
//! store it is in) and of the loopdbg that judged it. So an entry is
//! trusted only when the file's stamp is the one it had when it was read
//! (size, modification and status-change times to the nanosecond, inode),
//! and the whole cache only when it was written by this very executable
//! (its size and modification time: a rebuild with new rules starts
//! afresh). A database's sessions (rows) share the database's stamp
//! ([`Stamp::of_database`]). A file whose stamp changed while it was read, or that was
//! modified within [`RACY`] of the scan's start (a write in the same
//! clock tick would keep its stamp), is judged again next time. The cache
//! lives where the platform keeps caches (`$XDG_CACHE_HOME/loopdbg`, else
//! `~/.cache/loopdbg`; `~/Library/Caches/loopdbg` on macOS,
//! `%LOCALAPPDATA%\loopdbg` on Windows) and is rewritten whole, through a
//! temporary file and a rename, so a scan stopped half-way leaves the old
//! one. It holds what the report says (paths, the provider's words, the
//! resume command), never a session's text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::stores::Agent;

/// How recent a modification may be, before the scan started, for its
/// verdict to be kept: file systems with coarse clocks (FAT's 2 s) could
/// see a second write within the same tick keep the stamp.
pub const RACY: Duration = Duration::from_secs(2);

/// What a file's stamp is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
}

impl Stamp {
    /// The stamp of the file at `path` as it is now (links followed, as
    /// the doctor reads it), or `None` when it cannot be had.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        let modified_ns = ns_since_epoch(meta.modified().ok()?);
        #[cfg(unix)]
        let (changed_ns, inode) = {
            use std::os::unix::fs::MetadataExt;
            (
                i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
                meta.ino(),
            )
        };
        #[cfg(not(unix))]
        let (changed_ns, inode) = (meta.created().map_or(0, ns_since_epoch), 0);
        Some(Stamp {
            len: meta.len(),
            modified_ns,
            changed_ns,
            inode,
        })
    }

    /// The stamp of a SQLite database (opencode's, Crush's) with its
    /// write-ahead log: a write lands in `-wal` and reaches the main file
    /// only at a checkpoint, so either changing is the database changing.
    /// Every session in it shares this stamp: a database that changed is
    /// judged again whole, as nothing finer says which session a write
    /// touched.
    pub fn of_database(db: &Path) -> Option<Stamp> {
        let main = Stamp::of(db)?;
        let mut wal = db.as_os_str().to_os_string();
        wal.push("-wal");
        let Some(wal) = Stamp::of(Path::new(&wal)) else {
            return Some(main);
        };
        // Not the log's status-change time: SQLite truncates an empty log
        // each time a reader opens the database, even read-only (the scan
        // itself), which changes it; a write changes the log's size or
        // modification time.
        Some(Stamp {
            len: main.len.wrapping_add(wal.len),
            modified_ns: main.modified_ns.max(wal.modified_ns),
            changed_ns: main.changed_ns,
            inode: main.inode ^ wal.inode.rotate_left(32),
        })
    }

    /// The file's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.len
    }

    fn modified(&self) -> i128 {
        self.modified_ns
    }
}

fn ns_since_epoch(t: SystemTime) -> i128 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// One file's entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry<T> {
    agent: Agent,
    stamp: Stamp,
    /// What the scan said: `None` when the session is clean.
    said: Option<T>,
}

/// The cache file as written.
#[derive(Debug, Serialize, Deserialize)]
struct Stored<T> {
    /// The executable that judged: its path's stamp.
    judge: Option<Stamp>,
    files: HashMap<PathBuf, Entry<T>>,
}

/// The verdicts (`T`: what the scan says of a session that is not clean)
/// of the last scan, and this scan's, to be written.
#[derive(Debug)]
pub struct ScanCache<T> {
    file: Option<PathBuf>,
    judge: Option<Stamp>,
    before: HashMap<PathBuf, Entry<T>>,
    now: std::sync::Mutex<HashMap<PathBuf, Entry<T>>>,
    /// Modifications after this are too recent to keep.
    keep_before_ns: i128,
}

/// Where the cache is kept, or `None` when the platform names no cache
/// folder (no home).
pub fn default_file() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(dirs::cache_dir)?;
    Some(dir.join("loopdbg").join("scan-cache.json"))
}

impl<T: Serialize + DeserializeOwned + Clone> ScanCache<T> {
    /// A cache that keeps nothing (`--no-cache`).
    pub fn none() -> ScanCache<T> {
        ScanCache::open(None, SystemTime::now())
    }

    /// The cache at `file`, for a scan starting at `started`: its entries
    /// only if this executable wrote them. A cache that cannot be read is
    /// an empty one (it only ever saves work).
    pub fn open(file: Option<PathBuf>, started: SystemTime) -> ScanCache<T> {
        let judge = std::env::current_exe().ok().and_then(|exe| Stamp::of(&exe));
        let before = file
            .as_deref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|bytes| serde_json::from_slice::<Stored<T>>(&bytes).ok())
            .filter(|stored| judge.is_some() && stored.judge == judge)
            .map(|stored| stored.files)
            .unwrap_or_default();
        ScanCache {
            file,
            judge,
            before,
            now: std::sync::Mutex::new(HashMap::new()),
            keep_before_ns: ns_since_epoch(started) - RACY.as_nanos() as i128,
        }
    }

    /// What the last scan said of `path`, if the file is as it was then:
    /// `Some(None)` for a clean session. The entry is carried over.
    pub fn recall(&self, agent: Agent, path: &Path, stamp: Option<Stamp>) -> Option<Option<T>> {
        let stamp = stamp?;
        let entry = self.before.get(path)?;
        if entry.agent != agent || entry.stamp != stamp {
            return None;
        }
        if let Ok(mut now) = self.now.lock() {
            now.insert(path.to_path_buf(), entry.clone());
        }
        Some(entry.said.clone())
    }

    /// Keeps what was said of `path`, read with the stamp `before` and
    /// found with `after` once judged (and written, under `--write`): kept
    /// only if the two agree and the file is not too recent. `said` is
    /// what belongs to the file (not what a `--write` of this run did).
    pub fn keep(
        &self,
        agent: Agent,
        path: &Path,
        before: Option<Stamp>,
        after: Option<Stamp>,
        said: Option<T>,
    ) {
        let (Some(before), Some(after)) = (before, after) else {
            return;
        };
        if before != after || after.modified() >= self.keep_before_ns || self.file.is_none() {
            return;
        }
        if let Ok(mut now) = self.now.lock() {
            now.insert(
                path.to_path_buf(),
                Entry {
                    agent,
                    stamp: after,
                    said,
                },
            );
        }
    }

    /// Writes this scan's entries (the files it saw, no others) in place
    /// of the last; errors are ignored: without a cache the next scan
    /// reads everything, as this one did.
    pub fn save(self) {
        let Some(file) = self.file else { return };
        let files = self.now.into_inner().unwrap_or_default();
        let stored = Stored {
            judge: self.judge,
            files,
        };
        let Some(dir) = file.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(&stored) else {
            return;
        };
        let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir) else {
            return;
        };
        if std::io::Write::write_all(&mut temp, &bytes).is_ok() {
            let _ = temp.persist(&file);
        }
    }
}
