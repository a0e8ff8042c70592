//! Agent logs read whole: events in, conversations out.

use crate::agent::Agent;
use serde_json::Value;

use crate::claude_code::{Growing, Grown, Leftovers};
use crate::conversation::{Conversation, Detail, ReadError, Source};
use crate::parse::joined_records;
use crate::{ClaudeCodeLog, CodexRollout, GeminiCliLog, LineError, claude_code, copilot_cli};

/// An agent log read whole: events in, conversations out.
#[derive(Debug, Clone)]
pub enum Log {
    /// A Claude Code session log.
    ClaudeCode(ClaudeCodeLog),
    /// A Codex CLI rollout.
    Codex(CodexRollout),
    /// A Gemini CLI chat recording.
    GeminiCli(GeminiCliLog),
    /// A GitHub Copilot CLI session log.
    CopilotCli(copilot_cli::CopilotCliLog),
    /// A Kimi Code context file.
    KimiCode(crate::kimi_code::KimiCodeLog),
}

impl Log {
    /// An empty reader for `source`, when it is a log.
    pub fn new(source: Source) -> Option<Log> {
        match source {
            Source::Agent(Agent::ClaudeCode) => Some(Log::ClaudeCode(ClaudeCodeLog::default())),
            Source::Agent(Agent::Codex) => Some(Log::Codex(CodexRollout::default())),
            Source::Agent(Agent::GeminiCli) => Some(Log::GeminiCli(GeminiCliLog::default())),
            Source::Agent(Agent::CopilotCli) => Some(Log::CopilotCli(Default::default())),
            Source::Agent(Agent::KimiCode) => Some(Log::KimiCode(Default::default())),
            Source::Provider(_)
            | Source::Agent(
                Agent::Opencode | Agent::Crush | Agent::Cline | Agent::RooCode | Agent::KiloCode,
            )
            | Source::Mcp => None,
        }
    }

    /// Keeps only what [`Detail`] says (Claude Code logs, and Gemini CLI
    /// chats' results; the other logs are read in full).
    pub fn keep(&mut self, detail: Detail) {
        match self {
            Log::ClaudeCode(log) => log.keep(detail),
            Log::GeminiCli(log) => log.keep(detail),
            _ => {}
        }
    }

    /// Tells the reader how large the log is, so it can set aside room
    /// for its events once instead of growing (and copying) as they come.
    pub fn expect_bytes(&mut self, bytes: u64) {
        if let Log::ClaudeCode(log) = self {
            log.expect_bytes(bytes);
        }
    }

    /// Adds the event on 1-based `line`.
    pub fn push_owned(&mut self, line: usize, event: Value) -> Result<(), ReadError> {
        match self {
            Log::ClaudeCode(log) => log.push_owned(line, event),
            Log::Codex(log) => log.push_owned(line, event),
            Log::GeminiCli(log) => log.push_owned(line, event),
            Log::CopilotCli(log) => log.push_owned(line, event),
            Log::KimiCode(log) => log.push_owned(line, event),
        }
    }

    /// How this log's lines are parsed, apart from the log: lines are
    /// independent until the log is finished, so a caller with threads
    /// (`loopdbg-corpus`) parses a chunk on every core, then pushes the
    /// results in order with [`Log::push_parsed`].
    pub fn line_parser(&self) -> LineParser {
        LineParser {
            claude_code: match self {
                Log::ClaudeCode(log) => Some(log.detail()),
                _ => None,
            },
            codex: matches!(self, Log::Codex(_)),
            gemini_cli: match self {
                Log::GeminiCli(log) => Some(log.detail()),
                _ => None,
            },
        }
    }

    /// Reads a chunk of lines, in order, on this thread; blank lines are
    /// skipped. A line that cannot be read is left out and returned with
    /// why, and the rest is read: agents skip such a line when they
    /// resume a log, and a log still being written ends in half a line.
    pub fn push_lines(&mut self, lines: &[(usize, &str)]) -> Vec<(usize, LineError)> {
        let parser = self.line_parser();
        let mut bad = Vec::new();
        for &(n, text) in lines {
            let parsed = parser.parse(n, text);
            bad.extend(self.push_parsed(n, text, parsed));
        }
        bad
    }

    /// Pushes line `n` (its text, and what [`LineParser::parse`] made of
    /// it); returns why it, or a record joined on it, could not be read.
    pub fn push_parsed(
        &mut self,
        n: usize,
        text: &str,
        parsed: ParsedLine,
    ) -> Vec<(usize, LineError)> {
        let mut bad = Vec::new();
        match (self, parsed.0) {
            (_, Parsed::Blank | Parsed::Unread) => {}
            (Log::Codex(log), Parsed::CodexItem(item)) => log.push_item(n, *item),
            (Log::ClaudeCode(log), Parsed::Event(event)) => match event {
                Ok(Some(e)) => log.push_event(e),
                Ok(None) => {}
                Err(e) => match joined_records(text) {
                    Some(records) => {
                        log.joined.push((n, records.len()));
                        let detail = log.detail();
                        for record in records {
                            if let Ok(Some(e)) =
                                claude_code::Event::parse(n, &record.to_string(), detail)
                            {
                                log.push_event(e);
                            }
                        }
                    }
                    None => bad.push((n, e)),
                },
            },
            (other, parsed) => {
                let values = match parsed {
                    Parsed::Value(Ok(v)) => vec![v],
                    Parsed::Value(Err(e)) => match joined_records(text) {
                        Some(records) => {
                            other.note_joined(n, records.len());
                            records
                        }
                        None => return vec![(n, LineError::Json(e))],
                    },
                    // A Claude Code event or a Codex item given to another
                    // log: read as the value it is.
                    Parsed::Event(_) | Parsed::CodexItem(_) | Parsed::Blank | Parsed::Unread => {
                        match crate::bounded::value(text) {
                            Ok(v) => vec![v],
                            Err(e) => return vec![(n, LineError::Json(e))],
                        }
                    }
                };
                for v in values {
                    if let Err(e) = other.push_owned(n, v) {
                        bad.push((n, LineError::Read(e)));
                    }
                }
            }
        }
        bad
    }

    /// Notes that `line` held `count` records joined (each was read).
    fn note_joined(&mut self, line: usize, count: usize) {
        match self {
            Log::ClaudeCode(log) => log.joined.push((line, count)),
            Log::Codex(log) => log.joined.push((line, count)),
            Log::GeminiCli(log) => log.joined.push((line, count)),
            Log::CopilotCli(log) => log.joined.push((line, count)),
            Log::KimiCode(log) => log.joined.push((line, count)),
        }
    }

    /// The log's conversations, `growing` brought up to the events pushed
    /// since: a Claude Code log adds what extends its live chain
    /// ([`ClaudeCodeLog::grow`]); any other log is built again from a copy.
    pub fn grow(&self, growing: &mut Option<Growing>) -> Result<Grown, ReadError> {
        match self {
            Log::ClaudeCode(log) => Ok(log.grow(growing)),
            other => {
                *growing = Some(Growing::whole(other.clone().finish()?));
                Ok(Grown::Rebuilt)
            }
        }
    }

    /// The conversations the log holds.
    pub fn finish(self) -> Result<Vec<Conversation>, ReadError> {
        self.finish_leaving().map(|(convs, _)| convs)
    }

    /// [`Log::finish`], handing back what is left of the events, for a
    /// caller with threads to free off its way.
    pub fn finish_leaving(self) -> Result<(Vec<Conversation>, Option<Leftovers>), ReadError> {
        let convs = match self {
            Log::ClaudeCode(log) => {
                let (convs, left) = log.finish_leaving();
                return Ok((convs, Some(left)));
            }
            Log::Codex(log) => log.finish()?,
            Log::GeminiCli(log) => log.finish(),
            Log::CopilotCli(log) => log.finish(),
            Log::KimiCode(log) => log.finish(),
        };
        Ok((convs, None))
    }
}

/// Parses the lines of one kind of log, holding nothing of the log
/// itself: `Copy` and `Sync`, so lines can be parsed on any thread.
#[derive(Debug, Clone, Copy)]
pub struct LineParser {
    /// For a Claude Code log: how much of each event to keep.
    claude_code: Option<Detail>,
    /// For a Codex rollout: each line read in one pass, its items
    /// straight from the text and the records it reads nothing from not
    /// built ([`crate::codex::parse_line`]).
    codex: bool,
    /// For a Gemini CLI chat: each record built of only the fields its
    /// reader reads, as `Detail` keeps them ([`crate::gemini_cli::parse_line`]).
    gemini_cli: Option<Detail>,
}

/// One line, parsed and not yet pushed.
#[derive(Debug)]
pub struct ParsedLine(Parsed);

#[derive(Debug)]
enum Parsed {
    /// Nothing on it.
    Blank,
    /// A Claude Code event (or why the line is not one).
    Event(Result<Option<claude_code::Event>, LineError>),
    /// Another log's record, as JSON.
    Value(Result<Value, serde_json::Error>),
    /// A Codex rollout's response item, read from the text.
    CodexItem(Box<crate::responses::Item<'static>>),
    /// A record its log reads nothing from: not built.
    Unread,
}

impl LineParser {
    /// Parses line `n`.
    pub fn parse(&self, n: usize, text: &str) -> ParsedLine {
        if text.trim().is_empty() {
            return ParsedLine(Parsed::Blank);
        }
        ParsedLine(match self.claude_code {
            Some(detail) => Parsed::Event(claude_code::Event::parse(n, text, detail)),
            None if self.codex => match crate::codex::parse_line(text) {
                crate::codex::Line::Unread => Parsed::Unread,
                crate::codex::Line::Item(item) => Parsed::CodexItem(item),
                crate::codex::Line::Value(value) => Parsed::Value(value),
            },
            None => match self.gemini_cli {
                Some(detail) => Parsed::Value(crate::gemini_cli::parse_line(text, detail)),
                None => Parsed::Value(crate::bounded::value(text)),
            },
        })
    }
}

/// For the readers' tests: a log read through its line parser and by
/// building every record as a value first.
#[cfg(test)]
pub(crate) mod both_ways {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on what they set up
    use super::Log;
    use crate::conversation::Source;

    /// Every file under `tests/fixtures`, with its text, that `keep` takes.
    pub(crate) fn fixtures(
        keep: impl Fn(&std::path::Path, &str) -> bool,
    ) -> Vec<(std::path::PathBuf, String)> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
        let mut out = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path)
                    && keep(&path, &text)
                {
                    out.push((path, text));
                }
            }
        }
        out
    }

    /// `lines` read as `source`'s log both ways: through the log's line
    /// parser, and by building each record whole (a line of records
    /// joined, each); each way's conversations (or error) and the lines
    /// it refused.
    pub(crate) fn read(source: Source, lines: &[(usize, &str)]) -> [(String, Vec<usize>); 2] {
        read_kept(source, lines, crate::Detail::Full)
    }

    /// [`read`], each way keeping what `detail` keeps.
    pub(crate) fn read_kept(
        source: Source,
        lines: &[(usize, &str)],
        detail: crate::Detail,
    ) -> [(String, Vec<usize>); 2] {
        let mut parsed = Log::new(source).unwrap();
        parsed.keep(detail);
        let refused = parsed.push_lines(lines).iter().map(|(n, _)| *n).collect();
        let one_pass = (format!("{:?}", parsed.finish()), refused);
        let mut built = Log::new(source).unwrap();
        built.keep(detail);
        let mut refused = Vec::new();
        for &(n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            match crate::bounded::value(line) {
                Ok(v) => built.push_owned(n, v).unwrap(),
                Err(_) => match crate::parse::joined_records(line) {
                    Some(records) => {
                        built.note_joined(n, records.len());
                        for v in records {
                            built.push_owned(n, v).unwrap();
                        }
                    }
                    None => refused.push(n),
                },
            }
        }
        [one_pass, (format!("{:?}", built.finish()), refused)]
    }

    /// The lines of `text`, numbered from 1.
    pub(crate) fn numbered(text: &str) -> Vec<(usize, &str)> {
        text.lines().enumerate().map(|(n, l)| (n + 1, l)).collect()
    }
}
