//! The `d` popup: each tool as the model sees it (name, description, the
//! JSON Schema of its arguments), the local table that answers it, and the
//! session's lint findings, so a trap such as `location` vs `city` is seen
//! in the debugger and not only by `loopdbg lint`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::{span, text_popup};
use crate::app::App;
use loopdbg_lesson::lint::{display_path, lint};
use loopdbg_lesson::report::{clean, compact};

/// Table rows listed per tool; the rest are counted.
const ROWS_SHOWN: usize = 20;

pub(super) fn render(app: &App, scroll: u16, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut lines: Vec<Line> = Vec::new();
    let findings = lint(&app.session);
    if findings.is_empty() {
        lines.push(Line::from(span("lint: no findings", t.ok)));
    } else {
        lines.push(Line::from(span(
            format!("lint: {} finding(s)", findings.len()),
            t.warn,
        )));
        for f in &findings {
            lines.push(Line::from(vec![
                span(format!("  {} ", f.kind), t.warn),
                span(format!("{}: ", display_path(&f.path)), t.dim),
                span(clean(&f.message), t.text),
            ]));
        }
    }
    lines.push(Line::from(""));
    if app.session.tools.is_empty() {
        lines.push(Line::from(span(
            match &app.replay {
                Some(_) => "no tool definitions: a captured conversation carries only the calls",
                None => "this session defines no tools",
            },
            t.dim,
        )));
    }
    for tool in &app.session.tools {
        lines.push(Line::from(vec![
            span(clean(&tool.name), t.call),
            span(
                if tool.description.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", clean(&tool.description))
                },
                t.text,
            ),
        ]));
        lines.push(Line::from(span(
            "  parameters (the schema the model fills):",
            t.title,
        )));
        let schema = serde_json::to_string_pretty(&tool.parameters).unwrap_or_default();
        lines.extend(
            schema
                .lines()
                .map(|l| Line::from(span(format!("    {}", clean(l)), t.text))),
        );
        if let Some(agent) = &tool.agent {
            lines.push(Line::from(span(
                format!("  runs the sub-agent {}", clean(agent)),
                t.title,
            )));
        } else if let Some(error) = &tool.fails {
            lines.push(Line::from(span(
                format!("  every call fails: {}", clean(error)),
                t.warn,
            )));
        } else {
            lines.push(Line::from(span(
                format!(
                    "  local table ({} row(s); a call's arguments must equal a row's exactly):",
                    tool.table.len()
                ),
                t.title,
            )));
            for row in tool.table.iter().take(ROWS_SHOWN) {
                lines.push(Line::from(span(
                    format!(
                        "    {} → {}",
                        clean(&compact(&row.args)),
                        clean(&compact(&row.result))
                    ),
                    t.text,
                )));
            }
            if tool.table.len() > ROWS_SHOWN {
                lines.push(Line::from(span(
                    format!("    … {} more", tool.table.len() - ROWS_SHOWN),
                    t.dim,
                )));
            }
            if let Some(miss) = &tool.miss {
                lines.push(Line::from(span(
                    format!("    no row matches → error {}", clean(&compact(miss))),
                    t.dim,
                )));
            }
        }
        lines.push(Line::from(""));
    }
    let title = format!("tools ({}) · lint", app.session.tools.len());
    text_popup(app, lines, &title, 100, scroll, area, buf);
}
