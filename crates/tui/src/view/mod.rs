//! Drawing. `impl Widget for &App` borrows the state; nothing here changes
//! it. One file per pane; [`layout`] is shared with mouse hit-testing so
//! the wheel scrolls the pane under the pointer.

mod code;
mod compare;
pub mod detail;
mod forks;
mod header;
mod help;
mod ids;
mod keybar;
mod messages;
mod rundiff;
pub mod summary;
mod timeline;
mod tools;
mod walkthrough;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::app::{App, Pane, Popup};

/// Below this size the debugger asks for a larger terminal.
pub const MIN_WIDTH: u16 = 60;
/// Below this size the debugger asks for a larger terminal.
pub const MIN_HEIGHT: u16 = 18;

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy)]
pub struct Areas {
    /// Title and strategy.
    pub header: Rect,
    /// Phases and rounds.
    pub timeline: Rect,
    /// The message array.
    pub messages: Rect,
    /// The pairing ledger.
    pub ids: Rect,
    /// The walkthrough.
    pub walkthrough: Rect,
    /// Explanation (and the end summary at Done).
    pub explain: Rect,
    /// Key bar.
    pub keybar: Rect,
}

/// Splits `area` for `app` (the summary box is taller at the end).
pub fn layout(app: &App, area: Rect) -> Areas {
    // The box grows with what it has to say, up to a third of the screen
    // (the end summary's warnings, a tour stop, a long notice); the panes
    // give the room up. Past that it scrolls and says there is more.
    // A tour stop's own text and its verdict are never cut: the box takes
    // what they need, leaving the panes their least (header 2, timeline
    // 3, panes 6, key bar 1).
    let tour = summary::tour_height(app, area.width).saturating_add(1);
    let most = (area.height / 3)
        .max(4)
        .max(tour.min(area.height.saturating_sub(12)));
    let wanted = summary::wanted_height(app, area.width).saturating_add(1);
    let bottom = wanted.clamp(4, most);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(2),
            // The timeline's rule goes on a short terminal (24 rows).
            Constraint::Length(if area.height < 30 { 2 } else { 3 }),
            Constraint::Min(4),
            Constraint::Length(bottom),
            Constraint::Length(1),
        ])
        .split(area);
    // Narrow terminals (80 columns) give the right column half: the
    // ledger's lines and the loop's code are what a step changes.
    let left = match area.width < 100 {
        true => 50,
        false => 55,
    };
    let main = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Percentage(left),
            Constraint::Percentage(100 - left),
        ])
        .split(rows[2]);
    // The code pane keeps room for its folded lines (every ◆ line and the
    // line of this phase) while the ledger keeps two rows of its own.
    let column = main[1].height;
    let lower = match app.session.walkthrough {
        true => column * 55 / 100,
        false => (column * 55 / 100).max(code::folded_rows(app).min(column.saturating_sub(4))),
    };
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(0), Constraint::Length(lower)])
        .split(main[1]);
    Areas {
        header: rows[0],
        timeline: rows[1],
        messages: main[0],
        ids: right[0],
        walkthrough: right[1],
        explain: rows[3],
        keybar: rows[4],
    }
}

/// The pane under screen position (`column`, `row`).
pub fn pane_at(app: &App, area: Rect, column: u16, row: u16) -> Option<Pane> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let a = layout(app, area);
    let hit = |r: Rect| column >= r.x && column < r.right() && row >= r.y && row < r.bottom();
    [
        (a.messages, Pane::Messages),
        (a.ids, Pane::Ids),
        (a.walkthrough, Pane::Walkthrough),
        (a.explain, Pane::Explain),
    ]
    .into_iter()
    .find(|(r, _)| hit(*r))
    .map(|(_, p)| p)
}

/// A bordered block whose border shows focus.
pub(crate) fn pane_block<'a>(app: &App, pane: Pane, title: Line<'a>) -> Block<'a> {
    let style = if app.focus == pane {
        app.theme.focus_border
    } else {
        app.theme.border
    };
    Block::default()
        .borders(Borders::ALL)
        .border_style(style)
        .title(title)
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            too_small(area, buf);
            return;
        }
        let a = layout(self, area);
        header::render(self, a.header, buf);
        timeline::render(self, a.timeline, buf);
        messages::render(self, a.messages, buf);
        ids::render(self, a.ids, buf);
        // The walkthrough where a session declares it (seed 003's two
        // trips); everywhere else, the loop's code beside its state.
        if self.session.walkthrough {
            walkthrough::render(self, a.walkthrough, buf);
        } else {
            code::render(self, a.walkthrough, buf);
        }
        summary::render(self, a.explain, buf);
        keybar::render(self, a.keybar, buf);
        match self.popup() {
            None => {}
            Some(Popup::Help { scroll }) => help::render(self, *scroll, area, buf),
            Some(Popup::Tools { scroll }) => tools::render(self, *scroll, area, buf),
            Some(Popup::Compare { rows, scroll }) => {
                compare::render(self, rows, *scroll, area, buf)
            }
            Some(Popup::Detail { message, scroll }) => {
                detail::render(self, *message, *scroll, area, buf)
            }
            Some(Popup::Forks { scroll }) => forks::render(self, *scroll, area, buf),
            Some(Popup::Diff {
                other,
                diff,
                scroll,
            }) => rundiff::render(self, other, diff, *scroll, area, buf),
        }
    }
}

fn too_small(area: Rect, buf: &mut Buffer) {
    let text = format!(
        "loopdbg needs at least {MIN_WIDTH}×{MIN_HEIGHT}; this terminal is {}×{}",
        area.width, area.height
    );
    Paragraph::new(text)
        .wrap(Wrap { trim: true })
        .render(area, buf);
}

/// A centred rectangle of at most `width`×`height`, clamped to `area`.
pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// A wide character (CJK, emoji) left of `rect` whose second half falls
/// inside it would hide the popup's left border: the terminal draws the
/// character over the cell, and the frame diff skips that cell as covered.
/// Such characters give way to a space.
fn split_wide_cells_at(rect: Rect, buf: &mut Buffer) {
    use unicode_width::UnicodeWidthStr;
    if rect.x <= buf.area.x {
        return;
    }
    for y in rect.top()..rect.bottom() {
        if let Some(cell) = buf.cell_mut((rect.x - 1, y))
            && cell.symbol().width() > 1
        {
            cell.set_symbol(" ");
        }
    }
}

/// Clears `rect` and draws a popup frame titled `title`; returns the inside.
/// A popup of wrapped `lines`, `width` wide (the screen allows), as tall
/// as they need, scrolled by `scroll` and never past the last line.
pub(crate) fn text_popup(
    app: &App,
    lines: Vec<Line<'_>>,
    title: &str,
    width: u16,
    scroll: u16,
    area: Rect,
    buf: &mut Buffer,
) {
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let width = width.min(area.width);
    let height = paragraph.line_count(width.saturating_sub(2)) as u16;
    let rect = centered(area, width, height.saturating_add(2));
    let inner = popup_frame(app, rect, title, buf);
    let max = height.saturating_sub(inner.height);
    paragraph.scroll((scroll.min(max), 0)).render(inner, buf);
}

pub(crate) fn popup_frame(app: &App, rect: Rect, title: &str, buf: &mut Buffer) -> Rect {
    split_wide_cells_at(rect, buf);
    Clear.render(rect, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.focus_border)
        .title(Span::styled(format!(" {title} "), app.theme.title))
        .title_bottom(Line::from(Span::styled(
            " j/k scroll · Esc close ",
            app.theme.dim,
        )));
    let inner = block.inner(rect);
    block.render(rect, buf);
    inner
}

/// Clips `text` to `max` characters of display width with an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut width = 0;
    let mut out = String::new();
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if width + w > max.saturating_sub(1) {
            // Only clip when the rest does not fit.
            let rest: usize = text
                .chars()
                .skip(out.chars().count())
                .map(|c| c.width().unwrap_or(0))
                .sum();
            if width + rest <= max {
                out.extend(text.chars().skip(out.chars().count()));
                return out;
            }
            out.push('…');
            return out;
        }
        width += w;
        out.push(c);
    }
    out
}

/// A styled span helper.
pub(crate) fn span(text: impl Into<String>, style: Style) -> Span<'static> {
    Span::styled(text.into(), style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Style;

    /// A popup whose left border falls on the second half of `北` keeps
    /// that border: the character gives way to a space.
    #[test]
    fn a_wide_character_left_of_a_popup_gives_way_to_its_border() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 3));
        for y in 0..3 {
            buf.set_string(0, y, "北京北京北", Style::default());
        }
        let popup = Rect::new(1, 0, 5, 3);
        split_wide_cells_at(popup, &mut buf);
        Clear.render(popup, &mut buf);
        Block::default()
            .borders(Borders::ALL)
            .render(popup, &mut buf);
        let row: Vec<&str> = (0..10).map(|x| buf[(x, 0)].symbol()).collect();
        assert_eq!(row[..2], [" ", "┌"]);
        for y in 0..3 {
            assert_eq!(buf[(0, y)].symbol(), " ", "row {y}");
        }
        // A popup at the left edge has nothing to split.
        split_wide_cells_at(Rect::new(0, 0, 3, 3), &mut buf);
    }
}
