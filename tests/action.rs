//! The GitHub Action (action.yml) and the pre-commit hooks
//! (.pre-commit-hooks.yaml), run here as GitHub and pre-commit run them:
//! the action's check step is scripts/action/check.sh, run on the
//! fixtures with the real binary and GitHub's files for outputs and the
//! job summary; its verdict step is the shell text of action.yml itself.
//! The install step needs a release: tests/release.rs serves one on
//! loopback.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{scratch, skip};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What one run of the check step left: its exit status, its standard
/// output (the annotations), `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY` and
/// the SARIF report, when written.
struct Ran {
    status: Option<i32>,
    stdout: String,
    outputs: String,
    summary: String,
    sarif: Option<Value>,
}

fn check_step(files: &str, env: &[(&str, &str)]) -> Ran {
    let dir = scratch("action");
    let sarif = dir.join("report.sarif");
    let outputs = dir.join("github_output");
    let summary = dir.join("step_summary");
    let out = Command::new("bash")
        .arg(root().join("scripts/action/check.sh"))
        .current_dir(root())
        .env("LOOPDBG", env!("CARGO_BIN_EXE_loopdbg"))
        .env("LOOPDBG_FILES", files)
        .env("LOOPDBG_SARIF", &sarif)
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("LOOPDBG_FAIL_ON")
        .env_remove("LOOPDBG_DEFER_EXIT")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    Ran {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        outputs: read(&outputs),
        summary: read(&summary),
        sarif: std::fs::read_to_string(&sarif)
            .ok()
            .map(|s| serde_json::from_str(&s).unwrap()),
    }
}

const BLANK: &str = "tests/fixtures/transcripts/anthropic_blank_text.json";
const CLEAN: &str = "tests/fixtures/transcripts/anthropic_clean.json";
const WARNED: &str = "tests/fixtures/transcripts/anthropic_repeated_turn.json";

#[test]
fn a_refusal_is_annotated_on_its_line_reported_as_sarif_and_fails_the_job() {
    let ran = check_step(&format!("{BLANK}\n  {CLEAN}  \n\n"), &[]);
    assert_eq!(ran.status, Some(1), "{}", ran.stdout);
    let annotations: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error file="))
        .collect();
    assert_eq!(annotations.len(), 3, "{}", ran.stdout);
    assert!(
        annotations
            .iter()
            .all(|a| a.starts_with(&format!("::error file={BLANK},line="))),
        "{annotations:#?}"
    );
    assert!(
        ran.stdout
            .contains("messages: text content blocks must be non-empty")
    );
    let sarif = ran.sarif.expect("a SARIF report");
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["ruleId"], "blank_text");
    assert!(ran.outputs.contains("exit-code=1\n"), "{}", ran.outputs);
    assert!(ran.outputs.contains("sarif="), "{}", ran.outputs);
    assert!(ran.summary.starts_with("### loopdbg check\n"));
    assert!(
        ran.summary.contains("empty_content (400)"),
        "{}",
        ran.summary
    );
}

#[test]
fn the_verdict_waits_for_the_upload_when_deferred() {
    let ran = check_step(BLANK, &[("LOOPDBG_DEFER_EXIT", "true")]);
    assert_eq!(ran.status, Some(0));
    assert!(ran.outputs.contains("exit-code=1\n"));
    // The action's last step gives the job its verdict from that output.
    for (exit, fail_on, job) in [
        ("1", "refusal", 1),
        ("0", "refusal", 0),
        ("1", "never", 0),
        ("2", "warning", 1),
        ("", "refusal", 1),
    ] {
        let status = Command::new("bash")
            .args(["-c", &verdict_step()])
            .env("LOOPDBG_EXIT", exit)
            .env("LOOPDBG_FAIL_ON", fail_on)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(job), "exit {exit:?} fail-on {fail_on}");
    }
}

#[test]
fn fail_on_chooses_what_fails_the_job() {
    let clean = check_step(&format!("tests/fixtures/transcripts/**/{CLEAN_NAME}"), &[]);
    assert_eq!(clean.status, Some(0), "{}", clean.stdout);
    assert!(clean.outputs.contains("exit-code=0\n"));
    let warned = check_step(WARNED, &[]);
    assert_eq!(warned.status, Some(0), "{}", warned.stdout);
    assert!(
        warned.stdout.contains("::warning file="),
        "{}",
        warned.stdout
    );
    let strict = check_step(WARNED, &[("LOOPDBG_FAIL_ON", "warning")]);
    assert_eq!(strict.status, Some(1), "{}", strict.stdout);
    let never = check_step(BLANK, &[("LOOPDBG_FAIL_ON", "never")]);
    assert_eq!(never.status, Some(0));
    assert!(never.outputs.contains("exit-code=1\n"));
    let typo = check_step(BLANK, &[("LOOPDBG_FAIL_ON", "refusals")]);
    assert_eq!(typo.status, Some(2));
    assert!(typo.stdout.contains("fail-on is refusal, warning or never"));
}

const CLEAN_NAME: &str = "anthropic_clean.json";

#[test]
fn a_pattern_that_matches_nothing_is_an_error_not_a_clean_check() {
    let ran = check_step(&format!("{CLEAN}\nrecordings/*.har"), &[]);
    assert_eq!(ran.status, Some(2), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("::error title=loopdbg::no file matches 'recordings/*.har'"),
        "{}",
        ran.stdout
    );
    assert!(ran.outputs.contains("exit-code=2\n"));
    let none = check_step("  \n", &[]);
    assert_eq!(none.status, Some(2));
    assert!(none.stdout.contains("the files input names no pattern"));
    let missing = check_step(CLEAN, &[("LOOPDBG", "/nonexistent/loopdbg")]);
    assert_eq!(missing.status, Some(2));
    assert!(
        missing.stdout.contains("is not installed"),
        "{}",
        missing.stdout
    );
}

fn action() -> Value {
    let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// The shell text of the action's verdict step, as GitHub runs it.
fn verdict_step() -> String {
    let action = action();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["name"] == "Verdict").unwrap();
    step["run"].as_str().unwrap().to_string()
}

/// Every input the action declares reaches a step, every script a step
/// runs is in the repository and executable, and the check step's outputs
/// are the ones the action declares.
#[test]
fn the_action_is_wired_to_its_scripts() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let steps = serde_json::to_string(&action["runs"]["steps"]).unwrap();
    for input in action["inputs"].as_object().unwrap().keys() {
        assert!(
            steps.contains(&format!("inputs.{input}")),
            "input `{input}` reaches no step"
        );
    }
    for script in [
        "scripts/action/install.sh",
        "scripts/action/install.ps1",
        "scripts/action/check.sh",
    ] {
        let name = script.rsplit('/').next().unwrap();
        assert!(steps.contains(name), "no step runs {script}");
        let meta = std::fs::metadata(root().join(script)).unwrap();
        if script.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            assert!(
                meta.permissions().mode() & 0o111 != 0,
                "{script} is not executable"
            );
        }
    }
    let check = std::fs::read_to_string(root().join("scripts/action/check.sh")).unwrap();
    for output in action["outputs"].as_object().unwrap().keys() {
        assert!(
            check.contains(&format!("output {output} ")),
            "check.sh never sets `{output}`"
        );
    }
}

/// The hooks, run by pre-commit itself (from PyPI, in the clients' venv
/// .ci/run installs) in a repository of the test's own: a commit touching
/// a broken recording is stopped with the provider's words; a clean one
/// passes; a file outside the hook's patterns is not read.
#[test]
#[ignore = "end to end: pre-commit from PyPI (.ci/run installs it)"]
fn the_pre_commit_hook_stops_a_commit_of_a_broken_recording() {
    let venv = root().join("target/clients/bin");
    let pre_commit = venv.join("pre-commit");
    if !pre_commit.exists() {
        skip(
            "the_pre_commit_hook_stops_a_commit_of_a_broken_recording",
            "pre-commit is not installed (scripts/install-clients.sh installs it)",
        );
        return;
    }
    // The hooks as this work tree has them, committed in a repository of
    // their own (try-repo takes only tracked files of a work tree).
    let hooks = scratch("pre-commit-hooks");
    let repo = scratch("pre-commit");
    let git = |dir: &Path, args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    std::fs::copy(
        root().join(".pre-commit-hooks.yaml"),
        hooks.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(&hooks, &["init", "-q"]);
    git(&hooks, &["add", "."]);
    git(&hooks, &["commit", "-q", "-m", "hooks"]);
    git(&repo, &["init", "-q"]);
    std::fs::create_dir_all(repo.join("tests/recordings")).unwrap();
    std::fs::copy(
        root().join(BLANK),
        repo.join("tests/recordings/broken.json"),
    )
    .unwrap();
    std::fs::copy(root().join(CLEAN), repo.join("tests/recordings/clean.json")).unwrap();
    std::fs::write(repo.join("notes.json"), "{\"not\": \"a conversation\"}").unwrap();
    git(&repo, &["add", "."]);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_loopdbg")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin_dir.display(),
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |files: &[&str]| {
        let out = Command::new(&pre_commit)
            .args([
                "try-repo",
                hooks.to_str().unwrap(),
                "loopdbg-check-system",
                "--files",
            ])
            .args(files)
            .current_dir(&*repo)
            .env("PATH", &path)
            .env("PRE_COMMIT_HOME", repo.join(".cache"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (status, said) = run(&["tests/recordings/broken.json", "notes.json"]);
    assert_eq!(status, Some(1), "{said}");
    assert!(
        said.contains("messages: text content blocks must be non-empty"),
        "{said}"
    );
    assert!(!said.contains("notes.json"), "{said}");
    let (status, said) = run(&["tests/recordings/clean.json", "notes.json"]);
    assert_eq!(status, Some(0), "{said}");
}
