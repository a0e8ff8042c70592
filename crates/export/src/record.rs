//! A captured conversation turned into a stub session: the tools the
//! request declared, each tool's recorded results as its lookup table, and
//! the model's recorded replies scripted round by round. Stepping that
//! session under another strategy shows what `all`, `robust` or
//! `synthesize` would have done with this very run.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::{Value, json};

use loopdbg_engine::message::{Block, Message, Role};
use loopdbg_engine::session::{
    Reply, Rule, Session, StrategyDefaults, TableRow, ToolCall, ToolDef, When,
};
use loopdbg_engine::strategy::{Extract, StopRule};
use loopdbg_read::Conversation;

/// The behavior a recorded session replays.
pub const RECORDED_BEHAVIOR: &str = "recorded";

/// A recorded session and what was left out of it.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The session.
    pub session: Session,
    /// Model replies scripted (one per round).
    pub rounds: usize,
    /// Messages before the last user prompt, left out: a stub session
    /// starts from one prompt.
    pub skipped_messages: usize,
    /// Tool results whose arguments already had a different recorded
    /// result (the first is kept).
    pub conflicting_results: usize,
    /// Tools called but not declared by the request, added so their
    /// recorded results still come back.
    pub undeclared_tools: Vec<String>,
    /// What the recorded loop did with the calls of each turn, read from
    /// the results it sent, and so the extraction the session replays.
    pub extraction: Extraction,
}

impl Recording {
    /// What the user should know of the recording, one line each: how the
    /// recorded loop treated its calls, what was left out or added.
    /// `declared_tools` says whether the file kept the tool definitions.
    pub fn notes(&self, declared_tools: bool) -> Vec<String> {
        let mut notes = Vec::new();
        match &self.extraction {
            Extraction::First { unanswered } => notes.push(format!(
                "the recorded loop answered only the first call of each turn ({} left without a result): recorded with extract first, so the replay shows it; e in the debugger shows what all would do",
                loopdbg_engine::ledger::counted_ids(unanswered)
            )),
            Extraction::Other { unanswered } => notes.push(format!(
                "the recorded loop left {} without a result, not as `first` would: replayed with extract all, so compare the ids pane with the record",
                loopdbg_engine::ledger::counted_ids(unanswered)
            )),
            Extraction::All | Extraction::Unknown => {}
        }
        if self.skipped_messages > 0 {
            notes.push(format!(
                "the loop after the last user prompt was recorded; {} earlier message(s) are left out",
                self.skipped_messages
            ));
        }
        if self.conflicting_results > 0 {
            notes.push(format!(
                "{} call(s) repeated earlier arguments with a different result; the first result is kept",
                self.conflicting_results
            ));
        }
        if !self.undeclared_tools.is_empty() {
            let why = match declared_tools {
                false => "the file keeps no tool definitions; tools added from the calls",
                true => "called but not declared by the request, added so their results come back",
            };
            notes.push(format!(
                "{why}: {}",
                loopdbg_engine::diagnostics::inert::clean(&self.undeclared_tools.join(", "))
            ));
        }
        notes
    }

    /// How many recorded results the session's tables hold.
    pub fn results(&self) -> usize {
        self.session.tools.iter().map(|t| t.table.len()).sum()
    }
}

/// What a recorded loop did with the calls of a turn, told by which calls
/// got a result before the loop asked again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extraction {
    /// No turn had more than one call answered or left: nothing to tell.
    Unknown,
    /// Every call of every turn was answered.
    All,
    /// Only the first call of each turn with several was answered: the
    /// bug of seed 000, replayed as `extract first`.
    First {
        /// The calls left without a result, in order.
        unanswered: Vec<String>,
    },
    /// Some calls were left, but not as `first` would leave them: replayed
    /// as `all`, which the pairing check then shows against the record.
    Other {
        /// The calls left without a result, in order.
        unanswered: Vec<String>,
    },
}

impl Extraction {
    /// The strategy's extraction that replays it.
    pub fn extract(&self) -> Extract {
        match self {
            Extraction::First { .. } => Extract::First,
            _ => Extract::All,
        }
    }
}

/// Which calls of each turn the loop answered before it asked the model
/// again. A turn with no request after it (the file ends there, calls in
/// flight) tells nothing.
pub fn extraction_of(loop_messages: &[Message]) -> Extraction {
    let mut unanswered = Vec::new();
    let (mut told, mut first_only) = (false, true);
    let turns: Vec<usize> = loop_messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    for (k, &at) in turns.iter().enumerate() {
        let calls: Vec<&str> = loop_messages[at].tool_uses().map(|(id, _)| id).collect();
        // The results sent before the next reply (or to the end, when the
        // request that carried them was refused and got no reply).
        let end = turns.get(k + 1).copied().unwrap_or(loop_messages.len());
        let answered: Vec<&str> = loop_messages[at + 1..end]
            .iter()
            .flat_map(Message::tool_result_ids)
            .collect();
        if calls.is_empty() || (answered.is_empty() && k + 1 == turns.len()) {
            continue;
        }
        told |= calls.len() > 1;
        let left: Vec<&str> = calls
            .iter()
            .copied()
            .filter(|c| !answered.contains(c))
            .collect();
        if !left.is_empty() {
            first_only &= answered == calls[..1] && left == calls[1..];
            unanswered.extend(left.iter().map(|c| c.to_string()));
        }
    }
    if unanswered.is_empty() {
        if told {
            Extraction::All
        } else {
            Extraction::Unknown
        }
    } else if first_only {
        Extraction::First { unanswered }
    } else {
        Extraction::Other { unanswered }
    }
}

/// Records the agent loop after the conversation's last user prompt that
/// the model answered (prompts after it got no reply: the provider refused
/// them, or the log ends there). `None` when no prompt was answered.
pub fn record(conv: &Conversation, title: &str) -> Option<Recording> {
    let last_reply = conv
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)?;
    let start = conv.messages[..last_reply]
        .iter()
        .rposition(|m| m.role == Role::User && is_prompt(m))?;
    let user = conv.messages[start].text().unwrap_or_default();
    let loop_messages = &conv.messages[start + 1..];

    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    let mut rules = Vec::new();
    let mut tables: IndexMap<String, Vec<TableRow>> = IndexMap::new();
    let mut conflicting = 0;
    let usage = conv.usage_by_message();
    for (i, m) in loop_messages.iter().enumerate() {
        let trip = usage.get(start + 1 + i).copied().flatten();
        match m.role {
            Role::Assistant => {
                let mut text = String::new();
                let mut tool_calls = Vec::new();
                for b in &m.content {
                    match b {
                        Block::Text { text: t } => text.push_str(t),
                        Block::ToolUse { id, name, input } => {
                            calls.insert(id, (name, input));
                            tool_calls.push(ToolCall {
                                id: id.clone(),
                                name: name.clone(),
                                args: input.clone(),
                                arguments: None,
                            });
                        }
                        Block::ToolResult { .. } => {}
                    }
                }
                let round = rules.len() as u32 + 1;
                rules.push(Rule {
                    when: When {
                        round: Some(round),
                        ..When::default()
                    },
                    reply: Reply {
                        text: (!text.is_empty()).then(|| text.into()),
                        tool_calls,
                        finish_reason: m.finish_reason,
                        usage: trip.map(|t| t.usage),
                        model: trip.and_then(|t| t.model.as_deref()).map(Into::into),
                    },
                });
            }
            _ => {
                for b in &m.content {
                    let Block::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                    else {
                        continue;
                    };
                    let Some((name, input)) = calls.get(&**tool_use_id) else {
                        continue;
                    };
                    let rows = tables.entry(name.to_string()).or_default();
                    match rows.iter().find(|r| r.args == **input) {
                        Some(row) if row.result != *content => conflicting += 1,
                        Some(_) => {}
                        None => rows.push(TableRow {
                            args: (**input).clone(),
                            result: content.clone(),
                        }),
                    }
                }
            }
        }
    }
    let rounds = rules.len();
    let mut tools: Vec<ToolDef> = conv
        .tools
        .iter()
        .map(|t| {
            let mut def = tool(&t.name, t.schema.clone(), &mut tables);
            def.description = t.description.clone().unwrap_or_default();
            def
        })
        .collect();
    let extraction = extraction_of(loop_messages);
    let mut undeclared = Vec::new();
    let mut called: Vec<&str> = calls.values().map(|(n, _)| *n).collect();
    called.sort_unstable();
    called.dedup();
    for name in called {
        if !tools.iter().any(|t| t.name == name) {
            undeclared.push(name.to_string());
            tools.push(tool(name, None, &mut tables));
        }
    }
    let mut model = IndexMap::new();
    model.insert(RECORDED_BEHAVIOR.to_string(), rules);
    let session = Session {
        title: title.to_string(),
        user,
        system: conv.system.clone(),
        tools,
        model,
        strategy: StrategyDefaults {
            // What the recorded loop did, so the default replay shows it.
            extract: Some(extraction.extract()),
            stop: Some(StopRule::Robust),
            // One more round than recorded, so a loop that would go on is
            // seen asking again rather than cut by the limit.
            max_rounds: Some(rounds as u32 + 1),
            behavior: Some(RECORDED_BEHAVIOR.to_string()),
            closure: None,
        },
        executor: Default::default(),
        faults: Default::default(),
        walkthrough: false,
    };
    Some(Recording {
        session,
        rounds,
        skipped_messages: start,
        conflicting_results: conflicting,
        undeclared_tools: undeclared,
        extraction,
    })
}

/// A user message the person typed, not one carrying tool results.
fn is_prompt(m: &Message) -> bool {
    m.content.iter().any(|b| matches!(b, Block::Text { .. }))
        && !m
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

fn tool(
    name: &str,
    schema: Option<Value>,
    tables: &mut IndexMap<String, Vec<TableRow>>,
) -> ToolDef {
    let mut def = ToolDef::named(name, schema);
    def.table = tables.shift_remove(name).unwrap_or_default();
    def.miss = Some(json!({"error": "no result was recorded for these arguments"}).into());
    def
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_engine::strategy::Strategy;
    use loopdbg_formats::provider::Format;
    use loopdbg_read::{Source, read};

    fn two_calls() -> Conversation {
        let doc = json!({"model": "m",
        "system": "be brief",
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                  {"name": "get_fx_rate", "input_schema": {"type": "object"}}],
        "messages": [
          {"role": "user", "content": "weather and fx?"},
          {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
            {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {"pair": "USD/CNY"}}]},
          {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"},
            {"type": "tool_result", "tool_use_id": "toolu_f1", "content": "7.12"}]},
          {"role": "assistant", "content": [{"type": "text", "text": "18°C, 7.12"}]}
        ]});
        read(&doc, Source::Provider(Format::Anthropic)).unwrap()
    }

    #[test]
    fn a_recorded_run_replays_its_rounds() {
        let rec = record(&two_calls(), "recorded").unwrap();
        assert_eq!(rec.rounds, 2);
        assert_eq!(rec.session.system.as_deref(), Some("be brief"));
        assert_eq!(rec.session.tools[0].table.len(), 1);
        let trace = loopdbg_engine::run(&rec.session, &Strategy::for_session(&rec.session));
        assert_eq!(trace.outcome.requests, 2);
        assert_eq!(trace.outcome.final_text.as_deref(), Some("18°C, 7.12"));
        assert_eq!(trace.tool_runs(), ["get_weather", "get_fx_rate"]);
    }

    #[test]
    fn under_first_the_recorded_run_drops_the_second_call() {
        let rec = record(&two_calls(), "recorded").unwrap();
        let mut strategy = Strategy::for_session(&rec.session);
        strategy.extract = Extract::First;
        let trace = loopdbg_engine::run(&rec.session, &strategy);
        assert_eq!(trace.tool_runs(), ["get_weather"]);
    }

    #[test]
    fn the_session_survives_its_own_file_format() {
        let rec = record(&two_calls(), "recorded").unwrap();
        let text = serde_json::to_string_pretty(&rec.session).unwrap();
        let again = Session::parse("recorded.json", &text).unwrap();
        assert_eq!(again, rec.session);
    }

    #[test]
    fn prompts_the_provider_refused_are_not_where_the_loop_starts() {
        // The last two prompts got a 400 each: no reply to record from.
        let doc = json!([
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "18"}]},
            {"role": "assistant", "content": "18 degrees"},
            {"role": "user", "content": "and tomorrow?"},
            {"role": "user", "content": "hello?"}
        ]);
        let conv = read(&doc, Source::Provider(Format::Anthropic)).unwrap();
        let rec = record(&conv, "x").unwrap();
        assert_eq!(rec.session.user, "weather?");
    }

    #[test]
    fn no_prompt_no_session() {
        let doc = json!([{"role": "assistant", "content": "hi"}]);
        let conv = read(&doc, Source::Provider(Format::Anthropic)).unwrap();
        assert!(record(&conv, "x").is_none());
    }

    /// A loop that sent one result for a turn of two calls is recorded as
    /// the `first` loop it was, and the default replay shows the dangling
    /// id (issue 22, item 14: it replayed as `all`, "unpaired: none").
    #[test]
    fn a_recorded_first_only_loop_replays_as_first() {
        let doc = json!({"model": "m",
            "tools": [{"name": "get_weather", "description": "Today's weather in a city", "input_schema": {"type": "object"}},
                      {"type": "function", "function": {"name": "get_fx_rate", "description": "A currency pair's rate", "parameters": {"type": "object"}}}],
            "messages": [
              {"role": "user", "content": "weather and fx?"},
              {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
                {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18"}]}]});
        let conv = read(&doc, Source::Provider(Format::Anthropic)).unwrap();
        let rec = record(&conv, "x").unwrap();
        assert_eq!(
            rec.extraction,
            Extraction::First {
                unanswered: vec!["toolu_f1".into()]
            }
        );
        assert_eq!(rec.session.strategy.extract, Some(Extract::First));
        let described: Vec<&str> = rec
            .session
            .tools
            .iter()
            .map(|t| t.description.as_str())
            .collect();
        assert_eq!(
            described,
            ["Today's weather in a city", "A currency pair's rate"]
        );
        let trace = loopdbg_engine::run(&rec.session, &Strategy::for_session(&rec.session));
        assert_eq!(trace.tool_runs(), ["get_weather"]);
        assert!(
            trace
                .violations
                .iter()
                .any(|v| v.ids.iter().any(|i| i == "toolu_f1")),
            "{:?}",
            trace.violations
        );
    }

    #[test]
    fn what_a_loop_did_with_its_calls_is_read_from_its_results() {
        let call = |ids: &[&str]| Message {
            role: Role::Assistant,
            content: ids
                .iter()
                .map(|id| Block::ToolUse {
                    id: (*id).into(),
                    name: "t".into(),
                    input: json!({}).into(),
                })
                .collect(),
            finish_reason: None,
        };
        let result = |id: &str| Message::tool_result(id.into(), json!("r").into(), false);
        let answer = Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: "done".into(),
            }],
            finish_reason: None,
        };
        // Both answered.
        let all = [call(&["a", "b"]), result("a"), result("b"), answer.clone()];
        assert_eq!(extraction_of(&all), Extraction::All);
        // The second answered, the first left: not what `first` does.
        let other = [call(&["a", "b"]), result("b"), answer.clone()];
        assert_eq!(
            extraction_of(&other),
            Extraction::Other {
                unanswered: vec!["a".into()]
            }
        );
        // One call per turn tells nothing; nor do calls still in flight.
        let single = [call(&["a"]), result("a"), call(&["b", "c"])];
        assert_eq!(extraction_of(&single), Extraction::Unknown);
    }
}
