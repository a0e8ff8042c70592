//! Live traffic: what the proxy, `--follow` and `record` share, kept pure.
//!
//! - [`route`]: which provider a request is for, from its path and body.
//! - [`gate`]: the check a request passes before it is forwarded, and the
//!   provider's own error body for a request loopdbg blocks.
//! - [`stream`]: server-sent events reassembled into the message they carried.
//! - [`capture`]: the capture file's records (one exchange per line) and the
//!   conversation an exchange shows.
//! - [`record`]: a captured conversation turned into a stub session.
//!
//! No sockets, files or clocks here: the binary's `proxy` and `follow`
//! adapters own those and hand bytes and times in.

pub mod capture;
pub mod gate;
pub mod record;
pub mod route;
pub mod stream;
