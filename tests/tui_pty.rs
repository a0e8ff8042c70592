//! The real binary in a pseudo-terminal: open a session, step, toggle
//! extraction, quit; check the screen and that the terminal was restored.
//! Waits for text to appear (bounded), never sleeps.

use std::io::Write;

use portable_pty::{CommandBuilder, PtySize};

use loopdbg_fake as fake;

use crate::common::pty::{open_pty, pty_screen, quit, restored_after_exit_with, spawn, spawn_with};

#[test]
fn step_toggle_and_quit_in_a_real_terminal() {
    let (child, mut writer, mut screen) = spawn(&crate::common::FX_FIRST_REASK);
    screen.wait_text("step 1/43");
    assert!(
        screen.parser.screen().alternate_screen(),
        "runs on the alternate screen"
    );
    writer.write_all(b"nn").unwrap();
    // A frame may arrive in several reads: wait for all of it.
    screen.wait_for("the Extract step explained", |s| {
        s.contains("Extract · step 3/43") && s.contains("toolu_f1 is dropped")
    });

    writer.write_all(b"e").unwrap();
    screen.wait_for("the toggle's notice", |s| {
        s.contains("extract all")
            && s.contains("now 2 rounds instead of 6")
            && s.contains("step 3/13")
    });

    writer.write_all(b"?").unwrap();
    screen.wait_text("toggle extraction: first ↔ all");
    writer.write_all(b"\x1b").unwrap();
    screen.wait_for("help to close", |s| {
        !s.contains("toggle extraction: first ↔ all")
    });
    // `q` in a popup closes it, and a second Esc on the panes says how to
    // quit instead of quitting (issue 22, item 8).
    writer.write_all(b"?").unwrap();
    screen.wait_text("toggle extraction: first ↔ all");
    writer.write_all(b"q").unwrap();
    screen.wait_for("help to close on q", |s| {
        !s.contains("toggle extraction: first ↔ all")
    });
    writer.write_all(b"\x1b").unwrap();
    screen.wait_text("q quits");

    quit(child, &mut writer, &mut screen);
}

/// Toggles that re-run the engine with faults, from inside the event loop.
#[test]
fn closure_and_interrupt_keys_in_a_real_terminal() {
    let (child, mut writer, mut screen) =
        spawn(&["sessions/fault_timeout.json", "--closure", "leave"]);
    screen.wait_text("closure leave");
    writer.write_all(b"nnn").unwrap();
    screen.wait_text("Execute 1 · step 4/");
    writer.write_all(b"x").unwrap();
    screen.wait_text("interrupt r1 @80ms");
    writer.write_all(b"p").unwrap();
    screen.wait_for("the closure's notice", |s| {
        s.contains("closure synthesize") && s.contains("unpaired call_sh → none")
    });
    quit(child, &mut writer, &mut screen);
}

/// SIGTERM, SIGINT and SIGHUP end the debugger like `q`: the alternate
/// screen, mouse reporting, the hidden cursor and raw mode are all undone.
#[test]
fn signals_restore_the_terminal() {
    // Each exits as a process ended by that signal does: 128 + its number.
    for (signal, number) in [("TERM", 15), ("INT", 2), ("HUP", 1), ("QUIT", 3)] {
        let (child, _writer, mut screen) = spawn(&["sessions/weather.json"]);
        screen.wait_text("step 1/");
        let pid = child.process_id().expect("a pid").to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal}");
        restored_after_exit_with(child, &mut screen, 128 + number);
        assert!(
            !screen.parser.screen().hide_cursor(),
            "SIG{signal}: cursor shown again"
        );
    }
}

/// One capture record, as `loopdbg proxy` writes it.
fn exchange(seq: u64, messages: serde_json::Value, reply: serde_json::Value) -> String {
    let record = serde_json::json!({"loopdbg": "exchange", "seq": seq, "provider": "anthropic",
        "method": "POST", "path": "/v1/messages", "status": 200, "streamed": false,
        "request": {"model": "m", "max_tokens": 64, "messages": messages},
        "response": {"role": "assistant", "content": reply}});
    format!("{record}\n")
}

/// `--follow` started before the file exists, or while it is empty, waits
/// for it and shows it once it holds a conversation (issue 22, item 12).
#[test]
fn follow_waits_for_a_file_that_is_not_there_yet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    let (child, mut writer, mut screen) = spawn(&[path.to_str().unwrap(), "--follow"]);
    screen.wait_text("waiting for the file");
    std::fs::write(&path, "").unwrap();
    let prompt = serde_json::json!([{"role": "user", "content": "weather and fx?"}]);
    let calls = serde_json::json!([
        {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}}]);
    std::fs::write(&path, exchange(1, prompt, calls)).unwrap();
    screen.wait_for("the conversation, live", |s| {
        s.contains("toolu_w1") && s.contains("LIVE")
    });
    quit(child, &mut writer, &mut screen);
}

#[test]
fn follow_shows_lines_appended_after_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    let prompt = serde_json::json!([{"role": "user", "content": "weather and fx?"}]);
    let calls = serde_json::json!([
        {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
        {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]);
    std::fs::write(&path, exchange(1, prompt.clone(), calls.clone())).unwrap();
    let (child, mut writer, mut screen) = spawn(&[path.to_str().unwrap(), "--follow"]);
    let first = screen.wait_text("toolu_f1");
    assert!(first.contains("LIVE"), "{first}");
    assert!(first.contains("LIVE following"), "{first}");
    // The reply's calls are pending, not a request the provider refused.
    assert!(!first.contains("ALARM"), "{first}");

    // The second request answers only toolu_w1: the dangling toolu_f1
    // raises the alarm. It arrives in two writes, the first half-way
    // through the line; the half line waits for its end.
    let mut second_messages = prompt.as_array().unwrap().clone();
    second_messages.push(serde_json::json!({"role": "assistant", "content": calls}));
    second_messages.push(serde_json::json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"}]}));
    let line = exchange(
        2,
        serde_json::Value::Array(second_messages),
        serde_json::json!([{"type": "text", "text": "done-marker"}]),
    );
    let (a, b) = line.split_at(line.len() / 2);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(a.as_bytes()).unwrap();
    file.flush().unwrap();
    file.write_all(b.as_bytes()).unwrap();
    file.flush().unwrap();
    let later = screen.wait_text("ALARM");
    assert!(later.contains("toolu_f1"), "{later}");
    // The second request grows the first one's history: one conversation.
    screen.wait_text("follow: conversation 1 of 1");
    quit(child, &mut writer, &mut screen);
}

/// A free loopback address for the proxy: bound, then let go for it.
fn free_listen_address() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

#[test]
fn the_proxy_debugger_grows_as_an_agent_talks_through_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = rt.block_on(fake::start());
    let listen = free_listen_address();
    let (child, mut writer, mut screen) = spawn(&[
        "proxy",
        "--upstream",
        &fake.url,
        "--listen",
        &listen,
        "--on-invalid",
        "block",
    ]);
    screen.wait_text("waiting for the first request");
    let base = format!("http://{listen}");
    let send = |messages: serde_json::Value| {
        rt.block_on(async {
            reqwest::Client::new()
                .post(format!("{base}/v1/messages"))
                .json(
                    &serde_json::json!({"model": "m", "max_tokens": 64, "messages": messages,
                    "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                              {"name": "get_fx_rate", "input_schema": {"type": "object"}}]}),
                )
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        })
    };
    let prompt = serde_json::json!({"role": "user", "content": "weather and fx"});
    let reply = send(serde_json::json!([prompt]));
    let on_screen = screen.wait_text("toolu_f1");
    assert!(on_screen.contains("exchange #1 of 1"), "{on_screen}");
    // Only the first call answered: blocked, with the alarm on screen.
    let dangling = serde_json::json!([prompt, {"role": "assistant", "content": reply["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18"}]}]);
    let blocked = send(dangling);
    assert_eq!(blocked["type"], "error");
    let alarmed = screen.wait_text("ALARM #2");
    assert!(alarmed.contains("blocked locally"), "{alarmed}");
    quit(child, &mut writer, &mut screen);
}

#[test]
fn follow_reads_a_replaced_file_again_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.jsonl");
    let prompt = |text: &str| serde_json::json!([{"role": "user", "content": text}]);
    let answer = |text: &str| serde_json::json!([{"type": "text", "text": text}]);
    let two = exchange(1, prompt("first prompt"), answer("first-answer"))
        + &exchange(2, prompt("second prompt"), answer("second-answer"));
    std::fs::write(&path, two).unwrap();
    let (child, mut writer, mut screen) = spawn(&[path.to_str().unwrap(), "--follow"]);
    screen.wait_text("second-answer");
    // Replaced by rename (a new file under the same name), shorter.
    let fresh = dir.path().join("fresh.jsonl");
    std::fs::write(
        &fresh,
        exchange(1, prompt("third prompt"), answer("third-answer")),
    )
    .unwrap();
    std::fs::rename(&fresh, &path).unwrap();
    let after = screen.wait_text("third-answer");
    assert!(after.contains("conversation 1 of 1"), "{after}");
    quit(child, &mut writer, &mut screen);
}

#[test]
fn e_opens_the_editor_and_the_edited_reply_forks_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // The "editor" writes a reply with only the first call.
    let edited = dir.path().join("reply.json");
    std::fs::write(
        &edited,
        r#"{"text": "only the weather", "tool_calls": [{"id": "toolu_w1", "name": "get_weather", "args": {"city": "北京"}}], "finish_reason": "tool_calls"}"#,
    )
    .unwrap();
    let editor = format!("cp {}", edited.display());
    let (child, mut writer, mut screen) = spawn_with(
        &["sessions/weather_fx.json"],
        &[("EDITOR", editor.as_str()), ("VISUAL", "")],
    );
    screen.wait_text("Request");
    writer.write_all(b"n").unwrap();
    screen.wait_text("· Reply ·");
    writer.write_all(b"E").unwrap();
    let forked = screen.wait_text("fork 1 of the original");
    assert!(forked.contains("fork 1 (from step 2"), "{forked}");
    writer.write_all(b"G").unwrap();
    let end = screen.wait_text("only the weather");
    assert!(end.contains("fork 1"), "{end}");
    quit(child, &mut writer, &mut screen);
}

/// The explain box grows with what it has to say: at a tour stop the
/// stop's instructions, its notice and the phase's own sentence are all on
/// the screen, none pushed out (issue 22, items 1 and 7).
#[test]
fn a_tour_stop_shows_its_instructions_and_the_phase_together() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().to_str().unwrap();
    let (child, mut writer, mut screen) =
        spawn_with(&["tour", "--lang", "en"], &[("XDG_DATA_HOME", home)]);
    // A frame may arrive in several reads: wait for all of it (the wait
    // fails with the screen if the three never show together).
    let parts = [
        "tour 1/5",
        "the model asks for a tool (a tool_use)",
        "(a: answer · T: next)",
        "Trip 1 starts",
    ];
    screen.wait_for("the stop, its notice and the phase together", |s| {
        parts.iter().all(|p| s.contains(p))
    });
    quit(child, &mut writer, &mut screen);
}

/// Every stop of the tour, answered right, at 80×24 and at 200×60, in
/// English and in Chinese (`--lang zh`, at 80×24: two columns a
/// character): its title, what to press, the question and the lesson are
/// on the screen whole (never cut or scrolled away), and after the last
/// stop, what to do next (issues 39, 60).
#[test]
fn every_tour_text_is_whole_at_80x24_and_200x60() {
    use loopdbg_lesson::tour::{Lang, STOPS, opening_strategy, sessions};
    // Chinese wraps between any two characters: compare without spaces.
    let bare = |s: &str| s.split_whitespace().collect::<String>();
    for (flag, lang, sizes) in [
        ("en", Lang::En, &[(80, 24), (200, 60)][..]),
        ("zh", Lang::Zh, &[(80, 24)][..]),
    ] {
        let sessions = sessions(lang).unwrap();
        let chrome = lang.chrome();
        for &(cols, rows) in sizes {
            let data = tempfile::tempdir().unwrap();
            let home = data.path().to_str().unwrap();
            let (child, mut writer, mut screen, _master) = open_pty(
                &["tour", "--lang", flag],
                &[("XDG_DATA_HOME", home)],
                cols,
                rows,
            );
            for (i, (stop, session)) in STOPS.iter().zip(&sessions).enumerate() {
                let words = stop.words(lang);
                let here = format!("{} {}/{}", chrome.tour, i + 1, STOPS.len());
                screen.wait_text(&here);
                // The end of the run: the summary's warnings share the box.
                writer.write_all(b"G").unwrap();
                let answer = (stop.answer)(session, &opening_strategy(stop, session)).to_string();
                writer.write_all(format!("a{answer}\r").as_bytes()).unwrap();
                // At the end of the run: where stops 3 to 5 ask the learner
                // to be, which the stop says.
                let trace = loopdbg_engine::run(session, &opening_strategy(stop, session));
                let doing = match (stop.at)(&trace) + 1 == trace.steps.len() {
                    true => chrome.here,
                    false => chrome.doing,
                };
                let mut parts = vec![
                    here.clone(),
                    words.title.to_string(),
                    format!("{doing}{}", words.press),
                    format!("? {}", words.question),
                    format!("{}{}.", chrome.right, words.lesson),
                ];
                if i + 1 == STOPS.len() {
                    parts.extend(chrome.what_next.iter().map(|l| l.to_string()));
                }
                screen.wait_for(
                    &format!("{flag} stop {} whole at {cols}×{rows}", i + 1),
                    |s| {
                        let shown = bare(s);
                        parts.iter().all(|p| shown.contains(&bare(p)))
                    },
                );
                writer.write_all(b"T").unwrap();
            }
            quit(child, &mut writer, &mut screen);
        }
    }
}

#[test]
fn the_tour_remembers_progress_between_runs() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().to_str().unwrap();
    let env = [("XDG_DATA_HOME", home)];
    let (child, mut writer, mut screen) = spawn_with(&["tour", "--lang", "en"], &env);
    screen.wait_text("tour 1/5");
    // Step to round 2's Request and read the message count off the screen.
    let mut contents = String::new();
    for k in 2..=20 {
        writer.write_all(b"n").unwrap();
        contents = screen.wait_text(&format!("step {k}/"));
        if contents.contains("round 2/4 · Request") {
            break;
        }
    }
    let count: String = contents
        .split("messages (")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    writer.write_all(format!("a{count}\r").as_bytes()).unwrap();
    screen.wait_text("✓ right");
    quit(child, &mut writer, &mut screen);
    let saved = std::fs::read_to_string(data.path().join("loopdbg/tour.json")).unwrap();
    assert!(saved.contains("[0]"), "{saved}");

    let (child, mut writer, mut screen) = spawn_with(&["tour", "--lang", "en"], &env);
    screen.wait_text("tour 2/5");
    quit(child, &mut writer, &mut screen);
}

#[test]
fn a_too_small_terminal_ignores_keys_until_it_grows() {
    let (child, mut writer, mut screen, master) = open_pty(&["sessions/weather.json"], &[], 50, 15);
    screen.wait_text("loopdbg needs at least 60×18");
    // Keys that would act unseen are ignored.
    writer.write_all(b"nnnG").unwrap();
    writer.flush().unwrap();
    master
        .resize(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    screen.parser.screen_mut().set_size(
        std::num::NonZero::new(40).unwrap(),
        std::num::NonZero::new(120).unwrap(),
    );
    let grown = screen.wait_text("step 1/");
    assert!(grown.contains("round 1/4 · Request"), "{grown}");
    quit(child, &mut writer, &mut screen);
}

#[test]
fn the_debugger_behind_a_pipe_says_to_use_run_and_leaves_the_terminal_alone() {
    let (pair, mut screen) = pty_screen(120, 40);
    let mut cmd = CommandBuilder::new("sh");
    cmd.cwd(env!("CARGO_MANIFEST_DIR"));
    cmd.args([
        "-c",
        &format!(
            "{} sessions/weather.json | cat; echo \"exit=$?\"",
            env!("CARGO_BIN_EXE_loopdbg")
        ),
    ]);
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let said = screen.wait_text("exit=");
    assert!(
        said.contains(
            "the debugger needs a terminal; for headless output use `loopdbg run sessions/weather.json`"
        ),
        "{said}"
    );
    assert!(!screen.parser.screen().alternate_screen(), "never entered");
    assert!(!said.contains("panicked"), "{said}");
    let _ = child.wait();
}

#[test]
fn a_replayed_log_cut_mid_line_opens_and_says_what_was_left_out() {
    let (child, mut writer, mut screen) =
        spawn(&["tests/fixtures/transcripts/claude_code_v2/modern_cut_last_line.jsonl"]);
    let shown = screen.wait_text("left out, could not be read:");
    assert!(
        shown.contains("modern_cut_last_line.jsonl:14:108"),
        "{shown}"
    );
    quit(child, &mut writer, &mut screen);
}

#[test]
fn a_recorded_api_session_replays_its_last_request_with_each_reply() {
    // A cassette of two streamed rounds: the replay opens on the last
    // request (it carries the first), and the recorded event streams are
    // the replies, down to the final answer.
    let cassette = "tests/fixtures/transcripts/recordings/streamed_two_calls.yaml";
    let (child, mut writer, mut screen) = spawn(&[cassette]);
    // Its two requests grow one history: one conversation, opened at the
    // newest request (issue 22, item 13: it said "conversation 2 of 2").
    screen.wait_text("replay: request 2 of 2, one conversation");
    writer.write_all(b"G").unwrap();
    let end = screen.wait_text("final: Beijing 18°C, Shanghai 21°C.");
    assert!(end.contains("1:calls ⇄ 2:answer"), "{end}");
    assert!(end.contains("unpaired: none"), "{end}");
    quit(child, &mut writer, &mut screen);
}

/// A long stream through the proxy is shown in flight, not as "no traffic
/// yet", and its conversation replaces that once its answer ends (issue
/// 22, item 12).
#[test]
fn a_long_stream_through_the_proxy_shows_as_in_flight() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (release, held) = tokio::sync::oneshot::channel::<()>();
    let upstream = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let upstream_url = format!("http://{}", upstream.local_addr().unwrap());
    let event = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    let head = event(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "model": "m"}}),
    );
    let rest = [
        event("content_block_start", serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        event("content_block_delta", serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "streamed-at-last"}})),
        event("content_block_stop", serde_json::json!({"type": "content_block_stop", "index": 0})),
        event("message_delta", serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})),
        event("message_stop", serde_json::json!({"type": "message_stop"})),
    ]
    .concat();
    rt.spawn(async move {
        let (mut tcp, _) = upstream.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // The head, then as many body bytes as it says.
        loop {
            let n = tcp.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_lowercase();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if body.len() >= len {
                    break;
                }
            }
        }
        let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
        tcp.write_all(
            format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{}", chunk(&head)).as_bytes(),
        )
        .await
        .unwrap();
        held.await.unwrap();
        tcp.write_all(format!("{}0\r\n\r\n", chunk(&rest)).as_bytes()).await.unwrap();
    });
    let listen = free_listen_address();
    let (child, mut writer, mut screen) =
        spawn(&["proxy", "--upstream", &upstream_url, "--listen", &listen]);
    screen.wait_text("waiting for the first request");
    let base = format!("http://{listen}");
    let agent = rt.spawn(async move {
        reqwest::Client::new()
            .post(format!("{base}/v1/messages"))
            .json(
                &serde_json::json!({"model": "m", "max_tokens": 64, "stream": true,
                "messages": [{"role": "user", "content": "a long answer please"}]}),
            )
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    screen.wait_text("live: request #1 in flight through");
    let flying = screen.wait_text("#1 POST /v1/messages in flight │");
    assert!(!flying.contains("no traffic yet"), "{flying}");
    release.send(()).unwrap();
    let answered = rt.block_on(agent).unwrap();
    assert!(answered.contains("streamed-at-last"));
    screen.wait_text("streamed-at-last");
    // Once the record is taken nothing is in flight; the header says so
    // (the count may reach the screen a frame after the conversation).
    let done = screen.wait_text("anthropic conversation │");
    assert!(done.contains("exchange #1 of 1"), "{done}");
    quit(child, &mut writer, &mut screen);
}
