//! loopdbg in the agent, at the moment of pain: the hooks `loopdbg hooks
//! install claude-code` writes into Claude Code's settings, and what each
//! says when Claude Code runs it.
//!
//! Claude Code runs a hook command with a JSON object on standard input
//! (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, and for
//! `SessionStart` its `source`: `startup`, `resume`, `clear`, `compact`);
//! a JSON object on standard output with `systemMessage` is shown to the
//! user. A status line command gets the same kind of object and prints one
//! line. Each hook here judges the session's log as `loopdbg doctor` does
//! (the agent's own mending of what it sends counted: a session Claude Code
//! resumes by itself is not warned about) and says nothing when all is well;
//! it never fails the agent (anything it cannot read is silence, exit 0).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::doctor::{Standing, Verdict};

/// The moment a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// `SessionStart`: a session resumed (or started, cleared, compacted).
    SessionStart,
    /// `PreCompact`: the history is about to be summarised.
    PreCompact,
    /// The status line, redrawn as the session goes.
    StatusLine,
}

/// What the agent sent the hook on standard input, as far as it matters.
#[derive(Debug, Default)]
struct Input {
    transcript: Option<PathBuf>,
    session: Option<String>,
    source: Option<String>,
}

fn input_of(stdin: &[u8]) -> Input {
    let Ok(value) = serde_json::from_slice::<Value>(stdin) else {
        return Input::default();
    };
    Input {
        transcript: value["transcript_path"]
            .as_str()
            .filter(|p| !p.is_empty())
            .map(PathBuf::from),
        session: value["session_id"].as_str().map(str::to_string),
        source: value["source"].as_str().map(str::to_string),
    }
}

/// The Gemini CLI session file of `session` (its chats are named
/// `session-DATE-<the id's first 8 characters>.json[l]`): Gemini CLI
/// 0.61 runs `SessionStart` before it opens the resumed file, so the
/// hook's `transcript_path` is empty there.
pub fn gemini_session_file(places: &crate::stores::Places, session: &str) -> Option<PathBuf> {
    let short: String = session.chars().take(8).collect();
    if short.len() < 8 {
        return None;
    }
    crate::stores::stores(places)
        .into_iter()
        .filter(|s| s.agent == loopdbg_read::Agent::GeminiCli)
        .flat_map(|s| s.sessions)
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(&format!("-{short}.")))
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
}

/// Why the session at `path` will be refused as the agent will send it,
/// or `None` when it will be sent (clean, or mended by the agent itself),
/// or cannot be read.
pub fn refusal(path: &Path) -> Option<String> {
    refusal_as_sent(path, false)
}

/// [`refusal`] of what the agent will send once `SessionStart` has run.
/// Gemini CLI 0.61, resuming, appends a session header and a `$set`
/// holding only the session context to the resumed file just before it
/// runs `SessionStart`, then sends the history the file held before it:
/// judged whole, the file reads as that empty start (nothing to refuse)
/// while the request it sends is refused. At `SessionStart`, what follows
/// the last header after the first is not what is sent.
fn refusal_as_sent(path: &Path, at_start: bool) -> Option<String> {
    let (verdict, standing) = match at_start {
        false => crate::doctor::standing(path, false),
        true => {
            let bytes =
                loopdbg_io::files::read_regular(path, crate::limits::MAX_WHOLE_BYTES).ok()?;
            let kept = before_the_last_header(bytes);
            crate::doctor::diagnose_as(&crate::open::origin_of(path), kept, None, false)
        }
    };
    match (verdict, standing) {
        (_, Standing::Mended | Standing::Unread) => None,
        (Verdict::Needs(repair), Standing::Refused) => Some(repair.why),
        (Verdict::NotRepaired { why, .. }, Standing::Refused) => Some(why),
        (Verdict::Clean | Verdict::Cannot(_), Standing::Refused) => None,
    }
}

/// `bytes` up to the last line after the first that is a session header
/// (a record with `projectHash`, as Gemini CLI writes one when a session
/// starts or resumes); all of them when there is none.
fn before_the_last_header(bytes: Vec<u8>) -> Vec<u8> {
    let mut cut = None;
    let mut at = 0;
    for (k, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        if k > 0
            && line.windows(13).any(|w| w == b"\"projectHash\"")
            && serde_json::from_slice::<Value>(line)
                .is_ok_and(|v| v.get("projectHash").is_some() && v.get("sessionId").is_some())
        {
            cut = Some(at);
        }
        at += line.len();
    }
    match cut {
        Some(at) => bytes[..at].to_vec(),
        None => bytes,
    }
}

/// One line, at most `most` characters, for the screen.
fn short(text: &str, most: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.chars().count() > most {
        true => format!("{}…", text.chars().take(most - 1).collect::<String>()),
        false => text,
    }
}

/// What the hook prints for `moment`, given the agent's standard input:
/// `None` when it has nothing to say.
pub fn respond(moment: Moment, stdin: &[u8]) -> Option<String> {
    respond_finding(moment, stdin, &|_| None)
}

/// [`respond`], with `find` naming the session's file from its id where
/// the agent gives no `transcript_path` ([`gemini_session_file`]).
pub fn respond_finding(
    moment: Moment,
    stdin: &[u8],
    find: &dyn Fn(&str) -> Option<PathBuf>,
) -> Option<String> {
    let input = input_of(stdin);
    let path = match input.transcript {
        Some(path) => path,
        None => find(input.session.as_deref()?)?,
    };
    let why = refusal_as_sent(&path, moment == Moment::SessionStart);
    let fix = format!(
        "loopdbg doctor --write {}",
        crate::stores::quoted(&path.to_string_lossy())
    );
    match moment {
        Moment::StatusLine => Some(match why {
            None => "loopdbg ✓".to_string(),
            Some(why) => format!("loopdbg ⚠ 400 ahead: {}", short(&why, 60)),
        }),
        Moment::SessionStart => {
            let why = why?;
            let when = match input.source.as_deref() {
                Some("compact") => {
                    "After compaction, the provider will refuse this session's next request"
                }
                _ => "The provider will refuse this session's next request",
            };
            Some(
                json!({
                    "systemMessage": format!(
                        "loopdbg: {when} (400: {}). Quit, repair it (a backup is kept), and resume: {fix}",
                        short(&why, 240)
                    )
                })
                .to_string(),
            )
        }
        Moment::PreCompact => {
            let why = why?;
            Some(
                json!({
                    "systemMessage": format!(
                        "loopdbg: this session already holds what the provider refuses (400: {}); compaction keeps or splits it. Repair it first: {fix}",
                        short(&why, 240)
                    )
                })
                .to_string(),
            )
        }
    }
}

/// Where Claude Code keeps its user settings: `$CLAUDE_CONFIG_DIR` or
/// `~/.claude`, then `settings.json`.
pub fn claude_settings(places: &crate::stores::Places) -> Option<PathBuf> {
    Some(
        places
            .var_or_home("CLAUDE_CONFIG_DIR", ".claude")?
            .join("settings.json"),
    )
}

/// An agent loopdbg installs hooks into: its name in the commands
/// (`hooks run NAME …`), the events with their matchers and moments, and
/// whether it has a status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    name: &'static str,
    events: &'static [(&'static str, &'static str, &'static str)],
    status_line: bool,
}

/// Claude Code: `SessionStart` on resume and after compaction,
/// `PreCompact`, and the status line.
pub const CLAUDE_CODE: Target = Target {
    name: "claude-code",
    events: &[
        ("SessionStart", "resume|compact", "session-start"),
        ("PreCompact", "", "pre-compact"),
    ],
    status_line: true,
};

/// Gemini CLI (0.61): `SessionStart` (its `systemMessage` is written to
/// the terminal; on `-p` to standard error); no status line command. Not
/// `PreCompress`: mid-session the CLI's file is not what it sends (it
/// records each response twice, and resumes with both, but the live
/// session sends its own history), so a warning there was false: seen
/// with the real CLI, on a session the doctor had just repaired.
pub const GEMINI_CLI: Target = Target {
    name: "gemini-cli",
    events: &[("SessionStart", "", "session-start")],
    status_line: false,
};

impl Target {
    /// The words every command loopdbg installs for it holds, so
    /// `uninstall` (and a second `install`) finds its own entries and no
    /// one else's.
    fn ours(self) -> String {
        format!(" hooks run {} ", self.name)
    }

    fn our_status(self) -> String {
        format!(" hooks statusline {}", self.name)
    }
}

/// Where Gemini CLI keeps its user settings: `$GEMINI_CLI_HOME/.gemini`,
/// else `~/.gemini`, then `settings.json`.
pub fn gemini_settings(places: &crate::stores::Places) -> Option<PathBuf> {
    Some(
        places
            .var_or_home("GEMINI_CLI_HOME", "")?
            .join(".gemini")
            .join("settings.json"),
    )
}

/// What `install` or `uninstall` did to the settings.
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    /// The settings file.
    pub settings: PathBuf,
    /// Whether the file was written (`false`: it already said that).
    pub written: bool,
    /// Where the settings as they were are kept, when there were any.
    pub backup: Option<PathBuf>,
    /// What the user should know (a status line of their own kept).
    pub notes: Vec<String>,
}

/// Why the settings were not changed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The settings file is not JSON (or not an object): nothing is written.
    #[error("{0}")]
    Unreadable(String),
    /// It could not be written.
    #[error("{path}: {error}")]
    Write {
        /// The settings file.
        path: PathBuf,
        /// Why.
        error: String,
    },
}

fn is_ours(target: Target, hook: &Value) -> bool {
    hook["command"]
        .as_str()
        .is_some_and(|c| c.contains(&target.ours()))
}

/// `settings` with loopdbg's hooks taken out (and its status line, when
/// it is loopdbg's): the entries and matcher groups others wrote stay.
fn without_ours(target: Target, settings: &mut Map<String, Value>) {
    if let Some(Value::Object(hooks)) = settings.get_mut("hooks") {
        for (_, groups) in hooks.iter_mut() {
            let Value::Array(groups) = groups else {
                continue;
            };
            for group in groups.iter_mut() {
                if let Some(Value::Array(list)) = group.get_mut("hooks") {
                    list.retain(|h| !is_ours(target, h));
                }
            }
            groups.retain(|g| g["hooks"].as_array().is_none_or(|l| !l.is_empty()));
        }
        hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if hooks.is_empty() {
            settings.remove("hooks");
        }
    }
    let status_ours = settings
        .get("statusLine")
        .and_then(|s| s["command"].as_str())
        .is_some_and(|c| c.ends_with(&target.our_status()));
    if status_ours {
        settings.remove("statusLine");
    }
}

/// `settings` with loopdbg's hooks, run by `program`, and its status line
/// where no other is set (a note says how to add the segment to one).
fn with_ours(
    target: Target,
    settings: &mut Map<String, Value>,
    program: &str,
    notes: &mut Vec<String>,
) {
    without_ours(target, settings);
    let entry = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    let Value::Object(hooks) = entry else {
        return;
    };
    let ours = target.ours();
    for (event, matcher, moment) in target.events {
        let mut group = json!({
            "hooks": [{"type": "command", "command": format!("{program}{ours}{moment}"), "timeout": 10000}]
        });
        // Claude Code counts a hook's timeout in seconds, Gemini CLI in
        // milliseconds; a matcher only where one is given.
        if target == CLAUDE_CODE {
            group["hooks"][0]["timeout"] = json!(10);
        }
        if !matcher.is_empty() || target == CLAUDE_CODE {
            group["matcher"] = json!(matcher);
        }
        match hooks.entry(*event).or_insert_with(|| json!([])) {
            Value::Array(groups) => groups.push(group),
            other => *other = json!([group]),
        }
    }
    if !target.status_line {
        return;
    }
    let status = format!("{program}{}", target.our_status());
    match settings.get("statusLine") {
        None => {
            settings.insert(
                "statusLine".into(),
                json!({"type": "command", "command": status}),
            );
        }
        Some(theirs) => notes.push(format!(
            "a status line of your own is set ({}): kept; loopdbg's segment is `{status}` (it reads the same input on stdin)",
            short(&theirs["command"].to_string(), 80)
        )),
    }
}

/// A settings file as it was read (`None`: there was none) and as an
/// object.
type Read = (Option<Vec<u8>>, Map<String, Value>);

/// The settings at `path` as an object (`{}` when there is no file).
fn read_settings(path: &Path) -> Result<Read, HookError> {
    let bytes = match loopdbg_io::files::read_regular(path, 16 << 20) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => return Err(HookError::Unreadable(format!("{}: {e}", path.display()))),
    };
    let text = String::from_utf8_lossy(&bytes);
    let value: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(&text).map_err(|e| {
            HookError::Unreadable(format!(
                "{}:{}:{}: not JSON ({e}); nothing was written",
                path.display(),
                e.line(),
                e.column()
            ))
        })?
    };
    match value {
        Value::Object(map) => Ok((Some(bytes), map)),
        _ => Err(HookError::Unreadable(format!(
            "{}:1:1: the settings are not a JSON object; nothing was written",
            path.display()
        ))),
    }
}

/// Writes `settings` to `path` (the file as it was, `original`, kept
/// beside it as `settings.json.loopdbg-bak`), or nothing when they are
/// what the file says already.
fn write_settings(
    path: &Path,
    original: Option<Vec<u8>>,
    before: &Map<String, Value>,
    settings: Map<String, Value>,
    notes: Vec<String>,
) -> Result<Change, HookError> {
    let failed = |error: String| HookError::Write {
        path: path.to_path_buf(),
        error,
    };
    if original.is_some() && *before == settings {
        return Ok(Change {
            settings: path.to_path_buf(),
            written: false,
            backup: None,
            notes,
        });
    }
    let text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| failed(e.to_string()))?
        + "\n";
    let backup = match original {
        Some(original) => {
            let held = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
            let mut base = path.as_os_str().to_owned();
            base.push(".loopdbg-bak");
            let kept = loopdbg_io::files::replace_keeping(
                path,
                &held,
                &original,
                Path::new(&base),
                |out| out.write_all(text.as_bytes()),
            )
            .map_err(|e| failed(e.to_string()))?;
            Some(kept)
        }
        None => {
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(|e| failed(e.to_string()))?;
            }
            loopdbg_io::files::write_file(path, loopdbg_io::files::Existing::Keep, |out| {
                out.write_all(text.as_bytes())
            })
            .map_err(|e| failed(e.to_string()))?;
            None
        }
    };
    Ok(Change {
        settings: path.to_path_buf(),
        written: true,
        backup,
        notes,
    })
}

/// Puts loopdbg's hooks, run as `program`, into the Claude Code settings
/// at `path`: `SessionStart` on resume and after compaction, `PreCompact`,
/// and the status line where none is set. Idempotent (a second install
/// changes nothing; one from another binary path replaces the first);
/// anything else in the file stays as it was.
pub fn install(target: Target, path: &Path, program: &str) -> Result<Change, HookError> {
    let (original, before) = read_settings(path)?;
    let mut settings = before.clone();
    let mut notes = Vec::new();
    with_ours(target, &mut settings, program, &mut notes);
    write_settings(path, original, &before, settings, notes)
}

/// Takes loopdbg's hooks (and its status line) out of the settings at
/// `path`, leaving everything else.
pub fn uninstall(target: Target, path: &Path) -> Result<Change, HookError> {
    let (original, before) = read_settings(path)?;
    if original.is_none() {
        return Ok(Change {
            settings: path.to_path_buf(),
            written: false,
            backup: None,
            notes: vec!["there are no settings: nothing to take out".into()],
        });
    }
    let mut settings = before.clone();
    without_ours(target, &mut settings);
    write_settings(path, original, &before, settings, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = "/opt/bin/loopdbg";

    fn settings_in(dir: &Path, text: Option<&str>) -> PathBuf {
        let path = dir.join("settings.json");
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        path
    }

    fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A first install writes the hooks and the status line; a second
    /// changes nothing; uninstall leaves the user's own settings exactly as
    /// they were, the backup holding the file before each write.
    #[test]
    fn install_is_idempotent_and_uninstall_gives_the_users_settings_back() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = r#"{"model": "opus", "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}}"#;
        let path = settings_in(dir.path(), Some(theirs));
        let first = install(CLAUDE_CODE, &path, PROGRAM).unwrap();
        assert!(first.written);
        assert_eq!(
            std::fs::read_to_string(first.backup.unwrap()).unwrap(),
            theirs
        );
        let s = read(&path);
        assert_eq!(s["model"], "opus");
        let starts = s["hooks"]["SessionStart"].as_array().unwrap();
        assert_eq!(starts.len(), 2, "{s:#}");
        assert_eq!(starts[0]["hooks"][0]["command"], "echo hi");
        assert_eq!(
            starts[1]["hooks"][0]["command"],
            "/opt/bin/loopdbg hooks run claude-code session-start"
        );
        assert_eq!(starts[1]["matcher"], "resume|compact");
        assert_eq!(
            s["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "/opt/bin/loopdbg hooks run claude-code pre-compact"
        );
        assert_eq!(
            s["statusLine"]["command"],
            "/opt/bin/loopdbg hooks statusline claude-code"
        );
        let again = install(CLAUDE_CODE, &path, PROGRAM).unwrap();
        assert!(!again.written, "a second install changes nothing");
        // From another path: replaced, not added.
        install(CLAUDE_CODE, &path, "/usr/local/bin/loopdbg").unwrap();
        let s = read(&path);
        assert_eq!(s["hooks"]["SessionStart"].as_array().unwrap().len(), 2);
        let gone = uninstall(CLAUDE_CODE, &path).unwrap();
        assert!(gone.written);
        assert_eq!(read(&path), serde_json::from_str::<Value>(theirs).unwrap());
        assert!(!uninstall(CLAUDE_CODE, &path).unwrap().written);
    }

    #[test]
    fn a_status_line_of_the_users_own_is_kept_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = settings_in(
            dir.path(),
            Some(r#"{"statusLine": {"type": "command", "command": "~/bin/mine"}}"#),
        );
        let change = install(CLAUDE_CODE, &path, PROGRAM).unwrap();
        assert_eq!(read(&path)["statusLine"]["command"], "~/bin/mine");
        assert!(
            change.notes[0]
                .contains("loopdbg's segment is `/opt/bin/loopdbg hooks statusline claude-code`")
        );
        uninstall(CLAUDE_CODE, &path).unwrap();
        assert_eq!(read(&path)["statusLine"]["command"], "~/bin/mine");
    }

    #[test]
    fn settings_that_are_not_json_are_said_where_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = settings_in(dir.path(), Some("{\n  \"model\": \"opus\",\n}"));
        let error = install(CLAUDE_CODE, &path, PROGRAM)
            .unwrap_err()
            .to_string();
        assert!(error.contains("settings.json:3:1: not JSON"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"model\": \"opus\",\n}"
        );
        let none = settings_in(&dir.path().join("new"), None);
        let made = install(CLAUDE_CODE, &none, PROGRAM).unwrap();
        assert!(made.written && made.backup.is_none());
    }

    /// The hooks say nothing of a clean session, of one the agent mends
    /// itself, or of input they cannot read; of a refused one, the
    /// provider's words and the doctor command.
    #[test]
    fn a_hook_speaks_only_of_a_session_the_provider_will_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let input = |path: &Path, source: &str| {
            json!({"session_id": "s", "transcript_path": path, "hook_event_name": "SessionStart", "source": source})
                .to_string()
        };
        assert_eq!(respond(Moment::SessionStart, b"not json"), None);
        assert_eq!(
            respond(Moment::SessionStart, input(&log, "resume").as_bytes()),
            None,
            "no file"
        );
        // A call id Anthropic refuses, which Claude Code sends as it is.
        let lines = [
            json!({"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"go"}}),
            json!({"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu.1","name":"Bash","input":{"command":"ls"}}]}}),
            json!({"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu.1","content":"ok"}]}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&log, text).unwrap();
        let said = respond(Moment::SessionStart, input(&log, "resume").as_bytes()).unwrap();
        let said: Value = serde_json::from_str(&said).unwrap();
        let message = said["systemMessage"].as_str().unwrap();
        assert!(
            message.starts_with(
                "loopdbg: The provider will refuse this session's next request (400: "
            ),
            "{message}"
        );
        assert!(message.contains("loopdbg doctor --write "), "{message}");
        let status = respond(Moment::StatusLine, input(&log, "").as_bytes()).unwrap();
        assert!(status.starts_with("loopdbg ⚠ 400 ahead: "), "{status}");
        // A clean one: silence, and a quiet status.
        let clean: String = lines[..1].iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&log, clean).unwrap();
        assert_eq!(
            respond(Moment::SessionStart, input(&log, "resume").as_bytes()),
            None
        );
        assert_eq!(
            respond(Moment::StatusLine, input(&log, "").as_bytes()).unwrap(),
            "loopdbg ✓"
        );
    }

    /// What Gemini CLI 0.61 has written when it runs `SessionStart` on a
    /// resume: the resumed records, then a header (the same session's id)
    /// and a `$set` of its session context. The resumed records are judged.
    #[test]
    fn what_follows_the_resumes_header_is_not_judged_at_session_start() {
        let records = [
            r#"{"sessionId":"1dc89cd1-a","projectHash":"p","startTime":"t","kind":"main"}"#,
            r#"{"id":"m1","type":"user","content":[{"text":"go"}]}"#,
            r#"{"sessionId":"1dc89cd1-a","projectHash":"p","startTime":"t2","kind":"main"}"#,
            r#"{"$set":{"messages":[]}}"#,
        ];
        let text = records.join("\n") + "\n";
        let before = records[..2].join("\n") + "\n";
        let kept = before_the_last_header(text.clone().into_bytes());
        assert_eq!(String::from_utf8(kept).unwrap(), before);
        // One header: nothing is cut.
        assert_eq!(
            before_the_last_header(before.clone().into_bytes()),
            before.into_bytes()
        );
    }
}
