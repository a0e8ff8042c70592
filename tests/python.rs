//! The Python package's own suite (`crates/python/tests`, pytest), run
//! against the package as `scripts/install-python.sh` installed it (a fresh
//! virtualenv in `target/python`: `pip install ./crates/python`), beside
//! this build's CLI and fake provider: every fixture checked both ways, the
//! guard in the real anthropic and openai SDKs, a Dask cluster of two
//! workers writing Parquet, DuckDB. Without the virtualenv it is skipped
//! (a failure under `CI=true`, where `.ci/run` builds it).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The virtualenv's interpreter: `target/python`, or `target/python-3.9`
/// for `suffix` `-3.9`.
fn python_in(suffix: &str) -> Option<PathBuf> {
    let env = std::env::var_os("LOOPDBG_PYTHON_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python"));
    let mut name = env.into_os_string();
    name.push(suffix);
    let python = PathBuf::from(name).join("bin/python");
    python.exists().then_some(python)
}

fn python() -> Option<PathBuf> {
    python_in("")
}

/// The fake provider's binary, built with this test's binaries (it is a
/// workspace member's `[[bin]]`, beside the `loopdbg` binary).
fn fake_binary() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_loopdbg")).with_file_name("loopdbg-fake")
}

/// Runs pytest over `tests` with `python`; its summary line and how many
/// passed.
fn pytest(python: &Path, tests: &[&str]) -> (String, usize) {
    let fake = fake_binary();
    if !fake.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "loopdbg-fake"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(built.success(), "cargo build -p loopdbg-fake failed");
    }
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(tests)
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
        .unwrap_or("")
        .to_string();
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
    let words: Vec<&str> = summary.split_whitespace().collect();
    let passed = words
        .windows(2)
        .find(|w| w[1].starts_with("passed"))
        .and_then(|w| w[0].trim_start_matches('=').parse().ok())
        .unwrap_or(0);
    (summary, passed)
}

/// The abi3 wheel on the oldest and newest CPython here: the checks of
/// `test_check.py` (every fixture against the CLI), nothing else needed.
#[test]
#[ignore = "end-to-end: the Python package (scripts/install-python.sh)"]
fn the_wheel_checks_the_same_on_python_3_9_and_3_13() {
    for version in ["3.9", "3.13"] {
        let Some(python) = python_in(&format!("-{version}")) else {
            crate::common::skip(
                &format!("the_wheel_checks_the_same_on_python_{version}"),
                &format!(
                    "no python{version} virtualenv in target/python-{version} (scripts/install-python.sh makes one where python{version} exists)"
                ),
            );
            continue;
        };
        let (summary, passed) = pytest(&python, &["crates/python/tests/test_check.py"]);
        assert!(passed > 600, "python {version}: {summary}");
        eprintln!("python {version}: {summary}");
    }
}

#[test]
#[ignore = "end-to-end: the Python package (scripts/install-python.sh)"]
fn the_python_packages_suite_passes() {
    let Some(python) = python() else {
        crate::common::skip(
            "the_python_packages_suite_passes",
            "no virtualenv in target/python (run scripts/install-python.sh)",
        );
        return;
    };
    let (summary, passed) = pytest(&python, &["crates/python/tests"]);
    assert!(passed > 600, "{summary}");
    let record = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pytest.txt");
    std::fs::write(record, format!("{passed}\n")).unwrap();
    eprintln!("pytest: {summary}");
}

/// The wheel carries the command-line program: `loopdbg` on the
/// virtualenv's PATH and `python -m loopdbg` run it, from a folder of
/// their own, and it answers as this build's binary does. The virtualenvs
/// of other CPythons got the wheel file itself; `target/python` got
/// `pip install ./crates/python` (scripts/install-python.sh).
#[test]
#[ignore = "end-to-end: the Python package (scripts/install-python.sh)"]
fn the_wheel_puts_the_command_line_program_on_path() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/transcripts/anthropic_parallel_one_missing.json");
    let expected = Command::new(env!("CARGO_BIN_EXE_loopdbg"))
        .arg("check")
        .arg(&fixture)
        .output()
        .unwrap();
    let mut ran = 0;
    for suffix in ["", "-3.9", "-3.13"] {
        let Some(python) = python_in(suffix) else {
            continue;
        };
        let bin = python.parent().unwrap();
        let away = tempfile::tempdir().unwrap();
        let version = Command::new(bin.join("loopdbg"))
            .arg("--version")
            .current_dir(away.path())
            .output()
            .unwrap();
        assert!(version.status.success(), "{}", bin.display());
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            format!("loopdbg {}", env!("CARGO_PKG_VERSION")),
            "{}",
            bin.display()
        );
        let checked = Command::new(&python)
            .args(["-m", "loopdbg", "check"])
            .arg(&fixture)
            .current_dir(away.path())
            .output()
            .unwrap();
        assert_eq!(checked.status.code(), Some(1), "{}", bin.display());
        assert_eq!(checked.stdout, expected.stdout, "{}", bin.display());
        ran += 1;
    }
    if ran == 0 {
        crate::common::skip(
            "the_wheel_puts_the_command_line_program_on_path",
            "no virtualenv in target/python (run scripts/install-python.sh)",
        );
    }
}
