//! A file followed as it grows (`--follow`): each refresh reads only what
//! was appended since the last (it re-read the whole file on each change,
//! and woke on the open its own read caused; issue 23, item 8), starts
//! over when the name leads to another file or the file was cut, and
//! refuses what is not a regular file (a FIFO would block the follower
//! forever, `/dev/zero` never ends).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A followed file as far as it has been read: its complete lines, the
/// start of a line still being written, and which file it was (a rename
/// puts another file under the name).
#[derive(Debug)]
pub struct Tail {
    lines: Vec<u8>,
    partial: Vec<u8>,
    read_to: u64,
    identity: Option<(u64, u64)>,
    max_line: u64,
    /// Inside a line past `max_line`: skipped to its end.
    skipping: bool,
    /// How many lines past `max_line` were left out.
    skipped: u64,
}

/// What a refresh found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// No new complete line.
    Nothing,
    /// Complete lines were appended: [`Tail::lines`] from this byte on.
    Appended {
        /// Where the new lines start in [`Tail::lines`].
        from: usize,
    },
    /// Another file is under the name, or the file was cut: everything in
    /// [`Tail::lines`] is new.
    Replaced,
}

/// How long a follower rests after it took a change, in
/// multiples of the time the caller took: the new lines are read alone,
/// but what a caller builds of them may grow with the file, so lines that
/// come faster than that are taken together (following a busy agent's
/// 56 MB log cost a whole core; this keeps it under a fifth).
pub const REST: u32 = 4;

/// The longest line a follower waits for: every reader's limit.
pub const MAX_FOLLOWED_LINE: u64 = 1 << 30;

impl Tail {
    /// The file `path`, whose complete lines `lines` were read whole.
    pub fn at(path: &Path, lines: Vec<u8>) -> Tail {
        Tail::bounded(path, lines, MAX_FOLLOWED_LINE)
    }

    /// [`Tail::at`], waiting for lines of at most `max_line` bytes.
    pub fn bounded(path: &Path, lines: Vec<u8>, max_line: u64) -> Tail {
        let meta = std::fs::metadata(path).ok();
        Tail {
            read_to: lines.len() as u64,
            lines,
            partial: Vec::new(),
            identity: meta.as_ref().map(identity),
            max_line,
            skipping: false,
            skipped: 0,
        }
    }

    /// The file `path` read up to byte `read_to` (the end of its complete
    /// lines), holding none of them: a follower that holds only a log's
    /// newest part, read from the file's end.
    pub fn after(path: &Path, read_to: u64) -> Tail {
        Tail {
            read_to,
            ..Tail::at(path, Vec::new())
        }
    }

    /// The complete lines read so far.
    pub fn lines(&self) -> &[u8] {
        &self.lines
    }

    /// Hands over the complete lines read so far and holds them no more,
    /// for a caller that keeps its own record of them (`--follow` hands
    /// them to the thread that judges the file: the text of a 1 GB log was
    /// held here for the life of the follower). Later changes count
    /// `from` in what is read after.
    pub fn take_lines(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.lines)
    }

    /// The start of a line still being written.
    pub fn partial(&self) -> &[u8] {
        &self.partial
    }

    /// How many lines longer than the bound were left out (each is an
    /// empty line in [`Tail::lines`], so lines keep their numbers).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// How far into the file has been read.
    pub fn read_to(&self) -> u64 {
        self.read_to
    }

    /// Reads what was appended since, and says what changed. Anything but
    /// a regular file is not read. Read a block at a time: a line longer
    /// than the bound is not held but skipped to its end and kept as an
    /// empty line (1.1 GB appended as one line was read whole, then grown
    /// to 2 GiB, and the allocation's failure aborted the debugger with
    /// the terminal left raw).
    pub fn refresh(&mut self, path: &Path) -> std::io::Result<Change> {
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let now = Some(identity(&meta));
        let mut replaced = false;
        if now != self.identity || meta.len() < self.read_to {
            // Replaced or truncated: from the start.
            self.lines.clear();
            self.partial.clear();
            self.read_to = 0;
            self.identity = now;
            self.skipping = false;
            replaced = true;
        }
        let unchanged = if replaced {
            Change::Replaced
        } else {
            Change::Nothing
        };
        if meta.len() == self.read_to {
            return Ok(unchanged);
        }
        let from = self.lines.len();
        let mut file = std::fs::File::open(path)?;
        file.seek(SeekFrom::Start(self.read_to))?;
        let mut appended = file.take(meta.len() - self.read_to);
        let mut block = vec![0u8; BLOCK];
        loop {
            let n = match appended.read(&mut block) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.read_to += n as u64;
            self.absorb(&block[..n]);
        }
        Ok(match (self.lines.len() > from, replaced) {
            (_, true) => Change::Replaced,
            (true, false) => Change::Appended { from },
            (false, false) => Change::Nothing,
        })
    }

    /// Takes bytes read: complete lines to `lines`, the rest to `partial`,
    /// a line past the bound skipped.
    fn absorb(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let end = data.iter().position(|&b| b == b'\n');
            if self.skipping {
                let Some(end) = end else { return };
                self.skipping = false;
                self.lines.push(b'\n');
                data = &data[end + 1..];
                continue;
            }
            let len = end.unwrap_or(data.len());
            if (self.partial.len() + len) as u64 > self.max_line {
                self.partial = Vec::new();
                self.skipped += 1;
                self.skipping = true;
                continue;
            }
            match end {
                Some(end) => {
                    self.lines.append(&mut self.partial);
                    self.lines.extend_from_slice(&data[..=end]);
                    data = &data[end + 1..];
                }
                None => {
                    let limit = usize::try_from(self.max_line).unwrap_or(usize::MAX);
                    // A line that does not fit in memory is skipped as one
                    // past the bound is, and counted.
                    if crate::lines::push_bounded(&mut self.partial, data, limit).is_err() {
                        self.partial = Vec::new();
                        self.skipped += 1;
                        self.skipping = true;
                    }
                    return;
                }
            }
        }
    }
}

/// How much is read at a time.
const BLOCK: usize = 1 << 20;

/// Which file a name leads to: a rename puts another one under it.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        (
            0,
            meta.created().map_or(0, |t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64)
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    /// `--follow` reads what was appended, not the file again; a file
    /// replaced or cut is read from its start; a FIFO is refused, not
    /// waited on forever (issue 23, item 8).
    #[test]
    fn a_tail_reads_what_was_appended_and_refuses_what_is_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "one\ntw").unwrap();
        let mut tail = Tail::at(&path, b"one\n".to_vec());
        assert_eq!(
            tail.refresh(&path).unwrap(),
            Change::Nothing,
            "half a line is not news"
        );
        assert_eq!(tail.partial(), b"tw");
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"o\nthree\n").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 4 });
        assert_eq!(tail.lines(), b"one\ntwo\nthree\n");
        assert_eq!(tail.read_to(), 14);
        // Nothing new: nothing read.
        assert_eq!(tail.refresh(&path).unwrap(), Change::Nothing);
        // Replaced by rename with a shorter file.
        let fresh = dir.path().join("fresh");
        std::fs::write(&fresh, "new\n").unwrap();
        std::fs::rename(&fresh, &path).unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Replaced);
        assert_eq!(tail.lines(), b"new\n");
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                std::fs::remove_file(&path).unwrap();
                std::fs::rename(&fifo, &path).unwrap();
                let e = tail.refresh(&path).unwrap_err();
                assert_eq!(e.to_string(), "not a regular file");
            }
        }
    }

    /// Lines taken are not held; what comes after is read
    /// from where the file was read to, and a replaced file from its start.
    #[test]
    fn lines_taken_are_not_held_and_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        let mut tail = Tail::at(&path, Vec::new());
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 0 });
        assert_eq!(tail.take_lines(), b"one\ntwo\n");
        assert!(tail.lines().is_empty());
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"three\nfo").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 0 });
        assert_eq!(tail.lines(), b"three\n");
        assert_eq!(tail.partial(), b"fo");
        file.write_all(b"ur\n").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 6 });
        assert_eq!(tail.take_lines(), b"three\nfour\n");
        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Replaced);
        assert_eq!(tail.lines(), b"new\n");
    }

    /// A follower that holds only a log's newest part starts where its
    /// complete lines end: only what comes after is read.
    #[test]
    fn a_tail_after_a_place_reads_only_what_comes_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(
            &path,
            "one
two
thr",
        )
        .unwrap();
        let mut tail = Tail::after(&path, 8);
        assert_eq!(tail.refresh(&path).unwrap(), Change::Nothing);
        assert_eq!(tail.partial(), b"thr");
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"ee\n").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 0 });
        assert_eq!(tail.take_lines(), b"three\n");
        // Cut below where it was read to: the file from its start.
        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Replaced);
        assert_eq!(tail.lines(), b"new\n");
    }

    #[test]
    fn a_line_past_the_bound_is_skipped_to_its_end_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "ok\n").unwrap();
        let mut tail = Tail::bounded(&path, b"ok\n".to_vec(), 8);
        std::fs::write(&path, "ok\n0123456789").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Nothing);
        assert!(tail.partial().is_empty(), "the long line is held");
        std::fs::write(&path, "ok\n0123456789abc\nnext\nlast").unwrap();
        assert_eq!(tail.refresh(&path).unwrap(), Change::Appended { from: 3 });
        assert_eq!(
            tail.lines(),
            b"ok\n\nnext\n",
            "numbers kept: line 2 is empty"
        );
        assert_eq!(tail.partial(), b"last");
        assert_eq!(tail.skipped(), 1);
    }
}
