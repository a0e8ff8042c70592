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
//! - [`prices`]: the price table tokens are priced with.
//!
//! Like `loopdbg-wire`, it opens no terminal and starts no runtime; it
//! reads files and the clock is never asked.

use std::path::Path;

use loopdbg_engine::LoadError;
use serde_json::Value;

pub mod conversations;
pub mod doctor;
pub mod follow;
pub mod limits;
pub mod open;
pub mod prices;
pub mod replay;
pub mod report;
pub mod sessions;
pub mod table;
pub mod text;
pub mod traces;

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

/// True when the first line of `bytes` is a proxy capture record.
pub fn is_capture(bytes: &[u8]) -> bool {
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace));
    first
        .and_then(|l| serde_json::from_slice::<Value>(l).ok())
        .is_some_and(|v| loopdbg_read::capture::is_exchange(&v))
}
