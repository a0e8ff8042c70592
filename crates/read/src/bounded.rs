//! A JSON value parsed with a bound on the memory it takes (issue 59,
//! item 1). A `serde_json::Value` costs far more than its text: `[0,0,…]`
//! takes 16 bytes of values per byte of text, and a small gzip member
//! inflates to a document the size of the machine's memory (a 777 KB
//! `.json.gz` took 15 GB). Every document and line an input holds is
//! parsed here, charged as it is built, and refused at the first value
//! past the limit, with the line and column it stopped at.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;

/// How many bytes of parsed values one byte of text may take. Measured on
/// on every fixture (agents' logs, request bodies, recordings, traces):
/// 2–5× for pieces over 5 KB, up to 12.7× for small compact request
/// bodies (short keys, short strings cost the most).
pub const PARSED_PER_TEXT_BYTE: usize = 16;

/// What any text may take however short it is, so that a small document
/// of empty arrays is not refused for its ratio.
pub const PARSED_FLOOR: usize = 64 << 20;

/// The most the values parsed from `text_len` bytes of JSON may take.
pub fn limit_for(text_len: usize) -> usize {
    PARSED_FLOOR.max(text_len.saturating_mul(PARSED_PER_TEXT_BYTE))
}

/// `text` as a JSON value, refused past [`limit_for`] its length.
pub fn value(text: &str) -> serde_json::Result<Value> {
    value_within(text, limit_for(text.len()))
}

/// `bytes` as a JSON value, refused past [`limit_for`] their length.
pub fn value_of_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let limit = limit_for(bytes.len());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Charged::new(&Cell::new(limit), limit).deserialize(&mut de)?;
    de.end()?;
    Ok(parsed)
}

/// [`value_of_slice`], with what its values took of the limit: the gate
/// keeps it beside a remembered request, so a next request read past
/// their shared prefix is refused where reading it whole would be
/// (`prefix`).
pub fn value_of_slice_spent(bytes: &[u8]) -> serde_json::Result<(Value, usize)> {
    let limit = limit_for(bytes.len());
    let left = Cell::new(limit);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Charged::new(&left, limit).deserialize(&mut de)?;
    de.end()?;
    Ok((parsed, limit - left.get()))
}

/// `text`, one value, paid for from `left` out of `limit`.
pub(crate) fn value_spending(
    text: &str,
    left: &Cell<usize>,
    limit: usize,
) -> serde_json::Result<Value> {
    one_value(text, left, limit)
}

/// `text` as a JSON value whose values take at most `limit` bytes.
pub fn value_within(text: &str, limit: usize) -> serde_json::Result<Value> {
    one_value(text, &Cell::new(limit), limit)
}

/// The JSON values written one after another in `text` (pretty objects
/// in a row, as the OpenTelemetry console exporter prints spans), all of
/// them together within [`limit_for`] the text's length. Each is found
/// by its extent first ([`RawValue`](serde_json::value::RawValue): no
/// value built), then parsed; an error's place is in that value.
pub fn values(text: &str) -> impl Iterator<Item = serde_json::Result<Value>> + '_ {
    let limit = limit_for(text.len());
    let left = Cell::new(limit);
    let mut extents =
        serde_json::Deserializer::from_str(text).into_iter::<&serde_json::value::RawValue>();
    std::iter::from_fn(move || match extents.next()? {
        Ok(raw) => Some(one_value(raw.get(), &left, limit)),
        Err(e) => Some(Err(e)),
    })
}

/// `text` as one JSON value, paid for from `left`.
fn one_value(text: &str, left: &Cell<usize>, limit: usize) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Charged::new(left, limit).deserialize(&mut de)?;
    de.end()?;
    Ok(parsed)
}

/// A seed that parses one value paid for from `left` out of `limit`, for
/// a reader that parses the rest of its text its own way (a Codex
/// rollout's records, `codex::parse_line`).
pub(crate) fn seed(
    left: &Cell<usize>,
    limit: usize,
) -> impl for<'de> DeserializeSeed<'de, Value = Value> + Copy + '_ {
    Charged::new(left, limit)
}

/// Up to how long a text may be that a reader skips parts of with
/// [`Skip`] (or reads into values it does not charge): the values of
/// text this long cannot pass [`PARSED_FLOOR`] (a one-digit number in an
/// array takes up to 216 bytes with the array's spare room, 108 per
/// byte of text), so the bounded parser refuses none of it for its size.
pub(crate) const SKIPPED_UP_TO: usize = 512 << 10;

/// A value passed over, parsed as the bounded parser parses it (every
/// string decoded, every number read, nesting within serde_json's limit),
/// so that a line it would refuse is refused here too, but with nothing
/// built (and nothing charged: a reader skipping this way reads text of
/// at most [`SKIPPED_UP_TO`]). (`IgnoredAny` skips without a limit on nesting and takes a lone
/// surrogate.)
pub(crate) struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
}

/// What an element costs beyond its own value: one `Value` in its array.
const VALUE: usize = std::mem::size_of::<Value>();
/// What a member of an object costs beyond its value and its key's
/// bytes: the key's `String`, the map's hash and its index.
const MEMBER: usize = std::mem::size_of::<String>() + 2 * std::mem::size_of::<usize>() + 1;

/// A value built while the budget `left` lasts.
#[derive(Clone, Copy)]
struct Charged<'a> {
    left: &'a Cell<usize>,
    limit: usize,
}

impl<'a> Charged<'a> {
    fn new(left: &'a Cell<usize>, limit: usize) -> Self {
        Charged { left, limit }
    }

    fn spend<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(rest) => {
                self.left.set(rest);
                Ok(())
            }
            None => Err(E::custom(format!(
                "parsed, this JSON would take more than {} MiB of memory ({}× its length, at least {} MiB); \
                 no conversation is built of so many small values, so it is not read further",
                self.limit >> 20,
                PARSED_PER_TEXT_BYTE,
                PARSED_FLOOR >> 20
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Charged<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Charged<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.spend(VALUE)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.spend(VALUE)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.spend(VALUE)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.spend(VALUE)?;
        // As serde_json does: a float JSON cannot hold is null.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(VALUE + v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.spend(VALUE + v.len())?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.spend(VALUE)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend(VALUE)?;
        let mut items = Vec::new();
        let mut paid = 0;
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
            // The array's spare room is memory too: paid as it grows.
            if items.capacity() > paid {
                self.spend((items.capacity() - paid) * VALUE)?;
                paid = items.capacity();
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(VALUE)?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.spend(MEMBER + key.len())?;
            let member = map.next_value_seed(self)?;
            members.insert(key, member);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_parses_as_serde_json_parses_it() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u00e9","a2":1e400}"#;
        let ours = value(text);
        let theirs = serde_json::from_str::<Value>(text);
        // 1e400 is out of range for both.
        assert_eq!(ours.is_err(), theirs.is_err());
        let text = r#"{"z":1,"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u00e9"}"#;
        assert_eq!(
            value(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        // Order of keys kept (the workspace's preserve_order).
        let keys: Vec<_> = value(text)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["z", "a", "c"]);
        assert!(value("[1,2] x").is_err(), "trailing text is refused");
        assert!(value("").is_err());
    }

    #[test]
    fn values_past_the_limit_are_refused_where_they_stop() {
        let text = format!("[{}0]", "0,".repeat(100_000));
        let e = value_within(&text, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("more than 1 MiB"), "{e}");
        assert_eq!(e.line(), 1);
        assert!(e.column() > 1 && e.column() < text.len(), "{}", e.column());
        assert!(value_within(&text, 16 << 20).is_ok());
        // The default limit is for the text's length: this one is small.
        assert!(value(&text).is_ok());
    }

    #[test]
    fn values_in_a_row_share_one_limit() {
        let text = "{\"a\":1}\n{\"b\":[2]}  [3]";
        let all: Vec<Value> = values(text).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            all,
            [
                serde_json::json!({"a":1}),
                serde_json::json!({"b":[2]}),
                serde_json::json!([3])
            ]
        );
        assert!(values("{} {").last().unwrap().is_err());
        // Each value alone is small; together they pass the floor.
        let one = format!("[{}0]\n", "0,".repeat(1 << 18));
        let many = one.repeat(40);
        assert!(values(&one).all(|v| v.is_ok()));
        assert!(values(&many).any(|v| v.is_err()));
    }

    /// What [`Skip`] relies on: text of [`SKIPPED_UP_TO`] bytes of the
    /// costliest values there are (one-digit numbers, empty arrays and
    /// objects, empty strings, one-letter keys), each count just past a
    /// power of two so the arrays hold the most spare room, stays within
    /// the floor.
    #[test]
    fn text_a_skip_may_read_is_within_the_floor() {
        let most = SKIPPED_UP_TO;
        let fill = |one: &str| {
            // The most elements that fit, then down to one past a power of
            // two.
            let n = (most - 2) / one.len();
            let n = (n.next_power_of_two() / 2 + 1).min(n);
            format!("[{}]", one.repeat(n).trim_end_matches(','))
        };
        let keys = |n: usize| (0..n).map(|k| format!("\"{k:x}\":0,")).collect::<String>();
        let mut n = 1;
        while keys(n * 2).len() + 2 <= most {
            n *= 2;
        }
        for text in [
            fill("0,"),
            fill("[],"),
            fill("{},"),
            fill("\"\","),
            format!("{{{}}}", keys(n).trim_end_matches(',')),
        ] {
            assert!(text.len() <= most, "{}", text.len());
            let left = Cell::new(PARSED_FLOOR);
            let parsed = value_spending(&text, &left, PARSED_FLOOR);
            assert!(parsed.is_ok(), "{}", &text[..20]);
        }
        // Twice as long, the numbers are past it.
        let twice = format!("[{}]", "0,".repeat(most).trim_end_matches(','));
        assert!(value_within(&twice, PARSED_FLOOR).is_err());
    }

    #[test]
    fn deep_nesting_is_refused_as_serde_json_refuses_it() {
        let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(value(&text).unwrap_err().to_string().contains("recursion"));
    }
}
