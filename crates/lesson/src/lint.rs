//! Session lint: things that load fine but are probably mistakes. Warnings,
//! never errors; each names a JSON path so a caller holding the text can
//! turn it into `file:line:column`.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use loopdbg_engine::diagnostics::json_span::PathSeg;
use loopdbg_engine::session::{Session, When};

/// A kind of lint warning; its name is stable in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LintKind {
    /// a lookup table key that is not one of the tool's declared parameters
    UndeclaredTableKey,
    /// a scripted call passes an argument its tool does not declare
    UndeclaredArg,
    /// a stub rule no earlier rule leaves room for
    UnreachableRule,
    /// a declared tool the stub model never calls
    UnusedTool,
    /// a scripted call names a tool the session does not declare
    UndefinedToolCall,
}

impl LintKind {
    /// The stable name, as JSON and the text output write it.
    pub fn as_str(self) -> &'static str {
        match self {
            LintKind::UndeclaredTableKey => "undeclared_table_key",
            LintKind::UndeclaredArg => "undeclared_arg",
            LintKind::UnreachableRule => "unreachable_rule",
            LintKind::UnusedTool => "unused_tool",
            LintKind::UndefinedToolCall => "undefined_tool_call",
        }
    }
}

impl std::fmt::Display for LintKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for LintKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LintWarning {
    /// What kind of mistake.
    pub kind: LintKind,
    /// Where, as a path into the session file.
    #[serde(serialize_with = "path_string")]
    pub path: Vec<PathSeg>,
    /// What is wrong and why it matters.
    pub message: String,
}

fn path_string<S: serde::Serializer>(path: &[PathSeg], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&display_path(path))
}

/// `tools[0].table[1].args`.
pub fn display_path(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            PathSeg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn declared_params(parameters: &Value) -> Option<Vec<&str>> {
    parameters
        .get("properties")?
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
}

/// Lints `session`.
pub fn lint(session: &Session) -> Vec<LintWarning> {
    let mut out = Vec::new();
    let key = |k: &str| PathSeg::Key(k.to_string().into());

    // The parameter-name trap: the model fills the declared names, so a row
    // keyed by anything else can never match.
    for (t, tool) in session.tools.iter().enumerate() {
        let Some(declared) = declared_params(&tool.parameters) else {
            continue;
        };
        for (r, row) in tool.table.iter().enumerate() {
            let Some(args) = row.args.as_object() else {
                continue;
            };
            for k in args.keys().filter(|k| !declared.contains(&k.as_str())) {
                out.push(LintWarning {
                    kind: LintKind::UndeclaredTableKey,
                    path: vec![key("tools"), PathSeg::Index(t), key("table"), PathSeg::Index(r), key("args"), key(k)],
                    message: format!(
                        "`{}` table row {r} is keyed by `{k}`, which the tool's parameters do not declare (declared: {}); the model fills the declared names, so this row can never match",
                        tool.name,
                        if declared.is_empty() { "none".to_string() } else { declared.join(", ") }
                    ),
                });
            }
        }
    }

    let mut called: HashSet<&str> = HashSet::new();
    for (behavior, rules) in &session.model {
        let calls_here: HashSet<&str> = rules
            .iter()
            .flat_map(|r| r.reply.tool_calls.iter().map(|c| &*c.name))
            .collect();
        called.extend(calls_here.iter().copied());
        for (r, rule) in rules.iter().enumerate() {
            let rule_path = || vec![key("model"), key(behavior), PathSeg::Index(r)];
            if let Some((e, why)) = shadowed_by(&rules[..r], &rule.when) {
                out.push(LintWarning {
                    kind: LintKind::UnreachableRule,
                    path: rule_path(),
                    message: format!("model.{behavior}[{r}] can never reply: rule {e} {why}"),
                });
            }
            if let (Some(round), Some(max)) = (rule.when.round, session.strategy.max_rounds)
                && round > max
            {
                out.push(LintWarning {
                    kind: LintKind::UnreachableRule,
                    path: [rule_path(), vec![key("when"), key("round")]].concat(),
                    message: format!(
                        "model.{behavior}[{r}] waits for round {round}, past the session's max_rounds {max}"
                    ),
                });
            }
            for (cond, names) in [
                ("missing", &rule.when.missing),
                ("answered", &rule.when.answered),
            ] {
                for (i, t) in names.iter().enumerate() {
                    if !calls_here.contains(t.as_str()) {
                        out.push(LintWarning {
                            kind: LintKind::UnreachableRule,
                            path: [rule_path(), vec![key("when"), key(cond), PathSeg::Index(i)]].concat(),
                            message: format!(
                                "model.{behavior}[{r}] needs a call of `{t}` in the history, but no reply of `{behavior}` calls it"
                            ),
                        });
                    }
                }
            }
            for (c, call) in rule.reply.tool_calls.iter().enumerate() {
                let call_path = || {
                    [
                        rule_path(),
                        vec![key("reply"), key("tool_calls"), PathSeg::Index(c)],
                    ]
                    .concat()
                };
                match session.tool(&call.name) {
                    None => out.push(LintWarning {
                        kind: LintKind::UndefinedToolCall,
                        path: [call_path(), vec![key("name")]].concat(),
                        message: format!(
                            "model.{behavior}[{r}] calls `{}`, which the session does not define: the whitelist will refuse it (fine if that is the point)",
                            call.name
                        ),
                    }),
                    Some(tool) => {
                        let (Some(declared), Some(args)) =
                            (declared_params(&tool.parameters), call.args.as_object())
                        else {
                            continue;
                        };
                        for k in args.keys().filter(|k| !declared.contains(&k.as_str())) {
                            out.push(LintWarning {
                                kind: LintKind::UndeclaredArg,
                                path: [call_path(), vec![key("args"), key(k)]].concat(),
                                message: format!(
                                    "model.{behavior}[{r}] passes `{k}` to `{}`, which its parameters do not declare",
                                    call.name
                                ),
                            });
                        }
                    }
                }
            }
        }
    }
    for (t, tool) in session.tools.iter().enumerate() {
        if !called.contains(tool.name.as_str()) {
            out.push(LintWarning {
                kind: LintKind::UnusedTool,
                path: vec![key("tools"), PathSeg::Index(t), key("name")],
                message: format!("tool `{}` is never called by any rule", tool.name),
            });
        }
    }
    out
}

/// An earlier rule that always wins over `when`, with a reason.
fn shadowed_by(earlier: &[loopdbg_engine::session::Rule], when: &When) -> Option<(usize, String)> {
    earlier.iter().enumerate().find_map(|(i, e)| {
        let round_ok = e.when.round.is_none() || e.when.round == when.round;
        let subset = |a: &[String], b: &[String]| a.iter().all(|x| b.contains(x));
        (round_ok
            && subset(&e.when.missing, &when.missing)
            && subset(&e.when.answered, &when.answered))
        .then(|| {
            if e.when.is_always() {
                (i, "has no condition and always matches first".to_string())
            } else {
                (
                    i,
                    "matches whenever this one does and comes first".to_string(),
                )
            }
        })
    })
}

/// Lints `session`, each warning as a `file:line:column: warning[kind]:
/// …` line located in `text`, the file it was parsed from (`origin`).
pub fn located(origin: &str, text: &str, session: &Session) -> Vec<String> {
    use loopdbg_engine::diagnostics::json_span::{LineIndex, SpanNode};
    let spans = SpanNode::parse(text);
    let mut lines = LineIndex::new(text);
    lint(session)
        .into_iter()
        .map(|w| {
            let (line, col) = spans
                .as_ref()
                .map_or((1, 1), |s| lines.line_col(s.offset_of(&w.path)));
            format!(
                "{origin}:{line}:{col}: warning[{}]: {}",
                w.kind,
                crate::report::clean(&w.message)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&'static str, String)> {
        let s = Session::parse("t.json", text).unwrap();
        lint(&s)
            .into_iter()
            .map(|w| (w.kind.as_str(), display_path(&w.path)))
            .collect()
    }

    #[test]
    fn parameter_trap_is_flagged() {
        let found = kinds(
            r#"{"user": "q", "tools": [{"name": "w",
                "parameters": {"type": "object", "properties": {"location": {}}},
                "table": [{"args": {"city": "x"}, "result": 1}]}],
               "model": {"s": [{"reply": {"tool_calls": [{"id": "a", "name": "w", "args": {"location": "x"}}]}}]}}"#,
        );
        assert_eq!(
            found,
            vec![(
                "undeclared_table_key",
                "tools[0].table[0].args.city".to_string()
            )]
        );
    }

    #[test]
    fn shadowed_and_unused() {
        let found = kinds(
            r#"{"user": "q", "tools": [{"name": "w"}],
               "model": {"s": [{"reply": {"text": "a"}}, {"when": {"round": 2}, "reply": {"text": "b"}}]}}"#,
        );
        assert_eq!(
            found,
            vec![
                ("unreachable_rule", "model.s[1]".to_string()),
                ("unused_tool", "tools[0].name".to_string())
            ]
        );
    }
}
