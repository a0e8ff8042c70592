//! The check a request passes on its way to the provider, and what happens
//! to one the provider would reject: the proxy's gate and the Python
//! package's in-process guard both decide here, so a request is judged by
//! one piece of code whichever way it travels.

use serde_json::{Value, json};

use crate::chain::{Chain, ResponseStore, check_continuing, repair_continuing};
use crate::check::growing::GrowingCheck;
use crate::check::{Finding, check};
use crate::fix::Repair;
use loopdbg_formats::provider::Format;
use loopdbg_formats::route::provider_of_path;
use loopdbg_read::prefix::{Histories, Whole, read_whole};
use loopdbg_read::provider_of_request;
use loopdbg_read::{Detail, ReadError, Source, read_owned_as};

/// What the proxy does with a request the provider would reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnInvalid {
    /// Forward it unchanged; the finding is shown and recorded.
    #[default]
    Forward,
    /// Answer a 400 locally, in the provider's own error JSON.
    Block,
    /// Repair it as `check --fix` does and forward the repaired request.
    Repair(Repair),
}

impl std::fmt::Display for OnInvalid {
    /// As the flag spells it: `forward`, `block`, `repair=synthesize`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnInvalid::Forward => f.write_str("forward"),
            OnInvalid::Block => f.write_str("block"),
            OnInvalid::Repair(Repair::Synthesize) => f.write_str("repair=synthesize"),
            OnInvalid::Repair(Repair::Strip) => f.write_str("repair=strip"),
        }
    }
}

impl std::str::FromStr for OnInvalid {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "forward" => Ok(OnInvalid::Forward),
            "block" => Ok(OnInvalid::Block),
            other => match other.strip_prefix("repair=") {
                Some(how) => how.parse().map(OnInvalid::Repair),
                None => Err(format!(
                    "unknown --on-invalid `{s}` (expected forward, block, repair=synthesize or repair=strip)"
                )),
            },
        }
    }
}

/// What `block` and `repair` do with a conversation request the checker
/// could not read (not JSON, nested past the parser's depth, a shape no
/// reader takes): it cannot be vouched for, so by default it is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnUnjudged {
    /// Answer loopdbg's own 400 saying why; nothing is sent upstream.
    #[default]
    Block,
    /// Send it as it came, unjudged.
    Forward,
}

impl std::fmt::Display for OnUnjudged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OnUnjudged::Block => "block",
            OnUnjudged::Forward => "forward",
        })
    }
}

impl std::str::FromStr for OnUnjudged {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(OnUnjudged::Block),
            "forward" => Ok(OnUnjudged::Forward),
            _ => Err(format!(
                "unknown --on-unjudged `{s}` (expected block or forward)"
            )),
        }
    }
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Send the request as it came.
    Forward,
    /// Send this repaired body instead; `changes` calls or results were
    /// added or removed.
    Repaired {
        /// The body the upstream receives.
        body: Value,
        /// How many calls or results the repair added or removed.
        changes: usize,
    },
    /// Answer locally with this status and body; nothing is sent upstream.
    Block {
        /// The HTTP status (400).
        status: u16,
        /// The provider's error JSON.
        body: Value,
    },
}

/// The gate's verdict on one request.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Every finding of the checker on the request as the agent built it.
    pub findings: Vec<Finding>,
    /// The first finding the provider rejects, if any.
    pub rejected: Option<Finding>,
    /// What to do.
    pub decision: Decision,
    /// Why the body could not be read as a conversation, when it could not.
    pub unread: Option<String>,
}

/// Who judges a request: the words its refusal is signed with and the
/// setting it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Gatekeeper {
    /// `loopdbg proxy --on-invalid …`.
    #[default]
    Proxy,
    /// The Python package's guard inside an SDK client (`mode=…`).
    Guard,
}

impl Gatekeeper {
    /// Who blocked it, as its error says.
    fn name(self) -> &'static str {
        match self {
            Gatekeeper::Proxy => "loopdbg proxy",
            Gatekeeper::Guard => "loopdbg guard",
        }
    }

    /// The setting that made it block or repair, as the user wrote it.
    fn setting(self, policy: OnInvalid) -> String {
        match (self, policy) {
            (Gatekeeper::Proxy, _) => format!("--on-invalid {policy}"),
            (Gatekeeper::Guard, OnInvalid::Forward) => "mode \"warn\"".into(),
            (Gatekeeper::Guard, OnInvalid::Block) => "mode \"raise\"".into(),
            (Gatekeeper::Guard, OnInvalid::Repair(Repair::Synthesize)) => "mode \"repair\"".into(),
            (Gatekeeper::Guard, OnInvalid::Repair(Repair::Strip)) => "mode \"repair=strip\"".into(),
        }
    }

    /// How to let an unjudged request through.
    fn let_through(self) -> &'static str {
        match self {
            Gatekeeper::Proxy => "run the proxy with --on-unjudged forward",
            Gatekeeper::Guard => "pass on_unjudged=\"forward\"",
        }
    }
}

/// Checks `body`, a request for `format`, and decides under `policy`.
/// A body the readers cannot take is forwarded untouched: the provider,
/// not loopdbg, answers requests loopdbg does not understand.
pub fn inspect(format: Format, body: Value, policy: OnInvalid, chain: &Chain) -> Verdict {
    inspect_as(Gatekeeper::Proxy, format, body, policy, chain)
}

/// [`inspect`], its refusals signed by `by`.
pub fn inspect_as(
    by: Gatekeeper,
    format: Format,
    body: Value,
    policy: OnInvalid,
    chain: &Chain,
) -> Verdict {
    inspect_keeping(by, format, body, None, policy, chain).0
}

/// What the gate remembers of a request read whole: its conversation and
/// marks, and the check of its settled turns.
type Remembered = (Whole, GrowingCheck);

/// [`inspect_as`], with the conversation the body read as, its marks and
/// its check when `remembered` (the body's text) is given: for the gate
/// to remember (not for Responses, read against its chain).
fn inspect_keeping(
    by: Gatekeeper,
    format: Format,
    body: Value,
    remembered: Option<&[u8]>,
    policy: OnInvalid,
    chain: &Chain,
) -> (Verdict, Option<Remembered>) {
    // Only a repair needs the body after it is read; the check keeps
    // texts as fingerprints, so the body is held once more only then.
    let to_repair = matches!(policy, OnInvalid::Repair(_)).then(|| body.clone());
    let (findings, unread, conv) = match judged_keeping(format, body, remembered, chain) {
        Ok((findings, conv)) => (findings, None, conv),
        Err(e) => (Vec::new(), Some(e.to_string()), None),
    };
    let verdict = decide(by, format, findings, unread, policy, to_repair, chain);
    (verdict, conv)
}

/// What happens to a request with `findings` under `policy`; `to_repair`
/// is its body when the policy repairs.
fn decide(
    by: Gatekeeper,
    format: Format,
    findings: Vec<Finding>,
    unread: Option<String>,
    policy: OnInvalid,
    to_repair: Option<Value>,
    chain: &Chain,
) -> Verdict {
    let rejected = findings.iter().find(|f| f.rejected_by_provider()).cloned();
    let decision = match (&rejected, policy) {
        (None, _) | (Some(_), OnInvalid::Forward) => Decision::Forward,
        (Some(f), OnInvalid::Block) => Decision::Block {
            status: 400,
            body: error_body_as(by, format, &in_providers_words(format, f)),
        },
        (Some(_), OnInvalid::Repair(how)) => {
            let mut fixed = to_repair.unwrap_or_default();
            let changes = repair_continuing(&mut fixed, format, how, chain);
            // A repair that leaves the request refused is not sent: `strip`
            // cannot take back a call the provider stored.
            let still = judged(format, fixed.clone(), chain)
                .ok()
                .and_then(|found| found.into_iter().find(|f| f.rejected_by_provider()));
            match still {
                None => Decision::Repaired {
                    body: fixed,
                    changes,
                },
                Some(left) => Decision::Block {
                    status: 400,
                    body: error_body_as(
                        by,
                        format,
                        &format!(
                            "{} (still refused after {})",
                            left.message,
                            by.setting(policy)
                        ),
                    ),
                },
            }
        }
    };
    Verdict {
        findings,
        rejected,
        decision,
        unread,
    }
}

/// A finding's message as the provider writes its 400: Anthropic opens it
/// with the place it refuses, the message after the calls
/// ("messages.2: `tool_use` ids were found without …").
fn in_providers_words(format: Format, f: &Finding) -> String {
    let index = f
        .path
        .strip_prefix("messages[")
        .and_then(|rest| rest.split(']').next())
        .and_then(|i| i.parse::<usize>().ok());
    match (format, f.kind, index) {
        (Format::Anthropic, loopdbg_read::finding::Kind::UnansweredCall, Some(i))
            if f.message.starts_with("`tool_use` ids were found") =>
        {
            format!("messages.{}: {}", i + 1, f.message)
        }
        _ => f.message.clone(),
    }
}

/// A request as the gate read it.
pub struct Judged {
    /// The provider its path and body name.
    pub provider: Option<Format>,
    /// The verdict, when it is a conversation request.
    pub verdict: Option<Verdict>,
}

/// Reads and checks a request body sent to `path_and_query` under
/// `policy`. Under `block` and `repair`, a request to a conversation
/// endpoint that cannot be read is not vouched for: blocked unless
/// `on_unjudged` forwards it (an unanswered call inside a body nested past
/// the parser's depth got a 200 through `block`; issue 23, item 14).
pub fn judge(
    path_and_query: &str,
    bytes: &[u8],
    policy: OnInvalid,
    on_unjudged: OnUnjudged,
    memory: &Memory,
) -> Judged {
    judge_as(
        Gatekeeper::Proxy,
        path_and_query,
        bytes,
        policy,
        on_unjudged,
        memory,
    )
}

/// [`judge`], its refusals signed by `by`.
pub fn judge_as(
    by: Gatekeeper,
    path_and_query: &str,
    bytes: &[u8],
    policy: OnInvalid,
    on_unjudged: OnUnjudged,
    memory: &Memory,
) -> Judged {
    // Token counts, embeddings, models…: no conversation to refuse, so
    // always forwarded, whatever the policy (a count of a broken history
    // is how an agent finds out how long it is).
    if loopdbg_formats::route::carries_no_conversation(path_and_query) {
        return Judged {
            provider: provider_of_path(path_and_query),
            verdict: None,
        };
    }
    let routed = provider_of_path(path_and_query);
    if let Some(judged) = routed.and_then(|format| {
        judged_past_the_prefix(by, format, path_and_query, bytes, policy, memory)
    }) {
        return judged;
    }
    let parsed = loopdbg_read::bounded::value_of_slice_spent(bytes);
    let provider = provider_of_request(path_and_query, parsed.as_ref().ok().map(|(doc, _)| doc));
    let (mut verdict, why) = match (provider, parsed) {
        (Some(format), Ok((doc, spent))) => {
            let chain = match (format, memory.responses.lock()) {
                (Format::Responses, Ok(store)) => store.chain(&doc),
                _ => Chain::Starts,
            };
            // Only what the path names is remembered: a request is read
            // past its prefix only when its path says its format.
            let remembered = (routed == Some(format)).then_some(bytes);
            let (verdict, whole) = inspect_keeping(by, format, doc, remembered, policy, &chain);
            if let Some((whole, growing)) = whole {
                memory
                    .histories
                    .keep_whole(path_and_query, bytes, spent, whole, growing);
            }
            let why = verdict
                .unread
                .as_ref()
                .map(|e| format!("its body cannot be read as a conversation ({e})"));
            (Some(verdict), why)
        }
        (_, Err(e)) if routed.is_some() => (
            None,
            Some(format!("its body is not JSON it can read ({e})")),
        ),
        _ => (None, None),
    };
    if let Some(why) = why
        && policy != OnInvalid::Forward
        && on_unjudged == OnUnjudged::Block
    {
        verdict = Some(Verdict {
            findings: Vec::new(),
            rejected: None,
            decision: Decision::Block {
                status: 400,
                body: unjudged_body_as(by, provider.or(routed), &why, policy),
            },
            unread: Some(why),
        });
    }
    Judged { provider, verdict }
}

/// What the gate remembers between requests: the Responses answers it
/// saw (for the requests continuing them) and recent conversations (for
/// reading each one's next request only past what they share).
pub struct Memory {
    /// The calls of the Responses answers relayed.
    pub responses: std::sync::Mutex<ResponseStore>,
    /// Recent Chat Completions, Messages and Responses conversations,
    /// each with the check of its settled turns (Responses' are checked
    /// whole).
    pub histories: Histories<GrowingCheck>,
}

/// The memory [`Memory::default`] gives recent conversations: room for
/// about 100 agents' 2 MB histories at once, each kept with its body
/// (`loopdbg_read::prefix::COST`).
pub const HISTORIES_BUDGET: usize = 1 << 30;

impl Memory {
    /// Giving recent conversations at most `budget` bytes.
    pub fn new(budget: usize) -> Memory {
        Memory {
            responses: std::sync::Mutex::new(ResponseStore::new()),
            histories: Histories::new(budget),
        }
    }
}

impl Default for Memory {
    fn default() -> Memory {
        Memory::new(HISTORIES_BUDGET)
    }
}

/// The request judged from the conversation of a request it continues,
/// read only past the messages they share (`loopdbg_read::prefix`); `None`
/// when it continues none, or when the policy needs the whole body (a
/// repair of a refused request): judged whole then, as it always was.
fn judged_past_the_prefix(
    by: Gatekeeper,
    format: Format,
    path: &str,
    bytes: &[u8],
    policy: OnInvalid,
    memory: &Memory,
) -> Option<Judged> {
    let mut read = memory.histories.read(format, path, bytes, Detail::Shape)?;
    // Only the messages past the settled turns are checked again.
    let findings = read.state.check(&read.conv, Some(read.from));
    let refused = findings.iter().any(Finding::rejected_by_provider);
    if refused && matches!(policy, OnInvalid::Repair(_)) {
        return None;
    }
    let verdict = decide(by, format, findings, None, policy, None, &Chain::Starts);
    memory.histories.keep(read, bytes);
    Some(Judged {
        provider: Some(format),
        verdict: Some(verdict),
    })
}

/// The findings for `body` as `format`'s API reads it, against the stored
/// response it continues (Responses).
fn judged(format: Format, body: Value, chain: &Chain) -> Result<Vec<Finding>, ReadError> {
    judged_keeping(format, body, None, chain).map(|(findings, _)| findings)
}

/// [`judged`], with the conversation read when `remembered` (the body's
/// text) is given (but for a Responses request continuing a stored
/// response: its check reads the response it continues, and such a
/// request carries only what is new).
fn judged_keeping(
    format: Format,
    body: Value,
    remembered: Option<&[u8]>,
    chain: &Chain,
) -> Result<(Vec<Finding>, Option<Remembered>), ReadError> {
    let starts = matches!(chain, Chain::Starts);
    match (format, remembered) {
        (Format::Responses, remembered) if !starts || remembered.is_none() => {
            check_continuing(body, chain, Detail::Shape).map(|f| (f, None))
        }
        (_, Some(bytes)) => read_whole(format, body, bytes, Detail::Shape).map(|whole| {
            let mut growing = GrowingCheck::default();
            let findings = growing.check(&whole.conv, None);
            (findings, Some((whole, growing)))
        }),
        (_, None) => read_owned_as(body, Source::Provider(format), Detail::Shape)
            .map(|conv| (check(&conv), None)),
    }
}

/// The 400 for a request the checker could not judge, in `format`'s error
/// shape (so the agent's SDK raises it as it raises the provider's), in
/// loopdbg's words.
pub fn unjudged_body(format: Option<Format>, why: &str, policy: OnInvalid) -> Value {
    unjudged_body_as(Gatekeeper::Proxy, format, why, policy)
}

/// [`unjudged_body`] in the words of `by`.
pub fn unjudged_body_as(
    by: Gatekeeper,
    format: Option<Format>,
    why: &str,
    policy: OnInvalid,
) -> Value {
    let message = format!(
        "{} could not judge this request: {why}. Under {} a request that cannot be judged is not forwarded; {} to let such requests through",
        by.name(),
        by.setting(policy),
        by.let_through()
    );
    match format {
        Some(Format::Anthropic) => json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message}
        }),
        Some(Format::Openai | Format::Responses) => json!({
            "error": {"message": message, "type": "invalid_request_error", "param": null, "code": "loopdbg_unjudged"}
        }),
        Some(Format::Gemini) => json!({
            "error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
        }),
        Some(Format::Bedrock) => bedrock_error(&message),
        None => json!({"error": {"type": "proxy_error", "message": message}}),
    }
}

/// A 400 as `format`'s API writes it, so an agent's error handling sees
/// the shape it knows.
pub fn error_body(format: Format, message: &str) -> Value {
    error_body_as(Gatekeeper::Proxy, format, message)
}

/// [`error_body`] signed by `by`.
pub fn error_body_as(by: Gatekeeper, format: Format, message: &str) -> Value {
    let message = format!(
        "{message} (blocked by {} before it reached the provider)",
        by.name()
    );
    match format {
        Format::Anthropic => json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message}
        }),
        Format::Openai | Format::Responses => json!({
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": null
            }
        }),
        Format::Gemini => json!({
            "error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
        }),
        Format::Bedrock => bedrock_error(&message),
    }
}

/// A provider-shaped 400 as Bedrock Runtime answers it, for a request to
/// Bedrock whose body is another provider's (InvokeModel with Anthropic's
/// Messages body): boto3 and the other AWS SDKs read Bedrock's shape.
pub fn as_bedrock_error(body: &Value) -> Value {
    let message = body
        .pointer("/error/message")
        .or_else(|| body.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("blocked by loopdbg proxy");
    bedrock_error(message)
}

/// Bedrock's `ValidationException` as its REST JSON protocol writes it: the
/// type in `__type` (the SDKs also read the `x-amzn-errortype` header,
/// which the proxy sets), the words in `message`.
fn bedrock_error(message: &str) -> Value {
    json!({"__type": "ValidationException", "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dangling() -> Value {
        json!({"model": "m", "messages": [
            {"role": "user", "content": "weather and fx?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_w1", "name": "w", "input": {}},
                {"type": "tool_use", "id": "toolu_f1", "name": "f", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]}
        ]})
    }

    #[test]
    fn a_valid_request_is_forwarded_under_every_policy() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        for policy in [
            OnInvalid::Forward,
            OnInvalid::Block,
            OnInvalid::Repair(Repair::Strip),
        ] {
            let v = inspect(Format::Anthropic, body.clone(), policy, &Chain::Starts);
            assert_eq!(v.decision, Decision::Forward);
            assert!(v.rejected.is_none());
        }
    }

    #[test]
    fn a_blank_text_block_is_repaired_on_the_way() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"text": "hi"}, {"text": "\n"}]},
            {"role": "assistant", "content": []},
            {"role": "user", "content": [{"text": "again"}]}]});
        let v = inspect(
            Format::Bedrock,
            body,
            OnInvalid::Repair(Repair::Strip),
            &Chain::Starts,
        );
        assert_eq!(v.rejected.map(|f| f.kind.as_str()), Some("blank_text"));
        let Decision::Repaired { body, changes } = v.decision else {
            panic!("{:?}", v.decision);
        };
        assert_eq!(changes, 2);
        assert_eq!(body["messages"][0]["content"], json!([{"text": "hi"}]));
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"text": crate::fix::EMPTY_PLACEHOLDER}])
        );
    }

    #[test]
    fn a_dangling_id_is_blocked_in_the_providers_words() {
        let v = inspect(
            Format::Anthropic,
            dangling(),
            OnInvalid::Block,
            &Chain::Starts,
        );
        let rejected = v.rejected.expect("a 400");
        assert_eq!(rejected.ids, ["toolu_f1"]);
        let Decision::Block { status, body } = v.decision else {
            panic!("blocked")
        };
        assert_eq!(status, 400);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        // Anthropic's own words open with the place, spelled as it does.
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1."
            ),
            "{message}"
        );
        let bad_id = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call:1", "name": "w", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call:1", "content": "24"}]}
        ]});
        let v = inspect(Format::Anthropic, bad_id, OnInvalid::Block, &Chain::Starts);
        let Decision::Block { body, .. } = v.decision else {
            panic!("blocked")
        };
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("messages.1.content.0.id: String should match pattern"),
            "{message}"
        );
    }

    /// A token count of the same broken history, or of a body that is not
    /// JSON at all, goes through under every policy: token counts are not
    /// conversations (docs/live.md says so); the message route is blocked.
    #[test]
    fn token_counts_are_always_forwarded() {
        let bytes = dangling().to_string();
        let store = Memory::default();
        for policy in [OnInvalid::Block, OnInvalid::Repair(Repair::Synthesize)] {
            for (path, body) in [
                ("/v1/messages/count_tokens", bytes.as_bytes()),
                (
                    "/v1/messages/count_tokens?beta=true",
                    b"not json".as_slice(),
                ),
                (
                    "/v1beta/models/gemini-2.5-pro:countTokens",
                    b"{}".as_slice(),
                ),
            ] {
                let judged = judge(path, body, policy, OnUnjudged::Block, &store);
                assert!(judged.verdict.is_none(), "{path} under {policy}");
            }
            let judged = judge(
                "/v1/messages",
                bytes.as_bytes(),
                policy,
                OnUnjudged::Block,
                &store,
            );
            assert!(
                judged
                    .verdict
                    .is_some_and(|v| v.decision != Decision::Forward)
            );
        }
    }

    #[test]
    fn a_repaired_request_passes_the_check() {
        let v = inspect(
            Format::Anthropic,
            dangling(),
            OnInvalid::Repair(Repair::Synthesize),
            &Chain::Starts,
        );
        let Decision::Repaired { body, changes } = v.decision else {
            panic!("repaired")
        };
        assert_eq!(changes, 1);
        let again = inspect(
            Format::Anthropic,
            body.clone(),
            OnInvalid::Block,
            &Chain::Starts,
        );
        assert!(again.rejected.is_none(), "{:?}", again.findings);
    }

    #[test]
    fn policies_print_as_the_flag_spells_them() {
        for spelled in ["forward", "block", "repair=synthesize", "repair=strip"] {
            let policy: OnInvalid = spelled.parse().unwrap();
            assert_eq!(policy.to_string(), spelled);
        }
    }

    #[test]
    fn policies_parse_as_the_flag_spells_them() {
        assert_eq!("block".parse(), Ok(OnInvalid::Block));
        assert_eq!("repair=strip".parse(), Ok(OnInvalid::Repair(Repair::Strip)));
        assert!("repair=x".parse::<OnInvalid>().is_err());
        assert!("drop".parse::<OnInvalid>().is_err());
    }

    #[test]
    fn each_provider_gets_its_own_error_shape() {
        assert_eq!(
            error_body(Format::Openai, "x")["error"]["type"],
            "invalid_request_error"
        );
        assert_eq!(
            error_body(Format::Gemini, "x")["error"]["status"],
            "INVALID_ARGUMENT"
        );
    }
}

#[cfg(test)]
mod gatekeeper_tests {
    use super::*;

    #[test]
    fn the_guard_signs_its_refusals_in_its_own_words() {
        let body = serde_json::json!({"model": "m", "messages": [
            {"role": "user", "content": "w?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_g1", "name": "w", "input": {}}]},
            {"role": "user", "content": "and?"}]});
        let v = inspect_as(
            Gatekeeper::Guard,
            Format::Anthropic,
            body,
            OnInvalid::Block,
            &Chain::Starts,
        );
        let Decision::Block { body, .. } = v.decision else {
            panic!("blocked")
        };
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.ends_with("(blocked by loopdbg guard before it reached the provider)"));
        let unjudged = unjudged_body_as(
            Gatekeeper::Guard,
            Some(Format::Openai),
            "not JSON",
            OnInvalid::Block,
        );
        let words = unjudged["error"]["message"].as_str().unwrap();
        assert!(
            words.contains("Under mode \"raise\"") && words.contains("on_unjudged=\"forward\"")
        );
    }

    /// Every policy a gate can run under.
    const EVERY_POLICY: [OnInvalid; 4] = [
        OnInvalid::Forward,
        OnInvalid::Block,
        OnInvalid::Repair(Repair::Synthesize),
        OnInvalid::Repair(Repair::Strip),
    ];

    /// `session`'s requests to `path`, judged in order under each of
    /// `policies` by a gate that remembers conversations (reading most
    /// past the one before) and by one that remembers none: the same
    /// verdict for every request, word for word. Which requests were
    /// refused, under each policy.
    fn judged_alike_remembered_or_not(
        path: &str,
        session: &[Vec<u8>],
        policies: &[OnInvalid],
    ) -> Vec<Vec<bool>> {
        let words = |v: &Verdict| {
            format!(
                "{:?} {:?} {:?} {:?}",
                v.findings, v.rejected, v.decision, v.unread
            )
        };
        policies
            .iter()
            .map(|&policy| {
                let remembering = Memory::default();
                let whole = Memory::new(0);
                let judged = |request: &[u8], memory: &Memory| {
                    judge(path, request, policy, OnUnjudged::Block, memory)
                        .verdict
                        .unwrap()
                };
                session
                    .iter()
                    .enumerate()
                    .map(|(k, request)| {
                        let (got, want) = (judged(request, &remembering), judged(request, &whole));
                        assert_eq!(words(&got), words(&want), "request {k} under {policy}");
                        want.rejected.is_some()
                    })
                    .collect()
            })
            .collect()
    }

    /// An agent's session through the gate, as an agent goes: a request,
    /// one with a call left unanswered (refused), the same retried, the
    /// history mended, and on. Every request judged with the conversations
    /// remembered (most read only past the last request's messages) gets
    /// the verdict it gets judged whole, under every policy.
    #[test]
    fn requests_read_past_their_prefix_get_the_verdict_they_get_read_whole() {
        let user = json!({"role": "user", "content": "weather and fx?"});
        let calls = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_w1", "name": "w", "input": {}},
            {"type": "tool_use", "id": "toolu_f1", "name": "f", "input": {}}]});
        let one = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"}]});
        let both = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "24"},
            {"type": "tool_result", "tool_use_id": "toolu_f1", "content": "7.12"}]});
        let answer =
            json!({"role": "assistant", "content": [{"type": "text", "text": "24 and 7.12"}]});
        let again = json!({"role": "user", "content": "and tomorrow?"});
        // As Claude Code sends them: the last two messages marked for the
        // prompt cache, so each request differs from the last one two
        // messages before its end (read from there, not whole).
        let body = |messages: Vec<&Value>| {
            let n = messages.len();
            let marked: Vec<Value> = messages
                .into_iter()
                .enumerate()
                .map(|(i, m)| {
                    let mut m = m.clone();
                    if i + 2 >= n
                        && let Some(Value::Array(blocks)) = m.get_mut("content")
                        && let Some(last) = blocks.last_mut()
                    {
                        last["cache_control"] = json!({"type": "ephemeral"});
                    }
                    m
                })
                .collect();
            serde_json::to_vec(&json!({"model": "m", "messages": marked, "max_tokens": 64}))
                .unwrap()
        };
        let session = [
            body(vec![&user]),
            body(vec![&user, &calls]),
            body(vec![&user, &calls, &one]),
            body(vec![&user, &calls, &one]),
            body(vec![&user, &calls, &both]),
            body(vec![&user, &calls, &both, &answer, &again]),
            body(vec![&user, &calls, &both, &answer, &again, &calls]),
            body(vec![&user, &calls, &both, &answer, &again, &calls, &one]),
        ];
        let refused = judged_alike_remembered_or_not("/v1/messages", &session, &EVERY_POLICY);
        // The refusals are where the session says (a request ending on
        // the assistant's calls is refused as well: it would prefill them).
        assert_eq!(
            refused[1],
            [false, true, true, true, false, false, true, true]
        );
    }

    /// A Codex session through the gate (Responses, the whole history as
    /// `input` every time): reasoning with its calls, a call sent without
    /// its output (refused), sent again, mended, and on; and a request
    /// continuing a stored response, which is never read past a prefix.
    /// Each gets, under every policy, the verdict it gets judged whole.
    #[test]
    fn a_codex_session_read_past_its_prefix_gets_the_verdicts_read_whole() {
        let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]});
        let reasoning =
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"});
        let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "shell", "arguments": "{\"command\":[\"ls\"]}"});
        let output =
            |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "ok"});
        let answer = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]});
        let body = |input: Vec<Value>| {
            serde_json::to_vec(&json!({"model": "gpt-5-codex", "instructions": "You are Codex.",
                "input": input, "tools": [{"type": "function", "name": "shell"}], "store": false, "stream": true}))
            .unwrap()
        };
        let session = [
            body(vec![user.clone()]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
            ]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
            ]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
                output("c2"),
            ]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
                output("c2"),
                answer.clone(),
                user.clone(),
            ]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
                output("c2"),
                answer.clone(),
                user.clone(),
                reasoning.clone(),
            ]),
            body(vec![
                user.clone(),
                reasoning.clone(),
                call("c1"),
                call("c2"),
                output("c1"),
                output("c2"),
                answer.clone(),
                user.clone(),
                reasoning,
                call("c3"),
                output("c3"),
            ]),
            serde_json::to_vec(
                &json!({"model": "gpt-5-codex", "previous_response_id": "resp_1",
                "input": [output("c9")], "store": true}),
            )
            .unwrap(),
        ];
        let refused = judged_alike_remembered_or_not("/v1/responses", &session, &EVERY_POLICY);
        // Refused: c2 sent without its output (twice), and the request
        // ending on a reasoning item without the item it came with; the
        // one continuing a response not seen here gets a note only.
        assert_eq!(
            refused[1],
            [false, true, true, false, false, true, false, false]
        );
    }

    /// A Gemini CLI session through the gate (its whole history as
    /// `contents` every time): parallel calls without ids, one answered
    /// (refused: Gemini counts the responses), retried, both answered,
    /// on, and the last response mended to a shorter one. Each gets,
    /// under every policy, the verdict it gets judged whole.
    #[test]
    fn a_gemini_cli_session_read_past_its_prefix_gets_the_verdicts_read_whole() {
        let user = json!({"role": "user", "parts": [{"text": "read both"}]});
        let calls = json!({"role": "model", "parts": [
            {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "read_file", "args": {"path": "b"}}}]});
        let response = |text: &str| json!({"functionResponse": {"name": "read_file", "response": {"output": text}}});
        let one = json!({"role": "user", "parts": [response("A")]});
        let both =
            json!({"role": "user", "parts": [response("A"), response("B, a longer answer")]});
        let short = json!({"role": "user", "parts": [response("A"), response("B")]});
        let answer = json!({"role": "model", "parts": [{"text": "done"}]});
        let body = |contents: Vec<&Value>| {
            serde_json::to_vec(&json!({"contents": contents,
                "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
                "tools": [{"functionDeclarations": [{"name": "read_file"}]}],
                "generationConfig": {"temperature": 0}}))
            .unwrap()
        };
        let session = [
            body(vec![&user]),
            body(vec![&user, &calls, &one]),
            body(vec![&user, &calls, &one]),
            body(vec![&user, &calls, &both]),
            body(vec![&user, &calls, &both, &answer, &user]),
            body(vec![&user, &calls, &short, &answer, &user]),
        ];
        let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
        let refused = judged_alike_remembered_or_not(path, &session, &EVERY_POLICY);
        assert_eq!(refused[1], [false, true, true, false, false, false]);
    }

    /// An agent that mends its history by taking a call out of an early
    /// message (as `--on-invalid repair=strip` does to a call left
    /// without its result) after the gate settled the turns around it,
    /// then makes a call with that id again, its arguments not JSON: each
    /// request is judged as read whole. The settled calls' places pointed
    /// past the mended message's blocks, and looking the note's id up in
    /// them panicked the gate (found by the `prefix` fuzz target).
    #[test]
    fn a_call_taken_out_of_a_settled_message_is_judged_as_read_whole() {
        let call = |id: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Oslo\"}"}}]})
        };
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "18"});
        let body = |messages: &[Value]| {
            serde_json::to_vec(&json!({"model": "m", "tools": [{"type": "function", "function": {
                "name": "w", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
                "messages": messages}))
            .unwrap()
        };
        let mut history = vec![json!({"role": "user", "content": "weather, hour by hour"})];
        let mut session = Vec::new();
        for k in 0..3 {
            let id = format!("c{k}");
            history.push(call(&id));
            history.push(result(&id));
            session.push(body(&history));
        }
        // The second call taken out of its message (settled, and within
        // the four messages a request is read back from), and its id made
        // again with arguments that are not JSON (a note on a settled
        // call's id: what looked the places up).
        let mut stripped = history.clone();
        stripped[3] = json!({"role": "assistant", "content": null});
        let mut again = call("c1");
        again["tool_calls"][0]["function"]["arguments"] = json!("{\"city\":");
        stripped.push(again);
        stripped.push(result("c1"));
        session.push(body(&stripped));
        judged_alike_remembered_or_not("/v1/chat/completions", &session, &EVERY_POLICY);
    }

    /// A Chat agent's long session as a gateway sees it: turns settle
    /// (the check keeps them), an id is reused far back with arguments
    /// that are not JSON, a call breaks its schema, one turn's call is
    /// sent without its result (refused), and the agent mends it by
    /// inserting the result where it belongs and goes on. Each request
    /// gets, under each policy, the verdict it gets read whole.
    #[test]
    fn a_long_chat_session_with_a_refusal_mended_gets_the_verdicts_read_whole() {
        let call = |id: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "18°C"});
        let mut history = vec![json!({"role": "user", "content": "weather, hour by hour"})];
        let mut session = Vec::new();
        let body = |history: &[Value]| {
            serde_json::to_vec(&json!({
                "model": "gpt-4o",
                "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
                "messages": history,
                "stream": true,
            }))
            .unwrap()
        };
        for t in 0..30 {
            let id = match t {
                3 | 20 => "call_again".to_string(),
                _ => format!("call_{t}"),
            };
            let arguments = match t {
                3 => r#"{"town": 3}"#,
                20 => r#"{"city":"#,
                9 => r#"{"city": 9}"#,
                _ => r#"{"city": "Oslo"}"#,
            };
            history.push(
                json!({"role": "assistant", "content": null, "tool_calls": [call(&id, arguments)]}),
            );
            if t == 14 {
                // Sent on without the result: refused. Then mended, the
                // result put back after its call.
                history.push(json!({"role": "user", "content": "go on"}));
                session.push(body(&history));
                let at = history.len() - 1;
                history.insert(at, result(&id));
            } else {
                history.push(result(&id));
            }
            session.push(body(&history));
        }
        let policies = &EVERY_POLICY[..3];
        let refused = judged_alike_remembered_or_not("/v1/chat/completions", &session, policies);
        for (policy, refused) in policies.iter().zip(refused) {
            let count = refused.iter().filter(|&&r| r).count();
            assert_eq!(count, 1, "under {policy}");
        }
    }
}
