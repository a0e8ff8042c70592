//! Fingerprints: 64-bit numbers that compare as the JSON or text they were
//! taken from compares, read without building it. `check` reads logs with
//! [`Detail::Shape`](super::Detail::Shape): it compares a turn's text and
//! arguments with the previous turn's, and never shows them, so a log of
//! gigabytes of file contents is held as a few numbers per block.
//!
//! Within one run, equal inputs always give equal fingerprints. JSON is compared as
//! `serde_json::Value` compares: object keys in any order, `1` and `1.0`
//! different. Unequal inputs collide with a chance of about 2⁻⁶⁴.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Detail;
use loopdbg_engine::message::Block;
use loopdbg_engine::session::{Json, Text};

/// Seeds drawn once per process: fingerprints and keys are only ever
/// compared within one run, and a log cannot be written to make two of
/// them collide when the seeds are not known in advance.
pub(crate) fn hasher() -> &'static ahash::RandomState {
    static SEEDS: std::sync::OnceLock<ahash::RandomState> = std::sync::OnceLock::new();
    SEEDS.get_or_init(ahash::RandomState::new)
}

fn mix(tag: u8, value: u64) -> u64 {
    hasher().hash_one((tag, value))
}

/// The fingerprint of a text.
pub fn of_text(text: &str) -> u64 {
    mix(b's', hasher().hash_one(text))
}

/// A key naming `name` in one run (never 0, which stands for none).
pub fn key(tag: u8, name: &str) -> u64 {
    hasher().hash_one((tag, name)) | 1
}

/// The fingerprint of a JSON value, read from its text.
pub fn of_json(raw: &RawValue) -> u64 {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    // `raw` is JSON serde_json already read, so this cannot fail; were it
    // to, a fingerprint of the text still compares equal texts equal.
    Print::deserialize(&mut de).map_or_else(|_| of_text(raw.get()), |p| p.0)
}

/// A value's fingerprint, as serde reads it.
struct Print(u64);

impl<'de> Deserialize<'de> for Print {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Print, D::Error> {
        d.deserialize_any(PrintVisitor)
    }
}

struct PrintVisitor;

impl<'de> Visitor<'de> for PrintVisitor {
    type Value = Print;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_unit<E>(self) -> Result<Print, E> {
        Ok(Print(mix(b'n', 0)))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Print, E> {
        Ok(Print(mix(b'b', u64::from(v))))
    }

    // serde_json reads non-negative integers as u64 and negative ones as
    // i64, so the two never describe the same number.
    fn visit_u64<E>(self, v: u64) -> Result<Print, E> {
        Ok(Print(mix(b'u', v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Print, E> {
        // `-0` comes as an i64 and is the same number as `0`.
        match u64::try_from(v) {
            Ok(v) => Ok(Print(mix(b'u', v))),
            Err(_) => Ok(Print(mix(b'i', v as u64))),
        }
    }

    fn visit_f64<E>(self, v: f64) -> Result<Print, E> {
        // -0.0 == 0.0, as `Value` compares them.
        let bits = if v == 0.0 { 0 } else { v.to_bits() };
        Ok(Print(mix(b'f', bits)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Print, E> {
        Ok(Print(of_text(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Print, A::Error> {
        let mut h = mix(b'[', 0);
        while let Some(Print(item)) = seq.next_element()? {
            h = mix(b',', h ^ item.rotate_left(17));
        }
        Ok(Print(h))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Print, A::Error> {
        // A key given twice keeps its last value, as in a `Value`.
        let mut members: Vec<(u64, u64)> = Vec::new();
        let mut index: Option<ahash::AHashMap<u64, usize>> = None;
        while let Some(key) = map.next_key_seed(KeyPrint)? {
            let Print(value) = map.next_value()?;
            let at = match &index {
                Some(index) => index.get(&key).copied(),
                None => members.iter().position(|m| m.0 == key),
            };
            match at {
                Some(at) => members[at].1 = value,
                None => {
                    if let Some(index) = index.as_mut() {
                        index.insert(key, members.len());
                    }
                    members.push((key, value));
                    // Past a handful of keys, look them up by hash.
                    if index.is_none() && members.len() > 16 {
                        index = Some(members.iter().enumerate().map(|(i, m)| (m.0, i)).collect());
                    }
                }
            }
        }
        // Members are summed, so their order does not count.
        let sum = members.iter().fold(0u64, |sum, &(key, value)| {
            sum.wrapping_add(mix(b':', key ^ value.rotate_left(29)))
        });
        Ok(Print(mix(b'{', sum ^ members.len() as u64)))
    }
}

/// An object key's fingerprint, read without copying it.
struct KeyPrint;

impl<'de> DeserializeSeed<'de> for KeyPrint {
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, v: &str) -> Result<u64, E> {
        Ok(of_text(v))
    }
}

/// A text as `detail` keeps it: itself, or (non-empty) its fingerprint.
/// Readers call this on the text as they find it, so a long text under
/// `Shape` is never copied whole (a 250 MB prompt through the proxy's gate
/// was held twice more while it was checked).
pub(crate) fn kept_text(text: &str, detail: Detail) -> Text {
    match detail {
        // Written on the stack and copied once into the shared text: a
        // `format!` would allocate it twice, for every text of a log.
        // A text of only whitespace stays one space, apart from an empty
        // one and from any text: providers refuse both (`blank_text`).
        Detail::Shape if !text.is_empty() && text.trim().is_empty() => " ".into(),
        Detail::Shape if !text.is_empty() => {
            use std::io::Write;
            let mut hex = [0u8; 16];
            let _ = write!(&mut hex[..], "{:016x}", of_text(text));
            std::str::from_utf8(&hex).unwrap_or_default().into()
        }
        _ => text.into(),
    }
}

/// Arguments in outline: `null` as in full (absent or written `null`),
/// anything else as its fingerprint.
pub(crate) fn shaped_json(raw: Option<&RawValue>) -> Value {
    match raw {
        Some(raw) if raw.get().trim() != "null" => Value::from(of_json(raw)),
        _ => Value::Null,
    }
}

/// Content not kept: one shared `null`, so dropping costs no allocation.
pub(crate) fn dropped() -> Json {
    static NULL: std::sync::OnceLock<Json> = std::sync::OnceLock::new();
    NULL.get_or_init(|| Json::new(Value::Null)).clone()
}

/// A call's arguments as their fingerprint, a result's content dropped:
/// what `Shape` keeps of a block read in full (texts are kept by
/// [`kept_text`] as they are read).
pub(crate) fn shape_payload(block: &mut Block) {
    match block {
        Block::Text { .. } => {}
        Block::ToolUse { input, .. } => {
            let raw = serde_json::value::to_raw_value(&**input).ok();
            *input = Json::new(shaped_json(raw.as_deref()));
        }
        Block::ToolResult { content, .. } => *content = dropped(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(json: &str) -> u64 {
        let raw: Box<RawValue> = serde_json::from_str(json).unwrap();
        of_json(&raw)
    }

    /// Whether two JSON texts are equal as `serde_json::Value`s.
    fn values_equal(a: &str, b: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(a).unwrap()
            == serde_json::from_str::<serde_json::Value>(b).unwrap()
    }

    #[test]
    fn fingerprints_compare_as_values_compare() {
        let texts = [
            r#"{"a":1,"b":[1,2]}"#,
            r#"{ "b": [1, 2], "a": 1 }"#,
            r#"{"a":1,"b":[2,1]}"#,
            r#"{"a":1.0,"b":[1,2]}"#,
            r#"{"a":"1","b":[1,2]}"#,
            r#"{"a":-1,"b":[1,2]}"#,
            r#"{"a":1}"#,
            r#"{"a":1,"b":[1,2],"c":null}"#,
            r#"{"a\u0031":1}"#,
            r#"{"a1":1}"#,
            r#"[[1],[2]]"#,
            r#"[[1,2]]"#,
            r#"[1,[2]]"#,
            r#""x""#,
            r#"0.0"#,
            r#"-0.0"#,
            r#"null"#,
            r#"false"#,
            r#"0"#,
            r#"{}"#,
            r#"[]"#,
            r#""""#,
            r#"-0"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":2}"#,
            r#"{"a":2,"a":1}"#,
        ];
        for a in texts {
            for b in texts {
                assert_eq!(
                    print(a) == print(b),
                    values_equal(a, b),
                    "{a} vs {b}: fingerprints and values disagree"
                );
            }
        }
    }

    #[test]
    fn text_and_json_strings_differ_from_other_kinds() {
        assert_eq!(of_text("x"), print(r#""x""#));
        assert_ne!(of_text("1"), print("1"));
    }
}
