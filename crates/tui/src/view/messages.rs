//! The message array at this step, one line per message; what this step
//! added is marked with `+`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{clip, pane_block, span};
use crate::app::{App, Pane};
use crate::theme::Theme;
use loopdbg_engine::message::{Block, Message};
use loopdbg_formats::provider::Format;
use loopdbg_lesson::report::{clean, compact};

pub(super) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    if let Some(format) = app.view {
        return render_provider(app, format, area, buf);
    }
    let t = &app.theme;
    let history = app.trace.history_at(app.cursor);
    let added = app.trace.added_at(app.cursor);
    // A narrow pane keeps the key that changes the view, not the one that
    // opens a message (Enter is in the key bar's help).
    let keys = match area.width >= 52 {
        true => "Enter: JSON · w: wire view ",
        false => "· w: wire view ",
    };
    let title = Line::from(vec![
        span(" messages ", t.title),
        span(format!("({}) canonical ", history.len()), t.dim),
        span(keys, t.dim),
    ]);
    render_list(app, area, buf, title, history.len(), |i, width| {
        message_line(i, &history[i], added.contains(&i), t, width)
    });
}

/// The pane frame and the visible window of a one-line-per-entry list,
/// with the selection kept in view (derived each frame, never stored).
fn render_list(
    app: &App,
    area: Rect,
    buf: &mut Buffer,
    title: Line<'_>,
    count: usize,
    line_for: impl Fn(usize, usize) -> Line<'static>,
) {
    let block = pane_block(app, Pane::Messages, title);
    let inner = block.inner(area);
    block.render(area, buf);
    let height = inner.height as usize;
    if height == 0 {
        return;
    }
    let selected = app.selected_message();
    let offset = selected.map_or(0, |s| (s + 1).saturating_sub(height));
    let width = inner.width as usize;
    let links = app.links();
    // Where each item comes from, worked out once per frame (only needed
    // when something is linked).
    let view_spans = app.view_spans().filter(|_| !links.messages.is_empty());
    let range_of = |i: usize| match (&view_spans, app.view) {
        (Some(spans), _) => spans.get(i).map_or(i..i, |s| s.from),
        (None, Some(_)) => i..i,
        (None, None) => i..i + 1,
    };
    let lines: Vec<Line> = (offset..count.min(offset + height))
        .map(|i| {
            let line = line_for(i, width);
            if Some(i) == selected && app.focus == Pane::Messages {
                line.patch_style(app.theme.selected)
            } else if !links.messages.is_empty()
                && range_of(i).any(|m| links.messages.binary_search(&m).is_ok())
            {
                // The partner of the selection: its tool_result, or the
                // tool_use it answers.
                line.patch_style(app.theme.linked)
            } else {
                line
            }
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn message_line(i: usize, m: &Message, is_new: bool, t: &Theme, width: usize) -> Line<'static> {
    let marker = if is_new {
        span("+", t.added)
    } else {
        span(" ", t.text)
    };
    let role_style = if is_new { t.added } else { t.title };
    let mut spans: Vec<Span> = vec![
        marker,
        span(format!("{i:>3} "), t.dim),
        span(format!("{:<9} ", m.role.as_str()), role_style),
    ];
    let room = width.saturating_sub(14);
    // Every block should show on the message's line; when the full forms do
    // not fit, ids win over names and text (Enter shows the full JSON).
    // The widest form that fits: text and results as wide as the pane
    // allows, calls with their arguments; then the compact form.
    let mut blocks = block_spans(m, t, false, room);
    if blocks_width(&blocks) > room {
        blocks = block_spans(m, t, false, 0);
    }
    if blocks_width(&blocks) > room {
        blocks = block_spans(m, t, true, 0);
    }
    let mut used = 0;
    for (text, style) in blocks {
        let left = room.saturating_sub(used);
        if left == 0 {
            break;
        }
        let shown = clip(&text, left);
        used += unicode_width::UnicodeWidthStr::width(shown.as_str());
        spans.push(span(shown, style));
    }
    if m.content.is_empty() {
        spans.push(span("(empty)", t.dim));
    }
    Line::from(spans)
}

fn blocks_width(blocks: &[(String, Style)]) -> usize {
    blocks
        .iter()
        .map(|(text, _)| unicode_width::UnicodeWidthStr::width(text.as_str()))
        .sum()
}

/// The blocks of a message as spans. `room` > 0 lets text, arguments and
/// results use the pane's width (split between the blocks); 0 keeps the
/// fixed short forms.
fn block_spans(m: &Message, t: &Theme, compact_form: bool, room: usize) -> Vec<(String, Style)> {
    let share = (room / m.content.len().max(1)).saturating_sub(4);
    let (text_max, content_max) = match (compact_form, room) {
        (true, _) => (10, 36),
        (false, 0) => (24, 36),
        // The pane's share, however narrow: a one-line prompt at 80
        // columns read "Look up t…" when its form asked for 24.
        (false, _) => (share.max(8), share.max(8)),
    };
    m.content
        .iter()
        .map(|b| match b {
            Block::Text { text } => (format!("\"{}\" ", clip(&clean(text), text_max)), t.text),
            Block::ToolUse { id, .. } if compact_form => (format!("⚒{} ", clean(id)), t.call),
            Block::ToolUse { id, name, input } if room > 0 => (
                format!(
                    "⚒ {}({}) {} ",
                    clean(name),
                    clip(&clean(&compact(input)), share.max(12)),
                    clean(id)
                ),
                t.call,
            ),
            Block::ToolUse { id, name, .. } => {
                (format!("⚒ {}({}) ", clean(name), clean(id)), t.call)
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => (
                format!(
                    "↩ {}{} {} ",
                    clean(tool_use_id),
                    if *is_error { " ✗error" } else { "" },
                    clip(&clean(&compact(content)), content_max)
                ),
                if *is_error { t.warn } else { t.ok },
            ),
        })
        .collect()
}

/// The history as `format` receives it: one line per provider message (or
/// Responses input item); the title carries the role sequence of the view.
fn render_provider(app: &App, format: Format, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let history = app.trace.history_at(app.cursor);
    // Roles for every item, JSON only for the lines on screen.
    let Some(spans) = app.view_spans() else {
        return;
    };
    let added = app.trace.added_at(app.cursor);
    let roles: Vec<&str> = spans
        .uncut()
        .iter()
        .rev()
        .take(40)
        .rev()
        .map(|s| s.role)
        .collect();
    let more = if spans.len() > roles.len() {
        "… "
    } else {
        ""
    };
    let title = Line::from(vec![
        span(format!(" {} ", format.title()), t.title),
        span(
            format!("({}) roles: {more}{} ", spans.len(), roles.join(" ")),
            t.dim,
        ),
    ]);
    render_list(app, area, buf, title, spans.len(), |i, width| {
        let Some(s) = spans.get(i) else {
            return Line::default();
        };
        let s = &s;
        let is_new = s.from.end > added.start && s.from.start < added.end;
        let marker = if is_new {
            span("+", t.added)
        } else {
            span(" ", t.text)
        };
        let summary = loopdbg_formats::provider::render_span(format, history, s)
            .map(|item| item_summary(&item.json))
            .unwrap_or_default();
        Line::from(vec![
            marker,
            span(format!("{i:>3} "), t.dim),
            span(
                format!("{:<20} ", s.role),
                if is_new { t.added } else { t.title },
            ),
            span(clip(&clean(&summary), width.saturating_sub(24)), t.text),
        ])
    });
}

/// A provider message on one line: its fields other than `role`, compact.
fn item_summary(json: &serde_json::Value) -> String {
    match json {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(k, _)| k.as_str() != "role" && k.as_str() != "type")
            .map(|(k, v)| format!("{k}: {}", compact(v)))
            .collect::<Vec<_>>()
            .join("  "),
        other => compact(other),
    }
}
