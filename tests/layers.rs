//! The layering ARCHITECTURE.md states is Cargo's to enforce: a crate can
//! only name the crates in its `[dependencies]`. These tests keep those
//! lists what the architecture says (no crate reaches down the list, the
//! pure crates take no runtime, network or terminal crate) and keep the
//! pure crates free of I/O, which Cargo cannot see.

use std::collections::BTreeSet;
use std::path::Path;

/// Each crate under `crates/`, the workspace crates it may use, and the
/// outside crates it must never take.
const LAYERS: &[(&str, &[&str], &[&str])] = &[
    ("engine", &[], &["tokio", "crossterm", "ratatui", "rayon"]),
    ("wire", &["engine"], &["tokio", "crossterm", "ratatui"]),
    ("lesson", &["engine"], &["tokio", "crossterm", "ratatui"]),
    (
        "handout",
        &["engine", "wire", "lesson"],
        &["tokio", "crossterm", "ratatui"],
    ),
    (
        "tui",
        &["engine", "wire", "lesson", "handout"],
        &["tokio", "hyper", "notify"],
    ),
    ("proxy", &["engine", "wire"], &["crossterm", "ratatui"]),
    // Files in, reports out: it reads files and starts threads, but takes
    // no runtime, network or terminal, so the Python package can load it.
    (
        "corpus",
        &["engine", "input", "wire"],
        &["tokio", "crossterm", "ratatui", "hyper", "notify"],
    ),
    // The Python extension: conversions only, over the crates that judge.
    (
        "python",
        &["corpus", "engine", "wire"],
        &["tokio", "crossterm", "ratatui", "hyper", "notify"],
    ),
    // Bytes in, before any format: std and flate2 only.
    (
        "input",
        &[],
        &["tokio", "crossterm", "ratatui", "serde_json", "notify"],
    ),
];

/// The names under `[dependencies]` of a manifest (not dev- or build-).
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && let Some((key, _)) = line.split_once('=') {
            let name = key.trim().split('.').next().unwrap_or_default();
            if !name.is_empty() && !name.starts_with('#') {
                names.insert(name.to_string());
            }
        }
    }
    names
}

fn crates() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates")
}

#[test]
fn each_crate_uses_only_the_crates_above_it() {
    let mut broken = Vec::new();
    for (name, allowed, forbidden) in LAYERS {
        let manifest = std::fs::read_to_string(crates().join(name).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("crates/{name}/Cargo.toml: {e}"));
        let deps = dependencies(&manifest);
        assert!(!deps.is_empty(), "crates/{name} names no dependency at all");
        for dep in &deps {
            if let Some(inner) = dep.strip_prefix("loopdbg-") {
                if !allowed.contains(&inner) {
                    broken.push(format!("loopdbg-{name} depends on {dep}"));
                }
            } else if dep == "loopdbg" {
                broken.push(format!("loopdbg-{name} depends on the binary"));
            }
            if forbidden.contains(&dep.as_str()) {
                broken.push(format!("loopdbg-{name} depends on {dep}"));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn every_crate_has_its_layer_named() {
    let mut found: Vec<String> = std::fs::read_dir(crates())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "fake")
        .collect();
    found.sort();
    let mut named: Vec<String> = LAYERS.iter().map(|(n, _, _)| n.to_string()).collect();
    named.sort();
    assert_eq!(found, named, "a crate without a layer in this test");
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The pure crates read no file, socket, clock or environment and start no
/// thread: the same input always gives the same output.
#[test]
fn the_pure_crates_do_no_io() {
    const IO: &[&str] = &[
        "std::fs",
        "std::net",
        "std::thread",
        "std::env",
        "std::process",
        "SystemTime::now",
        "Instant::now",
    ];
    let mut broken = Vec::new();
    for name in ["engine", "wire", "lesson", "handout", "tui"] {
        let mut files = Vec::new();
        rust_files(&crates().join(name).join("src"), &mut files);
        assert!(!files.is_empty(), "crates/{name}/src has no Rust files");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("utf-8 source");
            // Unit tests may read fixtures.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for io in IO {
                if code.contains(io) {
                    broken.push(format!("{} uses {io}", file.display()));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "I/O in a pure crate:\n{}",
        broken.join("\n")
    );
}

#[test]
fn nothing_includes_a_file_by_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates",
        "tests",
        "benches",
        "examples",
        "fuzz/fuzz_targets",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let attribute = ["#[", "path"].concat();
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains(&format!("{attribute} ="))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "files included by path: {found:?}");
}

/// The modules of a crate each name (`crate::x`, `super::x` from a
/// top-level file), comments aside.
fn module_uses(name: &str) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let src = crates().join(name).join("src");
    let mut graph = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let module = match path.file_stem().and_then(|s| s.to_str()) {
            Some("lib" | "main") | None => continue,
            Some(m) => m.to_string(),
        };
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else {
            files.push(path.clone());
        }
        let mut uses = BTreeSet::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for prefix in ["crate::", "super::"] {
                    for (at, _) in line.match_indices(prefix) {
                        let rest = &line[at + prefix.len()..];
                        let used: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if !used.is_empty() && used != module {
                            uses.insert(used);
                        }
                    }
                }
            }
        }
        graph.insert(module, uses);
    }
    graph
}

/// No two modules of the engine or the TUI use each other, however
/// indirectly: each crate reads as layers inside too.
#[test]
fn no_module_of_the_engine_or_the_tui_is_in_an_import_circle() {
    for name in ["engine", "tui"] {
        let graph = module_uses(name);
        // Depth-first search for a path back to where it started.
        fn reaches(
            graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
            from: &str,
            to: &str,
            seen: &mut BTreeSet<String>,
        ) -> bool {
            graph.get(from).is_some_and(|uses| {
                uses.iter()
                    .any(|u| u == to || (seen.insert(u.clone()) && reaches(graph, u, to, seen)))
            })
        }
        let circles: Vec<&String> = graph
            .keys()
            .filter(|m| reaches(&graph, m, m, &mut BTreeSet::new()))
            .collect();
        assert!(
            circles.is_empty(),
            "loopdbg-{name}: modules in an import circle: {circles:?} ({graph:?})"
        );
    }
}
