//! The conversation model every reader gives: canonical messages in the
//! provider's own grouping, with where each block came from.

use serde_json::Value;

use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_formats::provider::Format;

use crate::agent::Agent;

/// What a file holds, as detected or forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One of the provider formats.
    Provider(Format),
    /// An agent's own store ([`crate::agent::TABLE`] says how each is
    /// read and what the agent sends).
    Agent(Agent),
    /// A `loopdbg mcp` capture: the agent's MCP tool calls and the
    /// server's results (read by `crate::mcp`, never forced).
    Mcp,
}

impl Source {
    /// The name used in reports and `--format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Provider(f) => f.as_str(),
            Source::Agent(a) => a.key(),
            Source::Mcp => "mcp",
        }
    }

    /// The provider whose rules apply.
    pub fn provider(self) -> Format {
        match self {
            Source::Provider(f) => f,
            Source::Agent(a) => a.provider(),
            // Each result after the turn of calls it answers.
            Source::Mcp => Format::Anthropic,
        }
    }

    /// The agent whose store this is, if it is one.
    pub fn agent(self) -> Option<Agent> {
        match self {
            Source::Agent(a) => Some(a),
            Source::Provider(_) | Source::Mcp => None,
        }
    }

    /// True for agent logs, which are read whole as JSON Lines of events.
    pub fn is_log(self) -> bool {
        self.agent().is_some_and(|a| a.row().log)
    }

    /// Whether content found to be `found` may be read as this, forced: the
    /// same, or a task history of the provider `found` names.
    pub fn fits(self, found: Source) -> bool {
        self == found
            || matches!((self, found), (Source::Agent(a), Source::Provider(p)) if a.row().plain && a.provider() == p)
    }

    /// Every name `--format` takes.
    pub fn names() -> String {
        let providers = ["anthropic", "openai", "responses", "gemini", "bedrock"];
        let agents = crate::agent::TABLE.iter().map(|r| r.key);
        providers
            .into_iter()
            .chain(agents)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(agent) = Agent::named(s) {
            return Ok(Source::Agent(agent));
        }
        s.parse::<Format>().map(Source::Provider).map_err(|_| {
            format!(
                "unknown format `{s}` (expected one of: {})",
                Source::names()
            )
        })
    }
}

/// Where a block came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlockSource {
    /// JSON path inside its document (`messages[3].content[1]`).
    pub path: std::borrow::Cow<'static, str>,
    /// For logs: the 1-based line of the event.
    pub line: Option<usize>,
    /// For logs: the event's uuid (shared by every block of the event).
    pub uuid: Option<std::sync::Arc<str>>,
}

impl std::fmt::Display for BlockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.line, &self.uuid) {
            (Some(line), Some(uuid)) => write!(f, "line {line} (uuid {uuid}) {}", self.path),
            (Some(line), None) => write!(f, "line {line} {}", self.path),
            _ => f.write_str(&self.path),
        }
    }
}

/// A tool the request declared.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// The JSON Schema of its arguments, when given.
    pub schema: Option<Value>,
    /// What the request told the model the tool does, when it did.
    pub description: Option<String>,
}

/// A problem found while reading, before any pairing check (for example
/// arguments that are not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadNote {
    /// Where.
    pub source: BlockSource,
    /// The raw arguments text.
    pub raw: String,
    /// The call id.
    pub id: String,
    /// The parser's complaint.
    pub error: String,
}

/// One captured conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// What it was read as.
    pub source: Source,
    /// Messages in the provider's grouping.
    pub messages: Vec<Message>,
    /// Path of each message.
    pub message_sources: Vec<BlockSource>,
    /// Source of each block of each message.
    pub block_sources: Vec<Vec<BlockSource>>,
    /// Tools the request declared (empty when unknown).
    pub tools: Vec<ToolSpec>,
    /// The system prompt, when given.
    pub system: Option<String>,
    /// Entries of the request's own message list read as the system prompt
    /// (Chat's and Responses' `system`/`developer` messages), so a count
    /// of messages says the body's: `messages[i]` paths are the body's.
    pub system_messages: usize,
    /// Arguments that did not parse as JSON.
    pub notes: Vec<ReadNote>,
    /// Calls the provider runs itself (Anthropic server tools, the MCP
    /// connector) and their result blocks: they pair among themselves and
    /// never need a client `tool_result`.
    pub hosted: Vec<Hosted>,
    /// What the reader noticed that is not a pairing problem of this
    /// conversation (a branch of a log left behind, a continuation whose
    /// earlier items are stored elsewhere).
    pub notices: Vec<Notice>,
    /// What the agent changes in its stored history before it sends it
    /// (its send model, [`crate::agent::Row::sends`]), already applied to
    /// `messages`: the check judges what is sent, and says each of these.
    pub rewrites: Vec<Rewrite>,
    /// Set when the request continues a stored response or conversation
    /// (`previous_response_id`, `conversation`): its calls live on the
    /// server, so outputs for calls not in the request cannot be checked.
    pub continues: Option<String>,
    /// What this conversation is within its file, when that needs saying:
    /// `sub-agent agent-a1b2`, `after compaction 2`.
    pub label: Option<String>,
    /// True when the request can call tools it does not list (MCP connector
    /// servers), so a name missing from `tools` is not an unknown tool.
    pub open_tools: bool,
    /// Anthropic: how many blocks (tools, system blocks, content blocks,
    /// a result's own blocks) carry `cache_control`, where a request body
    /// read as a document says (`None`: not counted, as on the JSON Lines
    /// fast path or in an agent's log, which keeps no `cache_control`).
    pub cache_breakpoints: Option<usize>,
    /// Call ids whose item is not a plain function call, with the item type
    /// (`custom_tool_call`, `local_shell_call`, …), for the provider's wording.
    pub call_types: Vec<(String, String)>,
    /// The model the request names, when it does (Gemini 3 models require
    /// thought signatures on calls).
    pub model: Option<String>,
    /// Gemini: ids of the first call of a model turn sent without its
    /// `thoughtSignature`.
    pub unsigned: Vec<String>,
    /// Gemini: how many parts carry a `thoughtSignature`.
    pub signatures: usize,
    /// Requests the log says the provider refused: an agent writes the
    /// error in the model's place (Claude Code's `isApiErrorMessage`
    /// events). Evidence for the checker, never a message of the history.
    pub refusals: Vec<Refusal>,
    /// What the provider answered this very request, when a recording of
    /// the exchange says (an API test's cassette, a HAR file).
    pub answer: Option<Answer>,
    /// Assistant messages the agent wrote itself, in the model's place
    /// (Claude Code's `<synthetic>` ones): no evidence that a request
    /// was answered.
    pub synthetic: Vec<usize>,
    /// The tokens the provider counted for replies, as the file recorded
    /// them, by the reply's message.
    pub usage: Vec<TripUsage>,
    /// Anthropic: the request enables extended thinking (`thinking.type`
    /// `enabled`): every reply then opens with a thinking block.
    pub thinking: bool,
    /// Anthropic: `thinking.type` `adaptive`: the model thinks when it
    /// chooses, so a reply may have no thinking block to keep.
    pub thinking_adaptive: bool,
    /// Anthropic: the messages whose content opens with a `thinking` or
    /// `redacted_thinking` block.
    pub opens_with_thinking: Vec<usize>,
    /// Anthropic and Bedrock request bodies: the messages whose content
    /// is written as an empty list (`"content": []`). The blocks a reader
    /// passes over (images, thinking, documents) leave a message's
    /// `content` empty too, so emptiness is said where it is written.
    pub written_empty: Vec<usize>,
    /// For an agent log's conversation that begins after a compaction:
    /// which one, and the calls it split from their results.
    pub compaction: Option<Box<Compaction>>,
    /// For an agent log's conversation a compaction ended: the line of
    /// that compaction. Calls it leaves unanswered waited for results the
    /// compaction came before (they travel after its summary, if at all).
    pub ended_by_compaction: Option<usize>,
}

/// A compaction an agent ran: the history before it replaced by a
/// summary. A call made before it whose result was written after it is
/// split from that result (the summary does not carry the call), the
/// shape reported in Claude Code, Codex, opencode and OpenClaw sessions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compaction {
    /// The line of the record that marks it.
    pub line: usize,
    /// When it ran (`2026-12-02 04:27:23 UTC`), where the log says.
    pub time: Option<String>,
    /// The summary's first words, where the summary is text.
    pub summary: Option<String>,
    /// The calls made before it: a result after it that answers one of
    /// them was split from its call.
    pub split: Vec<String>,
}

/// The first dozen words of `text` (with `…` when there are more), to
/// name a summary by; `None` for text with no word.
pub fn first_words(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    let head: Vec<&str> = words.by_ref().take(12).collect();
    let more = if words.next().is_some() { "…" } else { "" };
    (!head.is_empty()).then(|| head.join(" ") + more)
}

/// An ISO 8601 timestamp (`2026-12-02T04:27:23.150Z`) as a time to read
/// (`2026-12-02 04:27:23 UTC`); `None` when it holds no date and time.
pub fn time_of(iso: &str) -> Option<String> {
    let d: String = iso.chars().filter(char::is_ascii_digit).take(14).collect();
    (d.len() == 14).then(|| {
        format!(
            "{}-{}-{} {}:{}:{} UTC",
            &d[..4],
            &d[4..6],
            &d[6..8],
            &d[8..10],
            &d[10..12],
            &d[12..14]
        )
    })
}

impl Compaction {
    /// Names it for a finding: `the compaction on line 12 (2026-12-02
    /// 04:27:23 UTC, its summary beginning "This session is…")`.
    pub fn named(&self) -> String {
        let mut about = Vec::new();
        about.extend(self.time.clone());
        if let Some(summary) = &self.summary {
            about.push(format!("its summary beginning \"{summary}\""));
        }
        match about.is_empty() {
            true => format!("the compaction on line {}", self.line),
            false => format!(
                "the compaction on line {} ({})",
                self.line,
                about.join(", ")
            ),
        }
    }

    /// Records, on `after` (the conversation a compaction on `line` began),
    /// which compaction it was: the calls of `before` it replaced, and the
    /// first words of its `summary` (see [`first_words`]).
    pub fn mark(
        before: &mut Conversation,
        after: &mut Conversation,
        line: usize,
        time: Option<String>,
        summary: Option<String>,
    ) {
        let split = before
            .messages
            .iter()
            .flat_map(tool_uses)
            .map(|(_, id, _)| id.to_string())
            .collect();
        before.ended_by_compaction = Some(line);
        after.compaction = Some(Box::new(Compaction {
            line,
            time,
            summary,
            split,
        }));
    }
}

/// The tokens of the trip whose reply is message `message`.
#[derive(Debug, Clone, PartialEq)]
pub struct TripUsage {
    /// The reply's index in [`Conversation::messages`].
    pub message: usize,
    /// Its tokens.
    pub usage: loopdbg_engine::message::Usage,
    /// The model that wrote it, when the file says.
    pub model: Option<String>,
}

/// The provider's answer to a recorded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// For an error, what the provider said (its `error.message`); empty
    /// when the recording keeps the body compressed.
    pub text: String,
    /// Where the response is in the recording.
    pub source: BlockSource,
    /// What kind of file keeps it, for the words that cite it.
    pub kept_in: Keeper,
}

/// What kind of file recorded a provider's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keeper {
    /// An HTTP recording or a proxy capture.
    #[default]
    Recording,
    /// A span of an OpenTelemetry trace.
    Trace,
}

impl Keeper {
    /// The noun a finding cites it by.
    pub fn noun(self) -> &'static str {
        match self {
            Keeper::Recording => "recording",
            Keeper::Trace => "trace",
        }
    }
}

/// A request the provider refused, as an agent log recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// How many messages of the conversation the refused request carried.
    pub at: usize,
    /// The HTTP status, when the log gives it (`apiErrorStatus`, or the
    /// number in `API Error: 400 …`).
    pub status: Option<u16>,
    /// What the agent wrote (`API Error: 400 {"type":"error",…}`).
    pub text: String,
    /// Where.
    pub source: BlockSource,
}

/// Whether a hosted block asks for a call or answers one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostedRole {
    /// `server_tool_use`, `mcp_tool_use`.
    Call,
    /// `web_search_tool_result`, `code_execution_tool_result`,
    /// `mcp_tool_result`, …: names its call by `tool_use_id`.
    Result,
    /// A client `tool_use` made from inside the hosted call `id`
    /// (programmatic tool calling: `caller.tool_id`). That call waits for
    /// the client's result, so its own result comes in a later turn.
    Awaits,
}

/// One block of a call the provider runs itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Hosted {
    /// Call or result.
    pub role: HostedRole,
    /// The call id (`srvtoolu_…`, `mcptoolu_…`).
    pub id: String,
    /// The block type as written (`server_tool_use`, `web_search_tool_result`).
    pub block: String,
    /// For calls: the tool name (`web_search`); for results: the block type.
    pub name: String,
    /// The message it sits in.
    pub message: usize,
    /// Its position in that message's content as written.
    pub position: usize,
    /// Where it is.
    pub source: BlockSource,
}

/// Something the reader noticed, reported as a warning.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// A stable kind ([`OffBranch`](crate::finding::Kind::OffBranch), …).
    pub kind: crate::finding::Kind,
    /// Where.
    pub source: BlockSource,
    /// The ids involved.
    pub ids: Vec<String>,
    /// What it means.
    pub message: String,
}

/// One change an agent makes to its stored history before it sends it
/// (Cline's "result missing" for a call its history leaves open, say).
/// The conversation holds the history as sent; the check says each
/// rewrite as a finding of `kind` whose fate is that the agent repaired it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The finding the stored history would have given.
    pub kind: crate::finding::Kind,
    /// Where, in the stored history.
    pub source: BlockSource,
    /// The ids involved.
    pub ids: Vec<String>,
    /// What the agent sends instead, and what that costs the model.
    pub message: String,
    /// Whether the model still gets what it needs (the tool's output is
    /// sent another way): a note then, a warning otherwise.
    pub harmless: bool,
}

/// An input that cannot be read as a conversation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{path}: {message}", line.map(|l| format!("line {l} ")).unwrap_or_default())]
pub struct ReadError {
    /// For logs read line by line: the line the document came from.
    pub line: Option<usize>,
    /// Where in the document reading failed.
    pub path: JsonPath,
    /// What was expected.
    pub message: String,
}

pub(crate) fn err(path: &JsonPath, message: impl Into<String>) -> ReadError {
    ReadError {
        line: None,
        path: path.clone(),
        message: message.into(),
    }
}

impl Conversation {
    /// The conversation as it stood with only its first `n` messages:
    /// what each of them points at kept, the rest dropped. For the tests
    /// of what grows with a conversation (a followed log's findings,
    /// replay, tokens), which compare it grown with it made afresh.
    pub fn prefix(&self, n: usize) -> Conversation {
        let mut c = self.clone();
        c.messages.truncate(n);
        c.message_sources.truncate(n);
        c.block_sources.truncate(n);
        c.usage.retain(|u| u.message < n);
        c.hosted.retain(|h| h.message < n);
        c.synthetic.retain(|&i| i < n);
        c.opens_with_thinking.retain(|&i| i < n);
        c.written_empty.retain(|&i| i < n);
        c.refusals.retain(|r| r.at <= n);
        c
    }

    /// An empty conversation read as `source`.
    pub fn new(source: Source) -> Conversation {
        Conversation {
            source,
            messages: Vec::new(),
            message_sources: Vec::new(),
            block_sources: Vec::new(),
            tools: Vec::new(),
            system: None,
            system_messages: 0,
            notes: Vec::new(),
            hosted: Vec::new(),
            notices: Vec::new(),
            rewrites: Vec::new(),
            continues: None,
            label: None,
            open_tools: false,
            cache_breakpoints: None,
            call_types: Vec::new(),
            model: None,
            unsigned: Vec::new(),
            signatures: 0,
            refusals: Vec::new(),
            answer: None,
            synthetic: Vec::new(),
            usage: Vec::new(),
            thinking: false,
            thinking_adaptive: false,
            opens_with_thinking: Vec::new(),
            written_empty: Vec::new(),
            compaction: None,
            ended_by_compaction: None,
        }
    }

    /// Takes on the tokens `older` (an earlier request of the same
    /// conversation, whose history this one extends) recorded for the
    /// replies both hold: a capture records each trip's tokens with its
    /// own request, and the newest request replays them all.
    pub fn carry_usage_from(&mut self, older: &Conversation) {
        let mut recorded = vec![false; self.messages.len()];
        for trip in &self.usage {
            if let Some(slot) = recorded.get_mut(trip.message) {
                *slot = true;
            }
        }
        for trip in &older.usage {
            if recorded.get(trip.message) == Some(&false) {
                recorded[trip.message] = true;
                self.usage.push(trip.clone());
            }
        }
        self.usage.sort_by_key(|t| t.message);
    }

    /// The tokens this conversation's file recorded, by trip and tool,
    /// priced by `prices`.
    pub fn token_summary(
        &self,
        prices: &loopdbg_formats::prices::Prices,
    ) -> Option<loopdbg_formats::usage::Summary> {
        let mut trips: Vec<loopdbg_formats::usage::Trip<'_>> = self
            .usage
            .iter()
            .map(|t| {
                let line = self.message_sources.get(t.message).and_then(|s| s.line);
                (t.message, line, t.model.as_deref(), t.usage)
            })
            .collect();
        // Recorded in message order as a rule: a stable sort would still
        // set aside a copy of every trip.
        if !trips.is_sorted_by_key(|t| t.0) {
            trips.sort_by_key(|t| t.0);
        }
        loopdbg_formats::usage::summary(&self.messages, &trips, prices)
    }

    /// The tokens of the reply that is message `i`, when recorded. A
    /// search: to go through every message, use [`Self::usage_by_message`].
    pub fn usage_of(&self, i: usize) -> Option<&TripUsage> {
        self.usage.iter().find(|u| u.message == i)
    }

    /// [`Self::usage_of`] of every message, by its index, in one pass (a
    /// search per message made replaying a 50,000-turn log quadratic:
    /// 59 % of its first frame).
    pub fn usage_by_message(&self) -> Vec<Option<&TripUsage>> {
        let mut by = vec![None; self.messages.len()];
        for trip in &self.usage {
            if let Some(slot @ None) = by.get_mut(trip.message) {
                *slot = Some(trip);
            }
        }
        by
    }

    /// Pushes a message with hosted blocks read alongside it.
    pub(crate) fn push_read(
        &mut self,
        message: Message,
        source: BlockSource,
        blocks: Vec<BlockSource>,
        hosted: Vec<Hosted>,
    ) {
        let at = self.messages.len();
        self.hosted
            .extend(hosted.into_iter().map(|h| Hosted { message: at, ..h }));
        self.push(message, source, blocks);
    }

    /// Room for `messages` more messages.
    pub(crate) fn reserve(&mut self, messages: usize) {
        self.messages.reserve(messages);
        self.message_sources.reserve(messages);
        self.block_sources.reserve(messages);
    }

    /// A block of `role` that joins the last message when that message is
    /// `role`'s (the calls of one turn join the assistant message before
    /// them), else opens a message of its own read at `source`.
    pub(crate) fn push_joining(&mut self, role: Role, block: Block, source: BlockSource) {
        match (self.messages.last_mut(), self.block_sources.last_mut()) {
            (Some(last), Some(sources)) if last.role == role => {
                last.content.push(block);
                sources.push(source);
            }
            _ => {
                let message = Message {
                    role,
                    content: vec![block],
                    finish_reason: None,
                };
                self.push(message, source.clone(), vec![source]);
            }
        }
    }

    pub(crate) fn push(&mut self, message: Message, source: BlockSource, blocks: Vec<BlockSource>) {
        debug_assert_eq!(message.content.len(), blocks.len());
        self.messages.push(message);
        self.message_sources.push(source);
        self.block_sources.push(blocks);
    }
}

/// Ids of a message's tool_use blocks with their block index.
pub fn tool_uses(m: &Message) -> impl Iterator<Item = (usize, &str, &str)> {
    m.content.iter().enumerate().filter_map(|(k, b)| match b {
        Block::ToolUse { id, name, .. } => Some((k, &**id, &**name)),
        _ => None,
    })
}

/// Ids of a message's tool_result blocks with their block index.
pub fn tool_results(m: &Message) -> impl Iterator<Item = (usize, &str)> {
    m.content.iter().enumerate().filter_map(|(k, b)| match b {
        Block::ToolResult { tool_use_id, .. } => Some((k, &**tool_use_id)),
        _ => None,
    })
}

/// How much of a log's content a reader keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Detail {
    /// Everything: what replay shows and `--fix` writes back.
    #[default]
    Full,
    /// What pairing and the other checks read: ids, names, roles and the
    /// order of blocks. Texts and arguments are kept as fingerprints that
    /// compare as they do (see `fingerprint`), and results' content is
    /// dropped, so `check` holds a long log in a fraction of the memory.
    Shape,
}
