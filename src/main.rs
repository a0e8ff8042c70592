//! The `loopdbg` binary: a thin adapter over the library. [`cli`] parses
//! arguments, reads files, drives the terminal and maps errors to exit codes;
//! every loop semantic lives in the library.
#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
