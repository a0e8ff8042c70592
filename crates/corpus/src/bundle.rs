//! `loopdbg bundle`: a broken session's structure, to attach to an agent's
//! bug report without the user's work in it.
//!
//! The file keeps its format (a Claude Code log stays a Claude Code log,
//! a request body a request body) and its structure: every object key,
//! every number and boolean, and the strings that are structure: types,
//! roles, ids and the ids that link events, tool names, models, versions,
//! times, stop reasons. Every other string (a prompt, a reply, a tool's
//! arguments and result, a path, a command, a summary) becomes a
//! placeholder, the same value the same placeholder (a loop that repeats a
//! reply still repeats it), an empty one stays empty; a string that holds
//! JSON (a Chat call's `arguments`, a recorded body) is bundled inside and
//! written back as JSON. The bundle is then checked beside the original:
//! it is written only when `check` finds the same problems in it (kind,
//! place, ids, severity), so the maintainer sees the user's 400.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

/// The keys whose strings are structure, kept as they are.
const KEPT: &[&str] = &[
    // What a thing is, and who said it.
    "type",
    "subtype",
    "role",
    "kind",
    "object",
    "userType",
    "entrypoint",
    "renderedRole",
    "madeBy",
    "execution",
    "level",
    "mode",
    "source",
    "operation",
    "display",
    "loopdbg",
    "provider",
    "method",
    "action",
    "content-type",
    // Ids, and the ids that link events and calls.
    "id",
    "uuid",
    "parentUuid",
    "leafUuid",
    "parentId",
    "logicalParentUuid",
    "tool_use_id",
    "tool_call_id",
    "call_id",
    "toolUseId",
    "toolCallId",
    "tool_id",
    "sessionId",
    "session_id",
    "sessionID",
    "messageId",
    "messageID",
    "promptId",
    "requestId",
    "requestRef",
    "turn_id",
    "root_turn_id",
    "thread_id",
    "sourceToolAssistantUUID",
    "agentId",
    "item_id",
    "response_id",
    "previous_response_id",
    "callID",
    "messageID",
    "sessionID",
    "partID",
    "toolCallId",
    // A tool's schema: what its arguments are checked against.
    "required",
    "enum",
    "const",
    "format",
    "pattern",
    "$schema",
    "$ref",
    "$id",
    // Names: tools (a sub-agent's `Task`, an MCP server's tool), models.
    "name",
    "displayName",
    "model",
    "requestedModel",
    "server_name",
    // Versions and times.
    "version",
    "cli_version",
    "timestamp",
    "time",
    "created",
    "created_at",
    "startTime",
    "lastUpdated",
    // How a turn ended.
    "stop_reason",
    "finish_reason",
    "finishReason",
    "stopReason",
    "status",
    "reason",
    "effort",
    "service_tier",
    "speed",
];

/// What an agent or a provider writes around the user's words, which the
/// readers know a record by: the marker stays, the rest is masked.
const MARKERS: &[&str] = &[
    "API Error",
    "[API Error",
    "Error code: ",
    "This session is being continued from a previous conversation",
    "[Request interrupted by user",
    "<session_context>",
    "<hook_context>",
    "STDERR: ",
];

/// Placeholders, one per distinct string.
#[derive(Default)]
struct Masks {
    seen: HashMap<String, String>,
    /// Strings a tool's schema allows (`enum`, `const`): the agent's, and
    /// what keeps a call's arguments valid.
    allowed: std::collections::HashSet<String>,
    /// How many distinct strings were replaced.
    replaced: usize,
}

impl Masks {
    fn new(value: &Value) -> Masks {
        let mut masks = Masks::default();
        masks.allow(value, None);
        masks
    }

    fn allow(&mut self, value: &Value, key: Option<&str>) {
        match value {
            Value::String(text) if matches!(key, Some("enum" | "const")) => {
                self.allowed.insert(text.clone());
            }
            Value::Array(items) => items.iter().for_each(|v| self.allow(v, key)),
            Value::Object(members) => members.iter().for_each(|(k, v)| self.allow(v, Some(k))),
            _ => {}
        }
    }

    fn mask(&mut self, text: &str) -> String {
        if text.trim().is_empty() || self.allowed.contains(text) {
            return text.to_string();
        }
        if let Some(json) = self.inner_json(text) {
            return json;
        }
        if let Some(marker) = MARKERS.iter().find(|m| text.starts_with(**m)) {
            // A provider's error is its own words, not the user's.
            if marker.contains("Error") {
                return text.to_string();
            }
            let rest = self.mask(&text[marker.len()..]);
            return format!("{marker}{rest}");
        }
        if let Some(said) = self.seen.get(text) {
            return said.clone();
        }
        self.replaced += 1;
        let said = format!("text-{}", self.replaced);
        self.seen.insert(text.to_string(), said.clone());
        said
    }

    /// A string that is a JSON object or array, bundled inside.
    fn inner_json(&mut self, text: &str) -> Option<String> {
        let trimmed = text.trim_start();
        if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
            return None;
        }
        let mut value: Value = serde_json::from_str(text).ok()?;
        self.value(&mut value, None);
        Some(value.to_string())
    }

    fn value(&mut self, value: &mut Value, key: Option<&str>) {
        match value {
            // A provider's error object says what it refused, in its words.
            Value::Object(_) if key == Some("error") => {}
            // A recorded body kept in base64: bundled inside.
            Value::String(text) if key == Some("b64") => {
                use base64::Engine as _;
                let engine = base64::engine::general_purpose::STANDARD;
                *text = match engine.decode(text.as_bytes()) {
                    Ok(bytes) => {
                        let inner = String::from_utf8_lossy(&bytes).into_owned();
                        engine.encode(self.mask(&inner))
                    }
                    Err(_) => self.mask(text),
                };
            }
            Value::String(text) => {
                if !key.is_some_and(|k| KEPT.contains(&k)) {
                    *text = self.mask(text);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.value(item, key);
                }
            }
            Value::Object(members) => {
                for (k, v) in members.iter_mut() {
                    self.value(v, Some(k));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// `text` bundled: one JSON document, or JSON Lines (each line on its
/// own; a line that is not JSON becomes an empty line's worth of nothing:
/// it is dropped, as it could hold anything). Returns the text and how
/// many distinct strings were replaced.
pub fn bundle_text(text: &str) -> (String, usize) {
    if let Ok(mut value) = serde_json::from_str::<Value>(text) {
        let mut masks = Masks::new(&value);
        masks.value(&mut value, None);
        let out = serde_json::to_string_pretty(&value).unwrap_or_default() + "\n";
        return (out, masks.replaced);
    }
    // Lines: the values of each line (two records joined on one line stay
    // joined), and what no value could be read from (a torn line) stays
    // torn, its words masked.
    let lines: Vec<Vec<Value>> = text
        .lines()
        .map(|line| {
            serde_json::Deserializer::from_str(line)
                .into_iter::<Value>()
                .map_while(Result::ok)
                .collect()
        })
        .collect();
    let mut masks = Masks::default();
    for value in lines.iter().flatten() {
        masks.allow(value, None);
    }
    let mut out = String::with_capacity(text.len());
    for (line, values) in text.lines().zip(lines) {
        if values.is_empty() && !line.trim().is_empty() {
            out.push_str(&format!("{{\"torn\": \"{}", masks.mask(line)));
        }
        for mut value in values {
            masks.value(&mut value, None);
            out.push_str(&value.to_string());
        }
        out.push('\n');
    }
    (out, masks.replaced)
}

/// One finding as a bundle must keep it: kind, place, ids, severity.
pub type Shown = (String, String, Vec<String>, String);

/// What the check says of a file, as a bundle must keep it: each
/// finding's kind, place, ids and severity, and the file's format.
pub fn verdict(path: &Path) -> (Option<String>, Vec<Shown>) {
    let report = crate::report::check_file(path, None, &[], &mut |_, _| {}, &mut |_| {});
    let findings = report
        .results
        .iter()
        .flat_map(|r| r.findings.iter())
        .map(|f| {
            (
                f.kind.as_str().to_string(),
                f.path.clone(),
                f.ids.clone(),
                f.severity.to_string(),
            )
        })
        .collect();
    (report.format.map(|s| s.as_str().to_string()), findings)
}

/// Why a bundle was not written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The file could not be read.
    #[error("{0}")]
    Read(String),
    /// The bundle would not show what the file shows.
    #[error(
        "the bundle would not show what the file shows (the file: {original}; the bundle: {bundled}); nothing was written"
    )]
    Differs {
        /// The original's findings, said.
        original: String,
        /// The bundle's.
        bundled: String,
    },
    /// Writing failed (an existing output without --force, …).
    #[error("{0}")]
    Write(String),
}

/// What a bundle holds and shows.
#[derive(Debug)]
pub struct Bundled {
    /// The format it is read as.
    pub format: Option<String>,
    /// The findings it shows (the same as the original's).
    pub findings: Vec<Shown>,
    /// How many distinct strings were replaced.
    pub replaced: usize,
}

/// The findings said in one line (`kind (severity) at place [ids]; …`).
pub fn said(findings: &[Shown]) -> String {
    match findings.is_empty() {
        true => "no problems".into(),
        false => findings
            .iter()
            .map(|(kind, path, ids, severity)| {
                format!("{kind} ({severity}) at {path} [{}]", ids.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Bundles `input` into `output` (a new file, or with `force` a file
/// replaced), checked first: written only when the bundle shows the same
/// findings as the file.
pub fn bundle(input: &Path, output: &Path, force: bool) -> Result<Bundled, BundleError> {
    if loopdbg_io::files::same_file(input, output) {
        return Err(BundleError::Write(
            "-o names the file being bundled: it is never written over".into(),
        ));
    }
    let bytes = loopdbg_io::files::read_regular(input, crate::limits::MAX_WHOLE_BYTES)
        .map_err(|e| BundleError::Read(format!("{}: {e}", input.display())))?;
    let bytes = match bytes.starts_with(&[0x1f, 0x8b]) {
        true => {
            return Err(BundleError::Read(format!(
                "{}: compressed; bundle `gunzip -c` of it",
                input.display()
            )));
        }
        false => bytes,
    };
    let text = String::from_utf8_lossy(&bytes);
    let (bundled, replaced) = bundle_text(&text);
    // Checked where the original is read the same way: a file of the
    // same name's ending, beside nothing of the user's.
    let scratch = tempfile::tempdir().map_err(|e| BundleError::Write(e.to_string()))?;
    let name = input
        .file_name()
        .map_or_else(|| "bundle.json".into(), |n| n.to_owned());
    let trial = scratch.path().join(name);
    std::fs::write(&trial, &bundled).map_err(|e| BundleError::Write(e.to_string()))?;
    let (format, findings) = verdict(input);
    let (bundled_format, bundled_findings) = verdict(&trial);
    if format != bundled_format || findings != bundled_findings {
        return Err(BundleError::Differs {
            original: format!(
                "{} {}",
                format.as_deref().unwrap_or("unknown"),
                said(&findings)
            ),
            bundled: format!(
                "{} {}",
                bundled_format.as_deref().unwrap_or("unknown"),
                said(&bundled_findings)
            ),
        });
    }
    let existing = match force {
        true => loopdbg_io::files::Existing::Replace,
        false => loopdbg_io::files::Existing::Keep,
    };
    loopdbg_io::files::write_file(output, existing, |out| out.write_all(bundled.as_bytes()))
        .map_err(|e| BundleError::Write(format!("{}: {e}", output.display())))?;
    Ok(Bundled {
        format,
        findings,
        replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_stays_and_words_go() {
        let line = r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","version":"2.1.332","message":{"role":"assistant","model":"claude-x","content":[{"type":"text","text":"my secret plan"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cat ~/.ssh/id_rsa"}}],"stop_reason":"tool_use"}}"#;
        let (out, replaced) = bundle_text(&format!("{line}\n{line}\nnot json\n"));
        assert_eq!(replaced, 3);
        assert!(!out.contains("secret") && !out.contains("id_rsa"), "{out}");
        for kept in [
            "\"assistant\"",
            "\"a1\"",
            "\"u1\"",
            "2.1.332",
            "claude-x",
            "toolu_1",
            "\"Bash\"",
            "\"tool_use\"",
            "\"command\"",
        ] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
        // The same text, the same placeholder; the torn line torn still,
        // its words masked.
        assert_eq!(out.lines().count(), 3);
        assert_eq!(out.lines().nth(2), Some(r#"{"torn": "text-3"#));
        assert_eq!(out.lines().next(), out.lines().nth(1));
    }

    #[test]
    fn json_held_in_a_string_is_bundled_inside_and_emptiness_kept() {
        let body = r#"{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"account\": \"4111 1111 1111 1111\"}"}}]}]}"#;
        let (out, _) = bundle_text(body);
        assert!(!out.contains("4111"), "{out}");
        let value: Value = serde_json::from_str(&out).unwrap();
        let arguments = value["messages"][0]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        let inner: Value = serde_json::from_str(arguments).unwrap();
        assert_eq!(inner["account"], "text-1");
        assert_eq!(value["messages"][0]["content"], "");
    }
}
