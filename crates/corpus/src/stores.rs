//! Where each agent keeps its sessions on this machine, for `loopdbg
//! doctor --scan`: the folders each one writes (honouring the variables
//! it honours to move them) and the session files in them, with what the
//! agent needs to resume one (its id and the folder to run it from).
//!
//! The places, from the agents' own code and documentation:
//!
//! - Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, then
//!   `projects/<project>/<session id>.jsonl`; resumed with `claude --resume
//!   ID` in the session's `cwd`.
//! - Codex: `$CODEX_HOME` or `~/.codex`, then
//!   `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`; `codex resume ID`.
//! - Gemini CLI: `$GEMINI_CLI_HOME` (which stands for the home folder) or
//!   `~`, then `.gemini/tmp/<project>/chats/session-*.jsonl` (and the older
//!   whole-file `.json`), the project's folder in `<project>/.project_root`;
//!   `gemini --resume ID` there.
//! - Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, then
//!   `session-state/<id>/events.jsonl` (and the older `<id>.jsonl`), the
//!   folder in `<id>/workspace.yaml`; `copilot --resume=ID`.
//! - Cline, Roo Code and Kilo Code: each editor's extension storage
//!   (`~/.config/<editor>/User/globalStorage/<extension>`, `~/Library/
//!   Application Support/…` on macOS, `%APPDATA%\…` on Windows; Cline's own
//!   CLI in `~/.cline/data`), then `tasks/<id>/api_conversation_history.json`;
//!   resumed from the extension's task history.
//! - opencode: `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`. Since
//!   1.2 it keeps sessions in a SQLite database (`opencode.db`), read with
//!   the `opencode` feature ([`crate::opencode_store`]); `opencode --session
//!   ID` in the session's folder.
//! - Crush: a SQLite database per project (`<project>/.crush/crush.db` by
//!   default), the projects listed in `projects.json` in its global data
//!   folder: `$CRUSH_GLOBAL_DATA`, else `$XDG_DATA_HOME/crush`, else
//!   `~/.local/share/crush` (`%LOCALAPPDATA%\crush` on Windows; config
//!   `GlobalConfigData`); read with the `crush` feature
//!   ([`crate::crush_store`]); `crush --session ID` in the project.
//!
//! Reading the process's environment happens once, in
//! [`Places::from_env`]; everything after takes a [`Places`], so a test
//! scans a home of its own without touching the process's variables.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// An agent whose sessions loopdbg finds: the one table of agents is
/// `loopdbg_read::agent::TABLE`.
pub use loopdbg_read::Agent;

/// The variables that move an agent's store, read by [`Places::from_env`].
pub const VARIABLES: [&str; 10] = [
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "COPILOT_HOME",
    "KIMI_SHARE_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "APPDATA",
    "CRUSH_GLOBAL_DATA",
    "LOCALAPPDATA",
];

/// The home folder and the variables the agents honour.
#[derive(Debug, Clone, Default)]
pub struct Places {
    home: Option<PathBuf>,
    vars: Vec<(&'static str, PathBuf)>,
}

impl Places {
    /// The process's: `HOME` (`USERPROFILE` on Windows) and [`VARIABLES`].
    pub fn from_env() -> Places {
        let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"));
        Places::new(home, |name| std::env::var_os(name))
    }

    /// A home and the variables `var` gives (an empty one counts as unset,
    /// as the agents take it).
    pub fn new(home: Option<OsString>, var: impl Fn(&str) -> Option<OsString>) -> Places {
        let home = home.filter(|h| !h.is_empty()).map(PathBuf::from);
        let vars = VARIABLES
            .iter()
            .filter_map(|&name| {
                let value = var(name).filter(|v| !v.is_empty())?;
                Some((name, PathBuf::from(value)))
            })
            .collect();
        Places { home, vars }
    }

    fn var(&self, name: &str) -> Option<&Path> {
        self.vars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_path())
    }

    /// `~/rel`.
    fn at_home(&self, rel: &str) -> Option<PathBuf> {
        Some(self.home.as_ref()?.join(rel))
    }

    /// `$name`, else `~/rel`.
    pub(crate) fn var_or_home(&self, name: &str, rel: &str) -> Option<PathBuf> {
        match self.var(name) {
            Some(dir) => Some(dir.to_path_buf()),
            None => self.at_home(rel),
        }
    }
}

/// One agent's store on this machine.
#[derive(Debug, Clone)]
pub struct Store {
    /// Whose.
    pub agent: Agent,
    /// Where (the folder, or the database file).
    pub root: PathBuf,
    /// Its session files, sorted.
    pub sessions: Vec<PathBuf>,
    /// The sessions of a database store (opencode's, Crush's), oldest first.
    pub db_sessions: Vec<DbSession>,
    /// Why its sessions are not read one by one, where they are not.
    pub note: Option<String>,
}

/// A session kept in a database rather than a file of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbSession {
    /// Its id, as the agent resumes it.
    pub id: String,
    /// The folder it ran in, where the database says.
    pub directory: Option<String>,
}

impl DbSession {
    /// `agent`'s command to resume it, in its folder; `None` for an agent
    /// that keeps no database (its sessions are files: [`resume_command`]).
    pub fn resume_command(&self, agent: Agent) -> Option<String> {
        let program = match agent {
            Agent::Crush => "crush",
            Agent::Opencode => "opencode",
            Agent::ClaudeCode
            | Agent::Codex
            | Agent::GeminiCli
            | Agent::CopilotCli
            | Agent::Cline
            | Agent::RooCode
            | Agent::KiloCode
            | Agent::KimiCode => return None,
        };
        let command = format!("{program} --session {}", quoted(&self.id));
        Some(match self.directory.as_deref() {
            Some(folder) if !folder.is_empty() => format!("cd {} && {command}", quoted(folder)),
            _ => command,
        })
    }
}

/// Every store of every agent that exists under `places`, in the order of
/// [`Agent`], each store's sessions sorted.
pub fn stores(places: &Places) -> Vec<Store> {
    let mut found = Vec::new();
    let claude = places.var_or_home("CLAUDE_CONFIG_DIR", ".claude");
    let codex = places.var_or_home("CODEX_HOME", ".codex");
    let gemini = places.var_or_home("GEMINI_CLI_HOME", "");
    let copilot = places.var_or_home("COPILOT_HOME", ".copilot");
    found.extend(store_at(
        Agent::ClaudeCode,
        claude.map(|c| c.join("projects")),
        &[&["*", "*.jsonl"]],
    ));
    found.extend(store_at(
        Agent::Codex,
        codex.map(|c| c.join("sessions")),
        &[&["*", "*", "*", "rollout-*.jsonl"]],
    ));
    found.extend(store_at(
        Agent::GeminiCli,
        gemini.map(|g| g.join(".gemini/tmp")),
        &[
            &["*", "chats", "session-*.jsonl"],
            &["*", "chats", "session-*.json"],
        ],
    ));
    // Before its per-session folders, Copilot CLI wrote `<id>.jsonl`.
    found.extend(store_at(
        Agent::CopilotCli,
        copilot.map(|c| c.join("session-state")),
        &[&["*", "events.jsonl"], &["*.jsonl"]],
    ));
    for (agent, root) in extension_stores(places) {
        let pattern: &[&str] = &["*", "api_conversation_history.json"];
        found.extend(store_at(agent, Some(root.join("tasks")), &[pattern]));
    }
    // Kimi Code: `$KIMI_SHARE_DIR` (else `~/.kimi`), `sessions/<md5 of
    // the folder>/<session id>/context.jsonl` (kimi-cli's share.py and
    // metadata.py); `/undo` rotates the file to `context_1.jsonl` and on,
    // which are kept, not resumed.
    found.extend(store_at(
        Agent::KimiCode,
        places
            .var_or_home("KIMI_SHARE_DIR", ".kimi")
            .map(|k| k.join("sessions")),
        &[&["*", "*", "context.jsonl"]],
    ));
    if let Some(data) = places.var_or_home("XDG_DATA_HOME", ".local/share") {
        let db = data.join("opencode/opencode.db");
        if db.is_file() {
            found.push(opencode_store(db));
        }
    }
    found.extend(crush_stores(places));
    found
}

/// Crush's databases, one a project `projects.json` lists, each with its
/// sessions (or, unread, why).
fn crush_stores(places: &Places) -> Vec<Store> {
    let data = match places.var("CRUSH_GLOBAL_DATA") {
        Some(dir) => Some(dir.to_path_buf()),
        None if cfg!(windows) => places
            .var_or_home("LOCALAPPDATA", "AppData/Local")
            .map(|d| d.join("crush")),
        None => places
            .var_or_home("XDG_DATA_HOME", ".local/share")
            .map(|d| d.join("crush")),
    };
    let Some(list) = data.and_then(|d| small_file(&d.join("projects.json"), 16 << 20)) else {
        return Vec::new();
    };
    #[derive(serde::Deserialize)]
    struct Project {
        path: String,
        data_dir: PathBuf,
    }
    #[derive(serde::Deserialize)]
    struct Projects {
        projects: Vec<Project>,
    }
    let Ok(Projects { projects }) = serde_json::from_slice(&list) else {
        return Vec::new();
    };
    projects
        .into_iter()
        .filter_map(|p| {
            let db = p.data_dir.join("crush.db");
            db.is_file().then(|| crush_store(db, p.path))
        })
        .collect()
}

/// One of Crush's databases, its sessions listed (or, unread, why).
fn crush_store(db: PathBuf, project: String) -> Store {
    #[cfg(feature = "crush")]
    let (db_sessions, note) = match crate::crush_store::list(&db) {
        Ok(ids) => (
            ids.into_iter()
                .map(|id| DbSession {
                    id,
                    directory: Some(project.clone()),
                })
                .collect(),
            None,
        ),
        Err(e) => (
            Vec::new(),
            Some(format!("the database could not be read: {e}")),
        ),
    };
    #[cfg(not(feature = "crush"))]
    let (db_sessions, note) = {
        let _ = project;
        (
            Vec::new(),
            Some(
                "a SQLite database, not read by this build (feature `crush`): `crush session show --json ID > session.json` prints a session for `loopdbg check`".to_string(),
            ),
        )
    };
    Store {
        agent: Agent::Crush,
        root: db,
        sessions: Vec::new(),
        db_sessions,
        note,
    }
}

/// opencode's database, its sessions listed (or, unread, why).
fn opencode_store(db: PathBuf) -> Store {
    #[cfg(feature = "opencode")]
    let (db_sessions, note) = match crate::opencode_store::list(&db) {
        Ok(sessions) => (
            sessions
                .into_iter()
                .map(|(id, directory)| DbSession { id, directory })
                .collect(),
            None,
        ),
        Err(e) => (
            Vec::new(),
            Some(format!("the database could not be read: {e}")),
        ),
    };
    #[cfg(not(feature = "opencode"))]
    let (db_sessions, note) = (
        Vec::new(),
        Some(
            "a SQLite database, not read by this build (feature `opencode`): `opencode export ID > session.json` prints a session for `loopdbg check`".to_string(),
        ),
    );
    Store {
        agent: Agent::Opencode,
        root: db,
        sessions: Vec::new(),
        db_sessions,
        note,
    }
}

/// The store of `agent` at `root`, if that folder exists: the files under
/// it that match any of `patterns`, sorted.
fn store_at(agent: Agent, root: Option<PathBuf>, patterns: &[&[&str]]) -> Option<Store> {
    let root = root.filter(|r| r.is_dir())?;
    let mut sessions = Vec::new();
    for pattern in patterns {
        walk(&root, pattern, &mut sessions);
    }
    sessions.sort();
    Some(Store {
        agent,
        root,
        sessions,
        db_sessions: Vec::new(),
        note: None,
    })
}

/// The folders where Cline, Roo Code and Kilo Code keep their tasks: each
/// editor's extension storage, and Cline's own CLI's.
fn extension_stores(places: &Places) -> Vec<(Agent, PathBuf)> {
    const EDITORS: [&str; 6] = [
        "Code",
        "Code - Insiders",
        "VSCodium",
        "Cursor",
        "Windsurf",
        "Trae",
    ];
    const EXTENSIONS: [(Agent, &str); 3] = [
        (Agent::Cline, "saoudrizwan.claude-dev"),
        (Agent::RooCode, "rooveterinaryinc.roo-cline"),
        (Agent::KiloCode, "kilocode.kilo-code"),
    ];
    let mut bases: Vec<PathBuf> = Vec::new();
    bases.extend(places.var_or_home("XDG_CONFIG_HOME", ".config"));
    bases.extend(places.at_home("Library/Application Support"));
    bases.extend(places.var("APPDATA").map(Path::to_path_buf));
    let mut out = Vec::new();
    for base in bases.iter().filter(|b| b.is_dir()) {
        for editor in EDITORS {
            let storage = base.join(editor).join("User/globalStorage");
            for (agent, extension) in EXTENSIONS {
                out.push((agent, storage.join(extension)));
            }
        }
    }
    if let Some(cline_cli) = places.at_home(".cline/data") {
        out.push((Agent::Cline, cline_cli));
    }
    out
}

/// The files under `dir` whose path below it matches `pattern`, one
/// segment per level (`*` matches any run of characters within a name).
/// Depth is the pattern's, so a link that loops is not followed forever;
/// a folder that cannot be read holds nothing.
fn walk(dir: &Path, pattern: &[&str], out: &mut Vec<PathBuf>) {
    let Some((segment, rest)) = pattern.split_first() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !matches_glob(segment, name) {
            continue;
        }
        let path = entry.path();
        if rest.is_empty() {
            if path.is_file() {
                out.push(path);
            }
        } else if path.is_dir() {
            walk(&path, rest, out);
        }
    }
}

/// Whether `name` matches `glob`, whose only special character is `*`.
fn matches_glob(glob: &str, name: &str) -> bool {
    let mut pieces = glob.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The command that resumes the session in `path`, as the agent takes it,
/// where the file says enough to write one.
pub fn resume_command(agent: Agent, path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let (folder, command) = match agent {
        Agent::ClaudeCode => (
            first_field(path, &["cwd"]),
            format!("claude --resume {}", quoted(stem)),
        ),
        Agent::Codex => {
            // The `session_meta` record's, else the file name's: in
            // `rollout-<time>-<uuid>` the last 36 characters.
            let id = first_field(path, &["payload", "id"])
                .or_else(|| Some(stem.get(stem.len().checked_sub(36)?..)?.to_string()))?;
            (
                first_field(path, &["payload", "cwd"]),
                format!("codex resume {}", quoted(&id)),
            )
        }
        Agent::GeminiCli => {
            let id = first_field(path, &["sessionId"])?;
            let project = path.parent()?.parent()?.join(".project_root");
            let root = small_file(&project, 64 << 10).and_then(|b| String::from_utf8(b).ok());
            (
                root.map(|r| r.trim().to_string()),
                format!("gemini --resume {}", quoted(&id)),
            )
        }
        Agent::CopilotCli => {
            let (id, yaml) = if stem == "events" {
                let dir = path.parent()?;
                (
                    dir.file_name()?.to_str()?.to_string(),
                    small_file(&dir.join("workspace.yaml"), 1 << 20)
                        .and_then(|b| String::from_utf8(b).ok()),
                )
            } else {
                (stem.to_string(), None)
            };
            let cwd = yaml.and_then(|y| {
                y.lines()
                    .find_map(|l| l.strip_prefix("cwd:"))
                    .map(|c| c.trim().trim_matches(['"', '\'']).to_string())
            });
            (cwd, format!("copilot --resume={}", quoted(&id)))
        }
        Agent::Cline | Agent::RooCode | Agent::KiloCode => {
            let task = path.parent()?.file_name()?.to_str()?;
            return Some(format!(
                "open task {task} from {}'s task history in the editor",
                agent.name()
            ));
        }
        Agent::Opencode | Agent::Crush => return None,
        // The session's folder is named by its id; the work folder is
        // known only by its hash.
        Agent::KimiCode => {
            let id = path.parent()?.file_name()?.to_str()?;
            (None, format!("kimi -r {}", quoted(id)))
        }
    };
    Some(match folder {
        Some(folder) if !folder.is_empty() => format!("cd {} && {command}", quoted(&folder)),
        _ => command,
    })
}

/// The bytes of a small file an agent keeps beside its sessions (a
/// project's folder, a list of projects), if it is a regular file of at
/// most `limit` bytes: a FIFO, a device or a huge file there is skipped,
/// never waited on or read whole.
fn small_file(path: &Path, limit: u64) -> Option<Vec<u8>> {
    loopdbg_io::files::read_regular(path, limit).ok()
}

/// `text` as one shell word.
pub fn quoted(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The string at `keys` in the first of the file's first lines that has
/// one (the folder and id an agent writes in its first records).
fn first_field(path: &Path, keys: &[&str]) -> Option<String> {
    use std::io::{BufRead, BufReader, Read};
    // The scan found it as a regular file; it is asked again, since a
    // FIFO put in its place would hold the open forever.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    // A whole-file JSON (older Gemini CLI chats) is one line: read that.
    let reader = BufReader::new(file.take(64 << 20));
    for line in reader.lines().take(64) {
        let Ok(line) = line else { break };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let found = keys.iter().try_fold(&value, |v, k| v.get(k));
        if let Some(text) = found.and_then(serde_json::Value::as_str) {
            return Some(text.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_agents_key_is_its_json_name() {
        for agent in Agent::ALL {
            assert_eq!(serde_json::to_value(agent).unwrap(), agent.key());
        }
    }

    use super::*;

    #[test]
    fn globs_match_names_as_the_stores_spell_them() {
        assert!(matches_glob("*.jsonl", "a.jsonl"));
        assert!(!matches_glob("*.jsonl", "a.jsonl.loopdbg-bak"));
        assert!(matches_glob("session-*.json", "session-2026-1.json"));
        assert!(!matches_glob("session-*.json", "session-2026-1.jsonl"));
        assert!(!matches_glob(
            "session-*.json",
            "session-1.json.loopdbg-bak"
        ));
        assert!(!matches_glob("session-*.json", "logs.json"));
        assert!(matches_glob("a*b*c", "a-b-b-c"));
        assert!(matches_glob("chats", "chats"));
        assert!(!matches_glob("chats", "chats2"));
        assert!(matches_glob("rollout-*.jsonl", "rollout-x.jsonl"));
        assert!(!matches_glob("a*a", "a"));
    }

    #[test]
    fn a_variable_moves_a_store_and_an_empty_one_does_not() {
        let places = Places::new(Some("/h".into()), |name| match name {
            "CODEX_HOME" => Some("/elsewhere".into()),
            "CLAUDE_CONFIG_DIR" => Some("".into()),
            _ => None,
        });
        assert_eq!(
            places.var_or_home("CODEX_HOME", ".codex"),
            Some(PathBuf::from("/elsewhere"))
        );
        assert_eq!(
            places.var_or_home("CLAUDE_CONFIG_DIR", ".claude"),
            Some(PathBuf::from("/h/.claude"))
        );
        assert_eq!(Places::new(None, |_| None).var_or_home("X", ".x"), None);
    }

    #[test]
    fn a_folder_with_a_quote_is_one_shell_word() {
        assert_eq!(quoted("/home/ann/app"), "/home/ann/app");
        assert_eq!(quoted("/home/ann/my app"), "'/home/ann/my app'");
        assert_eq!(quoted("/it's"), r"'/it'\''s'");
    }
}
