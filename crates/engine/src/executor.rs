//! Local execution of tool calls, behind the [`ToolExecutor`] seam.
//!
//! The session's tools are lookup tables: [`TableExecutor`] finds the row
//! whose `args` equal the call's arguments. A name the session does not
//! define is never run (the whitelist of seed 003): it is answered with an
//! error result so the model can correct itself.

use serde_json::{Value, json};

use std::collections::HashMap;
use std::sync::Arc;

use crate::message::{Json, ToolCall};
use crate::schedule::CallPlan;
use crate::session::Session;
// What a call gave is part of the trace; named here too, where callers of
// an executor look for it.
pub use crate::trace::{SubAgentRun, ToolOutcome};

impl ToolOutcome {
    /// An error result produced by the loop itself (not by running a tool).
    pub fn loop_error(text: String, note: &'static str) -> ToolOutcome {
        ToolOutcome::loop_error_shared(Json::new(Value::String(text)), note)
    }

    /// [`ToolOutcome::loop_error`] with content shared between many calls.
    pub fn loop_error_shared(content: Json, note: &'static str) -> ToolOutcome {
        ToolOutcome {
            content,
            is_error: true,
            ran: false,
            note,
            row: None,
            child: None,
        }
    }
}

/// Runs tool calls. The engine only sees this trait, so other executors
/// (concurrent, faulty, nested agents) can stand in.
pub trait ToolExecutor {
    /// Runs one call and returns its outcome; never fails: failures are
    /// error results.
    fn execute(&self, call: &ToolCall) -> ToolOutcome;

    /// How the call behaves in virtual time (default: instant, no failure).
    fn plan(&self, _call: &ToolCall) -> CallPlan {
        CallPlan {
            latency_ms: 0,
            timeout_ms: None,
            fails: false,
            hard: false,
        }
    }
}

/// Executes calls against a session's lookup tables.
pub struct TableExecutor<'s> {
    session: &'s Session,
    /// Runs a sub-agent's own loop.
    run_loop: RunLoop,
    /// Compiled argument schemas, by tool name (tools whose schema compiles).
    validators: HashMap<&'s str, jsonschema::Validator>,
    /// Outcomes already computed in this run. A scripted reply is the same
    /// shared value every round it is given, so the key is the identity of
    /// the call's name and arguments; a spinning 5000-round loop looks each
    /// call up once.
    memo: std::cell::RefCell<HashMap<SameCall, ToolOutcome>>,
    /// Each sub-agent's run, by the child session it runs: a child's loop
    /// does not depend on how it was called, so it runs once in this run
    /// however many calls reach it. The `Arc` keeps the session alive, so
    /// its address is never reused for another.
    children: std::cell::RefCell<HashMap<*const Session, Child>>,
}

/// A call's name and arguments compared by identity. Holding the `Arc`s
/// keeps them alive, so an address is never reused for another call.
struct SameCall(crate::message::Text, Json);

impl PartialEq for SameCall {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) && Arc::ptr_eq(&self.1, &other.1)
    }
}

impl Eq for SameCall {}

impl std::hash::Hash for SameCall {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as *const u8 as usize).hash(state);
        (Arc::as_ptr(&self.1) as usize).hash(state);
    }
}

/// A child session kept alive beside its run.
type Child = (Arc<Session>, Arc<SubAgentRun>);

/// How a sub-agent's own loop is run: the loop is the caller's
/// (`agent_loop::run`), handed in so this module stays below it.
pub type RunLoop = fn(&Session, &crate::strategy::Strategy) -> crate::trace::Trace;

impl<'s> TableExecutor<'s> {
    /// An executor over `session`'s tools; a sub-agent's loop is run with
    /// `run_loop`.
    pub fn new(session: &'s Session, run_loop: RunLoop) -> Self {
        let validators = session
            .tools
            .iter()
            .filter(|t| declares_something(&t.parameters))
            .filter_map(|t| {
                Some((
                    t.name.as_str(),
                    jsonschema::validator_for(&t.parameters).ok()?,
                ))
            })
            .collect();
        TableExecutor {
            session,
            run_loop,
            validators,
            memo: Default::default(),
            children: Default::default(),
        }
    }
}

/// Schemas that accept anything are not worth compiling.
fn declares_something(schema: &Value) -> bool {
    schema
        .get("required")
        .is_some_and(|r| r.as_array().is_some_and(|a| !a.is_empty()))
        || schema.get("additionalProperties").is_some()
        || schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| {
                p.values()
                    .any(|v| v.get("type").is_some() || v.get("enum").is_some())
            })
}

/// How deep sub-agents may nest.
pub const MAX_AGENT_DEPTH: usize = 4;

impl ToolExecutor for TableExecutor<'_> {
    fn execute(&self, call: &ToolCall) -> ToolOutcome {
        let key = SameCall(call.name.clone(), call.args.clone());
        if let Some(known) = self.memo.borrow().get(&key) {
            return known.clone();
        }
        let outcome = self.compute(call);
        self.memo.borrow_mut().insert(key, outcome.clone());
        outcome
    }

    fn plan(&self, call: &ToolCall) -> CallPlan {
        self.plan_of(call)
    }
}

impl TableExecutor<'_> {
    fn compute(&self, call: &ToolCall) -> ToolOutcome {
        let Some(tool) = self.session.tool(&call.name) else {
            let known: Vec<&str> = self.session.tools.iter().map(|t| t.name.as_str()).collect();
            return ToolOutcome {
                content: Json::new(Value::String(format!(
                    "unknown tool `{}`: not in this session's tools ({}); not run",
                    call.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))),
                is_error: true,
                ran: false,
                note: "refused by the whitelist",
                row: None,
                child: None,
            };
        };
        if let Some(raw) = &call.arguments
            && let Err(e) = serde_json::from_str::<Value>(raw)
        {
            return ToolOutcome::loop_error(
                format!(
                    "arguments for `{}` are not valid JSON ({e}); the call was not run, send them again",
                    call.name
                ),
                "refused: arguments are not JSON",
            );
        }
        if let Some(validator) = self.validators.get(call.name.as_ref())
            && !validator.is_valid(&call.args)
        {
            let errors: Vec<String> = validator
                .iter_errors(&call.args)
                .take(3)
                .map(|e| e.to_string())
                .collect();
            if !errors.is_empty() {
                return ToolOutcome::loop_error(
                    format!(
                        "invalid arguments for `{}`: {}; the call was not run",
                        call.name,
                        errors.join("; ")
                    ),
                    "refused: arguments break the tool's schema",
                );
            }
        }
        if let Some(text) = &tool.fails {
            return ToolOutcome {
                content: Json::new(json!({"error": text})),
                is_error: true,
                ran: true,
                note: "the tool failed",
                row: None,
                child: None,
            };
        }
        if let Some(child) = &tool.agent_session {
            return self.run_sub_agent(child, tool.background, &call.id);
        }
        match tool.table.iter().position(|row| row.args == *call.args) {
            Some(i) => ToolOutcome {
                content: tool.table[i].result.clone(),
                is_error: false,
                ran: true,
                note: "answered from the lookup table",
                row: Some(i),
                child: None,
            },
            None => ToolOutcome {
                content: tool.miss.clone().unwrap_or_else(|| {
                    Json::new(json!({"error": format!("no result for arguments {}", call.args)}))
                }),
                is_error: true,
                ran: true,
                note: "no table row matches these arguments",
                row: None,
                child: None,
            },
        }
    }

    fn plan_of(&self, call: &ToolCall) -> CallPlan {
        match self.session.tool(&call.name) {
            Some(tool) => CallPlan {
                latency_ms: tool.latency_ms + self.agent_time_ms(tool, call),
                timeout_ms: tool.timeout_ms.or(self.session.executor.timeout_ms),
                fails: tool.fails.is_some(),
                hard: tool.fails.is_some() && tool.hard,
            },
            None => CallPlan {
                latency_ms: 0,
                timeout_ms: None,
                fails: false,
                hard: false,
            },
        }
    }
}

impl TableExecutor<'_> {
    /// The virtual time a sub-agent call waits for its child's loop (none
    /// when it is launched in the background).
    fn agent_time_ms(&self, tool: &crate::session::ToolDef, call: &ToolCall) -> u64 {
        if tool.agent_session.is_none() || tool.background {
            return 0;
        }
        // Memoized: the call is not run twice.
        self.execute(call)
            .child
            .map_or(0, |c| c.trace.virtual_time_ms())
    }
}

impl TableExecutor<'_> {
    /// Runs a sub-agent's own loop (once per child session); the parent sees
    /// one result.
    fn run_sub_agent(
        &self,
        child: &crate::session::AgentSession,
        background: bool,
        call_id: &str,
    ) -> ToolOutcome {
        let key = Arc::as_ptr(&child.session);
        let known = self.children.borrow().get(&key).map(|(_, run)| run.clone());
        let run = known.unwrap_or_else(|| {
            let session = &child.session;
            let strategy = crate::strategy::Strategy::for_session(session);
            let run = Arc::new(SubAgentRun {
                session: Session::clone(session),
                trace: (self.run_loop)(session, &strategy),
            });
            self.children
                .borrow_mut()
                .insert(key, (child.session.clone(), run.clone()));
            run
        });
        let trace = &run.trace;
        let (content, is_error) = match trace.outcome.end {
            // Launched in the background: the parent does not wait for the child.
            _ if background => (
                json!({"status": "async_launched", "agent_id": format!("agent_{call_id}")}),
                false,
            ),
            crate::trace::End::ModelDone => (
                json!({"status": "completed", "result": trace.outcome.final_text, "rounds": trace.outcome.requests}),
                false,
            ),
            _ => (
                json!({"status": "error", "error": trace.outcome.detail, "rounds": trace.outcome.requests}),
                true,
            ),
        };
        ToolOutcome {
            content: Json::new(content),
            is_error,
            ran: true,
            note: "ran the sub-agent's loop",
            row: None,
            child: Some(run.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::parse(
            "t.json",
            r#"{"user": "q", "tools": [{"name": "get_weather",
                "table": [{"args": {"city": "北京"}, "result": {"temp_c": 18}}],
                "miss": {"error": "city not found"}}],
               "model": {"s": [{"reply": {"text": "x"}}]}}"#,
        )
        .unwrap()
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            args: Json::new(args),
            arguments: None,
        }
    }

    #[test]
    fn table_hit_miss_and_whitelist() {
        let s = session();
        let ex = TableExecutor::new(&s, crate::run);
        let hit = ex.execute(&call("get_weather", json!({"city": "北京"})));
        assert_eq!(*hit.content, json!({"temp_c": 18}));
        assert!(!hit.is_error && hit.ran);
        let miss = ex.execute(&call("get_weather", json!({"location": "北京"})));
        assert_eq!(*miss.content, json!({"error": "city not found"}));
        assert!(miss.is_error && miss.ran);
        let refused = ex.execute(&call("rm_rf", json!({})));
        assert!(refused.is_error && !refused.ran);
        assert!(
            refused
                .content
                .as_str()
                .unwrap()
                .contains("unknown tool `rm_rf`")
        );
    }
}
