//! Every fixture's findings, as the user reads them: `loopdbg check` in
//! text and in JSON, and the newest conversation replayed as `run --export
//! json` writes it. A snapshot per fixture, so a refactor of the readers,
//! the detector or the judge shows exactly which file's words moved.

use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    walk(&root.join("tests/fixtures"), &mut out);
    let mut relative: Vec<PathBuf> = out
        .into_iter()
        .map(|p| p.strip_prefix(root).unwrap().to_path_buf())
        .collect();
    relative.sort();
    relative
}

/// What one command printed, both streams and the exit code.
fn printed(args: &[&str]) -> String {
    let out = crate::common::loopdbg().args(args).output().unwrap();
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn every_fixture_keeps_its_findings() {
    let files = fixtures();
    assert!(files.len() > 150, "only {} fixtures", files.len());
    for file in files {
        let path = file.to_str().unwrap();
        let name = path
            .trim_start_matches("tests/fixtures/")
            .replace(['/', '.'], "__");
        let mut text = format!("== check {path}\n{}", printed(&["check", path]));
        text += &format!(
            "== check --format json {path}\n{}",
            printed(&["check", "--format", "json", path])
        );
        text += &format!(
            "== run --export json {path}\n{}",
            printed(&["run", path, "--export", "json"])
        );
        insta::with_settings!({snapshot_path => "snapshots/findings", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(name, text);
        });
    }
}
