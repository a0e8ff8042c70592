//! Errors for input that loopdbg cannot use. Every one names the file and,
//! when the text could be read, the line and column and what was expected.

use miette::{Diagnostic, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};
use thiserror::Error;

use crate::diagnostics::inert::clean;
use crate::diagnostics::json_span::line_col;

/// How many characters of the offending line a snippet shows on each side
/// of the error: a minified document is one line of megabytes.
pub const SNIPPET_CHARS: usize = 60;

/// The part of the offending line a snippet shows: a window around the
/// error, made inert, that reports the real line and column.
#[derive(Debug)]
struct Snippet {
    name: String,
    text: String,
    /// 0-based line of `text` in the input.
    line: usize,
    /// 0-based column (in characters) where `text` starts.
    column: usize,
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        // The window is one line: the column is where the span starts in it,
        // in characters, plus where the window starts in the real line.
        let column = self.column
            + self.text[..span.offset().min(self.text.len())]
                .chars()
                .count();
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            self.line + inner.line(),
            column,
            inner.line_count(),
        )))
    }
}

/// The window of `text`'s line around byte `offset`, escaped, and the span
/// of the offending character in it.
fn snippet(
    origin: &str,
    text: &str,
    offset: usize,
    line: usize,
    column: usize,
) -> (Snippet, SourceSpan) {
    let offset = floor_char(text, offset.min(text.len()));
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let before_start = text[line_start..offset]
        .char_indices()
        .rev()
        .nth(SNIPPET_CHARS - 1)
        .map_or(line_start, |(i, _)| line_start + i);
    let here_len = text[offset..line_end]
        .chars()
        .next()
        .map_or(0, char::len_utf8);
    let after_end = text[offset + here_len..line_end]
        .char_indices()
        .nth(SNIPPET_CHARS)
        .map_or(line_end, |(i, _)| offset + here_len + i);
    let cut_before = before_start > line_start;
    let cut_after = after_end < line_end;
    let mut window = String::new();
    if cut_before {
        window.push('…');
    }
    window.push_str(&clean(&text[before_start..offset]));
    let at = window.len();
    let here = clean(&text[offset..offset + here_len]);
    window.push_str(&here);
    window.push_str(&clean(&text[offset + here_len..after_end]));
    if cut_after {
        window.push('…');
    }
    let shown_before = window[..at].chars().count();
    let snippet = Snippet {
        name: origin.to_string(),
        text: window,
        line: line.saturating_sub(1),
        column: (column.saturating_sub(1)).saturating_sub(shown_before),
    };
    (snippet, SourceSpan::new(at.into(), here.len()))
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A session or transcript that cannot be used, with its location.
#[derive(Debug, Error, Diagnostic)]
#[error("{origin}:{line}:{column}: {message}")]
pub struct LocatedError {
    /// The file name as the user gave it.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong and what was expected.
    pub message: String,
    #[source_code]
    src: Snippet,
    #[label("{label}")]
    span: SourceSpan,
    label: String,
}

impl LocatedError {
    /// An error at byte `offset` of `text`, which was read from `origin`.
    pub fn at(origin: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        let message = clean(&message.into());
        let (line, column) = line_col(text, offset);
        let (src, span) = snippet(origin, text, offset, line, column);
        LocatedError {
            origin: origin.to_string(),
            line,
            column,
            label: "here".to_string(),
            message,
            src,
            span,
        }
    }

    /// An error on line `line` of a JSON Lines file, at byte `offset` of
    /// that line's text (the snippet shows the one line).
    pub fn in_line(
        origin: &str,
        line: usize,
        line_text: &str,
        offset: usize,
        message: impl Into<String>,
    ) -> Self {
        let mut e = LocatedError::at(origin, line_text, offset, message);
        e.line = line;
        e.src.line = line.saturating_sub(1);
        e
    }
}

/// Everything that can stop a file from loading.
#[derive(Debug, Error, Diagnostic)]
pub enum LoadError {
    /// The file could not be read at all.
    #[error("{origin}: cannot read: {reason}")]
    Unreadable {
        /// The file name as the user gave it.
        origin: String,
        /// Why, from the operating system.
        reason: String,
    },
    /// The output could not be written (what was there before is intact).
    #[error("{origin}: cannot write: {reason}")]
    Unwritable {
        /// The file that was being written.
        origin: String,
        /// Why, from the operating system.
        reason: String,
    },
    /// The request cannot be carried out as asked (nothing was written).
    #[error("{origin}: {reason}")]
    Refused {
        /// The file concerned.
        origin: String,
        /// Why.
        reason: String,
    },
    /// The file was read but its content is not usable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Located(#[from] Box<LocatedError>),
}

impl LoadError {
    /// Convenience for [`LocatedError::at`] boxed into a `LoadError`.
    pub fn at(origin: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        LoadError::Located(Box::new(LocatedError::at(origin, text, offset, message)))
    }

    /// Boxes a located error.
    pub fn located(e: LocatedError) -> Self {
        LoadError::Located(Box::new(e))
    }

    /// The location as `(line, column)`, when there is one.
    pub fn location(&self) -> Option<(usize, usize)> {
        match self {
            LoadError::Unreadable { .. }
            | LoadError::Unwritable { .. }
            | LoadError::Refused { .. } => None,
            LoadError::Located(e) => Some((e.line, e.column)),
        }
    }
}
