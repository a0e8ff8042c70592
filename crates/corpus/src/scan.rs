//! `loopdbg doctor --scan`: every session of every agent on this machine
//! ([`crate::stores`]) put to the doctor, and each one its agent could not
//! resume named, with why, the repair, and the agent's command to resume
//! it; with `write`, repaired (each original kept, as `doctor --write`
//! keeps it). Sessions are examined on every core (feature `parallel`),
//! each file read once; only what is said of a session is kept, never its
//! text, so a store of any size is scanned in the memory of its largest
//! files.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use loopdbg_engine::diagnostics::inert::clean;
use serde::{Deserialize, Serialize};

use crate::doctor::{self, Standing, Verdict, Written};
use crate::scan_cache::{ScanCache, Stamp};
use crate::stores::{Agent, Places, Store, resume_command, stores};

/// What the scan is asked to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Repair what the doctor can.
    pub write: bool,
    /// Write a file changed in the last few seconds too.
    pub force: bool,
    /// Print JSON instead of text.
    pub json: bool,
    /// Read every session, keeping no verdict for the next scan
    /// (`--no-cache`).
    pub no_cache: bool,
}

/// How far a scan has come: sessions and bytes examined of all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Sessions examined.
    pub done: usize,
    /// Sessions in all.
    pub total: usize,
    /// Bytes of the sessions examined.
    pub bytes: u64,
}

impl Progress {
    /// Whether this step is worth a terminal's redraw: about a hundred
    /// redraws in all, however many sessions there are.
    pub fn worth_showing(self) -> bool {
        let step = (self.total / 100).max(1);
        self.done.is_multiple_of(step) || self.done == self.total
    }

    /// The line a terminal shows while a scan runs.
    pub fn line(self) -> String {
        format!(
            "scanning: {} of {} sessions ({:.1} MB)",
            self.done,
            self.total,
            self.bytes as f64 / 1e6
        )
    }
}

/// A change the doctor makes, by the original's line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    /// The 1-based line.
    pub line: usize,
    /// What is done there.
    pub what: String,
}

/// What writing a repair came to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Written, the original kept.
    Written {
        /// Where the original is.
        backup: PathBuf,
        /// Whether the agent can now send it.
        resumable: bool,
    },
    /// Not written, and why.
    NotWritten {
        /// Why.
        why: String,
        /// Whether an error (not a caution) stopped it.
        failed: bool,
    },
}

/// A session that is not clean: its agent cannot resume it, or resumes it
/// only by mending it, or it could not be read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unresumable {
    /// Whose.
    pub agent: Agent,
    /// The session file (for a database store, the database).
    pub path: PathBuf,
    /// In a database store, the session's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What the agent's own resume makes of it.
    pub standing: Standing,
    /// Why (the provider's words where it has them).
    pub why: String,
    /// The doctor's repair, or `None` when it has none for it.
    pub changes: Option<Vec<Change>>,
    /// With `write`, what writing the repair came to.
    pub written: Option<Outcome>,
    /// The agent's command to resume it, where the file says enough.
    pub resume: Option<String>,
}

impl Unresumable {
    /// The file, or the database and the session's id, as shown.
    fn named(&self) -> String {
        let path = clean(&self.path.display().to_string());
        match &self.session {
            Some(id) => format!("{path} session {}", clean(id)),
            None => path,
        }
    }

    /// Whether the agent still cannot resume it after the scan.
    fn still(&self) -> bool {
        self.standing == Standing::Refused
            && !matches!(
                self.written,
                Some(Outcome::Written {
                    resumable: true,
                    ..
                })
            )
    }
}

/// One store as the scan found it.
#[derive(Debug, Clone, Serialize)]
pub struct StoreSummary {
    /// Whose.
    pub agent: Agent,
    /// Where.
    pub root: PathBuf,
    /// Its session files.
    pub sessions: usize,
    /// Why its sessions were not read, where they were not.
    pub note: Option<String>,
}

/// What a scan found.
#[derive(Debug, Clone, Serialize)]
pub struct Scan {
    /// The stores, in the order of [`Agent`].
    pub stores: Vec<StoreSummary>,
    /// Sessions examined.
    pub sessions: usize,
    /// The sessions that are not clean, store by store.
    pub unresumable: Vec<Unresumable>,
    /// Sessions unchanged since the last scan, whose verdict it kept
    /// ([`crate::scan_cache`]): not read again.
    pub unchanged: usize,
}

/// `loopdbg doctor --scan`: every store of the process's home scanned,
/// the progress line drawn on `progress` (a terminal) as it goes, the
/// scan reported on `out`; the exit code ([`report`]'s).
pub fn scan(options: Options, progress: Option<Box<dyn Write + Send>>, out: &mut dyn Write) -> u8 {
    let progress = progress.map(std::sync::Mutex::new);
    let shown = |p: Progress| {
        let Some(terminal) = &progress else { return };
        if p.worth_showing()
            && let Ok(mut terminal) = terminal.lock()
        {
            let _ = write!(terminal, "\r{}", p.line());
        }
    };
    let file = match options.no_cache {
        true => None,
        false => crate::scan_cache::default_file(),
    };
    let cache = ScanCache::<Unresumable>::open(file, std::time::SystemTime::now());
    let found = examine_all_cached(&Places::from_env(), options, &cache, &shown);
    cache.save();
    if let Some(Ok(mut terminal)) = progress.map(|p| p.into_inner()) {
        let _ = write!(terminal, "\r{:60}\r", "");
    }
    report(&found, options, out)
}

/// Scans every store under `places`; `progress` hears of each session
/// examined (from whichever core examined it). Every session is read.
pub fn examine_all(
    places: &Places,
    options: Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Scan {
    examine_all_cached(places, options, &ScanCache::<Unresumable>::none(), progress)
}

/// [`examine_all`], a session file unchanged since the scan that filled
/// `cache` taken from it instead of read (under `write`, not one that
/// scan found refused: it is read again to be repaired).
pub fn examine_all_cached(
    places: &Places,
    options: Options,
    cache: &ScanCache<Unresumable>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Scan {
    let found = stores(places);
    let work: Vec<Work> = found
        .iter()
        .flat_map(|s| {
            let files = s
                .sessions
                .iter()
                .map(|p| Work::File(s.agent, s.root.clone(), p.clone()));
            let rows = s
                .db_sessions
                .iter()
                .map(|d| Work::Row(s.agent, s.root.clone(), d.clone()));
            files.chain(rows)
        })
        .collect();
    let total = work.len();
    let (done, bytes) = (AtomicUsize::new(0), AtomicU64::new(0));
    let unchanged = AtomicUsize::new(0);
    let verdicts = crate::cores::map(&work, |work| {
        let (said, size) = match work {
            Work::File(agent, root, path) => {
                examine_cached(*agent, root, path, options, cache, &unchanged)
            }
            Work::Row(agent, db, session) => {
                examine_row_cached(*agent, db, session, cache, &unchanged)
            }
        };
        progress(Progress {
            done: done.fetch_add(1, Ordering::Relaxed) + 1,
            total,
            bytes: bytes.fetch_add(size, Ordering::Relaxed) + size,
        });
        said
    });
    Scan {
        stores: found.iter().map(summary).collect(),
        sessions: total,
        unresumable: verdicts.into_iter().flatten().collect(),
        unchanged: unchanged.into_inner(),
    }
}

/// [`examine`] of one session file, or its verdict from `cache` when the
/// file is as the last scan found it (under `write`, a refused one is read
/// again, to be repaired; `unchanged` counts those taken from the cache),
/// and the bytes read.
fn examine_cached(
    agent: Agent,
    root: &std::path::Path,
    path: &std::path::Path,
    options: Options,
    cache: &ScanCache<Unresumable>,
    unchanged: &AtomicUsize,
) -> (Option<Unresumable>, u64) {
    let stamp = Stamp::of(path);
    let to_write = |said: &Option<Unresumable>| {
        options.write
            && said
                .as_ref()
                .is_some_and(|u| u.standing == Standing::Refused)
    };
    if let Some(said) = cache.recall(agent, path, stamp)
        && !to_write(&said)
    {
        unchanged.fetch_add(1, Ordering::Relaxed);
        return (said, 0);
    }
    let said = examine(agent, root, path, options);
    // What writing came to belongs to this run, not to the file.
    let kept = said.clone().map(|mut u| {
        u.written = None;
        u
    });
    cache.keep(agent, path, stamp, Stamp::of(path), kept);
    (said, stamp.map_or(0, |s| s.bytes()))
}

/// [`examine_row`], or the verdict from `cache` when the database (and
/// its write-ahead log) is as the last scan found it. A database's rows
/// have no stamp of their own, so any write to it judges all of them again.
fn examine_row_cached(
    agent: Agent,
    db: &std::path::Path,
    session: &crate::stores::DbSession,
    cache: &ScanCache<Unresumable>,
    unchanged: &AtomicUsize,
) -> (Option<Unresumable>, u64) {
    // A key no file can have: the database is a file, not a folder.
    let key = db.join("#session").join(&session.id);
    let stamp = Stamp::of_database(db);
    if let Some(said) = cache.recall(agent, &key, stamp) {
        unchanged.fetch_add(1, Ordering::Relaxed);
        return (said, 0);
    }
    let (said, size) = examine_row(agent, db, session);
    cache.keep(agent, &key, stamp, Stamp::of_database(db), said.clone());
    (said, size)
}

/// One session to examine.
enum Work {
    /// A file of its own, and the store's folder it was found under.
    File(Agent, PathBuf, PathBuf),
    /// A session of the agent's database at the path.
    Row(Agent, PathBuf, crate::stores::DbSession),
}

fn summary(store: &Store) -> StoreSummary {
    StoreSummary {
        agent: store.agent,
        root: store.root.clone(),
        sessions: store.sessions.len() + store.db_sessions.len(),
        note: store.note.clone(),
    }
}

/// The doctor on one session of an agent's database (opencode's,
/// Crush's), and its size: read as the agent's own export prints it
/// (`opencode export`, `crush session show --json`), named, never written
/// (the doctor does not write a database).
fn examine_row(
    agent: Agent,
    db: &std::path::Path,
    session: &crate::stores::DbSession,
) -> (Option<Unresumable>, u64) {
    let unresumable = |standing, why| Unresumable {
        agent,
        path: db.to_path_buf(),
        session: Some(session.id.clone()),
        standing,
        why,
        changes: None,
        written: None,
        resume: session.resume_command(agent),
    };
    let bytes = match export_row(agent, db, &session.id) {
        Ok(bytes) => bytes,
        Err(e) => return (Some(unresumable(Standing::Unread, e)), 0),
    };
    let size = bytes.len() as u64;
    let origin = format!("{} session {}", db.display(), session.id);
    let forced = Some(loopdbg_read::Source::Agent(agent));
    let (verdict, standing) = doctor::diagnose_as(&origin, bytes, forced, false);
    let why = match verdict {
        Verdict::Clean => return (None, size),
        Verdict::Cannot(why) | Verdict::NotRepaired { why, .. } => why,
        Verdict::Needs(repair) => repair.why,
    };
    (Some(unresumable(standing, why)), size)
}

/// One session of `agent`'s database as its export prints it, or why not.
fn export_row(agent: Agent, db: &std::path::Path, id: &str) -> Result<Vec<u8>, String> {
    let unread = |e: String| format!("it could not be read: {e}");
    let unbuilt = || -> Result<Vec<u8>, String> {
        Err(format!(
            "this build does not read {}'s database",
            agent.name()
        ))
    };
    match agent {
        #[cfg(feature = "opencode")]
        Agent::Opencode => crate::opencode_store::export(db, id).map_err(unread),
        #[cfg(not(feature = "opencode"))]
        Agent::Opencode => unbuilt(),
        #[cfg(feature = "crush")]
        Agent::Crush => crate::crush_store::export(db, id).map_err(unread),
        #[cfg(not(feature = "crush"))]
        Agent::Crush => unbuilt(),
        // Their sessions are files of their own.
        Agent::ClaudeCode
        | Agent::Codex
        | Agent::GeminiCli
        | Agent::CopilotCli
        | Agent::Cline
        | Agent::RooCode
        | Agent::KiloCode
        | Agent::KimiCode => {
            let _ = (db, id, unread, unbuilt);
            Err(format!("{} keeps no database", agent.name()))
        }
    }
}

/// The doctor on one session; `None` when it is clean. Only a session
/// its agent cannot resume is written.
fn examine(
    agent: Agent,
    root: &std::path::Path,
    path: &std::path::Path,
    options: Options,
) -> Option<Unresumable> {
    // What the scan does not write, it does not plan (JSON says `changes:
    // null` for those: `doctor FILE` makes the repair).
    // A task history cannot say by its content which extension kept it
    // (Cline and Roo Code store the same shape, and send it differently):
    // the store it was found in says.
    let known = match agent {
        Agent::Cline | Agent::RooCode | Agent::KiloCode => Some(loopdbg_read::Source::Agent(agent)),
        Agent::ClaudeCode
        | Agent::Codex
        | Agent::GeminiCli
        | Agent::CopilotCli
        | Agent::Opencode
        | Agent::Crush
        | Agent::KimiCode => None,
    };
    let (verdict, standing) = doctor::standing_as(path, known, false);
    let (why, changes, written) = match verdict {
        Verdict::Clean => return None,
        Verdict::Cannot(why) | Verdict::NotRepaired { why, .. } => (why, None, None),
        Verdict::Needs(repair) => {
            let changes = repair
                .plan
                .changes
                .iter()
                .map(|c| Change {
                    line: c.line,
                    what: c.what.clone(),
                })
                .collect();
            let why = repair.why.clone();
            let written = (options.write && standing == Standing::Refused).then(|| {
                match linked_below(root, path) {
                    Some(link) => Outcome::NotWritten {
                        why: format!(
                            "reached through the symbolic link {}: the scan writes nothing a link leads it to (it may lead out of the store); `loopdbg doctor FILE --write` repairs the file you name",
                            link.display()
                        ),
                        failed: false,
                    },
                    None => outcome(doctor::apply(path, repair, options.force)),
                }
            });
            (why, Some(changes), written)
        }
    };
    Some(Unresumable {
        agent,
        path: path.to_path_buf(),
        session: None,
        standing,
        why,
        changes,
        written,
        resume: resume_command(agent, path),
    })
}

/// The first symbolic link on the way from the store's folder `root` down
/// to `path` (`path` itself included), if any.
fn linked_below(root: &std::path::Path, path: &std::path::Path) -> Option<PathBuf> {
    let below = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in below.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

fn outcome(written: Written) -> Outcome {
    match written {
        Written::Done { backup, clean } => Outcome::Written {
            backup,
            resumable: clean,
        },
        Written::Not { why, failed } => Outcome::NotWritten { why, failed },
    }
}

/// Prints `scan` (as text, or JSON with `options.json`) on `out`; its exit
/// code: 0 when every session can be resumed (or, written, now can), 1
/// when one cannot, 2 when a repair could not be written.
pub fn report(scan: &Scan, options: Options, out: &mut dyn Write) -> u8 {
    let failed = scan
        .unresumable
        .iter()
        .any(|u| matches!(u.written, Some(Outcome::NotWritten { failed: true, .. })));
    let code = if failed {
        2
    } else if scan.unresumable.iter().any(Unresumable::still) {
        1
    } else {
        0
    };
    if options.json {
        let _ = serde_json::to_writer_pretty(&mut *out, scan);
        let _ = writeln!(out);
    } else {
        let _ = text(scan, options, out);
    }
    code
}

fn text(scan: &Scan, options: Options, out: &mut dyn Write) -> std::io::Result<()> {
    if scan.stores.is_empty() {
        return writeln!(
            out,
            "no session store found of {} (an agent that keeps its sessions elsewhere is found through its own variable: {})",
            loopdbg_read::agent::TABLE
                .iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
                .join(", "),
            crate::stores::VARIABLES.join(", ")
        );
    }
    for store in &scan.stores {
        let root = clean(&store.root.display().to_string());
        let name = store.agent.name();
        if let Some(note) = &store.note {
            writeln!(out, "{name}: {root}: {note}")?;
            continue;
        }
        let here = |standing| {
            scan.unresumable
                .iter()
                .filter(move |u| u.standing == standing && u.path.starts_with(&store.root))
        };
        let state = match here(Standing::Refused).count() {
            0 => "every one can be resumed".to_string(),
            n => format!("{n} cannot be resumed"),
        };
        writeln!(
            out,
            "{name}: {} session(s) in {root}; {state}",
            store.sessions
        )?;
        for u in here(Standing::Refused) {
            session(u, out)?;
        }
        for u in here(Standing::Mended) {
            let path = u.named();
            writeln!(out, "  resumes only as {name} mends it: {path}")?;
            writeln!(out, "    {}", clean(&u.why))?;
        }
        for u in here(Standing::Unread) {
            let path = u.named();
            writeln!(out, "  not read: {path}: {}", clean(&u.why))?;
        }
    }
    let count = |standing| {
        scan.unresumable
            .iter()
            .filter(|u| u.standing == standing)
            .count()
    };
    let refused = count(Standing::Refused);
    let repairable = scan
        .unresumable
        .iter()
        .filter(|u| u.standing == Standing::Refused && u.changes.is_some())
        .count();
    write!(
        out,
        "{} session(s) in {} store(s): ",
        scan.sessions,
        scan.stores.len()
    )?;
    match refused {
        0 => write!(out, "every one can be resumed")?,
        n => write!(out, "{n} cannot be resumed")?,
    }
    if refused > 0 && options.write {
        let left = scan.unresumable.iter().filter(|u| u.still()).count();
        write!(out, "; {} repaired, {left} left", refused - left)?;
    } else if repairable > 0 {
        write!(
            out,
            "; nothing written: pass --write to repair the {repairable} the doctor can (each original kept as FILE.loopdbg-bak)"
        )?;
    }
    match count(Standing::Mended) {
        0 => writeln!(out)?,
        n => writeln!(
            out,
            "; {n} more resume only as their agent mends them as it sends them (for Claude Code and Codex, `loopdbg doctor FILE --write` writes the mend into the file)"
        )?,
    }
    match scan.unchanged {
        0 => Ok(()),
        n => writeln!(
            out,
            "({n} of them unchanged since the last scan: their verdicts kept, not read again; --no-cache reads every one)"
        ),
    }
}

fn session(u: &Unresumable, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "  {}", u.named())?;
    writeln!(out, "    why: {}", clean(&u.why))?;
    match &u.changes {
        Some(changes) => {
            for c in changes {
                writeln!(out, "    repair: line {}: {}", c.line, clean(&c.what))?;
            }
        }
        None if !u.agent.repaired() => writeln!(
            out,
            "    repair: none here (the doctor repairs {} sessions)",
            Agent::repaired_names()
        )?,
        None => {}
    }
    match &u.written {
        Some(Outcome::Written { backup, resumable }) => writeln!(
            out,
            "    written; the original is kept as {}; checked again: {}",
            clean(&backup.display().to_string()),
            if *resumable {
                "it can be resumed"
            } else {
                "it still cannot be resumed"
            }
        )?,
        Some(Outcome::NotWritten { why, .. }) => writeln!(out, "    not written: {}", clean(why))?,
        None => {}
    }
    if let Some(command) = &u.resume {
        writeln!(out, "    resume: {}", clean(command))?;
    }
    Ok(())
}
