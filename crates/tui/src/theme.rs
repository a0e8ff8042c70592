//! Colours and emphasis. With `NO_COLOR` every colour is `Reset` and
//! selection is carried by REVERSED / BOLD / UNDERLINED alone, so it stays
//! visible (crossterm's own NO_COLOR handling would wipe those too).

use ratatui::style::{Color, Modifier, Style};

/// The styles the panes draw with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Ordinary text.
    pub text: Style,
    /// Secondary text.
    pub dim: Style,
    /// Titles and headings.
    pub title: Style,
    /// The current phase, selection, the focused pane's border.
    pub selected: Style,
    /// What this step added or changed.
    pub added: Style,
    /// Problems: unpaired ids, 400s, spin.
    pub warn: Style,
    /// Good news: paired ids, a clean end.
    pub ok: Style,
    /// Borders of unfocused panes.
    pub border: Style,
    /// Border of the focused pane.
    pub focus_border: Style,
    /// Tool calls.
    pub call: Style,
    /// The partner of the selection: a tool_use's tool_result, or the
    /// tool_use a tool_result answers.
    pub linked: Style,
}

impl Theme {
    /// The colour theme.
    pub fn color() -> Theme {
        Theme {
            text: Style::new(),
            dim: Style::new().fg(Color::DarkGray),
            title: Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            added: Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
            warn: Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            ok: Style::new().fg(Color::Green),
            border: Style::new().fg(Color::DarkGray),
            focus_border: Style::new().fg(Color::Cyan),
            call: Style::new().fg(Color::Yellow),
            linked: Style::new()
                .bg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
        }
    }

    /// The monochrome theme for `NO_COLOR`.
    pub fn monochrome() -> Theme {
        let plain = Style::new().fg(Color::Reset).bg(Color::Reset);
        Theme {
            text: plain,
            dim: plain,
            title: plain.add_modifier(Modifier::BOLD),
            selected: plain.add_modifier(Modifier::REVERSED | Modifier::BOLD),
            added: plain.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            warn: plain.add_modifier(Modifier::BOLD),
            ok: plain,
            border: plain,
            focus_border: plain.add_modifier(Modifier::BOLD),
            call: plain,
            linked: plain.add_modifier(Modifier::UNDERLINED | Modifier::ITALIC),
        }
    }

    /// `monochrome()` when `no_color` (the caller reads `NO_COLOR`).
    pub fn pick(no_color: bool) -> Theme {
        if no_color {
            Theme::monochrome()
        } else {
            Theme::color()
        }
    }
}
