//! The README and docs/ stay true to the code: the tables written from it,
//! the commands they show, every session and finding kind named.

use std::path::{Path, PathBuf};

use loopdbg_tui::keymap::{Binding, KEYMAP, POPUP_KEYMAP, keys_label};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README, then every page of docs/, as one text.
fn readme() -> String {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

fn keys_table(bindings: &[Binding]) -> String {
    let mut table = String::from("| keys | action |\n|---|---|\n");
    for b in bindings {
        table.push_str(&format!("| `{}` | {} |\n", keys_label(b), b.description));
    }
    table
}

fn findings_table() -> String {
    let mut table = String::from("| kind | what it means |\n|---|---|\n");
    for kind in loopdbg_read::finding::Kind::ALL {
        let note = if kind.is_note() { " (a note)" } else { "" };
        table.push_str(&format!("| `{kind}` | {}{note} |\n", kind.description()));
    }
    table
}

/// The tables between `<!-- generated: NAME … -->` and `<!-- end
/// generated -->` are what the code writes today. `LOOPDBG_BLESS=1`
/// writes them instead of failing.
#[test]
fn generated_tables_are_what_the_code_says() {
    let tables = [
        ("docs/debugger.md", "keys", keys_table(&KEYMAP)),
        ("docs/debugger.md", "popup-keys", keys_table(&POPUP_KEYMAP)),
        ("docs/check.md", "findings", findings_table()),
    ];
    let bless = std::env::var_os("LOOPDBG_BLESS").is_some();
    for (page, name, table) in tables {
        let path = root().join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        let open = format!("<!-- generated: {name}");
        let start = text
            .find(&open)
            .unwrap_or_else(|| panic!("{page} has no {open}"));
        let body = start + text[start..].find("-->\n").unwrap() + 4;
        let end = body + text[body..].find("<!-- end generated -->").unwrap();
        if bless {
            let written = format!("{}{table}{}", &text[..body], &text[end..]);
            std::fs::write(&path, written).unwrap();
            continue;
        }
        assert_eq!(
            &text[body..end],
            table,
            "{page}'s {name} table is not what the code says (LOOPDBG_BLESS=1 rewrites it)"
        );
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
    for name in crate::common::shipped_names() {
        assert!(
            readme.contains(&format!("`sessions/{name}`")),
            "neither the README nor docs/ names {name}"
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
    // The hand-written table of which provider refuses what, in its words
    // (the generated one above it lists every kind by construction).
    let text = std::fs::read_to_string(root().join("docs/check.md")).unwrap();
    let start = text
        .find("#### Findings: what is a 400 and what is not")
        .unwrap();
    let section = &text[start..];
    let section = &section[..section[5..]
        .find("\n#### ")
        .map_or(section.len(), |e| e + 5)];
    for kind in loopdbg_read::finding::Kind::ALL {
        assert!(
            section.contains(&format!("| `{kind}` |")) || section.contains(&format!("`{kind}` /")),
            "docs/check.md's table of what providers refuse does not list `{kind}`"
        );
    }
}

/// Every command has its manual entry (docs/commands.md): examples and
/// exit status; every example parses with the real argument parser (run
/// with `--help` after its arguments, which clap reaches only when each
/// one before it is valid); and `man --dir` writes a page per command,
/// each with its examples and exit status.
#[test]
fn every_command_has_a_man_page_with_examples_that_parse() {
    let help = crate::common::loopdbg().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let listed: Vec<String> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(listed.len() >= 14, "{listed:?}");
    let documented = loopdbg_manual::commands();
    for command in listed.iter().map(String::as_str).chain(["loopdbg"]) {
        assert!(
            documented.contains(&command),
            "docs/commands.md has no `## {command}`"
        );
        let entry = loopdbg_manual::entry(command).unwrap();
        assert!(!entry.examples.is_empty(), "{command}: no examples");
        assert!(
            entry.exit_status.starts_with('0') || entry.exit_status.starts_with("the"),
            "{command}: {}",
            entry.exit_status
        );
        for example in &entry.examples {
            let words: Vec<&str> = example
                .split('#')
                .next()
                .unwrap()
                .split_whitespace()
                .take_while(|w| *w != "|" && *w != ">")
                .collect();
            assert_eq!(words[0], "loopdbg", "{example}");
            let mut args: Vec<&str> = words[1..].to_vec();
            match args.iter().position(|w| *w == "--") {
                Some(at) => args.insert(at, "--help"),
                None => args.push("--help"),
            }
            let out = crate::common::loopdbg().args(&args).output().unwrap();
            assert!(
                out.status.success(),
                "the example `{example}` does not parse: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    crate::common::loopdbg()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    for command in listed
        .iter()
        .map(|c| format!("loopdbg-{c}"))
        .chain(["loopdbg".into()])
    {
        let page = std::fs::read_to_string(dir.path().join(format!("{command}.1")))
            .unwrap_or_else(|e| panic!("{command}.1: {e}"));
        assert!(page.contains(".SH EXAMPLES"), "{command}.1 has no examples");
        assert!(
            page.contains(".SH \"EXIT STATUS\"") || page.contains(".SH EXIT STATUS"),
            "{command}.1 has no exit status"
        );
    }
    // A second --dir run refuses to write over the pages without --force.
    crate::common::loopdbg()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .code(2);
}
