//! `loopdbg check`: will a provider reject this history. Opening,
//! reading, checking, repairing and the report's forms are
//! `loopdbg-corpus`'s, shared with the Python package; this module takes
//! the flags, says progress on a terminal and picks where things go.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use loopdbg_corpus::report::{Progress, Tokens, check_files, jsonl_record, mcp_calls};
use loopdbg_corpus::text::Output;
use loopdbg_engine::diagnostics::inert_json as json;

use super::args::{CheckArgs, CheckFormat};
use super::{Failure, bad_flag};

/// `loopdbg check`: exit 1 on a problem, 2 on a file that cannot be read.
pub fn check(args: CheckArgs) -> Result<ExitCode, Failure> {
    let has = |f| args.format.contains(&f);
    let output = match (has(CheckFormat::Jsonl), has(CheckFormat::Json)) {
        (true, _) => Output::Jsonl,
        (false, true) => Output::Json,
        #[cfg(feature = "sarif")]
        _ if has(CheckFormat::Sarif) => Output::Sarif,
        #[cfg(not(feature = "sarif"))]
        _ if has(CheckFormat::Sarif) => {
            return Err(bad_flag(
                "--format sarif: this loopdbg was built without the `sarif` feature".into(),
            ));
        }
        _ if has(CheckFormat::Github) => Output::Github,
        (false, false) => Output::Text {
            colour: std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        },
    };
    // `--format anthropic` named what is read before `--input-format`
    // did: it still works, and says the word that means it now.
    let old_spelling = args.format.iter().find_map(|f| match f {
        CheckFormat::Input(s) => Some(*s),
        _ => None,
    });
    if let Some(source) = old_spelling {
        eprintln!(
            "note: --format {0} names what is read; it is spelled --input-format {0} now (--format is what is written)",
            source.as_str()
        );
    }
    let forced = match (args.input_format, old_spelling) {
        (Some(a), Some(b)) if a != b => {
            return Err(bad_flag(format!(
                "--input-format {} and --format {} name two input formats",
                a.as_str(),
                b.as_str()
            )));
        }
        (given, old) => given.or(old),
    };
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(bad_flag("`-` (standard input) can be read once".into()));
    }
    let files = match (args.fix, args.output) {
        (Some(how), Some(out)) => {
            if args.files.len() != 1 {
                return Err(bad_flag("--fix repairs one file at a time".into()));
            }
            let n = loopdbg_corpus::open::fix_file(&args.files[0], &out, forced, how, args.force)?;
            // A FIFO or `/dev/stdout` read back would wait for a writer.
            if !std::fs::metadata(&out).is_ok_and(|m| m.is_file()) {
                say!(
                    "wrote {} ({n} repair(s)); not a regular file, so not checked again",
                    out.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            say!("wrote {} ({n} repair(s)); checking it:", out.display());
            vec![out]
        }
        _ => args.files,
    };
    let mcp = match &args.mcp {
        Some(path) => mcp_calls(path)?,
        None => Vec::new(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write_error = None;
    let mut emit = |file: &str, r: &_| {
        if output != Output::Jsonl || write_error.is_some() {
            return;
        }
        let written = json::compact(&mut out, &jsonl_record(file, r))
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out));
        write_error = written.err();
    };
    // Only the JSON reports carry each conversation's tokens.
    let tokens = match output {
        Output::Json | Output::Jsonl => Tokens::Summed,
        _ => Tokens::Skipped,
    };
    let reports = check_files(&files, forced, &mcp, tokens, &mut emit, &mut show_progress);
    if let Some(e) = write_error {
        return Err(e.into());
    }
    for e in reports.iter().flat_map(|f| &f.errors) {
        say!("{}", e.rendered);
    }
    loopdbg_corpus::text::write_reports(&reports, output, &mut out)?;
    out.flush()?;
    Ok(ExitCode::from(loopdbg_corpus::report::exit_code(
        &reports,
        args.strict,
    )))
}

/// Says how far a large input's check has come, on a terminal's stderr.
pub fn show_progress(p: &Progress) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    match p.done {
        false => {
            let percent = p.read * 100 / p.size.max(1);
            say_partial!(
                "\rchecking {}: {percent}% ({} conversations)",
                p.origin,
                p.requests
            );
        }
        true => say!(
            "\rchecking {}: done ({} conversations)      ",
            p.origin,
            p.requests
        ),
    }
}
