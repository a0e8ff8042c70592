//! The command line: arguments ([`args`]), loading files ([`load`]), the
//! terminal ([`terminal`]), the `check` command ([`check`]) and the dispatch
//! of every subcommand to the library (this file). All I/O and exit codes
//! live here; nothing here decides loop semantics.

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
mod doctor;

pub mod live;
mod mcp;
mod on_signal;
mod signals;
use loopdbg_corpus::prices;
use loopdbg_corpus::replay::Opening;
use loopdbg_corpus::sessions;
use loopdbg_engine::diagnostics::inert_json as json;

pub mod terminal;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use args::{
    CheckArgs, CheckFormat, Cli, Command, CompareArgs, CompareFormat, DiffArgs, Export, LintArgs,
    ProxyArgs, RunArgs, RunFormat, TourArgs,
};
use loopdbg_engine::Trace;
use loopdbg_engine::{Session, Strategy};
use loopdbg_formats::provider::{Format, default_model};
use loopdbg_lesson::report::{RunReport, compare_markdown, compare_rows};
use loopdbg_tui::App;

/// Exit code for input loopdbg cannot use.
const EXIT_BAD_INPUT: u8 = 2;

/// Parses the arguments, runs the command and maps its errors to exit codes.
pub fn main() -> ExitCode {
    on_signal::install_hook();
    if let Some(message) = mistyped_subcommand() {
        say!("error: {message}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let cli = Cli::parse();
    // One line per message, so `file:line:column: what` stays greppable.
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())
    }));
    match dispatch(cli) {
        Ok(code) => code,
        Err(Failure::BadInput(report)) => {
            say!("{report:?}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(Failure::Other(err)) => {
            say!("loopdbg: {err:#}");
            ExitCode::FAILURE
        }
        // The reader of our output left (`| head`): nothing more to say.
        Err(Failure::Closed) => ExitCode::SUCCESS,
    }
}

/// Why a command failed: unusable input (exit 2) or anything else (exit 1).
enum Failure {
    BadInput(miette::Report),
    Other(anyhow::Error),
    /// Standard output was closed by its reader.
    Closed,
}

impl From<loopdbg_engine::LoadError> for Failure {
    fn from(err: loopdbg_engine::LoadError) -> Self {
        Failure::BadInput(miette::Report::new(err))
    }
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        let closed = err
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                err.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            })
            == Some(std::io::ErrorKind::BrokenPipe);
        if closed {
            return Failure::Closed;
        }
        Failure::Other(err)
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        // A closed pipe (`loopdbg run ... | head`) is not an error worth a message.
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure::Closed;
        }
        Failure::Other(err.into())
    }
}

fn bad_flag(message: String) -> Failure {
    Failure::BadInput(miette::miette!("{message}"))
}

fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    if let Some(path) = &cli.prices {
        prices::load(path)?;
    }
    match cli.command {
        None => open(cli),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compare(args)) => compare(args),
        Some(Command::Lint(args)) => lint(args),
        Some(Command::Check(args)) => check_files(args),
        Some(Command::Proxy(args)) => proxy(args),
        Some(Command::Diff(args)) => diff(args),
        Some(Command::Tour(args)) => tour(args),
        Some(Command::Record(args)) => live::record(&args.capture, args.conversation, &args.output),
        Some(Command::Doctor(args)) => Ok(doctor::doctor(&args.files, args.write, args.force)),
        Some(Command::Mcp(args)) => match &args.upstream {
            Some(url) => mcp::http_tap(&args.capture, args.force, url, args.listen),
            None => mcp::tap(&args.capture, args.force, &args.command),
        },
        Some(Command::Schema) => schema(),
        Some(Command::Completions(args)) => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(args.shell, &mut cmd, "loopdbg", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Man) => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
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
        return live::follow(&path, cli.conversation);
    }
    let app = match loopdbg_corpus::replay::open(&path)? {
        Opening::Captured(opened) => replay_app(opened, cli.conversation)?,
        Opening::Session { origin, text } => {
            let loaded = sessions::session_of(&path, origin, text, cli.places.agents_anywhere)?;
            let strategy = strategy_for(&loaded.session, &cli.strategy)?;
            App::new(loaded.origin, loaded.session, strategy, terminal::theme())
        }
    };
    terminal::run(app)?;
    Ok(ExitCode::SUCCESS)
}

/// A session to run, or a capture replayed (only where `replays` allows
/// it): what `run` and `diff` take.
enum Subject {
    Run(Box<sessions::Loaded>),
    Replay(Box<loopdbg_corpus::replay::Replay>),
}

fn subject(path: &std::path::Path, replays: bool, anywhere: bool) -> Result<Subject, Failure> {
    Ok(match loopdbg_corpus::replay::open(path)? {
        Opening::Session { origin, text } => Subject::Run(Box::new(sessions::session_of(
            path, origin, text, anywhere,
        )?)),
        // The newest conversation, titled by its file.
        Opening::Captured(opened) if replays => {
            let name = path.display().to_string();
            Subject::Replay(Box::new(loopdbg_corpus::replay::replay(
                opened,
                None,
                |_| name,
            )?))
        }
        Opening::Captured(_) => Subject::Run(Box::new(sessions::session(path, anywhere)?)),
    })
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
        let origin = args.session.display().to_string();
        let text = match export {
            Export::Otlp => otlp_text(&session, &trace, format, &origin, replay),
            Export::Handout(kind) => handout_text(&session, &trace, kind, format, &args),
        };
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
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                Ok(ExitCode::SUCCESS)
            }
        };
    }
    if let Some(provider) = args.emit {
        return emit(&args, provider, &session, &trace);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let report = RunReport::new(&session, &trace);
    match args.format {
        RunFormat::Text => out.write_all(report.to_text().as_bytes())?,
        RunFormat::Json => {
            json::pretty(&mut out, &report).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
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
        let rounds = match args.max_rounds {
            Some(n) => loopdbg_engine::session::rounds(n).map_err(bad_flag)?,
            None => Strategy::for_session(&loaded.session).max_rounds,
        };
        rows.extend(compare_rows(&loaded.origin, &loaded.session, rounds));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        CompareFormat::Md => out.write_all(compare_markdown(&rows).as_bytes())?,
        CompareFormat::Json => {
            json::pretty(&mut out, &rows).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
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

/// `loopdbg proxy`.
fn proxy(args: ProxyArgs) -> Result<ExitCode, Failure> {
    let upstream = loopdbg_proxy::parse_upstream(&args.upstream)
        .map_err(|e| bad_flag(format!("--upstream {e}")))?;
    let config = loopdbg_proxy::Config {
        on_invalid: args.on_invalid,
        on_unjudged: args.on_unjudged,
        ..loopdbg_proxy::Config::new(upstream, args.listen)
    };
    live::proxy(
        config,
        args.capture.as_deref(),
        args.otlp.as_deref(),
        args.force,
        args.no_tui,
    )
}

/// `loopdbg diff`: two runs aligned, the first divergence; exit 1 when
/// they differ.
fn diff(args: DiffArgs) -> Result<ExitCode, Failure> {
    let anywhere = args.places.agents_anywhere;
    let right = args.right.unwrap_or_else(|| args.left.clone());
    let a = diff_side(&args.left, &args.left_strategy, anywhere)?;
    let b = diff_side(&right, &args.right_strategy, anywhere)?;
    let diff = loopdbg_lesson::diff::diff(&a.side(), &b.side());
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.format {
        RunFormat::Text => write!(out, "{}", diff.to_text())?,
        RunFormat::Json => {
            json::pretty(&mut out, &diff).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(match diff.first_divergence {
        None => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    })
}

/// `loopdbg tour`.
fn tour(args: TourArgs) -> Result<ExitCode, Failure> {
    let sessions = loopdbg_lesson::tour::sessions()?;
    let solved = if args.restart {
        Default::default()
    } else {
        terminal::load_tour()
    };
    let app = App::tour(sessions, solved, terminal::theme());
    terminal::run(app)?;
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg schema`.
fn schema() -> Result<ExitCode, Failure> {
    let schema = loopdbg_engine::schema::session_schema();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    json::pretty(&mut out, &schema).map_err(anyhow::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `loopdbg check`: will a provider reject this history; exit 1 on a
/// problem, 2 on a file that cannot be read.
fn check_files(args: CheckArgs) -> Result<ExitCode, Failure> {
    let json = args.format.contains(&CheckFormat::Json);
    let jsonl = args.format.contains(&CheckFormat::Jsonl);
    let forced = args.format.iter().find_map(|f| match f {
        CheckFormat::Input(s) => Some(*s),
        _ => None,
    });
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(bad_flag("`-` (standard input) can be read once".into()));
    }
    let files = match (args.fix, args.output) {
        (Some(how), Some(out)) => {
            if args.files.len() != 1 {
                return Err(bad_flag("--fix repairs one file at a time".into()));
            }
            let n = check::fix_file(&args.files[0], &out, forced, how, args.force)?;
            say!("wrote {} ({n} repair(s)); checking it:", out.display());
            vec![out]
        }
        _ => args.files,
    };
    let mcp_calls = match &args.mcp {
        Some(path) => check::mcp_calls(path)?,
        None => Vec::new(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write_error = None;
    let reports = {
        let mut emit = |file: &str, r: &check::ConversationReport| {
            if !jsonl || write_error.is_some() {
                return;
            }
            let written = json::compact(&mut out, &check::jsonl_record(file, r))
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out));
            if let Err(e) = written {
                write_error = Some(e);
            }
        };
        check::check_files(
            &files,
            forced,
            &mcp_calls,
            &mut emit,
            &mut check::show_progress,
        )
    };
    if let Some(e) = write_error {
        return Err(e.into());
    }
    if jsonl || json {
        if jsonl {
            for record in reports.iter().filter_map(check::jsonl_file_record) {
                json::compact(&mut out, &record).map_err(anyhow::Error::from)?;
                writeln!(out)?;
            }
        } else {
            json::pretty(&mut out, &check::summary(&reports)).map_err(anyhow::Error::from)?;
            writeln!(out)?;
        }
        for f in &reports {
            for e in &f.errors {
                say!("{}", e.rendered);
            }
        }
    } else {
        for f in &reports {
            for e in &f.errors {
                say!("{}", e.rendered);
            }
        }
        use std::io::IsTerminal;
        let colour = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        loopdbg_corpus::text::render_text(&reports, &mut out, colour)?;
    }
    out.flush()?;
    let failed = reports.iter().any(|f| !f.errors.is_empty());
    let problems = reports.iter().any(|f| f.has_problems() || f.is_empty());
    Ok(ExitCode::from(if failed {
        EXIT_BAD_INPUT
    } else if problems {
        1
    } else {
        0
    }))
}

/// A handout of the run, as `kind`.
fn handout_text(
    session: &Session,
    trace: &Trace,
    kind: loopdbg_handout::Kind,
    format: Format,
    args: &RunArgs,
) -> String {
    let opts = loopdbg_handout::Options {
        kind,
        format,
        model: default_model(format).to_string(),
        redact: args.redact,
        origin: args.session.display().to_string(),
        prices: std::sync::Arc::new(prices::prices().clone()),
    };
    let text = loopdbg_handout::render(session, trace, &opts);
    if kind == loopdbg_handout::Kind::Json
        && let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text)
    {
        // Written again through the inert writer: bidi and tag
        // characters as \u escapes, which parse back the same.
        let mut inert = Vec::with_capacity(text.len());
        if json::pretty(&mut inert, &doc).is_ok() {
            inert.push(b'\n');
            return String::from_utf8(inert).unwrap_or(text);
        }
    }
    text
}

/// The run as OTLP JSON (one export, one line), its times from now (or
/// from `SOURCE_DATE_EPOCH`, for an export that is the same every time).
fn otlp_text(
    session: &Session,
    trace: &Trace,
    format: Format,
    origin: &str,
    replay: bool,
) -> String {
    let base_ns = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| s.saturating_mul(1_000_000_000))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        });
    loopdbg_export::spans::run_json(session, trace, format, origin, base_ns, replay)
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
        terminal::theme(),
    );
    app.notice = replay.left_out;
    Ok(app)
}

/// One side of `loopdbg diff`: a session run under a strategy, or a
/// captured conversation replayed.
struct DiffSide {
    label: String,
    session: Session,
    trace: Trace,
}

impl DiffSide {
    fn side(&self) -> loopdbg_lesson::diff::Side<'_> {
        loopdbg_lesson::diff::Side {
            label: self.label.clone(),
            session: &self.session,
            trace: &self.trace,
        }
    }
}

fn diff_side(
    path: &std::path::Path,
    choice: &loopdbg_engine::session::Choice,
    agents_anywhere: bool,
) -> Result<DiffSide, Failure> {
    let name = path.display().to_string();
    match subject(path, true, agents_anywhere)? {
        Subject::Replay(replay) => {
            if !choice.is_empty() {
                return Err(bad_flag(format!(
                    "{name} is a captured conversation: it has no strategy to set (loopdbg record turns it into a session that has)"
                )));
            }
            Ok(DiffSide {
                label: format!("{name} [replay]"),
                session: replay.session,
                trace: replay.trace,
            })
        }
        Subject::Run(loaded) => {
            let strategy = Strategy::chosen(&loaded.session, choice).map_err(bad_flag)?;
            let trace = loopdbg_engine::run(&loaded.session, &strategy);
            Ok(DiffSide {
                label: format!("{name} [{}]", strategy.label()),
                session: loaded.session,
                trace,
            })
        }
    }
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
            Failure::Other(anyhow::Error::from(e).context(format!("writing {}", path.display())))
        }
    })
}

/// The session's opening strategy with the command-line flags applied.
fn strategy_for(session: &Session, flags: &args::StrategyFlags) -> Result<Strategy, Failure> {
    Strategy::chosen(session, &flags.choice()).map_err(bad_flag)
}
