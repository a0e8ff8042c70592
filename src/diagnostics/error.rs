//! Errors for input that loopdbg cannot use. Every one names the file and,
//! when the text could be read, the line and column and what was expected.

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

use crate::diagnostics::json_span::line_col;

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
    src: NamedSource<String>,
    #[label("{label}")]
    span: SourceSpan,
    label: String,
}

impl LocatedError {
    /// An error at byte `offset` of `text`, which was read from `origin`.
    pub fn at(origin: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        let message = message.into();
        let (line, column) = line_col(text, offset);
        let offset = offset.min(text.len());
        let len = text[offset..].chars().next().map_or(0, char::len_utf8);
        LocatedError {
            origin: origin.to_string(),
            line,
            column,
            label: "here".to_string(),
            message,
            src: NamedSource::new(origin, text.to_string()),
            span: SourceSpan::new(offset.into(), len),
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
            LoadError::Unreadable { .. } | LoadError::Refused { .. } => None,
            LoadError::Located(e) => Some((e.line, e.column)),
        }
    }
}
