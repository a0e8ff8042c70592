//! A large log's first frame from its newest part (issue 40): the preview
//! `loopdbg_corpus::replay::preview` makes, what the debugger does when the
//! whole log arrives, and the real binary on a log past the threshold.

use std::io::Write;
use std::path::Path;

use loopdbg_corpus::replay::{Opening, open, preview_with, replay};
use loopdbg_tui::app::{LiveEvent, LiveUpdate};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App, update};

/// A Claude Code log of `turns` turns: a prompt, a call, its result
/// (`pad` bytes of output) and an answer each, one chain.
/// A log over the 8 MiB threshold (2,400 turns of about 3.6 KB) in a
/// folder of its own, kept as long as the folder is.
pub(crate) fn large_log() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 2400, 3000);
    assert!(std::fs::metadata(&path).unwrap().len() > loopdbg_corpus::replay::PREVIEW_FROM);
    (dir, path)
}

fn write_log(path: &Path, turns: usize, pad: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let head = r#""sessionId":"s1","cwd":"/w","version":"2.0.76","isSidechain":false"#;
    let output = "x".repeat(pad);
    let mut parent = "null".to_string();
    for t in 1..=turns {
        let (u, a, r, f) = (
            format!("u{t}"),
            format!("a{t}"),
            format!("r{t}"),
            format!("f{t}"),
        );
        let lines = [
            format!(
                r#"{{"type":"user","uuid":"{u}","parentUuid":{parent},{head},"message":{{"role":"user","content":"turn {t}: run the tests"}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","uuid":"{a}","parentUuid":"{u}",{head},"message":{{"id":"m{t}","role":"assistant","content":[{{"type":"tool_use","id":"toolu_{t}","name":"Bash","input":{{"command":"cargo test"}}}}]}}}}"#
            ),
            format!(
                r#"{{"type":"user","uuid":"{r}","parentUuid":"{a}",{head},"message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{t}","content":"{output}"}}]}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","uuid":"{f}","parentUuid":"{r}",{head},"message":{{"id":"n{t}","role":"assistant","content":[{{"type":"text","text":"turn {t} passes"}}]}}}}"#
            ),
        ];
        for line in lines {
            writeln!(out, "{line}").unwrap();
        }
        parent = format!("\"{f}\"");
    }
}

fn opened(path: &Path) -> loopdbg_corpus::open::Opened {
    match open(path).unwrap() {
        Opening::Captured(opened) => opened,
        Opening::Session { .. } => panic!("a log, not a session"),
    }
}

/// The preview holds the log's newest turns, starting at a prompt (no
/// result before its call), and ends where the whole log's replay ends.
#[test]
fn the_preview_is_the_newest_part_from_a_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 400, 300);
    let size = std::fs::metadata(&path).unwrap().len();
    let preview = preview_with(&path, &opened(&path), 1 << 10, 8 << 10).expect("a preview");
    assert_eq!(preview.size, size);
    assert_eq!(preview.read, 8 << 10);
    assert!(preview.banner().contains("reading the rest"));
    let shown = &preview.replay.conversation.messages;
    assert!(shown.len() < 100, "a part, not the whole: {}", shown.len());
    let first = shown.first().unwrap().text().unwrap_or_default();
    assert!(
        first.starts_with("turn ") && first.ends_with("run the tests"),
        "{first}"
    );
    let whole = replay(opened(&path), Some(1), |_| "replay".into()).unwrap();
    assert_eq!(
        shown.last().unwrap().text(),
        whole.conversation.messages.last().unwrap().text()
    );
    assert_eq!(whole.conversation.messages.len(), 1600);
    // Its pairing is whole: no result the part holds lacks its call.
    let trace = &preview.replay.trace;
    let last = trace.len() - 1;
    assert!(trace.ledger_at(last).orphans.is_empty());
}

/// The preview is judged within its part: a call in it never answered is
/// the provider's 400 at once, and the calls before it, whose results
/// the part does not hold, are not.
#[test]
fn the_preview_judges_its_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 400, 300);
    append_lines(&path, &broken_turn(400));
    let preview = preview_with(&path, &opened(&path), 1 << 10, 8 << 10).expect("a preview");
    let violations = &preview.replay.trace.violations;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].ids, ["toolu_never"]);
    assert!(violations[0].message.contains("400"), "{violations:?}");
}

/// A log whose newest line is longer than the part (a prompt with a
/// pasted screenshot, a few MB of base64) previews that line alone, read
/// back to its start, where the part was empty and the screen waited for
/// the whole log; `--follow`'s part is the same (`Recent`'s tests).
#[test]
fn a_newest_line_longer_than_the_part_is_previewed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 400, 300);
    let head = r#""sessionId":"s1","cwd":"/w","version":"2.0.76","isSidechain":false"#;
    let image = "iVBORw0KGgo".repeat(200_000);
    append_lines(
        &path,
        &[format!(
            r#"{{"type":"user","uuid":"u401","parentUuid":"f400",{head},"message":{{"role":"user","content":[{{"type":"text","text":"turn 401: why is this red?"}},{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{image}"}}}}]}}}}"#
        )],
    );
    let preview = preview_with(&path, &opened(&path), 1 << 10, 8 << 10).expect("a preview");
    assert!(preview.read > 2 << 20, "{}", preview.read);
    let shown = &preview.replay.conversation.messages;
    assert_eq!(shown.len(), 1, "the newest line alone");
    assert_eq!(shown[0].text().unwrap(), "turn 401: why is this red?");
}

/// A log whose last part is a sub-agent at work previews the main
/// thread, which the whole read shows, not the sub-agent.
#[test]
fn the_preview_shows_the_main_thread_not_a_sub_agent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 200, 300);
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let head =
        r#""sessionId":"s1","cwd":"/w","version":"2.0.76","isSidechain":true,"agentId":"a1""#;
    let mut parent = "null".to_string();
    for t in 1..=10 {
        let (u, a) = (format!("su{t}"), format!("sa{t}"));
        writeln!(out, r#"{{"type":"user","uuid":"{u}","parentUuid":{parent},{head},"message":{{"role":"user","content":"sub-task {t}"}}}}"#).unwrap();
        writeln!(out, r#"{{"type":"assistant","uuid":"{a}","parentUuid":"{u}",{head},"message":{{"id":"sm{t}","role":"assistant","content":[{{"type":"text","text":"done {t}"}}]}}}}"#).unwrap();
        parent = format!("\"{a}\"");
    }
    drop(out);
    let preview = preview_with(&path, &opened(&path), 1 << 10, 16 << 10).expect("a preview");
    let conv = &preview.replay.conversation;
    assert_eq!(conv.label, None, "the main thread");
    assert_eq!(
        conv.messages.last().unwrap().text().unwrap(),
        "turn 200 passes"
    );
}

/// Small logs, and inputs that are not logs, are read whole first.
#[test]
fn no_preview_below_the_threshold_or_for_request_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, 5, 10);
    assert!(preview_with(&path, &opened(&path), 1 << 20, 8 << 10).is_none());
    let body = Path::new("tests/fixtures/transcripts/anthropic_parallel_one_missing.json");
    assert!(preview_with(body, &opened(body), 0, 8 << 10).is_none());
}

fn update_of(app_trace_len: usize) -> LiveUpdate {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    write_log(&path, app_trace_len, 10);
    let whole = replay(opened(&path), Some(1), |_| "replay".into()).unwrap();
    LiveUpdate {
        session: whole.session,
        trace: whole.trace,
        source: whole.source.as_str().to_string(),
        alarm: None,
        waiting: None,
        derived: None,
        token: None,
    }
}

/// The whole log takes the preview's place with the cursor as many steps
/// from the newest as the user left it, and the banner gives way.
#[test]
fn the_whole_log_replaces_the_preview_keeping_the_distance_from_the_newest() {
    let preview = update_of(3);
    let mut app = App::replay(
        "log",
        preview.session,
        preview.trace,
        "claude-code",
        Theme::pick(true),
    );
    app.cursor = app.trace.len() - 1;
    app.notice = Some("showing the newest part; reading the rest…".into());
    update::apply(&mut app, Action::StepBack);
    update::apply(&mut app, Action::StepBack);
    let from_newest = app.trace.len() - 1 - app.cursor;
    assert_eq!(from_newest, 2);
    app.apply_live_event(LiveEvent::Loaded(Box::new(update_of(40))));
    assert_eq!(app.trace.len() - 1 - app.cursor, 2);
    assert!(app.trace.len() > 100);
    assert_eq!(app.notice, None);
    app.apply_live_event(LiveEvent::NotLoaded("disk gone".into()));
    assert!(app.notice.as_deref().unwrap().contains("disk gone"));
}

/// The real binary on a log past the threshold: the whole log is what the
/// screen ends on, at its newest step.
#[test]
fn the_binary_shows_a_large_log_whole_in_the_end() {
    let (_dir, path) = large_log();
    let (child, mut writer, mut screen) = crate::common::pty::spawn(&[path.to_str().unwrap()]);
    screen.wait_for("the whole log at its newest step", |s| {
        s.contains("round 4800/4800") && !s.contains("reading the rest")
    });
    crate::common::pty::quit(child, &mut writer, &mut screen);
}

/// `--follow` on a large log (issue 40, item 3): after a change the newest
/// part is shown at once and the whole, judged, follows. A preview is
/// shown only while the view follows and only when newer than the
/// screen; a whole picture older than the preview on the screen gives
/// its alarm and leaves the newest step; a paused view keeps the place
/// the user stepped to, counted from the newest step.
#[test]
fn a_followed_log_shows_its_newest_part_at_once_and_the_judged_whole_after() {
    let mut first = update_of(30);
    first.alarm = None;
    let mut app = App::live("log", "follow log", first, Theme::pick(true));
    let whole_len = app.trace.len();
    let preview = |turns| LiveEvent::Preview {
        update: Box::new(update_of(turns)),
        covers: 0,
    };
    let at = |event: LiveEvent, covers: u64| match event {
        LiveEvent::Preview { update, .. } => LiveEvent::Preview { update, covers },
        LiveEvent::Judged { update, .. } => LiveEvent::Judged { update, covers },
        other => other,
    };
    let judged = |turns, alarm: Option<&str>, covers| {
        let mut update = update_of(turns);
        update.alarm = alarm.map(str::to_string);
        LiveEvent::Judged {
            update: Box::new(update),
            covers,
        }
    };
    app.apply_live_event(judged(30, None, 100));
    // Following: the newest part is shown, at its newest step.
    app.apply_live_event(at(preview(3), 200));
    assert!(app.trace.len() < whole_len);
    assert_eq!(app.cursor, app.trace.len() - 1);
    assert!(app.live.as_ref().unwrap().previewing);
    // An older preview is not shown over a newer one.
    let shown = app.trace.len();
    app.apply_live_event(at(preview(4), 150));
    assert_eq!(app.trace.len(), shown);
    // The whole as it was before the change: its alarm, not its picture.
    app.apply_live_event(judged(30, Some("ALARM older"), 150));
    assert_eq!(app.trace.len(), shown);
    assert_eq!(app.notice.as_deref(), Some("ALARM older"));
    // The whole after the change takes the preview's place.
    app.apply_live_event(judged(31, None, 200));
    assert!(app.trace.len() > whole_len);
    assert_eq!(app.cursor, app.trace.len() - 1);
    assert!(!app.live.as_ref().unwrap().previewing);
    assert_eq!(app.notice.as_deref(), Some("ALARM older"), "kept");
    // A paused view is not moved by a preview.
    update::apply(&mut app, Action::StepBack);
    let (len, cursor) = (app.trace.len(), app.cursor);
    app.apply_live_event(at(preview(3), 300));
    assert_eq!((app.trace.len(), app.cursor), (len, cursor));
    // Paused on a preview: the whole keeps the distance from the newest.
    update::apply(&mut app, Action::ToggleFollow);
    app.apply_live_event(at(preview(3), 400));
    update::apply(&mut app, Action::StepBack);
    update::apply(&mut app, Action::StepBack);
    assert!(!app.live.as_ref().unwrap().follow);
    app.apply_live_event(judged(40, Some("ALARM new"), 400));
    assert_eq!(app.trace.len() - 1 - app.cursor, 2);
    assert!(app.trace.len() > 100);
    assert_eq!(app.notice.as_deref(), Some("ALARM new"));
    // A part judged with its preview: its alarm is said though the paused
    // view keeps its picture, and the whole log, judged later without a
    // new one, leaves it said.
    let alarmed = |turns, covers| {
        let mut update = update_of(turns);
        update.alarm = Some("ALARM in the part".to_string());
        LiveEvent::Preview {
            update: Box::new(update),
            covers,
        }
    };
    let (len, cursor) = (app.trace.len(), app.cursor);
    app.apply_live_event(alarmed(3, 500));
    assert_eq!((app.trace.len(), app.cursor), (len, cursor));
    assert_eq!(app.notice.as_deref(), Some("ALARM in the part"));
    update::apply(&mut app, Action::ToggleFollow);
    app.apply_live_event(alarmed(3, 600));
    assert!(app.live.as_ref().unwrap().previewing);
    app.apply_live_event(judged(41, None, 600));
    assert!(!app.live.as_ref().unwrap().previewing);
    assert_eq!(app.notice.as_deref(), Some("ALARM in the part"));
}

/// A broken turn after turn `after` of a log [`write_log`] wrote: a
/// prompt, a call never answered (`toolu_never`), then a prompt.
fn broken_turn(after: usize) -> Vec<String> {
    let head = r#""sessionId":"s1","cwd":"/w","version":"2.0.76","isSidechain":false"#;
    let (t, next) = (after + 1, after + 2);
    vec![
        format!(
            r#"{{"type":"user","uuid":"u{t}","parentUuid":"f{after}",{head},"message":{{"role":"user","content":"turn {t}: deploy"}}}}"#
        ),
        format!(
            r#"{{"type":"assistant","uuid":"a{t}","parentUuid":"u{t}",{head},"message":{{"id":"m{t}","role":"assistant","content":[{{"type":"tool_use","id":"toolu_never","name":"Bash","input":{{"command":"deploy"}}}}]}}}}"#
        ),
        format!(
            r#"{{"type":"user","uuid":"u{next}","parentUuid":"a{t}",{head},"message":{{"role":"user","content":"never mind"}}}}"#
        ),
    ]
}

/// A broken turn at the end of the large log ([`broken_turn`]).
fn append_broken_turn(path: &Path) {
    append_lines(path, &broken_turn(2400));
}

/// `lines` appended to the file at `path`, as an agent appends events.
fn append_lines(path: &Path, lines: &[String]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{}", lines.join("\n")).unwrap();
    file.flush().unwrap();
}

/// `--follow` opened on a large log that already ends broken: the first
/// frame is the newest part, read from the file's end before the rest
/// (the whole of a gigabyte was read first: 10 s), and it already says
/// the alarm on the unanswered call; the whole log, judged after, keeps
/// it said. A pinned conversation (`--conversation 1`) opens on the whole.
#[test]
fn the_binary_opens_a_followed_large_log_on_its_part_alarmed() {
    let (_dir, path) = large_log();
    append_broken_turn(&path);
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--follow"]);
    // Only the part's picture has this title: the whole's says
    // `conversation 1 of 1`.
    let part = screen.wait_for("the part, alarmed", |s| {
        s.contains("judging the whole log") && s.contains("ALARM") && s.contains("toolu_never")
    });
    assert!(!part.contains("round 4801/4801"), "{part}");
    let judged = screen.wait_for("the whole log's picture", |s| {
        s.contains("follow: conversation") && s.contains("round 4801/4801")
    });
    assert!(
        judged.contains("ALARM") && judged.contains("toolu_never"),
        "{judged}"
    );
    crate::common::pty::quit(child, &mut writer, &mut screen);
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--follow", "--conversation", "1"]);
    // What is read is said at once (the whole was read in the dark), then
    // the whole picture comes: never the part, which may not hold it.
    screen.wait_for("the reading screen", |s| {
        s.contains("reading conversation 1 of")
    });
    let pinned = screen.wait_for("the pinned conversation", |s| s.contains("round 4801/4801"));
    assert!(!pinned.contains("judging the whole log"), "{pinned}");
    // Followed as it grows: with no part shown, the next pictures are
    // grown from a spare and from the picture each displaces.
    let head = r#""sessionId":"s1","cwd":"/w","version":"2.0.76","isSidechain":false"#;
    let answer = |uuid: &str, parent: &str, text: &str| {
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}",{head},"message":{{"id":"m{uuid}","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}}}"#
        )
    };
    append_lines(&path, &[answer("x1", "u2402", "pinned answer one")]);
    screen.wait_for("the first appended event", |s| {
        s.contains("pinned answer one")
    });
    let prompt = format!(
        r#"{{"type":"user","uuid":"x2","parentUuid":"x1",{head},"message":{{"role":"user","content":"and again"}}}}"#
    );
    append_lines(&path, &[prompt, answer("x3", "x2", "pinned answer two")]);
    let grown = screen.wait_for("the next ones", |s| s.contains("pinned answer two"));
    assert!(grown.contains("follow: conversation"), "{grown}");
    crate::common::pty::quit(child, &mut writer, &mut screen);
}

/// The real binary following a log past the threshold, through what a
/// user goes through: a turn appended whose call is never answered is
/// shown, the alarm on its id is raised, and the whole log, judged again,
/// keeps it said; then `loopdbg doctor --write` repairs the log in place,
/// and the follower, reading the replaced file again, says the alarm is
/// resolved.
#[test]
fn the_binary_follows_a_large_log_alarms_on_an_appended_turn_and_sees_it_repaired() {
    let (_dir, path) = large_log();
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--follow"]);
    screen.wait_for("the whole log", |s| s.contains("round 4800/4800"));
    append_broken_turn(&path);
    // Said by the newest part's judgement or the whole log's, whichever
    // comes first (the part's, in time proportional to it), and still
    // said once the whole log's picture is on the screen.
    screen.wait_for("the alarm on the unanswered call", |s| {
        s.contains("ALARM") && s.contains("toolu_never")
    });
    let judged = screen.wait_for("the whole log's picture", |s| {
        s.contains("follow: conversation") && !s.contains("judging the whole")
    });
    assert!(judged.contains("ALARM"), "{judged}");
    let repaired = crate::common::loopdbg()
        .args(["doctor", "--write", "--force"])
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&repaired.stdout);
    assert!(repaired.status.success(), "{said}");
    assert!(said.contains("toolu_never"), "{said}");
    let resolved = screen.wait_for("the alarm resolved", |s| {
        s.contains("resolved: this conversation holds nothing")
    });
    assert!(!resolved.contains("» ALARM"), "{resolved}");
    screen.wait_for("the repaired picture", |s| s.contains("unpaired: none"));
    crate::common::pty::quit(child, &mut writer, &mut screen);
}

/// A conversation of a large log pinned (`--conversation N`), which no
/// newest part can stand for: the first frame says what is read (the
/// whole was read in the dark, seconds on a large log, `q` unanswered),
/// then the conversation takes its place at its newest step, as a large
/// log opens. One the file does not hold ends the debugger with the
/// error it gives on a small log, exit 2, the terminal restored.
#[test]
fn the_binary_says_what_it_reads_for_a_pinned_conversation_of_a_large_log() {
    let (_dir, path) = large_log();
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--conversation", "1"]);
    screen.wait_for("the reading screen", |s| {
        s.contains("reading conversation 1 of") && s.contains("q quits")
    });
    // The reading notice goes with the screen it was on.
    screen.wait_for("the conversation", |s| {
        s.contains("round 4800/4800") && !s.contains("reading conversation")
    });
    crate::common::pty::quit(child, &mut writer, &mut screen);
    let (child, _writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--conversation", "7"]);
    crate::common::pty::restored_after_exit_with(child, &mut screen, 2);
    let said = screen.wait_text("holds 1 conversation");
    assert!(said.contains("--conversation 7"), "{said}");
}

/// A log past what `--follow-memory` lets the follower hold whole (a
/// quarter of it): opened on its newest part and followed by it, nothing
/// else held, the banner saying why the whole never comes; an appended
/// broken turn is alarmed from the part; a conversation pinned on such a
/// log is refused at once, exit 2, saying what to do.
#[test]
fn the_binary_follows_a_log_past_its_memory_by_its_newest_part() {
    let (_dir, path) = large_log();
    let (child, mut writer, mut screen) =
        crate::common::pty::spawn(&[path.to_str().unwrap(), "--follow", "--follow-memory", "16"]);
    let part = screen.wait_for("the part", |s| {
        s.contains("only (past --follow-memory") && s.contains("LIVE following")
    });
    assert!(!part.contains("follow: conversation"), "{part}");
    append_broken_turn(&path);
    let alarmed = screen.wait_for("the alarm on the appended turn", |s| {
        s.contains("ALARM") && s.contains("toolu_never")
    });
    assert!(alarmed.contains("only (past --follow-memory"), "{alarmed}");
    crate::common::pty::quit(child, &mut writer, &mut screen);
    let pinned = crate::common::loopdbg()
        .arg(&path)
        .args(["--follow", "--follow-memory", "16", "--conversation", "1"])
        .output()
        .unwrap();
    assert_eq!(pinned.status.code(), Some(2));
    let said = String::from_utf8_lossy(&pinned.stderr);
    assert!(
        said.contains("is past what --follow-memory 16 MiB holds whole (4.0 MiB)")
            && said.contains("raise --follow-memory"),
        "{said}"
    );
    // Told to, the user raises the cap: the pinned conversation is read
    // whole and followed.
    let (child, mut writer, mut screen) = crate::common::pty::spawn(&[
        path.to_str().unwrap(),
        "--follow",
        "--follow-memory",
        "64",
        "--conversation",
        "1",
    ]);
    let whole = screen.wait_for("the pinned conversation, whole", |s| {
        s.contains("follow: conversation 1 of 1") && s.contains("toolu_never")
    });
    assert!(!whole.contains("past --follow-memory"), "{whole}");
    crate::common::pty::quit(child, &mut writer, &mut screen);
}

/// A log held whole that grows past what `--follow-memory` holds: the
/// follower says so once, lets the whole go and follows the newest part
/// from there on; a pinned conversation stops being followed instead,
/// its last picture kept and the reason said.
#[test]
fn the_binary_lets_a_growing_log_go_when_it_passes_its_memory() {
    let (_dir, whole) = large_log();
    let text = std::fs::read_to_string(&whole).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    // 800 turns (about 2.9 MB) under the 4 MiB a follower of 16 MiB holds
    // whole; the next 1,600 past it.
    let (first, rest) = lines.split_at(3200);
    for pinned in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, format!("{}\n", first.join("\n"))).unwrap();
        let mut args = vec![path.to_str().unwrap(), "--follow", "--follow-memory", "16"];
        if pinned {
            args.extend(["--conversation", "1"]);
        }
        let (child, mut writer, mut screen) = crate::common::pty::spawn(&args);
        screen.wait_for("the whole log", |s| s.contains("round 1600/1600"));
        append_lines(&path, rest);
        if pinned {
            let stopped = screen.wait_for("the reason it stopped", |s| {
                s.contains("conversation 1 is no longer followed")
            });
            assert!(stopped.contains("round 1600/1600"), "{stopped}");
        } else {
            let part = screen.wait_for("the part", |s| {
                s.contains("only (past --follow-memory") && s.contains("turn 2400 passes")
            });
            assert!(!part.contains("follow: conversation"), "{part}");
        }
        crate::common::pty::quit(child, &mut writer, &mut screen);
    }
}
