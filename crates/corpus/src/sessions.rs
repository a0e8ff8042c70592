//! Session files from disk: the session read once (a pipe or a FIFO
//! works) and told apart from a capture, then the sub-agent sessions it
//! names, each from the session's own folder unless allowed elsewhere.

use std::path::Path;

use loopdbg_engine::diagnostics::inert::clean;
use loopdbg_engine::{LoadError, Session};

use crate::limits::MAX_SESSION_BYTES;
use crate::replay::Opening;

/// A session to run, or a capture replayed (only where asked): what
/// `run` and `diff` take.
pub enum Subject {
    /// A session file, loaded.
    Run(Box<Loaded>),
    /// A capture's newest conversation, titled by its file.
    Replay(Box<crate::replay::Replay>),
}

/// What `path` holds, read once: a session, or (when `replays`) a capture
/// to replay; a capture where replays are not taken is said as such.
/// `anywhere` lets a session name sub-agent files outside its folder.
pub fn subject(path: &Path, replays: bool, anywhere: bool) -> Result<Subject, LoadError> {
    Ok(match crate::replay::open(path)? {
        Opening::Session { origin, text } => {
            Subject::Run(Box::new(session_of(path, origin, text, anywhere)?))
        }
        Opening::Captured(opened) if replays => {
            let name = path.display().to_string();
            let replay = crate::replay::replay(opened, None, |_| name)?;
            Subject::Replay(Box::new(replay))
        }
        Opening::Captured(_) => Subject::Run(Box::new(session(path, anywhere)?)),
    })
}

/// A session with the text it came from.
pub struct Loaded {
    /// The name the user gave.
    pub origin: String,
    /// The file's text.
    pub text: String,
    /// The parsed session.
    pub session: Session,
}

/// Reads and parses a session file, and the sub-agent sessions it names.
/// A sub-agent's file must lie inside the session's folder unless
/// `anywhere` is set, and must be a regular file.
pub fn session(path: &Path, anywhere: bool) -> Result<Loaded, LoadError> {
    match crate::replay::open(path)? {
        Opening::Session { origin, text } => session_of(path, origin, text, anywhere),
        // A capture given where a session is wanted: say what works on it.
        Opening::Captured(_) => {
            let name = path.display();
            Err(LoadError::Refused {
                origin: name.to_string(),
                reason: format!(
                    "this is a captured conversation, not a session: `loopdbg {name}` replays it, `loopdbg check {name}` checks it, and `loopdbg record {name} -o session.json` turns it into a session this command runs"
                ),
            })
        }
    }
}

/// A session whose text `path` held, named `origin`, with the sub-agent
/// sessions it names loaded from beside it.
pub fn session_of(
    path: &Path,
    origin: String,
    text: String,
    anywhere: bool,
) -> Result<Loaded, LoadError> {
    if text.len() as u64 > MAX_SESSION_BYTES {
        return Err(LoadError::Refused {
            origin,
            reason: format!(
                "{} MiB is larger than a session may be ({} MiB)",
                text.len() >> 20,
                MAX_SESSION_BYTES >> 20
            ),
        });
    }
    let mut session = Session::parse(&origin, &text)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = std::fs::canonicalize(if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &base
    })
    .unwrap_or_else(|_| base.clone());
    let mut load = |child: &str, depth: usize| -> Result<Session, LoadError> {
        let file = base.join(child);
        // Lexically inside (relative, no `..`), and still inside once links
        // are followed.
        let relative = Path::new(child).components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        let inside =
            relative && std::fs::canonicalize(&file).map_or(true, |real| real.starts_with(&root));
        if !anywhere && !inside {
            return Err(LoadError::Refused {
                origin: format!("{origin}: agent {}", clean(child)),
                reason: format!(
                    "the sub-agent file lies outside the session's folder ({}); pass --agents-anywhere to allow it",
                    root.display()
                ),
            });
        }
        if depth > loopdbg_engine::executor::MAX_AGENT_DEPTH {
            return Err(LoadError::Refused {
                origin: child.to_string(),
                reason: format!(
                    "sub-agents nest deeper than {} levels (a session that names itself?)",
                    loopdbg_engine::executor::MAX_AGENT_DEPTH
                ),
            });
        }
        read_one(&file).map(|(_, _, s)| s).map_err(|e| match e {
            // Say which session named the file that could not be loaded.
            LoadError::Unreadable { origin: o, reason } => LoadError::Unreadable {
                origin: format!("{o} (sub-agent of {origin})"),
                reason,
            },
            other => other,
        })
    };
    session
        .resolve_agents(0, &mut load)
        .map_err(|e| locate_agent(e, &origin, &text))?;
    Ok(Loaded {
        origin,
        text,
        session,
    })
}

/// A sub-agent that cannot be used, said at the `agent` value that names it
/// in the session (`file:line:column`), when the session names it directly.
fn locate_agent(e: LoadError, origin: &str, text: &str) -> LoadError {
    let (child, reason) = match &e {
        LoadError::Unreadable { origin: o, reason } => (o, format!("cannot read: {reason}")),
        LoadError::Refused { origin: o, reason } => (o, reason.clone()),
        _ => return e,
    };
    let named = |c: &str| {
        let quoted = serde_json::to_string(c).unwrap_or_default();
        text.find(&format!("\"agent\": {quoted}"))
            .or_else(|| text.find(&format!("\"agent\":{quoted}")))
            .map(|at| at + text[at..].find(&quoted).unwrap_or(0))
    };
    // The error names the file as joined to the session's folder, or as
    // written (`<origin>: agent <path>`).
    let written = child
        .rsplit_once(": agent ")
        .map(|(_, w)| w.to_string())
        .or_else(|| {
            let base = Path::new(origin).parent().unwrap_or(Path::new(""));
            let path = child.split(" (sub-agent of ").next().unwrap_or(child);
            Path::new(path)
                .strip_prefix(base)
                .ok()
                .map(|p| p.display().to_string())
        });
    match written.as_deref().and_then(|w| named(w).map(|at| (w, at))) {
        Some((w, at)) => LoadError::at(origin, text, at, format!("agent `{w}`: {reason}")),
        None => e,
    }
}

fn read_one(path: &Path) -> Result<(String, String, Session), LoadError> {
    let origin = path.display().to_string();
    let text = crate::read_text(path, &origin)?;
    let session = Session::parse(&origin, &text)?;
    Ok((origin, text, session))
}

/// Why one side of `loopdbg diff` cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum DiffSideError {
    /// The file could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A strategy that cannot be set: a capture has none, or a value is
    /// not one the session has.
    #[error("{0}")]
    Refused(String),
}

/// One side of `loopdbg diff`: the session at `path` run under `choice`,
/// or a capture's replay (which has no strategy to set).
pub fn diff_side(
    path: &Path,
    choice: &loopdbg_engine::session::Choice,
    anywhere: bool,
) -> Result<loopdbg_lesson::diff::Run, DiffSideError> {
    let name = path.display().to_string();
    match subject(path, true, anywhere)? {
        Subject::Replay(_) if !choice.is_empty() => Err(DiffSideError::Refused(format!(
            "{name} is a captured conversation: it has no strategy to set (loopdbg record turns it into a session that has)"
        ))),
        Subject::Replay(replay) => Ok(loopdbg_lesson::diff::Run {
            label: format!("{name} [replay]"),
            session: replay.session,
            trace: replay.trace,
        }),
        Subject::Run(loaded) => loopdbg_lesson::diff::Run::ran(&name, loaded.session, choice)
            .map_err(DiffSideError::Refused),
    }
}
