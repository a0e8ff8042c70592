//! Opening an input once and reading it into conversations: the layout
//! is detected by content from the first lines buffered (pipes and FIFOs
//! work), then reading goes on from where detection stopped. Documents,
//! JSON Lines, agent logs, HTTP recordings, OTLP traces and MCP captures
//! all arrive here; what each holds is read by `loopdbg_read`.

use loopdbg_read::Agent;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::limits::{MAX_LINE_BYTES, MAX_WHOLE_BYTES};
use loopdbg_engine::LoadError;
use loopdbg_engine::diagnostics::error::LocatedError;
use loopdbg_engine::diagnostics::json_span::{SpanKind, SpanNode, offset_of_line_byte_col};
use loopdbg_io::lines::LineChunks;
use loopdbg_judge::fix::{Repair, repair};
use loopdbg_read::capture;
use loopdbg_read::detect::{SNIFF_LINES, Sniffed, Sniffer, Sniffing};
use loopdbg_read::yaml_depth;
use loopdbg_read::{
    Conversation, Detail, LineError, Log, ReadError, Source, detect, detect_with_evidence,
    evidence, read_owned, recording,
};
use serde_json::Value;

/// How the input is laid out.
pub(crate) enum Layout {
    /// One JSON document (pretty-printed, or a single line).
    Document(Value, String),
    /// JSON Lines, one conversation per line.
    Lines,
    /// An agent log: JSON Lines of events read whole.
    Log(Source),
    /// OTLP traces (JSON or protobuf): a conversation per LLM span.
    Traces(crate::traces::TraceFile),
    /// A `loopdbg mcp` capture: a conversation per run of the tap.
    Mcp(Vec<loopdbg_read::mcp::Session>),
    /// A document that is not JSON (nor a YAML recording): the text, and
    /// the error reading it as a capture gives. The debugger hands it to
    /// the session loader, which locates its own error.
    Unparsed(String, LoadError),
}

/// How `--follow` reads a file as it grows.
pub enum GrowingLayout {
    /// One document (or not yet known): read whole each time.
    Whole,
    /// One conversation per line.
    Lines {
        /// True for a proxy capture (one exchange per line).
        capture: bool,
    },
    /// An agent log.
    Log(Source),
}

/// How a growing file is to be read, from its complete lines so far.
pub fn growing_layout(origin: &str, all: &[u8]) -> Result<GrowingLayout, LoadError> {
    let reader = Box::new(std::io::Cursor::new(all.to_vec()));
    let opened = sniff_reader(origin.to_string(), reader, None)?;
    if opened.capture {
        return Ok(GrowingLayout::Lines { capture: true });
    }
    Ok(match opened.layout {
        Layout::Document(..) => GrowingLayout::Whole,
        Layout::Lines => GrowingLayout::Lines { capture: false },
        Layout::Log(source) => GrowingLayout::Log(source),
        // A trace file or an MCP capture is read whole each time it
        // grows; a document not yet whole is read again when it is.
        Layout::Traces(_) | Layout::Mcp(_) | Layout::Unparsed(..) => GrowingLayout::Whole,
    })
}

/// An input opened once: the lines read while detecting, then the rest.
pub struct Opened {
    pub(crate) origin: String,
    pub(crate) layout: Layout,
    pub(crate) head: Vec<(usize, String)>,
    pub(crate) rest: Box<dyn BufRead + Send>,
    pub(crate) next_line: usize,
    /// The input's size when known (a file, not a pipe).
    pub(crate) size: Option<u64>,
    /// How much of a log to keep.
    pub(crate) detail: Detail,
    /// The first JSON line is a proxy capture record.
    pub(crate) capture: bool,
}

impl Opened {
    /// The name errors use for the input.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The input's size in bytes, when it is a file.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// Every line not yet read, with its 1-based number.
    pub(crate) fn lines(self) -> impl Iterator<Item = Result<(usize, String), LoadError>> {
        let origin = self.origin;
        let mut rest = self.rest;
        let mut n = self.next_line;
        let tail = std::iter::from_fn(move || {
            n += 1;
            read_text_line(&mut rest, &origin, n)
                .transpose()
                .map(|line| line.map(|l| (n, l)))
        });
        self.head.into_iter().map(Ok).chain(tail)
    }
}

/// Whole lines read together (about [`CHUNK_BYTES`]), with the number of
/// the first: one allocation per chunk, not per line.
pub(crate) struct Chunk {
    pub(crate) first: usize,
    pub(crate) text: String,
    /// A line after `text` too long to read: skipped, said, and the lines
    /// after it read on.
    pub(crate) skipped: Option<LoadError>,
}

/// How much a chunk reads before it finishes its last line.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;

/// A log this small is read and freed on the caller's thread: starting a
/// thread for it costs more than it saves.
const SMALL_LOG: u64 = 2 * CHUNK_BYTES as u64;

impl Chunk {
    /// Its lines, numbered, without their line ends.
    pub(crate) fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        loopdbg_io::lines::lines_of(&self.text)
            .enumerate()
            .map(move |(i, l)| (self.first + i, l.strip_suffix('\r').unwrap_or(l)))
    }
}

impl Opened {
    /// Every line not yet read, in chunks of whole lines. A chunk's buffer
    /// sent back on `spare` is filled again: fresh buffers would each cost
    /// a megabyte of newly zeroed pages, as much time as parsing them.
    pub(crate) fn chunks(
        self,
        spare: std::sync::mpsc::Receiver<Vec<u8>>,
    ) -> impl Iterator<Item = Result<Chunk, LoadError>> + Send {
        let origin = self.origin;
        let rest = self.rest;
        let next = self.next_line + 1;
        let head = (!self.head.is_empty()).then(|| {
            let first = self.head[0].0;
            let mut text = String::new();
            for (_, line) in self.head {
                text.push_str(&line);
                text.push('\n');
            }
            Ok(Chunk {
                first,
                text,
                skipped: None,
            })
        });
        let mut lines = LineChunks::new(rest, next, CHUNK_BYTES, MAX_LINE_BYTES);
        let mut failed = false;
        let tail = std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let buf = spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES + 4096));
            let chunk = match lines.next_chunk(buf)? {
                Ok(chunk) => chunk,
                Err(e) => return Some(Err(unreadable(&origin, e))),
            };
            let skipped = chunk.overlong.map(|line| LoadError::Refused {
                origin: format!("{origin}:{line}"),
                reason: format!(
                    "line {line} is longer than {} MiB, the longest line loopdbg reads: skipped; the lines after it are read",
                    MAX_LINE_BYTES >> 20
                ),
            });
            match String::from_utf8(chunk.bytes) {
                Ok(text) => Some(Ok(Chunk {
                    first: chunk.first,
                    text,
                    skipped,
                })),
                Err(e) => {
                    failed = true;
                    Some(Err(not_utf8(&origin, chunk.first, &e)))
                }
            }
        });
        head.into_iter().chain(tail)
    }
}

pub(crate) fn too_large(origin: &str, what: &str) -> LoadError {
    LoadError::Refused {
        origin: origin.to_string(),
        reason: format!(
            "{what} is read whole, and this one is larger than {} GiB; split it",
            MAX_WHOLE_BYTES >> 30
        ),
    }
}

/// Line `n` of `origin` is longer than [`MAX_LINE_BYTES`].
pub(crate) fn overlong_line(origin: &str, n: usize) -> LoadError {
    LoadError::Refused {
        origin: format!("{origin}:{n}"),
        reason: format!(
            "line {n} is longer than {} MiB, the longest line loopdbg reads",
            MAX_LINE_BYTES >> 20
        ),
    }
}

/// Reads line `n` (1-based) as text: without its line end, without a UTF-8
/// byte order mark on line 1, at most [`MAX_LINE_BYTES`]; invalid UTF-8 is
/// an error that says where.
pub(crate) fn read_text_line(
    reader: &mut (impl BufRead + ?Sized),
    origin: &str,
    n: usize,
) -> Result<Option<String>, LoadError> {
    let mut buf = Vec::new();
    let read = loopdbg_io::lines::read_line_bounded(reader, &mut buf, MAX_LINE_BYTES)
        .map_err(|e| unreadable(origin, e))?;
    if read == 0 {
        return Ok(None);
    }
    if buf.len() > MAX_LINE_BYTES && !buf.ends_with(b"\n") {
        return Err(overlong_line(origin, n));
    }
    if n == 1 && buf.starts_with(b"\xef\xbb\xbf") {
        buf.drain(..3);
    }
    match String::from_utf8(buf) {
        Ok(mut line) => {
            trim_newline(&mut line);
            Ok(Some(line))
        }
        Err(e) => Err(not_utf8(origin, n, &e)),
    }
}

/// Where `bytes` (read from line `first_line` on) stop being UTF-8, as a
/// located error: line, column and the offending byte.
pub fn not_utf8(origin: &str, first_line: usize, e: &std::string::FromUtf8Error) -> LoadError {
    let bytes = e.as_bytes();
    // A database is not text at all: say what it is and how to read it.
    if first_line == 1 && bytes.starts_with(b"SQLite format 3\0") {
        return LoadError::Refused {
            origin: origin.to_string(),
            reason: "a SQLite database, not a log or a request body: opencode and Crush keep their sessions in one (`opencode.db`, `crush.db`), which `loopdbg doctor --scan` reads; `opencode export SESSION > session.json` or `crush session show --json SESSION > session.json` prints one session for `loopdbg check`".to_string(),
        };
    }
    let at = e.utf8_error().valid_up_to();
    let line = first_line + bytes[..at].iter().filter(|&&b| b == b'\n').count();
    let line_start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&bytes[line_start..at])
        .chars()
        .count()
        + 1;
    LoadError::Refused {
        origin: format!("{origin}:{line}:{column}"),
        reason: format!(
            "expected UTF-8 text: byte 0x{:02x} at byte {} of line {line} is not UTF-8",
            bytes[at],
            at - line_start + 1
        ),
    }
}

pub(crate) fn trim_newline(line: &mut String) {
    if line.ends_with('\n') {
        line.pop();
        if line.ends_with('\r') {
            line.pop();
        }
    }
}

/// The name errors use for an input: its path, or `<stdin>` for `-`.
pub fn origin_of(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// An input opened: its text (gunzipped when its bytes say gzip), whether
/// it was, and a regular file's size on disk.
struct Input {
    reader: Box<dyn BufRead + Send>,
    compressed: bool,
    on_disk: Option<u64>,
}

/// Opens a file, a pipe or standard input (`-`).
fn open_input(path: &Path, origin: &str) -> Result<Input, LoadError> {
    let input = |(reader, compressed), on_disk| Input {
        reader,
        compressed,
        on_disk,
    };
    if path.as_os_str() == "-" {
        return loopdbg_io::gunzip::decoded(Box::new(BufReader::new(std::io::stdin())))
            .map(|decoded| input(decoded, None))
            .map_err(|e| unreadable(origin, e));
    }
    let file = File::open(path).map_err(|e| unreadable(origin, e))?;
    let meta = file.metadata().map_err(|e| unreadable(origin, e))?;
    let on_disk = meta.is_file().then_some(meta.len());
    let kind = meta.file_type();
    if !(kind.is_file() || is_fifo(&kind)) {
        return Err(LoadError::Refused {
            origin: origin.to_string(),
            reason:
                "not a regular file or a pipe: loopdbg reads files, pipes and standard input (`-`)"
                    .into(),
        });
    }
    loopdbg_io::gunzip::decoded(Box::new(BufReader::with_capacity(1 << 16, file)))
        .map(|decoded| input(decoded, on_disk))
        .map_err(|e| unreadable(origin, e))
}

#[cfg(unix)]
pub(crate) fn is_fifo(kind: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_fifo()
}

#[cfg(not(unix))]
pub(crate) fn is_fifo(_: &std::fs::FileType) -> bool {
    false
}

pub(crate) fn unreadable(origin: &str, e: std::io::Error) -> LoadError {
    LoadError::Unreadable {
        origin: origin.to_string(),
        reason: e.to_string(),
    }
}

pub(crate) fn located_in(origin: &str, text: &str, err: &ReadError) -> LoadError {
    let offset = offset_in(text, err).unwrap_or(0);
    let path = match (err.line, err.path.is_root()) {
        (Some(line), _) => format!("line {line} {}", err.path),
        (None, true) => ".".to_string(),
        (None, false) => err.path.to_string(),
    };
    LoadError::at(origin, text, offset, format!("{path}: {}", err.message))
}

/// Where a read error's path points in `text`; paths name a bare array
/// `messages` / `input` too, which the document itself does not spell.
pub(crate) fn offset_in(text: &str, err: &ReadError) -> Option<usize> {
    let spans = SpanNode::parse(text)?;
    let path = err.path.segments();
    let path = match spans.kind {
        SpanKind::Array(_) if !path.is_empty() => &path[1..],
        _ => path,
    };
    Some(spans.offset_of(path))
}

pub(crate) fn json_error(
    origin: &str,
    text: &str,
    line_no: Option<usize>,
    e: &serde_json::Error,
) -> LoadError {
    let message = {
        let m = e.to_string();
        match m.rfind(" at line ") {
            Some(i) => m[..i].to_string(),
            None => m,
        }
    };
    match line_no {
        None => {
            let offset = offset_of_line_byte_col(text, e.line(), e.column());
            LoadError::at(origin, text, offset, format!("expected JSON: {message}"))
        }
        Some(n) => {
            let offset = offset_of_line_byte_col(text, 1, e.column());
            LoadError::located(LocatedError::in_line(
                origin,
                n,
                text,
                offset,
                format!("expected one JSON value per line: {message}"),
            ))
        }
    }
}

pub(crate) fn in_line(
    origin: &str,
    line: usize,
    text: &str,
    offset: usize,
    message: String,
) -> LoadError {
    LoadError::located(LocatedError::in_line(origin, line, text, offset, message))
}

/// Opens `path` and decides its layout from its content: the first lines
/// are read until one says which format wrote it.
pub(crate) fn sniff(path: &Path, forced: Option<Source>) -> Result<Opened, LoadError> {
    sniff_sized(path, forced).map(|(opened, _)| opened)
}

/// [`sniff`], with the size of a regular file as it is on disk (taken
/// from the open file: a folder of small logs was four `stat`s a file).
pub(crate) fn sniff_sized(
    path: &Path,
    forced: Option<Source>,
) -> Result<(Opened, Option<u64>), LoadError> {
    let origin = origin_of(path);
    let input = open_input(path, &origin)?;
    let mut opened = sniff_reader(origin, input.reader, forced)?;
    // Progress counts the bytes read, which a compressed file's size is not.
    opened.size = input.on_disk.filter(|_| !input.compressed);
    Ok((opened, input.on_disk))
}

/// [`sniff`] over bytes held in memory, gzip known by its bytes as on a
/// file.
pub(crate) fn sniff_bytes(
    origin: &str,
    bytes: impl AsRef<[u8]> + Send + 'static,
    forced: Option<Source>,
) -> Result<Opened, LoadError> {
    let (reader, _) = loopdbg_io::gunzip::decoded(Box::new(std::io::Cursor::new(bytes)))
        .map_err(|e| unreadable(origin, e))?;
    sniff_reader(origin.to_string(), reader, forced)
}

pub(crate) fn sniff_reader(
    origin: String,
    mut reader: Box<dyn BufRead + Send>,
    forced: Option<Source>,
) -> Result<Opened, LoadError> {
    if crate::traces::is_protobuf(reader.as_mut()) {
        let traces = crate::traces::protobuf(&origin, reader)?;
        return traces_opened(origin, traces, forced);
    }
    let mut sniffer = Sniffer::default();
    let mut head: Vec<(usize, String)> = Vec::new();
    let mut n = 0;
    let mut eof = false;
    while !sniffer.is_decided() && head.len() < SNIFF_LINES {
        let Some(line) = read_text_line(&mut reader, &origin, n + 1)? else {
            eof = true;
            break;
        };
        n += 1;
        let sniffed = sniffer.feed(&line);
        head.push((n, line));
        match sniffed {
            Sniffed::More => {}
            Sniffed::McpCapture => {
                let text = whole_text(&origin, head, reader)?;
                let layout = Layout::Mcp(mcp_sessions(&origin, &text)?);
                return Ok(whole(origin, layout, false));
            }
            Sniffed::Traces => {
                let traces = crate::traces::json_lines(&origin, head, reader)?;
                return traces_opened(origin, traces, forced);
            }
            Sniffed::Document => {
                return document(origin, head, reader, forced, sniffer.first_is_capture());
            }
        }
    }
    if !eof && !sniffer.is_decided() {
        // Detection stopped short; is there anything after the head?
        eof = reader.fill_buf().map_or(true, <[u8]>::is_empty);
    }
    let capture = sniffer.first_is_capture();
    let layout = match sniffer.layout(eof, forced) {
        Ok(loopdbg_read::detect::Layout::Document) => {
            return document(origin, head, reader, forced, capture);
        }
        Ok(loopdbg_read::detect::Layout::Lines) => Layout::Lines,
        Ok(loopdbg_read::detect::Layout::Log(source)) => Layout::Log(source),
        Err(Sniffing::Mismatch { forced, found }) => return Err(mismatch(&origin, forced, found)),
        Err(Sniffing::Empty) => {
            // Kept as text: given to the debugger, an empty file is a
            // session with nothing in it, and the session loader says so.
            let error = LoadError::Refused {
                origin: origin.clone(),
                reason: "nothing to read: the input is empty".into(),
            };
            let text = head.into_iter().map(|(_, l)| l + "\n").collect();
            return Ok(whole(origin, Layout::Unparsed(text, error), false));
        }
    };
    Ok(Opened {
        size: None,
        detail: Detail::Full,
        origin,
        layout,
        head,
        rest: reader,
        next_line: n,
        capture,
    })
}

/// An input read whole already, as `layout`.
pub(crate) fn whole(origin: String, layout: Layout, capture: bool) -> Opened {
    Opened {
        size: None,
        detail: Detail::Full,
        origin,
        layout,
        head: Vec::new(),
        rest: Box::new(std::io::empty()),
        next_line: 0,
        capture,
    }
}

/// The lines read so far and the rest of the input, as one text (read
/// whole, bounded).
pub(crate) fn whole_text(
    origin: &str,
    head: Vec<(usize, String)>,
    rest: Box<dyn BufRead + Send>,
) -> Result<String, LoadError> {
    let mut text = String::new();
    for (_, line) in head {
        text.push_str(&line);
        text.push('\n');
    }
    let mut bytes = Vec::new();
    let mut rest = rest;
    loopdbg_io::lines::read_to_end_bounded(&mut rest, &mut bytes, MAX_WHOLE_BYTES as usize)
        .map_err(|e| unreadable(origin, e))?;
    if (text.len() + bytes.len()) as u64 > MAX_WHOLE_BYTES {
        return Err(too_large(origin, "an MCP capture"));
    }
    match String::from_utf8(bytes) {
        Ok(rest) => text.push_str(&rest),
        Err(e) => return Err(not_utf8(origin, text.lines().count() + 1, &e)),
    }
    Ok(text)
}

/// A trace file, opened: its spans are read already.
pub(crate) fn traces_opened(
    origin: String,
    traces: crate::traces::TraceFile,
    forced: Option<Source>,
) -> Result<Opened, LoadError> {
    if let Some(f) = forced {
        return Err(LoadError::Refused {
            origin,
            reason: format!(
                "--input-format {} does not fit: the content is OTLP traces, whose spans say each request's provider; leave it out",
                f.as_str()
            ),
        });
    }
    Ok(whole(origin, Layout::Traces(traces), false))
}

pub(crate) fn mismatch(origin: &str, forced: Source, found: Source) -> LoadError {
    LoadError::Refused {
        origin: origin.to_string(),
        reason: format!(
            "--input-format {} does not fit: the content is {}; leave it out to detect it",
            forced.as_str(),
            describe(found)
        ),
    }
}

pub(crate) fn describe(source: Source) -> &'static str {
    match source {
        Source::Provider(f) => f.title(),
        Source::Agent(agent) => agent.row().store,
        Source::Mcp => "a loopdbg mcp capture",
    }
}

/// A YAML document that is an HTTP recording (VCR's `interactions:` or
/// `http_interactions:`), as a JSON tree; anything else stays an error of
/// the JSON it was not.
pub(crate) fn yaml_cassette(text: &str) -> Option<Result<Value, YamlError>> {
    let looks = text.lines().any(|l| {
        l.starts_with("interactions:")
            || l.starts_with("http_interactions:")
            || l.starts_with("requests:")
            // HAR written as YAML (Polly.JS can persist recordings so).
            || l.starts_with("log:")
    });
    if !looks {
        return None;
    }
    // Refused by depth before the parser, whose time is quadratic in it.
    if let Some(at) = yaml_depth::too_deep(text, yaml_depth::MAX_YAML_DEPTH) {
        return Some(Err(YamlError::TooDeep(at)));
    }
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Ok(yaml) => {
            let doc = loopdbg_read::cassettes::normalized(json_of_yaml(yaml));
            recording::is_recording(&doc).then_some(Ok(doc))
        }
        Err(e) => Some(Err(YamlError::Parse(e))),
    }
}

/// A YAML tree as JSON. A `!binary` / `!!binary` scalar (Ruby VCR and
/// PyYAML write bodies they hold as bytes so) is its decoded text when
/// that is UTF-8; other tags are read through. The depth is bounded by
/// the caller's [`yaml_depth`] check.
pub(crate) fn json_of_yaml(yaml: serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Y;
    match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => n
            .as_u64()
            .map(Value::from)
            .or_else(|| n.as_i64().map(Value::from))
            .or_else(|| n.as_f64().map(Value::from))
            .unwrap_or(Value::Null),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(json_of_yaml).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s,
                        other => serde_yaml_ng::to_string(&other)
                            .unwrap_or_default()
                            .trim()
                            .to_string(),
                    };
                    (key, json_of_yaml(v))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => {
            let binary = tagged.tag == "binary" || tagged.tag == "!binary";
            match (binary, tagged.value) {
                (true, Y::String(s)) => {
                    Value::String(loopdbg_read::cassettes::text_of_base64(&s).unwrap_or(s))
                }
                (_, inner) => json_of_yaml(inner),
            }
        }
    }
}

/// Why a YAML recording was not read.
pub(crate) enum YamlError {
    /// It nests deeper than any recording does, from this byte on.
    TooDeep(usize),
    /// The parser's own error.
    Parse(serde_yaml_ng::Error),
}

/// Reads the whole input as one JSON document.
pub(crate) fn document(
    origin: String,
    head: Vec<(usize, String)>,
    rest: Box<dyn BufRead + Send>,
    forced: Option<Source>,
    capture: bool,
) -> Result<Opened, LoadError> {
    let mut bytes = Vec::new();
    for (_, line) in &head {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    let first_line = head.first().map_or(1, |(n, _)| *n);
    let mut rest = rest;
    loopdbg_io::lines::read_to_end_bounded(&mut rest, &mut bytes, MAX_WHOLE_BYTES as usize)
        .map_err(|e| unreadable(&origin, e))?;
    if bytes.len() as u64 > MAX_WHOLE_BYTES {
        return Err(too_large(&origin, "a JSON document"));
    }
    // Invalid UTF-8 in a document read whole (JSON, a YAML cassette, a HAR
    // file) is located like any other error, by line and column.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return Err(not_utf8(&origin, first_line, &e)),
    };
    // Go's httprr traces are raw HTTP, not JSON: read as the same tree.
    if loopdbg_read::cassettes::is_httprr(&text) {
        let doc = loopdbg_read::cassettes::httprr(&text).map_err(|e| {
            LoadError::at(
                &origin,
                &text,
                e.byte,
                format!("expected an httprr trace: {}", e.message),
            )
        })?;
        return Ok(opened_document(origin, doc, text, false));
    }
    let doc: Value = match loopdbg_read::bounded::value(&text) {
        Ok(doc) if loopdbg_read::detect::is_traces(&doc) => {
            let traces = crate::traces::document(&origin, &text)?;
            return traces_opened(origin, traces, forced);
        }
        // A trace store's API answer (Tempo, Jaeger): the export inside.
        Ok(doc) if let Some(export) = loopdbg_read::detect::wrapped_traces(&doc) => {
            let traces = crate::traces::document(&origin, &export.to_string())?;
            return traces_opened(origin, traces, forced);
        }
        Ok(Value::Array(events))
            if is_claude_code_array(&events)
                && forced.is_none_or(|f| f == Source::Agent(Agent::ClaudeCode)) =>
        {
            return Ok(claude_code_array(origin, &events));
        }
        Ok(doc) => loopdbg_read::cassettes::normalized(doc),
        // The OpenTelemetry Python SDK's console spans: pretty JSON objects
        // one after another, read as the OTLP export of the same spans.
        Err(_) if loopdbg_read::foreign::is_console_spans(&text) => {
            let export = loopdbg_read::foreign::console_spans(&text).ok_or_else(|| {
                LoadError::Refused {
                    origin: origin.clone(),
                    reason: "expected OpenTelemetry console spans (one JSON object per span, as ConsoleSpanExporter prints them): a value in it is not a span".into(),
                }
            })?;
            let traces = crate::traces::document(&origin, &export.to_string())?;
            return traces_opened(origin, traces, forced);
        }
        // A Gemini CLI stream-json transcript: the request its history makes.
        Err(_) if let Some(body) = loopdbg_read::foreign::gemini_stream_json(&text) => body,
        // VCR cassettes are YAML: read as the same tree.
        Err(e) => match yaml_cassette(&text) {
            Some(Ok(doc)) => doc,
            Some(Err(YamlError::Parse(yaml))) => {
                let offset = yaml.location().map_or(0, |l| l.index());
                return Err(LoadError::at(
                    &origin,
                    &text,
                    offset,
                    format!("expected a YAML HTTP recording (a VCR cassette): {yaml}"),
                ));
            }
            Some(Err(YamlError::TooDeep(offset))) => {
                return Err(LoadError::at(
                    &origin,
                    &text,
                    offset,
                    format!(
                        "the YAML nests deeper than {} levels here; no recording does, so it is not parsed",
                        yaml_depth::MAX_YAML_DEPTH
                    ),
                ));
            }
            None => {
                let error = json_error(&origin, &text, None, &e);
                return Ok(whole(origin, Layout::Unparsed(text, error), false));
            }
        },
    };
    if let (Some(f), Some(found)) = (forced, evidence(&doc))
        && !f.fits(found)
    {
        return Err(mismatch(&origin, f, found));
    }
    Ok(opened_document(origin, doc, text, capture))
}

/// Whether a JSON array holds a Claude Code session's events (a hook or a
/// script that dumps a session as one array, not JSON Lines): objects,
/// each a `type`, and the messages among them Claude Code events.
fn is_claude_code_array(events: &[Value]) -> bool {
    let messages = || {
        events
            .iter()
            .filter(|e| matches!(e["type"].as_str(), Some("user" | "assistant")))
    };
    events
        .iter()
        .all(|e| e.get("type").is_some_and(Value::is_string))
        && messages().next().is_some()
        && messages().all(|e| loopdbg_read::detect(e) == Some(Source::Agent(Agent::ClaudeCode)))
}

/// A Claude Code session given as one array, read as the log it was: one
/// event a line (a finding's "line" is then the event's place in the
/// array, 1-based).
fn claude_code_array(origin: String, events: &[Value]) -> Opened {
    let mut lines = String::new();
    for e in events {
        lines.push_str(&e.to_string());
        lines.push('\n');
    }
    Opened {
        size: Some(lines.len() as u64),
        detail: Detail::Full,
        origin,
        layout: Layout::Log(Source::Agent(Agent::ClaudeCode)),
        head: Vec::new(),
        rest: Box::new(std::io::Cursor::new(lines.into_bytes())),
        next_line: 0,
        capture: false,
    }
}

/// A document read whole, ready to be read as conversations.
pub(crate) fn opened_document(origin: String, doc: Value, text: String, capture: bool) -> Opened {
    whole(origin, Layout::Document(doc, text), capture)
}

/// One JSON Lines line read as a conversation, or why it cannot be.
pub fn conversation_of_line(
    origin: &str,
    forced: Option<Source>,
    line_no: usize,
    line: &str,
    replies: Replies,
) -> Result<Option<Conversation>, LoadError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    if let Some(conv) = loopdbg_read::plain::conversation(line, forced) {
        return Ok(Some(conv));
    }
    let doc: Value = loopdbg_read::bounded::value(line)
        .map_err(|e| json_error(origin, line, Some(line_no), &e))?;
    // A capture also records the agent's other traffic (`GET /v1/models`,
    // token counts): skipped, and counted by the caller.
    if capture::is_exchange(&doc) && !capture::holds_conversation(&doc) {
        return Ok(None);
    }
    // A proxy capture record: its request, alone or with the reply it got;
    // what the upstream answered the request is the checker's evidence.
    let answer = match (capture::is_exchange(&doc), replies) {
        (true, Replies::Left) => capture::answer_of(&doc),
        _ => None,
    };
    // The proxy routed the request by its path and wrote down the
    // provider: that outranks a guess from the body.
    let routed = capture::is_exchange(&doc)
        .then(|| capture::provider_of(&doc))
        .flatten()
        .map(Source::Provider);
    let usage = capture::is_exchange(&doc)
        .then(|| capture::usage_of(&doc))
        .flatten();
    let model_in_path = capture::is_exchange(&doc)
        .then(|| capture::model_of(&doc))
        .flatten();
    let doc = match (capture::is_exchange(&doc), replies) {
        (false, _) => doc,
        (true, Replies::Left) => capture::request_of(doc),
        (true, Replies::Appended | Replies::Both) => capture::conversation_of(doc),
    };
    let detected = detect_with_evidence(&doc);
    if let (Some(f), Some((found, true))) = (forced, detected)
        && f != found
    {
        return Err(in_line(
            origin,
            line_no,
            line,
            0,
            format!(
                "--input-format {} does not fit: this line is {}; leave it out to detect it",
                f.as_str(),
                describe(found)
            ),
        ));
    }
    let source = forced.or(routed).or(detected.map(|d| d.0)).ok_or_else(|| {
        in_line(
            origin,
            line_no,
            line,
            0,
            "expected a conversation (an object with `messages`, `input` or `contents`, or a message array)".into(),
        )
    })?;
    let mut conv = read_owned(doc, source).map_err(|e| {
        let offset = offset_in(line, &e).unwrap_or(0);
        in_line(origin, line_no, line, offset, e.to_string())
    })?;
    if conv.model.is_none() {
        conv.model = model_in_path;
    }
    capture::attach_usage(&mut conv, usage, replies.appended());
    conv.answer = answer.map(|(status, text)| loopdbg_read::Answer {
        status,
        text,
        source: loopdbg_read::BlockSource {
            path: "response".into(),
            ..Default::default()
        },
        kept_in: loopdbg_read::Keeper::Recording,
    });
    Ok(Some(conv))
}

/// What reading one input gave.
pub struct ReadSummary {
    /// The format detected (or forced).
    pub format: Source,
    /// False when nothing named the format and `format` is only the
    /// readers' default: a file with nothing to check says "unknown".
    pub named: bool,
    /// Conversations read.
    pub conversations: usize,
    /// Lines that could not be read (the rest of the file still was).
    pub errors: Vec<LoadError>,
    /// The input is an HTTP recording (a cassette or a HAR file), one
    /// conversation per request, each carrying the ones before it.
    pub recording: bool,
    /// Exchanges with endpoints that carry no conversation (a recording's
    /// embeddings or moderation calls), skipped and counted.
    pub skipped: usize,
}

/// Reads every conversation of an input, calling `each` with it in order;
/// bad lines of a JSON Lines file are collected and the rest is read.
pub fn for_each_conversation(
    path: &Path,
    forced: Option<Source>,
    replies: Replies,
    mut each: impl FnMut(Option<usize>, Conversation),
) -> Result<ReadSummary, LoadError> {
    read_opened(sniff(path, forced)?, forced, replies, |line, c, _| {
        each(line, c)
    })
}

/// [`for_each_conversation`] over bytes already read (a growing file up to
/// its last complete line), named `origin` in errors.
pub fn for_each_conversation_in(
    origin: &str,
    bytes: Vec<u8>,
    forced: Option<Source>,
    replies: Replies,
    mut each: impl FnMut(Option<usize>, Conversation),
) -> Result<ReadSummary, LoadError> {
    let reader = Box::new(std::io::Cursor::new(bytes));
    read_opened(
        sniff_reader(origin.to_string(), reader, forced)?,
        forced,
        replies,
        |line, c, _| each(line, c),
    )
}

/// What a proxy capture record contributes: the request as the agent built
/// it (what `check` judges), or the request with the reply appended (what
/// replay and `record` step through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replies {
    /// The request alone.
    Left,
    /// The request, then the reply it got.
    Appended,
    /// The request with its reply appended (what is shown), and beside it
    /// the request as it was sent (what is judged), where they differ.
    Both,
}

impl Replies {
    /// Whether the conversation handed on has its reply appended.
    fn appended(self) -> bool {
        self != Replies::Left
    }
}

/// One document (a request body, a message array, one capture record)
/// read as one conversation.
pub(crate) fn read_document(
    origin: &str,
    doc: Value,
    text: &str,
    forced: Option<Source>,
    replies: Replies,
    mut each: impl FnMut(Option<usize>, Conversation, Option<Conversation>),
) -> Result<ReadSummary, LoadError> {
    read_document_with(origin, doc, text, forced, replies, &mut each)
}

/// [`read_document`], the conversations handed to `each` (not generic: an
/// array of documents reads each through this again).
fn read_document_with(
    origin: &str,
    doc: Value,
    text: &str,
    forced: Option<Source>,
    replies: Replies,
    each: &mut dyn FnMut(Option<usize>, Conversation, Option<Conversation>),
) -> Result<ReadSummary, LoadError> {
    // A JSON array of sessions or request bodies, each with its own
    // `messages` (an export of several conversations): each read as the
    // document it is, in order.
    let many = |items: &[Value]| {
        items.iter().all(|item| {
            item.is_object()
                && loopdbg_read::CONVERSATION_KEYS
                    .iter()
                    .any(|key| item.get(key).is_some())
        })
    };
    let doc = match doc {
        Value::Array(items) if !items.is_empty() && many(&items) => {
            let mut items = items.into_iter();
            let mut summary = ReadSummary {
                format: forced.unwrap_or(Source::Provider(
                    loopdbg_formats::provider::Format::Anthropic,
                )),
                named: false,
                conversations: 0,
                errors: Vec::new(),
                recording: false,
                skipped: 0,
            };
            if let Some(first) = items.next() {
                summary = read_document_with(origin, first, text, forced, replies, each)?;
            }
            for item in items {
                let one = read_document_with(origin, item, text, forced, replies, each)?;
                summary.conversations += one.conversations;
            }
            return Ok(summary);
        }
        other => other,
    };
    let exchange = capture::is_exchange(&doc);
    if exchange && !capture::holds_conversation(&doc) {
        // One captured `GET /v1/models`: nothing to check.
        return Ok(ReadSummary {
            format: forced.unwrap_or(Source::Provider(
                loopdbg_formats::provider::Format::Anthropic,
            )),
            named: forced.is_some(),
            conversations: 0,
            errors: Vec::new(),
            recording: false,
            skipped: 0,
        });
    }
    // The proxy routed a capture record by its path: that outranks a guess.
    let routed = exchange
        .then(|| capture::provider_of(&doc))
        .flatten()
        .map(Source::Provider);
    let detected = || match exchange {
        true => detect(&capture::request_of(doc.clone())),
        false => detect(&doc),
    };
    let source = forced.or(routed).or_else(detected).ok_or_else(|| {
        LoadError::at(origin, text, 0, "expected a request body (an object with `messages`, `input` or `contents`), a message array, or an agent log")
    })?;
    let usage = exchange.then(|| capture::usage_of(&doc)).flatten();
    let model_in_path = exchange.then(|| capture::model_of(&doc)).flatten();
    let read_as = |doc: Value, appended: bool| {
        let doc = match (exchange, appended) {
            (false, _) => doc,
            (true, false) => capture::request_of(doc),
            (true, true) => capture::conversation_of(doc),
        };
        let mut conv = read_owned(doc, source).map_err(|e| located_in(origin, text, &e))?;
        if conv.model.is_none() {
            conv.model = model_in_path.clone();
        }
        capture::attach_usage(&mut conv, usage.clone(), appended);
        Ok::<_, LoadError>(conv)
    };
    let sent = match (exchange, replies) {
        (true, Replies::Both) => Some(read_as(doc.clone(), false)?),
        _ => None,
    };
    each(None, read_as(doc, replies.appended())?, sent);
    Ok(ReadSummary {
        format: source,
        named: true,
        conversations: 1,
        errors: Vec::new(),
        recording: false,
        skipped: 0,
    })
}

/// A recording's or a trace's conversations, one per request (each
/// carrying the ones before it), handed on in order.
pub(crate) fn one_per_request(
    convs: Vec<Conversation>,
    sent: Option<Vec<Conversation>>,
    errors: Vec<LoadError>,
    skipped: usize,
    mut each: impl FnMut(Option<usize>, Conversation, Option<Conversation>),
) -> ReadSummary {
    let named = !convs.is_empty();
    let format = convs.first().map_or(
        Source::Provider(loopdbg_formats::provider::Format::Anthropic),
        |c| c.source,
    );
    let count = convs.len();
    // Each request as sent beside the one shown, when both were read
    // alike (one per request, in the same order).
    let mut sent = sent.filter(|s| s.len() == count).map(Vec::into_iter);
    for c in convs {
        each(None, c, sent.as_mut().and_then(Iterator::next));
    }
    ReadSummary {
        format,
        named,
        conversations: count,
        errors,
        recording: true,
        skipped,
    }
}

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the layout was sniffed as a log"
)]
pub(crate) fn read_opened(
    opened: Opened,
    forced: Option<Source>,
    replies: Replies,
    mut each: impl FnMut(Option<usize>, Conversation, Option<Conversation>),
) -> Result<ReadSummary, LoadError> {
    let origin = opened.origin.clone();
    match opened.layout {
        Layout::Unparsed(_, error) => Err(error),
        Layout::Document(ref doc, ref text) if recording::is_recording(doc) => {
            // A replay steps through each reply too; `check` judges the
            // requests as they were sent.
            let append: Option<recording::AppendReply> = match replies {
                Replies::Left => None,
                Replies::Appended | Replies::Both => Some(&capture::append_recorded_reply),
            };
            let recorded = recording::read_recording_with(doc, append).unwrap_or_default();
            let sent = (replies == Replies::Both).then(|| {
                recording::read_recording_with(doc, None)
                    .unwrap_or_default()
                    .conversations
            });
            // A recorded request that cannot be read is said where it is;
            // the other interactions are still read. Only a recording with
            // nothing readable at all is an error of the whole.
            let mut errors: Vec<LoadError> = recorded
                .errors
                .iter()
                .map(|e| located_in(&origin, text, e))
                .collect();
            if recorded.conversations.is_empty() && !errors.is_empty() {
                return Err(errors.remove(0));
            }
            Ok(one_per_request(
                recorded.conversations,
                sent,
                errors,
                recorded.skipped,
                each,
            ))
        }
        Layout::Document(doc, text) => read_document(&origin, doc, &text, forced, replies, each),
        Layout::Mcp(sessions) => {
            let count = sessions.len();
            for session in &sessions {
                each(None, loopdbg_read::mcp::conversation(session), None);
            }
            Ok(ReadSummary {
                format: Source::Mcp,
                named: true,
                conversations: count,
                errors: Vec::new(),
                recording: false,
                skipped: 0,
            })
        }
        Layout::Traces(file) => {
            let appended = replies != Replies::Left;
            let both = replies == Replies::Both;
            let (convs, sent, errors) = crate::traces::conversations(&origin, file, appended, both);
            Ok(one_per_request(convs, sent, errors, 0, each))
        }
        Layout::Log(source) => {
            let mut log = Log::new(source).expect("a log source");
            if let Some(bytes) = opened.size {
                log.expect_bytes(bytes);
            }
            log.keep(opened.detail);
            let (recycle, spare) = std::sync::mpsc::channel();
            let mut errors = Vec::new();
            let mut total: u64 = 0;
            let mut take = |chunk: Result<Chunk, LoadError>| -> Result<(), LoadError> {
                let chunk = chunk?;
                total += chunk.text.len() as u64;
                if total > MAX_WHOLE_BYTES {
                    return Err(too_large(&origin, "an agent log"));
                }
                let lines: Vec<(usize, &str)> = chunk.lines().collect();
                for (n, e) in push_lines_on_every_core(&mut log, &lines) {
                    let text = lines.iter().find(|(m, _)| *m == n).map_or("", |(_, t)| *t);
                    errors.push(match e {
                        LineError::Json(e) => json_error(&origin, text, Some(n), &e),
                        LineError::Read(e) => {
                            let offset =
                                SpanNode::parse(text).map_or(0, |s| s.offset_of(e.path.segments()));
                            in_line(&origin, n, text, offset, e.to_string())
                        }
                    });
                }
                drop(lines);
                if let Some(e) = chunk.skipped {
                    errors.push(e);
                }
                // The reader may have finished: then the buffer is freed.
                let _ = recycle.send(chunk.text.into_bytes());
                Ok(())
            };
            if opened.size.is_some_and(|size| size <= SMALL_LOG) || !crate::cores::spare_threads() {
                // A log of a chunk or two is read here: a thread for it
                // cost more than it saved (800 sessions of 60 KB: 317 ms);
                // so does any log read beside others (a scan).
                for chunk in opened.chunks(spare) {
                    take(chunk)?;
                }
            } else {
                // One thread reads the next chunk while the pool parses
                // this one.
                let (chunks, arriving) =
                    std::sync::mpsc::sync_channel::<Result<Chunk, LoadError>>(2);
                std::thread::scope(|scope| -> Result<(), LoadError> {
                    scope.spawn(move || {
                        for chunk in opened.chunks(spare) {
                            let stop = chunk.is_err();
                            if chunks.send(chunk).is_err() || stop {
                                break;
                            }
                        }
                    });
                    arriving.into_iter().try_for_each(&mut take)
                })?;
            }
            let (convs, leftovers) = log.finish_leaving().map_err(|e| LoadError::Refused {
                origin: origin.clone(),
                reason: e.to_string(),
            })?;
            // A hundred thousand small frees on a long log: off the way.
            if total > SMALL_LOG && crate::cores::spare_threads() {
                std::thread::spawn(move || drop(leftovers));
            }
            let count = convs.len();
            for c in convs {
                each(None, c, None);
            }
            Ok(ReadSummary {
                format: source,
                named: true,
                conversations: count,
                errors,
                recording: false,
                skipped: 0,
            })
        }
        Layout::Lines => {
            let capture = opened.capture;
            let mut format = forced;
            let mut count = 0;
            let mut errors = Vec::new();
            for item in opened.lines() {
                let (n, line) = item?;
                match conversation_of_line(&origin, forced, n, &line, replies) {
                    Ok(Some(conv)) => {
                        format.get_or_insert(conv.source);
                        count += 1;
                        // A capture's request as it was sent, beside it.
                        let sent = (capture && replies == Replies::Both)
                            .then(|| conversation_of_line(&origin, forced, n, &line, Replies::Left))
                            .and_then(|sent| sent.ok().flatten());
                        each(Some(n), conv, sent);
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(e),
                }
            }
            Ok(ReadSummary {
                named: format.is_some(),
                format: format.unwrap_or(Source::Provider(
                    loopdbg_formats::provider::Format::Anthropic,
                )),
                conversations: count,
                errors,
                recording: false,
                skipped: 0,
            })
        }
    }
}

/// Writes a repaired copy of the input at `path` (`-` is standard input)
/// to `out`, as `check --fix` does; returns the number of repairs. A log,
/// a trace or an MCP capture is refused: it is not sent again.
pub fn write_repaired_input(
    path: &Path,
    forced: Option<Source>,
    how: Repair,
    out: &mut dyn Write,
    write_err: &dyn Fn(std::io::Error) -> LoadError,
) -> Result<usize, LoadError> {
    repaired_opened(sniff(path, forced)?, forced, how, out, write_err)
}

/// [`write_repaired_input`] over bytes held in memory, named `origin`.
pub fn write_repaired_bytes(
    origin: &str,
    bytes: Vec<u8>,
    forced: Option<Source>,
    how: Repair,
    out: &mut dyn Write,
    write_err: &dyn Fn(std::io::Error) -> LoadError,
) -> Result<usize, LoadError> {
    let opened = sniff_bytes(origin, bytes, forced)?;
    repaired_opened(opened, forced, how, out, write_err)
}

fn repaired_opened(
    opened: Opened,
    forced: Option<Source>,
    how: Repair,
    out: &mut dyn Write,
    write_err: &dyn Fn(std::io::Error) -> LoadError,
) -> Result<usize, LoadError> {
    let origin = opened.origin.clone();
    if let Layout::Log(source) = opened.layout {
        return Err(LoadError::Refused {
            origin,
            reason: format!(
                "--fix does not rewrite {} (its events are linked to each other); check reports where the pairing broke",
                describe(source)
            ),
        });
    }
    if let Layout::Traces(_) | Layout::Mcp(_) = opened.layout {
        return Err(LoadError::Refused {
            origin,
            reason: "--fix does not rewrite a trace or an MCP capture (they record what was sent; it is not sent again); check reports which call lost its result".into(),
        });
    }
    write_repaired(opened, &origin, forced, how, out, write_err)
}

fn write_repaired(
    opened: Opened,
    origin: &str,
    forced: Option<Source>,
    how: Repair,
    out: &mut dyn Write,
    write_err: &dyn Fn(std::io::Error) -> LoadError,
) -> Result<usize, LoadError> {
    match opened.layout {
        Layout::Unparsed(_, error) => Err(error),
        Layout::Log(_) | Layout::Traces(_) | Layout::Mcp(_) => unreachable!("refused before"),
        Layout::Document(mut doc, text) => {
            let source = forced
                .or_else(|| detect(&doc))
                .ok_or_else(|| LoadError::at(origin, &text, 0, "expected a conversation"))?;
            let n = repair(&mut doc, source.provider(), how);
            // What the repair left alone is written as it was (numbers,
            // keys written twice, the file's own layout).
            let written = match n {
                0 => text.trim_end().to_string(),
                _ => loopdbg_formats::edit::rewrite(&text, &doc),
            };
            writeln!(out, "{written}").map_err(write_err)?;
            Ok(n)
        }
        Layout::Lines => {
            let mut total = 0;
            for item in opened.lines() {
                let (n, line) = item?;
                if line.trim().is_empty() {
                    writeln!(out).map_err(write_err)?;
                    continue;
                }
                let mut doc: Value = loopdbg_read::bounded::value(&line)
                    .map_err(|e| json_error(origin, &line, Some(n), &e))?;
                let fixed = forced
                    .or_else(|| detect(&doc))
                    .map_or(0, |s| repair(&mut doc, s.provider(), how));
                total += fixed;
                if fixed == 0 {
                    writeln!(out, "{line}").map_err(write_err)?;
                } else {
                    let written = loopdbg_formats::edit::rewrite(&line, &doc);
                    writeln!(out, "{written}").map_err(write_err)?;
                }
            }
            Ok(total)
        }
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
        crate::open::write_repaired_input(input, forced, how, out, &write_err).map_err(|e| {
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

/// An MCP capture's text as its sessions; a record that is not one is
/// located.
pub(crate) fn mcp_sessions(
    origin: &str,
    text: &str,
) -> Result<Vec<loopdbg_read::mcp::Session>, LoadError> {
    // goose's MCP replays: `STDIN: …` / `STDOUT: …`, line for line.
    let goose = match loopdbg_read::foreign::is_goose_replay_line(text) {
        true => loopdbg_read::foreign::goose_replay(text),
        false => None,
    };
    let text = goose.as_deref().unwrap_or(text);
    let mut records = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<loopdbg_read::mcp::Record>(line) {
            Ok(r) => records.push((i + 1, r)),
            Err(e) => return Err(json_error(origin, line, Some(i + 1), &e)),
        }
    }
    Ok(loopdbg_read::mcp::sessions(records))
}

/// [`Log::push_lines`], each line parsed on the pool (lines are
/// independent until the log is finished) and pushed in order.
pub(crate) fn push_lines_on_every_core(
    log: &mut Log,
    lines: &[(usize, &str)],
) -> Vec<(usize, loopdbg_read::LineError)> {
    let parser = log.line_parser();
    let parsed = crate::cores::map(lines, |&(n, text)| parser.parse(n, text));
    let mut bad = Vec::new();
    for (&(n, text), parsed) in lines.iter().zip(parsed) {
        bad.extend(log.push_parsed(n, text, parsed));
    }
    bad
}
