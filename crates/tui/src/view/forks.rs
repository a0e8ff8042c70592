//! The `F` popup: the original run and its forks as a tree, the one shown
//! marked, the selected one highlighted (Enter shows it).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::{span, text_popup};
use crate::app::App;
use crate::fork::{fork_name, tree};
use loopdbg_lesson::report::clean;

pub(super) fn render(app: &App, selected: u16, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let rows = tree(app);
    let mut lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .map(|(row, &(depth, i))| {
            let fork = &app.forks[i];
            let shown = if i == app.fork { "▶ " } else { "  " };
            let branch = if depth == 0 {
                String::new()
            } else {
                format!("{}└ ", "  ".repeat(depth - 1))
            };
            let at = if i == 0 {
                String::new()
            } else {
                format!(" (from step {})", fork.at_step + 1)
            };
            let style = if row as u16 == selected {
                t.selected
            } else if i == app.fork {
                t.title
            } else {
                t.text
            };
            let text = if i == 0 {
                "the original (as the session scripts it)".to_string()
            } else {
                format!("{branch}{}: {}{at}", fork_name(i), clean(&fork.label))
            };
            Line::from(vec![span(shown, t.title), span(text, style)])
        })
        .collect();
    lines.push(Line::from(""));
    lines.push(Line::from(span(
        "j/k select · Enter show · W writes the one shown · D compares it with its parent",
        t.dim,
    )));
    let title = format!("forks ({})", app.forks.len());
    text_popup(app, lines, &title, 100, 0, area, buf);
}
