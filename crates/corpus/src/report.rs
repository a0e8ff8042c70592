//! Checking what was opened, and the report `check --format json` and
//! `--format jsonl` print: the schema the CLI, the Python package and a
//! fleet run all share. JSON Lines are checked in chunks spread over the
//! cores and reported in line order; a file that cannot be read is
//! reported and the others are still checked.

use std::path::{Path, PathBuf};

use loopdbg_engine::LoadError;
use loopdbg_judge::check::{Finding, check};
use loopdbg_judge::mcp::McpCall;
use loopdbg_read::threads::{Prefixes, Threads};
use loopdbg_read::{Conversation, Detail, Source};
use serde::Serialize;
use serde_json::Value;

use crate::open::*;

/// A check's exit code, one rule for the whole CLI: 2 when an input (or a
/// line of it) could not be read; 1 when a provider would refuse a request
/// (a `400` finding), or, `strict`, on a warning too, or when nothing was
/// checked (an agent's session that holds no conversation yet, just
/// started or quit at once, is nothing to refuse: 0 unless `strict`);
/// else 0. Warnings alone (accepted shapes that break loops) and
/// notes pass, as a linter's warnings do without `--strict`.
pub fn exit_code(reports: &[FileReport], strict: bool) -> u8 {
    if reports.iter().any(|f| !f.errors.is_empty()) {
        2
    } else if reports.iter().any(|f| {
        f.has_refusals()
            || (f.is_empty() && (strict || !f.is_empty_session()))
            || (strict && f.has_problems())
    }) {
        1
    } else {
        0
    }
}

/// One conversation's findings.
#[derive(Debug, Clone, Serialize)]
pub struct ConversationReport {
    /// 1-based conversation in the file: the requests of one agent loop
    /// (each carrying the history before it) are one conversation.
    pub conversation: usize,
    /// 1-based request (body, exchange or log segment) in the file.
    pub request: usize,
    /// For JSON Lines: the line it was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// What it was read as.
    pub format: &'static str,
    /// What it is within its file (`sub-agent …`, `after compaction 1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How many messages it has.
    pub messages: usize,
    /// What is wrong.
    pub findings: Vec<Finding>,
    /// The tokens the file recorded for its replies, per trip and per tool,
    /// priced (absent when it recorded none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<loopdbg_formats::usage::Summary>,
}

pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Why a file (or a line of it) could not be checked.
#[derive(Debug, Serialize)]
pub struct FileError {
    /// What went wrong and what was expected.
    pub message: String,
    /// 1-based line, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The rendered diagnostic for the terminal.
    #[serde(skip)]
    pub rendered: String,
}

impl From<LoadError> for FileError {
    fn from(e: LoadError) -> Self {
        let location = e.location();
        FileError {
            message: e.to_string(),
            line: location.map(|l| l.0),
            column: location.map(|l| l.1),
            rendered: format!("{:?}", miette::Report::new(e)),
        }
    }
}

/// One file's results.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// The file (`-` is standard input).
    pub file: String,
    /// What it was read as (detected or forced), when the file could be
    /// read that far; JSON writes its name (`claude-code`, `anthropic`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "source_name"
    )]
    pub format: Option<Source>,
    /// How many conversations were checked (a loop's requests are one).
    pub conversations: usize,
    /// How many requests (bodies, exchanges, log segments) were checked.
    pub requests: usize,
    /// Capture records that hold no conversation (`GET /v1/models`, token
    /// counts), skipped.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped: usize,
    /// The conversations with findings.
    pub results: Vec<ConversationReport>,
    /// What could not be read: the file, or some of its lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FileError>,
}

impl FileReport {
    /// The report of `file` before anything is read.
    pub fn new(file: String) -> FileReport {
        FileReport {
            file,
            format: None,
            conversations: 0,
            requests: 0,
            skipped: 0,
            results: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Nothing was checked and nothing failed: not a pass.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.errors.is_empty()
    }

    /// True when it is an agent's session holding no conversation yet: a
    /// store's file read as its agent's, nothing in it to send.
    pub fn is_empty_session(&self) -> bool {
        self.is_empty() && matches!(self.format, Some(Source::Agent(_)))
    }

    /// True when a provider would refuse one of its requests.
    pub fn has_refusals(&self) -> bool {
        self.results
            .iter()
            .any(|r| r.findings.iter().any(|f| f.rejected_by_provider()))
    }

    /// True when a finding other than a note was made.
    pub fn has_problems(&self) -> bool {
        self.results
            .iter()
            .any(|r| r.findings.iter().any(|f| !f.is_note()))
    }
}

/// One line of a JSON Lines file, checked: whether it is blank, and its
/// format and report, nothing, or why it could not be read. A line that is
/// not blank and holds no conversation is a captured exchange of other
/// traffic (`GET /v1/models`), counted as skipped.
pub(crate) type LineOutcome = (
    bool,
    Result<Option<(Source, ConversationReport, Prefixes)>, LoadError>,
);

/// Checks one input. `emit` gets every conversation's report as soon as it
/// is known (for `--format jsonl`); the returned report keeps only the
/// conversations with findings.
pub fn check_file(
    path: &Path,
    forced: Option<Source>,
    mcp: &[McpCall],
    emit: &mut dyn FnMut(&str, &ConversationReport),
    progress: &mut dyn FnMut(&Progress),
) -> FileReport {
    check_file_wanting(path, forced, mcp, Tokens::Summed, emit, progress)
}

/// Whether a check sums each conversation's tokens ([`ConversationReport::usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokens {
    /// Summed and priced: the JSON reports and the Python rows carry them.
    Summed,
    /// Left out: a report for people lists findings only, and summing a
    /// short session's tokens (and keeping its report for them) was about
    /// a tenth of its check.
    Skipped,
}

/// [`check_file`], summing tokens or not.
fn check_file_wanting(
    path: &Path,
    forced: Option<Source>,
    mcp: &[McpCall],
    tokens: Tokens,
    emit: &mut dyn FnMut(&str, &ConversationReport),
    progress: &mut dyn FnMut(&Progress),
) -> FileReport {
    let file = origin_of(path);
    match sniff_sized(path, forced) {
        Ok((opened, size)) => {
            let size = size.unwrap_or(0);
            let checking = Checking {
                forced,
                mcp,
                tokens,
            };
            check_opened(file, opened, size, checking, emit, progress)
        }
        Err(e) => {
            let mut report = FileReport::new(file);
            report.errors.push(e.into());
            report
        }
    }
}

/// Checks `bytes` held in memory (a request body, a message array, JSON
/// Lines, a log, a trace), named `origin` in the report and its errors:
/// the report `check` gives for a file holding these bytes, `file` aside.
pub fn check_bytes(
    origin: &str,
    bytes: impl AsRef<[u8]> + Send + 'static,
    forced: Option<Source>,
    mcp: &[McpCall],
    emit: &mut dyn FnMut(&str, &ConversationReport),
) -> FileReport {
    match sniff_bytes(origin, bytes, forced) {
        Ok(opened) => check_opened(
            origin.to_string(),
            opened,
            0,
            Checking {
                forced,
                mcp,
                tokens: Tokens::Summed,
            },
            emit,
            &mut |_| {},
        ),
        Err(e) => {
            let mut report = FileReport::new(origin.to_string());
            report.errors.push(e.into());
            report
        }
    }
}

/// How far a large input's check has come (inputs over 16 MiB report it
/// after each chunk of lines, and once when done).
#[derive(Debug, Clone)]
pub struct Progress {
    /// The input, as its report names it.
    pub origin: String,
    /// Bytes read so far.
    pub read: u64,
    /// The input's size.
    pub size: u64,
    /// Requests checked so far.
    pub requests: usize,
    /// True once the input is read to its end.
    pub done: bool,
}

impl Progress {
    fn of(origin: &str, read: u64, size: u64, requests: usize, done: bool) -> Progress {
        Progress {
            origin: origin.to_string(),
            read,
            size,
            requests,
            done,
        }
    }
}

/// Inputs larger than this say how far their check has come.
const PROGRESS_FROM_BYTES: u64 = 16 << 20;

/// How many messages a file's conversations hold before they are freed on
/// a thread of their own (below it, a thread costs more than the frees).
const FREED_ELSEWHERE_FROM: usize = 10_000;

/// Checks an input already opened; `size` is its length when known (0
/// for a pipe or bytes in memory), for progress.
fn check_opened(
    file: String,
    mut opened: Opened,
    progress_size: u64,
    checking: Checking,
    emit: &mut dyn FnMut(&str, &ConversationReport),
    on_progress: &mut dyn FnMut(&Progress),
) -> FileReport {
    let forced = checking.forced;
    let mut report = FileReport::new(file.clone());
    // An MCP capture: each run of the tap checked as a capture (answered
    // twice, answers to no request), not only through its replay.
    if let Layout::Mcp(sessions) = &opened.layout {
        let reports = session_reports(sessions);
        report.add_mcp_sessions(reports, &mut |r| emit(&file, r));
        return report;
    }
    let mut keep = |report: &mut FileReport, r: ConversationReport| {
        emit(&file, &r);
        // A clean conversation is listed for its tokens, when it has any.
        if !r.findings.is_empty() || r.usage.is_some() {
            report.results.push(r);
        }
    };
    let progress = progress_size > PROGRESS_FROM_BYTES;
    if !matches!(opened.layout, Layout::Lines) {
        // One document or one log: read whole, a few conversations. A log
        // is kept in outline: the checks read no content.
        opened.detail = Detail::Shape;
        let mut index = 0;
        let mut convs = Vec::new();
        let result = read_opened(opened, forced, Replies::Left, |line, conv, _| {
            index += 1;
            convs.push((index, line, conv));
        });
        match result {
            Ok(read) => {
                // A file with nothing to check has no format to name: the
                // reader's default (Anthropic) would be a guess.
                // What the content was detected as, unless the reader
                // found it to be an agent's store (a bare history array
                // that is a Cline task's).
                let store = convs.iter().find_map(|(_, _, c)| c.source.agent());
                report.format = read
                    .named
                    .then_some(store.map_or(read.format, Source::Agent));
                report.requests = read.conversations;
                report.skipped += read.skipped;
                report
                    .errors
                    .extend(read.errors.into_iter().map(Into::into));
            }
            Err(e) => {
                report.errors.push(e.into());
                return report;
            }
        }
        let mut threads = Threads::default();
        for (index, line, conv) in &convs {
            let mut r = checking.report(*index, *line, conv);
            r.conversation =
                threads.assign(&Prefixes::of_source(conv.source.as_str(), &conv.messages)) + 1;
            keep(&mut report, r);
        }
        report.conversations = threads.count();
        // A long log is many small allocations: free them on another core
        // while the report is printed (at exit the process frees them all).
        if convs
            .iter()
            .map(|(_, _, c)| c.messages.len())
            .sum::<usize>()
            > FREED_ELSEWHERE_FROM
            && crate::cores::spare_threads()
        {
            std::thread::spawn(move || drop(convs));
        }
        return report;
    }
    report.format = forced;
    let origin = opened.origin.clone();
    let mut index = 0;
    let mut threads = Threads::default();
    let mut read_bytes: u64 = 0;
    // Three stages, each on its own thread so none waits on another: one
    // reads chunks of lines, one checks a chunk's lines on every core, and
    // this one numbers the results in line order and keeps them. With the
    // checking and the numbering in one thread the cores sat idle while a
    // chunk was numbered.
    let (chunks, arriving) = std::sync::mpsc::sync_channel::<Result<Chunk, LoadError>>(2);
    let (recycle, spare) = std::sync::mpsc::channel();
    let (checked, results) = std::sync::mpsc::sync_channel::<CheckedChunk>(2);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for chunk in opened.chunks(spare) {
                let stop = chunk.is_err();
                if chunks.send(chunk).is_err() || stop {
                    break;
                }
            }
        });
        let origin = &origin;
        scope.spawn(move || {
            for chunk in arriving {
                let done = chunk.map(|chunk| check_chunk(origin, checking, chunk, &recycle));
                let stop = done.is_err();
                if checked.send(done).is_err() || stop {
                    break;
                }
            }
        });
        for done in results {
            let (bytes, outcomes, skipped) = match done {
                Ok(c) => c,
                Err(e) => {
                    report.errors.push(e.into());
                    break;
                }
            };
            read_bytes += bytes;
            for (blank, r) in outcomes {
                match r {
                    Ok(Some((source, mut r, prefixes))) => {
                        index += 1;
                        r.request = index;
                        r.conversation = threads.assign(&prefixes) + 1;
                        report.format.get_or_insert(source);
                        keep(&mut report, r);
                    }
                    Ok(None) => report.skipped += usize::from(!blank),
                    Err(e) => report.errors.push(e.into()),
                }
            }
            if let Some(e) = skipped {
                report.errors.push(e.into());
            }
            if progress {
                on_progress(&Progress::of(
                    origin,
                    read_bytes,
                    progress_size,
                    index,
                    false,
                ));
            }
        }
    });
    if progress {
        on_progress(&Progress::of(
            &origin,
            read_bytes,
            progress_size,
            index,
            true,
        ));
    }
    report.requests = index;
    report.conversations = threads.count();
    report
}

/// A chunk of lines checked: its size, each line's outcome in order, and
/// the line it had to skip, if any; or why the input could not be read on.
pub(crate) type CheckedChunk = Result<(u64, Vec<LineOutcome>, Option<LoadError>), LoadError>;

/// Checks every line of a chunk on every core, then hands its buffer back
/// to the reader (the reader may have finished: then it is freed).
pub(crate) fn check_chunk(
    origin: &str,
    checking: Checking,
    chunk: Chunk,
    recycle: &std::sync::mpsc::Sender<Vec<u8>>,
) -> (u64, Vec<LineOutcome>, Option<LoadError>) {
    let lines: Vec<(usize, &str)> = chunk.lines().collect();
    let outcomes: Vec<LineOutcome> = crate::cores::map(&lines, |&(n, line)| {
        let r = conversation_of_line(origin, checking.forced, n, line, Replies::Left).map(|c| {
            c.map(|conv| {
                let report = checking.report(0, Some(n), &conv);
                let prefixes = Prefixes::of_source(conv.source.as_str(), &conv.messages);
                (conv.source, report, prefixes)
            })
        });
        (line.trim().is_empty(), r)
    });
    drop(lines);
    let bytes = chunk.text.len() as u64;
    let _ = recycle.send(chunk.text.into_bytes());
    (bytes, outcomes, chunk.skipped)
}

impl FileReport {
    /// An MCP capture's sessions, each a conversation, all listed.
    fn add_mcp_sessions(
        &mut self,
        sessions: Vec<ConversationReport>,
        emit: &mut dyn FnMut(&ConversationReport),
    ) {
        self.format = Some(Source::Mcp);
        self.requests = sessions.len();
        self.conversations = sessions.len();
        for r in sessions {
            emit(&r);
            self.results.push(r);
        }
    }
}

/// Each run of the tap checked (`loopdbg_read::mcp::check`), one report
/// per session.
fn session_reports(sessions: &[loopdbg_read::mcp::Session]) -> Vec<ConversationReport> {
    sessions
        .iter()
        .enumerate()
        .map(|(i, session)| ConversationReport {
            conversation: i + 1,
            request: i + 1,
            line: Some(session.line),
            format: "mcp",
            label: (!session.command.is_empty()).then(|| session.command.join(" ")),
            messages: session.messages.len(),
            findings: loopdbg_judge::mcp::check(session),
            usage: None,
        })
        .collect()
}

/// What a check is given besides its input.
#[derive(Clone, Copy)]
pub(crate) struct Checking<'a> {
    /// The format the input is read as, when given.
    pub forced: Option<Source>,
    /// The MCP calls a conversation's calls are matched with.
    pub mcp: &'a [McpCall],
    /// Whether tokens are summed.
    pub tokens: Tokens,
}

impl Checking<'_> {
    /// Conversation `index` (on `line`, for a line of its own) checked.
    pub(crate) fn report(
        &self,
        index: usize,
        line: Option<usize>,
        conv: &Conversation,
    ) -> ConversationReport {
        let mut findings = check(conv);
        if !self.mcp.is_empty() {
            findings.extend(loopdbg_judge::mcp::correlate(self.mcp, conv));
        }
        ConversationReport {
            conversation: index,
            request: index,
            line,
            format: conv.source.as_str(),
            label: conv.label.clone(),
            messages: conv.messages.len() + conv.system_messages,
            findings,
            usage: match self.tokens {
                Tokens::Summed => conv.token_summary(crate::prices::prices()),
                Tokens::Skipped => None,
            },
        }
    }
}

/// Checks several inputs; a bad one is reported and the others still are.
pub fn check_files(
    files: &[PathBuf],
    forced: Option<Source>,
    mcp: &[McpCall],
    tokens: Tokens,
    emit: &mut dyn FnMut(&str, &ConversationReport),
    progress: &mut dyn FnMut(&Progress),
) -> Vec<FileReport> {
    let mut reports = Vec::with_capacity(files.len());
    let mut at = 0;
    while at < files.len() {
        // Files too small to say their progress are checked side by side
        // and said in order; a large one alone, saying its progress, and
        // a small one alone on every core.
        let alone = files.get(at + 1).is_none_or(|next| !is_small(next));
        if alone || !is_small(&files[at]) {
            reports.push(check_file_wanting(
                &files[at], forced, mcp, tokens, emit, progress,
            ));
            at += 1;
            continue;
        }
        let check_one = |f: &PathBuf| {
            let mut said = Vec::new();
            let report = check_file_wanting(
                f,
                forced,
                mcp,
                tokens,
                &mut |name, r| said.push((name.to_string(), r.clone())),
                &mut |_| {},
            );
            (report, said)
        };
        at += side_by_side(
            &files[at..],
            |f| is_small(f),
            check_one,
            |(report, said)| {
                for (name, r) in &said {
                    emit(name, r);
                }
                reports.push(report);
            },
        );
    }
    reports
}

/// `f` of the items from the first on while `wanted` says so, one thread
/// per core (this one among them), each result given to `each` in the
/// items' order as soon as this thread is free and those before it are
/// done; answers how many were taken. Files too small to say their
/// progress are checked this way (800 sessions of 60 KB each had one core
/// idle; in windows of 64, each window's last file left a core idle; a
/// thread waiting to say each result was woken 800 times and took a busy
/// core from the others each time; the run's files looked at before any
/// was checked kept the other core idle for their 800 `stat`s).
/// Not on the thread pool: checking a file waits for work it gives the
/// pool (its lines), and pool threads waiting so left none to do it (800
/// files of JSON Lines hung); on these threads that work is done in order
/// ([`crate::cores::in_order_here`]), the other cores being busy already.
fn side_by_side<T: Sync, R: Send>(
    items: &[T],
    wanted: impl Fn(&T) -> bool + Sync,
    f: impl Fn(&T) -> R + Sync,
    mut each: impl FnMut(R),
) -> usize {
    use std::sync::{Mutex, PoisonError};
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 {
        let taken = items.iter().take_while(|item| wanted(item)).count();
        items[..taken].iter().map(f).for_each(each);
        return taken;
    }
    // The next item, and whether one was not wanted (the run ends there).
    let cursor = Mutex::new((0, false));
    let next = || {
        let mut cursor = cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let (k, ended) = *cursor;
        let item = items.get(k).filter(|item| !ended && wanted(item));
        *cursor = match item {
            Some(_) => (k + 1, false),
            None => (k, true),
        };
        item.map(|item| (k, item))
    };
    // Results done before their turn, by index.
    let done = Mutex::new(std::collections::BTreeMap::new());
    let take_one = || -> bool {
        let Some((k, item)) = next() else {
            return false;
        };
        let r = crate::cores::in_order_here(|| f(item));
        done.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(k, r);
        true
    };
    let mut turn = 0;
    // Says what is ready, in order, outside the lock.
    let mut say_ready = |turn: &mut usize| {
        let ready: Vec<R> = {
            let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
            std::iter::from_fn(|| {
                let r = done.remove(turn)?;
                *turn += 1;
                Some(r)
            })
            .collect()
        };
        ready.into_iter().for_each(&mut each);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads.min(items.len()) {
            scope.spawn(|| while take_one() {});
        }
        while take_one() {
            say_ready(&mut turn);
        }
    });
    say_ready(&mut turn);
    cursor
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .0
}

/// A regular file under the size that reports progress.
fn is_small(path: &Path) -> bool {
    path.as_os_str() != "-"
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= PROGRESS_FROM_BYTES)
}

/// The answered `tools/call`s of an MCP capture (`check --mcp`).
pub fn mcp_calls(path: &Path) -> Result<Vec<McpCall>, LoadError> {
    let origin = origin_of(path);
    let text = crate::read_text(path, &origin)?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if !serde_json::from_str::<Value>(first).is_ok_and(|v| loopdbg_read::mcp::is_record(&v)) {
        return Err(LoadError::Refused {
            origin,
            reason: "--mcp takes a `loopdbg mcp` capture; this file's first record is not one"
                .into(),
        });
    }
    Ok(loopdbg_judge::mcp::calls(&mcp_sessions(&origin, &text)?))
}

/// The document `check --format json` prints for `reports`: every file's
/// report and the totals.
pub fn summary(reports: &[FileReport]) -> Value {
    // Reports hold no map with non-string keys: this cannot fail.
    serde_json::to_value(Summary::of(reports)).unwrap_or_default()
}

/// The `--format json` document, written as it is serialized: built as a
/// `Value` first, the reports of 800 sessions (13 MB of JSON, every
/// conversation's tokens) were copied into a tree of maps, which took
/// two fifths of the run.
#[derive(Serialize)]
pub struct Summary<'a> {
    files: &'a [FileReport],
    conversations: usize,
    with_problems: usize,
    problems: usize,
    notes: usize,
    unreadable: usize,
    nothing_to_check: usize,
}

impl Summary<'_> {
    /// The summary of `reports`.
    pub fn of(reports: &[FileReport]) -> Summary<'_> {
        let all = || {
            reports
                .iter()
                .flat_map(|f| &f.results)
                .flat_map(|r| &r.findings)
        };
        Summary {
            files: reports,
            conversations: reports.iter().map(|f| f.conversations).sum(),
            with_problems: reports
                .iter()
                .flat_map(|f| &f.results)
                .filter(|r| !r.findings.is_empty())
                .count(),
            problems: all().filter(|x| !x.is_note()).count(),
            notes: all().filter(|x| x.is_note()).count(),
            unreadable: reports.iter().filter(|f| !f.errors.is_empty()).count(),
            nothing_to_check: reports.iter().filter(|f| f.is_empty()).count(),
        }
    }
}

/// The `--format jsonl` record of one conversation's report, written as
/// it is serialized (see [`Summary`]).
pub fn jsonl_record<'a>(file: &'a str, report: &'a ConversationReport) -> JsonlRecord<'a> {
    JsonlRecord {
        file,
        conversation: report,
    }
}

/// A `--format jsonl` record: `{"file": …, "conversation": …}`.
#[derive(Serialize)]
pub struct JsonlRecord<'a> {
    file: &'a str,
    conversation: &'a ConversationReport,
}

/// The `--format jsonl` record of a file that failed or held nothing, so
/// a sharded run's concatenated output accounts for every file; `None`
/// for a file whose conversations were all listed.
pub fn jsonl_file_record(f: &FileReport) -> Option<Value> {
    (!f.errors.is_empty() || f.is_empty()).then(|| {
        serde_json::json!({
            "file": f.file,
            "format": f.format.map(Source::as_str),
            "conversations": f.conversations,
            "errors": f.errors,
            "warning": f.is_empty().then_some("no conversation found, nothing was checked"),
        })
    })
}

/// The ids a finding names, as a line of text says them: the first 12
/// and how many more (a note on a branch of 400,000 events
/// named every call in it: 2.3 MB on one line). `--format json` keeps all.
pub fn listed_ids(ids: &[String]) -> String {
    match ids.len().checked_sub(LISTED_IDS) {
        None | Some(0) => ids.join(", "),
        Some(more) => format!("{}, … and {more} more", ids[..LISTED_IDS].join(", ")),
    }
}

/// How many ids a line of text names before it counts the rest.
const LISTED_IDS: usize = 12;

/// A source as JSON names it.
fn source_name<S: serde::Serializer>(source: &Option<Source>, s: S) -> Result<S::Ok, S::Error> {
    match source {
        Some(source) => s.serialize_str(source.as_str()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Tokens, check_files};

    /// Text reports skip the token sums; JSON reports keep them, and the
    /// findings are the same either way. Two files, so both are checked
    /// side by side (a lone file takes the other path).
    #[test]
    fn tokens_are_summed_only_when_asked_and_findings_do_not_change() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
        let files: Vec<std::path::PathBuf> = [
            "transcripts/usage/claude_code.jsonl",
            "transcripts/usage/codex.jsonl",
            "transcripts/claude_code_interrupted.jsonl",
        ]
        .iter()
        .map(|f| std::path::Path::new(dir).join(f))
        .collect();
        let run = |tokens| check_files(&files, None, &[], tokens, &mut |_, _| {}, &mut |_| {});
        let (summed, skipped) = (run(Tokens::Summed), run(Tokens::Skipped));
        let usages = |reports: &[super::FileReport]| {
            reports
                .iter()
                .flat_map(|f| &f.results)
                .filter(|r| r.usage.is_some())
                .count()
        };
        assert!(usages(&summed) >= 2, "each usage fixture has tokens");
        assert_eq!(usages(&skipped), 0);
        let findings = |reports: &[super::FileReport]| {
            reports
                .iter()
                .map(|f| {
                    let found: Vec<String> = f
                        .results
                        .iter()
                        .flat_map(|r| &r.findings)
                        .map(|x| x.message.clone())
                        .collect();
                    (f.file.clone(), f.errors.len(), found)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(findings(&summed), findings(&skipped));
        assert!(
            findings(&skipped)
                .iter()
                .any(|(_, _, found)| !found.is_empty()),
            "the orphan fixture has a finding"
        );
    }

    #[test]
    fn side_by_side_says_each_result_in_order_and_stops_at_the_first_unwanted() {
        let items: Vec<u64> = (0..200).collect();
        // Uneven work, so later items are often done before earlier ones.
        let work = |&i: &u64| (0..(i % 7) * 20_000).fold(i, |a, b| a ^ b.rotate_left(3)) ^ i;
        let mut said = Vec::new();
        let taken = super::side_by_side(&items, |&i| i != 157, |i| (*i, work(i)), |r| said.push(r));
        assert_eq!(taken, 157);
        let expected: Vec<(u64, u64)> = items[..157].iter().map(|i| (*i, work(i))).collect();
        assert_eq!(said, expected);
        // None wanted: nothing taken, nothing said.
        let mut said = 0;
        assert_eq!(
            super::side_by_side(&items, |_| false, |i| *i, |_| said += 1),
            0
        );
        assert_eq!(said, 0);
        // All wanted.
        let mut said = Vec::new();
        assert_eq!(
            super::side_by_side(&items, |_| true, |i| *i, |r| said.push(r)),
            200
        );
        assert_eq!(said, items);
    }
}
