//! The command line: arguments ([`args`]), the terminal (`loopdbg-term`),
//! what each subcommand prints and writes, and exit codes. Everything a
//! command decides is the library's (`loopdbg-corpus` opens and reads,
//! `loopdbg-judge` judges, `loopdbg-tui` shows).

/// `eprintln!` that never panics: a closed stderr (`2>&-`, a pipe whose
/// reader left) is not worth a crash.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that never panics.
macro_rules! say_partial {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub mod args;
pub mod check;
mod hooks;

#[cfg(feature = "demo")]
mod demo;
#[cfg(feature = "follow")]
mod follow;
#[cfg(feature = "proxy")]
mod mcp;
#[cfg(feature = "mcp-server")]
mod mcp_server;
#[cfg(feature = "proxy")]
mod proxy;
use loopdbg_corpus::prices;
use loopdbg_corpus::replay::Opening;
use loopdbg_corpus::sessions::{self, Subject, subject};
use loopdbg_engine::diagnostics::inert_json as json;

/// The debugger on the terminal, with the prices its cost lines use.
fn show(mut app: App) -> anyhow::Result<ExitCode> {
    app.prices = std::sync::Arc::new(prices::prices().clone());
    loopdbg_term::run(app)
}

/// A live debugger: `feed` brings newer pictures of the traffic.
#[cfg(any(feature = "proxy", feature = "follow"))]
fn show_live(
    mut app: App,
    feed: tokio::sync::mpsc::UnboundedReceiver<loopdbg_tui::app::LiveEvent>,
) -> anyhow::Result<ExitCode> {
    app.prices = std::sync::Arc::new(prices::prices().clone());
    loopdbg_term::run_live(app, feed)
}

/// [`show_live`], the pictures taken off the screen that their maker
/// marked handed back through `recycle`.
#[cfg(feature = "follow")]
fn show_live_recycling(
    mut app: App,
    feed: tokio::sync::mpsc::UnboundedReceiver<loopdbg_tui::app::LiveEvent>,
    recycle: std::sync::mpsc::Sender<loopdbg_tui::app::Displaced>,
) -> anyhow::Result<ExitCode> {
    app.prices = std::sync::Arc::new(prices::prices().clone());
    loopdbg_term::run_live_recycling(app, feed, recycle)
}

use std::io::Write;
use std::process::ExitCode;

use clap::FromArgMatches;

use args::{
    Cli, Command, CompareArgs, CompareFormat, DiffArgs, LintArgs, RunArgs, RunFormat, TourArgs,
};
use loopdbg_engine::Trace;
use loopdbg_engine::{Session, Strategy};
use loopdbg_formats::provider::{Format, default_model};
use loopdbg_lesson::report::{RunReport, compare_markdown, compare_rows};
use loopdbg_tui::App;

/// Prints `value` as JSON on standard output (indented, or one line).
fn print_json(value: &impl serde::Serialize, indented: bool) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = match indented {
        true => json::pretty(&mut out, value),
        false => json::compact(&mut out, value),
    };
    written.map_err(anyhow::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Prints a text made from input inert: an escape in an id is shown, never obeyed.
fn print_text(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(loopdbg_engine::diagnostics::inert::clean_lines(text).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Exit code for input loopdbg cannot use.
const EXIT_BAD_INPUT: u8 = 2;

/// Parses the arguments, runs the command and maps its errors to exit codes.
/// Whether the command line asks for the debugger's screen
/// ([`Cli::draws_a_screen`]); false when it does not parse (the error is
/// said by [`main`]).
#[cfg(feature = "mimalloc")]
pub fn draws_a_screen() -> bool {
    use clap::Parser;
    Cli::try_parse().is_ok_and(|cli| cli.draws_a_screen())
}

pub fn main() -> ExitCode {
    loopdbg_term::on_signal::install_hook();
    if let Some(message) = mistyped_subcommand() {
        say!("error: {message}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    // --help ends with the command's examples and exit status.
    let matches = loopdbg_manual::with_manual(command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // One line per message, so `file:line:column: what` stays greppable.
    #[cfg(feature = "fancy-errors")]
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())
    }));
    #[cfg(not(feature = "fancy-errors"))]
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(miette::NarratableReportHandler::new())
    }));
    match dispatch(cli) {
        Ok(code) => code,
        Err(err) => exit_for(err),
    }
}

/// Why a command failed: a `LoadError` or a [`BadFlag`] is input loopdbg
/// cannot use (exit 2, said with its place); a closed standard output (the
/// reader of `| head` left) is nothing to say; anything else exits 1.
type Failure = anyhow::Error;

/// Input loopdbg cannot use, said as a flag's or a file's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadFlag(String);

fn bad_flag(message: String) -> Failure {
    BadFlag(message).into()
}

fn exit_for(err: Failure) -> ExitCode {
    let err = match err.downcast::<loopdbg_engine::LoadError>() {
        Ok(e) => {
            say!("{:?}", miette::Report::new(e));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        Err(err) => err,
    };
    if let Some(BadFlag(message)) = err.downcast_ref::<BadFlag>() {
        say!("{:?}", miette::miette!("{message}"));
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let kind = err.chain().find_map(|e| {
        e.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| e.downcast_ref::<serde_json::Error>()?.io_error_kind())
    });
    if kind == Some(std::io::ErrorKind::BrokenPipe) {
        return ExitCode::SUCCESS;
    }
    say!("loopdbg: {err:#}");
    ExitCode::FAILURE
}

fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    let prices = match &cli.command {
        None => &cli.prices,
        Some(Command::Run(a)) => &a.prices,
        Some(Command::Check(a)) => &a.prices,
        #[cfg(feature = "proxy")]
        Some(Command::Proxy(a)) => &a.prices,
        #[cfg(feature = "demo")]
        Some(Command::Demo(a)) => &a.prices,
        Some(_) => &args::Prices::default(),
    };
    if let Some(path) = &prices.file {
        prices::load(path)?;
    }
    match cli.command {
        None => open(cli),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Lint(args)) => lint(args),
        Some(Command::Check(args)) => check::check(args),
        #[cfg(feature = "proxy")]
        Some(Command::Proxy(args)) => proxy::command(args),
        #[cfg(feature = "demo")]
        Some(Command::Demo(args)) => demo::demo(args),
        Some(Command::Diff(args)) => diff(args),
        Some(Command::Tour(args)) => tour(args),
        Some(Command::Record(args)) => record(args),
        Some(Command::Doctor(args)) => Ok(ExitCode::from(doctor(&args))),
        Some(Command::Hooks(args)) => hooks::hooks(args),
        Some(Command::Bundle(args)) => bundle(&args),
        #[cfg(feature = "proxy")]
        Some(Command::Mcp(args)) => match &args.upstream {
            Some(url) => mcp::http_tap(&args.capture, args.force, url, args.listen),
            None => mcp::tap(&args.capture, args.force, &args.command),
        },
        #[cfg(feature = "mcp-server")]
        Some(Command::McpServer(args)) => mcp_server::serve(&args.allow),
        Some(Command::Schema) => schema(),
        #[cfg(feature = "docs")]
        Some(Command::Completions(args)) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(args.shell, &mut cmd, "loopdbg", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "docs")]
        Some(Command::Man(args)) => man(args),
    }
}

/// A first argument that is neither a file nor a subcommand but is spelled
/// like one (`chek` for `check`): clap would take it for the session to
/// open and then complain about the next word, so say what was meant.
fn mistyped_subcommand() -> Option<String> {
    use clap::CommandFactory;
    let first = std::env::args_os().nth(1)?.into_string().ok()?;
    if first.starts_with('-') || std::path::Path::new(&first).exists() {
        return None;
    }
    let command = Cli::command();
    let names: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
    if names.contains(&first.as_str()) {
        return None;
    }
    let nearest = names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(&first, n), *n))
        .min()?;
    (nearest.0 <= 2 && nearest.0 < first.len()).then(|| {
        format!(
            "unknown subcommand `{first}` (and no such file)\n\n  tip: a similar subcommand exists: `{}`\n\nUsage: loopdbg {} ...; `loopdbg --help` lists every subcommand",
            nearest.1, nearest.1
        )
    })
}

/// `loopdbg FILE`: the debugger on a session, or on a captured
/// conversation replayed; `--follow` follows a file as it grows.
fn open(cli: Cli) -> Result<ExitCode, Failure> {
    let Some(path) = cli.session else {
        use clap::CommandFactory;
        Cli::command().print_help()?;
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    };
    if cli.follow {
        #[cfg(feature = "follow")]
        return follow::follow(
            &path,
            cli.conversation,
            cli.follow_memory.saturating_mul(1 << 20),
        );
        #[cfg(not(feature = "follow"))]
        return Err(bad_flag(
            "--follow: this loopdbg was built without the `follow` feature".into(),
        ));
    }
    let app = match loopdbg_corpus::replay::open(&path)? {
        #[cfg(any(feature = "proxy", feature = "follow"))]
        Opening::Captured(opened) if cli.conversation.is_none() => {
            match loopdbg_corpus::replay::preview(&path, &opened) {
                Some(preview) => return show_preview(preview, opened),
                None if loopdbg_corpus::replay::is_large(&opened) => {
                    return show_reading(opened, None);
                }
                None => replay_app(opened, None)?,
            }
        }
        #[cfg(any(feature = "proxy", feature = "follow"))]
        Opening::Captured(opened) if loopdbg_corpus::replay::is_large(&opened) => {
            return show_reading(opened, cli.conversation);
        }
        Opening::Captured(opened) => replay_app(opened, cli.conversation)?,
        Opening::Session { origin, text } => {
            let loaded = sessions::session_of(&path, origin, text, cli.places.agents_anywhere)?;
            let strategy = strategy_for(&loaded.session, &cli.strategy)?;
            App::new(
                loaded.origin,
                loaded.session,
                strategy,
                loopdbg_term::theme(),
            )
        }
    };
    show(app)
}

/// A large log on the screen from its newest part at once, the whole
/// read meanwhile on another thread and put in its place when done.
#[cfg(any(feature = "proxy", feature = "follow"))]
fn show_preview(
    preview: loopdbg_corpus::replay::Preview,
    opened: loopdbg_corpus::open::Opened,
) -> Result<ExitCode, Failure> {
    use loopdbg_tui::app::LiveEvent;
    let origin = opened.origin().to_string();
    let banner = preview.banner();
    let replay = preview.replay;
    let mut app = App::replay(
        origin,
        replay.session,
        replay.trace,
        replay.source.as_str(),
        loopdbg_term::theme(),
    );
    app.cursor = app.trace.len() - 1;
    app.notice = Some(banner);
    let (feed, events) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let event = match loopdbg_corpus::replay::replay(opened, Some(1), |p| p.title("replay")) {
            Ok(whole) => loaded(whole),
            Err(e) => LiveEvent::NotLoaded(e.to_string()),
        };
        // The debugger may have quit meanwhile: nobody to tell.
        let _ = feed.send(event);
    });
    show_live(app, events)
}

/// The whole of a large capture read, in place of what the screen
/// showed meanwhile.
#[cfg(any(feature = "proxy", feature = "follow"))]
fn loaded(whole: loopdbg_corpus::replay::Replay) -> loopdbg_tui::app::LiveEvent {
    loopdbg_tui::app::LiveEvent::Loaded(Box::new(loopdbg_tui::app::LiveUpdate {
        session: whole.session,
        trace: whole.trace,
        source: whole.source.as_str().to_string(),
        alarm: whole.left_out,
        waiting: None,
        derived: None,
        token: None,
    }))
}

/// A large capture no newest part stands for (a conversation is pinned,
/// or it is not a log): a screen saying what is read at once (`q`
/// quits), the conversation in its place once the file is read on
/// another thread, at its newest step as a large log opens. One the file
/// does not hold ends the debugger with the error it would have given
/// before opening (exit 2): a gigabyte read in the dark for ten seconds
/// gave no sign of life.
#[cfg(any(feature = "proxy", feature = "follow"))]
fn show_reading(
    opened: loopdbg_corpus::open::Opened,
    which: Option<usize>,
) -> Result<ExitCode, Failure> {
    use loopdbg_tui::app::{LiveEvent, LiveUpdate};
    let origin = opened.origin().to_string();
    let what = match which {
        Some(n) => format!("conversation {n}"),
        None => "its first conversation".to_string(),
    };
    let size = opened.size().unwrap_or(0);
    let (waiting, reading) = LiveUpdate::reading(&origin, &what, size, "replay");
    let mut app = App::replay(
        origin,
        waiting.session,
        waiting.trace,
        waiting.source,
        loopdbg_term::theme(),
    );
    app.cursor = app.trace.len() - 1;
    app.notice = Some(reading);
    let failed = std::sync::Arc::new(std::sync::Mutex::new(None));
    let (feed, events) = tokio::sync::mpsc::unbounded_channel();
    let failure = std::sync::Arc::clone(&failed);
    std::thread::spawn(move || {
        let which = Some(which.unwrap_or(1));
        let event = match loopdbg_corpus::replay::replay(opened, which, |p| p.title("replay")) {
            Ok(whole) => loaded(whole),
            Err(e) => {
                *failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                LiveEvent::Failed
            }
        };
        // The debugger may have quit meanwhile: nobody to tell.
        let _ = feed.send(event);
    });
    let code = show_live(app, events)?;
    let failed = failed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match failed {
        Some(e) => Err(Failure::from(e)),
        None => Ok(code),
    }
}

/// `loopdbg run`: the trace as text or JSON, a handout, or the request
/// bodies the loop sends.
fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let anywhere = args.places.agents_anywhere;
    // A captured conversation is replayed for an export.
    let (session, trace, read_as, replay) =
        match subject(&args.session, args.export.is_some(), anywhere)? {
            Subject::Replay(r) => (r.session, r.trace, Some(r.source.provider()), true),
            Subject::Run(loaded) => {
                let strategy = strategy_for(&loaded.session, &args.strategy)?;
                let trace = loopdbg_engine::run(&loaded.session, &strategy);
                (loaded.session, trace, None, false)
            }
        };
    if let Some(export) = args.export {
        // A replay is written in its own provider's format by default.
        let format = args
            .wire
            .or(read_as)
            .unwrap_or(loopdbg_formats::provider::Format::Anthropic);
        let request = loopdbg_corpus::exports::Request {
            export,
            format,
            origin: &args.session.display().to_string(),
            replay,
            redact: args.redact.then_some(args.redact_patterns.as_slice()),
        };
        let exported =
            loopdbg_corpus::exports::export(&session, &trace, &request).map_err(|e| match e {
                loopdbg_corpus::exports::ExportError::Unmasked(e) => anyhow::Error::from(e),
                e => bad_flag(e.to_string()),
            })?;
        if let Some(masked) = &exported.masked {
            say_masked(masked);
        }
        let text = exported.text;
        return match args.output {
            Some(path) => {
                // --force replaces a handout, never the session being run.
                if loopdbg_io::files::same_file(&path, &args.session) {
                    return Err(bad_flag(format!(
                        "-o {}: that is the session being run (the same file, through a link or not); refusing to overwrite it, even with --force; choose another -o",
                        path.display()
                    )));
                }
                write_new(&path, text.as_bytes(), args.force)?;
                say!("wrote {}", path.display());
                Ok(ExitCode::SUCCESS)
            }
            None => {
                print_text(&text)?;
                Ok(ExitCode::SUCCESS)
            }
        };
    }
    if let Some(provider) = args.emit {
        return emit(&args, provider, &session, &trace);
    }
    let report = RunReport::new(&session, &trace);
    match args.format {
        RunFormat::Text => print_text(&report.to_text())?,
        RunFormat::Json => print_json(&report, true)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg run --emit`: the request bodies, one at a time.
fn emit(
    args: &RunArgs,
    format: Format,
    session: &Session,
    trace: &Trace,
) -> Result<ExitCode, Failure> {
    use loopdbg_handout::emit::{Bodies, Which};
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| default_model(format).to_string());
    let bodies = Bodies::of(format, session, trace, &model);
    let which = match (args.request, args.last) {
        (Some(n), _) => Which::One(n),
        (None, true) => Which::Last,
        (None, false) => Which::Every { all: args.all },
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for k in bodies.chosen(which).map_err(bad_flag)? {
        say!("{}", bodies.heading(k));
        // Written as it is made: one body in memory at a time.
        json::pretty(&mut out, &bodies.body(k)).map_err(anyhow::Error::from)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg compare`: every strategy on each session, one row each.
fn compare(args: CompareArgs) -> Result<ExitCode, Failure> {
    let anywhere = args.places.agents_anywhere;
    let mut rows = Vec::new();
    for path in &args.sessions {
        let loaded = sessions::session(path, anywhere)?;
        let mut base = Strategy::for_session(&loaded.session);
        if let Some(n) = args.max_rounds {
            base.max_rounds = loopdbg_engine::session::rounds(n).map_err(bad_flag)?;
        }
        rows.extend(compare_rows(&loaded.origin, &loaded.session, &base));
    }
    match args.format {
        CompareFormat::Md => print_text(&compare_markdown(&rows))?,
        CompareFormat::Json => print_json(&rows, true)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg lint`: sessions that load but are probably wrong.
fn lint(args: LintArgs) -> Result<ExitCode, Failure> {
    let anywhere = args.places.agents_anywhere;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut total = 0;
    for path in &args.sessions {
        let loaded = sessions::session(path, anywhere)?;
        for w in loopdbg_lesson::lint::located(&loaded.origin, &loaded.text, &loaded.session) {
            total += 1;
            writeln!(out, "{w}")?;
        }
    }
    writeln!(out, "{total} warning(s)")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg diff`: two runs aligned, the first divergence; exit 1 when
/// they differ.
fn diff(args: DiffArgs) -> Result<ExitCode, Failure> {
    let anywhere = args.places.agents_anywhere;
    let right = args.right.unwrap_or_else(|| args.left.clone());
    let side = |path, choice| {
        use loopdbg_corpus::sessions::{DiffSideError, diff_side};
        diff_side(path, choice, anywhere).map_err(|e| match e {
            DiffSideError::Load(e) => Failure::from(e),
            DiffSideError::Refused(why) => bad_flag(why),
        })
    };
    let a = side(&args.left, &args.left_strategy)?;
    let b = side(&right, &args.right_strategy)?;
    let diff = loopdbg_lesson::diff::diff(&a.side(), &b.side());
    match args.format {
        args::ReportFormat::Text => print_text(&diff.to_text())?,
        args::ReportFormat::Json => print_json(&diff, true)?,
    }
    Ok(match diff.first_divergence {
        None => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    })
}

/// `loopdbg doctor`: the files named, or (`--scan`) every agent's, with
/// progress on a terminal's stderr; the exit code.
fn doctor(args: &args::DoctorArgs) -> u8 {
    use loopdbg_corpus::scan::{Options, scan};
    let (write, force, json) = (
        args.write,
        args.force,
        args.format == args::ReportFormat::Json,
    );
    let out = &mut std::io::stdout();
    if !args.scan {
        return loopdbg_corpus::doctor::report(&args.files, write, force, out);
    }
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress = progress.then(|| Box::new(std::io::stderr()) as Box<dyn Write + Send>);
    let no_cache = args.no_cache;
    scan(
        Options {
            write,
            force,
            json,
            no_cache,
        },
        progress,
        out,
    )
}

/// `loopdbg bundle`: exit 0 written, 1 when the bundle would not show
/// the file's problems, 2 for input or an output it cannot use.
fn bundle(args: &args::BundleArgs) -> Result<ExitCode, Failure> {
    use loopdbg_corpus::bundle::{BundleError, bundle};
    match bundle(&args.file, &args.output, args.force) {
        Ok(b) => {
            say!(
                "wrote {} ({}, {} distinct strings replaced): {}",
                args.output.display(),
                b.format.as_deref().unwrap_or("unknown format"),
                b.replaced,
                match b.findings.len() {
                    0 => "no problems, as the file".to_string(),
                    n => format!(
                        "{n} finding(s), as the file: {}",
                        loopdbg_corpus::bundle::said(&b.findings)
                    ),
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ BundleError::Differs { .. }) => {
            say!("loopdbg: {e}");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(bad_flag(e.to_string())),
    }
}

/// `loopdbg tour`.
fn tour(args: TourArgs) -> Result<ExitCode, Failure> {
    use loopdbg_lesson::tour::Lang;
    let lang = match args.lang {
        Some(args::TourLang::En) => Lang::En,
        Some(args::TourLang::Zh) => Lang::Zh,
        None => Lang::of_locale(|k| std::env::var(k).ok()),
    };
    let sessions = loopdbg_lesson::tour::sessions(lang)?;
    let solved = if args.restart {
        Default::default()
    } else {
        loopdbg_term::load_tour()
    };
    let app = App::tour_in(lang, sessions, solved, loopdbg_term::theme());
    show(app)
}

/// The command line's definition.
fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// `loopdbg man`: one page on standard output, or every page into a folder.
#[cfg(feature = "docs")]
fn man(args: args::ManArgs) -> Result<ExitCode, Failure> {
    let root = command();
    let Some(dir) = args.dir else {
        let asked = args.command.as_deref();
        let page = loopdbg_manual::page(&root, asked).ok_or_else(|| {
            bad_flag(format!(
                "no command named {:?}: `loopdbg --help` lists them",
                asked.unwrap_or("")
            ))
        })??;
        let mut out = std::io::stdout().lock();
        out.write_all(&page.roff)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    for page in loopdbg_manual::pages(&root)? {
        let path = dir.join(&page.file_name);
        write_new(&path, &page.roff, args.force)?;
        say!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg schema`.
fn schema() -> Result<ExitCode, Failure> {
    print_json(&loopdbg_engine::schema::session_schema(), true)?;
    Ok(ExitCode::SUCCESS)
}

/// A debugger replaying conversation `which` (1-based, default the first)
/// of an opened capture, at its newest request.
fn replay_app(opened: loopdbg_corpus::open::Opened, which: Option<usize>) -> Result<App, Failure> {
    let origin = opened.origin().to_string();
    let which = Some(which.unwrap_or(1));
    let replay = loopdbg_corpus::replay::replay(opened, which, |p| p.title("replay"))?;
    // A long log is many small allocations: free them on another core
    // while the first frame is drawn.
    let conversation = replay.conversation;
    std::thread::spawn(move || drop(conversation));
    let source = replay.source.as_str();
    let mut app = App::replay(
        origin,
        replay.session,
        replay.trace,
        source,
        loopdbg_term::theme(),
    );
    app.notice = replay.left_out;
    Ok(app)
}

/// Writes `bytes` to `path` ([`loopdbg_io::files::write_file`]); an existing file only
/// with `force`.
fn write_new(path: &std::path::Path, bytes: &[u8], force: bool) -> Result<(), Failure> {
    let existing = match force {
        true => loopdbg_io::files::Existing::Replace,
        false => loopdbg_io::files::Existing::Keep,
    };
    loopdbg_io::files::write_file(path, existing, |out| out.write_all(bytes)).map_err(|e| match e {
        loopdbg_io::files::WriteError::Exists => bad_flag(format!("{} {e}", path.display())),
        loopdbg_io::files::WriteError::Io(e) => {
            anyhow::Error::from(e).context(format!("writing {}", path.display()))
        }
    })
}

/// The session's opening strategy with the command-line flags applied.
fn strategy_for(session: &Session, flags: &args::StrategyFlags) -> Result<Strategy, Failure> {
    Strategy::chosen(session, &flags.choice()).map_err(bad_flag)
}

/// The `--redact-pattern`s, refused at the flag when one is not a regular
/// expression.
fn redactor(patterns: &[String]) -> Result<loopdbg_formats::redact::Redactor, Failure> {
    loopdbg_formats::redact::Redactor::new(patterns)
        .map_err(|e| bad_flag(format!("--redact-pattern: {e}")))
}

/// Says what `--redact` masked (`2 email(s), 1 user(s)`, or nothing).
fn say_masked(masked: &str) {
    say!(
        "masked: {}",
        if masked.is_empty() { "nothing" } else { masked }
    );
}

/// `loopdbg record`: a capture's conversation as a session that runs its
/// loop again, redacted when asked.
fn record(args: args::RecordArgs) -> Result<ExitCode, Failure> {
    use loopdbg_corpus::replay::RecordError;
    let mut redactor = match args.redact {
        true => Some(redactor(&args.redact_patterns)?),
        false => None,
    };
    let written = loopdbg_corpus::replay::record_to_file(
        &args.capture,
        args.conversation,
        &args.output,
        redactor.as_mut(),
    );
    let said = written.map_err(|e| match e {
        RecordError::Load(e) => e.into(),
        RecordError::Refused(why) => bad_flag(why),
        e => anyhow::Error::from(e),
    })?;
    said.iter().for_each(|line| say!("{line}"));
    if let Some(r) = redactor {
        say_masked(&r.counts());
    }
    Ok(ExitCode::SUCCESS)
}
