//! How deep a YAML text nests, found by one pass over its characters
//! before any parser sees it. The YAML parser takes time quadratic in the
//! nesting of unclosed flow collections (`[[[[…` two million deep: over a
//! minute, from a 2 KB `.gz`), while JSON that deep is refused at once; the
//! same limit is applied here, by position, so the error is located.

/// The deepest nesting accepted: serde_json's own limit.
pub const MAX_YAML_DEPTH: usize = 128;

/// The byte offset where `text` first nests deeper than `limit` (flow
/// brackets, block indentation and `- ` entries together), or `None`.
/// Quoted scalars and comments do not count. A quote opens a quoted scalar
/// only where YAML starts one: at a node, after `: `, a tag or an anchor,
/// and after `[`, `{` or `,` inside brackets. The apostrophe of a plain
/// `note: it's`, or a quote at the start of a block scalar's line (`|`,
/// `>`) or of a plain scalar's continuation line, is a character like any
/// other (taken for a quote, it switched the count off for the rest of the
/// text while the parser read the brackets after it). Where this reading
/// and YAML's could differ, it counts brackets YAML would not: a refusal
/// too many, never a nesting missed.
pub fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut state = Scan::default();
    // Indentations of the open block levels.
    let mut blocks: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let blank = rest.trim().is_empty() || rest.starts_with('#');
        let at_rest = state.flow == 0 && state.quote.is_none();
        // A line deeper than the one whose value runs on (`key: |`,
        // `key: plain words`) is text: no quote opens on it.
        let text_line = at_rest
            && state
                .text_under
                .is_some_and(|parent| blank || indent > parent);
        if at_rest && !text_line {
            state.text_under = None;
        }
        if at_rest && !text_line && !blank {
            while blocks.last().is_some_and(|&i| i >= indent) {
                blocks.pop();
            }
            blocks.push(indent);
            // `- - - x`: each entry marker opens a level on the same line.
            let dashes = rest
                .as_bytes()
                .chunks(2)
                .take_while(|pair| *pair == b"- ")
                .count();
            if blocks.len() + dashes > limit {
                return Some(offset + indent);
            }
        }
        if let Some(i) = state.line(line, text_line, blocks.len(), limit) {
            return Some(offset + i);
        }
        if at_rest
            && !text_line
            && !blank
            && state.flow == 0
            && state.quote.is_none()
            && state.runs_on
        {
            state.text_under = Some(indent);
        }
        offset += line.len();
    }
    None
}

/// Where the scan is between lines.
#[derive(Default)]
struct Scan {
    /// Open flow brackets.
    flow: usize,
    /// The quote of an open quoted scalar.
    quote: Option<char>,
    /// The last line's value runs on to deeper lines (a block scalar's
    /// indicator, or plain words).
    runs_on: bool,
    /// The indentation of the line whose value the deeper lines continue.
    text_under: Option<usize>,
    /// Inside brackets, a scalar may begin on the next line.
    scalar_start: bool,
}

impl Scan {
    /// Scans one line's characters; the byte where flow nesting passes
    /// `limit`, if it does.
    fn line(&mut self, line: &str, text_line: bool, blocks: usize, limit: usize) -> Option<usize> {
        // At a node's start a scalar may begin, except on a text line.
        let mut scalar_start = match self.flow {
            0 => !text_line,
            _ => self.scalar_start,
        };
        let mut previous = ' ';
        // The line's last token outside quotes, and whether a quoted
        // scalar ended it.
        let (mut token, mut token_first) = (String::new(), ' ');
        let mut ended_quoted = false;
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match (self.quote, c) {
                // `''` inside single quotes is one apostrophe.
                (Some('\''), '\'') if chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                    chars.next();
                }
                (Some('\''), '\'') => {
                    self.quote = None;
                    ended_quoted = true;
                }
                (Some('"'), '"') if previous != '\\' => {
                    self.quote = None;
                    ended_quoted = true;
                }
                (Some(_), _) => {}
                (None, '\'' | '"') if scalar_start => self.quote = Some(c),
                (None, '#') if previous.is_whitespace() && !text_line => break,
                (None, '[' | '{') => {
                    self.flow += 1;
                    if blocks + self.flow > limit {
                        return Some(i);
                    }
                }
                (None, ']' | '}') => self.flow = self.flow.saturating_sub(1),
                _ => {}
            }
            if self.quote.is_none() {
                if c.is_whitespace() {
                    // After `key: `, `- `, `? `, a tag (`!!str `) or an
                    // anchor (`&a `) comes a node.
                    let indicator = matches!(token.as_str(), "-" | "?")
                        || token.ends_with(':')
                        || matches!(token_first, '!' | '&');
                    scalar_start |= !text_line && indicator;
                } else {
                    if previous.is_whitespace() {
                        token.clear();
                        token_first = c;
                        ended_quoted = false;
                    }
                    token.push(c);
                    scalar_start = self.flow > 0 && matches!(c, '[' | '{' | ',');
                }
            } else {
                scalar_start = false;
            }
            // An escaped backslash escapes nothing after it.
            previous = if previous == '\\' && c == '\\' {
                ' '
            } else {
                c
            };
        }
        self.scalar_start = scalar_start;
        let indicator =
            token.trim_end_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
        let plain_end = !token.is_empty()
            && !ended_quoted
            && !token.ends_with(':')
            && !matches!(token.as_str(), "-" | "?")
            && !token.ends_with([']', '}']);
        self.runs_on = matches!(indicator, "|" | ">") || plain_end;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cassette_of_ordinary_depth_passes() {
        let text = "interactions:\n- request:\n    body: '{\"messages\": [[[[[[\"in a string\"]]]]]]}'\n    headers:\n      a: [1, {b: [2]}]  # a [ comment\n  response:\n    status: {code: 200}\n";
        assert_eq!(too_deep(text, 8), None);
    }

    #[test]
    fn flow_and_block_nesting_past_the_limit_is_located() {
        let flow = format!("interactions:\n- request: {}", "[".repeat(200));
        let at = too_deep(&flow, MAX_YAML_DEPTH).unwrap();
        assert_eq!(&flow[at..at + 1], "[");
        assert!(at < flow.len() - 60);
        let block: String = (0..200)
            .map(|i| format!("{}- a:\n", " ".repeat(i * 2)))
            .collect();
        assert!(too_deep(&block, MAX_YAML_DEPTH).is_some());
        let dashes = format!("interactions:\n- {}x\n", "- ".repeat(300));
        assert!(too_deep(&dashes, MAX_YAML_DEPTH).is_some());
    }

    /// The reproducers of issue 38: a plain scalar's apostrophe, a block
    /// scalar line that starts with a quote, each followed by unclosed
    /// flow nesting the parser takes minutes over.
    #[test]
    fn a_quote_inside_a_plain_or_block_scalar_does_not_switch_the_count_off() {
        let deep = "[".repeat(300);
        let plain = format!("interactions:\n- note: it's\n  request: {deep}\n");
        assert!(too_deep(&plain, MAX_YAML_DEPTH).is_some());
        let quoted_key = format!("interactions:\n- note: \"it's\" said\n  request: {deep}\n");
        assert!(too_deep(&quoted_key, MAX_YAML_DEPTH).is_some());
        let block = format!("interactions:\n- body: |\n    'open\n    \"open\n  request: {deep}\n");
        assert!(too_deep(&block, MAX_YAML_DEPTH).is_some());
        let folded = format!("a: >-\n  it's [[[[\nb: {deep}\n");
        assert!(too_deep(&folded, MAX_YAML_DEPTH).is_some());
        // A plain scalar's continuation line is text, `- '` included; a
        // comma is no indicator outside brackets; a quote closed after the
        // brackets does not hide them.
        let continued = format!("note: a\n  - 'x\nrequest: {deep}'\n");
        assert!(too_deep(&continued, MAX_YAML_DEPTH).is_some());
        let comma = format!("- key: x,'y\n  request: {deep}'\n");
        assert!(too_deep(&comma, MAX_YAML_DEPTH).is_some());
    }

    #[test]
    fn what_quoted_and_block_scalars_hold_is_not_counted() {
        let deep = "[".repeat(300);
        let single = format!("a: 'it''s {deep}\n  still quoted {deep}'\nb: [1]\n");
        assert_eq!(too_deep(&single, MAX_YAML_DEPTH), None);
        let double = format!("a: \"say \\\"{deep}\\\" \"\nb: {{c: [1]}}\n");
        assert_eq!(too_deep(&double, MAX_YAML_DEPTH), None);
        let tagged = format!("a: !!binary '{deep}'\nb: &x '{deep}'\n- [1, '{deep}']\n");
        assert_eq!(too_deep(&tagged, MAX_YAML_DEPTH), None);
        // A block scalar's brackets are counted (a line taken for its text
        // could be a key YAML reads), and a body's JSON closes them.
        let json = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let block = format!("a: |2\n  'it''s {json}\n\n  \"more {json}\nb: [1]\n");
        assert_eq!(too_deep(&block, MAX_YAML_DEPTH), None);
    }
}
