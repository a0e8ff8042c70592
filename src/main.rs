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
        return_freed_memory_soon();
    }
    cli::main()
}

/// mimalloc 3 keeps freed pages for a second before it gives them back,
/// so what a log's reading freed (chunks, vectors grown and dropped)
/// stays resident a while beside what comes after: `check` of a 47 MB log
/// with 3,200 rewinds peaks at 82 MB, 73 MB when given back at once. This
/// binary gave them back at once (a delay of 0) until that was found to
/// cost far more than it saved wherever work repeats: a scan of many
/// sessions, or a gateway reading request after request, gave back each
/// one's pages and took them again for the next, half of `doctor --scan`'s
/// time in the kernel (page faults, zeroed pages) and a third of the
/// proxy's CPU on 2 MB requests. The second is set here rather than left
/// to the library's default, so a newer mimalloc does not change it
/// unsaid; `MIMALLOC_PURGE_DELAY`, when set, still says (measurements in
/// docs/performance.md).
#[cfg(feature = "mimalloc")]
#[allow(unsafe_code)]
fn return_freed_memory_soon() {
    // SAFETY: `mi_option_set` stores an integer option; it takes no
    // pointers and is called before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
}

/// How long freed pages are kept for reuse before they are given back.
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

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
