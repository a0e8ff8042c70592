//! Whole lines read together in chunks of about a megabyte: one buffer
//! per chunk, not one allocation per line, and every line bounded. A line
//! longer than the bound is dropped to its end and reported by its number;
//! the lines after it are read on (a 1.1 GB line took 3.4 GB and stopped
//! everything after it; issue 23, items 8 and 13).

use std::io::{BufRead, Read};

/// Appends `bytes` to `buf`, never holding more than `limit` bytes of
/// capacity: a buffer doubles up to [`GROW_TO_LIMIT`], then is reserved
/// once up to `limit` (address space the system hands out as it is
/// written), so a long line is not copied from one buffer to the next
/// twice its size. A 1 GiB line refused at its limit took 2.1 GB (each
/// doubling copied, the old buffers not yet given back); it takes its
/// own size.
///
/// Reserving is asked, never assumed: where the address space is not
/// there (`ulimit -v`, a 32-bit process, the Python interpreter's own
/// limits) the buffer grows by doubling instead, and where not even that
/// fits, the read fails with [`std::io::ErrorKind::OutOfMemory`] rather
/// than aborting the process (a 17 KB `.json.gz` of 16 MiB once did, with
/// 4 GiB reserved for it).
pub fn push_bounded(buf: &mut Vec<u8>, bytes: &[u8], limit: usize) -> std::io::Result<()> {
    let needed = buf.len() + bytes.len();
    if needed > buf.capacity() {
        let doubled = buf.capacity().max(64 << 10).saturating_mul(2).min(limit);
        let first = match needed > GROW_TO_LIMIT {
            true => limit,
            false => doubled,
        };
        let reserved = buf
            .try_reserve_exact(first.max(needed) - buf.len())
            .or_else(|_| buf.try_reserve_exact(doubled.max(needed) - buf.len()))
            .or_else(|_| buf.try_reserve_exact(needed - buf.len()));
        if reserved.is_err() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!(
                    "not enough memory to hold {} more bytes of this input ({} read)",
                    bytes.len(),
                    buf.len()
                ),
            ));
        }
    }
    buf.extend_from_slice(bytes);
    Ok(())
}

/// Past this a buffer is reserved to its limit at once.
pub const GROW_TO_LIMIT: usize = 16 << 20;

/// Reads `reader` to its end into `buf`, at most `limit` bytes plus one
/// (so a caller can tell the input went past `limit`), the buffer grown
/// as [`push_bounded`] grows it.
pub fn read_to_end_bounded(
    reader: &mut (impl BufRead + ?Sized),
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<usize> {
    let start = buf.len();
    let mut taken = reader.take(limit as u64 + 1 - start.min(limit) as u64);
    loop {
        let available = match taken.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(buf.len() - start);
        }
        let n = available.len();
        push_bounded(buf, available, limit + 1)?;
        taken.consume(n);
    }
}

/// Reads one line (to and with its `\n`) into `buf`, at most `limit`
/// bytes plus one, the buffer grown as [`push_bounded`] grows it.
pub fn read_line_bounded(
    reader: &mut (impl BufRead + ?Sized),
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<usize> {
    let start = buf.len();
    loop {
        let available = match reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(buf.len() - start);
        }
        let room = (limit + 1).saturating_sub(buf.len());
        let (take, ends) = match memchr::memchr(b'\n', available) {
            Some(i) if i < room => (i + 1, true),
            _ => (available.len().min(room), false),
        };
        push_bounded(buf, &available[..take], limit + 1)?;
        reader.consume(take);
        if ends || buf.len() > limit {
            return Ok(buf.len() - start);
        }
    }
}

/// Whole lines, read from `rest` in chunks.
pub struct LineChunks<R> {
    rest: R,
    /// The number of the next line to be read (1-based).
    next: usize,
    chunk_bytes: usize,
    max_line: usize,
    failed: bool,
}

/// One chunk: whole lines (each ending in `\n`, except perhaps the last
/// line of the input), the number of the first, and the line after them
/// that was too long to keep, if any.
#[derive(Debug, PartialEq, Eq)]
pub struct RawChunk {
    /// The number of the first line in `bytes`.
    pub first: usize,
    /// The lines.
    pub bytes: Vec<u8>,
    /// The number of the line after `bytes` that was longer than the
    /// bound: read to its end and dropped.
    pub overlong: Option<usize>,
}

impl<R: BufRead> LineChunks<R> {
    /// Chunks of about `chunk_bytes` from `rest`, whose first line is
    /// number `first_line`; no line kept is longer than `max_line` bytes
    /// (its `\n` not counted).
    pub fn new(rest: R, first_line: usize, chunk_bytes: usize, max_line: usize) -> LineChunks<R> {
        LineChunks {
            rest,
            next: first_line,
            chunk_bytes: chunk_bytes.max(1),
            max_line,
            failed: false,
        }
    }

    /// The next chunk, filling `buf` (cleared first: a caller that hands
    /// back the buffers it is done with saves zeroing a fresh megabyte a
    /// chunk). `None` at the end, and after an error.
    pub fn next_chunk(&mut self, mut buf: Vec<u8>) -> Option<std::io::Result<RawChunk>> {
        if self.failed {
            return None;
        }
        buf.clear();
        let overflowed = match self.fill(&mut buf) {
            Ok(overflowed) => overflowed,
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        };
        if buf.is_empty() && !overflowed {
            return None;
        }
        let first = self.next;
        self.next += memchr::memchr_iter(b'\n', &buf).count();
        let overlong = overflowed.then(|| {
            self.next += 1;
            self.next - 1
        });
        Some(Ok(RawChunk {
            first,
            bytes: buf,
            overlong,
        }))
    }

    /// Reads about a chunk, then on to the end of its last line; a last
    /// line past the bound is dropped to its end (`true`).
    fn fill(&mut self, buf: &mut Vec<u8>) -> std::io::Result<bool> {
        while buf.len() < self.chunk_bytes {
            let available = self.rest.fill_buf()?;
            if available.is_empty() {
                return Ok(false);
            }
            let take = available.len().min(self.chunk_bytes - buf.len());
            push_bounded(
                buf,
                &available[..take],
                self.chunk_bytes + self.max_line + 1,
            )?;
            self.rest.consume(take);
        }
        let line_start = memchr::memrchr(b'\n', buf).map_or(0, |p| p + 1);
        let mut overflowed = false;
        // Once the line is dropped the buffer ends with the line before
        // it: reading goes on to the dropped line's end regardless (a
        // fuzzed input found its tail read back as a line of its own).
        while overflowed || !buf.ends_with(b"\n") {
            let available = self.rest.fill_buf()?;
            if available.is_empty() {
                break;
            }
            let (take, ends) = match memchr::memchr(b'\n', available) {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            // The line's length without its `\n`: a last line that never
            // ends is bounded the same (it got one byte more; fuzzing).
            let line = buf.len() - line_start + take - usize::from(ends);
            if !overflowed && line <= self.max_line {
                push_bounded(buf, &available[..take], line_start + self.max_line + 1)?;
            } else {
                overflowed = true;
                buf.truncate(line_start);
            }
            self.rest.consume(take);
            if ends && overflowed {
                break;
            }
        }
        Ok(overflowed)
    }
}

/// The lines of `text`, split at each `\n` as `str::split_terminator`
/// splits them (a last `\n` ends the last line; it starts none), found
/// with `memchr`'s vector search: the standard library's search for a
/// `char` went a word at a time, 4 % of a scan's instructions.
pub fn lines_of(text: &str) -> impl Iterator<Item = &str> {
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes());
    let mut start = 0;
    std::iter::from_fn(move || match ends.next() {
        Some(end) => {
            // `\n` is one byte, never inside a character: both ends are
            // character boundaries.
            let line = &text[start..end];
            start = end + 1;
            Some(line)
        }
        None if start < text.len() => {
            let line = &text[start..];
            start = text.len();
            Some(line)
        }
        None => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_as_split_terminator_splits_them() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n",
            "é\n\u{1F600}\r\nx",
            "\nlead",
        ] {
            let ours: Vec<&str> = lines_of(text).collect();
            let std: Vec<&str> = text.split_terminator('\n').collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }

    fn all(text: &[u8], chunk: usize, max: usize) -> Vec<RawChunk> {
        let mut lines = LineChunks::new(std::io::BufReader::with_capacity(3, text), 1, chunk, max);
        std::iter::from_fn(|| lines.next_chunk(Vec::new()))
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn chunks_hold_whole_lines_numbered_from_the_first() {
        let chunks = all(b"aa\nbb\ncc\ndd", 4, 100);
        let texts: Vec<_> = chunks
            .iter()
            .map(|c| (c.first, String::from_utf8_lossy(&c.bytes).into_owned()))
            .collect();
        assert_eq!(texts, [(1, "aa\nbb\n".into()), (3, "cc\ndd".into())]);
    }

    /// The dropped line is read to its end even when the line before it
    /// ends the chunk: its tail came back as a line (found by fuzzing).
    #[test]
    fn a_dropped_line_leaves_nothing_behind() {
        let text = format!("{{\"a\":1}}\n{{\"b\":\"{}\"}}\nshort\n", "x".repeat(40));
        let chunks = all(text.as_bytes(), 16, 24);
        let kept: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
        assert_eq!(String::from_utf8(kept).unwrap(), "{\"a\":1}\nshort\n");
        assert_eq!(chunks[0].overlong, Some(2));
        assert_eq!(chunks[1].first, 3);
    }

    /// A last line without its `\n` is bounded like any other.
    #[test]
    fn an_unended_last_line_is_bounded_too() {
        let chunks = all(b"a\n123456", 2, 5);
        let kept: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
        assert_eq!(kept, b"a\n");
        assert_eq!(
            chunks.iter().filter_map(|c| c.overlong).collect::<Vec<_>>(),
            [2]
        );
        let exact = all(b"a\n12345", 2, 5);
        assert!(exact.iter().all(|c| c.overlong.is_none()));
    }

    #[test]
    fn a_line_past_the_bound_is_dropped_and_the_next_ones_read() {
        let chunks = all(b"a\nbbbbbbbbbbbb\nc\nd\n", 2, 5);
        let kept: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
        assert_eq!(kept, b"a\nc\nd\n");
        let overlong: Vec<_> = chunks.iter().filter_map(|c| c.overlong).collect();
        assert_eq!(overlong, [2]);
        let after = chunks.iter().position(|c| c.overlong.is_some()).unwrap() + 1;
        assert_eq!(chunks[after].first, 3);
    }

    #[test]
    fn bounded_reads_stop_one_past_the_limit_and_never_hold_more() {
        let limit = 300_000;
        let long = vec![b'x'; 1_000_000];
        let mut buf = Vec::new();
        let mut reader = std::io::BufReader::with_capacity(7_000, &long[..]);
        let n = read_line_bounded(&mut reader, &mut buf, limit).unwrap();
        assert_eq!(n, limit + 1);
        assert!(buf.capacity() <= limit + 1, "{}", buf.capacity());
        let mut buf = Vec::new();
        let mut reader = std::io::BufReader::with_capacity(7_000, &long[..]);
        read_to_end_bounded(&mut reader, &mut buf, limit).unwrap();
        assert_eq!(buf.len(), limit + 1);
        assert!(buf.capacity() <= limit + 1, "{}", buf.capacity());
        let mut lines = &b"one\ntwo\nthree"[..];
        let mut buf = Vec::new();
        read_line_bounded(&mut lines, &mut buf, 100).unwrap();
        assert_eq!(buf, b"one\n");
        buf.clear();
        read_to_end_bounded(&mut lines, &mut buf, 100).unwrap();
        assert_eq!(buf, b"two\nthree");
        let chunks = all(&long, 10, limit);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].overlong, Some(1));
        assert!(
            chunks[0].bytes.capacity() <= limit + 11,
            "{}",
            chunks[0].bytes.capacity()
        );
    }
}

/// The whole lines of a file's last bytes: what [`tail_lines`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailLines {
    /// The lines, from the first that starts inside the part read to the
    /// end of the file's first `size` bytes.
    pub text: String,
    /// How many bytes from the end were read.
    pub read: u64,
}

/// The longest line a file's newest part is made of when that line alone
/// is longer than the part (a pasted screenshot is a line of a few MB of
/// base64): read whole up to this, so the part is never empty for it.
pub const MAX_PART_LINE: u64 = 16 << 20;

/// The whole lines among the last `bytes` of the first `size` bytes of
/// `path` (a line cut by the start is dropped; bytes that are not UTF-8
/// are replaced). Reads `bytes`, whatever the file's size; when no line
/// is whole within them, the last line alone, read back to its start if
/// it holds at most [`MAX_PART_LINE`] bytes.
pub fn tail_lines(path: &std::path::Path, size: u64, bytes: u64) -> std::io::Result<TailLines> {
    let start = size.saturating_sub(bytes);
    let mut file = std::fs::File::open(path)?;
    let mut raw = read_range(&mut file, start, size)?;
    let mut whole_from = match start {
        0 => Some(0),
        // The byte before the part may be a line's end: only then is the
        // first line whole, and that is not known here, so it goes.
        _ => raw.iter().position(|&b| b == b'\n').map(|end| end + 1),
    };
    if start > 0 && whole_from.is_none_or(|from| from >= raw.len()) {
        // No whole line in the part: the last line, if not too long.
        if let Some(line) = last_line_start(&mut file, size, MAX_PART_LINE)? {
            raw = read_range(&mut file, line, size)?;
            whole_from = Some(0);
        }
    }
    let whole = whole_from.map_or(&[][..], |from| &raw[from.min(raw.len())..]);
    Ok(TailLines {
        text: String::from_utf8_lossy(whole).into_owned(),
        read: raw.len() as u64,
    })
}

/// Bytes `from..to` of `file`.
pub fn read_range(file: &mut std::fs::File, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    std::io::Read::by_ref(file)
        .take(to.saturating_sub(from))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Where the last line of `file`'s first `end` bytes starts (a newline
/// at `end - 1` ends it): read backwards a block at a time, `None` when
/// the line is longer than `limit`.
pub fn last_line_start(
    file: &mut std::fs::File,
    end: u64,
    limit: u64,
) -> std::io::Result<Option<u64>> {
    const BLOCK: u64 = 1 << 20;
    // The last line's own newline is not its start.
    let mut upto = end.saturating_sub(1);
    while upto > 0 {
        if end - upto > limit {
            return Ok(None);
        }
        let from = upto.saturating_sub(BLOCK);
        let block = read_range(file, from, upto)?;
        if let Some(k) = block.iter().rposition(|&b| b == b'\n') {
            let start = from + k as u64 + 1;
            return Ok((end - start <= limit).then_some(start));
        }
        upto = from;
    }
    Ok((end <= limit).then_some(0))
}

#[cfg(test)]
mod tail_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_tail_starts_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "first line\nsecond\nthird\n").unwrap();
        let all = tail_lines(&path, 24, 100).unwrap();
        assert_eq!(all.text, "first line\nsecond\nthird\n");
        assert_eq!(all.read, 24);
        // Eight bytes from the end start inside "second": it goes.
        let part = tail_lines(&path, 24, 8).unwrap();
        assert_eq!(part.text, "third\n");
        assert_eq!(part.read, 8);
        // Only the first `size` bytes count (the file may have grown).
        let older = tail_lines(&path, 18, 12).unwrap();
        assert_eq!(older.text, "second\n");
    }

    /// A newest line longer than the part (a pasted screenshot) is the
    /// part alone, read back to its start; one past the limit leaves the
    /// part empty, as before.
    #[test]
    fn a_last_line_longer_than_the_part_is_the_part() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let long = "y".repeat(3 << 20);
        std::fs::write(&path, format!("first\n{long}\n")).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let part = tail_lines(&path, size, 1000).unwrap();
        assert_eq!(part.text, format!("{long}\n"));
        let mut file = std::fs::File::open(&path).unwrap();
        assert_eq!(last_line_start(&mut file, size, 4 << 20).unwrap(), Some(6));
        assert_eq!(last_line_start(&mut file, size, 1 << 20).unwrap(), None);
        assert_eq!(last_line_start(&mut file, 6, 100).unwrap(), Some(0));
        // Without a newline before it, the line starts the file.
        std::fs::write(&path, format!("{long}\n")).unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        assert_eq!(
            last_line_start(&mut file, size - 6, 4 << 20).unwrap(),
            Some(0)
        );
        // Past the limit: nothing whole, as before.
        let longer = "z".repeat((MAX_PART_LINE + 10) as usize);
        std::fs::write(&path, format!("first\n{longer}\n")).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(tail_lines(&path, size, 1000).unwrap().text, "");
    }
}
