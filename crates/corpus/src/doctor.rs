//! The doctor on a file: what keeps an agent's session from being sent
//! again, and (when asked to write) the smallest repair, in the agent's
//! own format. The original is kept beside it as `FILE.loopdbg-bak`
//! (numbered, never overwritten) before the repaired file replaces it; the
//! repaired file is checked again. The repair itself is
//! `loopdbg_judge::doctor`'s; this module reads, backs up and writes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use loopdbg_io::files::{KeepError, replace_keeping};
use loopdbg_judge::check::Finding;
use loopdbg_read::finding::Kind;
use loopdbg_read::{Agent, Source};

use loopdbg_engine::diagnostics::inert;

use crate::open::origin_of;
use crate::report::check_bytes;

/// A file changed more recently than this is taken to be one an agent is
/// still appending to, and is not rewritten without `--force`.
const STILL_WRITTEN: Duration = Duration::from_secs(5);

/// What one file needs.
pub enum Verdict {
    /// Nothing keeps it from being sent.
    Clean,
    /// These changes would make it sendable.
    Needs(Repair),
    /// It cannot be repaired here, and why.
    Cannot(String),
    /// It is not clean, and it is a file the doctor does not repair (an
    /// agent store it only names, a request body): read as `format`, why.
    NotRepaired {
        /// What it is read as (`copilot-cli`, `anthropic`, …).
        format: String,
        /// What keeps it from being sent as it stands.
        why: String,
    },
}

/// A repair and the text it was made from: [`apply`] writes it only
/// over a file that still holds that text.
pub struct Repair {
    /// The new file and what changed.
    pub plan: loopdbg_judge::doctor::Plan,
    /// Why the agent cannot send the session as it stands: the first
    /// finding's words (the provider's 400 where it has one).
    pub why: String,
    /// The file as it was read: the plan keeps most of its lines.
    pub original: String,
}

impl Repair {
    /// The repaired file's lines, each without its `\n`.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.plan.lines(&self.original)
    }
}

/// Bytes that several readers share without copying (the check reads
/// them, then the repair).
struct Shared(std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// What writing a repair came to.
pub enum Written {
    /// Not written, and why: the file may still be written to, the backup
    /// could not be made, or the write failed (the original unchanged).
    Not {
        /// Why, in the words the CLI prints after `not written: `.
        why: String,
        /// True when an error stopped it (rather than a caution the user
        /// can lift with `--force`).
        failed: bool,
    },
    /// Written, the original kept as `backup`.
    Done {
        /// Where the original is kept.
        backup: PathBuf,
        /// Whether the repaired file checks clean.
        clean: bool,
    },
}

/// `loopdbg doctor FILE… [--write] [--force]`: says what each file needs
/// (and, with `write`, what writing its repair came to) on `out`. Its exit
/// code: 0 when every file is (or, written, became) clean; 1 when one
/// needs or kept a repair; 2 when one could not be read or repaired.
pub fn report(files: &[PathBuf], write: bool, force: bool, out: &mut dyn Write) -> u8 {
    let mut worst = 0u8;
    for path in files {
        let name = path.display();
        let (verdict, standing) = standing(path, true);
        let code = match verdict {
            Verdict::Clean => {
                let _ = writeln!(out, "{name}: nothing keeps this session from being sent");
                0
            }
            Verdict::Cannot(why) => {
                let _ = writeln!(out, "{name}: not changed: {}", inert::clean(&why));
                2
            }
            Verdict::NotRepaired { format, why } => {
                let _ = writeln!(
                    out,
                    "{name}: not changed: {} (it is read as {format}; the doctor repairs the session stores of {}, and `check --fix` request bodies and captures)",
                    inert::clean(&why),
                    Agent::repaired_names()
                );
                2
            }
            Verdict::Needs(repair) => {
                let n = repair.plan.changes.len();
                // A session its agent resumes by mending what it sends is
                // resumable, as `doctor --scan` counts it (they disagreed
                // on one file, exit 1 against 0): the changes write the
                // mending down.
                let (heading, unwritten, code) = match standing {
                    Standing::Mended => (
                        format!(
                            "its agent resumes it, mending what it sends; {n} change(s) would write that down:"
                        ),
                        "nothing written, nothing needed: pass --write to keep the mended history, with a backup",
                        0,
                    ),
                    Standing::Refused | Standing::Unread => (
                        format!("{n} change(s) would make it sendable:"),
                        "nothing written: pass --write to repair it, keeping a backup",
                        1,
                    ),
                };
                let _ = writeln!(out, "{name}: {heading}");
                let _ = writeln!(out, "  why: {}", inert::clean(&repair.why));
                for change in &repair.plan.changes {
                    // Ids are the agent's: an escape in one stays inert here.
                    let what = inert::clean(&change.what);
                    let _ = writeln!(out, "  line {}: {what}", change.line);
                }
                match write {
                    true => said(out, apply(path, repair, force)),
                    false => {
                        let _ = writeln!(out, "  ({unwritten})");
                        code
                    }
                }
            }
        };
        worst = worst.max(code);
    }
    worst
}

/// Says what writing came to; its exit code.
fn said(out: &mut dyn Write, written: Written) -> u8 {
    match written {
        Written::Not { why, failed } => {
            let _ = writeln!(out, "  not written: {why}");
            if failed { 2 } else { 1 }
        }
        Written::Done { backup, clean } => {
            let _ = writeln!(
                out,
                "  written; the original is kept as {}",
                backup.display()
            );
            if clean {
                let _ = writeln!(out, "  checked again: nothing keeps it from being sent");
                0
            } else {
                let _ = writeln!(
                    out,
                    "  checked again: it still needs repair (the backup holds the original)"
                );
                1
            }
        }
    }
}

/// The findings a repair is for: what makes the provider refuse the
/// history as it stands in the file (the kinds the doctor repairs, and
/// any other 400, which it says it cannot repair). A refusal the log
/// recorded is the past, not what the next request sends. A note is not
/// a fault: calls in flight when the log ends (the agent killed mid-tool,
/// or a compaction that closed the history they were in) are closed by
/// the agent as it resumes.
fn needs_repair(f: &Finding) -> bool {
    let repaired = matches!(
        f.kind,
        Kind::UnansweredCall | Kind::UnexpectedResult | Kind::DuplicateResult | Kind::InvalidId
    );
    // Two records on one line are a note for `check` (it reads both), but
    // the agent reads a line at a time and loses them.
    (repaired && !f.is_note())
        || f.kind == Kind::JoinedRecords
        || (f.rejected_by_provider() && f.kind != Kind::RefusedRequest)
}

/// What the agent's own resume makes of a session that is not clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// It sends the history as it stands and the provider refuses it.
    Refused,
    /// It resumes, mending what it sends as it goes (it closes an open
    /// call, skips a torn line): the repair writes down what it sends.
    Mended,
    /// The file could not be read.
    Unread,
}

/// What keeps the session at `path` from being sent, and its repair. The
/// file is read once: the check, the repair and (in [`apply`]) the test
/// that it is unchanged all see the same bytes.
pub fn diagnose(path: &Path) -> Verdict {
    standing(path, true).0
}

/// [`diagnose`], and what the agent's own resume makes of the session as
/// it stands (for a clean one, [`Standing::Mended`]: nothing to mend).
/// Without `plan_mended`, a session the agent mends by itself gets no
/// repair made ([`Verdict::NotRepaired`]): a scan of a large store lists
/// those, and making their repairs would cost it most of its time.
pub fn standing(path: &Path, plan_mended: bool) -> (Verdict, Standing) {
    standing_as(path, None, plan_mended)
}

/// [`standing`], the file read as `known` when the caller knows what it is
/// (the scan knows the store it found a task history in).
pub fn standing_as(path: &Path, known: Option<Source>, plan_mended: bool) -> (Verdict, Standing) {
    // Bounded, and only a regular file: a FIFO or `/dev/zero` named as a
    // session (or linked in a store) is refused, not waited on or read
    // forever (issue 59).
    match loopdbg_io::files::read_regular(path, crate::limits::MAX_WHOLE_BYTES) {
        Ok(bytes) => diagnose_as(&origin_of(path), bytes, known, plan_mended),
        Err(e) => (
            Verdict::Cannot(format!("it could not be read: {e}")),
            Standing::Unread,
        ),
    }
}

/// [`standing`] of `bytes` already read (named `origin`), read as `forced`
/// when given (as `check --format` forces it): what the fuzz targets run.
pub fn diagnose_as(
    origin: &str,
    bytes: Vec<u8>,
    forced: Option<loopdbg_read::Source>,
    plan_mended: bool,
) -> (Verdict, Standing) {
    // Shared with the check, not copied: a log is held once.
    let shared = std::sync::Arc::new(bytes);
    let report = check_bytes(origin, Shared(shared.clone()), forced, &[], &mut |_, _| {});
    let bytes = std::sync::Arc::unwrap_or_clone(shared);
    let unread = |why: String| (Verdict::Cannot(why), Standing::Unread);
    if let Some(e) = report.errors.first() {
        // A torn last line is the one reading error the doctor repairs.
        if report.errors.len() > 1 || !is_last_line(&bytes, e.line) {
            return unread(format!("it could not be read: {}", e.message));
        }
    }
    let format = report.format.map_or("unknown", Source::as_str);
    let findings: Vec<Finding> = report
        .results
        .iter()
        .flat_map(|r| r.findings.iter().filter(|f| needs_repair(f)).cloned())
        .collect();
    if findings.is_empty() && report.errors.is_empty() {
        return (Verdict::Clean, Standing::Mended);
    }
    let standing = match findings.iter().any(Finding::rejected_by_provider) {
        true => Standing::Refused,
        false => Standing::Mended,
    };
    if standing == Standing::Mended && !plan_mended {
        let format = format.to_string();
        let why = why_of(&findings);
        return (Verdict::NotRepaired { format, why }, standing);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return unread(format!("it is not UTF-8: {e}")),
    };
    let plan = match report.format.and_then(Source::agent) {
        Some(Agent::ClaudeCode) => loopdbg_judge::doctor::claude_code(&text, &findings),
        Some(Agent::Codex) => loopdbg_judge::doctor::codex(&text, &findings),
        Some(Agent::GeminiCli) => loopdbg_judge::doctor::gemini_cli(&text),
        Some(Agent::KimiCode) => loopdbg_judge::doctor::kimi_code(&text, &findings),
        Some(
            Agent::CopilotCli
            | Agent::Cline
            | Agent::RooCode
            | Agent::KiloCode
            | Agent::Opencode
            | Agent::Crush,
        )
        | None => {
            let format = format.to_string();
            let why = why_of(&findings);
            return (Verdict::NotRepaired { format, why }, standing);
        }
    };
    let verdict = match plan {
        // Findings the doctor has no repair for are said, never called clean.
        Ok(plan) if plan.changes.is_empty() && !findings.is_empty() => Verdict::Cannot(format!(
            "the doctor has no repair for this yet: {}",
            findings[0].message
        )),
        Ok(plan) if plan.changes.is_empty() => Verdict::Clean,
        Ok(plan) => Verdict::Needs(Repair {
            plan,
            why: why_of(&findings),
            original: text,
        }),
        Err(why) => Verdict::Cannot(why),
    };
    (verdict, standing)
}

/// The first finding's words, and how many more there are; for a file
/// whose only fault is a torn last line, that.
fn why_of(findings: &[Finding]) -> String {
    match findings {
        [] => "its last line was cut off mid-write".to_string(),
        [one] => one.message.clone(),
        [first, rest @ ..] => format!("{} (and {} more)", first.message, rest.len()),
    }
}

/// Whether `line` is the last line of `bytes`, and unfinished.
fn is_last_line(bytes: &[u8], line: Option<usize>) -> bool {
    line.is_some_and(|line| {
        bytes.split_inclusive(|&b| b == b'\n').count() == line && !bytes.ends_with(b"\n")
    })
}

/// Keeps the original as a backup, writes the repair in its place, and
/// checks it again (the repair let go first: a log is held once). A file
/// changed in the last few seconds (an agent may still be writing it) is
/// not written without `force`; a file that is
/// no longer what [`diagnose`] read, or that grows while the repair is
/// written, is left as it is (see `loopdbg_io::files::replace_keeping`:
/// no line an agent appends is lost). A session named through a symbolic
/// link is repaired where the link leads, its backup beside it, and the
/// link stays a link (it was once replaced by the repaired file, its
/// "backup" a second link).
pub fn apply(path: &Path, repair: Repair, force: bool) -> Written {
    let resolved = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).ok(),
        _ => None,
    };
    let path = resolved.as_deref().unwrap_or(path);
    let name = path.display();
    let not = |why: String, failed: bool| Written::Not { why, failed };
    let held = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return not(format!("{e}; the original is unchanged"), true),
    };
    let recent = held
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < STILL_WRITTEN);
    if recent && !force {
        return not(
            format!(
                "{name} changed in the last {} s; an agent may still be writing it (stop it, or pass --force)",
                STILL_WRITTEN.as_secs()
            ),
            false,
        );
    }
    match loopdbg_io::files::holds(&mut &held, repair.original.as_bytes()) {
        Ok(true) => {}
        Ok(false) => {
            return not(
                format!(
                    "{name} changed since it was read; nothing was changed (run the doctor again)"
                ),
                false,
            );
        }
        Err(e) => return not(format!("{e}; the original is unchanged"), true),
    }
    let backup_base = PathBuf::from(format!("{}.loopdbg-bak", path.display()));
    let original = repair.original.as_bytes();
    let kept = replace_keeping(path, &held, original, &backup_base, |w| {
        // Buffered: the lines are slices of the original, one write each
        // would be a system call per line.
        let mut w = std::io::BufWriter::with_capacity(1 << 16, w);
        for line in repair.lines() {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()
    });
    drop(repair);
    match kept {
        Ok(backup) => Written::Done {
            backup,
            clean: matches!(diagnose(path), Verdict::Clean),
        },
        Err(KeepError::Changed) => not(
            format!(
                "{name} {} (stop the agent, then run the doctor again)",
                KeepError::Changed
            ),
            false,
        ),
        Err(e @ KeepError::HeldOpen(_)) => not(
            format!(
                "{name}: {e} (quit it, then run the doctor again: its later lines would go to the backup)"
            ),
            false,
        ),
        Err(KeepError::Io(e)) => not(format!("{e}; the original is unchanged"), true),
    }
}

/// What the doctor promises of any bytes read as `agent`'s store, checked:
/// it plans a repair only for UTF-8 text; the repair keeps, in order and
/// byte for byte, every line no change names; and the doctor takes its
/// own repair without panicking. `Err` says which promise broke. The fuzz
/// targets (`fuzz/fuzz_targets/doctor_*.rs`) run it on every input.
pub fn verify_repair(bytes: &[u8], agent: loopdbg_read::Source) -> Result<(), String> {
    let (verdict, _) = diagnose_as("session.jsonl", bytes.to_vec(), Some(agent), true);
    let Verdict::Needs(repair) = verdict else {
        return Ok(());
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|_| "a repair planned for text that is not UTF-8".to_string())?;
    let named: std::collections::HashSet<usize> =
        repair.plan.changes.iter().map(|c| c.line).collect();
    let mut kept = repair.lines();
    // Lines as the doctor splits them: at `\n` only (a `\r` is kept).
    let lines = text
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l));
    for (k, line) in lines.enumerate() {
        if named.contains(&(k + 1)) || line.trim().is_empty() {
            continue;
        }
        if !kept.any(|l| l == line) {
            return Err(format!(
                "line {} is not named by a change, yet the repair does not keep it",
                k + 1
            ));
        }
    }
    let repaired = repair.lines().collect::<Vec<_>>().join("\n") + "\n";
    let _ = diagnose_as("session.jsonl", repaired.into_bytes(), Some(agent), true);
    Ok(())
}
