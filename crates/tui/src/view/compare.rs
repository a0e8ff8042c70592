//! The `t` popup: `loopdbg compare` for this session, current row marked.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::{centered, popup_frame, span};
use crate::app::App;
use loopdbg_lesson::report::{CompareRow, clean, show_text};

pub(super) fn render(app: &App, rows: &[CompareRow], scroll: u16, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let rect = centered(area, 120, rows.len() as u16 + 4);
    let s = app.strategy();
    let title = format!(
        "every extraction × stop rule × behavior · closure {} · {} rounds",
        s.closure, s.max_rounds
    );
    let inner = popup_frame(app, rect, &title, buf);
    let s = app.strategy();
    let max = (rows.len() as u16).saturating_sub(inner.height.saturating_sub(1));
    let body: Vec<Row> = rows
        .iter()
        .skip(scroll.min(max) as usize)
        .map(|r| {
            let current = r.extract == s.extract && r.stop == s.stop && r.behavior == s.behavior;
            let style = if current { t.selected } else { t.text };
            let end_style = if current {
                style
            } else if r.end == "model_done" && r.warnings.is_empty() {
                t.ok
            } else {
                t.warn
            };
            Row::new(vec![
                Cell::from(if current { "▶" } else { " " }),
                Cell::from(r.extract.as_str()),
                Cell::from(r.stop.as_str()),
                Cell::from(clean(&r.behavior)),
                Cell::from(r.rounds.to_string()),
                Cell::from(r.tool_runs.len().to_string()),
                Cell::from(r.unpaired.to_string()),
                Cell::from(Line::from(span(r.end, end_style))),
                Cell::from(Line::from(span(
                    if r.warnings.is_empty() {
                        "—".to_string()
                    } else {
                        r.warnings.join(", ")
                    },
                    if r.warnings.is_empty() {
                        style
                    } else {
                        end_style
                    },
                ))),
                Cell::from(show_text(r.final_text.as_deref())),
            ])
            .style(style)
        })
        .collect();
    let header = Row::new(vec![
        "",
        "extract",
        "stop",
        "behavior",
        "rounds",
        "runs",
        "unpaired",
        "end",
        "warnings",
        "final text",
    ])
    .style(t.title);
    Table::new(
        body,
        [
            Constraint::Length(1),
            Constraint::Length(7),
            Constraint::Length(13),
            Constraint::Length(14),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(18),
            Constraint::Min(10),
        ],
    )
    .header(header)
    .render(inner, buf);
}
