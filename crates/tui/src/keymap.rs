//! The keymap: one table for the panes ([`KEYMAP`]), one for popups
//! ([`POPUP_KEYMAP`]), and typing mode, where keys are text
//! ([`search_action_for`]). [`action_in`] picks the table for the mode the
//! debugger is in. Dispatch, the `?` help popup and the key bar are all
//! read from the tables, so help cannot drift from behavior.

use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};

use super::action::Action;
use super::app::Mode;

/// A key as written in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character (shift is part of the character).
    Char(char),
    /// A character with Ctrl held.
    Ctrl(char),
    /// A named key.
    Code(KeyCode),
}

impl Key {
    /// How the key is written in help and the key bar.
    pub fn label(self) -> String {
        match self {
            Key::Char(' ') => "Space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("Ctrl-{c}"),
            Key::Code(code) => match code {
                KeyCode::Left => "←".into(),
                KeyCode::Right => "→".into(),
                KeyCode::Up => "↑".into(),
                KeyCode::Down => "↓".into(),
                KeyCode::Home => "Home".into(),
                KeyCode::End => "End".into(),
                KeyCode::PageUp => "PgUp".into(),
                KeyCode::PageDown => "PgDn".into(),
                KeyCode::Tab => "Tab".into(),
                KeyCode::BackTab => "Shift-Tab".into(),
                KeyCode::Enter => "Enter".into(),
                KeyCode::Esc => "Esc".into(),
                other => format!("{other:?}"),
            },
        }
    }

    fn matches(self, event: &KeyEvent) -> bool {
        let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
        match (self, event.code) {
            (Key::Char(c), KeyCode::Char(e)) => !ctrl && c == e,
            (Key::Ctrl(c), KeyCode::Char(e)) => ctrl && c.eq_ignore_ascii_case(&e),
            (Key::Code(c), code) => c == code,
            _ => false,
        }
    }
}

/// One row of the keymap.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The keys, first one is the main one.
    pub keys: &'static [Key],
    /// What they do.
    pub action: Action,
    /// One line for the help popup.
    pub description: &'static str,
    /// The heading it is listed under in help.
    pub group: &'static str,
    /// Short label for the key bar, when it is shown there.
    pub bar: Option<&'static str>,
}

use Key::{Char, Code, Ctrl};

macro_rules! bind {
    ($group:literal, [$($key:expr),+], $action:expr, $desc:literal, $bar:expr) => {
        Binding { keys: &[$($key),+], action: $action, description: $desc, group: $group, bar: $bar }
    };
}

/// Every binding of the debugger.
// One row per binding, kept on one line each so the table reads as one.
#[rustfmt::skip]
pub static KEYMAP: std::sync::LazyLock<Vec<Binding>> = std::sync::LazyLock::new(|| {
    vec![
        bind!("Step", [Char('n'), Char(' '), Code(KeyCode::Right), Char('l')], Action::StepForward, "step forward one phase", Some("step")),
        bind!("Step", [Char('N'), Char('b'), Code(KeyCode::Left), Char('h')], Action::StepBack, "step back one phase", Some("back")),
        bind!("Step", [Char(']')], Action::NextRound, "next round", None),
        bind!("Step", [Char('[')], Action::PrevRound, "previous round (or start of this one)", None),
        bind!("Step", [Char('g'), Code(KeyCode::Home)], Action::First, "go to the start", None),
        bind!("Step", [Char('G'), Code(KeyCode::End)], Action::Last, "go to the end (summary)", Some("end")),
        bind!("Step", [Char('r')], Action::Restart, "restart with the opening strategy", None),
        bind!("Step", [Char('B')], Action::ToggleBreakpoint, "toggle a breakpoint on this phase kind", None),
        bind!("Step", [Char('c')], Action::Continue, "continue to a breakpoint, a new unpaired id or a repeated reply", Some("continue")),
        bind!("Step", [Char('f')], Action::ToggleFollow, "live: follow the newest step as traffic arrives (tail -f); stepping back pauses", None),
        bind!("Step", [Char('>')], Action::StepInto, "step into the sub-agent of this call", None),
        bind!("Step", [Char('<')], Action::StepOut, "step back out of a sub-agent", None),
        bind!("Strategy", [Char('e')], Action::ToggleExtract, "toggle extraction: first ↔ all", Some("extract")),
        bind!("Strategy", [Char('s')], Action::CycleStop, "cycle the stop rule", Some("stop")),
        bind!("Strategy", [Char('m')], Action::CycleBehavior, "cycle the stub model's behavior (the session's `model` scripts; --behavior)", Some("behavior")),
        bind!("Strategy", [Char('+'), Char('=')], Action::MoreRounds, "one more round allowed", None),
        bind!("Strategy", [Char('-')], Action::FewerRounds, "one round fewer allowed", None),
        bind!("Strategy", [Char('p')], Action::CycleClosure, "cycle the closure policy: leave / synthesize / strip", Some("closure")),
        bind!("Strategy", [Char('x')], Action::Interrupt, "interrupt the turn here (during Execute)", None),
        bind!("Strategy", [Char('t')], Action::ShowCompare, "table of every strategy × behavior", Some("table")),
        bind!("Fork", [Char('E')], Action::Edit, "edit this Reply (the model's answer) or Execute (the tool's return value) in $EDITOR and fork the run from here", Some("edit")),
        bind!("Fork", [Char('F')], Action::ShowForks, "the forks of this run, as a tree; Enter shows the selected one", None),
        bind!("Fork", [Char('W')], Action::WriteFork, "write the run shown as a new session file that reproduces it", None),
        bind!("Fork", [Char('D')], Action::ShowDiff, "this run beside another (its parent fork, or the other extraction), the first divergence marked", None),
        bind!("Fork", [Char('X')], Action::Export, "write a handout of this run (one HTML file)", None),
        bind!("Tour", [Char('a')], Action::TourAnswer, "tour: answer this part's question (Enter checks it)", None),
        bind!("Tour", [Char('T')], Action::TourNext, "tour: the next part", None),
        bind!("View", [Char('w')], Action::CycleView, "view messages as canonical / Anthropic / OpenAI Chat / Responses / Gemini", Some("wire")),
        bind!("View", [Char('/')], Action::Search, "search the messages at this step (ids, text, arguments, results); Enter selects the next match", Some("search")),
        bind!("View", [Char('y')], Action::Yank, "copy the selected message's JSON (the explain box's text when it has the focus) to the clipboard, through the terminal (OSC 52)", None),
        bind!("View", [Char('Y')], Action::YankToFile, "write what y copies to a file instead, and say where", None),
        bind!("View", [Char('d')], Action::ShowTools, "tool definitions, their schemas and the session's lint findings", Some("tools")),
        bind!("View", [Code(KeyCode::Tab)], Action::FocusNext, "focus the next pane", None),
        bind!("View", [Code(KeyCode::BackTab)], Action::FocusPrev, "focus the previous pane", None),
        bind!("View", [Char('j'), Code(KeyCode::Down)], Action::ScrollDown, "scroll down / next message", None),
        bind!("View", [Char('k'), Code(KeyCode::Up)], Action::ScrollUp, "scroll up / previous message", None),
        bind!("View", [Char('J')], Action::ExplainDown, "scroll the explain box down (the tour's text, a step's explanation), whatever has the focus", None),
        bind!("View", [Char('K')], Action::ExplainUp, "scroll the explain box up", None),
        bind!("View", [Code(KeyCode::PageDown)], Action::PageDown, "page down", None),
        bind!("View", [Code(KeyCode::PageUp)], Action::PageUp, "page up", None),
        bind!("View", [Code(KeyCode::Enter)], Action::Expand, "open the selected message's JSON", None),
        bind!("View", [Code(KeyCode::Esc)], Action::Back, "close a popup, cancel typing (q quits)", None),
        bind!("View", [Char('?')], Action::Help, "this help", Some("help")),
        bind!("View", [Char('q'), Ctrl('c')], Action::Quit, "quit", Some("quit")),
    ]
});

/// The keys a popup takes before the panes' keys: scrolling moves the
/// popup, Enter acts in it, Esc closes it. Any other key closes the popup
/// and does what it does on the panes.
#[rustfmt::skip]
pub static POPUP_KEYMAP: std::sync::LazyLock<Vec<Binding>> = std::sync::LazyLock::new(|| {
    vec![
        bind!("In a popup", [Char('j'), Code(KeyCode::Down)], Action::ScrollDown, "scroll the popup down (forks: the next fork)", None),
        bind!("In a popup", [Char('k'), Code(KeyCode::Up)], Action::ScrollUp, "scroll the popup up (forks: the previous fork)", None),
        bind!("In a popup", [Code(KeyCode::PageDown)], Action::PageDown, "a page down in the popup", None),
        bind!("In a popup", [Code(KeyCode::PageUp)], Action::PageUp, "a page up in the popup", None),
        bind!("In a popup", [Code(KeyCode::Enter)], Action::Expand, "forks: show the selected fork; a message's JSON: close it; elsewhere nothing", None),
        bind!("In a popup", [Code(KeyCode::Esc), Char('q')], Action::Back, "close the popup (Ctrl-c quits from anywhere)", None),
    ]
});

/// The action bound to a key event on the panes, if any.
pub fn action_for(event: &KeyEvent) -> Option<Action> {
    find(&KEYMAP, event)
}

/// The action of a key in `mode`: each mode reads its own table first.
pub fn action_in(mode: &Mode, event: &KeyEvent) -> Option<Action> {
    match mode {
        Mode::Search(_) | Mode::Answer(_) => search_action_for(event),
        Mode::Popup(_) => find(&POPUP_KEYMAP, event).or_else(|| action_for(event)),
        Mode::Panes | Mode::Editing(_) => action_for(event),
    }
}

fn find(table: &[Binding], event: &KeyEvent) -> Option<Action> {
    table
        .iter()
        .find(|b| b.keys.iter().any(|k| k.matches(event)))
        .map(|b| b.action.clone())
}

/// The action of a key while a search is being typed: characters go into
/// the search, not to the keymap.
pub fn search_action_for(event: &KeyEvent) -> Option<Action> {
    let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
    match event.code {
        KeyCode::Char('c') if ctrl => Some(Action::Quit),
        KeyCode::Char(c) if !ctrl => Some(Action::SearchType(c)),
        KeyCode::Backspace => Some(Action::SearchErase),
        KeyCode::Enter => Some(Action::SearchSubmit),
        KeyCode::Esc => Some(Action::SearchCancel),
        _ => None,
    }
}

/// All the keys of a binding, as shown in help: `n/Space/→/l`.
pub fn keys_label(binding: &Binding) -> String {
    binding
        .keys
        .iter()
        .map(|k| k.label())
        .collect::<Vec<_>>()
        .join("/")
}

/// The action a terminal event stands for in `mode`: a key press through
/// the mode's table, the wheel, a resize; `None` for anything else.
pub fn action_of(event: Event, mode: &Mode) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind == KeyEventKind::Press => action_in(mode, &key),
        Event::Mouse(mouse) => match mouse.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => Some(Action::Wheel {
                column: mouse.column,
                row: mouse.row,
                down: mouse.kind == MouseEventKind::ScrollDown,
            }),
            _ => None,
        },
        Event::Resize(w, h) => Some(Action::Resize(w, h)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn shifted_letters_and_ctrl_c_dispatch() {
        assert_eq!(
            action_for(&key(KeyCode::Char('N'), KeyModifiers::SHIFT)),
            Some(Action::StepBack)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('c'), KeyModifiers::NONE)),
            Some(Action::Continue)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('z'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn no_key_is_bound_twice_in_one_table() {
        for table in [&*KEYMAP, &*POPUP_KEYMAP] {
            let mut seen: Vec<Key> = Vec::new();
            for b in table.iter() {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn each_mode_reads_its_own_table() {
        let popup = Mode::Popup(crate::app::Popup::Help { scroll: 0 });
        let n = key(KeyCode::Char('n'), KeyModifiers::NONE);
        assert_eq!(action_in(&Mode::Panes, &n), Some(Action::StepForward));
        assert_eq!(action_in(&popup, &n), Some(Action::StepForward));
        assert_eq!(
            action_in(&Mode::Search(String::new()), &n),
            Some(Action::SearchType('n'))
        );
        let down = key(KeyCode::Down, KeyModifiers::NONE);
        assert_eq!(action_in(&popup, &down), Some(Action::ScrollDown));
    }
}
