//! The real agents end to end: Claude Code, Codex and Gemini CLI at the
//! versions `scripts/install-agents.sh` pins, each run non-interactively
//! against the fake provider on loopback, once directly and once through
//! `loopdbg proxy`, on the fake's scripted loop (`loopdbg e2e` in the
//! prompt): the agent's own shell tool runs `echo loopdbg-one`, then two
//! commands in parallel, and the model answers with what they printed.
//!
//! Each agent is skipped, saying so on stderr, when it is not installed
//! (`.ci/run` installs them when npm is there). Nothing here sleeps: each
//! agent is waited for, with a watchdog that kills one that hangs.

use loopdbg_fake as fake;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The key every agent is given: shaped like a real one, so redaction by
/// shape and by value are both exercised.
const KEY: &str = "sk-e2e-SECRET-4f1d9c2b7a";

/// How long one agent run may take before the watchdog kills it.
const WATCHDOG: Duration = Duration::from_secs(300);

const PROMPT: &str = "loopdbg e2e: run the three commands and report what they print";

#[derive(Clone, Copy, Debug)]
enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
    /// opencode keeps its sessions in SQLite; `opencode export ID` prints
    /// one as JSON, which is what `check` reads of it.
    Opencode,
}

impl Agent {
    fn bin(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini",
            Agent::Opencode => "opencode",
        }
    }

    /// The provider format of its requests, as `check` names it.
    fn format(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "anthropic",
            Agent::Codex => "responses",
            Agent::GeminiCli => "gemini",
            // Configured here with its Anthropic provider.
            Agent::Opencode => "anthropic",
        }
    }
}

/// Where the installed agents' commands are, if they are.
fn agents_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("LOOPDBG_AGENTS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents"),
        PathBuf::from,
    );
    let bin = dir.join("node_modules/.bin");
    bin.is_dir().then_some(bin)
}

/// A fresh home, working folder and temporary folder for one run.
struct Scratch {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    tmp: PathBuf,
}

impl Scratch {
    fn new(agent: Agent) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = dir.path().join("work");
        let tmp = dir.path().join("tmp");
        for d in [&home, &work, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        if let Agent::GeminiCli = agent {
            let gemini = home.join(".gemini");
            std::fs::create_dir_all(&gemini).unwrap();
            std::fs::write(
                gemini.join("settings.json"),
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
            )
            .unwrap();
            let trusted = serde_json::json!({ work.to_str().unwrap(): "TRUST_FOLDER" });
            std::fs::write(gemini.join("trustedFolders.json"), trusted.to_string()).unwrap();
        }
        Scratch {
            _dir: dir,
            home,
            work,
            tmp,
        }
    }

    /// The log the agent wrote of its session.
    fn log(&self, agent: Agent) -> PathBuf {
        let (root, depth) = match agent {
            Agent::ClaudeCode => (self.home.join(".claude/projects"), 2),
            Agent::Codex => (self.home.join(".codex/sessions"), 4),
            Agent::GeminiCli => (self.home.join(".gemini/tmp"), 3),
            Agent::Opencode => panic!("opencode's sessions are read through opencode_export"),
        };
        let mut found = Vec::new();
        files_at(&root, depth, &mut found);
        found.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
        assert_eq!(
            found.len(),
            1,
            "{agent:?} wrote one log under {root:?}: {found:?}"
        );
        found.remove(0)
    }
}

fn files_at(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if depth == 1 && path.is_file() {
            out.push(path);
        } else if depth > 1 && path.is_dir() {
            files_at(&path, depth - 1, out);
        }
    }
}

/// What one agent run gave.
struct Ran {
    final_text: String,
    stdout: String,
    stderr: String,
}

/// Runs `agent` on the scripted prompt against `base` (the fake, or the
/// proxy in front of it); it must succeed.
fn run(agent: Agent, bin: &Path, base: &str, scratch: &Scratch) -> Ran {
    let (ok, ran) = run_with(agent, bin, base, scratch, PROMPT, &[]);
    assert!(ok, "{agent:?} failed: {}\n{}", ran.stdout, ran.stderr);
    ran
}

/// [`run`] with another prompt and more arguments; whether it succeeded.
fn run_with(
    agent: Agent,
    bin: &Path,
    base: &str,
    scratch: &Scratch,
    prompt: &str,
    extra: &[&str],
) -> (bool, Ran) {
    let mut command = command_for(agent, bin, base, scratch, prompt, extra);
    finish(agent, command.spawn().unwrap())
}

/// The command that runs `agent` on `prompt` against `base`.
fn command_for(
    agent: Agent,
    bin: &Path,
    base: &str,
    scratch: &Scratch,
    prompt: &str,
    extra: &[&str],
) -> Command {
    let mut command = Command::new(bin.join(agent.bin()));
    command
        .current_dir(&scratch.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &scratch.home)
        .env("TMPDIR", &scratch.tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match agent {
        Agent::ClaudeCode => {
            command
                .env("ANTHROPIC_BASE_URL", base)
                .env("ANTHROPIC_API_KEY", KEY)
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_TELEMETRY", "1")
                .args(["-p", prompt, "--allowedTools", "Bash"])
                .args(["--output-format", "json"]);
        }
        Agent::Codex => {
            let provider = format!(
                "model_providers.fake={{name=\"fake\",base_url=\"{base}/v1\",env_key=\"FAKE_KEY\",wire_api=\"responses\"}}"
            );
            command
                .env("CODEX_HOME", scratch.home.join(".codex"))
                .env("FAKE_KEY", KEY)
                .args(["exec", "-m", "gpt-5", "--skip-git-repo-check"])
                .args(["-c", "model_provider=fake", "-c", &provider])
                .arg("--dangerously-bypass-approvals-and-sandbox");
            // `codex exec … resume ID PROMPT`: the subcommand and its
            // session come before the prompt.
            if extra.first() == Some(&"resume") {
                command.args(extra).arg(prompt);
            } else {
                command.arg(prompt).args(extra);
            }
            std::fs::create_dir_all(scratch.home.join(".codex")).unwrap();
        }
        Agent::Opencode => {
            // Its Anthropic provider pointed at `base`; `--pure`: no
            // plugin is fetched.
            let config = serde_json::json!({
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": false,
                "share": "disabled",
                "provider": {"fake": {
                    "npm": "@ai-sdk/anthropic",
                    "name": "fake",
                    "options": {"baseURL": format!("{base}/v1"), "apiKey": KEY},
                    "models": {"claude-fake": {"name": "claude fake", "tool_call": true}},
                }},
                "model": "fake/claude-fake",
            });
            let dir = scratch.home.join(".config/opencode");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
            command
                .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                .args(["run", "--pure", prompt]);
        }
        Agent::GeminiCli => {
            command
                .env("GEMINI_API_KEY", KEY)
                .env("GOOGLE_GEMINI_BASE_URL", base)
                .args(["-p", prompt, "--yolo"]);
        }
    }
    if !matches!(agent, Agent::Codex) {
        command.args(extra);
    }
    command
}

/// Waits for `child` (the watchdog kills it past [`WATCHDOG`]); whether it
/// succeeded, and what it printed.
fn finish(agent: Agent, child: std::process::Child) -> (bool, Ran) {
    let id = child.id();
    let (done, watching) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if watching.recv_timeout(WATCHDOG).is_err() {
            let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let final_text = match agent {
        Agent::ClaudeCode => serde_json::from_str::<Value>(&stdout)
            .ok()
            .and_then(|v| v["result"].as_str().map(str::to_string))
            .unwrap_or_default(),
        _ => stdout
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string(),
    };
    (
        out.status.success(),
        Ran {
            final_text,
            stdout,
            stderr,
        },
    )
}

/// `loopdbg proxy` in front of `upstream`, recording to `capture`.
struct Proxy {
    child: std::process::Child,
    url: String,
}

impl Proxy {
    fn start(upstream: &str, capture: &Path) -> Proxy {
        Proxy::start_with(upstream, capture, &[])
    }

    /// [`Proxy::start`] with more of the proxy's flags (`--on-invalid …`).
    fn start_with(upstream: &str, capture: &Path, flags: &[&str]) -> Proxy {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args(["proxy", "--upstream", upstream, "--listen", "127.0.0.1:0"])
            .args(flags)
            .arg("--no-tui")
            .arg("--capture")
            .arg(capture)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        std::io::BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let addr = crate::common::proxy_address(&banner);
        Proxy {
            child,
            url: format!("http://{addr}"),
        }
    }
}

impl Drop for Proxy {
    /// Ended as a user ends it (SIGTERM): it records what is in flight and
    /// writes its capture out before it exits. A SIGKILL could lose the
    /// last exchange's line under load (seen: a resume read back no
    /// exchange at all).
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let stopped = Command::new("kill").args(["-TERM", &pid]).status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn loopdbg(args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `loopdbg check FILE --format json`: its totals; it must pass.
fn checked(file: &Path) -> Value {
    let (ok, report) = check_report(file);
    assert!(ok, "check {file:?}: {report}");
    report
}

/// `loopdbg check FILE --format json --strict`: whether it passed (a
/// warning fails it too: a log an agent mends by itself still says so),
/// and its report.
fn check_report(file: &Path) -> (bool, Value) {
    let (ok, text) = loopdbg(&[
        "check".as_ref(),
        "--strict".as_ref(),
        file.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    let at = text.find('{').unwrap_or(0);
    let report = serde_json::Deserializer::from_str(&text[at..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no report: {text}"));
    (ok, report)
}

/// The ids of every finding of `report` whose provider would refuse it.
fn refused_ids(report: &Value) -> Vec<String> {
    let mut ids: Vec<String> = report["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["results"].as_array().into_iter().flatten())
        .flat_map(|r| r["findings"].as_array().into_iter().flatten())
        .filter(|f| f["rejected_by_provider"] == true)
        .flat_map(|f| f["ids"].as_array().into_iter().flatten())
        .filter_map(|id| id.as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// The event or record types of an agent's log that loopdbg neither reads
/// nor skips on purpose.
fn unknown_types(agent: Agent, log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut unknown = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let kind = v["type"].as_str().unwrap_or("");
        let known = match agent {
            Agent::ClaudeCode => loopdbg_read::is_known_event(kind),
            Agent::Codex => loopdbg_read::CODEX_RECORD_TYPES.contains(&kind),
            // Its records are messages (`user`, `gemini`, …), updates
            // (`$set`) and one header: the reader takes every shape.
            Agent::GeminiCli | Agent::Opencode => true,
        };
        if !known && !unknown.iter().any(|k| k == kind) {
            unknown.push(kind.to_string());
        }
    }
    unknown
}

/// The agent's command folder, or `None` (said, and counted as skipped)
/// when it is not installed.
fn installed(agent: Agent, test: &str) -> Option<PathBuf> {
    if let Some(bin) = agents_bin().filter(|b| b.join(agent.bin()).exists()) {
        return Some(bin);
    }
    // `.ci/run` installs them: missing under CI=true is a failure.
    crate::common::skip(
        test,
        "the agent is not installed: run scripts/install-agents.sh (or set LOOPDBG_AGENTS)",
    );
    None
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// One agent: direct, then through the proxy; the runs agree, the capture
/// and the log check clean, the log holds no type loopdbg does not know,
/// and the capture records as a session that runs the same loop.
fn end_to_end(agent: Agent) {
    let Some(bin) = installed(agent, &format!("agents::{agent:?}")) else {
        return;
    };
    let runtime = runtime();
    let fake = runtime.block_on(fake::start());
    let requests = || fake.log.lock().unwrap().requests.len();

    let direct_scratch = Scratch::new(agent);
    let direct = run(agent, &bin, &fake.url, &direct_scratch);
    let direct_requests = requests();
    assert_eq!(
        direct.final_text,
        fake::E2E_ANSWER,
        "{agent:?} direct: {}",
        direct.stdout
    );

    let proxied_scratch = Scratch::new(agent);
    let capture = proxied_scratch.tmp.join("capture.jsonl");
    let proxy = Proxy::start(&fake.url, &capture);
    let proxied = run(agent, &bin, &proxy.url, &proxied_scratch);
    let proxied_requests = requests() - direct_requests;
    drop(proxy);
    assert_eq!(
        proxied.final_text, direct.final_text,
        "{agent:?} through the proxy"
    );
    assert_eq!(
        proxied_requests, direct_requests,
        "{agent:?}: as many requests"
    );

    // Every exchange is in the capture, and no key.
    let recorded = std::fs::read_to_string(&capture).unwrap();
    assert_eq!(
        recorded.lines().count(),
        proxied_requests,
        "{agent:?} capture"
    );
    assert!(
        !recorded.contains("SECRET"),
        "{agent:?}: a key in the capture"
    );
    assert!(!proxied.stderr.contains("SECRET") && !proxied.stdout.contains("SECRET"));

    let report = checked(&capture);
    assert_eq!(report["problems"], 0, "{agent:?} capture: {report}");
    assert_eq!(report["files"][0]["format"], agent.format());
    let log = proxied_scratch.log(agent);
    let report = match agent {
        // Gemini CLI writes each tool response twice (in the call's
        // `result` and in a record of its own) and resumes with both, so
        // its own log is one `gemini --resume` cannot send; see
        // `gemini_cli_resumes_only_a_session_the_doctor_repaired`.
        Agent::GeminiCli => {
            let (ok, report) = check_report(&log);
            assert!(!ok, "{report}");
            assert_eq!(refused_ids(&report).len(), 3, "{report}");
            report
        }
        _ => checked(&log),
    };
    if !matches!(agent, Agent::GeminiCli) {
        assert_eq!(report["problems"], 0, "{agent:?} log: {report}");
    }
    assert_eq!(report["notes"], 0, "{agent:?} log: {report}");
    assert_eq!(
        unknown_types(agent, &log),
        Vec::<String>::new(),
        "{agent:?}"
    );

    tokens_agree(agent, &proxied, &report, &capture);
    recorded_session_runs_the_loop(agent, &capture, &proxied_scratch.tmp);
}

/// The tokens loopdbg reads from the agent's log are those the agent
/// says it used (Claude Code prints its usage) and those the provider
/// reported (the capture; Gemini CLI's router calls aside, which its log
/// does not hold).
fn tokens_agree(agent: Agent, ran: &Ran, log_report: &Value, capture: &Path) {
    let logged = &log_report["files"][0]["results"][0]["usage"]["total"];
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let from_log = (
        n(logged, "input") + n(logged, "cache_read") + n(logged, "cache_write"),
        n(logged, "output"),
    );
    assert!(
        from_log.0 > 0,
        "{agent:?}: no tokens read from the log: {log_report}"
    );
    if let Agent::ClaudeCode = agent {
        let said: Value = serde_json::from_str(&ran.stdout).unwrap();
        let u = &said["usage"];
        let total = n(u, "input_tokens")
            + n(u, "cache_read_input_tokens")
            + n(u, "cache_creation_input_tokens");
        assert_eq!(
            from_log,
            (total, n(u, "output_tokens")),
            "Claude Code said {u}"
        );
    }
    let mut sent = (0, 0);
    for line in std::fs::read_to_string(capture).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["path"]
            .as_str()
            .is_some_and(|p| p.contains(":generateContent"))
        {
            continue;
        }
        if let Some((usage, _)) = loopdbg_read::capture::usage_of(&v) {
            sent.0 += usage.prompt();
            sent.1 += usage.output;
        }
    }
    assert_eq!(from_log, sent, "{agent:?}: log vs capture");
}

/// `record` turns the capture into a session whose run makes the same
/// calls; `--extract first` shows the parallel call left unanswered.
fn recorded_session_runs_the_loop(agent: Agent, capture: &Path, tmp: &Path) {
    let session = tmp.join("session.json");
    let (ok, text) = loopdbg(&[
        "record".as_ref(),
        capture.as_os_str(),
        "-o".as_ref(),
        session.as_os_str(),
    ]);
    assert!(ok, "{agent:?} record: {text}");
    let (ok, run) = loopdbg(&["run".as_ref(), session.as_os_str()]);
    assert!(ok, "{agent:?} run: {run}");
    assert!(
        run.contains(&format!("final text: {}", fake::E2E_ANSWER)),
        "{agent:?}: {run}"
    );
    assert!(run.contains("unpaired tool_use: none"), "{agent:?}: {run}");
    let (_, first) = loopdbg(&[
        "run".as_ref(),
        session.as_os_str(),
        "--extract".as_ref(),
        "first".as_ref(),
    ]);
    assert!(
        first.contains("e2e_3"),
        "{agent:?} --extract first: {first}"
    );
    assert!(
        !first.contains("unpaired tool_use: none"),
        "{agent:?}: {first}"
    );
}

#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_end_to_end() {
    end_to_end(Agent::ClaudeCode);
}

/// A real Claude Code with `loopdbg mcp-server` in its `--mcp-config`:
/// the scripted model calls the server's `check_request` on a body whose
/// second parallel call has no result, Claude Code runs the tool through
/// the server, and the result it sends back holds Anthropic's 400 for
/// that id, which the model then repeats as its answer.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_calls_loopdbg_mcp_server_and_gets_the_providers_400() {
    let agent = Agent::ClaudeCode;
    let Some(bin) = installed(
        agent,
        "claude_code_calls_loopdbg_mcp_server_and_gets_the_providers_400",
    ) else {
        return;
    };
    let runtime = runtime();
    let fake = runtime.block_on(fake::start());
    let scratch = Scratch::new(agent);
    let config = scratch.tmp.join("mcp.json");
    let servers = serde_json::json!({"mcpServers": {"loopdbg": {
        "command": env!("CARGO_BIN_EXE_loopdbg"), "args": ["mcp-server"]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let prompt = format!("{}: will this request be refused?", fake::MCP_CHECK);
    let mut command = command_for(
        agent,
        &bin,
        &fake.url,
        &scratch,
        &prompt,
        &[
            "--mcp-config",
            config.to_str().unwrap(),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__loopdbg__check_request",
        ],
    );
    // Claude Code otherwise offers an MCP server's tools only through its
    // ToolSearch tool (their names listed in the system prompt), which the
    // scripted model does not drive.
    command.env("ENABLE_TOOL_SEARCH", "false");
    let (ok, ran) = finish(agent, command.spawn().unwrap());
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(
        ran.final_text, "loopdbg said: request:1 (anthropic, 3 messages): 1 problem(s)",
        "{}",
        ran.stdout
    );
    // What Claude Code sent back as the tool's result: the finding, the
    // id and the provider's words.
    let requests = fake.log.lock().unwrap().requests.clone();
    let offered = requests[0]["tools"].as_array().unwrap();
    assert!(
        offered
            .iter()
            .any(|t| t["name"] == "mcp__loopdbg__check_request"),
        "the server's tools were not offered"
    );
    let result = requests
        .iter()
        .filter_map(|r| r["messages"].as_array())
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_mcp_check")
        .expect("the tool's result was sent back")
        .to_string();
    assert!(
        result.contains("unanswered_call (400)  [toolu_fx]"),
        "{result}"
    );
    assert!(
        result.contains("Each `tool_use` block must have a corresponding `tool_result` block"),
        "{result}"
    );
}

#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn codex_end_to_end() {
    end_to_end(Agent::Codex);
}

#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_end_to_end() {
    end_to_end(Agent::GeminiCli);
}

/// Where Claude Code writes the log of session `id` run in `work`: its
/// folder is the working folder with every other character than a letter
/// or a digit made `-`.
fn claude_code_log(scratch: &Scratch, id: &str) -> PathBuf {
    let folder: String = scratch
        .work
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    scratch
        .home
        .join(".claude/projects")
        .join(folder)
        .join(format!("{id}.jsonl"))
}

/// Where a journey starts: the agent's commands, the fake on a runtime of
/// its own, and a scratch home.
struct Stage {
    bin: PathBuf,
    fake: fake::Fake,
    _runtime: tokio::runtime::Runtime,
    scratch: Scratch,
}

impl Stage {
    /// A stage whose agent has run the fake's script once, and the log it
    /// wrote.
    fn after_a_run(agent: Agent, test: &str) -> Option<(Stage, PathBuf)> {
        let stage = Stage::start(agent, test)?;
        run(agent, &stage.bin, &stage.fake.url, &stage.scratch);
        let log = stage.scratch.log(agent);
        Some((stage, log))
    }

    /// `None` (said, and counted as skipped) when `agent` is not installed.
    fn start(agent: Agent, test: &str) -> Option<Stage> {
        let bin = installed(agent, test)?;
        let runtime = runtime();
        let fake = runtime.block_on(fake::start());
        Some(Stage {
            bin,
            fake,
            _runtime: runtime,
            scratch: Scratch::new(agent),
        })
    }
}

/// A Claude Code journey: its stage, and the session id its first run is
/// given (so the log's name is known before it is written).
struct ClaudeJourney {
    stage: Stage,
    id: &'static str,
}

impl ClaudeJourney {
    fn start(test: &str, id: &'static str) -> Option<ClaudeJourney> {
        let stage = Stage::start(Agent::ClaudeCode, test)?;
        Some(ClaudeJourney { stage, id })
    }

    /// A journey whose first run made the model name a call with an id
    /// Anthropic refuses (the fake's break script), and the log it left.
    fn broken(test: &str, id: &'static str) -> Option<(ClaudeJourney, PathBuf)> {
        let journey = ClaudeJourney::start(test, id)?;
        let _ = journey.first_run(&format!("{}: run the three commands", fake::E2E_BREAK));
        let log = journey.log();
        Some((journey, log))
    }

    /// Claude Code run on `prompt`, starting the session: whether it
    /// succeeded, and what it printed.
    fn first_run(&self, prompt: &str) -> (bool, Ran) {
        let (bin, url) = (&self.stage.bin, &self.stage.fake.url);
        run_with(
            Agent::ClaudeCode,
            bin,
            url,
            &self.stage.scratch,
            prompt,
            &["--session-id", self.id],
        )
    }

    /// The session's log.
    fn log(&self) -> PathBuf {
        claude_code_log(&self.stage.scratch, self.id)
    }

    /// Claude Code resumed through the proxy with `extra` after
    /// `--resume ID`.
    fn resume(&self, extra: &[&str]) -> (bool, Ran, Vec<Value>) {
        let args: Vec<&str> = ["--resume", self.id].iter().chain(extra).copied().collect();
        resume_through_proxy(
            Agent::ClaudeCode,
            &self.stage.bin,
            &self.stage.fake.url,
            &self.stage.scratch,
            &args,
        )
    }
}

/// `loopdbg LOG --follow`, started before Claude Code has written a line,
/// shows the loop the agent runs, and raises the alarm when the fake makes
/// the agent's history break (a call id the provider refuses: Claude Code
/// runs the call, sends its result, gets the 400 and stops).
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn follow_shows_claude_code_as_it_writes_and_alarms_when_its_history_breaks() {
    let agent = Agent::ClaudeCode;
    let Some(bin) = installed(agent, "agents::follow") else {
        return;
    };
    let runtime = runtime();
    let fake = runtime.block_on(fake::start());
    let cases = [
        (PROMPT, "7d0c0ffe-0000-4000-8000-00000000e2e1", true),
        (
            "loopdbg e2e break: run the commands",
            "7d0c0ffe-0000-4000-8000-00000000e2e2",
            false,
        ),
    ];
    for (prompt, id, clean) in cases {
        let scratch = Scratch::new(agent);
        let log = claude_code_log(&scratch, id);
        let (child, mut writer, mut screen) =
            crate::common::pty::spawn(&[log.to_str().unwrap(), "--follow"]);
        screen.wait_text("waiting for");
        let (ok, ran) = run_with(
            agent,
            &bin,
            &fake.url,
            &scratch,
            prompt,
            &["--session-id", id],
        );
        assert_eq!(ok, clean, "{}\n{}", ran.stdout, ran.stderr);
        if clean {
            let shown = screen.wait_text("toolu_e2e_3");
            assert!(shown.contains("LIVE following"), "{shown}");
            assert!(!shown.contains("ALARM"), "{shown}");
        } else {
            let shown = screen.wait_text("ALARM");
            assert!(shown.contains("toolu_e2e.1"), "{shown}");
        }
        crate::common::pty::quit(child, &mut writer, &mut screen);
    }
}

/// The user's journey on a real break: `loopdbg LOG --follow` watches
/// Claude Code's session as the fake makes its history break (a call id
/// the provider refuses), raises the alarm, and, once `loopdbg doctor
/// --write` has repaired the log in place, says the alarm is resolved;
/// `check` agrees.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn follow_sees_a_real_break_alarmed_then_repaired() {
    let Some(journey) = ClaudeJourney::start(
        "agents::follow_repair",
        "7d0c0ffe-0000-4000-8000-00000000e2ea",
    ) else {
        return;
    };
    let log = journey.log();
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[log.to_str().unwrap(), "--follow"]);
    screen.wait_text("waiting for");
    let (ok, ran) = journey.first_run("loopdbg e2e break: run the commands");
    assert!(!ok, "{}\n{}", ran.stdout, ran.stderr);
    let alarmed = screen.wait_text("ALARM");
    assert!(alarmed.contains("toolu_e2e.1"), "{alarmed}");
    let before = std::fs::read_to_string(&log).unwrap();
    doctor_writes(&log, &before, "rename the call id toolu_e2e.1");
    let resolved = screen.wait_text("resolved: this conversation holds nothing");
    assert!(!resolved.contains("» ALARM"), "{resolved}");
    crate::common::pty::quit(child, &mut writer, &mut screen);
    let (ok, said) = loopdbg(&["check".as_ref(), log.as_os_str()]);
    assert!(ok, "check agrees with the doctor: {said}");
}

/// The end of a week-long log: a real Claude Code session whose history
/// breaks (the fake makes it call with an id the provider refuses) is
/// written at the end of a log past the preview's threshold while it is
/// followed: the alarm names the real call id (said by the newest part's
/// judgement or the whole log's, whichever comes first).
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn follow_alarms_on_a_real_break_at_the_end_of_a_long_log() {
    let agent = Agent::ClaudeCode;
    let Some(stage) = Stage::start(agent, "agents::follow_long") else {
        return;
    };
    let (id, prompt) = (
        "7d0c0ffe-0000-4000-8000-00000000e2e9",
        "loopdbg e2e break: run the commands",
    );
    let (bin, url, scratch) = (&stage.bin, &stage.fake.url, &stage.scratch);
    let (ok, ran) = run_with(agent, bin, url, scratch, prompt, &["--session-id", id]);
    assert!(!ok, "{}\n{}", ran.stdout, ran.stderr);
    let session = std::fs::read(claude_code_log(scratch, id)).unwrap();
    let (_dir, long) = crate::preview::large_log();
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[long.to_str().unwrap(), "--follow"]);
    screen.wait_for("the whole log", |s| s.contains("round 4800/4800"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&long)
        .unwrap();
    std::io::Write::write_all(&mut file, &session).unwrap();
    std::io::Write::flush(&mut file).unwrap();
    let alarmed = screen.wait_for("the alarm on the refused id", |s| {
        s.find("» ALARM").is_some_and(|at| {
            s[at..]
                .chars()
                .take(600)
                .collect::<String>()
                .contains("toolu_e2e.1")
        })
    });
    assert!(alarmed.contains("LIVE following"), "{alarmed}");
    crate::common::pty::quit(child, &mut writer, &mut screen);
}

/// A Claude Code session whose parallel call lost its `tool_result` event:
/// its own resume, tried first, is accepted (Claude Code 2.1.332 leaves
/// the orphan call out); then `loopdbg doctor --write` repairs the file as
/// that resume left it, and Claude Code resumes it through the proxy: the
/// history it sends carries the doctor's result, and the provider accepts
/// it.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_resumes_a_session_the_doctor_repaired() {
    let Some(journey) =
        ClaudeJourney::start("agents::doctor", "7d0c0ffe-0000-4000-8000-00000000e2e3")
    else {
        return;
    };
    let (ok, ran) = journey.first_run(PROMPT);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let log = journey.log();
    let text = std::fs::read_to_string(&log).unwrap();
    // The parallel results are written as the calls finish, and the next
    // event hangs from the last one written: the other one is dropped, as
    // a lost result leaves the chain whole (dropping the link itself cuts
    // the chain, which reads as a log cut at its head).
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result_of = |e: &Value| -> Option<String> {
        let block = e["message"]["content"].as_array()?.first()?;
        if block["type"] != "tool_result" {
            return None;
        }
        block["tool_use_id"].as_str().map(str::to_string)
    };
    let is_parent = |e: &Value| events.iter().any(|o| o["parentUuid"] == e["uuid"]);
    let (dropped, dropped_id) = events
        .iter()
        .enumerate()
        .find_map(|(k, e)| {
            let id = result_of(e)?;
            (id != "toolu_e2e_1" && !is_parent(e)).then_some((k, id))
        })
        .expect("a parallel result no event hangs from");
    let broken: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(k, _)| *k != dropped)
        .map(|(_, l)| l)
        .collect();
    std::fs::write(&log, broken.join("\n") + "\n").unwrap();
    // The user tries Claude Code's own resume first: accepted, the call
    // left out of what it sends (the model never sees it was made).
    let (ok, _, exchanges) = journey.resume(&[]);
    assert_accepted(ok, &exchanges);
    let (_, sent_ids) = sent(&exchanges[0]);
    assert!(
        !sent_ids.iter().any(|i| i.ends_with(dropped_id.as_str())),
        "{sent_ids:?}"
    );
    let (ok, said) = loopdbg(&[
        "doctor".as_ref(),
        "--write".as_ref(),
        "--force".as_ref(),
        log.as_os_str(),
    ]);
    assert!(ok, "{said}");
    assert!(
        said.contains(&format!("add the missing tool_result for {dropped_id}")),
        "{said}"
    );

    let (ok, ran, exchanges) = journey.resume(&[]);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let exchange = exchanges.last().unwrap();
    assert_eq!(exchange["status"], 200, "{exchange}");
    let results: Vec<&Value> = exchange["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let answered: Vec<&str> = results
        .iter()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert!(answered.contains(&dropped_id.as_str()), "{answered:?}");
    let placeholder = results
        .iter()
        .find(|b| b["tool_use_id"] == dropped_id.as_str())
        .unwrap();
    assert!(
        placeholder.to_string().contains("[loopdbg]"),
        "the doctor's result was sent: {placeholder}"
    );
}

/// Resumes a session through the proxy (`extra` names it the agent's way);
/// whether the agent succeeded, and the exchanges the proxy recorded.
fn resume_through_proxy(
    agent: Agent,
    bin: &Path,
    upstream: &str,
    scratch: &Scratch,
    extra: &[&str],
) -> (bool, Ran, Vec<Value>) {
    let capture = scratch.tmp.join("resume.jsonl");
    let _ = std::fs::remove_file(&capture);
    let proxy = Proxy::start(upstream, &capture);
    let (ok, ran) = run_with(agent, bin, &proxy.url, scratch, "and now?", extra);
    drop(proxy);
    let exchanges = std::fs::read_to_string(&capture)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (ok, ran, exchanges)
}

/// `loopdbg hooks install AGENT --settings SETTINGS`, which must succeed.
fn install_hooks(agent: &str, settings: &Path) {
    let (ok, said) = loopdbg(&[
        "hooks".as_ref(),
        "install".as_ref(),
        agent.as_ref(),
        "--settings".as_ref(),
        settings.as_os_str(),
    ]);
    assert!(ok, "{said}");
}

/// `gemini --resume latest` through the proxy, the session's `log` holding
/// `text` and nothing else in its folder (a resume may start a file of its
/// own: only the log is kept).
fn gemini_resume_from(stage: &Stage, log: &Path, text: &str) -> (bool, Ran, Vec<Value>) {
    let chats = log.parent().unwrap();
    for entry in std::fs::read_dir(chats).unwrap().flatten() {
        if entry.path() != log {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    std::fs::write(log, text).unwrap();
    let (bin, url, scratch) = (&stage.bin, &stage.fake.url, &stage.scratch);
    resume_through_proxy(Agent::GeminiCli, bin, url, scratch, &["--resume", "latest"])
}

/// `loopdbg doctor --write --force FILE`: it must end clean, and its
/// backup must hold `before` byte for byte.
fn doctor_writes(file: &Path, before: &str, says: &str) {
    let (ok, said) = loopdbg(&[
        "doctor".as_ref(),
        "--write".as_ref(),
        "--force".as_ref(),
        file.as_os_str(),
    ]);
    assert!(ok, "{said}");
    assert!(said.contains(says), "{said}");
    let backup = PathBuf::from(format!("{}.loopdbg-bak", file.display()));
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), before);
    std::fs::remove_file(backup).unwrap();
    // Clean, but for the refusals the log keeps: what was refused before
    // the repair stays in the session's history.
    let (_, report) = check_report(file);
    let left: Vec<&Value> = report["files"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["findings"].as_array().into_iter().flatten())
        .filter(|f| f["kind"] != "refused_request")
        .collect();
    assert!(left.is_empty(), "{report}");
}

/// The `output`s a Responses request sends for `call_id`.
fn outputs_for<'a>(exchange: &'a Value, call_id: &str) -> Vec<&'a str> {
    exchange["request"]["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
        .filter_map(|i| i["output"].as_str())
        .collect()
}

/// Codex repairs a lost output by itself on resume (it sends `aborted` for
/// a call that has none), so the broken rollout resumes too; the doctor
/// writes that same record into the rollout, so the file says what Codex
/// sends and checks clean, and the resumed request carries exactly one
/// output for the call.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn codex_resumes_a_session_the_doctor_repaired() {
    let agent = Agent::Codex;
    let Some(stage) = Stage::start(agent, "agents::codex_doctor") else {
        return;
    };
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    run(agent, bin, &fake.url, scratch);
    let log = scratch.log(agent);
    let stem = log.file_stem().unwrap().to_str().unwrap();
    let session = &stem[stem.len() - 36..];
    let broken: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            !(v["payload"]["type"] == "function_call_output"
                && v["payload"]["call_id"] == "call_e2e_3")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&log, &broken).unwrap();

    // Unrepaired: Codex answers the call with `aborted` itself.
    let (ok, ran, exchanges) =
        resume_through_proxy(agent, bin, &fake.url, scratch, &["resume", session]);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let first = &exchanges[0];
    assert_eq!(first["status"], 200, "{first}");
    assert_eq!(outputs_for(first, "call_e2e_3"), ["aborted"]);

    std::fs::write(&log, &broken).unwrap();
    doctor_writes(&log, &broken, "add the `aborted` function_call_output");
    let (ok, ran, exchanges) =
        resume_through_proxy(agent, bin, &fake.url, scratch, &["resume", session]);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let first = &exchanges[0];
    assert_eq!(first["status"], 200, "{first}");
    assert_eq!(outputs_for(first, "call_e2e_3"), ["aborted"]);
    assert_eq!(outputs_for(first, "call_e2e_2").len(), 1);
}

/// Gemini CLI resumes a session by sending its log's history as it stands,
/// and the log of its own run holds each tool response twice (the call's
/// `result`, and a response record it writes after running the tools): so
/// `gemini --resume` gets Gemini's 400 on any session that ran a tool. The
/// doctor drops the second copies and it resumes. A call whose result was
/// never written (the CLI killed while the tool ran) is the other shape:
/// the doctor gives it an error result, and it resumes.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_resumes_only_a_session_the_doctor_repaired() {
    let agent = Agent::GeminiCli;
    let Some(stage) = Stage::start(agent, "agents::gemini_doctor") else {
        return;
    };
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    run(agent, bin, &fake.url, scratch);
    let log = scratch.log(agent);
    let written = std::fs::read_to_string(&log).unwrap();
    let resume = |text: &str| gemini_resume_from(&stage, &log, text);

    let (ok, _, exchanges) = resume(&written);
    assert!(!ok, "the unrepaired session resumed");
    let refused = exchanges.iter().find(|e| e["status"] == 400);
    let refused = refused.expect("Gemini's 400 on the unrepaired session");
    assert!(
        refused
            .to_string()
            .contains("number of function response parts"),
        "{refused}"
    );

    std::fs::write(&log, &written).unwrap();
    doctor_writes(&log, &written, "drop the second copy of the response");
    let doctored = std::fs::read_to_string(&log).unwrap();
    let (ok, ran, exchanges) = resume(&doctored);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(!exchanges.is_empty() && exchanges.iter().all(|e| e["status"] == 200));

    // Killed while the third command ran: no `result`, no response record.
    let killed: String = doctored
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(calls) = v["toolCalls"].as_array_mut() {
                for call in calls
                    .iter_mut()
                    .filter(|c| c["id"].as_str().is_some_and(|i| i.ends_with("e2e_3")))
                {
                    call.as_object_mut().unwrap().remove("result");
                    call["status"] = Value::from("executing");
                }
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&log, &killed).unwrap();
    let (ok, report) = check_report(&log);
    assert!(!ok, "{report}");
    doctor_writes(&log, &killed, "the error result it never got");
    let (ok, ran, exchanges) = resume(&std::fs::read_to_string(&log).unwrap());
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(!exchanges.is_empty() && exchanges.iter().all(|e| e["status"] == 200));
}

/// The model named a call with an id Anthropic refuses: Claude Code
/// (2.1.332) sends it on every resume and gets the 400. The doctor renames
/// it in the call and its result, and the session resumes.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_resumes_a_session_with_a_refused_id_once_the_doctor_renamed_it() {
    let id = "7d0c0ffe-0000-4000-8000-00000000e2e4";
    let Some((journey, log)) = ClaudeJourney::broken("agents::doctor_invalid_id", id) else {
        return;
    };
    let broken = std::fs::read_to_string(&log).unwrap();
    assert!(broken.contains("toolu_e2e.1"), "{broken}");

    // Its own resume, tried first (twice, as a user would): the 400 each
    // time, and each try adds to the log; the doctor repairs it as the
    // tries left it.
    for _ in 0..2 {
        let (_, _, exchanges) = journey.resume(&[]);
        let last = exchanges.last().expect("a request");
        assert_eq!(last["status"], 400, "{last}");
    }
    let tried = std::fs::read_to_string(&log).unwrap();
    doctor_writes(
        &log,
        &tried,
        "rename the call id toolu_e2e.1 to toolu_e2e_1",
    );
    let (ok, ran, exchanges) = journey.resume(&[]);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(!exchanges.is_empty() && exchanges.iter().all(|e| e["status"] == 200));
}

/// `loopdbg hooks install claude-code`, then the journey a user with a
/// broken session takes: the resume's SessionStart hook says, before the
/// first request, that the provider will refuse it and which doctor
/// command repairs it; the request is refused (as the hook said); the
/// doctor repairs; the next resume's hook says nothing and the request is
/// taken. The hook runs in Claude Code (2.1.332) itself, through the
/// settings install wrote; `--include-hook-events` shows what it printed.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_hook_warns_of_the_400_before_it_comes_and_the_doctor_silences_it() {
    let id = "7d0c0ffe-0000-4000-8000-00000000e2e9";
    let Some((journey, log)) = ClaudeJourney::broken("agents::hooks", id) else {
        return;
    };
    install_hooks(
        "claude-code",
        &journey.stage.scratch.home.join(".claude/settings.json"),
    );
    let events = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
    ];
    let hook_said = |ran: &Ran| -> Vec<String> {
        ran.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["subtype"] == "hook_response" && e["hook_event"] == "SessionStart")
            .map(|e| {
                format!(
                    "{}{}",
                    e["stdout"].as_str().unwrap_or(""),
                    e["output"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    let (_, ran, exchanges) = journey.resume(&events);
    let warned = hook_said(&ran);
    assert!(
        warned.iter().any(|w| w
            .contains("loopdbg: The provider will refuse this session's next request (400: ")
            && w.contains("loopdbg doctor --write ")),
        "the hook's warning: {warned:?}\n{}\n{}",
        ran.stdout,
        ran.stderr
    );
    let last = exchanges.last().expect("a request");
    assert_eq!(last["status"], 400, "as the hook said: {last}");
    let tried = std::fs::read_to_string(&log).unwrap();
    doctor_writes(
        &log,
        &tried,
        "rename the call id toolu_e2e.1 to toolu_e2e_1",
    );
    let (ok, ran, exchanges) = journey.resume(&events);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let said = hook_said(&ran);
    assert!(!said.is_empty(), "the hook ran: {}", ran.stdout);
    assert!(said.iter().all(|w| !w.contains("loopdbg:")), "{said:?}");
    assert!(!exchanges.is_empty() && exchanges.iter().all(|e| e["status"] == 200));
}

/// `loopdbg hooks install gemini-cli`, then a session Gemini CLI cannot
/// resume as it wrote it (every response recorded twice): its
/// SessionStart hook says so on standard error before the request the
/// fake refuses; after `doctor --write` the hook is silent and the resume
/// is answered.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_hook_warns_of_the_400_before_it_comes_and_the_doctor_silences_it() {
    let Some((stage, log)) = Stage::after_a_run(Agent::GeminiCli, "agents::gemini_hooks") else {
        return;
    };
    install_hooks(
        "gemini-cli",
        &stage.scratch.home.join(".gemini/settings.json"),
    );
    let written = std::fs::read_to_string(&log).unwrap();
    let resume = |text: &str| gemini_resume_from(&stage, &log, text);
    let (ok, ran, exchanges) = resume(&written);
    assert!(!ok, "the unrepaired session resumed");
    assert!(
        ran.stderr
            .contains("loopdbg: The provider will refuse this session's next request (400: ")
            && ran.stderr.contains("loopdbg doctor --write "),
        "the hook's warning on stderr:\n{}",
        ran.stderr
    );
    assert!(
        exchanges.iter().any(|e| e["status"] == 400),
        "as the hook said"
    );
    std::fs::write(&log, &written).unwrap();
    doctor_writes(&log, &written, "drop the second copy of the response");
    let doctored = std::fs::read_to_string(&log).unwrap();
    let (ok, ran, exchanges) = resume(&doctored);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    assert!(!ran.stderr.contains("loopdbg:"), "{}", ran.stderr);
    assert!(!exchanges.is_empty() && exchanges.iter().all(|e| e["status"] == 200));
}

/// The fake's stalling script, set up in `dir`: the prompt that asks for
/// it, and its two FIFOs held open for reading and writing (so no open
/// blocks): the stalled command writes a line to `pipe`, then reads
/// `held`'s FIFO until the test lets go of it.
struct Stall {
    prompt: String,
    pipe: std::fs::File,
    held: std::fs::File,
}

impl Stall {
    fn in_folder(dir: &Path) -> Stall {
        let fifo = dir.join("stall.fifo");
        let hold = dir.join("stall.fifo.hold");
        let made = Command::new("mkfifo")
            .arg(&fifo)
            .arg(&hold)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {fifo:?}");
        let open = |path: &Path| {
            std::fs::File::options()
                .read(true)
                .write(true)
                .open(path)
                .unwrap()
        };
        Stall {
            prompt: format!(
                "{} {}: run the three commands",
                fake::E2E_STALL,
                fifo.display()
            ),
            held: open(&hold),
            pipe: open(&fifo),
        }
    }
}

/// Runs `agent` on the stalling script and kills it (SIGKILL to its
/// process group: a closed terminal, an out-of-memory kill, a reboot)
/// while the stalling command runs: the command tells the test it started
/// by writing to a FIFO, so the kill lands mid-tool every time, with no
/// sleep; closing a second FIFO then ends the command. Panics when the agent
/// never ran the command.
fn run_killed_mid_tool(agent: Agent, bin: &Path, base: &str, scratch: &Scratch, extra: &[&str]) {
    use std::io::{BufRead, Write};
    use std::os::unix::process::CommandExt;
    // opencode refuses a command that touches a folder outside its project.
    let dir = match agent {
        Agent::Opencode => &scratch.work,
        _ => &scratch.tmp,
    };
    let Stall {
        prompt,
        mut pipe,
        held,
    } = Stall::in_folder(dir);
    let mut command = command_for(agent, bin, base, scratch, &prompt, extra);
    command.process_group(0);
    let child = command.spawn().unwrap();
    let group = child.id();
    let reader = pipe.try_clone().unwrap();
    // Where the agent writes the stalled call, when the test can know:
    // the kill waits until it is there.
    let written: Vec<(PathBuf, &str)> = match agent {
        Agent::Opencode => {
            let store = scratch.home.join(".local/share/opencode");
            let needle = r#""callID":"toolu_e2e_3""#;
            vec![
                (store.join("opencode.db"), needle),
                (store.join("opencode.db-wal"), needle),
            ]
        }
        Agent::ClaudeCode => match extra {
            ["--session-id", id] => vec![(claude_code_log(scratch, id), r#""id":"toolu_e2e_3""#)],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let listener = std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(reader).read_line(&mut line);
        let started = line.contains("loopdbg-stalled");
        if started {
            wait_until_written(&written);
        }
        if started {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
        }
        started
    });
    let (_, ran) = finish(agent, child);
    let _ = pipe.write_all(b"agent gone\n");
    let killed = listener.join().unwrap();
    // The stalled command reads its FIFO until no one holds it: now.
    drop((pipe, held));
    assert!(
        killed,
        "{agent:?} never ran the stalling command:\n{}\n{}",
        ran.stdout, ran.stderr
    );
}

/// Waits until one of the files holds its text (nothing to wait for when
/// there are none). Agents write their stores behind a queue: opencode
/// 1.18.33 keeps what it writes in memory for a while (killed the moment
/// its tool starts, it leaves no session at all), Claude Code 2.1.332
/// drains its log every 100 ms (killed at once, the call may be missing),
/// neither the shape under test. Polled, with a bound: a condition, not a
/// guess at a delay.
fn wait_until_written(written: &[(PathBuf, &str)]) {
    let holds = || {
        written.is_empty()
            || written.iter().any(|(path, needle)| {
                std::fs::read(path)
                    .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            })
    };
    let deadline = std::time::Instant::now() + WATCHDOG;
    while !holds() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What one agent made of being killed mid-tool, step by step.
#[derive(Debug)]
struct Journey {
    /// `check` right after the kill: passed, and its findings' kinds.
    killed: (bool, String),
    /// The agent's own resume, tried first: succeeded, HTTP statuses.
    own_resume: (bool, Vec<u64>),
    /// `doctor --write`: succeeded, what it said.
    doctor: (bool, String),
    /// `check` after the doctor.
    doctored: (bool, String),
    /// The agent's resume after the doctor.
    resume: (bool, Vec<u64>),
}

impl Journey {
    /// The end every agent reaches: the doctor did what `doctor_says`,
    /// `check` passes, and the agent's resume is accepted.
    fn ends_resumed(&self, doctor_says: &str) {
        let (ok, said) = &self.doctor;
        assert!(*ok && said.contains(doctor_says), "{self:#?}");
        assert!(self.doctored.0, "{self:#?}");
        assert!(accepted(&self.resume), "{self:#?}");
    }
}

/// The HTTP statuses of the exchanges a proxy recorded.
fn statuses(exchanges: &[Value]) -> Vec<u64> {
    exchanges
        .iter()
        .filter_map(|e| e["status"].as_u64())
        .collect()
}

/// A resume succeeded and the provider answered every request 200.
fn assert_accepted(ok: bool, exchanges: &[Value]) {
    assert!(accepted(&(ok, statuses(exchanges))), "{exchanges:?}");
}

/// Whether a resume succeeded and the provider answered every request 200.
fn accepted((ok, statuses): &(bool, Vec<u64>)) -> bool {
    *ok && !statuses.is_empty() && statuses.iter().all(|&s| s == 200)
}

/// The most reported break: an agent interrupted while a tool runs. Run
/// as the user runs it: the agent killed mid-tool, then its own resume
/// tried first (which may add to the log); then `check`, `doctor --write`,
/// `check`, and the resume again. docs/doctor.md's table says what each
/// agent does.
fn interrupted_journey(agent: Agent) -> Option<Journey> {
    let stage = Stage::start(agent, "agents::interrupted")?;
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    let id = "7d0c0ffe-0000-4000-8000-00000000e2e4";
    let extra: &[&str] = match agent {
        Agent::ClaudeCode => &["--session-id", id],
        _ => &[],
    };
    run_killed_mid_tool(agent, bin, &fake.url, scratch, extra);
    let log = scratch.log(agent);
    // LOOPDBG_JOURNEY_DIR keeps the log as it stands after each step.
    let keep = |step: &str| {
        if let Some(dir) = std::env::var_os("LOOPDBG_JOURNEY_DIR") {
            let to = Path::new(&dir).join(format!("{agent:?}-{step}.jsonl"));
            std::fs::copy(&log, to).unwrap();
        }
    };
    let checked = || {
        let (ok, report) = check_report(&log);
        (ok, kinds(&report))
    };
    keep("1-killed");
    let killed = checked();
    let stem = log.file_stem().unwrap().to_str().unwrap().to_string();
    let resume: Vec<&str> = match agent {
        Agent::ClaudeCode => vec!["--resume", id],
        Agent::Codex => vec!["resume", &stem[stem.len() - 36..]],
        Agent::GeminiCli => vec!["--resume", "latest"],
        Agent::Opencode => unreachable!("see opencode_killed_mid_tool_resumes_by_itself"),
    };
    let (ok, _, exchanges) = resume_through_proxy(agent, bin, &fake.url, scratch, &resume);
    let own_resume = (ok, statuses(&exchanges));
    keep("2-resumed");
    let doctor = loopdbg(&[
        "doctor".as_ref(),
        "--write".as_ref(),
        "--force".as_ref(),
        log.as_os_str(),
    ]);
    keep("3-doctored");
    let doctored = checked();
    let (ok, _, exchanges) = resume_through_proxy(agent, bin, &fake.url, scratch, &resume);
    Some(Journey {
        killed,
        own_resume,
        doctor,
        doctored,
        resume: (ok, statuses(&exchanges)),
    })
}

/// Whether `kinds` (see [`kinds`]) is one or more of `kind` and nothing else.
fn only(kinds: &str, kind: &str) -> bool {
    !kinds.is_empty() && kinds.split(' ').all(|k| k == kind)
}

/// The finding kinds and severities of a check report.
fn kinds(report: &Value) -> String {
    let mut out = Vec::new();
    for file in report["files"].as_array().into_iter().flatten() {
        for r in file["results"].as_array().into_iter().flatten() {
            for f in r["findings"].as_array().into_iter().flatten() {
                out.push(format!(
                    "{}({})",
                    f["kind"].as_str().unwrap_or("?"),
                    f["severity"].as_str().unwrap_or("?")
                ));
            }
        }
    }
    out.join(" ")
}

/// Claude Code killed mid-tool: `check` notes the calls in flight; it
/// heals by itself on resume, so the doctor has nothing to do.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_killed_mid_tool_resumes_by_itself() {
    let Some(j) = interrupted_journey(Agent::ClaudeCode) else {
        return;
    };
    // Whether the other call's result was written before the kill or not,
    // the open one is in flight. Claude Code writes its log through a queue
    // drained every 100 ms (`FLUSH_INTERVAL_MS` in its bundle), so a kill
    // just after the call went out can leave the call unwritten too (seen
    // once in CI): then the log ends before it, clean.
    let in_flight = only(&j.killed.1, "unanswered_call(note)");
    let unwritten = j.killed.1.is_empty();
    assert!(j.killed.0 && (in_flight || unwritten), "{j:#?}");
    assert!(accepted(&j.own_resume), "{j:#?}");
    j.ends_resumed("nothing keeps this session from being sent");
}

/// Codex killed mid-tool: the call has no output; Codex sends `aborted`
/// for it on resume (the model gets no real result); the doctor writes
/// that record into the rollout and `check` is clean.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn codex_killed_mid_tool_resumes_by_itself_and_the_doctor_writes_the_mend() {
    let Some(j) = interrupted_journey(Agent::Codex) else {
        return;
    };
    // Killed before any result was written: calls in flight (notes); after
    // one: the other mended by Codex (a warning). Never a 400.
    let mended = only(&j.killed.1, "unanswered_call(warning)");
    let in_flight = only(&j.killed.1, "unanswered_call(note)");
    assert!(mended || in_flight, "{j:#?}");
    assert!(accepted(&j.own_resume), "{j:#?}");
    assert_eq!(j.doctored.1, "", "{j:#?}");
    j.ends_resumed("add the `aborted` function_call_output");
}

/// Gemini CLI killed mid-tool: its own resume gets Gemini's 400 (the
/// response kept twice) and rewrites the history in a `$set` with the
/// calls as `functionCall` parts; the doctor repairs that too, and the
/// session resumes.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_killed_mid_tool_fails_its_own_resume_and_resumes_once_doctored() {
    let Some(j) = interrupted_journey(Agent::GeminiCli) else {
        return;
    };
    assert_eq!(j.killed, (false, "duplicate_result(400)".into()), "{j:#?}");
    assert!(!j.own_resume.0 && j.own_resume.1.contains(&400), "{j:#?}");
    assert_eq!(j.doctored.1, "", "{j:#?}");
    j.ends_resumed("drop the second copy of the response");
}

/// Gemini CLI along the path its users take: killed while a call runs,
/// then `gemini --resume` refused twice (each failed resume rewrites the
/// history whole and leaves more copies of the responses), `check`
/// predicting the 400 the agent got after each; then one `doctor --scan
/// --write` over the home says it can be resumed (exit 0) and the resume
/// is answered; a resumed turn that runs tools breaks the file again (the
/// CLI's own doing, predicted by `check`), one more scan mends it, and
/// the resume after that is answered. (What that resume writes back may
/// hold the copies again, as every resume of a session with tool calls
/// does: seen in CI, not always.)
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_refused_twice_then_scanned_resumes_and_keeps_resuming() {
    let agent = Agent::GeminiCli;
    let Some(stage) = Stage::start(agent, "agents::gemini_twice") else {
        return;
    };
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    run_killed_mid_tool(agent, bin, &fake.url, scratch, &[]);
    refused_twice_then_scanned(&stage);
}

/// Gemini CLI as its users drive it: interactive in a terminal, two
/// parallel shell calls, Ctrl-C while one runs, quit with Ctrl-C twice;
/// then the same path as above: `gemini --resume` refused twice (`check`
/// predicting each 400), one `doctor --scan --write`, answered, and again
/// after the next turn with tools.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_cancelled_with_ctrl_c_in_its_terminal_then_scanned_resumes() {
    let agent = Agent::GeminiCli;
    let Some(stage) = Stage::start(agent, "agents::gemini_ctrl_c") else {
        return;
    };
    run_cancelled_in_a_terminal(&stage.bin, &stage.fake.url, &stage.scratch);
    let (clean, report) = check_report(&stage.scratch.log(agent));
    assert!(
        !clean && kinds(&report).contains("(400)"),
        "Gemini CLI 0.61 keeps a cancelled batch's responses twice, and check says so: {report}"
    );
    refused_twice_then_scanned(&stage);
}

/// Starts interactive Gemini CLI on the stalling script in a 100×30
/// terminal, presses Ctrl-C while the stalled call runs (waiting for the
/// screen to say so, never sleeping), then Ctrl-C twice to quit, and
/// waits for it to end.
fn run_cancelled_in_a_terminal(bin: &Path, base: &str, scratch: &Scratch) {
    use crate::common::pty::{PATIENCE, pty_screen};
    use std::io::{BufRead, Write};
    let Stall { prompt, pipe, held } = Stall::in_folder(&scratch.tmp);
    let (started, ran) = mpsc::channel();
    let reader = pipe.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(reader).read_line(&mut line);
        let _ = started.send(line);
    });
    let (pair, mut screen) = pty_screen(100, 30);
    let mut command = portable_pty::CommandBuilder::new(bin.join("gemini"));
    command.cwd(&scratch.work);
    command.env_clear();
    command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command.env("HOME", &scratch.home);
    command.env("TMPDIR", &scratch.tmp);
    command.env("TERM", "xterm-256color");
    command.env("GEMINI_API_KEY", KEY);
    command.env("GOOGLE_GEMINI_BASE_URL", base);
    command.args(["--yolo", "-i", &prompt]);
    let mut child = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    let mut keys = pair.master.take_writer().unwrap();
    let line = ran.recv_timeout(WATCHDOG).unwrap_or_default();
    assert!(
        line.contains("loopdbg-stalled"),
        "Gemini CLI never ran the stalling command; screen:\n{}",
        screen.parser.screen().contents()
    );
    screen.wait_text("esc to cancel");
    keys.write_all(b"\x03").unwrap();
    screen.wait_for("the running call cancelled", |s| {
        !s.contains("esc to cancel") && s.contains("Type your message")
    });
    keys.write_all(b"\x03").unwrap();
    screen.wait_text("Press Ctrl+C again to exit");
    keys.write_all(b"\x03").unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if let Ok(bytes) = screen.output.recv_timeout(Duration::from_millis(200)) {
            screen.parser.process(&bytes);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Gemini CLI did not quit on Ctrl-C twice; screen:\n{}",
            screen.parser.screen().contents()
        );
    }
    // The stalled command reads its FIFO until no one holds it: now.
    drop((pipe, held, keys, pair.master));
}

/// From a Gemini CLI session whose resume breaks: `gemini --resume`
/// refused twice, `check` predicting the 400 after each; one `doctor
/// --scan --write` says it can be resumed and the resume is answered; a
/// resumed turn that runs tools (which may break the file again, the
/// CLI's doing, said by `check`), one more scan, answered again.
fn refused_twice_then_scanned(stage: &Stage) {
    let agent = Agent::GeminiCli;
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    let log = scratch.log(agent);
    let resume = ["--resume", "latest"];
    for attempt in 1..=2 {
        let (ok, _, exchanges) = resume_through_proxy(agent, bin, &fake.url, scratch, &resume);
        assert!(
            !ok && statuses(&exchanges).contains(&400),
            "resume {attempt} was refused: {exchanges:?}"
        );
        let (clean, report) = check_report(&log);
        let said = kinds(&report);
        assert!(
            !clean && said.contains("(400)"),
            "after refused resume {attempt}, check predicts the 400 the agent got: {said}"
        );
    }
    let scan = |write: bool| {
        let mut args = vec!["doctor", "--scan"];
        if write {
            args.extend(["--write", "--force"]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &scratch.home)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, said) = scan(true);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("checked again: it can be resumed"), "{said}");
    let (ok, _, exchanges) = resume_through_proxy(agent, bin, &fake.url, scratch, &resume);
    assert_accepted(ok, &exchanges);
    // A resumed turn that runs tools. Gemini CLI (0.61) sends the new
    // calls' responses twice within a resumed session (each call's
    // `result` and the `_response` record it writes), so the request after
    // them is refused: the agent's doing, which `check` predicts from the
    // file. A build that fixes it runs the turn through.
    let (ok, ran) = run_with(agent, bin, &fake.url, scratch, PROMPT, &resume);
    let (clean, report) = check_report(&log);
    let said = kinds(&report);
    assert!(
        ok || (!clean && said.contains("duplicate_result(400)")),
        "the resumed turn with tools failed and check does not say why: {said}\n{}",
        ran.stderr
    );
    // Whatever that turn left, one scan makes it resumable again.
    let (code, said) = scan(true);
    assert_eq!(code, Some(0), "{said}");
    let (ok, _, exchanges) = resume_through_proxy(agent, bin, &fake.url, scratch, &resume);
    assert_accepted(ok, &exchanges);
}

/// The proxy's repair mends what Gemini CLI actually sends: a session
/// whose resume Gemini refuses (each response sent twice) resumes through
/// `loopdbg proxy --on-invalid repair=synthesize` (which drops the copies)
/// and through `repair=strip`, the file left as it was.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn gemini_cli_resumes_through_the_repairing_proxy() {
    let agent = Agent::GeminiCli;
    let Some(stage) = Stage::start(agent, "agents::gemini_proxy_repair") else {
        return;
    };
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    let (ok, ran) = run_with(agent, bin, &fake.url, scratch, PROMPT, &[]);
    assert!(ok, "{}", ran.stderr);
    let log = scratch.log(agent);
    let (clean, report) = check_report(&log);
    assert!(
        !clean,
        "a Gemini CLI session with tool calls resumes refused: {report}"
    );
    for how in ["repair=synthesize", "repair=strip"] {
        let before = std::fs::read_to_string(&log).unwrap();
        let capture = scratch.tmp.join(format!("{how}.jsonl"));
        let proxy = Proxy::start_with(&fake.url, &capture, &["--on-invalid", how]);
        let (ok, ran) = run_with(
            agent,
            bin,
            &proxy.url,
            scratch,
            "and now?",
            &["--resume", "latest"],
        );
        drop(proxy);
        let exchanges: Vec<Value> = std::fs::read_to_string(&capture)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(ok, "{how}: {}\n{exchanges:?}", ran.stderr);
        assert_accepted(ok, &exchanges);
        // The proxy mends the request, not the file: restore it for the
        // next way (a resume appends the new turn).
        std::fs::write(&log, before).unwrap();
    }
}

/// The calls and results of `messages` (`use:ID`, `result:ID`), sorted:
/// an agent may order parallel results either way.
fn pairing_ids<'a>(blocks: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut ids: Vec<String> = blocks.map(|(kind, id)| format!("{kind}:{id}")).collect();
    ids.sort();
    ids
}

/// What loopdbg reads of a Claude Code log as the conversation the next
/// resume sends: its first message's text, and its calls and results.
fn predicted(log: &Path) -> (String, Vec<String>) {
    use loopdbg_engine::message::Block;
    let mut reader =
        loopdbg_read::Log::new(loopdbg_read::Source::Agent(loopdbg_read::Agent::ClaudeCode))
            .unwrap();
    for (n, line) in std::fs::read_to_string(log).unwrap().lines().enumerate() {
        if !line.trim().is_empty() {
            reader
                .push_owned(n + 1, serde_json::from_str(line).unwrap())
                .unwrap();
        }
    }
    let conversations = reader.finish().unwrap();
    let live = conversations.last().expect("a conversation");
    let first = live.messages.first().map_or(String::new(), |m| {
        m.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    });
    let blocks = live.messages.iter().flat_map(|m| &m.content);
    let ids = pairing_ids(blocks.filter_map(|b| match b {
        Block::ToolUse { id, .. } => Some(("use", &**id)),
        Block::ToolResult { tool_use_id, .. } => Some(("result", &**tool_use_id)),
        Block::Text { .. } => None,
    }));
    (first, ids)
}

/// What an Anthropic request sent: its first message's text, and the
/// calls and results of the history before the newest user message.
fn sent(exchange: &Value) -> (String, Vec<String>) {
    let messages = exchange["request"]["messages"].as_array().unwrap();
    let blocks = |m: &'_ Value| {
        m["content"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![serde_json::json!({"type": "text", "text": m["content"]})])
    };
    let first = blocks(&messages[0])
        .iter()
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join(" ");
    let all: Vec<Value> = messages.iter().flat_map(blocks).collect();
    let ids = pairing_ids(all.iter().filter_map(|b| match b["type"].as_str() {
        Some("tool_use") => Some(("use", b["id"].as_str()?)),
        Some("tool_result") => Some(("result", b["tool_use_id"].as_str()?)),
        _ => None,
    }));
    (first, ids)
}

/// `doctor FILE` (no write) on a log the agent resumes as it stands.
fn doctor_has_nothing_to_do(log: &Path) {
    let (ok, said) = loopdbg(&["doctor".as_ref(), log.as_os_str()]);
    assert!(
        ok && said.contains("nothing keeps this session from being sent"),
        "{said}"
    );
}

/// Claude Code killed mid-tool, then compacted (`claude -p /compact
/// --resume ID`, as a user shrinks a session before going on), then
/// resumed. Claude Code 2.1 closes the open call, summarises, and keeps
/// its last message after the summary (`compactMetadata.preservedSegment`):
/// the next request is the summary, that message and the new prompt.
/// `check` reads the log as that conversation (it used to read the
/// history before the compaction as the live one and the summary as an
/// abandoned branch), predicts what the resume sends, and finds nothing
/// to repair; the resume is accepted.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_killed_then_compacted_resumes_from_its_summary() {
    let id = "7d0c0ffe-0000-4000-8000-00000000e2e5";
    let Some(journey) = ClaudeJourney::start("agents::compacted", id) else {
        return;
    };
    let (agent, bin, url) = (
        Agent::ClaudeCode,
        &journey.stage.bin,
        &journey.stage.fake.url,
    );
    run_killed_mid_tool(
        agent,
        bin,
        url,
        &journey.stage.scratch,
        &["--session-id", id],
    );
    let compact = run_with(
        agent,
        bin,
        url,
        &journey.stage.scratch,
        "/compact",
        &["--resume", id],
    );
    assert!(
        compact.0,
        "/compact: {}\n{}",
        compact.1.stdout, compact.1.stderr
    );
    let log = journey.log();
    let (ok, report) = check_report(&log);
    assert!(ok && kinds(&report).is_empty(), "{report}");
    let (first, ids) = predicted(&log);
    assert!(
        first.starts_with("This session is being continued"),
        "{first}"
    );
    doctor_has_nothing_to_do(&log);
    let (ok, _, exchanges) = journey.resume(&[]);
    assert_accepted(ok, &exchanges);
    let (sent_first, sent_ids) = sent(&exchanges[0]);
    assert!(
        sent_first.starts_with("This session is being continued"),
        "{sent_first}"
    );
    assert_eq!(ids, sent_ids, "loopdbg's reading vs what Claude Code sent");
    let (ok, report) = check_report(&log);
    assert!(ok && kinds(&report).is_empty(), "{report}");
}

/// Claude Code rewound (`--resume-session-at UUID`, the rewind its SDK
/// and `/rewind` use) to the first of two parallel results, then a new
/// prompt: Claude Code recovers the sibling result and sends both, so
/// the history is whole; the answer left behind is a branch (a note).
/// `check` predicts the calls and results it sends; a plain resume after
/// it is accepted too.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn claude_code_rewound_between_parallel_results_resumes_whole() {
    let id = "7d0c0ffe-0000-4000-8000-00000000e2e6";
    let Some(journey) = ClaudeJourney::start("agents::rewound", id) else {
        return;
    };
    let (ok, ran) = journey.first_run(PROMPT);
    assert!(ok, "{}\n{}", ran.stdout, ran.stderr);
    let log = journey.log();
    let text = std::fs::read_to_string(&log).unwrap();
    let at = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "user" && e["message"]["content"][0]["tool_use_id"] == "toolu_e2e_2")
        .and_then(|e| e["uuid"].as_str().map(str::to_string))
        .expect("the event of toolu_e2e_2's result");
    let (ok, _, exchanges) = journey.resume(&["--resume-session-at", &at]);
    assert_accepted(ok, &exchanges);
    let (ok, report) = check_report(&log);
    assert!(ok && only(&kinds(&report), "off_branch(note)"), "{report}");
    let (_, ids) = predicted(&log);
    let (ok, _, exchanges) = journey.resume(&[]);
    assert_accepted(ok, &exchanges);
    assert_eq!(
        ids,
        sent(&exchanges[0]).1,
        "loopdbg's reading vs what Claude Code sent"
    );
    assert!(ids.contains(&"result:toolu_e2e_3".to_string()), "{ids:?}");
    doctor_has_nothing_to_do(&log);
}

/// A command running opencode's own subcommands (`session list`, `export`)
/// in `scratch`.
fn opencode(bin: &Path, scratch: &Scratch, args: &[&str]) -> String {
    let out = Command::new(bin.join("opencode"))
        .current_dir(&scratch.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &scratch.home)
        .env("TMPDIR", &scratch.tmp)
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "opencode {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// opencode's one session in `scratch`: its id, and `opencode export ID`
/// written to a file for `check`.
fn opencode_export(bin: &Path, scratch: &Scratch) -> (String, PathBuf) {
    let listed: Value = serde_json::from_str(&opencode(
        bin,
        scratch,
        &["session", "list", "--format", "json"],
    ))
    .unwrap();
    let sessions = listed.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let export = scratch.tmp.join("opencode-export.json");
    std::fs::write(&export, opencode(bin, scratch, &["export", &id])).unwrap();
    (id, export)
}

/// opencode killed mid-tool (the same kill), then resumed with its own
/// `run --session ID`. Its store keeps the call `running`; `check` of the
/// export says so (a warning: opencode sends the call with its error
/// result `[Tool execution was interrupted]`, so no 400, but the model
/// gets no real result), and that is what the resume sends: accepted.
#[test]
#[ignore = "end-to-end: the real agent (scripts/install-agents.sh)"]
fn opencode_killed_mid_tool_resumes_by_itself() {
    let agent = Agent::Opencode;
    let Some(stage) = Stage::start(agent, "agents::opencode") else {
        return;
    };
    let (bin, fake, scratch) = (&stage.bin, &stage.fake, &stage.scratch);
    run_killed_mid_tool(agent, bin, &fake.url, scratch, &[]);
    let (id, export) = opencode_export(bin, scratch);
    let (_, report) = check_report(&export);
    // The stalled call, and the other of the pair when opencode was killed
    // before it wrote that one's end (both seen in CI).
    let open = kinds(&report);
    assert!(only(&open, "unanswered_call(warning)"), "{report}");
    assert_eq!(refused_ids(&report), Vec::<String>::new(), "{report}");
    // The scan reads opencode's database itself and says the same.
    let mut scan = Command::new(env!("CARGO_BIN_EXE_loopdbg"));
    for var in loopdbg_corpus::stores::VARIABLES {
        scan.env_remove(var);
    }
    let out = scan
        .args(["doctor", "--scan", "--format", "json"])
        .env("HOME", &scratch.home)
        .env("XDG_CACHE_HOME", scratch.home.join(".cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let scanned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<&Value> = scanned["unresumable"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), 1, "{scanned:#}");
    assert_eq!(listed[0]["session"], id.as_str(), "{scanned:#}");
    assert_eq!(listed[0]["standing"], "mended", "{scanned:#}");
    let (ok, ran, exchanges) =
        resume_through_proxy(agent, bin, &fake.url, scratch, &["--session", &id]);
    assert!(
        accepted(&(ok, statuses(&exchanges))),
        "{}
{}
{exchanges:?}",
        ran.stdout,
        ran.stderr
    );
    // opencode's key (in its config) reaches neither the capture nor the
    // scan's report.
    let seen = format!("{exchanges:?}{scanned}");
    assert!(!seen.contains("SECRET"), "a key in the capture or the scan");
    let mend = exchanges[0]["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["tool_use_id"] == "toolu_e2e_3")
        .expect("the open call's result in the resumed request");
    assert_eq!(
        mend["content"],
        loopdbg_read::opencode::INTERRUPTED,
        "{mend}"
    );
    assert_eq!(mend["is_error"], true, "{mend}");
    // The store still says `running`: opencode sends the same mend with
    // every request, and `check` still says what the model lost.
    let (_, export) = opencode_export(bin, scratch);
    let (_, report) = check_report(&export);
    assert_eq!(kinds(&report), open, "{report}");
}
