//! Local execution of tool calls, behind the [`ToolExecutor`] seam.
//!
//! The session's tools are lookup tables: [`TableExecutor`] finds the row
//! whose `args` equal the call's arguments. A name the session does not
//! define is never run (the whitelist of seed 003): it is answered with an
//! error result so the model can correct itself.

use serde::Serialize;
use serde_json::{Value, json};

use crate::session::{Json, Session, ToolCall};

/// What running one call gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutcome {
    /// The result content sent back to the model.
    pub content: Json,
    /// True when the result reports a failure.
    pub is_error: bool,
    /// False when the call was refused without running anything.
    pub ran: bool,
    /// What happened, for logs.
    pub note: &'static str,
    /// The table row that answered, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<usize>,
}

/// Runs tool calls. The engine only sees this trait, so other executors
/// (concurrent, faulty, nested agents) can stand in.
pub trait ToolExecutor {
    /// Runs one call and returns its outcome; never fails: failures are
    /// error results.
    fn execute(&self, call: &ToolCall) -> ToolOutcome;
}

/// Executes calls against a session's lookup tables.
pub struct TableExecutor<'s> {
    session: &'s Session,
}

impl<'s> TableExecutor<'s> {
    /// An executor over `session`'s tools.
    pub fn new(session: &'s Session) -> Self {
        TableExecutor { session }
    }
}

impl ToolExecutor for TableExecutor<'_> {
    fn execute(&self, call: &ToolCall) -> ToolOutcome {
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
            };
        };
        match tool.table.iter().position(|row| row.args == *call.args) {
            Some(i) => ToolOutcome {
                content: tool.table[i].result.clone(),
                is_error: false,
                ran: true,
                note: "answered from the lookup table",
                row: Some(i),
            },
            None => ToolOutcome {
                content: tool.miss.clone().unwrap_or_else(|| {
                    Json::new(json!({"error": format!("no result for arguments {}", call.args)}))
                }),
                is_error: true,
                ran: true,
                note: "no table row matches these arguments",
                row: None,
            },
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
        }
    }

    #[test]
    fn table_hit_miss_and_whitelist() {
        let s = session();
        let ex = TableExecutor::new(&s);
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
