//! Validating captured conversations: what each provider would reject, in
//! its own words, and what no server checks but breaks loops anyway.
//!
//! Pure: a [`Conversation`] in, [`Finding`]s out.

/// Maps keyed once per process: `AHashMap::new` draws fresh keys for
/// every map, and a check makes a dozen small ones per conversation (1–2 %
/// of checking 800 short sessions).
type HashMap<K, V> = std::collections::HashMap<K, V, Keyed>;
type HashSet<K> = std::collections::HashSet<K, Keyed>;

/// ahash with the process's keys, drawn at random once.
#[derive(Clone)]
struct Keyed(ahash::RandomState);

impl Default for Keyed {
    fn default() -> Keyed {
        static KEYS: std::sync::OnceLock<ahash::RandomState> = std::sync::OnceLock::new();
        Keyed(KEYS.get_or_init(ahash::RandomState::new).clone())
    }
}

impl std::hash::BuildHasher for Keyed {
    type Hasher = ahash::AHasher;
    fn build_hasher(&self) -> ahash::AHasher {
        self.0.build_hasher()
    }
}

use std::hash::BuildHasher;
use std::ops::Range;

use serde::Serialize;

/// Call or result ids of a conversation, found by their text but kept as
/// where they are (message, block): the table outlives the borrow of the
/// conversation it was made of, and serves the conversation grown from it
/// (whose blocks before the cut are the same), with no id copied.
#[derive(Default, Clone)]
struct Ids {
    /// The id's hash (kept: growing the table hashes no id again), where.
    table: hashbrown::HashTable<(u64, (usize, usize))>,
    keys: Keyed,
}

impl Ids {
    /// Where `id` is, in `msgs`.
    fn get(&self, msgs: &[Message], id: &str) -> Option<(usize, usize)> {
        let hash = self.keys.hash_one(id);
        let same = |&(h, at): &(u64, (usize, usize))| h == hash && id_at(msgs, at) == id;
        self.table.find(hash, same).map(|&(_, at)| at)
    }

    /// Whether `id` is in the table.
    fn contains(&self, msgs: &[Message], id: &str) -> bool {
        self.get(msgs, id).is_some()
    }

    /// `id`, at `at` in `msgs`, from now on.
    fn insert(&mut self, msgs: &[Message], id: &str, at: (usize, usize)) {
        let hash = self.keys.hash_one(id);
        let same = |&(h, x): &(u64, (usize, usize))| h == hash && id_at(msgs, x) == id;
        match self.table.entry(hash, same, |&(h, _)| h) {
            hashbrown::hash_table::Entry::Occupied(mut e) => e.get_mut().1 = at,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((hash, at));
            }
        }
    }
}

/// The id of a call or result block.
fn id_at(msgs: &[Message], (i, k): (usize, usize)) -> &str {
    match &msgs[i].content[k] {
        Block::ToolUse { id, .. } => id,
        Block::ToolResult { tool_use_id, .. } => tool_use_id,
        _ => "",
    }
}

pub use loopdbg_read::finding::{Fate, Kind, Severity};
use serde_json::Value;

use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_formats::provider::Format;
use loopdbg_read::{
    Agent, Answer, BlockSource, Conversation, Hosted, HostedRole, Source, tool_results, tool_uses,
};

pub mod growing;

/// One problem in a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// A stable kind.
    pub kind: Kind,
    /// The JSON path inside the conversation (`messages[3].content[1]`).
    pub path: String,
    /// For logs: the event's line.
    pub line: Option<usize>,
    /// For logs: the event's uuid.
    pub uuid: Option<String>,
    /// The ids involved.
    pub ids: Vec<String>,
    /// What the provider would answer (or, for checks no server makes, why it matters).
    pub message: String,
    /// How grave it is: the provider rejects it, it breaks loops, or a note.
    pub severity: Severity,
    /// For agent logs and recordings: what the file itself shows became of
    /// the request that carried the problem, which decides the severity.
    pub evidence: Option<Evidence>,
}

/// The JSON `check --format json` has always written: the fields in order,
/// with `rejected_by_provider` (derived) before `severity`.
impl Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let optional = [
            self.line.is_some(),
            self.uuid.is_some(),
            self.evidence.is_some(),
        ];
        let fields = 6 + optional.iter().filter(|&&b| b).count();
        let mut st = s.serialize_struct("Finding", fields)?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("path", &self.path)?;
        if let Some(line) = self.line {
            st.serialize_field("line", &line)?;
        }
        if let Some(uuid) = &self.uuid {
            st.serialize_field("uuid", uuid)?;
        }
        st.serialize_field("ids", &self.ids)?;
        st.serialize_field("message", &self.message)?;
        st.serialize_field("rejected_by_provider", &self.rejected_by_provider())?;
        st.serialize_field("severity", &self.severity)?;
        if let Some(evidence) = &self.evidence {
            st.serialize_field("evidence", evidence)?;
        }
        st.end()
    }
}

/// What an agent log or a recording shows of a request that would carry a
/// finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What became of the request.
    pub outcome: Fate,
    /// The event that shows it (the error, or the reply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Finding {
    /// Where the provider's words name another message than [`Self::path`]
    /// (Anthropic's `messages.2: …` for calls at `messages[1]`: it names
    /// the message after them, where the results belong), one sentence
    /// saying both, for a report to give once. Both count from 0.
    pub fn other_place_named(&self) -> Option<String> {
        let ours = message_index(&self.path, "messages[")?;
        let theirs = message_index(&self.message, "messages.")?;
        let said = format!("messages.{theirs}");
        let path = self
            .path
            .find("messages[")
            .map_or(&*self.path, |k| &self.path[k..]);
        let ours_said = path.split(']').next().map(|p| format!("{p}]"))?;
        match theirs.checked_sub(ours) {
            Some(0) => None,
            Some(1) => Some(format!(
                "the provider's {said} is the message after {ours_said}, where the results belong; both count from 0"
            )),
            _ => Some(format!(
                "the provider's words name {said}, loopdbg points at {ours_said}; both count from 0"
            )),
        }
    }

    /// True when the provider's API rejects the request (a 400); false for
    /// problems only loopdbg reports. Derived from the severity, so the two
    /// never disagree.
    pub fn rejected_by_provider(&self) -> bool {
        self.severity == Severity::Rejected
    }

    /// The words of an alarm about this finding, which the provider
    /// rejects: `PREFIX: the provider would answer 400 (path): message`.
    pub fn alarm(&self, prefix: &str) -> String {
        format!(
            "{prefix}: the provider would answer 400 ({}): {}",
            self.path,
            loopdbg_engine::diagnostics::inert::clean(&self.message)
        )
    }

    /// True when the finding is only a note.
    pub fn is_note(&self) -> bool {
        self.severity == Severity::Note
    }
}

fn finding(
    kind: Kind,
    src: &BlockSource,
    ids: Vec<String>,
    message: String,
    rejected: bool,
) -> Finding {
    Finding {
        kind,
        path: src.path.to_string(),
        line: src.line,
        uuid: src.uuid.as_deref().map(str::to_string),
        ids,
        message,
        severity: if rejected {
            Severity::Rejected
        } else if kind.is_note() {
            Severity::Note
        } else {
            Severity::Warning
        },
        evidence: None,
    }
}

/// All findings for `conv` under its provider's rules.
pub fn check(conv: &Conversation) -> Vec<Finding> {
    let mut out = match conv.source.provider() {
        Format::Anthropic => anthropic(conv),
        Format::Openai => openai(conv),
        Format::Responses => responses(conv),
        Format::Gemini => gemini(conv),
        Format::Bedrock => bedrock(conv),
    };
    duplicates(conv, &mut out);
    beyond_servers(conv, &mut out);
    weigh(conv, out, None)
}

/// `out`, the findings of `conv`, weighed by what the file says became of
/// the requests (`settled`: where the lines of the messages before a cut
/// are, for a check grown from one, see [`growing`]).
fn weigh(conv: &Conversation, mut out: Vec<Finding>, settled: Option<Settled<'_>>) -> Vec<Finding> {
    if conv.source.is_log() {
        weigh_by_the_log(conv, &mut out, settled);
    }
    if let Some(answer) = &conv.answer {
        weigh_by_the_answer(answer, &mut out);
    }
    if conv.source == Source::Mcp {
        in_mcp_words(&mut out);
    }
    if let Some(compaction) = &conv.compaction {
        name_the_compaction(compaction, &mut out);
    }
    out
}

/// A result whose call a compaction replaced by its summary: said which
/// compaction, so the user can find it in the log (no other tool names it).
fn name_the_compaction(compaction: &loopdbg_read::Compaction, out: &mut [Finding]) {
    let split = |f: &Finding| f.ids.iter().any(|id| compaction.split.contains(id));
    for f in out
        .iter_mut()
        .filter(|f| matches!(f.kind, Kind::UnexpectedResult | Kind::UnverifiableResult) && split(f))
    {
        let mut named = compaction.named();
        named[..1].make_ascii_uppercase();
        f.message.push_str(&format!(
            " {named} split this result from its call: the call was made before it, and the summary that replaced the history does not carry it."
        ));
    }
}

/// An MCP session's calls are not sent to a provider: an open call is the
/// agent waiting on the server, said in the words `mcp::check` uses.
fn in_mcp_words(out: &mut [Finding]) {
    for f in out.iter_mut().filter(|f| f.kind == Kind::UnansweredCall) {
        f.kind = Kind::McpUnansweredRequest;
        f.severity = Severity::Warning;
        f.message = format!(
            "`tools/call` {} never got a response before the session ended: the agent waited on this tool call, then gave up or was stopped",
            f.ids.join(", ")
        );
    }
}

/// A recorded exchange says what the provider answered this very request:
/// a 2xx contradicts a predicted 400 (a warning, naming the status); a 400
/// about calls and results confirms it; any other refusal is reported as
/// the provider's own word, which loopdbg's rules did not foresee.
fn weigh_by_the_answer(answer: &Answer, out: &mut Vec<Finding>) {
    let accepted = (200..300).contains(&answer.status);
    // A call loopdbg only warns about (a model family known to accept it)
    // is a 400 when the provider refused this very request for its calls.
    if answer.status == 400 && about_pairing(&answer.text) {
        for f in out.iter_mut().filter(|f| f.kind == Kind::UnansweredCall) {
            f.severity = Severity::Rejected;
        }
    }
    if accepted {
        for f in out
            .iter_mut()
            .filter(|f| f.kind == Kind::UnansweredCall && !f.rejected_by_provider())
        {
            f.message = format!(
                "{} The {} shows this request answered {}.",
                f.message,
                answer.kept_in.noun(),
                answer.status
            );
            f.evidence = Some(Evidence {
                outcome: Fate::Answered,
                line: None,
            });
        }
    }
    let mut explained = false;
    for f in out.iter_mut().filter(|f| f.rejected_by_provider()) {
        if accepted {
            f.message = format!(
                "as written, a provider would refuse this ({}) but the {} shows it answered {}: it accepts this shape",
                f.message,
                answer.kept_in.noun(),
                answer.status
            );
            f.severity = Severity::Warning;
            f.evidence = Some(Evidence {
                outcome: Fate::Answered,
                line: None,
            });
            continue;
        }
        let said = match answer.status {
            400 if answer.text.is_empty() => {
                "The recording holds a 400 for this request (its body is compressed, so its words are not read).".to_string()
            }
            400 if about_pairing(&answer.text) => {
                // The provider's words are usually these very ones, after
                // its `messages.N: ` prefix: then saying so is enough.
                let head = f
                    .message
                    .split_once(". ")
                    .map_or(f.message.as_str(), |(head, _)| head);
                let same = answer.text.contains(head);
                let words = match same {
                    true => "in these words".to_string(),
                    false => format!("«{}»", answer.text.chars().take(200).collect::<String>()),
                };
                format!(
                    "The {} confirms it: the provider answered 400 {words}.",
                    answer.kept_in.noun()
                )
            }
            _ => continue,
        };
        f.message = format!("{} {said}", f.message);
        f.evidence = Some(Evidence {
            outcome: Fate::Refused,
            line: None,
        });
        explained = true;
    }
    if accepted || explained {
        return;
    }
    let said = match answer.text.is_empty() {
        true => "(its body is compressed, so its words are not read)".to_string(),
        false => answer.text.chars().take(240).collect(),
    };
    out.push(refused_request(
        &answer.source,
        Some(answer.status),
        format!("the provider answered {}: {said}", answer.status),
    ));
}

/// A refusal no finding explains, in the provider's words: a 400 is its
/// verdict on the request; anything else (overloaded, rate limited,
/// logged out) says the request was never judged, so a note.
fn refused_request(source: &BlockSource, status: Option<u16>, said: String) -> Finding {
    let rejected = status == Some(400);
    let mut f = finding(Kind::RefusedRequest, source, Vec::new(), said, rejected);
    if !rejected {
        f.severity = Severity::Note;
    }
    f.evidence = Some(Evidence {
        outcome: Fate::Refused,
        line: source.line,
    });
    f
}

/// An agent log is more than a history: it shows what the provider made of
/// the requests. A problem that would get a 400 is confirmed by the error
/// the agent wrote for the next request, or contradicted by the model's
/// reply to it (the agent repaired the history before sending, as Codex
/// always does and Claude Code does since 2.x); a problem no request has
/// carried yet (the log ends with calls in flight) is no 400 at all.
fn weigh_by_the_log(conv: &Conversation, out: &mut Vec<Finding>, settled: Option<Settled<'_>>) {
    let mut used = vec![false; conv.refusals.len()];
    weigh_findings(conv, out, &mut used, settled);
    // A refusal for a cause loopdbg checks itself (calls and results, an
    // id's pattern) is the past when the history as it stands has no
    // problem a provider rejects: it was repaired since (`doctor --write`),
    // or the agent mended it before the next request.
    let refused_now = out.iter().any(|f| f.rejected_by_provider());
    // The refusals no finding explains are findings of their own: the log
    // holds the provider's word for them.
    for (r, _) in conv.refusals.iter().zip(&used).filter(|(_, used)| !**used) {
        let status = r.status.map_or("an error".to_string(), |s| s.to_string());
        let said = format!(
            "the provider refused the request sent with the {} message(s) before this event ({status}): {}",
            r.at,
            r.text.chars().take(240).collect::<String>()
        );
        let mut f = refused_request(&r.source, r.status, said);
        let checked_here = about_pairing(&r.text) || about_an_id(&r.text);
        if f.rejected_by_provider() && checked_here && !refused_now {
            f.message = format!(
                "{} — the past: nothing in the history as it stands has this cause (repaired since, or mended by the agent before the next request)",
                f.message
            );
            f.severity = Severity::Note;
        }
        out.push(f);
    }
}

/// Whether a provider's error is about an id's characters (Anthropic:
/// `…content.0.id: String should match pattern '^[a-zA-Z0-9_-]+$'`).
fn about_an_id(text: &str) -> bool {
    text.contains("should match pattern") && text.contains("id")
}

/// Where the lines of a conversation's messages before `at` are (the
/// message each is first read in): kept by a check that grows.
#[derive(Clone, Copy)]
struct Settled<'a> {
    lines: &'a HashMap<usize, usize>,
    at: usize,
}

/// Adds the lines of messages `messages` of `conv` to `lines` (a line
/// already there stays with its earlier message).
fn add_lines(conv: &Conversation, messages: Range<usize>, lines: &mut HashMap<usize, usize>) {
    for i in messages {
        let src = &conv.message_sources[i];
        let blocks = conv.block_sources[i].iter();
        for line in std::iter::once(src).chain(blocks).filter_map(|s| s.line) {
            lines.entry(line).or_insert(i);
        }
    }
}

fn weigh_findings(
    conv: &Conversation,
    out: &mut [Finding],
    used: &mut [bool],
    settled: Option<Settled<'_>>,
) {
    if !out.iter().any(|f| f.rejected_by_provider()) {
        return;
    }
    let msgs = &conv.messages;
    // A message's lines before a hosted block's (as one map filled in
    // that order would keep them).
    let mut later: HashMap<usize, usize> = HashMap::default();
    add_lines(conv, settled.map_or(0, |s| s.at)..msgs.len(), &mut later);
    let mut hosted: HashMap<usize, usize> = HashMap::default();
    for h in &conv.hosted {
        if let Some(line) = h.source.line {
            hosted.entry(line).or_insert(h.message);
        }
    }
    let message_of = |line: &usize| {
        settled
            .and_then(|s| s.lines.get(line))
            .or_else(|| later.get(line))
            .or_else(|| hosted.get(line))
    };
    let agent = agent_name(conv.source);
    // Messages read after an event the log lost (`broken_link`): something
    // not the model's was sent before them, though the file no longer
    // holds it.
    let relinked: Vec<usize> = conv
        .notices
        .iter()
        .filter(|n| n.kind == Kind::BrokenLink)
        .filter_map(|n| n.source.line.and_then(|l| message_of(&l).copied()))
        .collect();
    // Lines that hold several messages (Gemini CLI rewrites a resumed
    // history whole on one `$set` line): a finding there names the message
    // whose own place it gives. Counted once, not per finding, over the
    // messages `later` holds (a growing check's part after its cut).
    let mut messages_on: HashMap<usize, usize> = HashMap::default();
    let recent = settled.map_or(0, |s| s.at)..msgs.len();
    for line in conv.message_sources[recent].iter().filter_map(|s| s.line) {
        *messages_on.entry(line).or_insert(0) += 1;
    }
    for f in out.iter_mut().filter(|f| f.rejected_by_provider()) {
        let exact = || {
            let shared = f
                .line
                .is_some_and(|l| messages_on.get(&l).is_some_and(|&n| n > 1));
            shared
                .then(|| {
                    conv.message_sources.iter().position(|s| {
                        s.line == f.line
                            && s.uuid.as_deref() == f.uuid.as_deref()
                            && s.path == f.path
                    })
                })
                .flatten()
        };
        let Some(m) = exact().or_else(|| f.line.as_ref().and_then(message_of).copied()) else {
            continue;
        };
        // A request carries message m once something follows it that is
        // not the model's (a result, a prompt): a reply straight after an
        // assistant message is a retry of the same request.
        let asked_after = |at: usize| {
            at > m
                && (msgs[m].role != Role::Assistant
                    || msgs[m + 1..at.min(msgs.len())]
                        .iter()
                        .any(|x| x.role != Role::Assistant)
                    || relinked.iter().any(|&r| r > m && r <= at))
        };
        let reply = (m + 1..msgs.len()).find(|&j| {
            msgs[j].role == Role::Assistant && asked_after(j) && !conv.synthetic.contains(&j)
        });
        let refusal =
            conv.refusals.iter().enumerate().find(|(_, r)| {
                asked_after(r.at) && r.status == Some(400) && about_pairing(&r.text)
            });
        // Nothing after the calls but the model's words and the results
        // written so far (an agent killed while one of parallel calls ran
        // has written the others' results): the log ends mid-turn.
        let only_results = |x: &Message| {
            x.content
                .iter()
                .all(|b| matches!(b, loopdbg_engine::message::Block::ToolResult { .. }))
        };
        let unanswered_after = |id: &String| {
            !msgs[m + 1..]
                .iter()
                .any(|x| tool_results(x).any(|(_, r)| r == id))
        };
        // (Gemini CLI resumes by sending the file as it stands: a partial
        // turn is what it sends, not what it is still running.) Asked
        // last: it reads every later message.
        let partial =
            || conv.source != Source::Agent(Agent::GeminiCli) && f.ids.iter().all(unanswered_after);
        let tail = &msgs[m + 1..];
        let in_flight = msgs[m].role == Role::Assistant
            && (tail.iter().all(|x| x.role == Role::Assistant)
                || (tail.iter().all(|x| x.role == Role::User && only_results(x)) && partial()))
            && !relinked.iter().any(|&r| r > m)
            && refusal.is_none();
        let was = std::mem::take(&mut f.message);
        match (refusal, reply) {
            (Some((n, r)), reply) if reply.is_none_or(|j| r.at <= j) => {
                // Every request refused for it until one is answered.
                let mut lines = Vec::new();
                for (k, later) in conv.refusals.iter().enumerate().skip(n) {
                    if reply.is_some_and(|j| later.at > j) {
                        break;
                    }
                    if later.status == Some(400) && about_pairing(&later.text) {
                        used[k] = true;
                        lines.extend(later.source.line);
                    }
                }
                let line = r.source.line;
                let quoted: String = r.text.chars().take(160).collect();
                let which = match lines.len() {
                    1 => format!(
                        "line {} holds the provider's answer to the next request",
                        lines[0]
                    ),
                    count => format!(
                        "the provider refused the next {count} requests (lines {}); the first answer",
                        lines
                            .iter()
                            .map(|l| l.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                f.message = format!("{was} The log confirms it: {which}: {quoted}");
                f.evidence = Some(Evidence {
                    outcome: Fate::Refused,
                    line,
                });
                continue;
            }
            _ if in_flight => {
                f.message = match conv.ended_by_compaction {
                    Some(line) => format!(
                        "the compaction on line {line} came while these calls waited for their results: {}. No request before it carried them; what {agent} sends now is the conversation after its summary (see there).",
                        f.ids.join(", ")
                    ),
                    None => format!(
                        "the log of this conversation ends while these calls are in flight: {}. Their results are not written yet ({agent} is still running them, or it stopped before they came back), and no request has carried them; the next one must begin with their results.",
                        f.ids.join(", ")
                    ),
                };
                f.evidence = Some(Evidence {
                    outcome: Fate::InFlight,
                    line: None,
                });
                f.severity = Severity::Note;
            }
            (_, Some(j)) if conv.source == Source::Agent(Agent::GeminiCli) => {
                // The live session went on (the CLI's memory was right), but
                // Gemini CLI resumes by sending the file's history as it
                // stands: resuming is how this file is sent again, so the
                // 400 stands.
                let line = conv.message_sources[j].line;
                f.message = format!(
                    "{was} The live session went on (its next request was answered, line {}), but Gemini CLI resumes a session by sending the file's history as it stands: `gemini --resume` gets this 400. `loopdbg doctor --write` repairs the file.",
                    line.map_or("?".to_string(), |l| l.to_string())
                );
                f.evidence = Some(Evidence {
                    outcome: Fate::Answered,
                    line,
                });
                continue;
            }
            (_, Some(j)) => {
                let line = conv.message_sources[j].line;
                f.message = format!(
                    "as written, this history would be refused ({was}) but the log shows the next request was answered (line {}): {agent} closed or dropped these before sending it. A client that sends the log's history as it stands gets the 400.",
                    line.map_or("?".to_string(), |l| l.to_string())
                );
                f.evidence = Some(Evidence {
                    outcome: Fate::Answered,
                    line,
                });
                f.severity = Severity::Warning;
            }
            _ => {
                f.message = was;
                continue;
            }
        }
    }
}

/// The agent that wrote a log, as its findings name it (a request body
/// or capture: whatever client sent it).
fn agent_name(source: Source) -> &'static str {
    match source {
        Source::Agent(agent) => agent.name(),
        Source::Mcp => "the MCP client",
        Source::Provider(_) => "the client",
    }
}

/// Whether a provider's error is about calls and results (not, say, a
/// prompt that is too long).
fn about_pairing(text: &str) -> bool {
    [
        "tool_use",
        "tool_result",
        "tool_call",
        "function call",
        "function response",
        "call_id",
        "toolResult",
        "toolUse",
    ]
    .iter()
    .any(|w| text.contains(w))
}

fn join(ids: &[String]) -> String {
    ids.join(", ")
}

/// Consecutive messages of one role: Anthropic merges them into one turn
/// before it checks anything, so the rules apply to turns.
#[derive(Clone, Debug, PartialEq)]
struct Turn {
    role: Role,
    members: Range<usize>,
}

/// The turns of `msgs` from message `from` on (the first a turn's start).
fn turns(msgs: &[Message], from: usize) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::new();
    for (i, m) in msgs.iter().enumerate().skip(from) {
        // Anthropic has no tool role; results ride in user messages.
        let role = if m.role == Role::Assistant {
            Role::Assistant
        } else {
            Role::User
        };
        match out.last_mut() {
            Some(t) if t.role == role => t.members.end = i + 1,
            _ => out.push(Turn {
                role,
                members: i..i + 1,
            }),
        }
    }
    out
}

impl Turn {
    /// `(message, block)` of every block of the turn, in order.
    fn blocks<'a>(&self, msgs: &'a [Message]) -> impl Iterator<Item = (usize, usize, &'a Block)> {
        self.members.clone().flat_map(move |i| {
            msgs[i]
                .content
                .iter()
                .enumerate()
                .map(move |(k, b)| (i, k, b))
        })
    }

    fn calls<'a>(&self, msgs: &'a [Message]) -> Vec<(usize, usize, &'a str)> {
        self.members
            .clone()
            .flat_map(|i| tool_uses(&msgs[i]).map(move |(k, id, _)| (i, k, id)))
            .collect()
    }
}

fn anthropic(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let turns = turns(&conv.messages, 0);
    let mut waiting = HashSet::default();
    anthropic_turns(conv, &turns, 0..turns.len(), None, &mut waiting, &mut out);
    thinking_opens_the_turn(conv, &mut out);
    cache_breakpoints_within_four(conv, &mut out);
    no_blank_content(conv, &mut out);
    out
}

/// No text block empty or of only whitespace, no message without content,
/// in each provider's words: Anthropic's "messages: text content blocks
/// must be non-empty" (claude-code#59812, #49171, #62379), "… must contain
/// non-whitespace text" (claude-code#23369) and "messages.N: all messages
/// must have non-empty content except for the optional final assistant
/// message" (claude-code#3196, #6774, tidyverse/ellmer#709); Bedrock's
/// "The text field in the ContentBlock object at messages.N.content.M is
/// blank. Add text to the text field, and try again." (continuedev/
/// continue#9767, OpenHands#5339; whitespace alike, NousResearch/
/// hermes-agent#63983) and "The content field in the Message object at
/// messages.N is empty. …" (earendil-works/pi#3443). Judged in request
/// bodies only: an agent's log keeps what it stored, and what it sends of
/// an empty block is its own serializer's choice.
fn no_blank_content(conv: &Conversation, out: &mut Vec<Finding>) {
    let bedrock = match conv.source {
        Source::Provider(Format::Anthropic) => false,
        Source::Provider(Format::Bedrock) => true,
        _ => return,
    };
    let last = conv.messages.len().saturating_sub(1);
    for (i, m) in conv.messages.iter().enumerate() {
        let whole = &conv.message_sources[i];
        if conv.written_empty.contains(&i) {
            if !bedrock && i == last && m.role == Role::Assistant {
                continue;
            }
            let message = match bedrock {
                true => format!(
                    "The content field in the Message object at {} is empty. Add a ContentBlock object to the content field and try again.",
                    dotted_path(whole)
                ),
                false => format!(
                    "{}: all messages must have non-empty content except for the optional final assistant message",
                    dotted_path(whole)
                ),
            };
            out.push(finding(
                Kind::EmptyContent,
                whole,
                Vec::new(),
                message,
                true,
            ));
            continue;
        }
        for (k, block) in m.content.iter().enumerate() {
            let Block::Text { text } = block else {
                continue;
            };
            if !text.trim().is_empty() {
                continue;
            }
            let src = &conv.block_sources[i][k];
            // Anthropic says a string content that is empty of the message.
            let string_content = !src.path.ends_with(']');
            let (kind, message) = match (bedrock, text.is_empty()) {
                (true, _) => (
                    Kind::BlankText,
                    format!(
                        "The text field in the ContentBlock object at {} is blank. Add text to the text field, and try again.",
                        dotted_path(src)
                    ),
                ),
                (false, true) if string_content => (
                    Kind::EmptyContent,
                    format!(
                        "{}: all messages must have non-empty content except for the optional final assistant message",
                        dotted_path(whole)
                    ),
                ),
                (false, true) => (
                    Kind::BlankText,
                    "messages: text content blocks must be non-empty".to_string(),
                ),
                (false, false) => (
                    Kind::BlankText,
                    "messages: text content blocks must contain non-whitespace text".to_string(),
                ),
            };
            if kind == Kind::EmptyContent && i == last && m.role == Role::Assistant {
                continue;
            }
            out.push(finding(kind, src, Vec::new(), message, true));
        }
    }
}

/// At most four blocks of a request carry `cache_control` (tools, system
/// blocks and content blocks alike): "A maximum of 4 blocks with
/// cache_control may be provided. Found 5." (tghamm/Anthropic.SDK#50,
/// griffinmartin/opencode-claude-auth#121, ObservedObserver/async-code#34
/// from Claude Code; bug-ops/zeph#1568 counts the three places). Counted
/// where the body was read as a document (a request body, a capture's
/// request); an agent's log keeps no `cache_control`.
fn cache_breakpoints_within_four(conv: &Conversation, out: &mut Vec<Finding>) {
    let Some(found) = conv.cache_breakpoints.filter(|n| *n > 4) else {
        return;
    };
    if conv.source != Source::Provider(Format::Anthropic) {
        return;
    }
    let at = BlockSource {
        path: "messages".into(),
        ..Default::default()
    };
    out.push(finding(
        Kind::CacheControlLimit,
        &at,
        Vec::new(),
        format!("A maximum of 4 blocks with cache_control may be provided. Found {found}."),
        true,
    ));
}

/// The rules of each turn of `turns[range]`: `turns` are a conversation's
/// turns from one on (its last is the conversation's last: whether a call
/// is still in flight is said by how near the end its turn is), `before`
/// the turn before `turns[0]`, `waiting` the server calls that wait for a
/// client call's result from the turns before `range`.
fn anthropic_turns(
    conv: &Conversation,
    turns: &[Turn],
    range: Range<usize>,
    before: Option<&Turn>,
    waiting: &mut HashSet<String>,
    out: &mut Vec<Finding>,
) {
    let msgs = &conv.messages;
    for t in range {
        let turn = &turns[t];
        if turn.members.len() > 1 && conv.source == Source::Provider(Format::Anthropic) {
            let first = turn.members.start;
            out.push(finding(
                Kind::ConsecutiveSameRole,
                &conv.message_sources[first + 1],
                Vec::new(),
                format!(
                    "{} consecutive `{}` messages from {}: Anthropic merges them into one turn and accepts the request; other providers may not",
                    turn.members.len(),
                    if turn.role == Role::Assistant { "assistant" } else { "user" },
                    conv.message_sources[first]
                ),
                false,
            ));
        }
        let previous = match t.checked_sub(1) {
            Some(p) => Some(&turns[p]),
            None => before,
        };
        if turn.role == Role::User {
            anthropic_results(conv, turn, previous, out);
            continue;
        }
        // Anthropic takes a server call without its result only while the
        // result is in flight: the request ends with the call's turn (a
        // `pause_turn` resumed) or with the tool-result turn right after.
        let in_flight = match turns.len() - (t + 1) {
            0 => true,
            1 => turns[t + 1].members.clone().any(|i| {
                msgs[i]
                    .content
                    .iter()
                    .any(|b| matches!(b, Block::ToolResult { .. }))
            }),
            _ => false,
        };
        hosted_pairing(conv, turn, in_flight, waiting, out);
        let calls = turn.calls(msgs);
        if calls.is_empty() {
            continue;
        }
        anthropic_ids(conv, &calls, out);
        anthropic_answers(conv, turn, turns.get(t + 1), &calls, out);
    }
}

/// With extended thinking on, the assistant turn in progress (the tool
/// loop since the last prompt, when the request ends on tool results)
/// must open with the `thinking` block the model wrote; an agent that
/// drops it gets Anthropic's 400 (reported by opencode, mastra and kilo
/// code users, on the API, Bedrock and Vertex alike).
fn thinking_opens_the_turn(conv: &Conversation, out: &mut Vec<Finding>) {
    let msgs = &conv.messages;
    // With adaptive thinking a reply has a thinking block only when the
    // model chose to think: one without it is a loss only when the other
    // replies show the pipeline keeps them (then a warning: this reply
    // may have had none). Claude Code 2.1.332 sends `adaptive` for
    // claude-opus-5-5, and replies without thinking were accepted.
    let adaptive = conv.thinking_adaptive && !conv.opens_with_thinking.is_empty();
    if !(conv.thinking || adaptive) || conv.source != Source::Provider(Format::Anthropic) {
        return;
    }
    let is_results = |m: &Message| {
        m.role == Role::User
            && !m.content.is_empty()
            && m.content
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }))
    };
    let Some(last) = msgs.last() else { return };
    if !is_results(last) {
        return;
    }
    // The turn opens at the first assistant message after the last prompt.
    let prompt = msgs
        .iter()
        .rposition(|m| m.role == Role::User && !is_results(m));
    let Some(first) =
        (prompt.map_or(0, |p| p + 1)..msgs.len()).find(|&i| msgs[i].role == Role::Assistant)
    else {
        return;
    };
    if conv.opens_with_thinking.contains(&first) {
        return;
    }
    let found = match msgs[first].content.first() {
        Some(Block::ToolUse { .. }) => "tool_use",
        Some(Block::Text { .. }) => "text",
        _ => "another block",
    };
    let source = &conv.message_sources[first];
    out.push(finding(
        Kind::ThinkingMissing,
        source,
        msgs[first]
            .tool_uses()
            .map(|(id, _)| id.to_string())
            .collect(),
        format!(
            "{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.",
            source.to_string().replace('[', ".").replace(']', "")
        ),
        conv.thinking,
    ));
    if !conv.thinking
        && let Some(f) = out.last_mut()
    {
        f.message = format!(
            "with adaptive thinking the model thinks when it chooses, and other replies here keep their thinking blocks: if this reply had one, it was dropped and Anthropic refuses the request: «{}»",
            f.message
        );
    }
}

/// A user turn's results must answer the turn right before them.
fn anthropic_results(
    conv: &Conversation,
    turn: &Turn,
    previous: Option<&Turn>,
    out: &mut Vec<Finding>,
) {
    let msgs = &conv.messages;
    let asked: HashSet<&str> = match previous {
        Some(p) if p.role == Role::Assistant => {
            p.calls(msgs).into_iter().map(|(_, _, id)| id).collect()
        }
        _ => HashSet::default(),
    };
    for i in turn.members.clone() {
        for (k, id) in tool_results(&msgs[i]) {
            let (kind, message, rejected) = match &conv.continues {
                // The call may be in what the log does not hold.
                Some(before) if previous.is_none() => (
                    Kind::UnverifiableResult,
                    format!(
                        "the result for {id} answers a call made in {before}, so it cannot be checked here"
                    ),
                    false,
                ),
                _ if asked.contains(id) => continue,
                _ => (
                    Kind::UnexpectedResult,
                    format!(
                        "unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    ),
                    true,
                ),
            };
            out.push(finding(
                kind,
                &conv.block_sources[i][k],
                vec![id.to_string()],
                message,
                rejected,
            ));
        }
    }
}

/// The ids of one turn's calls: the pattern Anthropic accepts, and unique.
fn anthropic_ids(conv: &Conversation, calls: &[(usize, usize, &str)], out: &mut Vec<Finding>) {
    let mut in_turn: HashMap<&str, &BlockSource> = HashMap::default();
    for &(i, k, id) in calls {
        let src = &conv.block_sources[i][k];
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            out.push(finding(
                Kind::InvalidId,
                src,
                vec![id.to_string()],
                format!(
                    "{}.id: String should match pattern '^[a-zA-Z0-9_-]+$' (found {id:?})",
                    // A request body's place as Anthropic spells it
                    // (`messages.1.content.0`); a log's event, as it is.
                    match src.line {
                        None => dotted(&src.path),
                        Some(_) => src.path.to_string(),
                    }
                ),
                true,
            ));
        }
        if let Some(first) = in_turn.insert(id, src) {
            out.push(finding(
                Kind::DuplicateId,
                src,
                vec![id.to_string()],
                format!("`tool_use` ids must be unique: {id} is used twice in one turn (first at {first})"),
                true,
            ));
        }
    }
}

/// Every call of a turn answered by a result at the start of the next.
fn anthropic_answers(
    conv: &Conversation,
    turn: &Turn,
    next: Option<&Turn>,
    calls: &[(usize, usize, &str)],
    out: &mut Vec<Finding>,
) {
    let msgs = &conv.messages;
    let answered: HashSet<&str> = next
        .map(|n| {
            n.members
                .clone()
                .flat_map(|i| tool_results(&msgs[i]).map(|(_, id)| id))
                .collect()
        })
        .unwrap_or_default();
    let mut missing: Vec<String> = Vec::new();
    for &(_, _, id) in calls {
        if !answered.contains(id) && !missing.iter().any(|m| m == id) {
            missing.push(id.to_string());
        }
    }
    if !missing.is_empty() {
        let message = if next.is_none() {
            format!(
                "the conversation ends with `tool_use` ids that have no `tool_result` blocks: {}. The next request must begin with their results (Each `tool_use` block must have a corresponding `tool_result` block in the next message.)",
                join(&missing)
            )
        } else {
            // A request body's words begin as Anthropic's do, with the
            // place it names: the message after the calls, where their
            // results belong (`messages.2` for calls at `messages[1]`). A
            // log's request is the agent's rewrite, whose indexes the log
            // does not give.
            let next_source = next.map(|n| &conv.message_sources[n.members.start]);
            let place = match next_source {
                // (A trace's span says where the body was, not the body.)
                Some(src)
                    if src.line.is_none()
                        && (src.path.starts_with("messages[") || src.path.starts_with('[')) =>
                {
                    format!("{}: ", dotted_path(src))
                }
                _ => String::new(),
            };
            format!(
                "{place}`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                join(&missing)
            )
        };
        // In a log, name the event that holds the first dangling call.
        let at = calls
            .iter()
            .find(|(_, _, id)| missing.iter().any(|x| x == id))
            .map(|&(i, k, _)| &conv.block_sources[i][k])
            .filter(|s| s.line.is_some())
            .unwrap_or(&conv.message_sources[turn.members.start]);
        out.push(finding(Kind::UnansweredCall, at, missing, message, true));
    }
    if let Some(n) = next {
        let leading = n
            .blocks(msgs)
            .take_while(|(_, _, b)| matches!(b, Block::ToolResult { .. }))
            .count();
        let results_for_calls = n
            .members
            .clone()
            .flat_map(|i| tool_results(&msgs[i]))
            .filter(|(_, id)| calls.iter().any(|(_, _, c)| c == id))
            .count();
        if results_for_calls > leading {
            out.push(finding(
                Kind::ResultsNotFirst,
                &conv.message_sources[n.members.start],
                calls.iter().map(|(_, _, id)| id.to_string()).collect(),
                format!(
                    "Did not find {} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
                    calls.len()
                ),
                true,
            ));
        }
    }
}

/// Server tools and the MCP connector: each result block needs its call
/// before it in the same turn (the server runs the call and writes the
/// result into the assistant's own content). A call without its result is
/// accepted while the result is in flight (`in_flight`: the request ends
/// with the call's turn, a `pause_turn` resumed, or with the tool-result
/// turn right after it) and refused as soon as another turn follows:
/// measured live on claude-sonnet-4-5 by pydantic-ai
/// (`tests/models/anthropic/test_unpaired_native_tool_calls.py`), for
/// `server_tool_use` and `mcp_tool_use` alike. A call that waits for a client `tool_use` it made
/// (programmatic tool calling) is the exception: its result comes in a
/// later assistant turn, after the client's `tool_result`, so it is carried
/// over in `waiting`.
fn hosted_pairing(
    conv: &Conversation,
    turn: &Turn,
    in_flight: bool,
    waiting: &mut HashSet<String>,
    out: &mut Vec<Finding>,
) {
    let mut hosted: Vec<&Hosted> = conv
        .hosted
        .iter()
        .filter(|h| turn.members.contains(&h.message))
        .collect();
    if hosted.is_empty() {
        return;
    }
    hosted.sort_by_key(|h| (h.message, h.position));
    let mut called: HashSet<&str> = HashSet::default();
    let mut answered: HashSet<&str> = HashSet::default();
    let awaits: HashSet<&str> = hosted
        .iter()
        .filter(|h| h.role == HostedRole::Awaits)
        .map(|h| h.id.as_str())
        .collect();
    for h in &hosted {
        match h.role {
            HostedRole::Awaits => {}
            HostedRole::Call => {
                called.insert(&h.id);
            }
            HostedRole::Result => {
                answered.insert(&h.id);
                if !called.contains(h.id.as_str()) && !waiting.remove(h.id.as_str()) {
                    let call = if h.block == "mcp_tool_result" {
                        "mcp_tool_use"
                    } else {
                        "server_tool_use"
                    };
                    out.push(finding(
                        Kind::UnexpectedResult,
                        &h.source,
                        vec![h.id.clone()],
                        format!(
                            "unexpected `tool_use_id` found in `{0}` blocks: {1}. Each `{0}` block must have a corresponding `{call}` block before it.",
                            h.block, h.id
                        ),
                        true,
                    ));
                }
            }
        }
    }
    for h in hosted.iter().filter(|h| h.role == HostedRole::Call) {
        if answered.contains(h.id.as_str()) {
            continue;
        }
        if awaits.contains(h.id.as_str()) {
            waiting.insert(h.id.clone());
            continue;
        }
        if in_flight {
            continue;
        }
        let message = if h.block == "mcp_tool_use" {
            format!(
                "`mcp_tool_use` with id {} was found without a corresponding `mcp_tool_result` block (the connector runs the call and writes its result; a history that goes on past the call without it is refused)",
                h.id
            )
        } else {
            format!(
                "`{0}` tool use with id {1} was found without a corresponding `{0}_tool_result` block (the server runs the call and writes its result; a history that goes on past the call without it is refused)",
                h.name, h.id
            )
        };
        out.push(finding(
            Kind::UnansweredServerCall,
            &h.source,
            vec![h.id.clone()],
            message,
            true,
        ));
    }
}

/// `messages[2]` as Bedrock's errors spell it: `messages.2`, from the
/// request body's own root (a recording nests it in an interaction).
fn dotted_path(source: &BlockSource) -> String {
    let path: &str = &source.path;
    let from = path.rfind("messages[").unwrap_or(0);
    path[from..].replace('[', ".").replace(']', "")
}

/// Bedrock Converse checks the history itself, whatever the model, in its
/// own words (each quoted from public reports of its `ValidationException`):
/// roles alternate ("A conversation must alternate between user and
/// assistant roles…"); the user turn after a turn of `toolUse` blocks
/// carries a `toolResult` for each ("Expected toolResult blocks at
/// messages.N.content for the following Ids: …", agno #6698, zeroclaw
/// #1476) and no more ("The number of toolResult blocks at
/// messages.N.content exceeds the number of toolUse blocks of previous
/// turn.", strands-agents #1435, pydantic-ai #2327); ids match
/// `[a-zA-Z0-9_-]+` (the `ToolUseBlock` reference); and a request with tool
/// blocks declares its tools ("toolConfig field must be defined when using
/// toolUse and toolResult content blocks.", zot #18, ironclaw #1710).
fn bedrock(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let msgs = &conv.messages;
    for (i, m) in msgs.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &msgs[p]);
        if previous.is_some_and(|p| (p.role == Role::Assistant) == (m.role == Role::Assistant)) {
            out.push(finding(
                Kind::ConsecutiveSameRole,
                &conv.message_sources[i],
                Vec::new(),
                "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.".to_string(),
                true,
            ));
        }
        if m.role == Role::Assistant {
            bedrock_calls(conv, i, &mut out);
            continue;
        }
        let asked: Vec<&str> = previous
            .filter(|p| p.role == Role::Assistant)
            .map(|p| tool_uses(p).map(|(_, id, _)| id).collect())
            .unwrap_or_default();
        let results: Vec<(usize, &str)> = tool_results(m).collect();
        empty_error_results(conv, i, &mut out);
        if results.len() > asked.len() {
            let extra: Vec<String> = results
                .iter()
                .filter(|(_, id)| !asked.contains(id))
                .map(|(_, id)| id.to_string())
                .collect();
            let at = results
                .iter()
                .find(|(_, id)| !asked.contains(id))
                .map_or(&conv.message_sources[i], |&(k, _)| {
                    &conv.block_sources[i][k]
                });
            out.push(finding(
                Kind::UnexpectedResult,
                at,
                extra,
                format!(
                    "The number of toolResult blocks at {}.content exceeds the number of toolUse blocks of previous turn.",
                    dotted_path(&conv.message_sources[i])
                ),
                true,
            ));
        }
    }
    let uses_tools = msgs.iter().any(|m| {
        m.content
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. }))
    });
    no_blank_content(conv, &mut out);
    if uses_tools && conv.tools.is_empty() && !conv.open_tools {
        out.push(finding(
            Kind::MissingToolConfig,
            &BlockSource {
                path: "toolConfig".into(),
                ..Default::default()
            },
            Vec::new(),
            "toolConfig field must be defined when using toolUse and toolResult content blocks."
                .to_string(),
            true,
        ));
    }
    out
}

/// Bedrock refuses a `toolResult` whose `status` is `error` and whose
/// content is empty ("The content field at messages.N.content.K.toolResult
/// cannot be empty when status value is error.", as aws-samples'
/// multi-agent orchestration sample hit it when a tool failed).
fn empty_error_results(conv: &Conversation, i: usize, out: &mut Vec<Finding>) {
    for (k, block) in conv.messages[i].content.iter().enumerate() {
        let Block::ToolResult {
            tool_use_id,
            content,
            is_error: true,
        } = block
        else {
            continue;
        };
        let empty = match &**content {
            Value::Null => true,
            Value::Array(items) => items.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        };
        if !empty {
            continue;
        }
        let src = &conv.block_sources[i][k];
        out.push(finding(
            Kind::EmptyErrorResult,
            src,
            vec![tool_use_id.to_string()],
            format!(
                "The content field at {}.toolResult cannot be empty when status value is error.",
                dotted_path(src)
            ),
            true,
        ));
    }
}

/// One assistant turn's calls: valid ids, each answered by the next turn.
fn bedrock_calls(conv: &Conversation, i: usize, out: &mut Vec<Finding>) {
    let msgs = &conv.messages;
    for (k, id, _) in tool_uses(&msgs[i]) {
        let valid = !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            let src = &conv.block_sources[i][k];
            out.push(finding(
                Kind::InvalidId,
                src,
                vec![id.to_string()],
                format!(
                    "1 validation error detected: Value '{id}' at '{}.toolUse.toolUseId' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+",
                    dotted_path(src)
                ),
                true,
            ));
        }
    }
    let calls: Vec<&str> = tool_uses(&msgs[i]).map(|(_, id, _)| id).collect();
    if calls.is_empty() {
        return;
    }
    let next = msgs.get(i + 1).filter(|n| n.role != Role::Assistant);
    let answered: HashSet<&str> = next
        .map(|n| tool_results(n).map(|(_, id)| id).collect())
        .unwrap_or_default();
    let missing: Vec<String> = calls
        .iter()
        .filter(|id| !answered.contains(**id))
        .map(|id| id.to_string())
        .collect();
    if missing.is_empty() {
        return;
    }
    let message = match msgs.get(i + 1) {
        None => format!(
            "the conversation ends with toolUse blocks that have no toolResult: {}. The next request must carry them (Expected toolResult blocks at messages.{}.content for the following Ids: {})",
            join(&missing),
            i + 1,
            join(&missing)
        ),
        Some(_) => format!(
            "Expected toolResult blocks at {}.content for the following Ids: {}",
            dotted_path(&conv.message_sources[i + 1]),
            join(&missing)
        ),
    };
    out.push(finding(
        Kind::UnansweredCall,
        &conv.message_sources[i],
        missing,
        message,
        true,
    ));
}

fn openai(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    openai_messages(conv, 0..conv.messages.len(), &mut out);
    out
}

/// [`openai`]'s findings of `messages` (a grown check settles them in
/// parts, [`growing`]). A tool message is judged by the calls of the last
/// message before it that is not one, less the results since: the walk
/// starts there, and says only what it finds from `messages.start` on.
fn openai_messages(conv: &Conversation, messages: Range<usize>, out: &mut Vec<Finding>) {
    let msgs = &conv.messages;
    let from = msgs[..messages.start.min(msgs.len())]
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .unwrap_or(0);
    let mut said = Vec::new();
    let mut expecting: HashSet<&str> = HashSet::default();
    // The older `function_call` / `function` messages pair by name and
    // position, not by id, and the API is not known to refuse one left
    // open: warnings, in loopdbg's words.
    let legacy = |id: &str| {
        conv.call_types
            .iter()
            .any(|(c, t)| c == id && t == loopdbg_read::openai_chat::LEGACY_FUNCTION_CALL)
    };
    for (i, m) in msgs.iter().enumerate().take(messages.end).skip(from) {
        // Before `messages`, only the state is wanted.
        let out: &mut Vec<Finding> = match i < messages.start {
            true => &mut said,
            false => &mut *out,
        };
        match m.role {
            Role::Tool => {
                for (k, id) in tool_results(m) {
                    if let Some(name) = id.strip_suffix("@?") {
                        out.push(finding(
                            Kind::UnexpectedResult,
                            &conv.block_sources[i][k],
                            vec![name.to_string()],
                            format!(
                                "a `function` message for `{name}` answers no open `function_call` of that name (the older functions API pairs them by name)"
                            ),
                            false,
                        ));
                        continue;
                    }
                    if !expecting.remove(id) {
                        out.push(finding(
                            Kind::UnexpectedResult,
                            &conv.block_sources[i][k],
                            vec![id.to_string()],
                            format!(
                                "Messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id {id})."
                            ),
                            true,
                        ));
                    }
                }
            }
            _ => {
                expecting.clear();
                let calls: Vec<&str> = tool_uses(m).map(|(_, id, _)| id).collect();
                if m.role != Role::Assistant || calls.is_empty() {
                    continue;
                }
                // The tool messages right after must answer every call.
                let answered: HashSet<&str> = msgs[i + 1..]
                    .iter()
                    .take_while(|n| n.role == Role::Tool)
                    .flat_map(|n| tool_results(n).map(|(_, id)| id))
                    .collect();
                let (old, missing): (Vec<String>, Vec<String>) = calls
                    .iter()
                    .filter(|id| !answered.contains(**id))
                    .map(|s| s.to_string())
                    .partition(|id| legacy(id));
                if !old.is_empty() {
                    out.push(finding(
                        Kind::UnansweredCall,
                        &conv.message_sources[i],
                        old.clone(),
                        format!(
                            "a `function_call` ({}) is not followed by the `function` message with its result: the model never sees one (the older functions API pairs them by name, and is not known to refuse this)",
                            join(&old)
                        ),
                        false,
                    ));
                }
                if !missing.is_empty() {
                    out.push(finding(
                        Kind::UnansweredCall,
                        &conv.message_sources[i],
                        missing.clone(),
                        format!(
                            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                            join(&missing)
                        ),
                        true,
                    ));
                }
                expecting = calls.into_iter().collect();
            }
        }
    }
}

fn responses(conv: &Conversation) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut called: HashSet<&str> = HashSet::default();
    let mut answered: HashSet<&str> = HashSet::default();
    for m in &conv.messages {
        for (_, id) in tool_results(m) {
            answered.insert(id);
        }
    }
    let kind_of = |id: &str| {
        conv.call_types
            .iter()
            .find(|(c, _)| c == id)
            .map_or("function call".to_string(), |(_, t)| t.replace('_', " "))
    };
    for (i, m) in conv.messages.iter().enumerate() {
        for (k, id, _) in tool_uses(m) {
            called.insert(id);
            if !answered.contains(id) {
                // A client tool search left open: no recording read so far
                // shows OpenAI's answer, so it is said by analogy, as a
                // warning.
                let measured = kind_of(id) != "tool search call";
                let mut message = format!("No tool output found for {} {id}.", kind_of(id));
                if !measured {
                    message.push_str(" (a client tool search waits for its output as a function call does; OpenAI's answer to one left open is not in any recording read so far)");
                }
                out.push(finding(
                    Kind::UnansweredCall,
                    &conv.block_sources[i][k],
                    vec![id.to_string()],
                    message,
                    measured,
                ));
            }
        }
        for (k, id) in tool_results(m) {
            if called.contains(id) {
                continue;
            }
            let src = &conv.block_sources[i][k];
            match &conv.continues {
                // The call may be in the stored response: nothing here says.
                Some(stored) => out.push(finding(
                    Kind::UnverifiableResult,
                    src,
                    vec![id.to_string()],
                    format!(
                        "the output for {id} answers a call this request does not contain; the request continues {stored}, whose calls are stored by the provider, so it cannot be checked here"
                    ),
                    false,
                )),
                None => out.push(finding(
                    Kind::UnexpectedResult,
                    src,
                    vec![id.to_string()],
                    format!("No tool call found for function call output with call_id {id}."),
                    true,
                )),
            }
        }
    }
    out
}

/// Gemini checks turns by kind and count, in its own words: a function
/// call turn comes right after a user turn or a function response turn; a
/// function response turn comes right after a function call turn and has as
/// many responses as that turn had calls. Gemini 3 models also need the
/// first call of each step of the current turn to carry its
/// `thoughtSignature`.
fn gemini(conv: &Conversation) -> Vec<Finding> {
    const AFTER_USER: &str = "Please ensure that function call turn comes immediately after a user turn or after a function response turn.";
    const AFTER_CALL: &str =
        "Please ensure that function response turn comes immediately after a function call turn.";
    const COUNT: &str = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
    let mut out = Vec::new();
    let msgs = &conv.messages;
    let calls = |m: &Message| {
        tool_uses(m)
            .map(|(_, id, _)| id.to_string())
            .collect::<Vec<_>>()
    };
    let responses = |m: &Message| {
        tool_results(m)
            .map(|(_, id)| id.to_string())
            .collect::<Vec<_>>()
    };
    for (i, m) in msgs.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &msgs[p]);
        let made = calls(m);
        let answers = responses(m);
        if m.role == Role::Assistant && !made.is_empty() {
            let fits = previous.is_some_and(|p| p.role != Role::Assistant);
            if !fits {
                out.push(finding(
                    Kind::CallTurnOutOfPlace,
                    &conv.message_sources[i],
                    made.clone(),
                    AFTER_USER.to_string(),
                    true,
                ));
            }
            match msgs.get(i + 1) {
                None => out.push(finding(
                    Kind::UnansweredCall,
                    &conv.message_sources[i],
                    made.clone(),
                    format!(
                        "the conversation ends with function calls that have no function response: {}. The next request must carry them ({COUNT})",
                        join(&made)
                    ),
                    true,
                )),
                Some(next) if responses(next).is_empty() && next.role != Role::Assistant => {
                    out.push(answered_in_text(conv, i + 1, &made, COUNT));
                }
                _ => {}
            }
        }
        // Consecutive function response turns are one to Gemini: three
        // parallel calls answered in three turns of one response each
        // were accepted (200, a reply that used all three). The first
        // turn of such a run is judged with the whole run's responses.
        let continues_run =
            previous.is_some_and(|p| p.role != Role::Assistant && !responses(p).is_empty());
        if !answers.is_empty() && continues_run {
            continue;
        }
        let run_end = (i + 1..msgs.len())
            .find(|&j| msgs[j].role == Role::Assistant || responses(&msgs[j]).is_empty())
            .unwrap_or(msgs.len());
        let answers: Vec<String> = match answers.is_empty() {
            true => answers,
            false => msgs[i..run_end].iter().flat_map(responses).collect(),
        };
        if !answers.is_empty() {
            match previous {
                Some(p) if p.role == Role::Assistant && !calls(p).is_empty() => {
                    let asked = calls(p);
                    if answers.len() != asked.len() {
                        let missing: Vec<String> = asked
                            .iter()
                            .filter(|id| !answers.contains(id))
                            .cloned()
                            .collect();
                        // Every call answered, some more than once: the
                        // count is wrong by copies, not by a call left
                        // open (a resume that sends a call's result and
                        // the response record the CLI wrote of it).
                        let twice: Vec<String> = asked
                            .iter()
                            .filter(|id| answers.iter().filter(|a| a == id).count() > 1)
                            .cloned()
                            .collect();
                        let (kind, ids) = match (missing.is_empty(), twice.is_empty()) {
                            (true, false) => (Kind::DuplicateResult, twice),
                            (true, true) => (Kind::UnansweredCall, asked.clone()),
                            (false, _) => (Kind::UnansweredCall, missing),
                        };
                        out.push(finding(
                            kind,
                            &conv.message_sources[i],
                            ids,
                            format!(
                                "{COUNT} ({} call(s), {} response(s))",
                                asked.len(),
                                answers.len()
                            ),
                            true,
                        ));
                    }
                    let run =
                        (i..run_end).flat_map(|j| tool_results(&msgs[j]).map(move |r| (j, r)));
                    for (j, (k, id)) in run {
                        if !asked.iter().any(|a| a == id) && asked.len() == answers.len() {
                            out.push(finding(
                                Kind::UnexpectedResult,
                                &conv.block_sources[j][k],
                                vec![id.to_string()],
                                format!(
                                    "the function response {id} answers no call of the previous turn; Gemini pairs responses by name and count, so it answers the wrong call"
                                ),
                                false,
                            ));
                        }
                    }
                }
                _ => out.push(finding(
                    Kind::UnexpectedResult,
                    &conv.message_sources[i],
                    answers.clone(),
                    AFTER_CALL.to_string(),
                    true,
                )),
            }
        }
    }
    thought_signatures(conv, &mut out);
    out
}

/// A function call turn followed by a user turn of plain text: the tool's
/// answer written as text. Recordings show gemini-1.5-flash and
/// gemini-2.5-flash answering such requests with 200, parallel calls too
/// (the model reads the text as the answer), so it is a warning; Gemini 3
/// validates function calling strictly (a call's turn must be followed by
/// its responses, as its thought signatures are), so there it is the 400.
/// A recorded refusal makes it a 400 whatever the model
/// ([`weigh_by_the_answer`]).
fn answered_in_text(conv: &Conversation, at: usize, made: &[String], count: &str) -> Finding {
    let model = conv.model.as_deref();
    if model.is_some_and(|m| m.contains("gemini-3")) {
        return finding(
            Kind::UnansweredCall,
            &conv.message_sources[at],
            made.to_vec(),
            format!("{count} (function calls without responses: {})", join(made)),
            true,
        );
    }
    let which = model.map_or("the model is not named in the body".to_string(), |m| {
        format!("the request is for {m}")
    });
    finding(
        Kind::UnansweredCall,
        &conv.message_sources[at],
        made.to_vec(),
        format!(
            "the function {} answered with text, not with `functionResponse` parts. Gemini 1.5 and 2.5 models accept this (recordings show 200: the model reads the text as the tool's answer); Gemini 3 models refuse it: «{count}» ({which}). Send one `functionResponse` per call.",
            match made.len() {
                1 => format!("call {} is", made[0]),
                _ => format!("calls {} are", join(made)),
            }
        ),
        false,
    )
}

/// Gemini 3 rejects a current turn whose steps' first calls lack their
/// thought signature; other models accept it. With the model unknown (a
/// body without `model`, as the API takes it), it is a warning, and only
/// when other calls of the request carry signatures: the pipeline keeps
/// them, and lost this one.
fn thought_signatures(conv: &Conversation, out: &mut Vec<Finding>) {
    let model = conv.model.as_deref();
    if model.is_some_and(|m| !m.contains("gemini-3")) {
        return;
    }
    if model.is_none() && conv.signatures == 0 {
        return;
    }
    // The current turn starts after the last user message with text.
    let start = conv
        .messages
        .iter()
        .rposition(|m| {
            m.role != Role::Assistant && m.content.iter().any(|b| matches!(b, Block::Text { .. }))
        })
        .map_or(0, |i| i + 1);
    for (i, m) in conv.messages.iter().enumerate().skip(start) {
        for (position, (k, id, name)) in tool_uses(m).enumerate() {
            if position > 0 || !conv.unsigned.iter().any(|u| u == id) {
                continue;
            }
            let src = &conv.block_sources[i][k];
            let text = format!(
                "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                k + 1
            );
            let (message, rejected) = match model {
                Some(_) => (text, true),
                None => (
                    format!("Gemini 3 models reject this request (other models accept it): {text}"),
                    false,
                ),
            };
            out.push(finding(
                Kind::MissingThoughtSignature,
                src,
                vec![id.to_string()],
                message,
                rejected,
            ));
        }
    }
}

/// One id on several calls. Within one Anthropic turn that is a 400 (see
/// [`anthropic`]); across separate turns, each answered, providers accept
/// it, but a loop that keys results by id can no longer tell them apart.
fn duplicates(conv: &Conversation, out: &mut Vec<Finding>) {
    duplicates_in(conv, 0..conv.messages.len(), &mut Ids::default(), None, out);
}

/// [`duplicates`] among `messages`, after the calls `seen` and, before
/// them, `earlier` (each id where it was last made).
fn duplicates_in(
    conv: &Conversation,
    messages: Range<usize>,
    seen: &mut Ids,
    earlier: Option<&Ids>,
    out: &mut Vec<Finding>,
) {
    let provider = conv.source.provider();
    let msgs = &conv.messages;
    for i in messages {
        for (k, id, _) in tool_uses(&msgs[i]) {
            let src = &conv.block_sources[i][k];
            let made = seen
                .get(msgs, id)
                .or_else(|| earlier.and_then(|e| e.get(msgs, id)));
            let Some((at, before)) = made else {
                seen.insert(msgs, id, (i, k));
                continue;
            };
            let first = &conv.block_sources[at][before];
            if at == i {
                if provider != Format::Anthropic {
                    out.push(finding(
                        Kind::DuplicateId,
                        src,
                        vec![id.to_string()],
                        format!(
                            "tool call id {id} is used twice in one turn (first at {first}); its results cannot be told apart"
                        ),
                        false,
                    ));
                }
                continue;
            }
            seen.insert(msgs, id, (i, k));
            out.push(finding(
                Kind::ReusedId,
                src,
                vec![id.to_string()],
                format!(
                    "tool call id {id} was already used by an earlier turn (at {first}); providers accept a reused id when each turn is answered, but anything that keys results by id (a ledger, a cache, a UI) mixes the two calls up"
                ),
                false,
            ));
        }
    }
}

/// What no server checks: names, arguments, truncated turns, spins.
fn beyond_servers(conv: &Conversation, out: &mut Vec<Finding>) {
    read_notes(conv, out);
    let answered: HashSet<&str> = conv
        .messages
        .iter()
        .flat_map(|m| tool_results(m).map(|(_, id)| id))
        .collect();
    let mut each = Vec::new();
    beyond_messages(
        conv,
        0..conv.messages.len(),
        &|id| answered.contains(id),
        &mut Spin::default(),
        &mut each,
    );
    out.extend(each.into_iter().map(|(_, f)| f));
}

/// What the reader noticed, what the agent rewrites before it sends
/// (each as the finding the stored history would give, repaired by the
/// agent), and arguments that are not JSON.
fn read_notes(conv: &Conversation, out: &mut Vec<Finding>) {
    for rewrite in &conv.rewrites {
        let mut f = finding(
            rewrite.kind,
            &rewrite.source,
            rewrite.ids.clone(),
            rewrite.message.clone(),
            false,
        );
        f.severity = match rewrite.harmless {
            true => Severity::Note,
            false => Severity::Warning,
        };
        f.evidence = Some(Evidence {
            outcome: Fate::Repaired,
            line: None,
        });
        out.push(f);
    }
    for notice in &conv.notices {
        // A role the provider does not take is read around (so the rest
        // is checked) and refused all the same.
        let refused = matches!(notice.kind, Kind::InvalidRole | Kind::ReasoningWithoutItem);
        out.push(finding(
            notice.kind,
            &notice.source,
            notice.ids.clone(),
            notice.message.clone(),
            refused,
        ));
    }
    for note in &conv.notes {
        out.push(finding(
            Kind::InvalidArguments,
            &note.source,
            vec![note.id.clone()],
            format!(
                "arguments are not valid JSON ({}): {:?}",
                note.error,
                clip(&note.raw, 80)
            ),
            false,
        ));
    }
}

/// The assistant turns before: how many in a row said the same.
#[derive(Clone, Copy)]
struct Spin {
    previous_turn: Option<usize>,
    run: usize,
}

impl Default for Spin {
    fn default() -> Spin {
        Spin {
            previous_turn: None,
            run: 1,
        }
    }
}

/// [`beyond_servers`] of each message of `messages`, by message: the
/// results of the whole conversation are `answered`, `spin` says what the
/// assistant messages before said.
fn beyond_messages(
    conv: &Conversation,
    messages: Range<usize>,
    answered: &dyn Fn(&str) -> bool,
    spin: &mut Spin,
    out: &mut Vec<(usize, Finding)>,
) {
    let schemas: HashMap<&str, Option<&Value>> = conv
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.schema.as_ref()))
        .collect();
    let noted: HashSet<&str> = conv.notes.iter().map(|n| n.id.as_str()).collect();
    for i in messages {
        let m = &conv.messages[i];
        if m.role != Role::Assistant {
            // A new prompt between two equal replies: the user asked
            // again, the loop did not spin.
            if is_prompt(m) {
                *spin = Spin::default();
            }
            continue;
        }
        if !conv.tools.is_empty() {
            for (k, id, name) in tool_uses(m) {
                let src = &conv.block_sources[i][k];
                let found = match schemas.get(name) {
                    None if conv.open_tools || builtin(conv, id) => None,
                    None => Some(unknown_tool(conv, src, id, name)),
                    Some(Some(schema)) if !noted.contains(id) => {
                        schema_violation(&m.content[k], schema, src, id, name)
                    }
                    _ => None,
                };
                out.extend(found.map(|f| (i, f)));
            }
        }
        out.extend(truncated_executed(conv, i, answered).map(|f| (i, f)));
        match spin.previous_turn {
            Some(p) if same_turn(&conv.messages[p], m) => {
                spin.run += 1;
                if spin.run == 2 {
                    let f = finding(
                        Kind::RepeatedTurn,
                        &conv.message_sources[i],
                        tool_uses(m).map(|(_, id, _)| id.to_string()).collect(),
                        format!(
                            "this assistant turn repeats the previous one (same text and calls); a loop that gets the same reply again is spinning (first at {})",
                            conv.message_sources[p]
                        ),
                        false,
                    );
                    out.push((i, f));
                }
            }
            _ => spin.run = 1,
        }
        spin.previous_turn = Some(i);
    }
}

fn unknown_tool(conv: &Conversation, src: &BlockSource, id: &str, name: &str) -> Finding {
    finding(
        Kind::UnknownTool,
        src,
        vec![id.to_string()],
        format!(
            "`{name}` is not among the request's tools ({})",
            conv.tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        false,
    )
}

fn schema_violation(
    call: &Block,
    schema: &Value,
    src: &BlockSource,
    id: &str,
    name: &str,
) -> Option<Finding> {
    let (Block::ToolUse { input, .. }, Some(validator)) = (call, compiled(schema)) else {
        return None;
    };
    let errors: Vec<String> = validator
        .iter_errors(input)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    Some(finding(
        Kind::SchemaViolation,
        src,
        vec![id.to_string()],
        format!(
            "arguments of `{name}` do not satisfy its schema: {}",
            errors.join("; ")
        ),
        false,
    ))
}

/// Assistant message `i` was cut by max_tokens, yet some of its calls
/// have results (`answered`).
fn truncated_executed(
    conv: &Conversation,
    i: usize,
    answered: &dyn Fn(&str) -> bool,
) -> Option<Finding> {
    let m = &conv.messages[i];
    if !matches!(
        m.finish_reason,
        Some(loopdbg_engine::session::FinishReason::Length)
    ) {
        return None;
    }
    let ran: Vec<String> = tool_uses(m)
        .filter(|(_, id, _)| answered(id))
        .map(|(_, id, _)| id.to_string())
        .collect();
    if ran.is_empty() {
        return None;
    }
    Some(finding(
        Kind::TruncatedTurnExecuted,
        &conv.message_sources[i],
        ran,
        "this turn was cut by max_tokens / length, yet its calls were executed: their arguments may be incomplete; raise the limit and retry instead".to_string(),
        false,
    ))
}

/// A Responses call of a built-in tool (`local_shell`, `shell`,
/// `apply_patch`, `computer`): declared by type, not by name.
fn builtin(conv: &Conversation, id: &str) -> bool {
    conv.call_types
        .iter()
        .any(|(c, t)| c == id && t != "custom_tool_call")
}

/// True when two assistant turns say the same and make the same calls
/// (by name and arguments: a repeated plan often comes back with fresh ids).
/// A place as the providers spell it in their errors: `messages[1].content[0]`
/// is `messages.1.content.0`.
pub fn dotted(path: &str) -> String {
    path.replace("][", ".").replace('[', ".").replace(']', "")
}

/// The message index right after the first `open` in `text`.
fn message_index(text: &str, open: &str) -> Option<usize> {
    let from = text.find(open)? + open.len();
    let digits: String = text[from..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A user message that asks something: text, and no tool result.
fn is_prompt(m: &Message) -> bool {
    m.role == Role::User
        && m.content.iter().any(|b| matches!(b, Block::Text { .. }))
        && !m
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

fn same_turn(a: &Message, b: &Message) -> bool {
    let mut any = false;
    let mut left = turn_essence(a);
    let mut right = turn_essence(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return any,
            (Some(x), Some(y)) if x == y => any = true,
            _ => return false,
        }
    }
}

/// A turn's non-empty text and its calls by name and arguments.
type Essence<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a Value>);

fn turn_essence(m: &Message) -> impl Iterator<Item = Essence<'_>> {
    m.content.iter().filter_map(|blk| match blk {
        Block::Text { text } if !text.is_empty() => Some((Some(&**text), None, None)),
        Block::ToolUse { name, input, .. } => Some((None, Some(&**name), Some(&**input))),
        _ => None,
    })
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

/// A tool's schema compiled, from a cache per thread: a capture or a log
/// sends the same tools with every request, and compiling a schema costs
/// far more than checking one call against it (on 100 MB of Bedrock
/// bodies, compiling every request's schemas was a third of `check`).
/// Keyed by the schema's text; a cache past 256 schemas starts over.
fn compiled(schema: &Value) -> Option<std::sync::Arc<jsonschema::Validator>> {
    type Cache = HashMap<String, Option<std::sync::Arc<jsonschema::Validator>>>;
    thread_local! {
        static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(HashMap::default());
    }
    let key = schema.to_string();
    CACHE.with_borrow_mut(|cache| {
        if let Some(v) = cache.get(&key) {
            return v.clone();
        }
        if cache.len() >= 256 {
            cache.clear();
        }
        let v = jsonschema::validator_for(schema)
            .ok()
            .map(std::sync::Arc::new);
        cache.insert(key, v.clone());
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The proxy's gate checks requests read as `Shape`: for every request
    /// body the project ships, that finds what reading it whole finds.
    #[test]
    fn a_body_read_as_shape_is_judged_as_read_in_full() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/transcripts"
        );
        let mut judged = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Some(source @ loopdbg_read::Source::Provider(_)) = loopdbg_read::detect(&doc)
            else {
                continue;
            };
            let full = loopdbg_read::read_owned(doc.clone(), source).map(|c| check(&c));
            let shape = loopdbg_read::read_owned_as(doc, source, loopdbg_read::Detail::Shape)
                .map(|c| check(&c));
            match (full, shape) {
                (Ok(full), Ok(shape)) => {
                    let words =
                        |f: &[Finding]| f.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>();
                    assert_eq!(words(&full), words(&shape), "{}", path.display());
                    judged += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{}: {a:?} / {b:?}", path.display()),
            }
        }
        assert!(judged >= 25, "only {judged} bodies judged");
    }
}
