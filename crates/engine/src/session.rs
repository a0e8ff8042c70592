//! The stub scenario a user writes: prompt, tools with local lookup tables,
//! a scripted model, and the strategy the file opens with.
//!
//! This module owns the file format (documented in `docs/session-format.md`
//! and published as a JSON Schema by [`crate::schema`]) and its validation.
//! Parsing takes text, never a path: reading files is the caller's job.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostics::error::LoadError;
use crate::diagnostics::json_span::{PathSeg, SpanNode, offset_of_line_byte_col};
use crate::json_path;
use crate::strategy::{Closure, DEFAULT_MAX_ROUNDS, Extract, StopRule, Strategy};

// The message model's values and the strategy's limits, where a session
// file's readers have always found them.
pub use crate::message::{FinishReason, Json, Reply, Text, ToolCall};
pub use crate::strategy::{Interrupt, MAX_ROUNDS_LIMIT};

/// The most tools a session may define.
pub const MAX_TOOLS: usize = 100_000;

/// The most calls one scripted reply may make.
pub const MAX_CALLS_PER_REPLY: usize = 10_000;

/// The most calls a run may make: the round limit times the widest reply.
/// Every call is recorded, so this bounds a run's memory.
pub const MAX_CALLS_PER_RUN: u64 = 200_000;

/// The longest virtual time a latency or timeout may name (a day).
pub const MAX_TIME_MS: u64 = 86_400_000;

/// A loaded, validated session.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// A short title for headers and tables.
    #[serde(default)]
    pub title: String,
    /// The user's prompt, the first message of the history.
    pub user: String,
    /// An optional system prompt, sent beside the messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The tools offered to the model, each backed by a local lookup table.
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// Named stub-model behaviors, in file order; each is a list of rules.
    pub model: IndexMap<String, Vec<Rule>>,
    /// The strategy the session opens with.
    #[serde(default)]
    pub strategy: StrategyDefaults,
    /// How local execution behaves.
    #[serde(default, skip_serializing_if = "ExecutorConfig::is_default")]
    pub executor: ExecutorConfig,
    /// Faults the run suffers.
    #[serde(default, skip_serializing_if = "Faults::is_empty")]
    pub faults: Faults,
    /// Show seed 003's walkthrough of the two trips of one call (four steps,
    /// three logs) in the debugger; other sessions show the loop's code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub walkthrough: bool,
}

/// How local execution behaves.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// A per-call timeout in virtual milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ExecutorConfig {
    fn is_default(&self) -> bool {
        *self == ExecutorConfig::default()
    }
}

/// Faults written into a session.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// The user interrupts during a round's execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<Interrupt>,
    /// The reply stream breaks and the loop falls back to a non-streaming retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
}

impl Faults {
    fn is_empty(&self) -> bool {
        *self == Faults::default()
    }
}

/// A streaming failure: in round `round` the stream breaks after
/// `after_calls` tool_use blocks arrived, `at_ms` after they started running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// 1-based round.
    pub round: u32,
    /// How many tool_use blocks arrived before the stream broke.
    #[serde(default = "one")]
    pub after_calls: usize,
    /// When the stream broke, in virtual milliseconds.
    #[serde(default)]
    pub at_ms: u64,
}

fn one() -> usize {
    1
}

/// A tool definition plus its local implementation (a lookup table).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The name the model calls it by.
    pub name: String,
    /// One sentence for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of the arguments, as sent to the model.
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// Rows of `args` → `result`; the first row whose `args` equal the call's wins.
    #[serde(default)]
    pub table: Vec<TableRow>,
    /// What comes back (as an error result) when no row matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss: Option<Json>,
    /// Virtual time a call takes, in milliseconds (calls of a turn run concurrently).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_ms: u64,
    /// When set, every call fails with this error text after its latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fails: Option<String>,
    /// A failure that cancels the other calls of its turn (a sibling error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hard: bool,
    /// This tool's timeout; overrides `executor.timeout_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A nested session run as a sub-agent, by path (relative to this file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// With `agent`: launch the sub-agent in the background; the parent gets
    /// `{"status": "async_launched"}` at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The loaded sub-agent session; the loader fills it, the engine runs it.
    #[serde(skip)]
    pub agent_session: Option<AgentSession>,
}

impl ToolDef {
    /// A tool with a name and argument schema (`{"type": "object"}` when
    /// none is given) and nothing else: no table, no faults.
    pub fn named(name: &str, parameters: Option<serde_json::Value>) -> ToolDef {
        ToolDef {
            name: name.to_string(),
            description: String::new(),
            parameters: parameters.unwrap_or_else(|| serde_json::json!({"type": "object"})),
            table: Vec::new(),
            miss: None,
            latency_ms: 0,
            fails: None,
            hard: false,
            timeout_ms: None,
            agent: None,
            background: false,
            agent_session: None,
        }
    }
}

/// A loaded sub-agent session, shared by every tool that names its file.
/// Its run is the executor's to record (once per run of the parent): the
/// session is what the file says, never what a run made of it.
#[derive(Debug, Clone)]
pub struct AgentSession {
    /// The child session.
    pub session: std::sync::Arc<Session>,
}

impl AgentSession {
    /// Wraps a loaded child session.
    pub fn new(session: Session) -> AgentSession {
        AgentSession {
            session: std::sync::Arc::new(session),
        }
    }
}

impl PartialEq for AgentSession {
    fn eq(&self, other: &Self) -> bool {
        self.session == other.session
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// One row of a tool's lookup table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    /// The arguments this row answers, compared as JSON values.
    pub args: Value,
    /// What the function returns for them.
    pub result: Json,
}

/// One rule of a stub-model behavior: the first rule whose `when` holds replies.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Conditions on the request; all must hold. Absent means always.
    #[serde(default)]
    pub when: When,
    /// The reply the stub gives.
    pub reply: Reply,
}

/// Conditions a rule checks against the request being answered.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// 1-based model call number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Each named tool has some call in the history without a result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Each named tool has some call in the history with a result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<String>,
}

impl When {
    /// True when the rule has no condition at all and so always matches.
    pub fn is_always(&self) -> bool {
        self.round.is_none() && self.missing.is_empty() && self.answered.is_empty()
    }
}

/// The strategy a session opens with; every field may be overridden.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StrategyDefaults {
    /// How calls are taken from a reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<Extract>,
    /// When the loop stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopRule>,
    /// The round limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
    /// Which stub behavior replies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
    /// What happens to calls left without a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closure: Option<crate::strategy::Closure>,
}

impl Session {
    /// Parses and validates a session. `origin` names the text in errors.
    pub fn parse(origin: &str, text: &str) -> Result<Session, LoadError> {
        // serde accepts a struct written as an array; a session never is one.
        let first = text.len() - text.trim_start().len();
        if let Some(c) = text[first..].chars().next()
            && c != '{'
        {
            return Err(LoadError::at(
                origin,
                text,
                first,
                "expected a session object `{ \"user\": ..., \"model\": ... }` at the top level",
            ));
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let session: Session = match serde_path_to_error::deserialize(&mut de) {
            Ok(s) => s,
            Err(err) => {
                let path = err.path().to_string();
                let inner = err.into_inner();
                let offset = offset_of_line_byte_col(text, inner.line(), inner.column());
                let mut message = strip_position(&inner.to_string());
                if path != "." && !path.is_empty() && !inner.is_syntax() && !inner.is_eof() {
                    message = format!("{path}: {message}");
                }
                return Err(LoadError::at(origin, text, offset, message));
            }
        };
        // Whatever follows the session object is a mistake (a second object
        // pasted in, a stray line): located, not ignored.
        if let Err(inner) = de.end() {
            let offset = offset_of_line_byte_col(text, inner.line(), inner.column());
            return Err(LoadError::at(
                origin,
                text,
                offset,
                "unexpected text after the session object (a file holds one session)",
            ));
        }
        let spans = SpanNode::parse(text)
            .ok_or_else(|| LoadError::at(origin, text, 0, "the file is not well-formed JSON"))?;
        let check = Checker {
            origin,
            text,
            spans: &spans,
        };
        check.session(&session)?;
        let mut session = session;
        session.resolve_raw_arguments();
        Ok(session)
    }

    /// Loads every sub-agent session named by a tool's `agent`, recursively,
    /// with `load` (the caller does the I/O: it gets the path as written in
    /// the file that names it, and the nesting depth).
    ///
    /// A file named several times (by several tools or several parents) is
    /// loaded once and shared, so a fan-out of sub-agents costs what its
    /// distinct files cost.
    pub fn resolve_agents(
        &mut self,
        depth: usize,
        load: &mut dyn FnMut(&str, usize) -> Result<Session, LoadError>,
    ) -> Result<(), LoadError> {
        self.resolve_agents_with(depth, load, &mut std::collections::HashMap::new())
    }

    fn resolve_agents_with(
        &mut self,
        depth: usize,
        load: &mut dyn FnMut(&str, usize) -> Result<Session, LoadError>,
        loaded: &mut std::collections::HashMap<String, AgentSession>,
    ) -> Result<(), LoadError> {
        for tool in &mut self.tools {
            if let Some(path) = &tool.agent {
                let agent = match loaded.get(path) {
                    Some(agent) => agent.clone(),
                    None => {
                        let mut child = load(path, depth + 1)?;
                        child.resolve_agents_with(depth + 1, load, loaded)?;
                        let agent = AgentSession::new(child);
                        loaded.insert(path.clone(), agent.clone());
                        agent
                    }
                };
                tool.agent_session = Some(agent);
            }
        }
        Ok(())
    }

    /// Parses each call's raw `arguments` string into `args`.
    fn resolve_raw_arguments(&mut self) {
        for rules in self.model.values_mut() {
            for rule in rules {
                for call in &mut rule.reply.tool_calls {
                    if let Some(raw) = &call.arguments {
                        call.args = Json::new(
                            serde_json::from_str(raw)
                                .unwrap_or_else(|_| Value::String(raw.clone())),
                        );
                    }
                }
            }
        }
    }

    /// The most calls any scripted reply makes.
    pub fn widest_reply(&self) -> usize {
        self.model
            .values()
            .flatten()
            .map(|r| r.reply.tool_calls.len())
            .max()
            .unwrap_or(0)
    }

    /// The tool definition called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The behavior the session opens with: `strategy.behavior`, else the first.
    pub fn default_behavior(&self) -> &str {
        self.strategy
            .behavior
            .as_deref()
            .or_else(|| self.model.keys().next().map(String::as_str))
            .unwrap_or("")
    }

    /// The behavior names in file order.
    pub fn behavior_names(&self) -> impl Iterator<Item = &str> {
        self.model.keys().map(String::as_str)
    }
}

/// serde_json appends " at line L column C"; we print our own location.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

struct Checker<'a> {
    origin: &'a str,
    text: &'a str,
    spans: &'a SpanNode,
}

impl Checker<'_> {
    fn err_at(&self, path: &[PathSeg], message: impl Into<String>) -> LoadError {
        LoadError::at(self.origin, self.text, self.spans.offset_of(path), message)
    }

    fn session(&self, s: &Session) -> Result<(), LoadError> {
        let mut first_of: std::collections::HashMap<&str, usize> =
            std::collections::HashMap::with_capacity(s.tools.len());
        for (i, tool) in s.tools.iter().enumerate() {
            let path = json_path!["tools", i];
            if tool.name.trim().is_empty() {
                return Err(self.err_at(
                    &[path.clone(), json_path!["name"]].concat(),
                    "tools[].name: expected a non-empty tool name",
                ));
            }
            if let Some(&first) = first_of.get(tool.name.as_str()) {
                return Err(self.err_at(
                    &[path, json_path!["name"]].concat(),
                    format!(
                        "duplicate tool name `{}` (already defined as tools[{first}])",
                        tool.name
                    ),
                ));
            }
            first_of.insert(&tool.name, i);
            if !tool.parameters.is_object() {
                return Err(self.err_at(
                    &[path, json_path!["parameters"]].concat(),
                    format!(
                        "tools[{i}].parameters: expected a JSON Schema object, found {}",
                        kind_of(&tool.parameters)
                    ),
                ));
            }
        }
        self.duplicate_keys(&json_path!["model"], "behavior")?;
        if s.model.is_empty() {
            return Err(self.err_at(
                &json_path!["model"],
                "model: expected at least one stub behavior, e.g. {\"script\": [ {\"reply\": {...}} ]}",
            ));
        }
        for (name, rules) in &s.model {
            let path = json_path!["model", name.as_str()];
            if rules.is_empty() {
                return Err(self.err_at(&path, format!("model.{name}: expected at least one rule")));
            }
            for (r, rule) in rules.iter().enumerate() {
                let when = [path.clone(), json_path![r, "when"]].concat();
                if rule.when.round == Some(0) {
                    return Err(self.err_at(
                        &[when.clone(), json_path!["round"]].concat(),
                        format!("model.{name}[{r}].when.round: rounds count from 1, found 0"),
                    ));
                }
                for (key, names) in [
                    ("missing", &rule.when.missing),
                    ("answered", &rule.when.answered),
                ] {
                    for (k, tool) in names.iter().enumerate() {
                        if s.tool(tool).is_none() {
                            return Err(self.err_at(
                                &[when.clone(), json_path![key, k]].concat(),
                                format!(
                                    "model.{name}[{r}].when.{key}: `{tool}` is not a tool this session defines (expected one of: {})",
                                    tool_list(s)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(b) = &s.strategy.behavior
            && !s.model.contains_key(b)
        {
            return Err(self.err_at(
                &json_path!["strategy", "behavior"],
                format!(
                    "strategy.behavior: `{b}` is not a behavior under `model` (expected one of: {})",
                    s.model.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if let Some(n) = s.strategy.max_rounds
            && !(1..=MAX_ROUNDS_LIMIT).contains(&n)
        {
            return Err(self.err_at(
                &json_path!["strategy", "max_rounds"],
                format!(
                    "strategy.max_rounds: expected a number from 1 to {MAX_ROUNDS_LIMIT}, found {n}"
                ),
            ));
        }
        self.limits(s)
    }

    /// The documented limits that keep a run's cost near-linear in its file.
    fn limits(&self, s: &Session) -> Result<(), LoadError> {
        if s.tools.len() > MAX_TOOLS {
            return Err(self.err_at(
                &json_path!["tools", MAX_TOOLS],
                format!(
                    "tools: {} tools, more than the {MAX_TOOLS} a session may define",
                    s.tools.len()
                ),
            ));
        }
        for (i, tool) in s.tools.iter().enumerate() {
            for (field, value) in [
                ("latency_ms", Some(tool.latency_ms)),
                ("timeout_ms", tool.timeout_ms),
            ] {
                if let Some(v) = value.filter(|v| *v > MAX_TIME_MS) {
                    return Err(self.err_at(
                        &json_path!["tools", i, field],
                        format!("tools[{i}].{field}: {v} ms is longer than a day ({MAX_TIME_MS} ms), the longest virtual time loopdbg models"),
                    ));
                }
            }
        }
        let fault_times = [
            ("interrupt", s.faults.interrupt.map(|i| i.at_ms)),
            ("fallback", s.faults.fallback.map(|f| f.at_ms)),
        ];
        for (fault, at) in fault_times {
            if let Some(v) = at.filter(|v| *v > MAX_TIME_MS) {
                return Err(self.err_at(
                    &json_path!["faults", fault, "at_ms"],
                    format!("faults.{fault}.at_ms: {v} ms is later than a day ({MAX_TIME_MS} ms)"),
                ));
            }
        }
        if let Some(v) = s.executor.timeout_ms.filter(|v| *v > MAX_TIME_MS) {
            return Err(self.err_at(
                &json_path!["executor", "timeout_ms"],
                format!("executor.timeout_ms: {v} ms is longer than a day ({MAX_TIME_MS} ms)"),
            ));
        }
        for (behavior, rules) in &s.model {
            for (r, rule) in rules.iter().enumerate() {
                let n = rule.reply.tool_calls.len();
                if n > MAX_CALLS_PER_REPLY {
                    return Err(self.err_at(
                        &json_path!["model", behavior.as_str(), r, "reply", "tool_calls"],
                        format!(
                            "model.{behavior}[{r}].reply.tool_calls: {n} calls, more than the {MAX_CALLS_PER_REPLY} one reply may make"
                        ),
                    ));
                }
            }
        }
        let rounds = s.strategy.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS);
        let calls = u64::from(rounds) * s.widest_reply() as u64;
        if calls > MAX_CALLS_PER_RUN {
            return Err(self.err_at(
                &json_path!["strategy", "max_rounds"],
                format!(
                    "strategy.max_rounds: {rounds} rounds of up to {} calls could make {calls} calls, more than the {MAX_CALLS_PER_RUN} a run may make",
                    s.widest_reply()
                ),
            ));
        }
        Ok(())
    }

    /// serde_json keeps the last of two equal keys in a map; a session with
    /// two behaviors of one name is a mistake worth stopping on.
    fn duplicate_keys(&self, path: &[PathSeg], what: &str) -> Result<(), LoadError> {
        if let Some(node) = self.spans.get(path)
            && let crate::diagnostics::json_span::SpanKind::Object(members) = &node.kind
        {
            let mut seen = std::collections::HashSet::with_capacity(members.len());
            for m in members {
                if !seen.insert(m.key.as_str()) {
                    return Err(LoadError::at(
                        self.origin,
                        self.text,
                        m.key_start,
                        format!("duplicate {what} name `{}`", m.key),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn tool_list(s: &Session) -> String {
    if s.tools.is_empty() {
        "none defined".to_string()
    } else {
        s.tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Strategy {
    /// The strategy the session opens with, from its `strategy` block and the
    /// documented defaults (`all`, `robust`, 8 rounds, first behavior).
    pub fn for_session(session: &Session) -> Strategy {
        Strategy {
            extract: session.strategy.extract.unwrap_or(Extract::All),
            stop: session.strategy.stop.unwrap_or(StopRule::Robust),
            max_rounds: session
                .strategy
                .max_rounds
                .unwrap_or(DEFAULT_MAX_ROUNDS)
                .clamp(1, MAX_ROUNDS_LIMIT),
            behavior: session.default_behavior().to_string(),
            closure: session.strategy.closure.unwrap_or(Closure::Leave),
            interrupt: session.faults.interrupt,
        }
    }

    /// The session's opening strategy with `chosen` applied (the command
    /// line's flags), or what is wrong with a choice, in the flag's name.
    pub fn chosen(session: &Session, chosen: &Choice) -> Result<Strategy, String> {
        let mut s = Strategy::for_session(session);
        s.extract = chosen.extract.unwrap_or(s.extract);
        s.stop = chosen.stop.unwrap_or(s.stop);
        s.closure = chosen.closure.unwrap_or(s.closure);
        if let Some(n) = chosen.max_rounds {
            s.max_rounds = rounds(n)?;
            let calls = u64::from(n) * session.widest_reply() as u64;
            if calls > MAX_CALLS_PER_RUN {
                return Err(format!(
                    "--max-rounds: {n} rounds of up to {} calls could make {calls} calls, more than the {MAX_CALLS_PER_RUN} a run may make",
                    session.widest_reply()
                ));
            }
        }
        if let Some(b) = &chosen.behavior {
            if !session.model.contains_key(b) {
                return Err(format!(
                    "--behavior: `{b}` is not a behavior of this session (expected one of: {})",
                    session.behavior_names().collect::<Vec<_>>().join(", ")
                ));
            }
            s.behavior = b.clone();
        }
        Ok(s)
    }
}

/// A round limit someone asked for, when it is one a run may have.
pub fn rounds(n: u32) -> Result<u32, String> {
    match (1..=MAX_ROUNDS_LIMIT).contains(&n) {
        true => Ok(n),
        false => Err(format!(
            "--max-rounds: expected a number from 1 to {MAX_ROUNDS_LIMIT}, found {n}"
        )),
    }
}

/// What a user chose over the session's opening strategy (the command
/// line's flags); `None` keeps the session's.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// How calls are taken from a reply.
    pub extract: Option<Extract>,
    /// When the loop stops.
    pub stop: Option<StopRule>,
    /// Which behavior of the stub replies.
    pub behavior: Option<String>,
    /// The round limit.
    pub max_rounds: Option<u32>,
    /// What happens to calls left without a result.
    pub closure: Option<Closure>,
}

impl std::str::FromStr for Choice {
    type Err = String;

    /// `key=value` pairs separated by commas (`extract=first,stop=content`;
    /// empty for none): the keys are the flags' names.
    fn from_str(s: &str) -> Result<Choice, String> {
        let mut choice = Choice::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}`: expected key=value"))?;
            match key.trim() {
                "extract" => choice.extract = Some(value.parse()?),
                "stop" => choice.stop = Some(value.parse()?),
                "closure" => choice.closure = Some(value.parse()?),
                "behavior" | "model" => choice.behavior = Some(value.to_string()),
                "max-rounds" | "max_rounds" | "rounds" => {
                    let n = value.parse();
                    choice.max_rounds =
                        Some(n.map_err(|_| {
                            format!("max-rounds: expected a number, found `{value}`")
                        })?);
                }
                other => {
                    return Err(format!(
                        "unknown key `{other}` (expected extract, stop, behavior, max-rounds, closure)"
                    ));
                }
            }
        }
        Ok(choice)
    }
}

impl Choice {
    /// Whether anything was chosen.
    pub fn is_empty(&self) -> bool {
        self.extract.is_none()
            && self.stop.is_none()
            && self.behavior.is_none()
            && self.max_rounds.is_none()
            && self.closure.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{
  "title": "t",
  "user": "hi",
  "tools": [{"name": "get_weather", "table": [{"args": {"city": "北京"}, "result": {"temp_c": 18}}]}],
  "model": {"script": [{"reply": {"text": "ok"}}]}
}"#;

    #[test]
    fn minimal_session_loads_with_defaults() {
        let s = Session::parse("m.json", MINIMAL).unwrap();
        assert_eq!(s.default_behavior(), "script");
        assert_eq!(s.tools[0].parameters["type"], "object");
        assert_eq!(
            s.model["script"][0].reply.finish_reason(),
            FinishReason::Stop
        );
    }

    fn error_of(text: &str) -> (usize, usize, String) {
        let err = Session::parse("bad.json", text).unwrap_err();
        let (line, col) = err.location().expect("located");
        (line, col, err.to_string())
    }

    #[test]
    fn unknown_key_is_located() {
        let text = MINIMAL.replace("\"title\": \"t\"", "\"titel\": \"t\"");
        let (line, _, msg) = error_of(&text);
        assert_eq!(line, 2);
        assert!(msg.starts_with("bad.json:2:"), "{msg}");
        assert!(msg.contains("unknown field `titel`"), "{msg}");
    }

    #[test]
    fn duplicate_tool_is_located_at_the_second_name() {
        let text = MINIMAL.replace(
            "\"tools\": [",
            "\"tools\": [{\"name\": \"get_weather\"},\n    ",
        );
        let (line, col, msg) = error_of(&text);
        assert_eq!((line, col), (5, 14), "{msg}");
        assert!(msg.contains("duplicate tool name `get_weather`"), "{msg}");
    }

    #[test]
    fn when_naming_an_undefined_tool_is_an_error() {
        let text = MINIMAL.replace(
            "{\"reply\": {\"text\": \"ok\"}}",
            "{\"when\": {\"missing\": [\"nope\"]}, \"reply\": {\"text\": \"ok\"}}",
        );
        let (_, _, msg) = error_of(&text);
        assert!(
            msg.contains("`nope` is not a tool this session defines"),
            "{msg}"
        );
    }

    #[test]
    fn duplicate_behavior_is_an_error() {
        let text = MINIMAL.replace(
            "\"model\": {",
            "\"model\": {\"script\": [{\"reply\": {}}], ",
        );
        let (_, _, msg) = error_of(&text);
        assert!(msg.contains("duplicate behavior name `script`"), "{msg}");
    }
}
