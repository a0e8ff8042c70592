//! A repaired JSON value written back over the text it was read from:
//! every part the repair left alone is the original text, byte for byte.
//!
//! serde_json reads a number into an `f64` or a 64-bit integer, so writing
//! a repaired body from its `Value` changed what the repair never touched:
//! `1e2` became `100.0`, an integer past 64 bits a float
//! (`1.2345678901234568e+29`), and a key written twice once. [`rewrite`]
//! walks the repaired value beside the original text (split by serde_json
//! itself into [`RawValue`]s, no parser of loopdbg's own) and copies each
//! unchanged value's text as it was; only what the repair made or changed
//! is written by serde_json. What it writes always reads back as the
//! repaired value.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// How far ahead in an array an unchanged element is looked for: a repair
/// inserts or removes a few elements (a result, a call), not many.
const LOOKAHEAD: usize = 8;

/// `edited` as JSON text, reusing `original`'s text for every value equal
/// to the one it was read as. `original` is the text `edited` was parsed
/// from before the repair; when it is not JSON, `edited` is written whole.
pub fn rewrite(original: &str, edited: &Value) -> String {
    let mut out = String::with_capacity(original.len() + 256);
    match serde_json::from_str::<&RawValue>(original) {
        Ok(raw) => write_like(raw, edited, &mut out),
        Err(_) => out.push_str(&edited.to_string()),
    }
    out
}

/// Writes `edited`, the text of `raw` wherever it still holds.
fn write_like(raw: &RawValue, edited: &Value, out: &mut String) {
    let text = raw.get();
    if serde_json::from_str::<Value>(text).is_ok_and(|v| v == *edited) {
        out.push_str(text);
        return;
    }
    match (text.as_bytes().first(), edited) {
        (Some(b'{'), Value::Object(map)) => match members(text) {
            Some(members) => {
                out.push('{');
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    // A key written twice: serde_json kept the last.
                    match members.iter().rev().find(|(k, _)| k == key) {
                        Some((_, raw)) => write_like(raw, value, out),
                        None => out.push_str(&value.to_string()),
                    }
                }
                out.push('}');
            }
            None => out.push_str(&edited.to_string()),
        },
        (Some(b'['), Value::Array(items)) => match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(elements) => write_array(&elements, items, out),
            Err(_) => out.push_str(&edited.to_string()),
        },
        _ => out.push_str(&edited.to_string()),
    }
}

/// Writes `items`, each element kept, inserted or changed matched to the
/// original `elements` in order.
fn write_array(elements: &[&RawValue], items: &[Value], out: &mut String) {
    let parsed: Vec<Option<Value>> = elements
        .iter()
        .map(|e| serde_json::from_str(e.get()).ok())
        .collect();
    let mut next = 0;
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let ahead = next..elements.len().min(next + LOOKAHEAD);
        // Kept as it was (elements before it may have been removed).
        if let Some(k) = ahead.clone().find(|&k| parsed[k].as_ref() == Some(item)) {
            out.push_str(elements[k].get());
            next = k + 1;
            continue;
        }
        // Inserted: the original element at hand comes later, unchanged.
        let later = &items[i + 1..items.len().min(i + 1 + LOOKAHEAD)];
        let inserted = parsed
            .get(next)
            .and_then(Option::as_ref)
            .is_some_and(|p| later.contains(p));
        match (inserted, elements.get(next)) {
            (false, Some(raw)) => {
                // Changed in place: its unchanged parts are kept.
                write_like(raw, item, out);
                next += 1;
            }
            _ => out.push_str(&item.to_string()),
        }
    }
    out.push(']');
}

/// An object's members in the order written, a key written twice kept
/// twice.
fn members(text: &str) -> Option<Vec<(String, &RawValue)>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(String, &'de RawValue)>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = Vec::new();
            while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                members.push(entry);
            }
            Ok(members)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Members).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads_back(original: &str, edited: &Value) -> String {
        let written = rewrite(original, edited);
        let back: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(back, *edited, "{written}");
        written
    }

    /// The repair adds a result: the numbers and keys it did not touch stay
    /// as written, and so does the spacing inside every value it left
    /// whole (a changed object's own members are written compactly).
    #[test]
    fn what_a_repair_leaves_alone_stays_as_written() {
        let original = r#"{"model": "m", "max_tokens": 1e3, "seed": 123456789012345678901234567890,
 "temperature": 0.10, "metadata": {"k": 1, "k": 2},
 "messages": [{"role": "user", "content": "hi"},
  {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"n": 1E2}}]},
  {"role": "user", "content": "next"}]}"#;
        let mut edited: Value = serde_json::from_str(original).unwrap();
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[no result]"}]});
        edited["messages"].as_array_mut().unwrap().insert(2, result);
        let written = reads_back(original, &edited);
        for kept in [
            r#""max_tokens":1e3"#,
            "123456789012345678901234567890",
            r#""temperature":0.10"#,
            r#"{"k": 1, "k": 2}"#,
            r#"{"n": 1E2}"#,
            r#"{"role": "user", "content": "next"}"#,
        ] {
            assert!(written.contains(kept), "{kept} lost: {written}");
        }
    }

    #[test]
    fn removed_changed_and_retyped_values_are_written_as_repaired() {
        let original = r#"[1e2, {"a": 1.50, "b": [1, 2, 3]}, "x", 7]"#;
        let cases = [
            json!([100.0, {"a": 1.5, "b": [1, 3]}, 7]),
            json!([{"a": 1.5, "b": [1, 2, 3]}, "x", 7, "new"]),
            json!({"was": "an array"}),
            json!([]),
        ];
        for edited in cases {
            reads_back(original, &edited);
        }
        let written = reads_back(original, &json!([100.0, {"a": 1.5, "b": [1, 3]}, 7]));
        assert!(
            written.starts_with("[1e2,") && written.contains(r#""a":1.50"#),
            "{written}"
        );
        assert_eq!(rewrite("not json", &json!({"a": 1})), r#"{"a":1}"#);
    }
}
