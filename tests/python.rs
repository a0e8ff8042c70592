//! The Python package's own suite (`crates/python/tests`, pytest), run
//! against the package as `scripts/install-python.sh` installed it (a fresh
//! virtualenv in `target/python`: `pip install ./crates/python`), beside
//! this build's CLI and fake provider: every fixture checked both ways, the
//! guard in the real anthropic and openai SDKs, a Dask cluster of two
//! workers writing Parquet, DuckDB. Without the virtualenv it is skipped
//! (a failure under `CI=true`, where `.ci/run` builds it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let env = std::env::var_os("LOOPDBG_PYTHON_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python"));
    let python = env.join("bin/python");
    python.exists().then_some(python)
}

/// The fake provider's binary, built with this test's binaries (it is a
/// workspace member's `[[bin]]`, beside the `loopdbg` binary).
fn fake_binary() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_loopdbg")).with_file_name("loopdbg-fake")
}

#[test]
fn the_python_packages_suite_passes() {
    let Some(python) = python() else {
        common::skip(
            "the_python_packages_suite_passes",
            "no virtualenv in target/python (run scripts/install-python.sh)",
        );
        return;
    };
    let fake = fake_binary();
    if !fake.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "loopdbg-fake"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(built.success(), "cargo build -p loopdbg-fake failed");
    }
    let out = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "crates/python/tests",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LOOPDBG_BIN", env!("CARGO_BIN_EXE_loopdbg"))
        .env("LOOPDBG_FAKE", &fake)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .rev()
        .find(|l| l.contains(" in "))
        .unwrap_or("");
    // Exit 5 is pytest's "no tests collected": a suite that ran nothing.
    assert!(
        out.status.success(),
        "pytest exited {:?}:\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        summary.contains(" passed") && !summary.contains("skipped"),
        "{summary}"
    );
    // .ci/run adds these to its closing line.
    let passed: usize = summary
        .split_whitespace()
        .zip(summary.split_whitespace().skip(1))
        .find(|(_, w)| w.starts_with("passed"))
        .and_then(|(n, _)| n.trim_start_matches('=').parse().ok())
        .unwrap_or(0);
    assert!(passed > 600, "{summary}");
    let record = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pytest.txt");
    std::fs::write(record, format!("{passed}\n")).unwrap();
    eprintln!("pytest: {summary}");
}
