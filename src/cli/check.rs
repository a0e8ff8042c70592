//! `loopdbg check`'s text report and `--fix`'s file handling. Opening,
//! reading and checking the inputs is `loopdbg-corpus`'s, shared with the
//! Python package; this module decides only how the result looks in a
//! terminal and how a repaired copy lands on disk.

use std::io::IsTerminal;
use std::path::Path;

use loopdbg_engine::LoadError;
use loopdbg_judge::fix::Repair;
use loopdbg_read::Source;

pub use loopdbg_corpus::report::{
    ConversationReport, Progress, check_files, jsonl_file_record, jsonl_record, mcp_calls, summary,
};

/// Says how far a large input's check has come, on a terminal's stderr.
pub fn show_progress(p: &Progress) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    match p.done {
        false => {
            let percent = p.read * 100 / p.size.max(1);
            say_partial!(
                "\rchecking {}: {percent}% ({} conversations)",
                p.origin,
                p.requests
            );
        }
        true => say!(
            "\rchecking {}: done ({} conversations)      ",
            p.origin,
            p.requests
        ),
    }
}

/// Writes a repaired copy of `input` to `output`; returns the number of
/// repairs. The copy goes to a temporary file beside `output` and is
/// renamed into place only when complete, so a failure midway (a bad line,
/// a full disk, a kill) leaves `output` as it was.
pub fn fix_file(
    input: &Path,
    output: &Path,
    forced: Option<Source>,
    how: Repair,
    force: bool,
) -> Result<usize, LoadError> {
    let target = output.display().to_string();
    let refuse = |reason: &str| LoadError::Refused {
        origin: target.clone(),
        reason: reason.to_string(),
    };
    if input.as_os_str() != "-" && loopdbg_io::files::same_file(input, output) {
        return Err(refuse(
            "refusing to overwrite the input (the same file, through a link or not); choose another -o",
        ));
    }
    let write_err = |e: std::io::Error| LoadError::Unwritable {
        origin: target.clone(),
        reason: e.to_string(),
    };
    let existing = match force {
        true => loopdbg_io::files::Existing::Replace,
        false => loopdbg_io::files::Existing::Keep,
    };
    // The repair's own error, if it failed while writing: the writer can
    // only carry an io::Error out.
    let mut failed: Option<LoadError> = None;
    let written = loopdbg_io::files::write_file(output, existing, |out| {
        loopdbg_corpus::write_repaired_input(input, forced, how, out, &write_err).map_err(|e| {
            failed = Some(e);
            std::io::Error::other("the repair failed")
        })
    });
    match (written, failed) {
        (_, Some(e)) => Err(e),
        (Ok(total), None) => Ok(total),
        (Err(loopdbg_io::files::WriteError::Exists), None) => {
            Err(refuse("exists; pass --force to replace it"))
        }
        (Err(loopdbg_io::files::WriteError::Io(e)), None) => Err(write_err(e)),
    }
}
