//! The README's key list and commands stay true to the code.

use loopdbg_tui::keymap::{KEYMAP, POPUP_KEYMAP, keys_label};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

#[test]
fn readme_lists_every_binding() {
    let readme = readme();
    for b in KEYMAP.iter().chain(POPUP_KEYMAP.iter()) {
        let row = format!("| `{}` | {} |", keys_label(b), b.description);
        assert!(readme.contains(&row), "README lacks the key row {row:?}");
    }
}

#[test]
fn readme_shows_the_two_commands() {
    let readme = readme();
    assert!(readme.contains("cargo run --release -- sessions/weather.json"));
    assert!(readme.contains("cargo test"));
}

#[test]
fn every_shipped_session_is_documented() {
    let readme = readme();
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/sessions")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            readme.contains(&format!("`sessions/{name}`")),
            "README lacks {name}"
        );
    }
}

/// Every `$ loopdbg …` example in the README prints exactly what the README
/// shows (run through `sh`, so a pipe in the example works).
#[test]
fn readme_examples_print_what_they_show() {
    let readme = readme();
    let mut checked = 0;
    let mut lines = readme.lines().peekable();
    while let Some(line) = lines.next() {
        if line != "```text" {
            continue;
        }
        let Some(command) = lines.peek().and_then(|l| l.strip_prefix("$ loopdbg ")) else {
            continue;
        };
        let command = command.to_string();
        lines.next();
        let mut expected = Vec::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            expected.push(l);
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{} {command}", env!("CARGO_BIN_EXE_loopdbg")))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let actual = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            actual.trim_end(),
            expected.join("\n").trim_end(),
            "README example `loopdbg {command}` prints something else"
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} README examples found");
}

#[test]
fn readme_tells_every_finding_kind_and_its_severity() {
    let text = readme();
    for kind in loopdbg_read::finding::Kind::ALL {
        assert!(
            text.contains(&format!("| `{kind}` |")),
            "README's findings table does not list `{kind}`"
        );
    }
}
