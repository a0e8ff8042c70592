//! `loopdbg doctor`: prints what `loopdbg_corpus::doctor` finds and does
//! for each file, and the exit code: 0 when every file is (or, written,
//! became) clean; 1 when one needs or kept a repair; 2 when one could not
//! be read or repaired.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use loopdbg_corpus::doctor::{Verdict, Written, apply, diagnose};

/// `loopdbg doctor FILE… [--write] [--force]`.
pub fn doctor(files: &[PathBuf], write: bool, force: bool) -> ExitCode {
    let mut out = std::io::stdout();
    let mut worst = 0u8;
    for path in files {
        let name = path.display();
        let code = match diagnose(path) {
            Verdict::Clean => {
                let _ = writeln!(out, "{name}: nothing keeps this session from being sent");
                0
            }
            Verdict::Cannot(why) => {
                let _ = writeln!(out, "{name}: not changed: {why}");
                2
            }
            Verdict::Needs(plan) => {
                let _ = writeln!(
                    out,
                    "{name}: {} change(s) would make it sendable:",
                    plan.changes.len()
                );
                for change in &plan.changes {
                    let _ = writeln!(out, "  line {}: {}", change.line, change.what);
                }
                if !write {
                    let _ = writeln!(
                        out,
                        "  (nothing written: pass --write to repair it, keeping a backup)"
                    );
                    1
                } else {
                    said(&mut out, apply(path, &plan, force))
                }
            }
        };
        worst = worst.max(code);
    }
    ExitCode::from(worst)
}

/// Says what writing came to; its exit code.
fn said(out: &mut impl Write, written: Written) -> u8 {
    match written {
        Written::Not { why, failed } => {
            let _ = writeln!(out, "  not written: {why}");
            if failed { 2 } else { 1 }
        }
        Written::Done { backup, clean } => {
            let _ = writeln!(
                out,
                "  written; the original is kept as {}",
                backup.display()
            );
            if clean {
                let _ = writeln!(out, "  checked again: nothing keeps it from being sent");
                0
            } else {
                let _ = writeln!(
                    out,
                    "  checked again: it still needs repair (the backup holds the original)"
                );
                1
            }
        }
    }
}
