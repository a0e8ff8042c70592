//! `loopdbg mcp -- COMMAND ARGS…`: a tap on a stdio MCP server. The agent
//! starts the tap where it would start the server; the tap starts the
//! server and relays both ways byte for byte (each read is written on at
//! once, before anything is recorded), while a copy of each direction is
//! cut into lines and handed to `record` as [`Record`]s in the order the
//! tap saw them. The server's standard error is the tap's own.

use std::process::{ExitStatus, Stdio};
use std::time::Instant;

use loopdbg_read::mcp::{Record, Side};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Starts `command` and relays between it and this process's standard
/// input and output until the server exits, calling `record` with each
/// record (the start first). Returns how the server exited.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the child was spawned with a piped stdin"
)]
pub async fn relay_stdio(
    command: &[String],
    mut record: impl FnMut(Record),
) -> std::io::Result<ExitStatus> {
    let (program, args) = command.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "no server command")
    })?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    record(Record::start(command));
    let start = Instant::now();
    let to_server = child.stdin.take().expect("piped");
    let from_server = child.stdout.take().expect("piped");
    let (chunks, mut seen) = mpsc::unbounded_channel();
    let upstream = tokio::spawn(copy(
        tokio::io::stdin(),
        to_server,
        Side::Client,
        start,
        chunks.clone(),
    ));
    let downstream = tokio::spawn(copy(
        from_server,
        tokio::io::stdout(),
        Side::Server,
        start,
        chunks,
    ));
    // Records are written as they come, so a capture is readable while the
    // session goes on; the channel closes when both directions are done.
    let recorder = async {
        let mut lines = Lines::default();
        while let Some((side, ms, chunk)) = seen.recv().await {
            lines.push(side, ms, &chunk, &mut record);
        }
        lines.finish(&mut record);
    };
    let (status, _) = tokio::join!(
        async {
            // The server's output ends when it exits; the agent's input may
            // stay open, so only the server's side is waited for.
            let _ = downstream.await;
            upstream.abort();
            child.wait().await
        },
        recorder
    );
    status
}

/// What one side sent: the side, milliseconds since the start, the bytes.
type Chunk = (Side, u64, Vec<u8>);

/// The longest message recorded: a line past it is relayed whole but
/// recorded as a note of its length (the stdio and HTTP taps alike).
pub(crate) const MAX_RECORDED_MESSAGE: usize = 64 << 20;

/// Cuts each side's chunks into lines, in the order the chunks came. Each
/// byte is looked at once: a 64 MB line in 64 KB chunks was searched from
/// its start at every chunk (27 s; 256 MB, over 400 s), while the agent
/// waited for the tap.
#[derive(Default)]
struct Lines {
    client: Pending,
    server: Pending,
    /// When the last chunk came: a last line without its newline is
    /// recorded at the end with this time.
    last_ms: u64,
}

/// One side's line so far.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The length of a line past [`MAX_RECORDED_MESSAGE`], counted while
    /// it is skipped.
    overlong: Option<usize>,
}

impl Pending {
    /// Takes `chunk`, handing each line it ends to `line`.
    fn push(&mut self, mut chunk: &[u8], mut line: impl FnMut(Message<'_>)) {
        while let Some(at) = chunk.iter().position(|&b| b == b'\n') {
            self.take(&chunk[..=at]);
            line(self.message());
            self.bytes.clear();
            self.overlong = None;
            chunk = &chunk[at + 1..];
        }
        self.take(chunk);
    }

    fn take(&mut self, part: &[u8]) {
        match &mut self.overlong {
            Some(len) => *len += part.len(),
            None if self.bytes.len() + part.len() > MAX_RECORDED_MESSAGE => {
                self.overlong = Some(self.bytes.len() + part.len());
                self.bytes = Vec::new();
            }
            None => self.bytes.extend_from_slice(part),
        }
    }

    fn message(&self) -> Message<'_> {
        match self.overlong {
            Some(len) => Message::Overlong(len),
            None => Message::Line(&self.bytes),
        }
    }
}

/// A line as it is recorded.
pub(crate) enum Message<'a> {
    /// The line's bytes.
    Line(&'a [u8]),
    /// A line past [`MAX_RECORDED_MESSAGE`], by its length.
    Overlong(usize),
}

impl Message<'_> {
    /// The record of this line, unless it is blank.
    pub(crate) fn record(&self, side: Side, ms: u64) -> Option<Record> {
        match self {
            Message::Line(line) if line.iter().all(u8::is_ascii_whitespace) => None,
            Message::Line(line) => Some(Record::message(side, ms, &String::from_utf8_lossy(line))),
            Message::Overlong(len) => Some(Record::message(
                side,
                ms,
                &format!(
                    "[loopdbg mcp: a message of {len} bytes, relayed but not recorded: longer than {} MiB]",
                    MAX_RECORDED_MESSAGE >> 20
                ),
            )),
        }
    }
}

impl Lines {
    fn push(&mut self, side: Side, ms: u64, chunk: &[u8], record: &mut impl FnMut(Record)) {
        let pending = match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        };
        self.last_ms = ms;
        pending.push(chunk, |m| {
            m.record(side, ms).into_iter().for_each(&mut *record)
        });
    }

    /// A last line without its newline, on either side.
    fn finish(self, record: &mut impl FnMut(Record)) {
        for (side, pending) in [(Side::Client, self.client), (Side::Server, self.server)] {
            if let Some(r) = pending.message().record(side, self.last_ms) {
                record(r);
            }
        }
    }
}

/// Copies `from` to `to` as it arrives. Each chunk is handed to the
/// recorder before it is written on, so what a side sends in answer is
/// always recorded after what it answers.
async fn copy(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    side: Side,
    start: Instant,
    chunks: mpsc::UnboundedSender<Chunk>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let ms = start.elapsed().as_millis() as u64;
        let _ = chunks.send((side, ms, buf[..n].to_vec()));
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
    }
    // The other side reads to the end: closing says there is no more.
    to.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[(Side, &[u8])]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        for (side, chunk) in chunks {
            lines.push(*side, 1, chunk, &mut |r| {
                got.push(serde_json::to_string(&r).unwrap())
            });
        }
        lines.finish(&mut |r| got.push(serde_json::to_string(&r).unwrap()));
        got
    }

    #[test]
    fn lines_split_anywhere_are_recorded_once_each_in_order() {
        let text = b"{\"id\":1}\n\n{\"id\":2}\n{\"id\":3}";
        for cut in 0..text.len() {
            let got = lines_of(&[(Side::Client, &text[..cut]), (Side::Client, &text[cut..])]);
            assert_eq!(got.len(), 3, "cut at {cut}: {got:?}");
            assert!(got[2].contains(r#"{"id":3}"#));
        }
    }

    /// A line past the limit is recorded as a note of its length and is not
    /// held; the lines after it, and the other side's, are recorded.
    #[test]
    fn a_line_past_the_limit_is_a_note_and_is_not_held() {
        let block = vec![b'x'; 1 << 20];
        let mut lines = Lines::default();
        let mut got = Vec::new();
        let mut record = |r: Record| got.push(serde_json::to_string(&r).unwrap());
        for _ in 0..(MAX_RECORDED_MESSAGE >> 20) + 2 {
            lines.push(Side::Server, 1, &block, &mut record);
        }
        assert!(lines.server.bytes.capacity() == 0, "the long line is held");
        lines.push(Side::Client, 1, b"{\"id\":9}\n", &mut record);
        lines.push(Side::Server, 2, b"yy\n{\"id\":2}\n", &mut record);
        lines.finish(&mut record);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].contains(r#"{"id":9}"#));
        let len = ((MAX_RECORDED_MESSAGE >> 20) + 2) * (1 << 20) + 3;
        assert!(
            got[1].contains(&format!("a message of {len} bytes")),
            "{}",
            got[1]
        );
        assert!(got[2].contains(r#"{"id":2}"#));
    }
}
