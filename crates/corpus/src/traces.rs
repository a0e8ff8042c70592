//! OTLP trace files as `check`, replay and `record` read them: OTLP JSON
//! (one `ExportTraceServiceRequest` per line, as the Collector's file
//! exporter and the SDKs' JSON file exporters write, or one per file) and
//! OTLP protobuf. The spans become conversations in `loopdbg_read::
//! otlp`; this module reads the bytes and locates what cannot be read.

use std::io::{BufRead, Read};

use loopdbg_engine::LoadError;
use loopdbg_read::Conversation;
use loopdbg_read::otlp::{self, Span};

use crate::limits::MAX_WHOLE_BYTES;

/// A trace file's spans, and the exports that could not be read (each
/// located; the rest is read).
pub struct TraceFile {
    /// Every span read.
    pub spans: Vec<Span>,
    /// Lines (exports) that are not OTLP JSON.
    pub errors: Vec<LoadError>,
}

/// Whether the input opens as OTLP protobuf, by its first bytes.
pub fn is_protobuf(reader: &mut (dyn BufRead + Send)) -> bool {
    reader
        .fill_buf()
        .is_ok_and(loopdbg_read::detect::looks_like_protobuf)
}

/// A trace file's conversations, one per LLM span, in order: with each
/// reply appended when `appended`, and each request as sent beside them
/// when `sent` is asked for; and what could not be read.
pub fn conversations(
    origin: &str,
    file: TraceFile,
    appended: bool,
    sent: bool,
) -> (Vec<Conversation>, Option<Vec<Conversation>>, Vec<LoadError>) {
    let read = otlp::read_traces(&file.spans, appended);
    let sent = sent.then(|| otlp::read_traces(&file.spans, false).conversations);
    let mut errors = file.errors;
    errors.extend(read.errors.into_iter().map(|e| LoadError::Refused {
        origin: match e.line {
            Some(n) => format!("{origin}:{n}"),
            None => origin.to_string(),
        },
        reason: e.message,
    }));
    (read.conversations, sent, errors)
}

/// The rest of `reader` as one OTLP protobuf export.
pub fn protobuf(origin: &str, reader: Box<dyn BufRead + Send>) -> Result<TraceFile, LoadError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_WHOLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LoadError::Unreadable {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
    if bytes.len() as u64 > MAX_WHOLE_BYTES {
        return Err(too_large(origin));
    }
    let export = otlp::parse_protobuf(&bytes).map_err(|e| LoadError::Refused {
        origin: origin.to_string(),
        reason: format!("expected OTLP protobuf (an ExportTraceServiceRequest): {e}"),
    })?;
    Ok(TraceFile {
        spans: otlp::spans_of(vec![(None, export)]),
        errors: Vec::new(),
    })
}

/// OTLP JSON Lines: `head` (lines read already) and the rest of `reader`,
/// one export per line; a line that is not one is located, the others
/// are read.
pub fn json_lines(
    origin: &str,
    head: Vec<(usize, String)>,
    mut reader: Box<dyn BufRead + Send>,
) -> Result<TraceFile, LoadError> {
    let mut exports = Vec::new();
    let mut errors = Vec::new();
    let mut total: u64 = 0;
    let mut budget = otlp::Budget::default();
    let mut take = |n: usize, line: &str| {
        if line.trim().is_empty() {
            return;
        }
        match otlp::parse_json_within(line, &mut budget) {
            Ok(export) => exports.push((Some(n), export)),
            Err(e) => errors.push(LoadError::located(
                loopdbg_engine::diagnostics::error::LocatedError::in_line(
                    origin,
                    n,
                    line,
                    e.column().saturating_sub(1),
                    format!("expected an OTLP JSON export of traces: {e}"),
                ),
            )),
        }
    };
    let mut next = head.last().map_or(1, |(n, _)| n + 1);
    for (n, line) in &head {
        total += line.len() as u64;
        take(*n, line);
    }
    let mut buf = String::new();
    loop {
        buf.clear();
        let read = reader
            .read_line(&mut buf)
            .map_err(|e| LoadError::Unreadable {
                origin: format!("{origin}:{next}"),
                reason: e.to_string(),
            })?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > MAX_WHOLE_BYTES {
            return Err(too_large(origin));
        }
        take(next, buf.trim_end_matches(['\n', '\r']));
        next += 1;
    }
    Ok(TraceFile {
        spans: otlp::spans_of(exports),
        errors,
    })
}

/// One OTLP JSON export, pretty-printed: its text read whole.
pub fn document(origin: &str, text: &str) -> Result<TraceFile, LoadError> {
    let export = otlp::parse_json(text).map_err(|e| {
        let offset = loopdbg_engine::diagnostics::json_span::offset_of_line_byte_col(
            text,
            e.line(),
            e.column(),
        );
        LoadError::at(
            origin,
            text,
            offset,
            format!(
                "expected an OTLP JSON export of traces: {}",
                without_place(&e)
            ),
        )
    })?;
    Ok(TraceFile {
        spans: otlp::spans_of(vec![(None, export)]),
        errors: Vec::new(),
    })
}

/// serde's message without its " at line L column C": the location is
/// said the way every other error says it.
fn without_place(e: &serde_json::Error) -> String {
    let m = e.to_string();
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m,
    }
}

fn too_large(origin: &str) -> LoadError {
    LoadError::Refused {
        origin: origin.to_string(),
        reason: format!(
            "a trace file is read whole, and this one is larger than {} GiB; split it",
            MAX_WHOLE_BYTES >> 30
        ),
    }
}
