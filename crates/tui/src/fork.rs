//! Edit a step and fork the run; the fork list; writing a fork or a
//! handout; this run beside another. Part of `update`: pure, and what
//! needs an editor or a file is asked of the terminal adapter as a
//! [`Command`].

use crate::app::{App, Command, EditTarget, Fork, Popup};
use loopdbg_engine::fork::{Edit, apply};
use loopdbg_engine::session::Reply;
use loopdbg_engine::strategy::Strategy;
use loopdbg_engine::trace::Phase;

/// Why a replay cannot be forked, and what would make it possible.
const REPLAY_NO_FORK: &str = "a replay has no model to run again: turn the capture into a session with `loopdbg record FILE -o SESSION.json`, open that, then E forks it";

/// `E`: asks the adapter to open the step's reply or return value.
pub(super) fn start_edit(app: &mut App) {
    if app.replay.is_some() {
        app.notice = Some(REPLAY_NO_FORK.into());
        return;
    }
    if app.parent.is_some() {
        app.notice =
            Some("a sub-agent's run is a read-only look: fork the parent (< returns)".into());
        return;
    }
    let step = app.trace.step(app.cursor);
    // The run stopped where the stub has no reply: from its last Request
    // on, E writes the reply that round lacks (the README's fork step:
    // after `e`, round 2 goes from its Request straight to Done).
    if let Some(round) = unscripted_round(app)
        && step.round >= round
    {
        let target = EditTarget::Reply {
            round,
            step: app.cursor,
        };
        app.mode = crate::app::Mode::Editing(target.clone());
        app.command = Some(Command::Edit {
            target,
            json: UNSCRIPTED_TEMPLATE.into(),
        });
        return;
    }
    let Some(round) = app.trace.round(step.round) else {
        app.notice = Some(edit_where().into());
        return;
    };
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    match (step.phase, step.execution) {
        (Phase::Reply, _) => {
            let json = serde_json::to_value(&round.reply).unwrap_or_default();
            let target = EditTarget::Reply {
                round: step.round,
                step: app.cursor,
            };
            app.mode = crate::app::Mode::Editing(target.clone());
            app.command = Some(Command::Edit {
                target,
                json: pretty(&json),
            });
        }
        (Phase::Execute, Some(i)) => {
            let Some(e) = round.executions.get(i) else {
                app.notice = Some(edit_where().into());
                return;
            };
            if !app.session.tools.iter().any(|t| *t.name == *e.name) {
                app.notice = Some(format!(
                    "`{}` is not a tool of this session: there is no return value to edit (edit the Reply that calls it)",
                    e.name
                ));
                return;
            }
            let target = EditTarget::Result {
                tool: e.name.to_string(),
                args: (*e.args).clone(),
                step: app.cursor,
            };
            app.mode = crate::app::Mode::Editing(target.clone());
            app.command = Some(Command::Edit {
                target,
                json: pretty(&e.outcome.content),
            });
        }
        _ => app.notice = Some(edit_where().into()),
    }
}

/// What the editor opens with for a reply the stub never scripted: an
/// answer in words, to be changed.
const UNSCRIPTED_TEMPLATE: &str = "{\n  \"text\": \"(the model's reply in this round)\",\n  \"tool_calls\": [],\n  \"finish_reason\": \"stop\"\n}";

/// The round the stub had no reply for, when that is how the run ended.
fn unscripted_round(app: &App) -> Option<u32> {
    (app.trace.outcome.end == loopdbg_engine::trace::End::Unscripted).then(|| {
        app.trace
            .steps
            .iter()
            .filter(|s| s.phase == Phase::Request)
            .map(|s| s.round)
            .max()
            .unwrap_or(1)
    })
}

fn edit_where() -> &'static str {
    "E edits at a Reply step (the model's answer: text, tool calls, finish_reason) or an Execute step (the tool's return value)"
}

/// The edited JSON is back: fork the run with it.
pub(super) fn finish_edit(app: &mut App, target: EditTarget, text: &str) {
    let (edit, step) = match target {
        EditTarget::Reply { round, step } => match serde_json::from_str::<Reply>(text) {
            Ok(reply) => (
                Edit::Reply {
                    behavior: app.strategy().behavior.clone(),
                    round,
                    reply,
                },
                step,
            ),
            Err(e) => {
                app.notice = Some(format!(
                    "edit not applied: line {} column {}: {e} (a reply is {{\"text\", \"tool_calls\": [{{\"id\", \"name\", \"args\"}}], \"finish_reason\"}})",
                    e.line(),
                    e.column()
                ));
                return;
            }
        },
        EditTarget::Result { tool, args, step } => {
            match serde_json::from_str::<serde_json::Value>(text) {
                Ok(result) => (Edit::Result { tool, args, result }, step),
                Err(e) => {
                    app.notice = Some(format!(
                        "edit not applied: line {} column {}: {e}",
                        e.line(),
                        e.column()
                    ));
                    return;
                }
            }
        }
    };
    let forked = match apply(&app.session, &edit) {
        Ok(s) => s,
        Err(e) => {
            app.notice = Some(format!("edit not applied: {e}"));
            return;
        }
    };
    if app.forks.is_empty() {
        app.forks.push(Fork {
            session: app.session.clone(),
            parent: None,
            label: "original".into(),
            at_step: 0,
        });
    }
    let parent = app.fork;
    app.forks.push(Fork {
        session: forked,
        parent: Some(parent),
        label: edit.describe(),
        at_step: step,
    });
    let n = app.forks.len() - 1;
    show_fork(app, n);
    app.cursor = step.min(app.trace.len() - 1);
    app.notice = Some(format!(
        "fork {n} of {}: {} — F lists the forks, D compares, W writes it",
        fork_name(parent),
        app.forks[n].label
    ));
}

/// `fork 2`, or `the original`.
pub fn fork_name(i: usize) -> String {
    if i == 0 {
        "the original".into()
    } else {
        format!("fork {i}")
    }
}

/// Shows fork `i` under the strategy in use.
pub(super) fn show_fork(app: &mut App, i: usize) {
    let Some(fork) = app.forks.get(i) else {
        return;
    };
    let (session, at) = (fork.session.clone(), fork.at_step);
    app.fork = i;
    let strategy = app.strategy().clone();
    app.show_run(session, &strategy, at);
}

/// The forks as a tree: `(depth, index)` in display order.
pub fn tree(app: &App) -> Vec<(usize, usize)> {
    fn walk(app: &App, parent: Option<usize>, depth: usize, out: &mut Vec<(usize, usize)>) {
        for (i, f) in app.forks.iter().enumerate() {
            if f.parent == parent {
                out.push((depth, i));
                walk(app, Some(i), depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(app, None, 0, &mut out);
    out
}

/// `W`: the session that reproduces the run shown, for the adapter to write.
pub(super) fn write_fork(app: &mut App) {
    if app.replay.is_some() {
        app.notice = Some(REPLAY_NO_FORK.into());
        return;
    }
    let mut session = app.session.clone();
    // The strategy shown becomes the session's own, so opening the file
    // reproduces this very run.
    let s = app.strategy();
    session.strategy.extract = Some(s.extract);
    session.strategy.stop = Some(s.stop);
    session.strategy.max_rounds = Some(s.max_rounds);
    session.strategy.behavior = Some(s.behavior.clone());
    session.strategy.closure = Some(s.closure);
    session.faults.interrupt = s.interrupt;
    if app.fork > 0 {
        session.title = format!(
            "{} (fork {}: {})",
            session.title, app.fork, app.forks[app.fork].label
        );
    }
    let text = serde_json::to_string_pretty(&session).unwrap_or_default() + "\n";
    app.command = Some(Command::Write {
        suggested: format!("{}.fork{}.json", stem(&app.origin), app.fork),
        text,
        what: "session",
    });
}

/// `X`: a handout of the run shown, for the adapter to write.
pub(super) fn export(app: &mut App) {
    let format = app
        .view
        .unwrap_or(loopdbg_formats::provider::Format::Anthropic);
    let opts = loopdbg_handout::Options {
        kind: loopdbg_handout::Kind::Html,
        format,
        model: loopdbg_formats::provider::default_model(format).to_string(),
        redact: false,
        redact_patterns: Vec::new(),
        origin: app.origin.clone(),
        prices: app.prices.clone(),
    };
    // A fork's handout says it is one, and where it branched, as the
    // header does: its session is not the file's.
    let opts = match app.forks.get(app.fork).filter(|_| app.fork > 0) {
        Some(f) => loopdbg_handout::Options {
            origin: format!(
                "{} — fork {} (from step {}: {})",
                opts.origin,
                app.fork,
                f.at_step + 1,
                f.label
            ),
            ..opts
        },
        None => opts,
    };
    let text = loopdbg_handout::render(&app.session, &app.trace, &opts);
    app.command = Some(Command::Write {
        suggested: format!("{}.handout.html", stem(&app.origin)),
        text,
        what: "handout",
    });
}

fn stem(origin: &str) -> String {
    let name = std::path::Path::new(origin)
        .file_stem()
        .map_or("loopdbg".into(), |s| s.to_string_lossy().into_owned());
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `D`: this run beside its parent fork, or beside the other extraction.
pub(super) fn show_diff(app: &mut App) {
    let strategy = app.strategy().clone();
    let (other_session, other_strategy, other_name) =
        match app.forks.get(app.fork).and_then(|f| f.parent) {
            Some(p) => (app.forks[p].session.clone(), strategy.clone(), fork_name(p)),
            None => {
                let mut s: Strategy = strategy.clone();
                s.extract = s.extract.toggled();
                (
                    app.session.clone(),
                    s.clone(),
                    format!("extract {}", s.extract),
                )
            }
        };
    let other = loopdbg_engine::run(&other_session, &other_strategy);
    let this_name = if app.fork > 0 {
        fork_name(app.fork)
    } else {
        format!("extract {}", strategy.extract)
    };
    let diff = loopdbg_lesson::diff::diff(
        &loopdbg_lesson::diff::Side {
            label: this_name,
            session: &app.session,
            trace: &app.trace,
        },
        &loopdbg_lesson::diff::Side {
            label: other_name.clone(),
            session: &other_session,
            trace: &other,
        },
    );
    app.open(Popup::Diff {
        other: other_name,
        diff: Box::new(diff),
        scroll: 0,
    });
}
