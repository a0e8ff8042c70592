//! The `loopdbg` binary: a thin adapter over the library. [`cli`] parses
//! arguments, reads files, drives the terminal and maps errors to exit codes;
//! every loop semantic lives in the library.
// One unsafe call, audited: setting an allocator option (below).
#![deny(unsafe_code)]

mod cli;

// Reading a large agent log allocates millions of small strings; mimalloc
// spends less time on each than the system allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // mimalloc's own variable, when set, is left to say.
    #[cfg(feature = "mimalloc")]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        set_purge_delay(if cli::draws_a_screen() {
            AT_ONCE
        } else {
            A_SECOND
        });
    }
    cli::main()
}

/// How long mimalloc keeps freed pages for reuse before it gives them
/// back. Headless commands keep them a second: where work repeats (a scan
/// of many sessions, a gateway reading request after request) pages given
/// back at once were taken again for the next piece, half of `doctor
/// --scan`'s time in the kernel (page faults, zeroed pages) and a third of
/// the proxy's CPU on 2 MB requests. The screen gives them back at once:
/// it idles between bursts, and what a burst freed stayed resident (a
/// follower that let a 500 MB log's whole go kept 333 MB, 27 MB when given
/// back at once; `check` of a 47 MB log with 3,200 rewinds peaks at 82 MB,
/// 73 MB). Measurements in docs/performance.md. Called before any other
/// thread exists (parsing the command line starts none).
#[cfg(feature = "mimalloc")]
#[allow(unsafe_code)]
fn set_purge_delay(ms: std::ffi::c_long) {
    // SAFETY: `mi_option_set` stores an integer option; it takes no
    // pointers and is called before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// Freed pages given back at once.
#[cfg(feature = "mimalloc")]
const AT_ONCE: std::ffi::c_long = 0;

/// Freed pages kept a second for reuse.
#[cfg(feature = "mimalloc")]
const A_SECOND: std::ffi::c_long = 1000;

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_e` (the bindings
/// name no constant for it); a test holds that it is the purge delay.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    /// mimalloc reads `MIMALLOC_PURGE_DELAY` into the option this binary
    /// sets: run again with it set, the option reads it back.
    #[test]
    #[allow(unsafe_code)]
    fn the_option_set_is_mimallocs_purge_delay() {
        if let Ok(delay) = std::env::var("LOOPDBG_TEST_PURGE_DELAY") {
            // SAFETY: reads an integer option.
            let read = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
            assert_eq!(read.to_string(), delay);
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::the_option_set_is_mimallocs_purge_delay"])
            .env("MIMALLOC_PURGE_DELAY", "37")
            .env("LOOPDBG_TEST_PURGE_DELAY", "37")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("1 passed"), "{said}");
    }
}
