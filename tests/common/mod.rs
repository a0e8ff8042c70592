//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod pty;

use loopdbg_engine::{LoadError, Session};
use std::path::Path;

/// The debugger replaying the request-body fixture `tests/fixtures/
/// transcripts/NAME` (detected as `check` detects it), not yet sized.
pub fn replay_of_fixture(name: &str) -> loopdbg_tui::app::App {
    let path = format!(
        "{}/tests/fixtures/transcripts/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let source = loopdbg_read::detect(&doc).unwrap();
    let conv = loopdbg_read::read(&doc, source).unwrap();
    let findings = loopdbg_judge::check::check(&conv);
    let trace = loopdbg_export::replay::trace_of(&conv, &findings);
    let session = loopdbg_export::replay::session_for(&conv, "replay");
    loopdbg_tui::app::App::replay(
        name,
        session,
        trace,
        source.as_str(),
        loopdbg_tui::theme::Theme::color(),
    )
}

/// A shipped session by file name (`weather.json`, or an English
/// companion as `en/weather.json`), named `sessions/NAME` in errors, with
/// its sub-agent sessions loaded from its own folder (as the binary's
/// loader does).
pub fn session(name: &str) -> Session {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sessions");
    let folder = match name.rsplit_once('/') {
        Some((folder, _)) => format!("{folder}/"),
        None => String::new(),
    };
    let read = |file: &str| -> Result<Session, LoadError> {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        Session::parse(&format!("sessions/{file}"), &text)
    };
    let mut s = read(name).unwrap_or_else(|e| panic!("{e}"));
    s.resolve_agents(0, &mut |file, _| read(&format!("{folder}{file}")))
        .unwrap();
    s
}

/// Every shipped session's name, sorted: the sessions, then their English
/// companions as `en/NAME`.
pub fn shipped_names() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sessions");
    let files = |folder: &str, prefix: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| format!("{prefix}{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        names
    };
    let mut names = files(dir, "");
    names.extend(files(&format!("{dir}/en"), "en/"));
    names
}

/// Every shipped session, by file name, sorted (companions included).
pub fn shipped() -> Vec<(String, Session)> {
    shipped_names()
        .into_iter()
        .map(|n| (n.clone(), session(&n)))
        .collect()
}

pub use loopdbg_tui::update::apply;

/// The text of `tests/fixtures/transcripts/NAME`.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/transcripts/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A request-body fixture read as the format it is detected as.
pub fn body(name: &str) -> loopdbg_read::Conversation {
    let doc: serde_json::Value = serde_json::from_str(&fixture(name)).unwrap();
    loopdbg_read::read(&doc, loopdbg_read::detect(&doc).unwrap()).unwrap()
}

/// A Claude Code log fixture read into its conversations.
pub fn claude_code_log(name: &str) -> Vec<loopdbg_read::Conversation> {
    let mut log = loopdbg_read::ClaudeCodeLog::default();
    for (i, line) in fixture(name).lines().enumerate() {
        log.push_owned(i + 1, serde_json::from_str(line).unwrap())
            .unwrap();
    }
    log.finish()
}

/// The `loopdbg` binary as the tests run it: from the repository's root
/// (so `sessions/…` and `tests/fixtures/…` resolve), without colour.
pub fn loopdbg() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("loopdbg").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        // `doctor --scan`'s cache: never the developer's own, and one of
        // each command's own, so no test takes another's verdicts (a test
        // of the cache names its own folder).
        .env("XDG_CACHE_HOME", fresh_cache_dir());
    cmd
}

/// A cache folder no other command of this test run has used.
fn fresh_cache_dir() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("xdg-cache")
        .join(format!("{}-{n}", std::process::id()))
}

/// A fresh folder of the test's own, removed when it is dropped.
pub struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh scratch folder (`name` only labels it, for a failing test's
/// message).
pub fn scratch(name: &str) -> Scratch {
    Scratch(
        tempfile::Builder::new()
            .prefix(&format!("loopdbg-{name}-"))
            .tempdir()
            .unwrap(),
    )
}

/// The address `loopdbg proxy` listens on, from its first line on stderr
/// (`loopdbg proxy: listening on http://ADDR → …`).
pub fn proxy_address(banner: &str) -> String {
    banner
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {banner:?}"))
        .to_string()
}

/// A test that cannot run here says so instead of passing quietly: the
/// reason goes to standard error and to `skipped.txt` in the tests' scratch
/// folder, which `.ci/run` counts into its closing line. Under `CI=true`,
/// where `.ci/run` installs what the tests need, a skip is a failure.
pub fn skip(test: &str, reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test} cannot run under CI=true: {reason}");
    }
    eprintln!("SKIPPED {test}: {reason}");
    let list = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped.txt");
    let line = format!("{test}: {reason}\n");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(list)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
}

/// Seed 000's bug as `run` flags: weather_fx.json, only the first call
/// taken, the stub asking again until the round limit.
pub const FX_FIRST_REASK: [&str; 7] = [
    "sessions/weather_fx.json",
    "--extract",
    "first",
    "--behavior",
    "reask",
    "--stop",
    "tool-calls",
];

/// `loopdbg check --format json FILE` from the repository's root: its
/// exit code and the report.
pub fn check_json(path: impl AsRef<std::ffi::OsStr>) -> (Option<i32>, serde_json::Value) {
    let out = loopdbg()
        .args(["check", "--format", "json"])
        .arg(path.as_ref())
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            path.as_ref().to_string_lossy(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

/// Every finding of the first file of a `check --format json` report.
pub fn findings(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["files"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["findings"].as_array().unwrap().clone())
        .collect()
}
