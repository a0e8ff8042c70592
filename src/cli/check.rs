//! `loopdbg check`: reads captured conversations from disk (streaming JSON
//! Lines one line at a time, so memory stays flat), runs the library's
//! checks, prints findings, and writes repaired copies.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use loopdbg::LoadError;
use loopdbg::diagnostics::error::LocatedError;
use loopdbg::diagnostics::json_span::{SpanNode, offset_of_line_byte_col, parse_path};
use loopdbg::wire::check::{Finding, check};
use loopdbg::wire::fix::{Repair, repair};
use loopdbg::wire::read::{ClaudeCodeLog, Conversation, ReadError, Source, detect, read_owned};
use serde::Serialize;
use serde_json::Value;

/// One conversation's findings.
#[derive(Debug, Serialize)]
pub struct ConversationReport {
    /// 1-based index in the file.
    pub conversation: usize,
    /// For JSON Lines: the line it was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What it was read as.
    pub format: &'static str,
    /// How many messages it has.
    pub messages: usize,
    /// What is wrong.
    pub findings: Vec<Finding>,
}

/// One file's results.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// The file.
    pub file: String,
    /// How many conversations were read.
    pub conversations: usize,
    /// The conversations with findings.
    pub results: Vec<ConversationReport>,
}

/// How the input is laid out.
enum Layout {
    /// One JSON document.
    Document(Value, String),
    /// JSON Lines, one conversation per line.
    Lines,
    /// A Claude Code session log.
    ClaudeCode,
}

fn located_in(origin: &str, text: &str, err: &ReadError) -> LoadError {
    offset_in(text, err).map_or_else(
        || LoadError::at(origin, text, 0, format!("{}: {}", err.path, err.message)),
        |offset| {
            LoadError::at(
                origin,
                text,
                offset,
                format!(
                    "{}: {}",
                    if err.path.is_empty() { "." } else { &err.path },
                    err.message
                ),
            )
        },
    )
}

/// Where a read error's path points in `text`; paths name a bare array
/// `messages` / `input` too, which the document itself does not spell.
fn offset_in(text: &str, err: &ReadError) -> Option<usize> {
    let spans = SpanNode::parse(text)?;
    let mut path = parse_path(&err.path);
    if matches!(
        spans.kind,
        loopdbg::diagnostics::json_span::SpanKind::Array(_)
    ) && !path.is_empty()
    {
        path.remove(0);
    }
    Some(spans.offset_of(&path))
}

fn json_error(
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

fn unreadable(origin: &str, e: std::io::Error) -> LoadError {
    LoadError::Unreadable {
        origin: origin.to_string(),
        reason: e.to_string(),
    }
}

fn looks_like_claude_code(v: &Value) -> bool {
    v.get("sessionId").is_some()
        || v.get("parentUuid").is_some()
        || (v.get("type").and_then(Value::as_str) == Some("summary") && v.get("leafUuid").is_some())
}

/// Decides the layout from the first non-empty line.
fn layout(path: &Path, origin: &str, forced: Option<Source>) -> Result<Layout, LoadError> {
    let file = File::open(path).map_err(|e| unreadable(origin, e))?;
    let mut reader = BufReader::new(file);
    let mut first = String::new();
    loop {
        first.clear();
        if reader
            .read_line(&mut first)
            .map_err(|e| unreadable(origin, e))?
            == 0
        {
            break;
        }
        if !first.trim().is_empty() {
            break;
        }
    }
    if forced == Some(Source::ClaudeCode) {
        return Ok(Layout::ClaudeCode);
    }
    if let Ok(v) = serde_json::from_str::<Value>(first.trim()) {
        if looks_like_claude_code(&v) {
            return Ok(Layout::ClaudeCode);
        }
        let mut rest = String::new();
        let mut more = false;
        while reader
            .read_line(&mut rest)
            .map_err(|e| unreadable(origin, e))?
            > 0
        {
            if !rest.trim().is_empty() {
                more = true;
                break;
            }
            rest.clear();
        }
        if more {
            return Ok(Layout::Lines);
        }
    }
    // A pretty-printed document: read it whole.
    let mut text = String::new();
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| unreadable(origin, e))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| json_error(origin, &text, None, &e))?;
    Ok(Layout::Document(doc, text))
}

fn source_of(doc: &Value, forced: Option<Source>) -> Option<Source> {
    forced.or_else(|| detect(doc))
}

/// Reads every conversation of a file, calling `each` with it; returns how
/// many were read.
pub fn for_each_conversation(
    path: &Path,
    forced: Option<Source>,
    mut each: impl FnMut(Option<usize>, Conversation, Option<&str>),
) -> Result<usize, LoadError> {
    let origin = path.display().to_string();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let progress = std::io::stderr().is_terminal() && size > 16 << 20;
    match layout(path, &origin, forced)? {
        Layout::Document(doc, text) => {
            let source = source_of(&doc, forced).ok_or_else(|| {
                LoadError::at(&origin, &text, 0, "expected a request body (an object with `messages` or `input`) or a message array")
            })?;
            let conv = read_owned(doc, source).map_err(|e| located_in(&origin, &text, &e))?;
            each(None, conv, Some(&text));
            Ok(1)
        }
        Layout::ClaudeCode => {
            let reader = BufReader::new(File::open(path).map_err(|e| unreadable(&origin, e))?);
            let mut log = ClaudeCodeLog::default();
            for (i, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| unreadable(&origin, e))?;
                if line.trim().is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(&line)
                    .map_err(|e| json_error(&origin, &line, Some(i + 1), &e))?;
                log.push_owned(i + 1, v).map_err(|e| {
                    let offset =
                        SpanNode::parse(&line).map_or(0, |s| s.offset_of(&parse_path(&e.path)));
                    LoadError::located(LocatedError::in_line(
                        &origin,
                        i + 1,
                        &line,
                        offset,
                        e.to_string(),
                    ))
                })?;
            }
            let convs = log.finish();
            let n = convs.len();
            for c in convs {
                each(None, c, None);
            }
            Ok(n)
        }
        Layout::Lines => {
            let reader = BufReader::new(File::open(path).map_err(|e| unreadable(&origin, e))?);
            let mut n = 0;
            let mut read_bytes: u64 = 0;
            let mut last_percent = 0;
            for (i, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| unreadable(&origin, e))?;
                read_bytes += line.len() as u64 + 1;
                if progress {
                    let percent = read_bytes * 100 / size.max(1);
                    if percent != last_percent {
                        last_percent = percent;
                        eprint!("\rchecking {origin}: {percent}% ({n} conversations)");
                    }
                }
                if line.trim().is_empty() {
                    continue;
                }
                let line_no = i + 1;
                let doc: Value = serde_json::from_str(&line)
                    .map_err(|e| json_error(&origin, &line, Some(line_no), &e))?;
                let source = source_of(&doc, forced).ok_or_else(|| {
                    LoadError::located(LocatedError::in_line(&origin, line_no, &line, 0, "expected a conversation (an object with `messages` or `input`, or a message array)"))
                })?;
                let conv = read_owned(doc, source).map_err(|e| {
                    let offset = offset_in(&line, &e).unwrap_or(0);
                    LoadError::located(LocatedError::in_line(
                        &origin,
                        line_no,
                        &line,
                        offset,
                        e.to_string(),
                    ))
                })?;
                n += 1;
                each(Some(line_no), conv, Some(&line));
            }
            if progress {
                eprintln!("\rchecking {origin}: done ({n} conversations)      ");
            }
            Ok(n)
        }
    }
}

/// Checks `files`; returns the reports.
pub fn check_files(
    files: &[PathBuf],
    forced: Option<Source>,
) -> Result<Vec<FileReport>, LoadError> {
    let mut reports = Vec::new();
    for path in files {
        let mut results = Vec::new();
        let mut index = 0;
        let conversations = for_each_conversation(path, forced, |line, conv, _| {
            index += 1;
            let findings = check(&conv);
            if !findings.is_empty() {
                results.push(ConversationReport {
                    conversation: index,
                    line,
                    format: conv.source.as_str(),
                    messages: conv.messages.len(),
                    findings,
                });
            }
        })?;
        reports.push(FileReport {
            file: path.display().to_string(),
            conversations,
            results,
        });
    }
    Ok(reports)
}

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// Grouped text, coloured when stdout is a terminal and NO_COLOR is unset.
pub fn render_text(reports: &[FileReport], out: &mut impl Write) -> std::io::Result<()> {
    let paint = Paint {
        on: std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let (mut convs, mut bad, mut total, mut rejected) = (0, 0, 0, 0);
    for f in reports {
        convs += f.conversations;
        for r in &f.results {
            bad += 1;
            total += r.findings.len();
            rejected += r.findings.iter().filter(|x| x.rejected_by_provider).count();
            let place = match r.line {
                Some(line) => format!("{}:{line}", f.file),
                None if f.conversations > 1 => {
                    format!("{} conversation {}", f.file, r.conversation)
                }
                None => f.file.clone(),
            };
            writeln!(
                out,
                "{} ({}, {} messages): {} problem(s)",
                paint.wrap("1", &clean(&place)),
                r.format,
                r.messages,
                r.findings.len()
            )?;
            for x in &r.findings {
                let at = match (&x.line, &x.uuid) {
                    (Some(l), Some(u)) => format!("line {l} uuid {u} {}", x.path),
                    (Some(l), None) => format!("line {l} {}", x.path),
                    _ => x.path.clone(),
                };
                let kind = paint.wrap(if x.rejected_by_provider { "31" } else { "33" }, x.kind);
                writeln!(
                    out,
                    "  {}  {kind}  [{}]",
                    clean(&at),
                    clean(&x.ids.join(", "))
                )?;
                writeln!(out, "    {}", clean(&x.message))?;
            }
        }
    }
    if total == 0 {
        writeln!(
            out,
            "checked {convs} conversation(s) in {} file(s): no problems",
            reports.len()
        )
    } else {
        writeln!(
            out,
            "checked {convs} conversation(s) in {} file(s): {bad} with problems, {total} problem(s) ({rejected} a provider would reject with a 400)",
            reports.len()
        )
    }
}

fn clean(s: &str) -> String {
    loopdbg::lesson::report::clean(s)
}

/// Writes a repaired copy of `input` to `output`; returns the number of repairs.
pub fn fix_file(
    input: &Path,
    output: &Path,
    forced: Option<Source>,
    how: Repair,
) -> Result<usize, LoadError> {
    let origin = input.display().to_string();
    let same = match (input.canonicalize(), output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(LoadError::Refused {
            origin: output.display().to_string(),
            reason: "refusing to overwrite the input; choose another -o".into(),
        });
    }
    let write_err = |e: std::io::Error| LoadError::Unreadable {
        origin: output.display().to_string(),
        reason: format!("cannot write: {e}"),
    };
    match layout(input, &origin, forced)? {
        Layout::ClaudeCode => Err(LoadError::Refused {
            origin,
            reason: "--fix does not rewrite Claude Code session logs (their events are linked by uuid); check reports where the pairing broke".into(),
        }),
        Layout::Document(mut doc, text) => {
            let source = source_of(&doc, forced).ok_or_else(|| LoadError::at(&origin, &text, 0, "expected a conversation"))?;
            let n = repair(&mut doc, source.provider(), how);
            let mut out = std::fs::File::create(output).map_err(write_err)?;
            serde_json::to_writer_pretty(&mut out, &doc).map_err(|e| write_err(e.into()))?;
            writeln!(out).map_err(write_err)?;
            Ok(n)
        }
        Layout::Lines => {
            let reader = BufReader::new(File::open(input).map_err(|e| unreadable(&origin, e))?);
            let mut out = std::io::BufWriter::new(std::fs::File::create(output).map_err(write_err)?);
            let mut total = 0;
            for (i, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| unreadable(&origin, e))?;
                if line.trim().is_empty() {
                    writeln!(out).map_err(write_err)?;
                    continue;
                }
                let mut doc: Value = serde_json::from_str(&line).map_err(|e| json_error(&origin, &line, Some(i + 1), &e))?;
                let n = source_of(&doc, forced).map_or(0, |s| repair(&mut doc, s.provider(), how));
                total += n;
                if n == 0 {
                    writeln!(out, "{line}").map_err(write_err)?;
                } else {
                    serde_json::to_writer(&mut out, &doc).map_err(|e| write_err(e.into()))?;
                    writeln!(out).map_err(write_err)?;
                }
            }
            out.flush().map_err(write_err)?;
            Ok(total)
        }
    }
}
