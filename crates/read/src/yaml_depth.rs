//! How deep a YAML text nests, found by one pass over its characters
//! before any parser sees it. The YAML parser takes time quadratic in the
//! nesting of unclosed flow collections (`[[[[…` two million deep: over a
//! minute, from a 2 KB `.gz`), while JSON that deep is refused at once; the
//! same limit is applied here, by position, so the error is located.

/// The deepest nesting accepted: serde_json's own limit.
pub const MAX_YAML_DEPTH: usize = 128;

/// The byte offset where `text` first nests deeper than `limit` (flow
/// brackets, block indentation and `- ` entries together), or `None`.
/// Quoted scalars and comments do not count.
pub fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut flow = 0usize;
    // Indentations of the open block levels.
    let mut blocks: Vec<usize> = Vec::new();
    let mut offset = 0;
    let (mut single, mut double) = (false, false);
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        let blank = rest.trim().is_empty() || rest.starts_with('#');
        if flow == 0 && !single && !double && !blank {
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
        let mut previous = ' ';
        for (i, c) in line.char_indices() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single && previous != '\\' => double = !double,
                '#' if !single && !double && previous.is_whitespace() => break,
                '[' | '{' if !single && !double => {
                    flow += 1;
                    if blocks.len() + flow > limit {
                        return Some(offset + i);
                    }
                }
                ']' | '}' if !single && !double => flow = flow.saturating_sub(1),
                _ => {}
            }
            previous = if previous == '\\' && c == '\\' {
                ' '
            } else {
                c
            };
        }
        offset += line.len();
    }
    None
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
}
