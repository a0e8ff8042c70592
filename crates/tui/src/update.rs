//! The pure update function: state + action → new state (and maybe a
//! follow-up action). No terminal, no clock; tested without either.

use loopdbg_engine::ledger::counted_ids;
use loopdbg_engine::session::MAX_ROUNDS_LIMIT;
use loopdbg_engine::strategy::Strategy;
use loopdbg_engine::trace::{Phase, Trace};
use loopdbg_formats::provider::Format;
use loopdbg_lesson::checks::RunAnalysis;
use loopdbg_lesson::report::compare_rows;

use super::action::Action;
use super::app::{App, Command, Mode, Pane, Popup};
use super::view::pane_at;

/// Lines a page scroll moves.
const PAGE: u16 = 10;

/// Applies `action`, then each action `update` asks for after it, as
/// the terminal loop does.
pub fn apply(app: &mut App, action: Action) {
    let mut next = Some(action);
    while let Some(action) = next {
        next = update(app, action);
    }
}

/// Applies `action` to `app`; returns a follow-up action to apply next.
pub fn update(app: &mut App, action: Action) -> Option<Action> {
    if !admitted(app, &action) {
        return None;
    }
    match action {
        Action::StepForward
        | Action::StepBack
        | Action::NextRound
        | Action::PrevRound
        | Action::First
        | Action::Last
        | Action::Restart
        | Action::Continue
        | Action::ToggleFollow => navigate(app, action),
        Action::ToggleExtract
        | Action::CycleClosure
        | Action::CycleStop
        | Action::CycleBehavior
        | Action::MoreRounds
        | Action::FewerRounds
        | Action::Interrupt => return change_strategy(app, action),
        Action::Rerun(strategy) => rerun_in_place(app, strategy),
        Action::StepInto => step_into(app),
        Action::StepOut => step_out(app),
        Action::Search
        | Action::SearchType(_)
        | Action::SearchErase
        | Action::SearchSubmit
        | Action::SearchCancel
        | Action::TourAnswer
        | Action::TourNext => type_text(app, action),
        Action::Edit
        | Action::EditDone(_)
        | Action::ShowForks
        | Action::WriteFork
        | Action::Export
        | Action::ShowDiff => fork_action(app, action),
        other => screen(app, other),
    }
    None
}

/// Whether `action` applies in the state `app` is in; says why not where
/// a user would wonder. Popups take their keys first.
fn admitted(app: &mut App, action: &Action) -> bool {
    // A screen too small to draw shows only how large it needs to be; keys
    // that would act unseen are ignored until it grows.
    let (w, h) = app.size;
    let too_small = w < crate::view::MIN_WIDTH || h < crate::view::MIN_HEIGHT;
    if too_small && !matches!(action, Action::Quit | Action::Back | Action::Resize(..)) {
        return false;
    }
    if app.popup().is_some() && handle_popup(app, action) {
        return false;
    }
    if app.parent.is_some() && changes_strategy(action) {
        app.notice = Some(
            "a sub-agent's run is a read-only look: it ran as part of the parent's call, so a change here would not reach the parent's result; change the parent (< returns)".into(),
        );
        return false;
    }
    if app.replay.is_some() && changes_strategy(action) {
        app.notice =
            Some("replaying a captured conversation: there is no strategy to change".into());
        return false;
    }
    // Looking back at what already happened pauses a live view's following.
    if let Some(live) = app.live.as_mut()
        && matches!(
            action,
            Action::StepBack | Action::PrevRound | Action::First | Action::Restart
        )
    {
        live.follow = false;
    }
    true
}

/// Moves through the recorded run.
fn navigate(app: &mut App, action: Action) {
    match action {
        Action::ToggleFollow => match app.live.as_mut() {
            None => app.notice = Some(
                "f follows live traffic: open a growing log with --follow, or run loopdbg proxy"
                    .into(),
            ),
            Some(live) => {
                live.follow = !live.follow;
                if live.follow {
                    move_to(app, app.trace.len() - 1);
                    app.notice = Some("following the newest step (f pauses)".into());
                } else {
                    app.notice = Some("paused: new traffic is kept; f follows again".into());
                }
            }
        },
        Action::StepForward => move_to(app, app.cursor + 1),
        Action::StepBack => move_to(app, app.cursor.saturating_sub(1)),
        Action::NextRound => {
            let round = app.trace.step(app.cursor).round;
            let target = app
                .trace
                .first_step_of_round(round + 1)
                .unwrap_or(app.trace.len() - 1);
            move_to(app, target);
        }
        Action::PrevRound => {
            let round = app.trace.step(app.cursor).round;
            let start = app.trace.first_step_of_round(round).unwrap_or(0);
            let target = if app.cursor > start {
                start
            } else {
                round
                    .checked_sub(1)
                    .and_then(|r| app.trace.first_step_of_round(r))
                    .unwrap_or(0)
            };
            move_to(app, target);
        }
        Action::First => move_to(app, 0),
        Action::Last => move_to(app, app.trace.len() - 1),
        Action::Restart if app.replay.is_some() => move_to(app, 0),
        Action::Restart => {
            let strategy = app.initial_strategy.clone();
            rerun(app, strategy);
            move_to(app, 0);
            app.notice = Some(format!("restarted: {}", app.strategy().label()));
        }
        Action::Continue => {
            let (target, why) = continue_target(app);
            move_to(app, target);
            app.notice = Some(why);
        }
        _ => {}
    }
}

/// A toggle of the strategy: the new strategy comes back as a
/// [`Action::Rerun`], so a caller may look at it before it runs.
fn change_strategy(app: &mut App, action: Action) -> Option<Action> {
    let mut s = app.strategy().clone();
    match action {
        Action::ToggleExtract => s.extract = s.extract.toggled(),
        Action::CycleClosure => s.closure = s.closure.next(),
        Action::CycleStop => s.stop = s.stop.next(),
        Action::Interrupt => {
            let step = app.trace.step(app.cursor);
            if step.phase != Phase::Execute {
                app.notice = Some(
                    "x interrupts a turn while its calls run: step to an Execute phase first"
                        .into(),
                );
                return None;
            }
            // An interrupt stops calls still running; when every call of the
            // turn has ended by now it would change nothing, and a session
            // written with it (W) would hold a fault that never fires.
            let running = app.trace.round(step.round).is_some_and(|r| {
                r.executions.iter().any(|e| {
                    e.status != loopdbg_engine::trace::CallStatus::Dropped
                        && e.ended_ms > step.time_ms
                })
            });
            if !running {
                app.notice = Some(format!(
                    "nothing to interrupt: every call of round {} has ended by {} ms; x stops calls still running (step to an earlier Execute)",
                    step.round, step.time_ms
                ));
                return None;
            }
            s.interrupt = Some(loopdbg_engine::session::Interrupt {
                round: step.round,
                at_ms: step.time_ms,
            });
        }
        Action::CycleBehavior => {
            let names: Vec<&str> = app.session.behavior_names().collect();
            let i = names.iter().position(|b| *b == s.behavior).unwrap_or(0);
            s.behavior = names[(i + 1) % names.len()].to_string();
        }
        Action::MoreRounds | Action::FewerRounds => {
            s.max_rounds = if action == Action::MoreRounds {
                // A round more stays within the calls a run may make.
                let widest = app.session.widest_reply().max(1) as u64;
                let by_calls = (loopdbg_engine::session::MAX_CALLS_PER_RUN / widest)
                    .min(u64::from(u32::MAX)) as u32;
                (s.max_rounds + 1)
                    .min(MAX_ROUNDS_LIMIT)
                    .min(by_calls.max(1))
            } else {
                s.max_rounds.saturating_sub(1).max(1)
            };
            if s.max_rounds == app.strategy().max_rounds {
                app.notice = Some(format!("max rounds stays at {}", s.max_rounds));
                return None;
            }
        }
        _ => return None,
    }
    Some(Action::Rerun(s))
}

/// Records the run again under `strategy`, keeping the user's place (the
/// same round and phase) and saying what changed.
fn rerun_in_place(app: &mut App, strategy: Strategy) {
    let step = app.trace.step(app.cursor).clone();
    let change = describe_strategy_change(app.strategy(), &strategy);
    let (before, before_analysis) = rerun(app, strategy);
    app.cursor = app
        .trace
        .nearest_step(step.round, step.phase, step.execution);
    app.notice = Some(format!(
        "{change}: {}",
        describe_outcome_change(&before, &before_analysis, &app.trace, app.analysis())
    ));
}

/// Into the sub-agent run of the call at the cursor.
fn step_into(app: &mut App) {
    let Some(child) = child_at(app) else {
        app.notice = Some(
            "no sub-agent here: step to the Execute or Append phase of a sub-agent call".into(),
        );
        return;
    };
    let title = format!("sub-agent {}", loopdbg_lesson::report::clean(&child.0));
    let mut inner = App::new(
        title,
        child.1.session.clone(),
        child.1.trace.strategy.clone(),
        app.theme,
    );
    inner.trace = child.1.trace.clone();
    inner.forget_derived();
    inner.size = app.size;
    inner.prices = app.prices.clone();
    inner.notice =
        Some("inside the sub-agent: its own loop and ledger; < returns to the parent".into());
    let parent = std::mem::replace(app, inner);
    app.parent = Some(Box::new(parent));
}

/// Back to the parent loop.
fn step_out(app: &mut App) {
    match app.parent.take() {
        Some(parent) => {
            let size = app.size;
            *app = *parent;
            app.size = size;
            app.notice = Some("back in the parent loop; its ledger is as it was".into());
        }
        None => app.notice = Some("not inside a sub-agent".into()),
    }
}

/// Typing: a search after `/`, or the tour's answer.
fn type_text(app: &mut App, action: Action) {
    match action {
        Action::Search => {
            app.mode = Mode::Search(String::new());
            app.focus = Pane::Messages;
        }
        Action::TourAnswer => super::tour::start_answer(app),
        Action::TourNext => super::tour::next(app),
        Action::SearchType(c) if super::tour::typing(app) => {
            super::tour::type_key(app, super::tour::Key::Char(c))
        }
        Action::SearchErase if super::tour::typing(app) => {
            super::tour::type_key(app, super::tour::Key::Erase)
        }
        Action::SearchSubmit if super::tour::typing(app) => {
            super::tour::type_key(app, super::tour::Key::Submit)
        }
        Action::SearchCancel if super::tour::typing(app) => {
            super::tour::type_key(app, super::tour::Key::Cancel)
        }
        Action::SearchType(c) => {
            if let Mode::Search(query) = &mut app.mode {
                query.push(c);
            }
        }
        Action::SearchErase => {
            if let Mode::Search(query) = &mut app.mode {
                query.pop();
            }
        }
        Action::SearchCancel => {
            if let Mode::Search(_) = app.mode {
                app.mode = Mode::Panes;
            }
        }
        Action::SearchSubmit => {
            if let Mode::Search(query) = std::mem::take(&mut app.mode)
                && !query.is_empty()
            {
                app.last_search = query;
            }
            search_next(app);
        }
        _ => {}
    }
}

/// Edits, forks and what is written of them.
fn fork_action(app: &mut App, action: Action) {
    match action {
        Action::Edit => super::fork::start_edit(app),
        Action::EditDone(text) => match std::mem::take(&mut app.mode) {
            Mode::Editing(target) => super::fork::finish_edit(app, target, &text),
            other => {
                app.mode = other;
                app.notice = Some("no edit was in progress".into());
            }
        },
        Action::ShowForks if app.forks.is_empty() => {
            app.notice = Some("no forks yet: E at a Reply or Execute step makes one".into())
        }
        Action::ShowForks => app.open(Popup::Forks { scroll: 0 }),
        Action::WriteFork => super::fork::write_fork(app),
        Action::Export => super::fork::export(app),
        Action::ShowDiff if app.replay.is_some() => app.notice = Some(
            "a replay has one run: loopdbg diff compares two captures, or record one and fork it"
                .into(),
        ),
        Action::ShowDiff => super::fork::show_diff(app),
        _ => {}
    }
}

/// What the screen shows: views, focus, scrolling, popups, breakpoints.
fn screen(app: &mut App, action: Action) {
    match action {
        Action::Said(text) => app.notice = Some(text),
        Action::Yank => yank(app, false),
        Action::YankToFile => yank(app, true),
        Action::ShowCompare => {
            let rows = compare_rows(&app.origin, &app.session, app.strategy());
            app.open(Popup::Compare { rows, scroll: 0 });
        }
        Action::CycleView => {
            app.view = match app.view {
                None => Some(Format::Anthropic),
                Some(Format::Anthropic) => Some(Format::Openai),
                Some(Format::Openai) => Some(Format::Responses),
                Some(Format::Responses) => Some(Format::Gemini),
                Some(Format::Gemini) => Some(Format::Bedrock),
                Some(Format::Bedrock) => None,
            };
            app.selected_message = None;
            app.notice = Some(match app.view {
                None => "view: canonical (one tool message per result)".to_string(),
                Some(f) => format!("view: {} — what the provider receives", f.title()),
            });
        }
        Action::FocusNext => app.focus = app.focus.cycled(true),
        Action::FocusPrev => app.focus = app.focus.cycled(false),
        Action::ScrollDown => scroll(app, app.focus, 1),
        Action::ExplainDown => scroll(app, crate::app::Pane::Explain, 1),
        Action::ExplainUp => scroll(app, crate::app::Pane::Explain, -1),
        Action::ScrollUp => scroll(app, app.focus, -1),
        Action::PageDown => scroll(app, app.focus, PAGE as i32),
        Action::PageUp => scroll(app, app.focus, -(PAGE as i32)),
        Action::Expand => {
            if let Some(message) = app.selected_message() {
                app.open(Popup::Detail { message, scroll: 0 });
            }
        }
        // Only `q` (and Ctrl-c) quits: Esc on the panes is one Esc too
        // many after closing a popup, never a reason to leave.
        Action::Back => app.notice = Some("Esc closes popups and cancels typing; q quits".into()),
        Action::Quit => app.quit = true,
        Action::Help => app.open(Popup::Help { scroll: 0 }),
        Action::ShowTools => app.open(Popup::Tools { scroll: 0 }),
        Action::ToggleBreakpoint => {
            let phase = app.trace.step(app.cursor).phase;
            if !app.breakpoints.remove(&phase) {
                app.breakpoints.insert(phase);
                app.notice = Some(format!("breakpoint on every {} phase", phase.name()));
            } else {
                app.notice = Some(format!("breakpoint on {} removed", phase.name()));
            }
        }
        Action::Resize(w, h) => app.size = (w, h),
        Action::Wheel { column, row, down } => {
            let area = ratatui::layout::Rect::new(0, 0, app.size.0, app.size.1);
            if let Some(pane) = pane_at(app, area, column, row) {
                scroll(app, pane, if down { 3 } else { -3 });
            }
        }
        _ => {}
    }
}

/// The sub-agent run of the call the step points at (name, run).
fn child_at(
    app: &App,
) -> Option<(
    String,
    std::sync::Arc<loopdbg_engine::executor::SubAgentRun>,
)> {
    let step = app.trace.step(app.cursor);
    let round = app.trace.round(step.round)?;
    let pick = |e: &loopdbg_engine::trace::Execution| {
        e.outcome.child.clone().map(|c| (e.name.to_string(), c))
    };
    // Only from the call's own steps (its Execute and Append).
    if !matches!(step.phase, Phase::Execute | Phase::Append) {
        return None;
    }
    step.execution
        .and_then(|i| round.executions.get(i))
        .and_then(pick)
}

fn changes_strategy(action: &Action) -> bool {
    matches!(
        action,
        Action::ToggleExtract
            | Action::CycleClosure
            | Action::Interrupt
            | Action::CycleStop
            | Action::CycleBehavior
            | Action::MoreRounds
            | Action::FewerRounds
            | Action::ShowCompare
            | Action::Rerun(_)
    )
}

/// The fork list selects a row; Enter shows that fork. `None` leaves the
/// key to the common popup handling.
fn forks_popup(app: &mut App, selected: u16, action: &Action) -> Option<bool> {
    let tree = super::fork::tree(app);
    let rows = tree.len().max(1) as u16;
    let select = |app: &mut App, to: u16| app.open(Popup::Forks { scroll: to });
    match action {
        Action::ScrollDown | Action::Wheel { down: true, .. } => {
            select(app, (selected + 1).min(rows - 1))
        }
        Action::ScrollUp | Action::Wheel { down: false, .. } => {
            select(app, selected.saturating_sub(1))
        }
        Action::Expand => {
            app.close_popup();
            if let Some(&(_, i)) = tree.get(selected as usize) {
                super::fork::show_fork(app, i);
                app.notice = Some(format!(
                    "showing {}: {}",
                    super::fork::fork_name(i),
                    app.forks[i].label
                ));
            }
        }
        Action::ShowForks | Action::Back => app.close_popup(),
        _ => return None,
    }
    Some(true)
}

/// Keys while a popup is open: returns true when the popup consumed it.
fn handle_popup(app: &mut App, action: &Action) -> bool {
    if let Some(&Popup::Forks { scroll }) = app.popup()
        && let Some(consumed) = forks_popup(app, scroll, action)
    {
        return consumed;
    }
    let Mode::Popup(popup) = &mut app.mode else {
        return false;
    };
    let scroll = match popup {
        Popup::Help { scroll }
        | Popup::Tools { scroll }
        | Popup::Compare { scroll, .. }
        | Popup::Forks { scroll }
        | Popup::Diff { scroll, .. }
        | Popup::Detail { scroll, .. } => scroll,
    };
    match action {
        Action::ScrollDown | Action::Wheel { down: true, .. } => *scroll = scroll.saturating_add(1),
        Action::ScrollUp | Action::Wheel { down: false, .. } => *scroll = scroll.saturating_sub(1),
        Action::PageDown => *scroll = scroll.saturating_add(PAGE),
        Action::PageUp => *scroll = scroll.saturating_sub(PAGE),
        Action::Back => app.close_popup(),
        Action::Help if matches!(popup, Popup::Help { .. }) => app.close_popup(),
        Action::ShowCompare if matches!(popup, Popup::Compare { .. }) => app.close_popup(),
        Action::ShowTools if matches!(popup, Popup::Tools { .. }) => app.close_popup(),
        Action::ShowDiff if matches!(popup, Popup::Diff { .. }) => app.close_popup(),
        Action::Expand if matches!(popup, Popup::Detail { .. }) => app.close_popup(),
        // Enter means something in the forks (handled above) and the JSON
        // popup; elsewhere it must not open a popup behind this one.
        Action::Expand => {}
        // Quitting, resizing and strategy changes still work under a popup;
        // anything else would change what the popup describes, so it closes.
        Action::Quit | Action::Resize(..) => return false,
        _ => {
            app.close_popup();
            return false;
        }
    }
    true
}

fn move_to(app: &mut App, target: usize) {
    let target = target.min(app.trace.len() - 1);
    if target != app.cursor {
        app.cursor = target;
        app.explain_scroll = 0;
        // The messages pane follows the newest message again.
        app.selected_message = None;
        if !matches!(app.notice.as_deref(), Some(n) if n.starts_with("stopped")) {
            app.notice = None;
        }
    }
}

/// Replaces the trace with a run under `strategy`; returns the old trace
/// and its analysis.
fn rerun(app: &mut App, strategy: Strategy) -> (Trace, RunAnalysis) {
    let fresh = loopdbg_engine::run(&app.session, &strategy);
    let before_analysis = app.analysis().clone();
    let before = std::mem::replace(&mut app.trace, fresh);
    app.forget_derived();
    app.cursor = app.cursor.min(app.trace.len() - 1);
    app.selected_message = None;
    (before, before_analysis)
}

fn scroll(app: &mut App, pane: Pane, delta: i32) {
    let apply = |v: u16| -> u16 { (v as i32 + delta).clamp(0, u16::MAX as i32) as u16 };
    match pane {
        Pane::Messages => {
            let len = app.view_len();
            let current = app.selected_message().unwrap_or(0) as i64;
            let next = (current + delta as i64).clamp(0, len.saturating_sub(1) as i64) as usize;
            app.selected_message = Some(next);
        }
        Pane::Ids => app.ids_scroll = apply(app.ids_scroll),
        Pane::Walkthrough => app.walkthrough_scroll = apply(app.walkthrough_scroll),
        Pane::Explain => app.explain_scroll = apply(app.explain_scroll),
    }
}

/// Where `c` stops: the next step on a breakpoint, where the unpaired count
/// rises, or where a reply repeats the previous one; else the end.
fn continue_target(app: &App) -> (usize, String) {
    let trace = &app.trace;
    for k in app.cursor + 1..trace.len() {
        let step = trace.step(k);
        if app.breakpoints.contains(&step.phase) {
            return (k, format!("stopped at breakpoint on {}", step.phase.name()));
        }
        if step.unpaired > trace.step(k - 1).unpaired {
            // Only the calls that became unpaired at this step.
            // Read off the trace's pairing index, not rebuilt from the history.
            let unpaired_at = |k: usize| -> Vec<String> {
                let in_flight = trace.in_flight_at(k);
                let len = trace.step(k).history_len;
                trace
                    .pairing
                    .at(len, &in_flight)
                    .ids_in(loopdbg_engine::ledger::IdState::Unpaired)
                    .map(|e| e.id.to_string())
                    .collect()
            };
            let mut before = unpaired_at(k - 1);
            let mut new = Vec::new();
            for id in unpaired_at(k) {
                match before.iter().position(|b| *b == id) {
                    Some(i) => {
                        before.remove(i);
                    }
                    None => new.push(id),
                }
            }
            return (
                k,
                format!("stopped: unpaired id appeared ({})", counted_ids(&new)),
            );
        }
        if step.phase == Phase::Reply
            && let Some(r) = trace.round(step.round)
            && r.identical_run >= 2
        {
            return (
                k,
                format!(
                    "stopped: round {} repeats the previous reply ({} in a row)",
                    r.number, r.identical_run
                ),
            );
        }
    }
    (trace.len() - 1, "ran to the end".to_string())
}

fn describe_strategy_change(old: &Strategy, new: &Strategy) -> String {
    let mut parts = Vec::new();
    if old.extract != new.extract {
        parts.push(format!("extract {} → {}", old.extract, new.extract));
    }
    if old.stop != new.stop {
        parts.push(format!("stop {} → {}", old.stop, new.stop));
    }
    if old.behavior != new.behavior {
        parts.push(format!(
            "behavior {} → {}",
            loopdbg_lesson::report::clean(&old.behavior),
            loopdbg_lesson::report::clean(&new.behavior)
        ));
    }
    if old.max_rounds != new.max_rounds {
        parts.push(format!(
            "max rounds {} → {}",
            old.max_rounds, new.max_rounds
        ));
    }
    if old.closure != new.closure {
        parts.push(format!("closure {} → {}", old.closure, new.closure));
    }
    if old.interrupt != new.interrupt {
        match new.interrupt {
            Some(i) => parts.push(format!("interrupt in round {} at {} ms", i.round, i.at_ms)),
            None => parts.push("no interrupt".to_string()),
        }
    }
    if parts.is_empty() {
        "same strategy".to_string()
    } else {
        parts.join(", ")
    }
}

/// "now 2 rounds instead of 6, ends model_done (was max_rounds); unpaired
/// toolu_f1 ×6 → none".
pub fn describe_outcome_change(
    before: &Trace,
    before_analysis: &RunAnalysis,
    after: &Trace,
    after_analysis: &RunAnalysis,
) -> String {
    let mut parts = Vec::new();
    let (b, a) = (before.outcome.requests, after.outcome.requests);
    let rounds = |n: u32| format!("{n} round{}", if n == 1 { "" } else { "s" });
    if a != b {
        parts.push(format!("now {} instead of {b}", rounds(a)));
    } else {
        parts.push(format!("still {}", rounds(a)));
    }
    if before.outcome.end != after.outcome.end {
        parts.push(format!(
            "ends {} (was {})",
            after.outcome.end.as_str(),
            before.outcome.end.as_str()
        ));
    }
    // One entry per unpaired call: an id reused every round is counted
    // (`toolu_f1 ×6`), not listed six times.
    let (was, now) = (&before_analysis.unpaired, &after_analysis.unpaired);
    // Before and after, each counted in its own run: `toolu_f1 ×6 → none`
    // (not "×6 paired" when the new run makes the call once).
    let mut s = parts.join(", ");
    let counted = |ids: &[String]| match ids.is_empty() {
        true => "none".to_string(),
        false => counted_ids(ids),
    };
    if was != now {
        s.push_str(&format!("; unpaired {} → {}", counted(was), counted(now)));
    }
    loopdbg_lesson::report::clean(&s)
}

/// Selects the next message of the pane (after the selection, wrapping)
/// whose JSON contains the last search, case-insensitively, and says which
/// of how many matches it is.
fn search_next(app: &mut App) {
    let query = app.last_search.to_lowercase();
    if query.is_empty() {
        app.notice = Some("type something to search after /".into());
        return;
    }
    let history = app.trace.history_at(app.cursor);
    // Which messages hold it, each message's JSON made and dropped in turn
    // (all of them held at once were a copy of the whole history: on a
    // 1 GB log, another gigabyte for each search).
    let hit: Vec<bool> = history
        .iter()
        .map(|m| {
            serde_json::to_string(m)
                .unwrap_or_default()
                .to_lowercase()
                .contains(&query)
        })
        .collect();
    // Matching is on the canonical messages; a provider item matches when
    // any message it renders does.
    let ranges: Vec<std::ops::Range<usize>> = match app.view_spans() {
        Some(spans) => spans.iter().map(|s| s.from).collect(),
        None => (0..history.len()).map(|i| i..i + 1).collect(),
    };
    let matches: Vec<usize> = ranges
        .iter()
        .enumerate()
        .filter(|(_, r)| hit[r.start..r.end].iter().any(|&h| h))
        .map(|(i, _)| i)
        .collect();
    let shown = loopdbg_lesson::report::clean(&app.last_search);
    let Some(&first) = matches.first() else {
        app.notice = Some(format!("/{shown}: no message at this step contains it"));
        return;
    };
    let after = app.selected_message.filter(|&s| s < ranges.len());
    let next = after
        .and_then(|s| matches.iter().copied().find(|&m| m > s))
        .unwrap_or(first);
    app.selected_message = Some(next);
    app.focus = Pane::Messages;
    let k = matches.iter().position(|&m| m == next).unwrap_or(0) + 1;
    app.notice = Some(format!(
        "/{shown}: message {next} ({k} of {} at this step; / Enter for the next)",
        matches.len()
    ));
}

/// `y` / `Y`: the message open in the popup or selected in its pane, or,
/// when the explain box has the focus, its text; to the clipboard, or to a
/// file.
fn yank(app: &mut App, to_file: bool) {
    let open = match &app.mode {
        Mode::Popup(Popup::Detail { message, .. }) => Some(*message),
        _ => None,
    };
    let (text, what, suggested) = match open {
        None if app.focus == crate::app::Pane::Explain => (
            crate::view::summary::box_text(app),
            "the explain box's text".to_string(),
            "loopdbg-explain.txt".to_string(),
        ),
        _ => {
            let Some(message) = open.or_else(|| app.selected_message()) else {
                app.notice = Some("no message to copy at this step".into());
                return;
            };
            let Some((json, title)) = crate::view::detail::message_json(app, message) else {
                return;
            };
            (json, title, format!("loopdbg-message-{message}.json"))
        }
    };
    app.command = Some(match to_file {
        true => Command::Write {
            suggested,
            text,
            what: "copied text",
        },
        false => Command::Copy {
            text,
            what,
            suggested,
        },
    });
}
