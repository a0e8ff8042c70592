//! The `loopdbg` binary: parses arguments, loads files, and hands them to
//! the library (headless reports) or to the TUI. All loop semantics live in
//! the library; this file only does I/O and exit codes.
#![forbid(unsafe_code)]

mod cli;
mod load;
mod terminal;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, CompareFormat, RunFormat, StrategyFlags};
use loopdbg::report::{RunReport, compare_markdown, compare_rows};
use loopdbg::{Session, Strategy};

/// Exit code for input loopdbg cannot use.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // One line per message, so `file:line:column: what` stays greppable.
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())
    }));
    match dispatch(cli) {
        Ok(code) => code,
        Err(Failure::BadInput(report)) => {
            eprintln!("{report:?}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(Failure::Other(err)) => {
            eprintln!("loopdbg: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Why a command failed: unusable input (exit 2) or anything else (exit 1).
enum Failure {
    BadInput(miette::Report),
    Other(anyhow::Error),
}

impl From<loopdbg::LoadError> for Failure {
    fn from(err: loopdbg::LoadError) -> Self {
        Failure::BadInput(miette::Report::new(err))
    }
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        Failure::Other(err)
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        // A closed pipe (`loopdbg run ... | head`) is not an error worth a message.
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure::Other(anyhow::anyhow!("output closed"));
        }
        Failure::Other(err.into())
    }
}

fn bad_flag(message: String) -> Failure {
    Failure::BadInput(miette::miette!("{message}"))
}

fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        None => {
            let Some(path) = cli.session else {
                use clap::CommandFactory;
                Cli::command().print_help()?;
                return Ok(ExitCode::from(EXIT_BAD_INPUT));
            };
            let loaded = load::session(&path)?;
            let strategy = strategy_for(&loaded.session, &cli.strategy)?;
            terminal::run(loaded.origin, loaded.session, strategy)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Run {
            session,
            strategy,
            format,
        }) => {
            let loaded = load::session(&session)?;
            let strategy = strategy_for(&loaded.session, &strategy)?;
            let trace = loopdbg::run(&loaded.session, &strategy);
            let report = RunReport::new(&loaded.session, &trace);
            let mut out = std::io::stdout().lock();
            match format {
                RunFormat::Text => out.write_all(report.to_text().as_bytes())?,
                RunFormat::Json => {
                    serde_json::to_writer_pretty(&mut out, &report).map_err(anyhow::Error::from)?;
                    writeln!(out)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Compare {
            sessions,
            max_rounds,
            format,
        }) => {
            let mut rows = Vec::new();
            for path in &sessions {
                let loaded = load::session(path)?;
                let rounds = match max_rounds {
                    Some(n) => check_rounds(n)?,
                    None => Strategy::for_session(&loaded.session).max_rounds,
                };
                rows.extend(compare_rows(&loaded.origin, &loaded.session, rounds));
            }
            let mut out = std::io::stdout().lock();
            match format {
                CompareFormat::Md => out.write_all(compare_markdown(&rows).as_bytes())?,
                CompareFormat::Json => {
                    serde_json::to_writer_pretty(&mut out, &rows).map_err(anyhow::Error::from)?;
                    writeln!(out)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Lint { sessions }) => {
            let mut out = std::io::stdout().lock();
            let mut total = 0;
            for path in &sessions {
                let loaded = load::session(path)?;
                for w in load::located_lint(&loaded) {
                    total += 1;
                    writeln!(out, "{w}")?;
                }
            }
            writeln!(out, "{total} warning(s)")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Schema) => {
            let schema = loopdbg::schema::session_schema();
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &schema).map_err(anyhow::Error::from)?;
            writeln!(out)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn check_rounds(n: u32) -> Result<u32, Failure> {
    let limit = loopdbg::session::MAX_ROUNDS_LIMIT;
    if (1..=limit).contains(&n) {
        Ok(n)
    } else {
        Err(bad_flag(format!(
            "--max-rounds: expected a number from 1 to {limit}, found {n}"
        )))
    }
}

/// The session's opening strategy with the command-line flags applied.
fn strategy_for(session: &Session, flags: &StrategyFlags) -> Result<Strategy, Failure> {
    let mut s = Strategy::for_session(session);
    if let Some(e) = flags.extract {
        s.extract = e;
    }
    if let Some(r) = flags.stop {
        s.stop = r;
    }
    if let Some(n) = flags.max_rounds {
        s.max_rounds = check_rounds(n)?;
    }
    if let Some(b) = &flags.behavior {
        if !session.model.contains_key(b) {
            return Err(bad_flag(format!(
                "--behavior: `{b}` is not a behaviour of this session (expected one of: {})",
                session.behavior_names().collect::<Vec<_>>().join(", ")
            )));
        }
        s.behavior = b.clone();
    }
    Ok(s)
}
