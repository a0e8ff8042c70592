//! OTLP trace files, in a build without the `otlp` feature: recognised by
//! their content, and refused with the reason.

use std::io::BufRead;

use loopdbg_engine::LoadError;
use loopdbg_read::Conversation;

/// A trace file, which this build cannot hold.
pub enum TraceFile {}

/// Whether the input opens as OTLP protobuf, by its first bytes.
pub fn is_protobuf(reader: &mut (dyn BufRead + Send)) -> bool {
    reader
        .fill_buf()
        .is_ok_and(loopdbg_read::detect::looks_like_protobuf)
}

fn not_built(origin: &str) -> LoadError {
    LoadError::Refused {
        origin: origin.to_string(),
        reason: "this is an OTLP trace file, and this loopdbg was built without the `otlp` feature that reads them".into(),
    }
}

/// Refused: this build reads no traces.
pub fn protobuf(origin: &str, _: Box<dyn BufRead + Send>) -> Result<TraceFile, LoadError> {
    Err(not_built(origin))
}

/// Refused: this build reads no traces.
pub fn json_lines(
    origin: &str,
    _: Vec<(usize, String)>,
    _: Box<dyn BufRead + Send>,
) -> Result<TraceFile, LoadError> {
    Err(not_built(origin))
}

/// Refused: this build reads no traces.
pub fn document(origin: &str, _: &str) -> Result<TraceFile, LoadError> {
    Err(not_built(origin))
}

/// Never called: no trace file is ever opened.
pub fn conversations(
    _: &str,
    file: TraceFile,
    _: bool,
    _: bool,
) -> (Vec<Conversation>, Option<Vec<Conversation>>, Vec<LoadError>) {
    match file {}
}
