//! The Enter popup: one message's full JSON.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use super::{centered, popup_frame, span};
use crate::app::App;
use loopdbg_lesson::report::clean;

/// Message `message` of the pane as the popup shows it (canonical, or as
/// the wire view's provider receives it): its JSON and its title.
pub fn message_json(app: &App, message: usize) -> Option<(String, String)> {
    Some(match app.view {
        None => {
            let m = app.trace.messages.get(message)?;
            (
                serde_json::to_string_pretty(m).unwrap_or_default(),
                format!("messages[{message}] · canonical"),
            )
        }
        Some(format) => {
            let item = app.view_item(message)?;
            let key = match format {
                loopdbg_formats::provider::Format::Responses => "input",
                loopdbg_formats::provider::Format::Gemini => "contents",
                _ => "messages",
            };
            let mut json = serde_json::to_string_pretty(&item.json).unwrap_or_default();
            // An assistant message also came back once as a response body,
            // with the reason the reply ended.
            if let Some(m) = app.trace.messages.get(item.from.start)
                && m.role == loopdbg_engine::message::Role::Assistant
                && let Some(body) = loopdbg_formats::provider::response_body(
                    format,
                    &app.trace.messages[..item.from.start],
                    m,
                )
            {
                json.push_str("\n\n// the response body that returned it:\n");
                json.push_str(&serde_json::to_string_pretty(&body).unwrap_or_default());
            }
            (json, format!("{key}[{message}] · {}", format.title()))
        }
    })
}

pub(super) fn render(app: &App, message: usize, scroll: u16, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Some((json, title)) = message_json(app, message) else {
        return;
    };
    let lines: Vec<Line> = json
        .lines()
        .map(|l| Line::from(span(clean(l), t.text)))
        .collect();
    let rect = centered(area, 100, lines.len() as u16 + 2);
    let inner = popup_frame(app, rect, &title, buf);
    let max = (lines.len() as u16).saturating_sub(inner.height);
    Paragraph::new(lines)
        .scroll((scroll.min(max), 0))
        .render(inner, buf);
}
