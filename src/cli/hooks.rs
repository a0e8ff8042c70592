//! `loopdbg hooks`: install loopdbg's hooks into an agent's settings, and
//! answer the agent when it runs them. The judging and the settings' edit
//! are `loopdbg-corpus`'s ([`loopdbg_corpus::hooks`]); this module takes
//! the flags, reads standard input and picks what to print.

use std::io::{Read, Write};
use std::process::ExitCode;

use loopdbg_corpus::hooks::{self, Moment};

use super::args::{HookAgent, HookMoment, HooksAction, HooksArgs};
use super::{Failure, bad_flag};

/// `loopdbg hooks …`.
pub fn hooks(args: HooksArgs) -> Result<ExitCode, Failure> {
    match args.action {
        HooksAction::Install { agent, settings } => edit(agent, settings, true),
        HooksAction::Uninstall { agent, settings } => edit(agent, settings, false),
        HooksAction::Run { agent, moment } => answer(
            agent,
            match moment {
                HookMoment::SessionStart => Moment::SessionStart,
                HookMoment::PreCompact => Moment::PreCompact,
            },
        ),
        HooksAction::Statusline { agent } => answer(agent, Moment::StatusLine),
    }
}

/// The agent's hooks, or what it has instead (said where `install` is
/// asked for it).
fn target(agent: HookAgent) -> Result<hooks::Target, &'static str> {
    match agent {
        HookAgent::ClaudeCode => Ok(hooks::CLAUDE_CODE),
        HookAgent::GeminiCli => Ok(hooks::GEMINI_CLI),
        HookAgent::Codex => Err(
            "Codex CLI runs no hook before a resumed session's first request (its `notify` program runs after a turn ends): nothing to install. `loopdbg doctor --scan` finds its sessions that cannot be resumed",
        ),
    }
}

fn edit(
    agent: HookAgent,
    settings: Option<std::path::PathBuf>,
    install: bool,
) -> Result<ExitCode, Failure> {
    let target = target(agent).map_err(|why| bad_flag(why.into()))?;
    let places = loopdbg_corpus::stores::Places::from_env();
    let path = match settings {
        Some(path) => path,
        None => match agent {
            HookAgent::GeminiCli => hooks::gemini_settings(&places),
            _ => hooks::claude_settings(&places),
        }
        .ok_or_else(|| bad_flag("no home folder: name the settings with --settings".into()))?,
    };
    // The hooks run this very binary, by its full path: the agent's PATH
    // may not hold the folder it was installed in.
    let program = std::env::current_exe()?;
    let program = loopdbg_corpus::stores::quoted(&program.to_string_lossy());
    let change = match install {
        true => hooks::install(target, &path, &program),
        false => hooks::uninstall(target, &path),
    }
    .map_err(|e| match e {
        hooks::HookError::Unreadable(message) => bad_flag(message),
        other => other.into(),
    })?;
    let what = match agent {
        HookAgent::GeminiCli => "SessionStart",
        _ => "SessionStart on resume and compaction, PreCompact, the status line",
    };
    let did = match (install, change.written) {
        (true, true) => format!("installed loopdbg's hooks ({what}) in"),
        (true, false) => "loopdbg's hooks are already in".to_string(),
        (false, true) => "took loopdbg's hooks out of".to_string(),
        (false, false) => "no loopdbg hooks in".to_string(),
    };
    say!("{did} {}", change.settings.display());
    if let Some(backup) = &change.backup {
        say!("  the settings as they were: {}", backup.display());
    }
    for note in &change.notes {
        say!("  {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The agent runs a hook: whatever goes wrong, it is never failed, and
/// nothing is said when all is well.
fn answer(agent: HookAgent, moment: Moment) -> Result<ExitCode, Failure> {
    if target(agent).is_err() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut input = Vec::new();
    let _ = std::io::stdin().take(1 << 20).read_to_end(&mut input);
    let places = loopdbg_corpus::stores::Places::from_env();
    let find = |session: &str| match agent {
        HookAgent::GeminiCli => hooks::gemini_session_file(&places, session),
        _ => None,
    };
    if let Some(said) = hooks::respond_finding(moment, &input, &find) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{said}");
    }
    Ok(ExitCode::SUCCESS)
}
