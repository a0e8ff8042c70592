//! The check as a table, for Parquet, a warehouse or a dataframe: one row
//! per request checked (a body, a log segment, a captured exchange;
//! `conversation` numbers the loop it is part of), and one per file, or
//! line, that could not be read or held nothing. Each row is the record
//! `check --format jsonl` prints for that request, flattened to columns a
//! query can group by; a fleet run over many shards totals these rows.

use std::path::Path;

use loopdbg_judge::check::Severity;
use loopdbg_judge::mcp::McpCall;
use loopdbg_read::Source;
use serde::Serialize;

use crate::report::{ConversationReport, FileReport, check_bytes, check_file};

/// One request checked, or one file (or line) that gave none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The file, as `check` names it.
    pub file: String,
    /// What it was read as (`anthropic`, `claude-code`, …); absent when
    /// the file could not be read that far.
    pub format: Option<String>,
    /// 1-based conversation in the file (a loop's requests are one); absent
    /// on a file's own row.
    pub conversation: Option<usize>,
    /// 1-based request in the file.
    pub request: Option<usize>,
    /// For JSON Lines: the line it was read from.
    pub line: Option<usize>,
    /// What it is within its file (`sub-agent …`).
    pub label: Option<String>,
    /// How many messages it has.
    pub messages: Option<usize>,
    /// How many findings, notes included.
    pub findings: usize,
    /// How many findings other than notes.
    pub problems: usize,
    /// True when the provider would refuse it (a 400).
    pub rejected_by_provider: bool,
    /// The gravest severity found (`400`, `warning`, `note`), if any.
    pub severity: Option<&'static str>,
    /// Each finding kind, once, in the order found.
    pub kinds: Vec<&'static str>,
    /// The ids involved, once each, in the order found.
    pub ids: Vec<String>,
    /// The first problem's words (the provider's own, for a 400).
    pub message: Option<String>,
    /// Why the file, or a line of it, could not be read (file rows only).
    pub error: Option<String>,
}

impl Row {
    /// The row of one conversation's report.
    pub fn of_conversation(file: &str, r: &ConversationReport) -> Row {
        let mut kinds = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        for f in &r.findings {
            if !kinds.contains(&f.kind.as_str()) {
                kinds.push(f.kind.as_str());
            }
            for id in &f.ids {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
        let gravest = [Severity::Rejected, Severity::Warning, Severity::Note]
            .into_iter()
            .find(|s| r.findings.iter().any(|f| f.severity == *s));
        let first = r
            .findings
            .iter()
            .find(|f| !f.is_note())
            .or(r.findings.first());
        Row {
            file: file.to_string(),
            format: Some(r.format.to_string()),
            conversation: Some(r.conversation),
            request: Some(r.request),
            line: r.line,
            label: r.label.clone(),
            messages: Some(r.messages),
            findings: r.findings.len(),
            problems: r.findings.iter().filter(|f| !f.is_note()).count(),
            rejected_by_provider: r.findings.iter().any(|f| f.rejected_by_provider()),
            severity: gravest.map(Severity::as_str),
            kinds,
            ids,
            message: first.map(|f| f.message.clone()),
            error: None,
        }
    }

    /// The rows of a file that failed (one per error) or held nothing
    /// (one, saying so); none for a file whose conversations were all read.
    pub fn of_file(f: &FileReport) -> Vec<Row> {
        let row = |error: String| Row {
            file: f.file.clone(),
            format: f.format.map(|s| s.as_str().to_string()),
            conversation: None,
            request: None,
            line: None,
            label: None,
            messages: None,
            findings: 0,
            problems: 0,
            rejected_by_provider: false,
            severity: None,
            kinds: Vec::new(),
            ids: Vec::new(),
            message: None,
            error: Some(error),
        };
        if f.is_empty() {
            return vec![row("no conversation found, nothing was checked".into())];
        }
        f.errors
            .iter()
            .map(|e| {
                let mut r = row(e.message.clone());
                r.line = e.line;
                r
            })
            .collect()
    }
}

/// Every row of one file: its conversations in order, then its own rows
/// (each line that could not be read, with its line).
pub fn rows_of_file(path: &Path, forced: Option<Source>, mcp: &[McpCall]) -> Vec<Row> {
    let mut rows = Vec::new();
    let report = check_file(
        path,
        forced,
        mcp,
        &mut |file, r| rows.push(Row::of_conversation(file, r)),
        &mut |_| {},
    );
    rows.extend(Row::of_file(&report));
    rows
}

/// [`rows_of_file`] over bytes held in memory, named `origin`.
pub fn rows_of_bytes(origin: &str, bytes: Vec<u8>, forced: Option<Source>) -> Vec<Row> {
    let mut rows = Vec::new();
    let report = check_bytes(origin, bytes, forced, &[], &mut |file, r| {
        rows.push(Row::of_conversation(file, r))
    });
    rows.extend(Row::of_file(&report));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswered_call_is_one_row_naming_its_id() {
        let body = br#"{"model":"m","messages":[
            {"role":"user","content":"weather?"},
            {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"w","input":{}}]},
            {"role":"user","content":"and?"}]}"#;
        let rows = rows_of_bytes("<body>", body.to_vec(), None);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let row = &rows[0];
        assert_eq!(row.format.as_deref(), Some("anthropic"));
        assert!(row.rejected_by_provider);
        assert_eq!(row.severity, Some("400"));
        assert_eq!(row.ids, ["toolu_1"]);
        assert!(row.message.as_deref().unwrap().contains("toolu_1"));
        assert_eq!(row.error, None);
    }

    #[test]
    fn a_clean_body_is_a_row_without_findings() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let rows = rows_of_bytes("<body>", body.to_vec(), None);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].findings, rows[0].severity), (0, None));
        assert!(rows[0].kinds.is_empty());
    }

    #[test]
    fn a_file_that_cannot_be_read_is_a_row_with_its_located_error() {
        let rows = rows_of_bytes("shard.json", b"{\"messages\": [".to_vec(), None);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].conversation, None);
        let error = rows[0].error.as_deref().unwrap();
        assert!(
            error.starts_with("shard.json:") && error.contains("expected JSON"),
            "{error}"
        );
    }

    #[test]
    fn json_lines_give_a_row_per_line_and_one_per_bad_line() {
        let text = concat!(
            r#"{"model":"m","messages":[{"role":"user","content":"a"}]}"#,
            "\nnot json\n",
            r#"{"model":"m","messages":[{"role":"user","content":"b"}]}"#,
            "\n"
        );
        let rows = rows_of_bytes("s.jsonl", text.as_bytes().to_vec(), None);
        // The conversations in line order, then the file's own rows.
        let lines: Vec<_> = rows.iter().map(|r| (r.line, r.error.is_some())).collect();
        assert_eq!(lines, [(Some(1), false), (Some(3), false), (Some(2), true)]);
        assert!(rows[2].error.as_deref().unwrap().starts_with("s.jsonl:2:"));
    }
}
