//! Byte offsets of the values in a JSON text, so that a semantic error found
//! after deserialisation ("duplicate tool name", "`when` names an undefined
//! tool") can still point at `file:line:column`.
//!
//! serde_json reports positions for syntax and type errors only; this module
//! is the small second pass that recovers positions for everything else. It
//! only runs on text serde_json has already accepted, so it may assume the
//! JSON is well formed and stops quietly (returning `None`) if it is not.

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    /// An object member, by key. Readers name members with literals, which
    /// are borrowed: a reader builds a path for every block it reads, and
    /// copying each key was a tenth of reading a body.
    Key(std::borrow::Cow<'static, str>),
    /// An array element, by index.
    Index(usize),
}

impl From<&str> for PathSeg {
    fn from(key: &str) -> Self {
        PathSeg::Key(key.to_string().into())
    }
}

impl From<usize> for PathSeg {
    fn from(index: usize) -> Self {
        PathSeg::Index(index)
    }
}

/// A path into a JSON document as typed segments, written as people read
/// it: `messages[3].content[1]`, `[2].input` under a bare array. Readers
/// build it a segment at a time; whoever locates it in the text walks the
/// segments, never the written form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(Vec<PathSeg>);

impl JsonPath {
    /// The document itself.
    pub fn root() -> JsonPath {
        JsonPath::default()
    }

    /// This path, then the member `key` (a literal is borrowed, not copied).
    pub fn key(&self, key: impl Into<std::borrow::Cow<'static, str>>) -> JsonPath {
        self.then([PathSeg::Key(key.into())])
    }

    /// This path, then element `index`.
    pub fn index(&self, index: usize) -> JsonPath {
        self.then([PathSeg::Index(index)])
    }

    /// This path, then the member `key`'s element `index`, in one step.
    pub fn key_index(
        &self,
        key: impl Into<std::borrow::Cow<'static, str>>,
        index: usize,
    ) -> JsonPath {
        self.then([PathSeg::Key(key.into()), PathSeg::Index(index)])
    }

    fn then<const N: usize>(&self, more: [PathSeg; N]) -> JsonPath {
        let mut segs = Vec::with_capacity(self.0.len() + N);
        segs.extend_from_slice(&self.0);
        segs.extend(more);
        JsonPath(segs)
    }

    /// This path, then `other`'s segments.
    pub fn join(&self, other: &JsonPath) -> JsonPath {
        JsonPath([&self.0[..], &other.0[..]].concat())
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[PathSeg] {
        &self.0
    }

    /// True for the document itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<PathSeg>> for JsonPath {
    fn from(segs: Vec<PathSeg>) -> Self {
        JsonPath(segs)
    }
}

impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) if i == 0 => f.write_str(k)?,
                PathSeg::Key(k) => write!(f, ".{k}")?,
                PathSeg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl JsonPath {
    /// Reads a path back from its written form (`messages[3].content[1]`,
    /// `[2].input`): `None` for text no path writes (an unclosed bracket,
    /// an empty key).
    pub fn parse_written(text: &str) -> Option<JsonPath> {
        let mut segments = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('[') {
                let close = after.find(']')?;
                segments.push(PathSeg::Index(after[..close].parse().ok()?));
                rest = &after[close + 1..];
            } else {
                let rest_key = rest.strip_prefix('.').unwrap_or(rest);
                let end = rest_key.find(['.', '[']).unwrap_or(rest_key.len());
                if end == 0 {
                    return None;
                }
                segments.push(PathSeg::from(&rest_key[..end]));
                rest = &rest_key[end..];
            }
        }
        Some(JsonPath(segments))
    }

    /// The path as written, as [`Display`](std::fmt::Display) writes it but
    /// without the formatter: every block a reader reads gets its path
    /// written.
    pub fn written(&self) -> String {
        let mut out = String::with_capacity(8 * self.0.len());
        let mut digits = itoa::Buffer::new();
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) => {
                    if i > 0 {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                PathSeg::Index(n) => {
                    out.push('[');
                    out.push_str(digits.format(*n));
                    out.push(']');
                }
            }
        }
        out
    }
}

impl From<JsonPath> for std::borrow::Cow<'static, str> {
    fn from(path: JsonPath) -> Self {
        std::borrow::Cow::Owned(path.written())
    }
}

impl From<&JsonPath> for std::borrow::Cow<'static, str> {
    fn from(path: &JsonPath) -> Self {
        std::borrow::Cow::Owned(path.written())
    }
}

/// Builds a path from a mixed list of keys and indices: `path!["tools", 0, "name"]`.
#[macro_export]
macro_rules! json_path {
    ($($seg:expr),* $(,)?) => {
        ::std::vec::Vec::<$crate::diagnostics::json_span::PathSeg>::from([$($crate::diagnostics::json_span::PathSeg::from($seg)),*])
    };
}

/// A parsed JSON value with the byte offset where it starts.
#[derive(Debug)]
pub struct SpanNode {
    /// Byte offset of the value's first character.
    pub start: usize,
    /// Byte offset just past the value's last character.
    pub end: usize,
    /// What kind of value it is, with its children.
    pub kind: SpanKind,
}

/// The shape of a [`SpanNode`].
#[derive(Debug)]
pub enum SpanKind {
    /// An object: members in document order with the byte offset of each key.
    Object(Vec<Member>),
    /// An array.
    Array(Vec<SpanNode>),
    /// A string, number, boolean or null.
    Scalar,
}

/// One member of an object.
#[derive(Debug)]
pub struct Member {
    /// The decoded key.
    pub key: String,
    /// Byte offset of the key's opening quote.
    pub key_start: usize,
    /// The member's value.
    pub value: SpanNode,
}

impl SpanNode {
    /// Parses `text` into a span tree; `None` if it is not well-formed JSON.
    pub fn parse(text: &str) -> Option<SpanNode> {
        let mut p = Parser {
            bytes: text.as_bytes(),
            text,
            pos: 0,
        };
        p.skip_ws();
        let node = p.value(0)?;
        Some(node)
    }

    /// The node at `path`, if it exists.
    pub fn get(&self, path: &[PathSeg]) -> Option<&SpanNode> {
        let mut node = self;
        for seg in path {
            node = match (&node.kind, seg) {
                (SpanKind::Object(members), PathSeg::Key(k)) => {
                    // The last duplicate wins, as in serde_json's maps.
                    &members.iter().rev().find(|m| &m.key == k)?.value
                }
                (SpanKind::Array(items), PathSeg::Index(i)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// The byte offset that best points at `path`: the value itself, or the
    /// deepest ancestor that exists.
    pub fn offset_of(&self, path: &[PathSeg]) -> usize {
        let mut node = self;
        for seg in path {
            let next = match (&node.kind, seg) {
                (SpanKind::Object(members), PathSeg::Key(k)) => {
                    members.iter().rev().find(|m| &m.key == k).map(|m| &m.value)
                }
                (SpanKind::Array(items), PathSeg::Index(i)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node.start
    }

    /// Byte offset of the key of member `key` in the object at `path`.
    pub fn key_offset(&self, path: &[PathSeg], key: &str) -> Option<usize> {
        match &self.get(path)?.kind {
            SpanKind::Object(members) => members
                .iter()
                .rev()
                .find(|m| m.key == key)
                .map(|m| m.key_start),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 512;

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<SpanNode> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.pos;
        let kind = match *self.bytes.get(self.pos)? {
            b'{' => {
                self.pos += 1;
                let mut members = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.skip_ws();
                        let key_start = self.pos;
                        let key = self.string()?;
                        self.skip_ws();
                        if self.bytes.get(self.pos) != Some(&b':') {
                            return None;
                        }
                        self.pos += 1;
                        self.skip_ws();
                        let value = self.value(depth + 1)?;
                        members.push(Member {
                            key,
                            key_start,
                            value,
                        });
                        self.skip_ws();
                        match self.bytes.get(self.pos)? {
                            b',' => self.pos += 1,
                            b'}' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                SpanKind::Object(members)
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.skip_ws();
                        items.push(self.value(depth + 1)?);
                        self.skip_ws();
                        match self.bytes.get(self.pos)? {
                            b',' => self.pos += 1,
                            b']' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                SpanKind::Array(items)
            }
            b'"' => {
                self.string()?;
                SpanKind::Scalar
            }
            _ => {
                while let Some(b) = self.bytes.get(self.pos) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                if self.pos == start {
                    return None;
                }
                SpanKind::Scalar
            }
        };
        Some(SpanNode {
            start,
            end: self.pos,
            kind,
        })
    }

    /// Reads a string starting at the opening quote and returns it decoded.
    fn string(&mut self) -> Option<String> {
        if self.bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos;
        self.pos += 1;
        loop {
            match *self.bytes.get(self.pos)? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    break;
                }
                _ => self.pos += 1,
            }
        }
        serde_json::from_str(self.text.get(start..self.pos)?).ok()
    }
}

/// A 1-based line and column (in characters) for a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = text[line_start..offset].chars().count() + 1;
    (line, col)
}

/// Line starts of a text, for turning many offsets into `(line, column)`
/// without rescanning the text each time (lint can report thousands).
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// The last answer `(offset, line, column)`: offsets asked in order on
    /// one long line (minified JSON) count only the characters in between.
    last: (usize, usize, usize),
}

impl<'a> LineIndex<'a> {
    /// Indexes `text` once.
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex {
            text,
            starts,
            last: (0, 1, 1),
        }
    }

    /// What [`line_col`] gives, in O(log lines) plus the characters since
    /// the previous answer on the same line (or since the line start).
    pub fn line_col(&mut self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(self.text, offset.min(self.text.len()));
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let (last_offset, last_line, last_col) = self.last;
        let col = if last_line == line && last_offset >= start && last_offset <= offset {
            last_col + self.text[last_offset..offset].chars().count()
        } else {
            self.text[start..offset].chars().count() + 1
        };
        self.last = (offset, line, col);
        (line, col)
    }
}

/// The byte offset of a 1-based line and 1-based *byte* column, as serde_json
/// reports them.
pub fn offset_of_line_byte_col(text: &str, line: usize, byte_col: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line.max(1) {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    floor_char_boundary(
        text,
        (line_start + byte_col.saturating_sub(1)).min(line_end),
    )
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_written_path_reads_back() {
        for written in [
            "messages[3].content[1]",
            "[2].input",
            "contents[0].parts[1].functionCall",
            "system",
        ] {
            assert_eq!(JsonPath::parse_written(written).unwrap().written(), written);
        }
        for bad in ["messages[3", "messages..x", "[x]"] {
            assert!(JsonPath::parse_written(bad).is_none(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn line_index_agrees_with_line_col() {
        let text = "ab\n北京\n\nxyz";
        let mut index = LineIndex::new(text);
        for offset in (0..=text.len() + 2).chain((0..=text.len()).rev()) {
            assert_eq!(index.line_col(offset), line_col(text, offset), "{offset}");
        }
    }

    #[test]
    fn finds_nested_values_and_keys() {
        let text = "{\n  \"a\": [1, {\"b\": \"x\"}],\n  \"c\": null\n}";
        let tree = SpanNode::parse(text).unwrap();
        let b = tree.offset_of(&json_path!["a", 1, "b"]);
        assert_eq!(&text[b..b + 3], "\"x\"");
        assert_eq!(line_col(text, b), (2, 18));
        let c = tree.key_offset(&[], "c").unwrap();
        assert_eq!(line_col(text, c), (3, 3));
        // A missing member points at its closest existing ancestor.
        let missing = tree.offset_of(&json_path!["a", 7]);
        assert_eq!(&text[missing..missing + 1], "[");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let text = "{\"北京\": 1}";
        let tree = SpanNode::parse(text).unwrap();
        let v = tree.offset_of(&json_path!["北京"]);
        assert_eq!(line_col(text, v), (1, 8));
    }

    #[test]
    fn serde_byte_columns_map_back_to_offsets() {
        let text = "ab\ncd北e";
        assert_eq!(offset_of_line_byte_col(text, 2, 3), 5);
        assert_eq!(offset_of_line_byte_col(text, 9, 1), text.len());
        // A column inside a multi-byte character snaps to its start.
        assert_eq!(offset_of_line_byte_col(text, 2, 4), 5);
    }

    #[test]
    fn rejects_broken_text_without_panicking() {
        for bad in ["", "{", "[1,", "{\"a\" 1}", "\"abc", "{\"a\":}"] {
            assert!(SpanNode::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_path_is_written_as_people_read_it() {
        let p = JsonPath::root()
            .key("messages")
            .index(3)
            .key("content")
            .index(1);
        assert_eq!(p.to_string(), "messages[3].content[1]");
        assert_eq!(
            JsonPath::root().index(2).key("input").to_string(),
            "[2].input"
        );
        assert_eq!(JsonPath::root().to_string(), "");
        let joined = JsonPath::root().key("log").join(&p);
        assert_eq!(joined.to_string(), "log.messages[3].content[1]");
    }
}
