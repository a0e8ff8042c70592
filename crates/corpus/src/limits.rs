//! How much loopdbg reads of one input, and where it stops.

/// The most a document or an agent log may hold: they are read whole (JSON
/// Lines of conversations are streamed and have no such limit).
pub const MAX_WHOLE_BYTES: u64 = 4 << 30;

/// The longest line loopdbg reads (a minified document is one line).
pub const MAX_LINE_BYTES: usize = 1 << 30;

/// How large a session file may be: sessions are written by hand.
pub const MAX_SESSION_BYTES: u64 = 64 << 20;
