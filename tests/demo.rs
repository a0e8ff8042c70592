//! `loopdbg demo`: headless and in a terminal, and the README's walkthrough
//! of it, command by command, in a fresh folder (issue 39).

use std::io::Write;

use crate::common::pty::{open_pty_in, quit, restored_after_exit};

fn loopdbg_in(dir: &std::path::Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("loopdbg").unwrap();
    cmd.current_dir(dir).env("NO_COLOR", "1");
    cmd
}

/// Without a terminal the demo prints one line per exchange, leaves its
/// capture, says what to try, and a second demo never touches the first
/// one's capture.
#[test]
fn the_demo_runs_headless_and_leaves_a_capture_that_check_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = loopdbg_in(dir.path()).arg("demo").assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stdout.contains("#1 anthropic POST /v1/messages → 200"),
        "{stdout}"
    );
    assert!(
        stdout.contains("#2 anthropic POST /v1/messages → 400"),
        "{stdout}"
    );
    assert!(
        stderr.contains("agent: running get_weather (toolu_w1)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("loopdbg check loopdbg-demo.jsonl"),
        "{stderr}"
    );
    let first = std::fs::read(dir.path().join("loopdbg-demo.jsonl")).unwrap();

    loopdbg_in(dir.path())
        .args(["check", "loopdbg-demo.jsonl"])
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "unanswered_call (400)  [toolu_f1]",
        ));

    let again = loopdbg_in(dir.path()).arg("demo").assert().success();
    let stderr = String::from_utf8_lossy(&again.get_output().stderr).to_string();
    assert!(stderr.contains("loopdbg-demo-2.jsonl"), "{stderr}");
    assert_eq!(
        std::fs::read(dir.path().join("loopdbg-demo.jsonl")).unwrap(),
        first
    );
}

/// The README's demo block, one command at a time in a fresh folder: the
/// ones that open the debugger in a real terminal (each shows what the
/// README says it shows), the others headless with their exit status.
#[test]
fn the_readme_demo_walkthrough_works_step_by_step() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("```sh\nloopdbg demo ")
        .expect("the README's demo block");
    let block = &readme[start + "```sh\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    let commands: Vec<Vec<&str>> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().split_whitespace().collect())
        .filter(|words: &Vec<&str>| !words.is_empty())
        .collect();
    assert!(commands.len() >= 5, "{block}");
    let dir = tempfile::tempdir().unwrap();
    for words in &commands {
        assert_eq!(words[0], "loopdbg", "{words:?}");
        let args = &words[1..];
        match args {
            ["demo"] => {
                let (child, mut writer, mut screen, _m) =
                    open_pty_in(dir.path(), args, &[], 120, 40);
                screen.wait_text("ALARM #2");
                quit(child, &mut writer, &mut screen);
            }
            [session] if session.ends_with("-session.json") => {
                // The editor E opens: writes round 2's reply, as a user would.
                let editor = dir.path().join("write-reply.sh");
                std::fs::write(
                    &editor,
                    "#!/bin/sh\nprintf '%s' '{\"text\": \"Beijing is 18°C and sunny; USD/CNY is 7.12.\", \"tool_calls\": [], \"finish_reason\": \"stop\"}' > \"$1\"\n",
                )
                .unwrap();
                let editor = format!("sh {}", editor.display());
                let (child, mut writer, mut screen, _m) =
                    open_pty_in(dir.path(), args, &[("VISUAL", &editor)], 120, 40);
                screen.wait_text("extract first");
                // e runs every call: the id the recorded loop dropped is paired.
                writer.write_all(b"eG").unwrap();
                screen.wait_text("extract all");
                screen.wait_text("unpaired none");
                // The recorded model has no reply for that state: E there
                // writes round 2's reply, a fork (the step the README names;
                // it said "E edits at a Reply step" here before).
                writer.write_all(b"E").unwrap();
                screen.wait_text("fork 1 (from step");
                writer.write_all(b"G").unwrap();
                screen.wait_text("USD/CNY is 7.12");
                writer.write_all(b"q").unwrap();
                restored_after_exit(child, &mut screen);
            }
            [file] => {
                let (child, mut writer, mut screen, _m) =
                    open_pty_in(dir.path(), args, &[], 120, 40);
                assert!(file.ends_with(".jsonl"));
                screen.wait_text("unanswered_call");
                quit(child, &mut writer, &mut screen);
            }
            ["check", ..] | ["diff", ..] => {
                // Both find the bug: exit 1.
                loopdbg_in(dir.path()).args(args).assert().code(1);
            }
            _ => {
                loopdbg_in(dir.path()).args(args).assert().success();
            }
        }
    }
    for file in [
        "loopdbg-demo.jsonl",
        "loopdbg-demo-session.json",
        "loopdbg-demo.html",
    ] {
        assert!(dir.path().join(file).exists(), "{file} was not left");
    }
}
