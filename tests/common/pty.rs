//! The real binary in a pseudo-terminal: spawn it, read its screen as it
//! draws (waiting for text, bounded, never sleeping), quit it and check the
//! terminal was restored. Shared by `tests/tui_pty.rs` and the real
//! agents' `--follow` test in `tests/agents.rs`.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Screen {
    pub parser: vt100::Parser,
    pub output: Receiver<Vec<u8>>,
}

impl Screen {
    /// Reads pty output until `pred` holds for the screen or time runs out.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let contents = self.parser.screen().contents();
            if pred(&contents) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.parser.process(&bytes),
                Err(_) => panic!("timed out waiting for {what}; screen:\n{contents}"),
            }
        }
    }

    pub fn wait_text(&mut self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }
}

/// Starts the real binary in a 120×40 pseudo-terminal.
pub fn spawn(
    args: &[&str],
) -> (
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn Write + Send>,
    Screen,
) {
    spawn_with(args, &[])
}

/// [`spawn`] with extra environment variables.
pub fn spawn_with(
    args: &[&str],
    env: &[(&str, &str)],
) -> (
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn Write + Send>,
    Screen,
) {
    let (child, writer, screen, master) = open_pty(args, env, 120, 40);
    // The master must outlive the child; leak it with the reader thread.
    std::mem::forget(master);
    (child, writer, screen)
}

/// A `cols`×`rows` pty; a screen that drains it on a thread of its own
/// (or the program blocks on a full pipe), and its writer.
pub fn pty_screen(cols: u16, rows: u16) -> (portable_pty::PtyPair, Screen) {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut reader = pair.master.try_clone_reader().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let screen = Screen {
        parser: vt100::Parser::new(
            std::num::NonZero::new(rows).unwrap(),
            std::num::NonZero::new(cols).unwrap(),
            0,
        ),
        output: rx,
    };
    (pair, screen)
}

/// Sends `q` and waits for a clean exit with the terminal restored.
pub fn quit(
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: &mut Box<dyn Write + Send>,
    screen: &mut Screen,
) {
    writer.write_all(b"q").unwrap();
    restored_after_exit(child, screen);
}

/// Waits for the child to exit and checks the terminal was restored.
pub fn restored_after_exit(child: Box<dyn portable_pty::Child + Send + Sync>, screen: &mut Screen) {
    restored_after_exit_with(child, screen, 0);
}

/// [`restored_after_exit`], the child exiting with status `code`.
pub fn restored_after_exit_with(
    mut child: Box<dyn portable_pty::Child + Send + Sync>,
    screen: &mut Screen,
    code: u32,
) {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        match screen.output.recv_timeout(Duration::from_millis(200)) {
            Ok(bytes) => screen.parser.process(&bytes),
            Err(_) => assert!(Instant::now() < deadline, "did not exit after q"),
        }
    };
    while let Ok(bytes) = screen.output.recv_timeout(Duration::from_millis(200)) {
        screen.parser.process(&bytes);
    }
    assert_eq!(status.exit_code(), code, "exit status {status:?}");
    assert!(
        !screen.parser.screen().alternate_screen(),
        "alternate screen left"
    );
    assert_eq!(
        screen.parser.screen().mouse_protocol_mode(),
        vt100::MouseProtocolMode::None,
        "mouse capture turned off"
    );
}

/// The real binary in a `cols`×`rows` pty; the master is returned so the
/// test can resize the terminal.
pub type Sized = (
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn Write + Send>,
    Screen,
    Box<dyn portable_pty::MasterPty + Send>,
);

/// The real binary in a `cols`×`rows` pty with extra environment; the
/// master is returned so a test can resize the terminal.
pub fn open_pty(args: &[&str], env: &[(&str, &str)], cols: u16, rows: u16) -> Sized {
    open_pty_in(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        args,
        env,
        cols,
        rows,
    )
}

/// [`open_pty`] in folder `dir`.
pub fn open_pty_in(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
    cols: u16,
    rows: u16,
) -> Sized {
    let (pair, screen) = pty_screen(cols, rows);
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_loopdbg"));
    cmd.cwd(dir);
    cmd.args(args);
    cmd.env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let writer = pair.master.take_writer().unwrap();
    (child, writer, screen, pair.master)
}
