//! Text from input made inert for a terminal: whatever a session, a
//! transcript or an error message carries is shown, never obeyed.

use std::fmt::Write;

/// True for characters a terminal would act on or that hide or reorder
/// text: control characters (escape sequences, carriage return, backspace,
/// OSC), bidirectional embeddings, overrides and isolates, zero-width
/// characters and the byte order mark.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
                // Tag characters: invisible, and read by models as text
                // ("ASCII smuggling").
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// `text` with every unsafe character escaped (`\n`, `\t`, `\r`, or
/// `\u{1b}`): safe to print on a terminal, readable as what it was.
pub fn clean(text: &str) -> String {
    if !text.chars().any(is_unsafe) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A whole text (a report, a diff, a handout printed to the terminal)
/// made inert line by line: its line breaks and tabs stay what they are,
/// every other unsafe character is escaped as [`clean`] escapes it.
pub fn clean_lines(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_here = |c: char| c != '\n' && c != '\t' && is_unsafe(c);
    if !text.chars().any(unsafe_here) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for piece in text.split_inclusive('\n') {
        let (line, end) = match piece.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (piece, ""),
        };
        for (k, part) in line.split('\t').enumerate() {
            if k > 0 {
                out.push('\t');
            }
            out.push_str(&clean(part));
        }
        out.push_str(end);
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{clean, clean_lines};

    #[test]
    fn a_text_keeps_its_lines_and_tabs() {
        assert_eq!(clean_lines("a\tb\nc\n"), "a\tb\nc\n");
        assert_eq!(
            clean_lines("x \u{1b}[2J\ny\u{9b}31m\r\n\u{202e}z"),
            "x \\u{1b}[2J\ny\\u{9b}31m\\r\n\\u{202e}z"
        );
    }

    #[test]
    fn escapes_what_a_terminal_would_obey() {
        assert_eq!(clean("plain 北京"), "plain 北京");
        assert_eq!(
            clean("a\u{1b}]52;c;aGk=\u{7}b"),
            "a\\u{1b}]52;c;aGk=\\u{7}b"
        );
        assert_eq!(clean("x\ry\u{8}"), "x\\ry\\u{8}");
        assert_eq!(clean("a\u{e0041}b"), "a\\u{e0041}b");
        assert_eq!(clean("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        assert_eq!(
            clean("zero\u{200b}width\u{feff}"),
            "zero\\u{200b}width\\u{feff}"
        );
    }
}
