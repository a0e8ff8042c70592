//! `check`'s report as it is printed: as text the terminal shows (grouped
//! by file and conversation, each finding with where, its kind and
//! verdict, and the provider's words; one summary line), as one JSON
//! document, or as JSON Lines.

use std::io::Write;

use loopdbg_judge::check::Severity;

use crate::report::FileReport;

/// How `check` prints its reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Grouped text, in colour or not.
    Text {
        /// Whether to colour it.
        colour: bool,
    },
    /// One JSON document.
    Json,
    /// One JSON record per conversation (written as each is checked, by
    /// the caller's `emit`), then one per file that needs one.
    Jsonl,
    /// SARIF 2.1.0, for code scanning.
    #[cfg(feature = "sarif")]
    Sarif,
    /// GitHub Actions workflow commands: an annotation per finding.
    Github,
}

/// Writes what is left to write of the reports as `output` (for JSON
/// Lines, the per-file records), JSON through the inert writer.
pub fn write_reports(
    reports: &[FileReport],
    output: Output,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use loopdbg_engine::diagnostics::inert_json as json;
    // The serializer writes a fragment at a time: a buffer of a known type
    // takes them inline, where each through `dyn Write` is a call (3 % of
    // `check --format json` on a Claude Code log).
    let mut buffered = std::io::BufWriter::with_capacity(64 << 10, out);
    match output {
        Output::Text { colour } => render_text(reports, &mut buffered, colour)?,
        Output::Json => {
            json::pretty(&mut buffered, &crate::report::Summary::of(reports))?;
            writeln!(buffered)?;
        }
        Output::Jsonl => {
            for record in reports.iter().filter_map(crate::report::jsonl_file_record) {
                json::compact(&mut buffered, &record)?;
                writeln!(buffered)?;
            }
        }
        #[cfg(feature = "sarif")]
        Output::Sarif => {
            json::pretty(&mut buffered, &crate::ci::sarif(reports))?;
            writeln!(buffered)?;
        }
        Output::Github => crate::ci::write_github(reports, &mut buffered)?,
    }
    buffered.flush()
}

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, style: anstyle::Style, s: &str) -> String {
        if self.on {
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }
}

const BOLD: anstyle::Style = anstyle::Style::new().bold();

fn colour(c: anstyle::AnsiColor) -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(anstyle::Color::Ansi(c)))
}

/// "3 conversation(s)", or "5 request(s) in 2 conversation(s)" when a
/// loop's requests were grouped.
fn counted_conversations(requests: usize, conversations: usize) -> String {
    if requests == conversations {
        format!("{conversations} conversation(s)")
    } else {
        format!("{requests} request(s) in {conversations} conversation(s)")
    }
}

/// The reports as grouped text, in colour when `in_colour` says so. What
/// could not be read is the caller's to say (`FileReport::errors`, on
/// stderr in the CLI).
pub fn render_text(
    reports: &[FileReport],
    out: &mut dyn Write,
    in_colour: bool,
) -> std::io::Result<()> {
    let paint = Paint { on: in_colour };
    let (mut convs, mut bad, mut total, mut rejected, mut failed, mut empty) = (0, 0, 0, 0, 0, 0);
    let (mut notes, mut requests, mut skipped) = (0, 0, 0);
    // Where the provider's words count another message than the place
    // given, the first such finding says both, once for the report.
    let mut both_said = false;
    for f in reports {
        convs += f.conversations;
        requests += f.requests;
        skipped += f.skipped;
        if !f.errors.is_empty() {
            failed += 1;
        }
        let format = f
            .format
            .map_or("unknown format", loopdbg_read::Source::as_str);
        if f.is_empty() {
            empty += 1;
            let said = match f.is_empty_session() {
                true => "the session holds no conversation yet: nothing to send, nothing to check",
                false => "warning: no conversation found, nothing was checked",
            };
            writeln!(
                out,
                "{} ({format}): {}",
                paint.wrap(BOLD, &clean(&f.file)),
                paint.wrap(colour(anstyle::AnsiColor::Yellow), said)
            )?;
            continue;
        }
        if f.results.iter().all(|r| r.findings.is_empty()) && f.requests > 0 {
            // Lines that could not be read were said on stderr; what was
            // read is still reported, and not as a clean file.
            let unread = match f.errors.len() {
                0 => String::new(),
                n => format!(
                    " in what could be read; {}",
                    paint.wrap(
                        colour(anstyle::AnsiColor::Yellow),
                        &format!("{n} part(s) could not be read")
                    )
                ),
            };
            writeln!(
                out,
                "{} ({format}): {}, no problems{unread}",
                paint.wrap(BOLD, &clean(&f.file)),
                counted_conversations(f.requests, f.conversations)
            )?;
        }
        for r in f.results.iter().filter(|r| !r.findings.is_empty()) {
            let problems = r.findings.iter().filter(|x| !x.is_note()).count();
            bad += usize::from(problems > 0);
            total += problems;
            notes += r.findings.len() - problems;
            rejected += r
                .findings
                .iter()
                .filter(|x| x.rejected_by_provider())
                .count();
            let place = match r.line {
                Some(line) => format!("{}:{line}", f.file),
                None if f.requests > 1 && f.requests == f.conversations => {
                    format!("{} conversation {}", f.file, r.request)
                }
                None if f.requests > 1 => format!("{} request {}", f.file, r.request),
                None => f.file.clone(),
            };
            // A line is one request; which conversation it belongs to is
            // worth saying when the file holds more than one.
            let of = match (r.line, f.conversations) {
                (Some(_), 2..) => {
                    format!(", conversation {} of {}", r.conversation, f.conversations)
                }
                _ => String::new(),
            };
            let label = r
                .label
                .as_deref()
                .map(|l| format!("{of}, {}", clean(l)))
                .unwrap_or(of);
            writeln!(
                out,
                "{} ({}{label}, {} messages): {}",
                paint.wrap(BOLD, &clean(&place)),
                r.format,
                r.messages,
                counted(
                    r.findings.len() - r.findings.iter().filter(|x| x.is_note()).count(),
                    r.findings.iter().filter(|x| x.is_note()).count()
                )
            )?;
            for x in &r.findings {
                let at = match (&x.line, &x.uuid) {
                    (Some(l), Some(u)) => format!("line {l} uuid {u} {}", x.path),
                    (Some(l), None) => format!("line {l} {}", x.path),
                    _ => x.path.clone(),
                };
                let style = colour(match x.severity {
                    Severity::Rejected => anstyle::AnsiColor::Red,
                    Severity::Warning => anstyle::AnsiColor::Yellow,
                    Severity::Note => anstyle::AnsiColor::Cyan,
                });
                let kind = paint.wrap(style, x.kind.as_str());
                let verdict = x.severity;
                // A finding of the whole request (a count, a missing
                // field) names no id: no empty brackets for it.
                let ids = match x.ids.is_empty() {
                    true => String::new(),
                    false => format!("  [{}]", clean(&crate::report::listed_ids(&x.ids))),
                };
                writeln!(out, "  {}  {kind} ({verdict}){ids}", clean(&at))?;
                writeln!(out, "    {}", clean(&x.message))?;
                if let Some(both) = x.other_place_named().filter(|_| !both_said) {
                    both_said = true;
                    writeln!(out, "    ({})", clean(&both))?;
                }
            }
        }
    }
    let files = reports.len();
    let checked = counted_conversations(requests, convs);
    // "No problems" only of what was read: a file cut short may hold more.
    let mut summary = if total == 0 && failed > 0 {
        format!("checked {checked} in {files} file(s): no problems in what could be read")
    } else if total == 0 {
        format!("checked {checked} in {files} file(s): no problems")
    } else {
        format!(
            "checked {checked} in {files} file(s): {bad} with problems, {total} problem(s) ({rejected} a provider would reject with a 400)"
        )
    };
    if notes > 0 {
        summary.push_str(&format!("; {notes} note(s)"));
    }
    if skipped > 0 {
        summary.push_str(&format!(
            "; {skipped} recorded exchange(s) without a conversation skipped (embeddings, GET /v1/models, token counts, …)"
        ));
    }
    if failed > 0 {
        summary.push_str(&format!("; {failed} file(s) could not be read in full"));
    }
    if empty > 0 {
        summary.push_str(&format!("; {empty} file(s) had nothing to check"));
    }
    writeln!(out, "{summary}")
}

fn counted(problems: usize, notes: usize) -> String {
    match (problems, notes) {
        (p, 0) => format!("{p} problem(s)"),
        (0, n) => format!("{n} note(s)"),
        (p, n) => format!("{p} problem(s), {n} note(s)"),
    }
}

fn clean(s: &str) -> String {
    loopdbg_engine::diagnostics::inert::clean(s)
}

#[cfg(test)]
mod tests {
    use crate::report::listed_ids;

    #[test]
    fn a_long_id_list_is_counted_past_twelve() {
        let ids: Vec<String> = (1..=14).map(|k| format!("toolu_{k}")).collect();
        assert_eq!(listed_ids(&ids[..2]), "toolu_1, toolu_2");
        assert_eq!(listed_ids(&ids[..12]).matches(", ").count(), 11);
        let said = listed_ids(&ids);
        assert!(said.starts_with("toolu_1, toolu_2,"), "{said}");
        assert!(said.ends_with("toolu_12, … and 2 more"), "{said}");
    }
}
