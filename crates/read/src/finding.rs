//! What the checker says: the kind of a problem, how grave it is, and what
//! a file shows became of the request. Each is an enum that serializes to
//! the stable string `check --format json` has always written. Code compares
//! variants (`Kind::UnansweredCall`), never strings, so a typo does not
//! compile.

use serde::Serialize;

/// Declares [`Kind`] with each variant's stable name and description.
macro_rules! kinds {
    ($($variant:ident = $name:literal: $description:literal,)+) => {
        /// A stable kind of finding.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $(#[doc = $description] $variant,)+
        }

        impl Kind {
            /// Every kind, in the order the documentation lists them.
            pub const ALL: &[Kind] = &[$(Kind::$variant,)+];

            /// The stable name (`unanswered_call`), as JSON writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)+
                }
            }

            /// One line on what it means.
            pub fn description(self) -> &'static str {
                match self {
                    $(Kind::$variant => $description,)+
                }
            }
        }
    };
}

kinds! {
    UnansweredCall = "unanswered_call": "a tool call without its result",
    ResultsNotFirst = "results_not_first": "Anthropic: the results do not open the next user message",
    UnexpectedResult = "unexpected_result": "a result for a call the previous turn did not make",
    DuplicateResult = "duplicate_result": "a call answered more than once in the request (Gemini counts the responses: a 400)",
    DuplicateId = "duplicate_id": "two calls of one turn share one id",
    UnnamedResult = "unnamed_result": "OpenAI Chat: a tool message with `tool_call_id: null`, paired by position",
    ReusedId = "reused_id": "a later turn reuses an earlier turn's call id (accepted, but ambiguous)",
    ConsecutiveSameRole = "consecutive_same_role": "consecutive messages of one role (Anthropic merges them; accepted)",
    UnansweredServerCall = "unanswered_server_call": "a server or MCP connector call whose result never came, mid-conversation",
    OffBranch = "off_branch": "Claude Code log events on a branch the live conversation left behind",
    CallTurnOutOfPlace = "call_turn_out_of_place": "Gemini: a function call turn not right after a user or function response turn",
    MissingThoughtSignature = "missing_thought_signature": "Gemini 3: a call of the current turn without its thought signature",
    UnverifiableResult = "unverifiable_result": "a result for a call outside what was read (a continued response, a log cut at its head): cannot be checked here",
    UnknownEvent = "unknown_event": "an agent-log event type loopdbg does not know: read around it, said once",
    EmptyErrorResult = "empty_error_result": "Bedrock: a toolResult with status error and no content",
    MissingToolConfig = "missing_tool_config": "Bedrock: toolUse or toolResult blocks in a request that declares no tools (no `toolConfig`)",
    UnknownBlock = "unknown_block": "a content block of a kind the detected provider does not define: not read, so what it carries is not checked; never called clean",
    JoinedRecords = "joined_records": "an agent-log line holding two records joined (a write that lost its newline): both read, said once",
    BrokenLink = "broken_link": "Claude Code log: a reply or result names a parent event the file does not hold (it was dropped); read after the message event before it, as Claude Code resumes",
    UnverifiableChain = "unverifiable_chain": "Responses: a request continuing a stored response that was not seen: whether its calls are all answered cannot be checked here",
    InvalidId = "invalid_id": "an id with characters Anthropic refuses",
    InvalidRole = "invalid_role": "a turn's role the provider does not take (Gemini: only `user` and `model`)",
    ThinkingMissing = "thinking_missing": "Anthropic with extended thinking: the assistant turn in progress does not open with its thinking block",
    UnknownTool = "unknown_tool": "a call to a tool the request does not declare",
    InvalidArguments = "invalid_arguments": "arguments that are not JSON",
    SchemaViolation = "schema_violation": "arguments that break the tool's JSON Schema",
    TruncatedTurnExecuted = "truncated_turn_executed": "calls run from a turn cut by max_tokens / length",
    RepeatedTurn = "repeated_turn": "the same assistant turn again: a spinning loop",
    RefusedRequest = "refused_request": "agent logs and recordings: the provider's own refusal of a request",
    McpUnansweredRequest = "mcp_unanswered_request": "MCP capture: a request (a `tools/call`, …) the other side never answered",
    McpAnsweredTwice = "mcp_answered_twice": "MCP capture: one request id answered more than once",
    McpUnknownResponse = "mcp_unknown_response": "MCP capture: a response to an id the other side never asked with",
    McpErrorAsData = "mcp_error_as_data": "MCP capture beside a proxy capture or log: a tool call the MCP server failed whose result the agent sent to the model without its error flag",
    ToolNeverRan = "tool_never_ran": "trace: a call no `execute_tool` span ran, in a trace that has tool spans (only some of a turn's calls run?)",
    ToolRanResultDropped = "tool_ran_result_dropped": "trace: a call whose `execute_tool` span ran, but whose result the next request does not carry",
    CacheControlLimit = "cache_control_limit": "Anthropic: more than four blocks with `cache_control` in one request (tools, system and content blocks count alike)",
    ReasoningWithoutItem = "reasoning_without_item": "Responses: a `reasoning` item not followed by the item it came with (the assistant's message or call)",
    BlankText = "blank_text": "Anthropic and Bedrock: a text block that is empty or only whitespace",
    EmptyContent = "empty_content": "Anthropic and Bedrock: a message with no content (Anthropic allows it only in the final assistant message)",
}

impl Kind {
    /// Kinds that say something about the file, not a problem of the
    /// request: they never make `check` fail.
    pub fn is_note(self) -> bool {
        matches!(
            self,
            Kind::OffBranch
                | Kind::UnverifiableResult
                | Kind::UnverifiableChain
                | Kind::UnknownEvent
                | Kind::BrokenLink
                | Kind::JoinedRecords
                | Kind::ConsecutiveSameRole
                | Kind::ToolNeverRan
                | Kind::ToolRanResultDropped
        )
    }
}

/// How grave a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The provider rejects the request (`"400"`).
    Rejected,
    /// Accepted, but it breaks loops (`"warning"`).
    Warning,
    /// Worth knowing; nothing wrong with the request (`"note"`).
    Note,
}

impl Severity {
    /// The stable name, as JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Rejected => "400",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// What an agent log or a recording shows became of the request that
/// carried a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// The file holds the provider's refusal of it.
    Refused,
    /// The provider answered it (the model's next reply in a log, so the
    /// agent repaired the history before sending; a 2xx in a recording).
    Answered,
    /// The agent is known to repair this before every request (Codex).
    Repaired,
    /// The log ends before any request carried it.
    InFlight,
}

impl Fate {
    /// The stable name, as JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Refused => "refused",
            Fate::Answered => "answered",
            Fate::Repaired => "repaired",
            Fate::InFlight => "in_flight",
        }
    }
}

/// The string forms: Display and Serialize. No comparison with `&str`:
/// `kind == "refused_requset"` would compile with its typo.
macro_rules! named {
    ($($t:ty),+) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    )+};
}

named!(Kind, Severity, Fate);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_json_strings_and_unique() {
        let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Kind::ALL.len());
        assert_eq!(
            serde_json::to_string(&Kind::UnansweredCall).unwrap(),
            "\"unanswered_call\""
        );
        assert_eq!(
            serde_json::to_string(&Severity::Rejected).unwrap(),
            "\"400\""
        );
        assert_eq!(
            serde_json::to_string(&Fate::InFlight).unwrap(),
            "\"in_flight\""
        );
        assert_eq!(Kind::RepeatedTurn.to_string(), "repeated_turn");
    }
}
