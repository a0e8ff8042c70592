//! The real binary in a pseudo-terminal: open a session, step, toggle
//! extraction, quit; check the screen and that the terminal was restored.
//! Waits for text to appear (bounded), never sleeps.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const PATIENCE: Duration = Duration::from_secs(30);

struct Screen {
    parser: vt100::Parser,
    output: Receiver<Vec<u8>>,
}

impl Screen {
    /// Reads pty output until `pred` holds for the screen or time runs out.
    fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
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

    fn wait_text(&mut self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }
}

#[test]
fn step_toggle_and_quit_in_a_real_terminal() {
    let pty = native_pty_system();
    let pair = pty
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_loopdbg"));
    cmd.cwd(env!("CARGO_MANIFEST_DIR"));
    cmd.args([
        "sessions/weather_fx.json",
        "--extract",
        "first",
        "--behavior",
        "reask",
        "--stop",
        "tool-calls",
    ]);
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);

    // Always drain the pty, or the app blocks on a full pipe.
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
    let mut writer = pair.master.take_writer().unwrap();
    let mut screen = Screen {
        parser: vt100::Parser::new(
            std::num::NonZero::new(40).unwrap(),
            std::num::NonZero::new(120).unwrap(),
            0,
        ),
        output: rx,
    };

    screen.wait_text("step 1/37");
    assert!(
        screen.parser.screen().alternate_screen(),
        "runs on the alternate screen"
    );
    writer.write_all(b"nn").unwrap();
    let at_extract = screen.wait_text("Extract · step 3/37");
    assert!(at_extract.contains("toolu_f1 is dropped"), "{at_extract}");

    writer.write_all(b"e").unwrap();
    let toggled = screen.wait_text("extract all");
    assert!(toggled.contains("now 2 rounds instead of 6"), "{toggled}");
    assert!(toggled.contains("step 3/13"), "{toggled}");

    writer.write_all(b"?").unwrap();
    screen.wait_text("toggle extraction: first ↔ all");
    writer.write_all(b"\x1b").unwrap();
    screen.wait_for("help to close", |s| {
        !s.contains("toggle extraction: first ↔ all")
    });

    writer.write_all(b"q").unwrap();
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        // Keep draining while it shuts down.
        match screen.output.recv_timeout(Duration::from_millis(200)) {
            Ok(bytes) => screen.parser.process(&bytes),
            Err(_) => assert!(Instant::now() < deadline, "did not exit after q"),
        }
    };
    while let Ok(bytes) = screen.output.recv_timeout(Duration::from_millis(200)) {
        screen.parser.process(&bytes);
    }
    assert!(status.success(), "exit status {status:?}");
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
