//! The README's key list and commands stay true to the code.

use loopdbg::tui::keymap::{KEYMAP, keys_label};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

#[test]
fn readme_lists_every_binding() {
    let readme = readme();
    for b in KEYMAP.iter() {
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
