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

/// Cuts each side's chunks into lines, in the order the chunks came.
#[derive(Default)]
struct Lines {
    client: Vec<u8>,
    server: Vec<u8>,
    /// When the last chunk came: a last line without its newline is
    /// recorded at the end with this time.
    last_ms: u64,
}

impl Lines {
    fn push(&mut self, side: Side, ms: u64, chunk: &[u8], record: &mut impl FnMut(Record)) {
        let pending = match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        };
        pending.extend_from_slice(chunk);
        self.last_ms = ms;
        while let Some(at) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            emit(side, ms, &line, record);
        }
    }

    /// A last line without its newline, on either side.
    fn finish(self, record: &mut impl FnMut(Record)) {
        emit(Side::Client, self.last_ms, &self.client, record);
        emit(Side::Server, self.last_ms, &self.server, record);
    }
}

fn emit(side: Side, ms: u64, line: &[u8], record: &mut impl FnMut(Record)) {
    if !line.iter().all(u8::is_ascii_whitespace) {
        record(Record::message(side, ms, &String::from_utf8_lossy(line)));
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
