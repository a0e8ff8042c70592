//! The layering ARCHITECTURE.md states, held by the graph Cargo resolves
//! (`cargo metadata`, so `[dependencies.x]`, target tables and renames
//! count as Cargo counts them) and by the code:
//!
//! - each crate names only the workspace crates below it;
//! - the pure crates reach no runtime, network, terminal or thread-pool
//!   crate, however indirectly, and their code opens no file, socket,
//!   thread, clock or environment;
//! - no two modules of any crate (the binary's included) use each other,
//!   however indirectly, at any level of the module tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cargo_metadata::{DependencyKind, Metadata, MetadataCommand};

/// A workspace crate: the workspace crates it may use, whether it is
/// pure, and the outside crates it must never reach.
struct Layer {
    name: &'static str,
    uses: &'static [&'static str],
    pure: bool,
    never: &'static [&'static str],
}

/// What no pure crate may reach: runtimes, sockets, terminals, file
/// watchers and thread pools.
const IMPURE: &[&str] = &[
    "tokio",
    "mio",
    "hyper",
    "socket2",
    "crossterm",
    "ratatui",
    "notify",
    "rayon",
];

const LAYERS: &[Layer] = &[
    Layer {
        name: "engine",
        uses: &[],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "formats",
        uses: &["engine"],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "read",
        uses: &["engine", "formats"],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "judge",
        uses: &["engine", "formats", "read"],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "export",
        uses: &["engine", "formats", "read", "judge"],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "lesson",
        uses: &["engine"],
        pure: true,
        never: IMPURE,
    },
    Layer {
        name: "handout",
        uses: &["engine", "formats", "lesson"],
        pure: true,
        never: IMPURE,
    },
    // The debugger's state, update and view: ratatui and crossterm for
    // widgets and key types only; the terminal is term's.
    Layer {
        name: "tui",
        uses: &[
            "engine", "formats", "read", "judge", "export", "lesson", "handout",
        ],
        pure: true,
        never: &["tokio", "hyper", "socket2", "notify", "rayon"],
    },
    // The debugger on a terminal: the event loop, signals, the editor.
    Layer {
        name: "term",
        uses: &["tui", "io"],
        pure: false,
        never: &["hyper", "socket2", "notify", "rayon"],
    },
    // Bytes in and out, before any format: std, flate2, tempfile.
    Layer {
        name: "io",
        uses: &[],
        pure: false,
        never: &["tokio", "serde_json"],
    },
    // Files in, reports out: files and its own threads, no runtime,
    // network or terminal, so the Python package can load it.
    Layer {
        name: "corpus",
        uses: &[
            "engine", "io", "formats", "read", "judge", "export", "lesson", "handout",
        ],
        pure: false,
        never: &["tokio", "hyper", "crossterm", "ratatui", "notify"],
    },
    Layer {
        name: "proxy",
        uses: &["engine", "formats", "read", "judge", "export"],
        pure: false,
        never: &["crossterm", "ratatui"],
    },
    Layer {
        name: "python",
        uses: &["corpus", "engine", "formats", "read", "judge"],
        pure: false,
        never: &["tokio", "hyper", "crossterm", "ratatui", "notify"],
    },
    // `loopdbg mcp-server`: check and the doctor as MCP tools. The
    // protocol's runtime (rmcp on tokio, stdio only: no socket server,
    // no terminal).
    Layer {
        name: "mcp-server",
        uses: &["corpus", "read", "judge"],
        pure: false,
        never: &["hyper", "crossterm", "ratatui", "notify"],
    },
    // The manual: --help's examples and the man pages, from clap's
    // definitions and docs/commands.md.
    Layer {
        name: "manual",
        uses: &[],
        pure: true,
        never: IMPURE,
    },
    // `loopdbg demo`'s agent, over the fake provider.
    Layer {
        name: "demo",
        uses: &["fake", "proxy"],
        pure: false,
        never: &["crossterm", "ratatui"],
    },
    // The fake provider, for tests, benches and `loopdbg demo`.
    Layer {
        name: "fake",
        uses: &[],
        pure: false,
        never: &[],
    },
];

fn metadata() -> Metadata {
    MetadataCommand::new()
        .manifest_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .exec()
        .expect("cargo metadata")
}

fn short(name: &str) -> &str {
    name.strip_prefix("loopdbg-").unwrap_or(name)
}

#[test]
fn every_crate_has_its_layer_named() {
    let meta = metadata();
    let mut found: Vec<String> = meta
        .workspace_packages()
        .iter()
        .filter(|p| p.name.as_str() != "loopdbg")
        .map(|p| short(&p.name).to_string())
        .collect();
    found.sort();
    let mut named: Vec<String> = LAYERS.iter().map(|l| l.name.to_string()).collect();
    named.sort();
    assert_eq!(found, named, "a crate without a layer in this test");
}

#[test]
fn each_crate_uses_only_the_crates_below_it() {
    let meta = metadata();
    let mut broken = Vec::new();
    for package in meta.workspace_packages() {
        let Some(layer) = LAYERS.iter().find(|l| l.name == short(&package.name)) else {
            continue;
        };
        for dep in package
            .dependencies
            .iter()
            .filter(|d| d.kind == DependencyKind::Normal)
        {
            let Some(inner) = dep.name.strip_prefix("loopdbg-") else {
                assert_ne!(
                    dep.name, "loopdbg",
                    "{} depends on the binary",
                    package.name
                );
                continue;
            };
            if !layer.uses.contains(&inner) {
                broken.push(format!("{} depends on {}", package.name, dep.name));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

/// Every crate a package reaches through normal dependencies, with the
/// features a build of that package alone turns on (`cargo tree -p`, so a
/// feature only the binary asks for does not count against a library).
fn reachable(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "tree", "-p", package, "-e", "normal", "--prefix", "none", "-f", "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn no_crate_reaches_what_its_layer_forbids() {
    let meta = metadata();
    // The reader of the graph sees what is there: the binary runs tokio.
    assert!(
        reachable("loopdbg").contains("tokio"),
        "cargo tree read nothing"
    );
    let mut broken = Vec::new();
    for package in meta.workspace_packages() {
        let Some(layer) = LAYERS.iter().find(|l| l.name == short(&package.name)) else {
            continue;
        };
        let reached = reachable(&package.name);
        for never in layer.never {
            if reached.contains(*never) {
                broken.push(format!("{} reaches {never}", package.name));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's code, unit tests and comments aside.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("utf-8 source");
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string (a URL) is rare enough in paths of use.
            Some(at) if !l[..at].contains('"') => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(name)
        .join("src")
}

/// The pure crates read no file, socket, clock or environment and start
/// no thread: the same input always gives the same output.
#[test]
fn the_pure_crates_do_no_io() {
    const IO: &[&str] = &[
        "std::fs",
        "std::net",
        "std::thread",
        "std::env",
        "std::process",
        "std::io::stdin",
        "std::io::stdout",
        "std::io::stderr",
        "SystemTime::now",
        "Instant::now",
        "rayon::",
        "tokio::",
        "thread::spawn",
        "thread::scope",
        "File::open",
        "File::create",
        "TcpStream",
        "UdpSocket",
        "env::var",
    ];
    let mut broken = Vec::new();
    for layer in LAYERS.iter().filter(|l| l.pure) {
        let mut files = Vec::new();
        rust_files(&crate_src(layer.name), &mut files);
        assert!(!files.is_empty(), "crates/{} has no Rust files", layer.name);
        for file in files {
            let code = code_of(&file);
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

/// A module's place in its crate: `["read", "log"]` for `src/read/log.rs`.
type ModPath = Vec<String>;

/// The modules of a crate whose root file is `root` (`lib.rs`,
/// `main.rs`), each with its file.
fn modules(root: &Path) -> BTreeMap<ModPath, PathBuf> {
    let src = root.parent().expect("a source folder");
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if file == root {
            parts.clear();
        } else if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
            continue; // the other root of a crate with both
        }
        out.insert(parts, file);
    }
    out
}

/// The paths a file's code names (`crate::a::b`, `super::x`, `self::y`,
/// and each name in a brace list), absolute in the crate.
fn named_paths(code: &str, at: &[String]) -> Vec<ModPath> {
    fn word_at(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    }
    // `a::b::{c, d::e}` after a prefix, expanded into each path.
    fn expand(rest: &str, base: &ModPath, out: &mut Vec<ModPath>) {
        let mut path = base.clone();
        let mut s = rest;
        loop {
            if let Some(inner) = s.strip_prefix('{') {
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            expand(inner[start..i].trim(), &path, out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            expand(inner[start..i].trim(), &path, out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let word = word_at(s);
            if word.is_empty() {
                break;
            }
            path.push(word.clone());
            s = &s[word.len()..];
            match s.strip_prefix("::") {
                Some(next) => s = next,
                None => break,
            }
        }
        if path.len() > base.len() {
            out.push(path);
        }
    }
    let mut out = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("self::", at.to_vec()),
        ("super::super::", at[..at.len().saturating_sub(2)].to_vec()),
        ("super::", at[..at.len().saturating_sub(1)].to_vec()),
    ] {
        for (i, _) in code.match_indices(prefix) {
            // `super::super::` is not also `super::` twice, nor is
            // `loopdbg_crate::` a `crate::`.
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            if prefix == "super::" && code[i..].starts_with("super::super::") {
                continue;
            }
            expand(&code[i + prefix.len()..], &base, &mut out);
        }
    }
    out
}

/// Names a module re-exports (`pub use x::{a, b as c}`), with the path
/// each stands for.
fn reexports(code: &str, at: &[String]) -> BTreeMap<String, ModPath> {
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(rest) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| stmt.find(p).map(|i| &stmt[i + p.len()..]))
        else {
            continue;
        };
        let rest: String = rest.split_whitespace().collect::<Vec<_>>().join(" ");
        let rest = rest.replace(" as ", "@");
        let mut paths = Vec::new();
        let absolute = rest.strip_prefix("crate::").map(str::to_string);
        let (text, base) = match absolute {
            Some(r) => (r, Vec::new()),
            None => (rest.to_string(), at.to_vec()),
        };
        // `a::{b@c, d}`: collect each leaf path and the name it takes.
        fn leaves(s: &str, base: &ModPath, out: &mut Vec<(String, ModPath)>) {
            let s = s.trim();
            if let Some((head, tail)) = s.split_once("::{") {
                let mut path = base.clone();
                path.extend(head.split("::").map(str::to_string));
                let inner = tail.trim_end_matches('}');
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            leaves(&inner[start..i], &path, out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                leaves(&inner[start..], &path, out);
                return;
            }
            if s.is_empty() {
                return;
            }
            let (path, name) = match s.split_once('@') {
                Some((p, n)) => (p, n.trim().to_string()),
                None => (s, s.rsplit("::").next().unwrap_or(s).to_string()),
            };
            let mut full = base.clone();
            full.extend(path.split("::").map(|p| p.trim().to_string()));
            out.push((name, full));
        }
        leaves(&text, &base, &mut paths);
        for (name, path) in paths {
            out.insert(name, path);
        }
    }
    out
}

/// The module a named path lands in: its longest prefix that is a module,
/// following a re-export of the next name.
fn target(
    path: &ModPath,
    mods: &BTreeMap<ModPath, PathBuf>,
    exports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
) -> Option<ModPath> {
    let mut path = path.clone();
    for _ in 0..8 {
        let mut prefix = path.clone();
        while !prefix.is_empty() && !mods.contains_key(&prefix) {
            prefix.pop();
        }
        let next = path.get(prefix.len());
        match next.and_then(|n| exports.get(&prefix)?.get(n)) {
            Some(through) if through != &path => path = through.clone(),
            _ => return Some(prefix),
        }
    }
    None
}

/// For each module with children, the uses between its children: `a`
/// uses `b` when code anywhere inside `a` names something inside `b`.
fn sibling_uses(root: &Path) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let mods = modules(root);
    let codes: BTreeMap<ModPath, String> =
        mods.iter().map(|(m, f)| (m.clone(), code_of(f))).collect();
    let exports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = codes
        .iter()
        .map(|(m, c)| (m.clone(), reexports(c, m)))
        .collect();
    let mut graph: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, code) in &codes {
        for named in named_paths(code, module) {
            let Some(to) = target(&named, &mods, &exports) else {
                continue;
            };
            let common = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // Within one module, or between a module and its own parent
            // or child: not a use between siblings.
            if common == module.len() || common == to.len() {
                continue;
            }
            graph
                .entry(module[..common].to_vec())
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    graph
}

fn circles(uses: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn reaches(
        uses: &BTreeMap<String, BTreeSet<String>>,
        from: &str,
        to: &str,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        uses.get(from).is_some_and(|next| {
            next.iter()
                .any(|u| u == to || (seen.insert(u.clone()) && reaches(uses, u, to, seen)))
        })
    }
    uses.keys()
        .filter(|m| reaches(uses, m, m, &mut BTreeSet::new()))
        .cloned()
        .collect()
}

/// No two modules of any crate use each other, however indirectly: each
/// crate reads as layers inside too.
#[test]
fn no_module_of_any_crate_is_in_an_import_circle() {
    let meta = metadata();
    let mut found = Vec::new();
    let mut checked = 0;
    for package in meta.workspace_packages() {
        for target in package.targets.iter().filter(|t| t.is_lib() || t.is_bin()) {
            let root = target.src_path.as_std_path();
            checked += 1;
            for (parent, uses) in sibling_uses(root) {
                let looped = circles(&uses);
                if !looped.is_empty() {
                    found.push(format!(
                        "{} {}: {looped:?} ({uses:?})",
                        package.name,
                        if parent.is_empty() {
                            "crate".to_string()
                        } else {
                            parent.join("::")
                        }
                    ));
                }
            }
        }
    }
    assert!(checked >= 14, "only {checked} crates read");
    assert!(
        found.is_empty(),
        "modules in an import circle:\n{}",
        found.join("\n")
    );
}

/// The reader of the module graph finds a circle where there is one.
#[test]
fn the_circle_finder_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("loopdbg-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b; pub use b::thing;").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::thing;").unwrap();
    std::fs::write(dir.join("b/mod.rs"), "mod c; pub use c::thing;").unwrap();
    std::fs::write(
        dir.join("b/c.rs"),
        "pub fn thing() { super::super::a::x(); }",
    )
    .unwrap();
    let uses = sibling_uses(&dir.join("lib.rs"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(circles(&uses[&Vec::new()]), ["a", "b"], "{uses:?}");
}
