//! The folder layering of ARCHITECTURE.md stays true: each layer names only
//! the layers above it, so the dependency direction is visible in the tree.

use std::path::Path;

/// Each library folder and the crate paths it must never use.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "diagnostics",
        &[
            "crate::engine",
            "crate::wire",
            "crate::lesson",
            "crate::tui",
        ],
    ),
    (
        "engine",
        &["crate::wire", "crate::live", "crate::lesson", "crate::tui"],
    ),
    ("wire", &["crate::live", "crate::lesson", "crate::tui"]),
    ("lesson", &["crate::wire", "crate::live", "crate::tui"]),
    ("live", &["crate::lesson", "crate::handout", "crate::tui"]),
    ("handout", &["crate::live", "crate::tui"]),
];

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

#[test]
fn each_layer_uses_only_the_layers_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (folder, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        rust_files(&src.join(folder), &mut files);
        assert!(!files.is_empty(), "src/{folder} has no Rust files");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("utf-8 source");
            for path in forbidden.iter() {
                if text.contains(path) {
                    broken.push(format!("{} uses {path}", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

#[test]
fn the_library_never_uses_the_binary() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    assert!(!lib.contains("mod cli"), "the library must not own the CLI");
}
