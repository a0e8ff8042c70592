//! How loopdbg takes in and puts out bytes, before anything is parsed: an
//! input that may be gzip-compressed ([`gunzip`]), cut into chunks of
//! whole lines with a bound on every line ([`lines`]), a file followed as
//! it grows ([`tail`]), and the one way a file is written ([`files`]: a
//! temporary file renamed over a regular file, written through to a
//! device or a FIFO). No knowledge of formats, so the fuzz targets drive
//! exactly the code the CLI runs.
#![forbid(unsafe_code)]

pub mod files;
pub mod gunzip;
pub mod lines;
pub mod tail;
#[cfg(feature = "follow")]
pub mod watch;
