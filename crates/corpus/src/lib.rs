//! Captured files of every layout, opened, read into conversations and
//! checked: the reports `loopdbg check --format json` and `--format jsonl`
//! print. The CLI and the Python package (`crates/python`) both call
//! this crate, so a file is read and judged by one piece of code whichever
//! way it is asked.
//!
//! - [`open`]: an input opened once (file, pipe or bytes in memory), its
//!   layout detected by content, read into conversations;
//! - [`report`]: each conversation checked, the file's report, and the
//!   summary document `--format json` prints;
//! - [`table`]: the check as rows, one per conversation, for Parquet and
//!   warehouses;
//! - [`traces`]: OTLP trace files (JSON Lines, one export, protobuf);
//! - [`prices`]: the price table tokens are priced with;
//! - [`exports`]: `run --export`, a run as a handout or OTLP spans;
//! - [`doctor`], [`stores`] and [`scan`]: an agent's session repaired, and
//!   every agent's sessions on this machine found and put to the doctor.
//!
//! It opens no terminal and starts no runtime; it reads (and the doctor
//! writes) files, and only the doctor asks the clock (how recently an
//! agent wrote the file it would repair).
#![forbid(unsafe_code)]

use std::path::Path;

use loopdbg_engine::LoadError;
use serde_json::Value;

pub mod bundle;
pub mod ci;
pub mod conversations;
pub mod cores;
#[cfg(feature = "crush")]
pub mod crush_store;
pub mod doctor;
pub mod exports;
pub mod follow;
pub mod hooks;
pub mod limits;
pub mod open;
#[cfg(feature = "opencode")]
pub mod opencode_store;
pub mod prices;
pub mod replay;
pub mod report;
pub mod scan;
pub mod scan_cache;
pub mod sessions;
#[cfg(any(feature = "opencode", feature = "crush"))]
mod sqlite;
pub mod stores;
pub mod table;
pub mod text;
#[cfg(feature = "otlp")]
pub mod traces;
#[cfg(not(feature = "otlp"))]
pub mod traces_unread;
#[cfg(not(feature = "otlp"))]
pub use traces_unread as traces;

pub use limits::{MAX_LINE_BYTES, MAX_SESSION_BYTES, MAX_WHOLE_BYTES};
pub use open::{
    GrowingLayout, ReadSummary, Replies, conversation_of_line, for_each_conversation,
    for_each_conversation_in, growing_layout, origin_of, write_repaired_bytes,
    write_repaired_input,
};
pub use report::{
    ConversationReport, FileError, FileReport, Progress, check_bytes, check_file, check_files,
    jsonl_file_record, jsonl_record, mcp_calls, summary,
};

/// Where an export's times begin (`run --export otlp`): `SOURCE_DATE_EPOCH` (seconds) when set,
/// for an export that is the same every time, else now.
pub fn base_ns_now() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| s.saturating_mul(1_000_000_000))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        })
}

/// Reads a regular file as UTF-8 text (a byte order mark is dropped);
/// anything else is refused with where and why.
pub fn read_text(path: &Path, origin: &str) -> Result<String, LoadError> {
    let unreadable = |e: std::io::Error| LoadError::Unreadable {
        origin: origin.to_string(),
        reason: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(LoadError::Refused {
            origin: origin.to_string(),
            reason: "not a regular file".into(),
        });
    }
    if meta.len() > limits::MAX_SESSION_BYTES {
        return Err(LoadError::Refused {
            origin: origin.to_string(),
            reason: format!(
                "{} MiB is larger than a session may be ({} MiB)",
                meta.len() >> 20,
                limits::MAX_SESSION_BYTES >> 20
            ),
        });
    }
    let mut bytes = std::fs::read(path).map_err(unreadable)?;
    if bytes.starts_with(b"\xef\xbb\xbf") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| crate::open::not_utf8(origin, 1, &e))
}

/// Whether a capture may be appended to `path`: it does not exist, is
/// empty or is not a regular file, or its first line is a record
/// `is_record` knows (named `record` in the refusal). Anything else (a
/// session, a log, a handout named by mistake) would get JSON lines glued
/// to its end.
pub fn appendable_capture(
    path: &Path,
    is_record: fn(&Value) -> bool,
    record: &str,
) -> Result<(), LoadError> {
    use std::io::{BufRead, Read};
    let origin = path.display().to_string();
    let unreadable = |e: std::io::Error| LoadError::Unreadable {
        origin: origin.clone(),
        reason: e.to_string(),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(unreadable(e)),
    };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    let file = std::fs::File::open(path).map_err(unreadable)?;
    // A capture's first line is one record; a megabyte is plenty to tell.
    let mut first = Vec::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_until(b'\n', &mut first)
        .map_err(unreadable)?;
    match serde_json::from_slice::<Value>(&first).is_ok_and(|v| is_record(&v)) {
        true => Ok(()),
        false => Err(LoadError::Refused {
            origin,
            reason: format!(
                "exists and is not a capture (its first line is not {record}); name a new file, or pass --force to append to it anyway"
            ),
        }),
    }
}
