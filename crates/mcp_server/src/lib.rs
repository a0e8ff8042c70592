//! `loopdbg mcp-server`: loopdbg's check and doctor as tools of a Model
//! Context Protocol server on stdio, so an agent can ask, before it sends
//! a history, whether the provider will refuse it (in the provider's own
//! words), what a finding means, which of this machine's agent sessions
//! cannot be resumed, and have one repaired.
//!
//! The protocol, its lifecycle and the transport are the official Rust
//! SDK's (`rmcp`); each tool here calls the same code as the command it
//! stands for (`check`, `check --fix`, `doctor`, `doctor --scan`), so a
//! tool's answer and the command's output never disagree.
//!
//! Nothing is written unless a tool is asked to write: `repair_session`
//! plans by default, and writes (keeping the original as a backup, as
//! `doctor --write` does) only with `write: true`.
//!
//! The file tools reach only where the server is meant to look (issue
//! 59, item 3): a model that a page or a tool result talks into it must
//! not have loopdbg read `~/.ssh` into an error's snippet, nor rewrite a
//! log outside the agents' stores. A path, its links resolved, must lie in
//! the folder the server was started in (the agent's project), in an
//! agent's store (the folders `doctor --scan` reads), or in a folder given
//! with `--allow`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use loopdbg_corpus::doctor;
use loopdbg_corpus::report::{FileReport, check_bytes, check_file, summary};
use loopdbg_corpus::scan::{self, Options};
use loopdbg_corpus::stores::{Agent, Places};
use loopdbg_corpus::text::{Output, write_reports};
use loopdbg_read::Source;
use loopdbg_read::finding::Kind;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The name the server gives itself; an agent names its tools after it
/// (Claude Code: `mcp__loopdbg__check_request`).
pub const NAME: &str = "loopdbg";

/// What the server tells the agent about using it.
const INSTRUCTIONS: &str = "loopdbg predicts whether an LLM provider (Anthropic, OpenAI Chat, \
OpenAI Responses, Gemini, Bedrock) will refuse a conversation history with a 400, and why, in the \
provider's own words: a tool call without its result, a result for a call never made, ids the \
provider refuses. check_request checks a request body before it is sent; check_file checks a \
file (a request body, an agent's log, a recording, a trace); explain_finding says what a finding \
kind means and how it is repaired; list_unresumable_sessions scans this machine's Claude Code, \
Codex, Gemini CLI and opencode sessions for ones their agent cannot resume; repair_session plans \
a session's repair and writes it (keeping a backup) only when asked to.";

/// The arguments of `check_request`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckRequest {
    /// The request body about to be sent (an object with `messages`,
    /// `input` or `contents`), or a bare message array; or the same as
    /// JSON text.
    pub body: Value,
    /// Read it as this format instead of detecting it: anthropic, openai,
    /// responses, gemini, bedrock.
    #[serde(default)]
    pub provider: Option<String>,
    /// Also return a repaired copy: `synthesize` adds a placeholder error
    /// result for each unanswered call, `strip` removes the dangling calls
    /// and orphan results.
    #[serde(default)]
    pub repair: Option<String>,
}

/// The arguments of `check_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckFile {
    /// The file to check: a request body, a JSON Lines capture, an agent's
    /// session log, a HAR/VCR/httprr recording, an OTLP trace.
    pub path: String,
    /// Read it as this format instead of detecting it (as `check --format`).
    #[serde(default)]
    pub format: Option<String>,
}

/// The arguments of `explain_finding`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainFinding {
    /// The finding's kind, as the check reports it (`unanswered_call`).
    pub kind: String,
}

/// The arguments of `repair_session`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepairSession {
    /// The session file (Claude Code or Codex JSON Lines, a Gemini CLI chat).
    pub path: String,
    /// Write the repair, keeping the original beside it as a backup.
    /// Without it, only the plan is returned and nothing is written.
    #[serde(default)]
    pub write: bool,
    /// Write even a file its agent changed in the last few seconds (it may
    /// still be running).
    #[serde(default)]
    pub force: bool,
}

/// The arguments of `list_unresumable_sessions`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListSessions {
    /// Only this agent's sessions: claude-code, codex, gemini-cli,
    /// copilot-cli, cline, roo-code, kilo-code, opencode, kimi-code, crush.
    #[serde(default)]
    pub agent: Option<String>,
}

/// The server: its tools, where the agents' stores are, and the other
/// folders its file tools may reach.
#[derive(Clone)]
pub struct Loopdbg {
    tool_router: ToolRouter<Self>,
    places: Places,
    /// The folder it was started in and those given with `--allow`, links
    /// resolved.
    allowed: Vec<PathBuf>,
}

impl Loopdbg {
    /// A server that scans the stores under the process's home (as
    /// `doctor --scan` does).
    pub fn new() -> Self {
        Self::with_places(Places::from_env())
    }

    /// A server that scans the stores under `places`; its file tools reach
    /// those stores and the folder it is started in.
    pub fn with_places(places: Places) -> Self {
        let started_in = std::env::current_dir().and_then(std::fs::canonicalize);
        Loopdbg {
            tool_router: Self::tool_router(),
            places,
            allowed: started_in.into_iter().collect(),
        }
    }

    /// The same server, its file tools reaching `folders` too. A folder
    /// that does not exist is an error.
    pub fn allowing(mut self, folders: &[PathBuf]) -> std::io::Result<Self> {
        for folder in folders {
            let real = std::fs::canonicalize(folder).map_err(|e| {
                std::io::Error::new(e.kind(), format!("--allow {}: {e}", folder.display()))
            })?;
            self.allowed.push(real);
        }
        Ok(self)
    }

    /// `path` with its links resolved, when the file tools may reach it.
    fn reachable(&self, path: &Path) -> Result<PathBuf, String> {
        let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if self.allowed.iter().any(|folder| real.starts_with(folder)) {
            return Ok(real);
        }
        // The stores are listed when needed: an agent may have made its
        // store since the server started.
        let in_a_store = loopdbg_corpus::stores::stores(&self.places)
            .iter()
            .filter_map(|store| std::fs::canonicalize(&store.root).ok())
            .any(|root| real.starts_with(root));
        match in_a_store {
            true => Ok(real),
            false => Err(format!(
                "{}: outside the folders this server reaches (the folder it was started in, the agents' \
                 stores that doctor --scan reads, and any given with --allow); start it with \
                 `loopdbg mcp-server --allow DIR` to add one",
                path.display()
            )),
        }
    }
}

impl Default for Loopdbg {
    fn default() -> Self {
        Self::new()
    }
}

/// A tool's answer: what the command would print, then the same as JSON.
fn answer(text: String, json: Option<Value>, failed: bool) -> CallToolResult {
    let mut content = vec![ContentBlock::text(text)];
    if let Some(json) = json {
        content.push(ContentBlock::text(json.to_string()));
    }
    match failed {
        true => CallToolResult::error(content),
        false => CallToolResult::success(content),
    }
}

/// A bad argument: said to the agent as a failed call it can correct.
fn refused(why: String) -> CallToolResult {
    answer(why, None, true)
}

/// `check`'s text report of `reports` (no colour).
fn text_of(reports: &[FileReport]) -> String {
    let mut out = Vec::new();
    if let Err(e) = write_reports(reports, Output::Text { colour: false }, &mut out) {
        return format!("the report could not be written: {e}");
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    for error in reports.iter().flat_map(|r| &r.errors) {
        text.push_str(&error.message);
        text.push('\n');
    }
    text
}

/// The forced format named `name`, or why it is not one.
fn source(name: Option<&str>) -> Result<Option<Source>, String> {
    name.map(|n| n.parse::<Source>()).transpose()
}

/// Runs `work` off the protocol's thread: a check reads and judges on
/// threads of its own, and a large file takes a while.
async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

#[tool_router]
impl Loopdbg {
    /// `check` of one request body held in memory.
    #[tool(
        description = "Check a request body before sending it: would the provider (Anthropic, OpenAI Chat, Responses, Gemini, Bedrock) refuse it with a 400, for which tool call id, in the provider's own words. Optionally return a repaired copy (repair: synthesize or strip)."
    )]
    pub async fn check_request(
        &self,
        Parameters(args): Parameters<CheckRequest>,
    ) -> CallToolResult {
        let forced = match source(args.provider.as_deref()) {
            Ok(f) => f,
            Err(e) => return refused(format!("provider: {e}")),
        };
        let how = match args
            .repair
            .as_deref()
            .map(str::parse::<loopdbg_judge::fix::Repair>)
        {
            None => None,
            Some(Ok(how)) => Some(how),
            Some(Err(e)) => return refused(format!("repair: {e}")),
        };
        let bytes = match &args.body {
            Value::String(text) => text.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        };
        let report =
            off_thread(move || check_bytes("request", bytes, forced, &[], &mut |_, _| {})).await;
        let failed = !report.errors.is_empty();
        let reports = [report];
        let mut text = text_of(&reports);
        let mut json = summary(&reports);
        if let (Some(how), Some(format)) = (how, reports[0].format)
            && let Some((said, repaired, clean)) =
                repair_checked(&args.body, format, how, forced).await
        {
            text.push_str(&said);
            json["repaired"] = repaired;
            json["repaired_clean"] = Value::Bool(clean);
        }
        answer(text, Some(json), failed)
    }

    /// `check` of one file.
    #[tool(
        description = "Check a file for histories a provider would refuse: a request body, a JSON Lines capture, an agent's session log or store file (Claude Code, Codex, Gemini CLI, Copilot CLI, Cline, Roo Code, Kilo Code, opencode and Crush exports, Kimi Code), a HAR/VCR/httprr recording or an OTLP trace. Says each finding with its file:line and the provider's words."
    )]
    pub async fn check_file(&self, Parameters(args): Parameters<CheckFile>) -> CallToolResult {
        let forced = match source(args.format.as_deref()) {
            Ok(f) => f,
            Err(e) => return refused(format!("format: {e}")),
        };
        let path = PathBuf::from(&args.path);
        if path.as_os_str() == "-" {
            // The server's standard input is the protocol.
            return refused("check_file reads files; pass a request body to check_request".into());
        }
        let path = match self.reachable(&path) {
            Ok(path) => path,
            Err(why) => return refused(why),
        };
        // A FIFO would hold the tool until a writer came (and cancelling
        // does not end a blocked read); a device may never end.
        if let Ok(meta) = std::fs::metadata(&path)
            && !meta.is_file()
            && !meta.is_dir()
        {
            return refused(format!(
                "{}: not a regular file (a FIFO, socket or device); check_file reads files",
                path.display()
            ));
        }
        let report =
            off_thread(move || check_file(&path, forced, &[], &mut |_, _| {}, &mut |_| {})).await;
        let failed = !report.errors.is_empty();
        let reports = [report];
        answer(text_of(&reports), Some(summary(&reports)), failed)
    }

    /// What a finding kind means and how it is repaired.
    #[tool(
        description = "Explain a finding kind that check reported (unanswered_call, unexpected_result, invalid_id, ...): what it means, whether it is a refusal, and how loopdbg repairs it."
    )]
    pub async fn explain_finding(
        &self,
        Parameters(args): Parameters<ExplainFinding>,
    ) -> CallToolResult {
        match explanation(&args.kind) {
            Some(text) => answer(text, None, false),
            None => refused(format!(
                "no finding kind `{}`; the kinds are: {}",
                args.kind,
                Kind::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// `doctor --scan`, without writing.
    #[tool(
        description = "List this machine's agent sessions (Claude Code, Codex, Gemini CLI, Copilot CLI, Cline, Roo Code, Kilo Code, opencode, Kimi Code, Crush) that their agent cannot resume, or resumes only by mending them, with why (the provider's words) and the doctor's repair. Writes nothing."
    )]
    pub async fn list_unresumable_sessions(
        &self,
        Parameters(args): Parameters<ListSessions>,
    ) -> CallToolResult {
        let agent = match args.agent.as_deref() {
            None => None,
            Some(name) => match Agent::named(name) {
                Some(agent) => Some(agent),
                None => {
                    let keys: Vec<&str> = Agent::ALL.iter().map(|a| a.key()).collect();
                    return refused(format!(
                        "agent: no agent `{name}`; the agents are: {}",
                        keys.join(", ")
                    ));
                }
            },
        };
        let places = self.places.clone();
        let options = Options::default();
        let mut found = off_thread(move || scan::examine_all(&places, options, &|_| {})).await;
        if let Some(agent) = agent {
            found.stores.retain(|s| s.agent == agent);
            found.unresumable.retain(|u| u.agent == agent);
        }
        let mut out = Vec::new();
        scan::report(&found, options, &mut out);
        let json = serde_json::to_value(&found).unwrap_or(Value::Null);
        answer(for_tools(&out), Some(json), false)
    }

    /// `doctor FILE [--write]`.
    #[tool(
        description = "Repair an agent's session file so the agent can resume it (Claude Code and Codex JSON Lines logs, Gemini CLI chats, Kimi Code context files; a FIFO or device is refused): says what keeps it from being sent and the changes, line by line. Writes only when write is true, keeping the original as a backup beside it."
    )]
    pub async fn repair_session(
        &self,
        Parameters(args): Parameters<RepairSession>,
    ) -> CallToolResult {
        let path = match self.reachable(Path::new(&args.path)) {
            Ok(path) => path,
            Err(why) => return refused(why),
        };
        let (write, force) = (args.write, args.force);
        let (code, out) = off_thread(move || {
            let mut out = Vec::new();
            let code = doctor::report(&[path], write, force, &mut out);
            (code, out)
        })
        .await;
        answer(for_tools(&out), None, code == 2)
    }
}

/// The doctor's words, for an agent: where the command says to pass
/// `--write`, the tool's argument is named instead.
fn for_tools(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .replace(
            "pass --write to repair it",
            "call repair_session with write: true to repair it",
        )
        .replace(
            "pass --write to repair the",
            "call repair_session with write: true on each of the",
        )
        .replace(
            "pass --write to keep the mended history",
            "call repair_session with write: true to keep the mended history",
        )
}

/// `body` repaired as `check --fix` repairs it, and the repaired copy
/// checked as the original was (an agent sends it only if nothing in it is
/// refused any more): what to say, the copy, and whether it is clean.
async fn repair_checked(
    body: &Value,
    format: Source,
    how: loopdbg_judge::fix::Repair,
    forced: Option<Source>,
) -> Option<(String, Value, bool)> {
    let (n, repaired) = repaired_body(body, format, how)?;
    let bytes = repaired.to_string().into_bytes();
    let again =
        off_thread(move || check_bytes("repaired", bytes, forced, &[], &mut |_, _| {})).await;
    let clean = again.errors.is_empty() && !again.has_problems();
    let said = match clean {
        true => format!("repaired copy ({n} change(s)), checked again: no problems\n"),
        false => format!(
            "repaired copy ({n} change(s)), checked again:\n{}",
            text_of(&[again])
        ),
    };
    Some((said, repaired, clean))
}

/// `body` repaired as `check --fix` repairs it: how many changes, and the
/// repaired body (None when it is not JSON).
fn repaired_body(
    body: &Value,
    format: Source,
    how: loopdbg_judge::fix::Repair,
) -> Option<(usize, Value)> {
    let mut doc = match body {
        Value::String(text) => serde_json::from_str(text).ok()?,
        other => other.clone(),
    };
    let format = format.provider();
    let n = loopdbg_judge::fix::repair(&mut doc, format, how);
    Some((n, doc))
}

/// What `kind` means, whether it is ever a refusal, and its repair.
pub fn explanation(kind: &str) -> Option<String> {
    let kind = *Kind::ALL.iter().find(|k| k.as_str() == kind)?;
    let weight = match kind.is_note() {
        true => "A note: it says something about the file, never a failure.",
        false => {
            "A problem: check fails on it; where the provider refuses it, check gives the provider's 400 in its own words."
        }
    };
    let repair = match kind {
        Kind::UnansweredCall | Kind::UnexpectedResult => {
            "Repair: in a request body, check_request with repair `synthesize` (a placeholder error result for each unanswered call) or `strip` (the dangling calls and orphan results removed); in an agent's session, repair_session (the doctor), which writes what the agent's own resume would send."
        }
        Kind::DuplicateResult => {
            "Repair: in an agent's session, repair_session (the doctor) keeps one response per call; in a request body, drop the extra copies so each call has exactly one result."
        }
        Kind::InvalidId => {
            "Repair: repair_session renames the refused id everywhere it appears in the session, consistently."
        }
        Kind::JoinedRecords => {
            "Repair: repair_session splits the joined line, as the agent reads a line at a time."
        }
        Kind::ResultsNotFirst => {
            "Repair: move the tool results to the start of the user message that follows the calls."
        }
        Kind::DuplicateId | Kind::ReusedId => {
            "Repair: give each call of a turn an id of its own; the agent's loop should not mint ids that repeat."
        }
        Kind::TruncatedTurnExecuted => {
            "Repair: in the loop, do not run the calls of a turn whose stop reason is max_tokens / length: ask again with a larger limit."
        }
        Kind::RepeatedTurn => {
            "Repair: in the loop, stop or change course when the model repeats its turn."
        }
        _ => "Repair: none automatic; the finding's message says what the provider expects.",
    };
    Some(format!(
        "{}: {}.\n{weight}\n{repair}",
        kind.as_str(),
        kind.description()
    ))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Loopdbg {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Why the server stopped other than by its client closing the session.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Serves `server`'s tools on `transport` (standard input and output, or
/// one end of a pipe in a test) until the client closes it.
pub async fn serve<T, E, A>(server: Loopdbg, transport: T) -> Result<(), Error>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = server.serve(transport).await?;
    running.waiting().await?;
    Ok(())
}

/// Serves the tools on the process's standard input and output until the
/// client closes them, on a runtime of one thread (the protocol's; a
/// check runs on threads of its own). rmcp times its requests, so the
/// runtime has timers.
pub fn run_stdio(allow: &[PathBuf]) -> Result<(), Error> {
    let server = Loopdbg::new().allowing(allow)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(serve(server, rmcp::transport::stdio()));
    // Standard input is read on a blocking thread that may still wait on
    // an input the client holds open: dropping the runtime would wait too.
    runtime.shutdown_background();
    served
}
