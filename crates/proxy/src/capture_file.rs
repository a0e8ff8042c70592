//! The capture file the proxy appends to, one exchange at a time.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::capture::Exchange;

/// The capture file, appended to one exchange at a time and flushed, so a
/// crash loses at most the exchange in flight; with `--otlp` each
/// exchange also goes out as a span.
pub struct CaptureFile {
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    /// `--otlp`: each exchange also goes out as a span.
    #[cfg(feature = "otlp")]
    pub otlp: Option<crate::otlp::Sink>,
}

impl CaptureFile {
    /// The capture at `path` opened for appending (created when missing),
    /// or none.
    pub fn open(path: Option<&Path>) -> std::io::Result<CaptureFile> {
        let file = match path {
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("opening the capture {}: {e}", p.display()),
                        )
                    })?,
            ),
            None => None,
        };
        Ok(CaptureFile {
            file,
            path: path.map(Path::to_path_buf),
            #[cfg(feature = "otlp")]
            otlp: None,
        })
    }

    /// Whether an exchange's bodies are recorded: with no file and no
    /// spans, nothing reads them.
    pub fn bodies(&self) -> crate::Bodies {
        match self.records() {
            true => crate::Bodies::Kept,
            false => crate::Bodies::Dropped,
        }
    }

    /// Whether anything is recorded: a file, or spans.
    fn records(&self) -> bool {
        #[cfg(feature = "otlp")]
        if self.otlp.is_some() {
            return true;
        }
        self.file.is_some()
    }

    /// Appends one exchange (and sends its span).
    pub fn append(&mut self, x: &Exchange) -> std::io::Result<()> {
        if !self.records() {
            // Serialising a 2 MB history for no file took a tenth of a
            // gateway's CPU.
            return Ok(());
        }
        #[cfg(feature = "otlp")]
        if let Some(sink) = self.otlp.as_mut() {
            sink.send(x);
        }
        let mut line = serde_json::to_vec(x).unwrap_or_default();
        line.push(b'\n');
        self.append_line(&line)
    }

    /// Appends one record's line (with its newline) and flushes it.
    pub fn append_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        // One write per record: with O_APPEND a record is never interleaved.
        file.write_all(line)
            .and_then(|()| file.flush())
            .map_err(|e| {
                let path = self.path.as_deref().unwrap_or(Path::new("?"));
                std::io::Error::new(
                    e.kind(),
                    format!("writing the capture {}: {e}", path.display()),
                )
            })
    }
}
