//! Reading session files from disk: the only place the binary touches them.

use std::path::Path;

use loopdbg_engine::diagnostics::json_span::{LineIndex, SpanNode};
use loopdbg_engine::{LoadError, Session};
use loopdbg_lesson::lint::lint;

/// A session with the text it came from.
pub struct Loaded {
    /// The name the user gave.
    pub origin: String,
    /// The file's text.
    pub text: String,
    /// The parsed session.
    pub session: Session,
}

/// Whether `path` reads as at least one captured conversation (only asked
/// once a session has failed to load from it).
fn holds_a_conversation(path: &Path) -> bool {
    let mut any = false;
    let read =
        super::check::for_each_conversation(path, None, super::check::Replies::Left, |_, _| {
            any = true
        });
    read.is_ok() && any
}

/// Reads and parses a session file, and the sub-agent sessions it names.
/// A sub-agent's file must lie inside the session's folder unless
/// `anywhere` is set, and must be a regular file.
pub fn session(path: &Path, anywhere: bool) -> Result<Loaded, LoadError> {
    let (origin, text, mut session) = match read_one(path) {
        Ok(read) => read,
        // A capture given where a session is wanted: say what works on it.
        Err(LoadError::Located(_)) if is_transcript(path) && holds_a_conversation(path) => {
            let name = path.display();
            return Err(LoadError::Refused {
                origin: name.to_string(),
                reason: format!(
                    "this is a captured conversation, not a session: `loopdbg {name}` replays it, `loopdbg check {name}` checks it, and `loopdbg record {name} -o session.json` turns it into a session this command runs"
                ),
            });
        }
        Err(e) => return Err(e),
    };
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
                origin: format!("{origin}: agent {}", loopdbg_lesson::report::clean(child)),
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
    let text = read_text(path, &origin)?;
    let session = Session::parse(&origin, &text)?;
    Ok((origin, text, session))
}

pub use loopdbg_corpus::read_text;

/// True when `path` holds a captured conversation rather than a session:
/// a request body (`messages`, `input` or `contents`, whatever else it
/// holds, `model` included), a message array, or JSON Lines. Anything unreadable is treated as a session, whose loader gives the
/// located error.
pub fn is_transcript(path: &Path) -> bool {
    use std::io::{BufRead, Read};
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // JSON Lines are known by their first line and the start of the next,
    // so a log of gigabytes is not read here only to be read again.
    let Ok((mut reader, _)) =
        loopdbg_input::gunzip::decoded(Box::new(std::io::BufReader::new(file)))
    else {
        return false;
    };
    let mut first = Vec::new();
    if reader.read_until(b'\n', &mut first).is_err() {
        return false;
    }
    let first_is_json = std::str::from_utf8(&first)
        .ok()
        .filter(|l| !l.trim().is_empty())
        .is_some_and(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok());
    if first_is_json {
        let more = loop {
            match reader.fill_buf() {
                Ok([]) | Err(_) => break false,
                Ok(buf) => {
                    if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                        break true;
                    }
                    let n = buf.len();
                    reader.consume(n);
                }
            }
        };
        if more {
            return true;
        }
    }
    let mut rest = Vec::new();
    if reader.read_to_end(&mut rest).is_err() {
        return false;
    }
    first.extend(rest);
    let Ok(text) = String::from_utf8(first) else {
        return false;
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        // A session is known by its own keys; a request body names its model
        // as a string and holds `messages`, `input` or `contents`.
        Ok(serde_json::Value::Object(o)) => {
            let conversation = ["messages", "input", "contents"]
                .iter()
                .any(|k| o.contains_key(*k))
                || (o.contains_key("sessionId") && o.contains_key("projectHash"));
            let session = o.contains_key("user") && o.get("model").is_some_and(|m| m.is_object());
            let value = serde_json::Value::Object(o);
            let recording = loopdbg_read::recording::is_recording(&value);
            // A capture of one exchange is one line: a capture all the same.
            let exchange = loopdbg_read::capture::is_exchange(&value);
            (conversation || recording || exchange) && !session
        }
        Ok(serde_json::Value::Array(_)) => true,
        Ok(_) => false,
        // A VCR cassette, in YAML.
        Err(_)
            if text.lines().any(|l| {
                l.starts_with("interactions:")
                    || l.starts_with("http_interactions:")
                    || l.starts_with("requests:")
            }) || loopdbg_read::cassettes::is_httprr(&text) =>
        {
            true
        }
        Err(_) => {
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            lines
                .next()
                .is_some_and(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
                && lines.next().is_some()
        }
    }
}

/// Lint warnings as `file:line:column: warning: ...` lines.
pub fn located_lint(loaded: &Loaded) -> Vec<String> {
    let spans = SpanNode::parse(&loaded.text);
    let mut lines = LineIndex::new(&loaded.text);
    lint(&loaded.session)
        .into_iter()
        .map(|w| {
            let (line, col) = spans
                .as_ref()
                .map_or((1, 1), |s| lines.line_col(s.offset_of(&w.path)));
            format!(
                "{}:{line}:{col}: warning[{}]: {}",
                loaded.origin,
                w.kind,
                loopdbg_lesson::report::clean(&w.message)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::is_transcript;
    use std::path::Path;

    fn at(path: &str) -> bool {
        is_transcript(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
    }

    #[test]
    fn a_request_body_naming_its_model_is_a_transcript() {
        let t = "tests/fixtures/transcripts";
        assert!(
            at(&format!("{t}/anthropic_server_tools.json")),
            "has \"model\""
        );
        assert!(at(&format!("{t}/responses_string_input.json")));
        assert!(at(&format!("{t}/gemini_clean.json")));
        assert!(at(&format!("{t}/claude_code_v2/parallel.jsonl")));
        assert!(at(&format!(
            "{t}/codex/rollout-2026-11-03T08-00-00-clean.jsonl"
        )));
    }

    #[test]
    fn a_session_is_known_by_its_own_keys() {
        assert!(!at("sessions/weather.json"));
        assert!(!at("sessions/fault_subagent.json"));
        // A broken session stays a session, so its loader locates the error.
        assert!(!at("tests/fixtures/bad/truncated_json.json"));
    }
}
