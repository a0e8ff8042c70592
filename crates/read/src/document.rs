//! One document (a request body or a bare array) read as its source.

use crate::agent::Agent;
use serde_json::Value;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_formats::provider::Format;

use crate::GeminiCliLog;
use crate::conversation::{Conversation, Detail, ReadError, Source, err};
use crate::{anthropic, bedrock, crush, gemini, openai_chat, opencode, responses};

/// Reads a single document (request body or bare array) as `source`.
pub fn read(doc: &Value, source: Source) -> Result<Conversation, ReadError> {
    read_owned(doc.clone(), source)
}

/// [`read`], taking the document so its contents move into the
/// conversation instead of being copied (what `check` does per line).
pub fn read_owned(doc: Value, source: Source) -> Result<Conversation, ReadError> {
    read_owned_as(doc, source, Detail::Full)
}

/// [`read_owned`], keeping what `detail` keeps. Under [`Detail::Shape`]
/// texts are fingerprinted as they are found instead of copied (arguments
/// and results move out of `doc` whole: the schema check reads them):
/// checking a body then holds it about once (the proxy's gate held a
/// 250 MB request four times over).
pub fn read_owned_as(
    mut doc: Value,
    source: Source,
    detail: Detail,
) -> Result<Conversation, ReadError> {
    let doc = &mut doc;
    match source {
        Source::Provider(Format::Anthropic) => anthropic::read(doc, detail),
        Source::Provider(Format::Openai) => openai_chat::read(doc, detail),
        Source::Provider(Format::Responses) => responses::read(doc, detail),
        Source::Provider(Format::Gemini) => gemini::read(doc, detail),
        Source::Provider(Format::Bedrock) => bedrock::read(doc, detail),
        Source::Agent(Agent::Opencode) => opencode::read(doc),
        Source::Agent(Agent::Crush) => crush::read(doc),
        Source::Agent(agent @ (Agent::Cline | Agent::RooCode | Agent::KiloCode)) => {
            anthropic::read_as(doc, detail, Some(agent))
        }
        Source::Mcp => Err(err(
            &JsonPath::root(),
            "an MCP capture is JSON Lines of records; read it with `mcp::sessions`",
        )),
        Source::Agent(Agent::GeminiCli) => {
            // The legacy whole-file recording: metadata with its messages.
            let mut log = GeminiCliLog::default();
            log.push_owned(1, std::mem::take(doc))?;
            log.finish().into_iter().next().ok_or_else(|| {
                err(
                    &JsonPath::root().key("messages"),
                    "expected at least one message record",
                )
            })
        }
        Source::Agent(Agent::ClaudeCode | Agent::Codex | Agent::CopilotCli | Agent::KimiCode) => {
            Err(err(
                &JsonPath::root(),
                "an agent log is JSON Lines of events; read it with `Log`",
            ))
        }
    }
}
