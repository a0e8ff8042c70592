//! Forks: a run with one step changed, as a new session. An edited reply is
//! a rule that answers that round before every other rule; an edited tool
//! return value is the table row for those arguments. The rest of the run
//! is derived from the session's stub model and tools as before, so a fork
//! is exact and repeatable, and writing its session reproduces it.

use serde_json::Value;

use crate::message::Reply;
use crate::session::{Rule, Session, TableRow, When};

/// What a fork changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// The model's reply in round `round` of behavior `behavior`.
    Reply {
        /// The stub behavior the run used.
        behavior: String,
        /// 1-based round.
        round: u32,
        /// The reply as edited.
        reply: Reply,
    },
    /// What tool `tool` returns for `args`.
    Result {
        /// The tool's name.
        tool: String,
        /// The call's arguments.
        args: Value,
        /// The return value as edited.
        result: Value,
    },
}

impl Edit {
    /// A short description for the fork list.
    pub fn describe(&self) -> String {
        match self {
            Edit::Reply { round, reply, .. } => {
                let calls: Vec<String> = reply
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, c.id))
                    .collect();
                let text = match reply.text.as_deref() {
                    None => "null".to_string(),
                    Some(t) => compact(&Value::String(t.to_string())),
                };
                format!(
                    "round {round} reply: text {text}, calls [{}], {}",
                    calls.join(" "),
                    reply.finish_reason().as_str()
                )
            }
            Edit::Result { tool, args, .. } => {
                format!("{tool}({}) returns an edited value", compact(args))
            }
        }
    }
}

fn compact(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() > 40 {
        let mut cut: String = s.chars().take(39).collect();
        cut.push('…');
        cut
    } else {
        s
    }
}

/// Why an edit cannot apply.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ForkError {
    /// The behavior is not in the session.
    #[error("the session has no behavior `{0}`")]
    NoBehavior(String),
    /// The tool is not in the session.
    #[error("the session has no tool `{0}` (a call to an unknown tool has no table to edit)")]
    NoTool(String),
}

/// `session` with `edit` applied.
pub fn apply(session: &Session, edit: &Edit) -> Result<Session, ForkError> {
    let mut forked = session.clone();
    match edit {
        Edit::Reply {
            behavior,
            round,
            reply,
        } => {
            let rules = forked
                .model
                .get_mut(behavior)
                .ok_or_else(|| ForkError::NoBehavior(behavior.clone()))?;
            rules.insert(
                0,
                Rule {
                    when: When {
                        round: Some(*round),
                        ..When::default()
                    },
                    reply: reply.clone(),
                },
            );
        }
        Edit::Result { tool, args, result } => {
            let def = forked
                .tools
                .iter_mut()
                .find(|t| t.name == *tool)
                .ok_or_else(|| ForkError::NoTool(tool.clone()))?;
            let row = TableRow {
                args: args.clone(),
                result: result.clone().into(),
            };
            match def.table.iter_mut().find(|r| r.args == *args) {
                Some(existing) => *existing = row,
                None => def.table.insert(0, row),
            }
            // A tool set to fail would never return the edited value.
            def.fails = None;
        }
    }
    Ok(forked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::strategy::Strategy;

    fn fx() -> Session {
        crate::fixtures::two_calls("done")
    }

    #[test]
    fn removing_the_second_call_at_round_1_gives_the_run_the_engine_computes() {
        let s = fx();
        let strategy = Strategy::for_session(&s);
        let original = crate::run(&s, &strategy);
        let mut reply = original.round(1).unwrap().reply.clone();
        reply.tool_calls.truncate(1);
        let edit = Edit::Reply {
            behavior: "script".into(),
            round: 1,
            reply: reply.clone(),
        };
        let forked = apply(&s, &edit).unwrap();
        let trace = crate::run(&forked, &strategy);
        assert_eq!(trace.round(1).unwrap().reply, reply);
        assert_eq!(trace.tool_runs(), ["get_weather"]);
        assert_eq!(trace.outcome.final_text.as_deref(), Some("done"));
        // Round 1 is all that changed: the same session otherwise.
        assert_eq!(forked.tools, s.tools);
    }

    #[test]
    fn an_edited_return_value_reaches_the_history() {
        let s = fx();
        let edit = Edit::Result {
            tool: "get_weather".into(),
            args: serde_json::json!({"city": "北京"}),
            result: serde_json::json!({"temp_c": -40}),
        };
        let forked = apply(&s, &edit).unwrap();
        let trace = crate::run(&forked, &Strategy::for_session(&forked));
        let text = serde_json::to_string(&trace.messages).unwrap();
        assert!(text.contains("-40"));
    }

    #[test]
    fn a_fork_reloads_from_its_own_file_and_runs_the_same() {
        let s = fx();
        let edit = Edit::Reply {
            behavior: "script".into(),
            round: 1,
            reply: Reply {
                text: Some("no tools today".into()),
                tool_calls: vec![ToolCall {
                    id: "toolu_x".into(),
                    name: "get_fx_rate".into(),
                    args: serde_json::json!({}).into(),
                    arguments: None,
                }],
                ..Reply::default()
            },
        };
        let forked = apply(&s, &edit).unwrap();
        let text = serde_json::to_string_pretty(&forked).unwrap();
        let again = Session::parse("fork.json", &text).unwrap();
        let strategy = Strategy::for_session(&forked);
        assert_eq!(
            crate::run(&again, &strategy),
            crate::run(&forked, &strategy)
        );
    }

    #[test]
    fn unknown_names_are_refused() {
        let s = fx();
        let bad = Edit::Result {
            tool: "nope".into(),
            args: Value::Null,
            result: Value::Null,
        };
        assert_eq!(apply(&s, &bad), Err(ForkError::NoTool("nope".into())));
    }
}
