//! The release, as far as this machine can make and install one: the
//! cargo-dist plan for every platform and installer, and the Linux x86_64
//! release built with `dist build`, served on loopback the way GitHub
//! serves a release, installed from the npm package, the shell installer
//! and the GitHub Action's install step, each into a clean folder with a
//! HOME of its own, then run (docs/install.md says what is not tested).
//!
//! `dist` is the one .ci/run installs (`target/tools/bin/dist`), or
//! `LOOPDBG_DIST`, or the `dist` on PATH.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::common::{scratch, skip};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Every platform a release has a binary for (dist-workspace.toml's
/// `targets`, which the test reads too).
const TARGETS: [&str; 7] = [
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-musl",
    "x86_64-unknown-linux-musl",
    "x86_64-pc-windows-msvc",
];

fn dist(test: &str) -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("LOOPDBG_DIST").map(PathBuf::from),
        Some(root().join("target/tools/bin/dist")),
    ];
    if let Some(found) = candidates.into_iter().flatten().find(|p| p.exists()) {
        return Some(found);
    }
    if Command::new("dist").arg("--version").output().is_ok() {
        return Some(PathBuf::from("dist"));
    }
    skip(
        test,
        "cargo-dist is not installed (.ci/run installs it into target/tools)",
    );
    None
}

fn ran(what: &str, out: Output) -> String {
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {said}");
    said
}

/// The plan names an archive for every platform, each installer, and the
/// release workflow is the one `dist generate` writes from the config;
/// every URL `cargo binstall` builds from Cargo.toml names an archive of
/// the plan, with the binary where its `bin-dir` says.
#[test]
#[ignore = "end to end: cargo-dist (.ci/run installs it)"]
fn the_release_plan_covers_every_platform_and_installer() {
    let Some(dist) = dist("the_release_plan_covers_every_platform_and_installer") else {
        return;
    };
    let plan = Command::new(&dist)
        .args(["plan", "--output-format=json", "--no-local-paths"])
        .current_dir(root())
        .output()
        .unwrap();
    let plan: Value = serde_json::from_str(&ran("dist plan", plan)).unwrap_or_else(|e| {
        panic!("dist plan's manifest: {e}");
    });
    ran(
        "dist generate --check (the release workflow is out of date: run `dist generate`)",
        Command::new(&dist)
            .args(["generate", "--check"])
            .current_dir(root())
            .output()
            .unwrap(),
    );
    let config = std::fs::read_to_string(root().join("dist-workspace.toml")).unwrap();
    let artifacts = plan["artifacts"].as_object().unwrap();
    for target in TARGETS {
        assert!(
            config.contains(&format!("\"{target}\"")),
            "{target} not in dist-workspace.toml"
        );
    }
    for installer in [
        "loopdbg-installer.sh",
        "loopdbg-installer.ps1",
        "loopdbg-npm-package.tar.gz",
        "loopdbg.rb",
    ] {
        assert!(
            artifacts.contains_key(installer),
            "the plan makes no {installer}"
        );
    }
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root().join("Cargo.toml"))
        .no_deps()
        .exec()
        .unwrap();
    let package = metadata
        .packages
        .iter()
        .find(|p| p.name.as_str() == "loopdbg")
        .unwrap();
    let repo = package.repository.clone().unwrap();
    let binstall = &package.metadata["binstall"];
    for target in TARGETS {
        let field = |key: &str| {
            binstall["overrides"][target][key]
                .as_str()
                .or(binstall[key].as_str())
                .unwrap()
                .to_string()
        };
        let suffix = match field("pkg-fmt").as_str() {
            "txz" => ".tar.xz",
            "zip" => ".zip",
            other => panic!("{target}: pkg-fmt {other}"),
        };
        let exe = if target.contains("windows") {
            ".exe"
        } else {
            ""
        };
        let expand = |template: String| {
            template
                .replace("{ repo }", &repo)
                .replace("{ version }", VERSION)
                .replace("{ name }", "loopdbg")
                .replace("{ target }", target)
                .replace("{ archive-suffix }", suffix)
                .replace("{ bin }", "loopdbg")
                .replace("{ binary-ext }", exe)
        };
        let url = expand(field("pkg-url"));
        let name = format!("loopdbg-{target}{suffix}");
        assert_eq!(
            url,
            format!("{repo}/releases/download/v{VERSION}/{name}"),
            "{target}"
        );
        let archive = artifacts
            .get(&name)
            .unwrap_or_else(|| panic!("the plan makes no {name}"));
        assert_eq!(archive["target_triples"][0], target);
        let inside: Vec<&str> = archive["assets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["kind"] == "executable")
            .map(|a| a["path"].as_str().unwrap())
            .collect();
        // A tarball wraps its files in a folder named as the archive.
        let expected = match suffix {
            ".zip" => format!("loopdbg{exe}"),
            _ => format!("loopdbg-{target}/loopdbg{exe}"),
        };
        let at = match suffix {
            ".zip" => inside[0].to_string(),
            _ => format!("loopdbg-{target}/{}", inside[0]),
        };
        assert_eq!(at, expected, "{target}: the binary in the archive");
        assert_eq!(
            expand(field("bin-dir")),
            expected,
            "{target}: binstall's bin-dir"
        );
    }
}

/// A release on loopback: `/releases/download/vX/NAME` and
/// `/releases/latest/download/NAME` serve `target/distrib/NAME`.
struct Release {
    base: String,
    served: Arc<AtomicUsize>,
}

fn serve(dir: PathBuf) -> Release {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/releases", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request.split_whitespace().nth(1).unwrap_or("");
            let name = path
                .strip_prefix("/releases/latest/download/")
                .or_else(|| path.strip_prefix(&format!("/releases/download/v{VERSION}/")))
                .filter(|n| !n.contains('/') && !n.contains(".."));
            let body = name.and_then(|n| std::fs::read(dir.join(n)).ok());
            let head = match &body {
                Some(b) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                    b.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string(),
            };
            let _ = stream.write_all(head.as_bytes());
            if let Some(b) = body {
                count.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(&b);
            }
        }
    });
    Release { base, served }
}

/// A command run with a HOME and npm cache of its own, and a PATH without
/// any `loopdbg` already installed (the one under test must be the one
/// found).
fn clean(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::env::split_paths(&path).filter(|dir| !dir.join("loopdbg").exists()),
    )
    .unwrap();
    let mut cmd = Command::new(program);
    cmd.env("HOME", home)
        .env("PATH", path)
        .env("npm_config_cache", home.join(".npm"))
        .env("npm_config_update_notifier", "false")
        .env("NO_COLOR", "1")
        .env_remove("LOOPDBG_VERSION")
        .current_dir(home);
    cmd
}

#[test]
#[ignore = "end to end: cargo-dist builds the release (.ci/run installs it), npm"]
fn the_release_installs_from_npm_the_shell_installer_and_the_action() {
    let test = "the_release_installs_from_npm_the_shell_installer_and_the_action";
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        skip(test, "the release built here is Linux x86_64's");
        return;
    }
    let Some(dist) = dist(test) else {
        return;
    };
    if Command::new("npm").arg("--version").output().is_err() {
        skip(test, "npm is not installed");
        return;
    }
    let target = "x86_64-unknown-linux-gnu";
    ran(
        "dist build",
        Command::new(&dist)
            .args(["build", "--artifacts=all", "--target", target])
            .current_dir(root())
            .output()
            .unwrap(),
    );
    let distrib = root().join("target/distrib");
    let release = serve(distrib.clone());
    let versioned = format!("{}/download/v{VERSION}", release.base);
    let expected = format!("loopdbg {VERSION}");

    // The npm package, as `npm publish` would ship it, pointed at the
    // served release: installed from its tarball, run with npx.
    let work = scratch("npm");
    let unpacked = work.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    ran(
        "tar",
        Command::new("tar")
            .arg("-xzf")
            .arg(distrib.join("loopdbg-npm-package.tar.gz"))
            .arg("-C")
            .arg(&unpacked)
            .output()
            .unwrap(),
    );
    let manifest = unpacked.join("package/package.json");
    let mut package: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert!(
        package["supportedPlatforms"][target].is_object(),
        "{package:#}"
    );
    package["artifactDownloadUrls"] = serde_json::json!([versioned]);
    std::fs::write(&manifest, serde_json::to_string_pretty(&package).unwrap()).unwrap();
    let home = work.join("home");
    std::fs::create_dir_all(&home).unwrap();
    ran(
        "npm pack",
        clean("npm", &home)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&home)
            .arg(unpacked.join("package"))
            .output()
            .unwrap(),
    );
    let tarball = home.join(format!("loopdbg-{VERSION}.tgz"));
    assert!(tarball.exists());
    ran(
        "npm install",
        clean("npm", &home)
            .args(["install", "--no-audit", "--no-fund"])
            .arg(&tarball)
            .output()
            .unwrap(),
    );
    let said = ran(
        "npx loopdbg --version",
        clean("npx", &home)
            .args(["--no-install", "loopdbg", "--version"])
            .output()
            .unwrap(),
    );
    assert!(said.contains(&expected), "{said}");
    let checked = clean("npx", &home)
        .args(["--no-install", "loopdbg", "check"])
        .arg(root().join("tests/fixtures/transcripts/anthropic_blank_text.json"))
        .output()
        .unwrap();
    assert_eq!(checked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&checked.stdout).contains("blank_text (400)"));

    // cargo-dist's shell installer, into a folder of its own.
    let work = scratch("shell-installer");
    let into = work.join("bin");
    ran(
        "loopdbg-installer.sh",
        clean("sh", &work)
            .arg(distrib.join("loopdbg-installer.sh"))
            .arg("--quiet")
            .env("INSTALLER_DOWNLOAD_URL", &versioned)
            .env("LOOPDBG_UNMANAGED_INSTALL", &into)
            .output()
            .unwrap(),
    );
    let said = ran(
        "the installed loopdbg",
        clean(into.join("loopdbg"), &work)
            .arg("--version")
            .output()
            .unwrap(),
    );
    assert!(said.contains(&expected), "{said}");

    // The GitHub Action's install step: latest, then the version asked,
    // then one that is not a release.
    for version in ["latest", VERSION, "9.9.9"] {
        let work = scratch("action-install");
        let into = work.join("tool");
        let github_path = work.join("github_path");
        let out = clean("bash", &work)
            .arg(root().join("scripts/action/install.sh"))
            .env("LOOPDBG_VERSION", version)
            .env("LOOPDBG_RELEASES", &release.base)
            .env("LOOPDBG_INSTALL_ROOT", &into)
            .env("GITHUB_PATH", &github_path)
            .output()
            .unwrap();
        if version == "9.9.9" {
            assert_eq!(out.status.code(), Some(2));
            assert!(
                String::from_utf8_lossy(&out.stdout)
                    .contains("::error title=loopdbg::could not download"),
                "{out:?}"
            );
            continue;
        }
        let said = ran("install.sh", out);
        assert!(said.contains(&expected), "{version}: {said}");
        assert_eq!(
            std::fs::read_to_string(&github_path).unwrap().trim(),
            into.to_str().unwrap()
        );
        assert!(into.join("loopdbg").exists());
    }
    assert!(release.served.load(Ordering::SeqCst) >= 5);
}
