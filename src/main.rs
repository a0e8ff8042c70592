//! The `loopdbg` binary: a thin adapter over the library. [`cli`] parses
//! arguments, reads files, drives the terminal and maps errors to exit codes;
//! every loop semantic lives in the library.
#![forbid(unsafe_code)]

mod cli;

// Reading a large agent log allocates millions of small strings; mimalloc
// spends less time on each than the system allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
