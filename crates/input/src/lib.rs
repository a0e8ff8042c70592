//! How loopdbg takes in bytes, before anything is parsed: an input that
//! may be gzip-compressed ([`gunzip`]), cut into chunks of whole lines
//! with a bound on every line ([`lines`]), and a file followed as it grows
//! ([`tail`]). Pure I/O over `std` and `flate2`, with no knowledge of
//! formats, so the fuzz targets drive exactly the code the CLI runs.

pub mod gunzip;
pub mod lines;
pub mod tail;
