//! `check`'s findings where CI shows them: SARIF 2.1.0 (`--format sarif`,
//! what GitHub code scanning and most CI viewers read; the types are
//! serde-sarif's, generated from the published schema) and GitHub
//! Actions' workflow commands (`--format github`), each finding on the
//! line of the file it was found in.

#[cfg(feature = "sarif")]
use loopdbg_read::finding::Kind;
use loopdbg_read::finding::Severity;
#[cfg(feature = "sarif")]
use serde_json::json;
#[cfg(feature = "sarif")]
use serde_sarif::sarif;

use crate::report::{ConversationReport, FileReport};

#[cfg(feature = "sarif")]
/// The SARIF level of a severity: a 400 is an error.
fn level(severity: Severity) -> sarif::ResultLevel {
    match severity {
        Severity::Rejected => sarif::ResultLevel::Error,
        Severity::Warning => sarif::ResultLevel::Warning,
        Severity::Note => sarif::ResultLevel::Note,
    }
}

/// The line a finding is located at: its own (an agent log's event),
/// else its conversation's (a JSON Lines line), else where its JSON path
/// starts in the document, else the file's first.
fn place_of(
    finding: &loopdbg_judge::check::Finding,
    report: &ConversationReport,
    document: Option<&Document>,
) -> (usize, Option<usize>) {
    match finding.line.or(report.line) {
        Some(line) => (line, None),
        None => document
            .and_then(|d| d.line_col(&finding.path))
            .map_or((1, None), |(line, column)| (line, Some(column))),
    }
}

/// A file read whole as one JSON document (a request body, a saved
/// conversation), read again to place findings at their message's line
/// and column: what a reader keeps is the JSON path, and CI shows a line.
/// Only for reports written for CI, files under [`Document::MOST`], and
/// not standard input or a compressed file (their findings stay at line 1).
pub(crate) struct Document {
    text: String,
    root: loopdbg_engine::diagnostics::json_span::SpanNode,
}

impl Document {
    const MOST: u64 = 64 << 20;

    fn of(file: &FileReport) -> Option<Document> {
        let needed = file
            .results
            .iter()
            .any(|r| r.line.is_none() && r.findings.iter().any(|f| f.line.is_none()));
        if !needed || file.file == "-" || file.file.ends_with(".gz") {
            return None;
        }
        let bytes =
            loopdbg_io::files::read_regular(std::path::Path::new(&file.file), Self::MOST).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let root = loopdbg_engine::diagnostics::json_span::SpanNode::parse(&text)?;
        Some(Document { text, root })
    }

    fn line_col(&self, path: &str) -> Option<(usize, usize)> {
        let path = loopdbg_engine::diagnostics::json_span::JsonPath::parse_written(path)?;
        let node = self.root.get(path.segments())?;
        Some(loopdbg_engine::diagnostics::json_span::line_col(
            &self.text, node.start,
        ))
    }
}

/// What a finding says, with the ids it names.
fn said(finding: &loopdbg_judge::check::Finding) -> String {
    match finding.ids.is_empty() {
        true => finding.message.clone(),
        false => format!(
            "{} [{}]",
            finding.message,
            crate::report::listed_ids(&finding.ids)
        ),
    }
}

#[cfg(feature = "sarif")]
fn location(file: &str, line: usize, column: Option<usize>, path: Option<&str>) -> sarif::Location {
    let region = match column {
        Some(c) => sarif::Region::builder()
            .start_line(line as i64)
            .start_column(c as i64)
            .build(),
        None => sarif::Region::builder().start_line(line as i64).build(),
    };
    let physical = sarif::PhysicalLocation::builder()
        .artifact_location(sarif::ArtifactLocation::builder().uri(uri_of(file)).build())
        .region(region)
        .build();
    match path {
        // Where in the conversation: the JSON path of the message or block.
        Some(path) => sarif::Location::builder()
            .physical_location(physical)
            .logical_locations(vec![
                sarif::LogicalLocation::builder()
                    .fully_qualified_name(path)
                    .kind("member")
                    .build(),
            ])
            .build(),
        None => sarif::Location::builder()
            .physical_location(physical)
            .build(),
    }
}

#[cfg(feature = "sarif")]
/// One rule per finding kind, with what it means.
fn rules() -> Vec<sarif::ReportingDescriptor> {
    Kind::ALL
        .iter()
        .map(|kind| {
            let help = match kind.is_note() {
                true => format!("{} (a note: never a failure)", kind.description()),
                false => kind.description().to_string(),
            };
            sarif::ReportingDescriptor::builder()
                .id(kind.as_str())
                .name(kind.as_str())
                .short_description(
                    sarif::MultiformatMessageString::builder()
                        .text(kind.description())
                        .build(),
                )
                .help(
                    sarif::MultiformatMessageString::builder()
                        .text(help)
                        .build(),
                )
                .build()
        })
        .collect()
}

#[cfg(feature = "sarif")]
/// The reports as one SARIF log: a run of `loopdbg` whose results are the
/// findings, located at file:line, and whose notifications are the files
/// (or lines) that could not be read.
pub fn sarif(reports: &[FileReport]) -> sarif::Sarif {
    let mut results = Vec::new();
    for file in reports {
        let document = Document::of(file);
        for report in &file.results {
            for finding in &report.findings {
                let (line, column) = place_of(finding, report, document.as_ref());
                results.push(
                    sarif::Result::builder()
                        .rule_id(finding.kind.as_str())
                        .level(level(finding.severity))
                        .message(sarif::Message::builder().text(said(finding)).build())
                        .locations(vec![location(
                            &file.file,
                            line,
                            column,
                            Some(&finding.path),
                        )])
                        .build(),
                );
            }
        }
    }
    let unread: Vec<sarif::Notification> = reports
        .iter()
        .flat_map(|f| f.errors.iter().map(move |e| (f, e)))
        .map(|(f, e)| {
            sarif::Notification::builder()
                .level(json!("error"))
                .message(sarif::Message::builder().text(e.message.clone()).build())
                .locations(vec![location(&f.file, e.line.unwrap_or(1), e.column, None)])
                .build()
        })
        .collect();
    let invocation = sarif::Invocation::builder()
        .execution_successful(unread.is_empty())
        .tool_execution_notifications(unread)
        .build();
    let driver = sarif::ToolComponent::builder()
        .name("loopdbg")
        .version(env!("CARGO_PKG_VERSION"))
        .rules(rules())
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .invocations(vec![invocation])
        .results(results)
        .build();
    sarif::Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(json!("2.1.0"))
        .runs(vec![run])
        .build()
}

/// A path as the URI reference SARIF's `uri` is (RFC 3986): every byte but
/// the unreserved ones and `/` percent-encoded, so a name holding a
/// newline, a space, `#`, `?` or `%` is one reference (and a leading
/// `C:` is not read as a scheme); `\` is written `/`.
#[cfg_attr(not(feature = "sarif"), allow(dead_code))]
fn uri_of(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            b'\\' => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A workflow command's data, escaped as GitHub Actions reads it.
fn escaped_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: its data escapes, and `:` and `,`.
fn escaped_property(text: &str) -> String {
    escaped_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The reports as GitHub Actions workflow commands, one per finding and
/// per unread file or line (`::error file=F,line=N,title=…::message`):
/// each is shown on that line of the pull request's diff.
pub fn write_github(reports: &[FileReport], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    for file in reports {
        let document = Document::of(file);
        for report in &file.results {
            for finding in &report.findings {
                let (line, column) = place_of(finding, report, document.as_ref());
                let command = match finding.severity {
                    Severity::Rejected => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "notice",
                };
                let severity = match finding.severity {
                    Severity::Rejected => " (400)",
                    _ => "",
                };
                writeln!(
                    out,
                    "::{command} file={},line={line}{},title={}::{}",
                    escaped_property(&file.file),
                    column.map(|c| format!(",col={c}")).unwrap_or_default(),
                    escaped_property(&format!("loopdbg {}{severity}", finding.kind)),
                    escaped_data(&format!("{} ({})", said(finding), finding.path))
                )?;
            }
        }
        for e in &file.errors {
            writeln!(
                out,
                "::error file={},line={}{},title=loopdbg could not read it::{}",
                escaped_property(&file.file),
                e.line.unwrap_or(1),
                e.column.map(|c| format!(",col={c}")).unwrap_or_default(),
                escaped_data(&e.message)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_escape_what_would_end_them() {
        assert_eq!(escaped_data("a%b\nc\rd"), "a%25b%0Ac%0Dd");
        assert_eq!(escaped_property("x:1,y"), "x%3A1%2Cy");
    }

    #[test]
    fn a_sarif_uri_is_one_reference_whatever_the_name_holds() {
        assert_eq!(uri_of("logs/a b.jsonl"), "logs/a%20b.jsonl");
        assert_eq!(
            uri_of("x\n::add-mask::y#1?.json"),
            "x%0A%3A%3Aadd-mask%3A%3Ay%231%3F.json"
        );
        assert_eq!(uri_of("C:\\logs\\é.json"), "C%3A/logs/%C3%A9.json");
    }
}
