//! Command-line definitions (clap derive).
// These doc comments are the `--help` text, read in a terminal: a URL
// there is plain text, not a link.
#![allow(rustdoc::bare_urls)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loopdbg_corpus::exports::Export;
use loopdbg_engine::strategy::{Closure, Extract, StopRule};
use loopdbg_formats::provider::Format;
use loopdbg_judge::fix::Repair;
#[cfg(feature = "proxy")]
use loopdbg_judge::gate::{OnInvalid, OnUnjudged};
use loopdbg_read::Source;

/// A step debugger for LLM agent tool-call loops.
///
/// `loopdbg SESSION` opens the debugger; the subcommands run the same engine
/// headless for scripts and CI.
#[derive(Debug, Parser)]
#[command(name = "loopdbg", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// The session to open in the debugger (e.g. sessions/weather.json), or
    /// a captured conversation to replay (detected by content).
    pub session: Option<PathBuf>,

    /// When replaying a file of several conversations: which one (1-based;
    /// the first, or with --follow the newest). The requests one agent loop
    /// sent, each carrying the history before it, are one conversation,
    /// shown at its newest request.
    #[arg(long)]
    pub conversation: Option<usize>,

    #[command(flatten)]
    pub places: SessionPlaces,

    /// Keep reading the file as it grows (a log an agent is still writing,
    /// or a proxy capture): the replay follows the newest step.
    #[arg(long)]
    pub follow: bool,

    /// With --follow: MiB of memory the follower may hold. A log's whole
    /// picture takes up to four times the log, so a log past a quarter of
    /// this is followed by its newest part only (its last MiB, judged
    /// alone), and memory stays flat however long the log grows.
    #[arg(long, value_name = "MIB", default_value_t = 2048, requires = "follow")]
    pub follow_memory: u64,

    /// Strategy overrides for the debugger.
    #[command(flatten)]
    pub strategy: StrategyFlags,

    #[command(flatten)]
    pub prices: Prices,

    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Whether this run draws the debugger's screen (a file opened or
    /// followed, the tour, a proxy or demo with its screen): a process
    /// that idles between bursts of work, where memory freed and not
    /// reused should go back at once (`src/main.rs`).
    #[cfg(any(feature = "mimalloc", test))]
    pub fn draws_a_screen(&self) -> bool {
        match &self.command {
            None | Some(Command::Tour(_)) => true,
            #[cfg(feature = "proxy")]
            Some(Command::Proxy(args)) => !args.no_tui,
            #[cfg(feature = "demo")]
            Some(Command::Demo(args)) => !args.no_tui,
            Some(_) => false,
        }
    }
}

/// Where a session's files may be (for the commands that load sessions;
/// the others, `proxy` and `check`, never see the flag).
#[derive(Debug, Args, Default, Clone, Copy)]
pub struct SessionPlaces {
    /// Let a session's sub-agents (`agent`) name files outside the
    /// session's folder (by default they must stay inside it).
    #[arg(long)]
    pub agents_anywhere: bool,
}

/// `--prices`, where tokens are priced: the debugger, `run`'s handouts,
/// `check`'s token counts, the proxy and the demo.
#[derive(Debug, Args, Default)]
pub struct Prices {
    /// Price tokens with this table instead of the shipped one (JSON:
    /// `as_of`, `currency`, `per`, and `models` by name with `input`,
    /// `output`, `cache_read`, `cache_write`; docs/check.md's "Tokens
    /// and cost" shows one).
    #[arg(long = "prices", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Overrides of the session's opening strategy.
#[derive(Debug, Args, Default)]
pub struct StrategyFlags {
    /// How calls are taken from a reply: first (content.find) or all (filter).
    #[arg(long)]
    pub extract: Option<Extract>,
    /// When the loop stops: content, finish-reason, tool-calls or robust.
    #[arg(long)]
    pub stop: Option<StopRule>,
    /// Which stub-model behavior replies (a key of the session's `model`).
    #[arg(long)]
    pub behavior: Option<String>,
    /// The round limit (model calls).
    #[arg(long)]
    pub max_rounds: Option<u32>,
    /// What happens to calls left without a result: leave, synthesize or strip.
    #[arg(long)]
    pub closure: Option<Closure>,
}

impl StrategyFlags {
    /// The flags as the engine takes them.
    pub fn choice(&self) -> loopdbg_engine::session::Choice {
        loopdbg_engine::session::Choice {
            extract: self.extract,
            stop: self.stop,
            behavior: self.behavior.clone(),
            max_rounds: self.max_rounds,
            closure: self.closure,
        }
    }
}

/// A `check --format` value: an output format or an input format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CheckFormat {
    /// Grouped text.
    Text,
    /// One JSON document.
    Json,
    /// One JSON record per conversation, written as it is checked.
    Jsonl,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions annotations.
    Github,
    /// Read the input as this.
    Input(Source),
}

fn parse_check_format(s: &str) -> Result<CheckFormat, String> {
    match s {
        "text" => Ok(CheckFormat::Text),
        "json" => Ok(CheckFormat::Json),
        "jsonl" => Ok(CheckFormat::Jsonl),
        "sarif" => Ok(CheckFormat::Sarif),
        "github" => Ok(CheckFormat::Github),
        other => other
            .parse::<Source>()
            .map(CheckFormat::Input)
            .map_err(|_| {
                format!(
                    "unknown format `{s}` (expected text, json, jsonl, sarif, github, {})",
                    Source::names()
                )
            }),
    }
}

fn parse_input_format(s: &str) -> Result<Source, String> {
    s.parse::<Source>()
        .map_err(|_| format!("unknown input format `{s}` (expected {})", Source::names()))
}

/// Headless commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a session once and print the trace, round by round (text or JSON).
    Run(RunArgs),
    /// Will a provider refuse this history: which call id, in its words.
    ///
    /// Reads request bodies (Anthropic, OpenAI Chat, Responses, Gemini,
    /// Bedrock Converse), message arrays,
    /// JSON Lines of them; agent logs (Claude Code, Codex, Gemini CLI,
    /// Copilot CLI, Cline/Roo, Kimi Code, opencode and Crush sessions); recordings (HAR, VCR
    /// cassettes, Go httprr, loopdbg captures); OTLP traces; MCP captures.
    ///
    /// Exit 0 when clean; 1 when problems were found or nothing was checked;
    /// 2 when an input (or a line of it) could not be read, after checking
    /// the rest.
    Check(CheckArgs),
    /// Run every strategy × behavior of each session and print the table.
    Compare(CompareArgs),
    /// Warn about likely mistakes in session files (never fails on warnings).
    Lint(LintArgs),
    /// Print the JSON Schema of session files.
    Schema,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[cfg(feature = "docs")]
    Completions(CompletionsArgs),
    /// Print a manual page (roff), for `man -l -`, or write every page.
    #[cfg(feature = "docs")]
    Man(ManArgs),
    /// Sit between an agent and its provider, checking and recording.
    ///
    /// Forwards every request to --upstream and back unchanged (streamed
    /// answers chunk by chunk), checks each request on the way, and
    /// records every exchange.
    ///
    /// Point the agent at it: `ANTHROPIC_BASE_URL=http://127.0.0.1:8700`,
    /// `OPENAI_BASE_URL=http://127.0.0.1:8700/v1`.
    #[cfg(feature = "proxy")]
    Proxy(ProxyArgs),
    /// Try the live side in one command, offline and with no key.
    ///
    /// Starts a fake provider, a small agent whose loop runs only the first tool call of
    /// a reply (so the provider refuses its next request with a 400), and
    /// `loopdbg proxy` between them, shown in the live debugger. The
    /// exchanges are left in a capture (loopdbg-demo.jsonl, or the next
    /// free name) and the commands to check, replay, record, fork, diff
    /// and export it are printed on exit.
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
    /// Compare two runs: where they first part and what differs after.
    ///
    /// The runs are two sessions, one session under two strategies, or
    /// two captured conversations. Exit 0 when the runs are the same, 1 when they differ.
    Diff(DiffArgs),
    /// A guided tour of the loop for newcomers, in five parts.
    ///
    /// Each part says what to press and asks a question answered from the
    /// screen. Progress is remembered between runs.
    Tour(TourArgs),
    /// Turn a capture or an agent log into a session that runs it again.
    ///
    /// Any file `check` reads becomes a stub session that replays the
    /// recorded run under any strategy.
    Record(RecordArgs),
    /// Repair an agent's session that can no longer be resumed.
    ///
    /// A call left without its result, a result sent twice, a torn last
    /// line: repaired in the agent's own format (Claude Code, Codex and
    /// Gemini CLI and Kimi Code sessions; Copilot CLI, Cline/Roo and the
    /// databases of opencode and Crush are checked). Says
    /// what it would change; --write changes it, keeping the original as
    /// FILE.loopdbg-bak (numbered, never overwritten), and checks it again.
    /// --scan finds every agent's sessions on this machine and lists those
    /// that cannot be resumed, with the agent's command to resume each.
    ///
    /// Exit 0 when every session is (or became) sendable; 1 when one needs a
    /// repair not written; 2 when one could not be read or repaired.
    Doctor(DoctorArgs),
    /// A broken session's structure, to attach to a bug report: no words of yours.
    ///
    /// Writes FILE in its own format with its structure (roles, block
    /// types, ids, tool names, models, versions, times, stop reasons, every
    /// key and number) and every text, argument, result, path and command
    /// replaced by a placeholder. Written only when `check` finds the same
    /// problems in the bundle as in FILE (kind, place, ids, severity).
    Bundle(BundleArgs),
    /// Put loopdbg in an agent: hooks that warn of a 400 before it comes.
    ///
    /// `install claude-code` writes into Claude Code's settings (a backup
    /// kept, idempotent): a SessionStart hook on resume and after compaction
    /// that says, before the first prompt, when the provider will refuse
    /// the session and which doctor command repairs it; a PreCompact hook;
    /// and a status line segment where no status line is set. `install
    /// gemini-cli`: SessionStart in Gemini CLI's settings.
    /// `uninstall` takes out only what install put in. `run` and
    /// `statusline` are what the agent runs.
    Hooks(HooksArgs),
    /// Tap an MCP server and record every JSON-RPC message.
    ///
    /// Starts a stdio server, relays the agent's messages to it
    /// and its answers back byte for byte, and record every JSON-RPC
    /// message with the side that sent it and when, for `check` to read.
    ///
    /// Configure the agent to start `loopdbg mcp --capture FILE -- SERVER
    /// ARGS…` where it started `SERVER ARGS…`. Exits as the server exits.
    /// For a Streamable HTTP server, `--upstream URL` listens instead and
    /// forwards to it: point the agent at the address it prints.
    #[cfg(feature = "proxy")]
    Mcp(McpArgs),
    /// Serve loopdbg's check and doctor to an agent, as an MCP server.
    ///
    /// A Model Context Protocol server on standard input and output with
    /// five tools: check_request (will the provider refuse this request
    /// body, in its own words; optionally a repaired copy), check_file,
    /// explain_finding, list_unresumable_sessions (the doctor's scan) and
    /// repair_session (the doctor; writes, keeping a backup, only when
    /// called with write: true).
    ///
    /// Add it to the agent's MCP servers, e.g. for Claude Code:
    /// `claude mcp add loopdbg -- loopdbg mcp-server`.
    ///
    /// check_file and repair_session reach only the folder the server was
    /// started in (the agent's project), the agents' stores that `doctor
    /// --scan` reads, and folders given with --allow; links are resolved
    /// first, so none leads out.
    #[cfg(feature = "mcp-server")]
    McpServer(McpServerArgs),
}

/// The arguments of `mcp-server`.
#[cfg(feature = "mcp-server")]
#[derive(Debug, Args)]
pub struct McpServerArgs {
    /// Let the file tools reach this folder too (may be given again).
    #[arg(long, value_name = "DIR")]
    pub allow: Vec<PathBuf>,
}

// The arguments of `man` (its help text is the variant's).
#[cfg(feature = "docs")]
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`check` prints loopdbg-check(1));
    /// loopdbg(1) when omitted.
    pub command: Option<String>,
    /// Write every page (loopdbg.1, loopdbg-check.1, …) into this folder
    /// instead, e.g. ~/.local/share/man/man1.
    #[arg(long, conflicts_with = "command")]
    pub dir: Option<PathBuf>,
    /// Replace pages that are already in --dir.
    #[arg(long, requires = "dir")]
    pub force: bool,
}

// The arguments of `demo` (its help text is the variant's).
#[cfg(feature = "demo")]
#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub prices: Prices,
    /// Where to leave the capture (default: loopdbg-demo.jsonl in this
    /// folder, or loopdbg-demo-2.jsonl and on when taken; a file given
    /// here is appended to only when it is a capture).
    #[arg(long)]
    pub capture: Option<PathBuf>,
    /// One line per exchange instead of the debugger (also what happens
    /// without a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Milliseconds the agent waits before each request and while a tool
    /// runs, to watch each phase arrive (default 800 in the debugger, 0
    /// with --no-tui).
    #[arg(long)]
    pub pace_ms: Option<u64>,
}

// The arguments of `mcp` (its help text is the variant's).
#[cfg(feature = "proxy")]
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Where to record the messages (JSON Lines). An existing file is
    /// appended to only when it is an MCP capture.
    #[arg(long)]
    pub capture: PathBuf,
    /// Append to a --capture file that is not an MCP capture.
    #[arg(long)]
    pub force: bool,
    /// The server's command and its arguments, after `--`.
    #[arg(
        last = true,
        value_name = "SERVER",
        required_unless_present = "upstream",
        conflicts_with = "upstream"
    )]
    pub command: Vec<String>,
    /// A Streamable HTTP MCP server (http or https): listen, forward every
    /// request to the same path under it, record both sides.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// With --upstream: the address to listen on.
    #[arg(long, default_value = "127.0.0.1:8701", requires = "upstream")]
    pub listen: std::net::SocketAddr,
}

// The arguments of `doctor` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The session files (a Claude Code log: ~/.claude/projects/*/SESSION.jsonl).
    #[arg(required_unless_present = "scan", conflicts_with = "scan")]
    pub files: Vec<PathBuf>,
    /// Find the sessions of every agent on this machine (Claude Code, Codex,
    /// Gemini CLI, Copilot CLI, Cline, Roo Code, Kilo Code, Kimi Code,
    /// opencode, Crush; where CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME,
    /// COPILOT_HOME, KIMI_SHARE_DIR or CRUSH_GLOBAL_DATA put them) and put each to the doctor.
    #[arg(long)]
    pub scan: bool,
    /// Repair the files (the original kept as FILE.loopdbg-bak).
    #[arg(long)]
    pub write: bool,
    /// Write a file that changed in the last few seconds (an agent may
    /// still be appending to it).
    #[arg(long, requires = "write")]
    pub force: bool,
    /// What --scan writes.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text, requires = "scan")]
    pub format: ReportFormat,
    /// Read every session again: --scan otherwise takes the verdict of a
    /// session file unchanged since the last scan from its cache
    /// (XDG_CACHE_HOME/loopdbg/scan-cache.json), and keeps none this time.
    #[arg(long, requires = "scan")]
    pub no_cache: bool,
}

// The arguments of `run` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The session file.
    pub session: PathBuf,
    #[command(flatten)]
    pub prices: Prices,
    #[command(flatten)]
    pub strategy: StrategyFlags,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Print every request body the loop sends, as this provider receives
    /// it (a stream of JSON documents, ready for curl), instead of the trace.
    #[arg(long)]
    pub emit: Option<Format>,
    /// The model name written into emitted request bodies.
    #[arg(long, requires = "emit")]
    pub model: Option<String>,
    /// With --emit: only request N (1-based).
    #[arg(long, requires = "emit", conflicts_with_all = ["last", "all"])]
    pub request: Option<usize>,
    /// With --emit: only the last request.
    #[arg(long, requires = "emit", conflicts_with = "all")]
    pub last: bool,
    /// With --emit: every request, however much that prints (by default
    /// a run whose bodies would pass 64 MiB asks to pick).
    #[arg(long, requires = "emit")]
    pub all: bool,
    /// Write a handout of the run: md, html (one self-contained file) or
    /// json (the whole trace); or otlp, the run as OTLP JSON traces (a
    /// span per trip and per tool run, findings as span events). To -o
    /// FILE, or standard output. A captured conversation (a capture, an
    /// agent log, a trace) is replayed and written the same way.
    #[arg(long, conflicts_with = "emit")]
    pub export: Option<Export>,
    /// The wire format of the handout's request bodies (default anthropic).
    #[arg(long, requires = "export")]
    pub wire: Option<Format>,
    /// Mask credentials and personal data in what is written: e-mail
    /// addresses, phone numbers, IP addresses, home folders' user names,
    /// host names in URLs; each value one placeholder throughout
    /// (`[email-1]`), and what was masked counted on stderr.
    #[arg(long, requires = "export")]
    pub redact: bool,
    /// With --redact, also mask what this regular expression matches (may
    /// be given more than once).
    #[arg(long = "redact-pattern", value_name = "REGEX", requires = "redact")]
    pub redact_patterns: Vec<String>,
    /// Where the handout goes (never over an existing file unless --force).
    #[arg(short = 'o', long, requires = "export")]
    pub output: Option<PathBuf>,
    /// Replace an existing -o file.
    #[arg(long, requires = "output")]
    pub force: bool,
    #[command(flatten)]
    pub places: SessionPlaces,
}

// The arguments of `check` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files to check; `-` reads standard input.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub prices: Prices,
    /// What is written: `text`, `json`, `jsonl` (one record per
    /// conversation, as it goes), `sarif` (SARIF 2.1.0, for code scanning)
    /// or `github` (GitHub Actions annotations). (An input format given
    /// here, as before --input-format, still works, with a note.)
    #[arg(long, value_parser = parse_check_format)]
    pub format: Vec<CheckFormat>,
    /// What is read, when detection should not decide: anthropic, openai,
    /// responses, gemini, bedrock, claude-code, codex, gemini-cli, … (the
    /// content decides otherwise).
    #[arg(long = "input-format", value_name = "FORMAT", value_parser = parse_input_format)]
    pub input_format: Option<Source>,
    /// Write a repaired copy: `synthesize` placeholder results for
    /// unanswered calls, or `strip` the dangling calls. Needs -o.
    #[arg(long, requires = "output")]
    pub fix: Option<Repair>,
    /// Where the repaired copy goes (never the input, not even through a
    /// link; an existing file only with --force). Written to a temporary
    /// file beside it and renamed into place.
    #[arg(short = 'o', long, requires = "fix")]
    pub output: Option<PathBuf>,
    /// Replace an existing -o file.
    #[arg(long, requires = "output")]
    pub force: bool,
    /// A `loopdbg mcp` capture of the same session: each call the model
    /// made is matched to the MCP `tools/call` that ran it (same tool,
    /// same arguments), and a call the server failed whose result went
    /// to the model without its error flag is `mcp_error_as_data`.
    #[arg(long, value_name = "CAPTURE")]
    pub mcp: Option<PathBuf>,
    /// Exit 1 on warnings too (an accepted shape that breaks loops), not
    /// only on what a provider refuses, as a linter's strict mode does.
    #[arg(long)]
    pub strict: bool,
}

// The arguments of `compare` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One or more session files.
    #[arg(required = true)]
    pub sessions: Vec<PathBuf>,
    /// Round limit for every run (default: each session's own).
    #[arg(long)]
    pub max_rounds: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Md)]
    pub format: CompareFormat,
    #[command(flatten)]
    pub places: SessionPlaces,
}

// The arguments of `lint` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct LintArgs {
    /// One or more session files.
    #[arg(required = true)]
    pub sessions: Vec<PathBuf>,
    #[command(flatten)]
    pub places: SessionPlaces,
}

// The arguments of `proxy` (its help text is the variant's).
#[cfg(feature = "proxy")]
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Where requests go, e.g. https://api.anthropic.com (http or https).
    #[arg(long)]
    pub upstream: String,
    #[command(flatten)]
    pub prices: Prices,
    /// The address to listen on (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1:8700")]
    pub listen: std::net::SocketAddr,
    /// Append every exchange to this JSON Lines file as it completes
    /// (request, status, answer, latency, findings; never credentials).
    /// An existing file is appended to only when it is a capture.
    #[arg(long)]
    pub capture: Option<PathBuf>,
    /// Append to a --capture file that is not a capture (its first line
    /// is not a loopdbg exchange).
    #[arg(long)]
    pub force: bool,
    /// Send each exchange as an OTLP span (GenAI conventions, findings as
    /// `loopdbg.finding` events) to this OTLP/HTTP collector, e.g.
    /// http://127.0.0.1:4318 (JSON to /v1/traces), off the relay's path:
    /// a collector that is down only costs counted drops.
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// What to do with a request the provider would reject: `forward`
    /// it anyway (the finding is shown), `block` it with a local 400 in
    /// the provider's own words, or `repair=synthesize|strip` it first.
    #[arg(long, default_value = "forward")]
    pub on_invalid: OnInvalid,
    /// Under `block` and `repair`: what to do with a request the checker
    /// cannot read (not JSON, nested too deep, a shape it does not know).
    /// `block` answers loopdbg's own 400 saying why; `forward` sends it
    /// unjudged.
    #[arg(long, default_value = "block")]
    pub on_unjudged: OnUnjudged,
    /// MiB of memory for the conversations of recent requests, so that
    /// each agent's next request is read only past the messages it shares
    /// with its last (a 2 MB history: ~2 ms instead of ~9 ms). Each is
    /// counted at five times its body (the body and its conversation);
    /// 0 reads every request whole.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub history_memory: usize,
    /// Print one line per exchange instead of opening the debugger.
    #[arg(long)]
    pub no_tui: bool,
}

// The arguments of `diff` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The left run's session (or capture).
    pub left: PathBuf,
    /// The right run's session (or capture); the left one when omitted.
    pub right: Option<PathBuf>,
    /// Strategy of the left run, e.g. `extract=first,stop=robust`
    /// (keys: extract, stop, behavior, max-rounds, closure).
    #[arg(long, visible_alias = "left", default_value = "")]
    pub left_strategy: loopdbg_engine::session::Choice,
    /// Strategy of the right run, as --left-strategy.
    #[arg(long, visible_alias = "right", default_value = "")]
    pub right_strategy: loopdbg_engine::session::Choice,
    /// What is written.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    #[command(flatten)]
    pub places: SessionPlaces,
}

// The arguments of `bundle` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The session, log or request body.
    pub file: PathBuf,
    /// Where the bundle goes (never FILE; an existing file only with --force).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Replace an existing -o file.
    #[arg(long)]
    pub force: bool,
}

// The arguments of `hooks` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

/// What `hooks` does.
#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Write loopdbg's hooks into the agent's settings (a backup kept).
    Install {
        /// The agent.
        #[arg(value_enum)]
        agent: HookAgent,
        /// The settings file (default: the agent's user settings, e.g.
        /// `$CLAUDE_CONFIG_DIR/settings.json` or `~/.claude/settings.json`).
        #[arg(long)]
        settings: Option<PathBuf>,
    },
    /// Take loopdbg's hooks out of the agent's settings, nothing else.
    Uninstall {
        /// The agent.
        #[arg(value_enum)]
        agent: HookAgent,
        /// The settings file, as for install.
        #[arg(long)]
        settings: Option<PathBuf>,
    },
    /// What the agent runs at a hook (its JSON on standard input).
    Run {
        /// The agent.
        #[arg(value_enum)]
        agent: HookAgent,
        /// The moment.
        #[arg(value_enum)]
        moment: HookMoment,
    },
    /// What the agent runs for its status line (its JSON on standard input).
    Statusline {
        /// The agent.
        #[arg(value_enum)]
        agent: HookAgent,
    },
}

/// An agent whose hooks loopdbg knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookAgent {
    /// Claude Code: SessionStart, PreCompact and the status line.
    ClaudeCode,
    /// Codex CLI: no hook runs before a resumed session's first request.
    Codex,
    /// Gemini CLI: SessionStart.
    GeminiCli,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookMoment {
    /// A session resumed, or compacted.
    SessionStart,
    /// Before compaction.
    PreCompact,
}

// The arguments of `tour` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct TourArgs {
    /// Forget the parts solved in earlier runs.
    #[arg(long)]
    pub restart: bool,
    /// The tour's language: `en` (the parts' words and the sessions'
    /// English companions, sessions/en/) or `zh` (the parts in Chinese and
    /// the sessions as shipped, in the seeds' language). Default: `zh` when
    /// the locale (LC_ALL, LC_MESSAGES, LANG) is Chinese, else `en`.
    #[arg(long, value_enum)]
    pub lang: Option<TourLang>,
}

/// The tour's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TourLang {
    /// English.
    En,
    /// Chinese (中文).
    Zh,
}

// The arguments of `record` (its help text is the variant's).
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The capture or log.
    pub capture: PathBuf,
    /// Which conversation of the file (1-based; default the last). The
    /// requests of one agent loop are one conversation, recorded from its
    /// newest request.
    #[arg(long)]
    pub conversation: Option<usize>,
    /// The session file to write (never an existing one).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Mask credentials and personal data in the session, as `run
    /// --export --redact` does, each value one placeholder throughout (so
    /// the recorded loop still replays).
    #[arg(long)]
    pub redact: bool,
    /// With --redact, also mask what this regular expression matches.
    #[arg(long = "redact-pattern", value_name = "REGEX", requires = "redact")]
    pub redact_patterns: Vec<String>,
}

/// `run` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    /// Round by round: each reply, the calls run and dropped, the decision.
    Text,
    /// One JSON document.
    Json,
}

/// What `doctor --scan` and `diff` write (their own words: `run`'s
/// describe a trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Plain text, for a person.
    Text,
    /// One JSON document, for a program.
    Json,
}

/// `compare` output.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompareFormat {
    /// A Markdown table.
    Md,
    /// A JSON array of rows.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

// The arguments of `completions` (its help text is the variant's).
#[cfg(feature = "docs")]
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod screen_tests {
    use super::Cli;
    use clap::Parser;

    /// The screen gives freed memory back at once, headless commands keep
    /// it a second (`src/main.rs`): which runs draw the screen.
    #[test]
    fn the_runs_that_draw_a_screen_are_told_from_their_arguments() {
        let draws = |args: &[&str]| {
            let args = std::iter::once("loopdbg").chain(args.iter().copied());
            Cli::try_parse_from(args).unwrap().draws_a_screen()
        };
        assert!(draws(&["sessions/weather.json"]));
        assert!(draws(&["log.jsonl", "--follow", "--follow-memory", "64"]));
        assert!(draws(&["tour"]));
        assert!(!draws(&["check", "log.jsonl"]));
        assert!(!draws(&["doctor", "--scan"]));
        #[cfg(feature = "proxy")]
        {
            assert!(draws(&["proxy", "--upstream", "http://127.0.0.1:1"]));
            assert!(!draws(&[
                "proxy",
                "--upstream",
                "http://127.0.0.1:1",
                "--no-tui"
            ]));
        }
    }
}
