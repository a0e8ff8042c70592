//! Every captured input read into [`Conversation`]s: canonical messages
//! that keep the provider's own grouping (an Anthropic user message may
//! hold several tool_result blocks), with the source of every block, so a
//! finding can name `messages[3].content[1]` or the log line and uuid.
//!
//! - [`detect`](mod@detect): the one detector: what a document or a line holds;
//! - request bodies, one module per provider format: [`anthropic`],
//!   [`openai_chat`], [`responses`], `gemini`, [`bedrock`] (and
//!   [`plain`], the typed path `check` takes for JSON Lines of them);
//! - agent logs ([`log`]): Claude Code, Codex, Gemini CLI, Copilot CLI,
//!   opencode's export and Crush's sessions;
//! - HTTP recordings ([`recording`], [`cassettes`]), OTLP traces
//!   ([`otlp`]), proxy captures ([`capture`]) and MCP captures ([`mcp`]);
//! - [`threads`]: which requests of a file grow one conversation.
//!
//! Pure: values in, conversations out. Opening files is `loopdbg-corpus`'s.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod anthropic;
pub mod bedrock;
pub mod bounded;
pub mod capture;
pub mod cassettes;
mod claude_code;
pub mod cline;
mod codex;
pub mod conversation;
pub mod copilot_cli;
pub mod crush;
pub mod detect;
pub mod document;
pub mod finding;
mod fingerprint;
pub mod foreign;
mod gemini;
mod gemini_cli;
pub mod kimi_code;
mod lax;
pub mod log;
pub mod mcp;
pub mod openai_chat;
pub mod opencode;
#[cfg(feature = "otlp")]
pub mod otlp;
mod parse;
pub mod plain;
pub mod prefix;
pub mod recording;
pub mod responses;
mod signs;
pub mod threads;
pub mod yaml_depth;

pub use agent::Agent;
pub use claude_code::{
    BOOKKEEPING_EVENTS, ClaudeCodeLog, Growing, Grown, Leftovers, LineError, MESSAGE_EVENTS,
    is_known_event,
};
pub use codex::{ABORTED as CODEX_ABORTED, CodexRollout, RECORD_TYPES as CODEX_RECORD_TYPES};
pub(crate) use conversation::err;
pub use conversation::{
    Answer, BlockSource, Compaction, Conversation, Detail, Hosted, HostedRole, Keeper, Notice,
    ReadError, ReadNote, Refusal, Rewrite, Source, ToolSpec, TripUsage, tool_results, tool_uses,
};
pub use detect::{
    Evidence, Layout, Sniffed, Sniffer, Sniffing, classify_line, detect, detect_with_evidence,
    evidence, is_session, provider_of_request,
};
pub use document::{read, read_owned, read_owned_as};
pub use gemini_cli::{Fold as GeminiCliFold, Folded as GeminiCliRecord, GeminiCliLog};
pub use log::{LineParser, Log, ParsedLine};
pub use parse::finish_reason_of;
pub use parse::joined_text;
pub(crate) use parse::note_joined_lines;
pub(crate) use parse::text_of_parts;
pub use parse::{CONVERSATION_KEYS, holds_conversation, joined_records};
