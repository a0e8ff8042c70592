//! A Claude Code event as the doctor keeps it while it plans: what the
//! repair decides by (the event's type, uuid and parent, the message's id,
//! each block's type and ids, the uuids a compaction keeps), not the text
//! and tool output that make a log large. A line is read straight into
//! this shape; only a line of an unexpected shape (a `message` that is
//! `true`, a block that is a string) goes through a whole `Value` first.

use serde::Deserialize;
use serde_json::Value;

/// One event of a Claude Code log.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Event {
    /// `type`: `user`, `assistant`, `system`, `progress`, …
    pub kind: Option<Box<str>>,
    /// `subtype` is `compact_boundary`.
    pub compact_boundary: bool,
    pub uuid: Option<Box<str>>,
    /// `parentUuid` when it is a string.
    pub parent: Option<Box<str>>,
    /// `parentUuid` is there and `null` (the first event of a chain).
    pub parent_null: bool,
    /// `message.id` when it is a string.
    pub message_id: Option<Box<str>>,
    /// `message.content` when it is an array (not when it is a string).
    pub blocks: Box<[Block]>,
    /// The uuids the compaction this event marks keeps
    /// (`compactMetadata.preservedSegment` and `preservedMessages`).
    pub kept: Box<[Box<str>]>,
}

/// A content block: its type and the call id it names.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Block {
    pub kind: Option<Box<str>>,
    /// `id` of a `tool_use`.
    pub id: Option<Box<str>>,
    /// `tool_use_id` of a `tool_result`.
    pub tool_use_id: Option<Box<str>>,
}

impl Event {
    /// The event on a line of JSON; `None` when the line is not JSON. A
    /// line that is JSON of another shape is an event with nothing set.
    pub fn parse(text: &str) -> Option<Event> {
        match serde_json::from_str::<Wire>(text) {
            Ok(wire) => Some(wire.into()),
            Err(_) => loopdbg_read::bounded::value(text)
                .ok()
                .map(|v| Event::of_value(&v)),
        }
    }

    /// Whether `type` is `kind`.
    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// The same, read from a value of any shape.
    pub fn of_value(v: &Value) -> Event {
        let text = |v: &Value| v.as_str().map(Box::from);
        let meta = &v["compactMetadata"];
        let segment = &meta["preservedSegment"];
        let kept = ["headUuid", "tailUuid", "anchorUuid"]
            .iter()
            .map(|k| &segment[*k])
            .chain([&meta["preservedMessages"]["anchorUuid"]])
            .chain(
                meta["preservedMessages"]["uuids"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .filter_map(text)
            .collect();
        let blocks = v["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| Block {
                kind: text(&b["type"]),
                id: text(&b["id"]),
                tool_use_id: text(&b["tool_use_id"]),
            })
            .collect();
        Event {
            kind: text(&v["type"]),
            compact_boundary: v["subtype"] == "compact_boundary",
            uuid: text(&v["uuid"]),
            parent: text(&v["parentUuid"]),
            parent_null: v.get("parentUuid").is_some_and(Value::is_null),
            message_id: text(&v["message"]["id"]),
            blocks,
            kept,
        }
    }

    /// `parentUuid` as a value, for an event that takes this one's place.
    pub fn parent_value(&self) -> Value {
        self.parent.as_deref().map_or(Value::Null, Value::from)
    }
}

/// The line as serde reads it when every member has the expected type.
/// Unknown members are skipped without being kept.
#[derive(Deserialize)]
struct Wire {
    #[serde(rename = "type")]
    kind: Option<Box<str>>,
    subtype: Option<Box<str>>,
    uuid: Option<Box<str>>,
    #[serde(rename = "parentUuid", default, deserialize_with = "present")]
    parent: Option<Option<Box<str>>>,
    message: Option<WireMessage>,
    #[serde(rename = "compactMetadata")]
    compact: Option<WireCompact>,
}

/// `Some(None)` for a member that is there and `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<Box<str>>>, D::Error> {
    Option::<Box<str>>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct WireMessage {
    id: Option<Box<str>>,
    #[serde(default)]
    content: WireContent,
}

/// `message.content`: blocks, or a string (a typed prompt), or nothing;
/// anything else fails, and the line is read through a `Value`.
#[derive(Default)]
enum WireContent {
    Blocks(Vec<WireBlock>),
    #[default]
    None,
}

impl<'de> Deserialize<'de> for WireContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Content;
        impl<'de> serde::de::Visitor<'de> for Content {
            type Value = WireContent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of blocks or a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<WireContent, E> {
                Ok(WireContent::None)
            }
            fn visit_unit<E>(self) -> Result<WireContent, E> {
                Ok(WireContent::None)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<WireContent, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(WireContent::Blocks(blocks))
            }
        }
        d.deserialize_any(Content)
    }
}

#[derive(Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: Option<Box<str>>,
    id: Option<Box<str>>,
    tool_use_id: Option<Box<str>>,
}

#[derive(Deserialize)]
struct WireCompact {
    #[serde(rename = "preservedSegment")]
    segment: Option<WireSegment>,
    #[serde(rename = "preservedMessages")]
    messages: Option<WireKept>,
}

#[derive(Deserialize)]
struct WireSegment {
    #[serde(rename = "headUuid")]
    head: Option<Box<str>>,
    #[serde(rename = "tailUuid")]
    tail: Option<Box<str>>,
    #[serde(rename = "anchorUuid")]
    anchor: Option<Box<str>>,
}

#[derive(Deserialize)]
struct WireKept {
    #[serde(rename = "anchorUuid")]
    anchor: Option<Box<str>>,
    uuids: Option<Vec<Box<str>>>,
}

impl From<Wire> for Event {
    fn from(wire: Wire) -> Event {
        let (message_id, blocks) = match wire.message {
            Some(m) => {
                let blocks = match m.content {
                    WireContent::Blocks(blocks) => blocks
                        .into_iter()
                        .map(|b| Block {
                            kind: b.kind,
                            id: b.id,
                            tool_use_id: b.tool_use_id,
                        })
                        .collect(),
                    WireContent::None => Box::default(),
                };
                (m.id, blocks)
            }
            None => (None, Box::default()),
        };
        let mut kept = Vec::new();
        if let Some(compact) = wire.compact {
            if let Some(s) = compact.segment {
                kept.extend([s.head, s.tail, s.anchor].into_iter().flatten());
            }
            if let Some(m) = compact.messages {
                kept.extend(m.anchor);
                kept.extend(m.uuids.into_iter().flatten());
            }
        }
        Event {
            kind: wire.kind,
            compact_boundary: wire.subtype.as_deref() == Some("compact_boundary"),
            uuid: wire.uuid,
            parent_null: matches!(wire.parent, Some(None)),
            parent: wire.parent.flatten(),
            message_id,
            blocks,
            kept: kept.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// The typed path and the path through a `Value` read every shape
    /// alike, so which one a line takes never changes a repair.
    #[test]
    fn both_paths_read_alike() {
        let lines = [
            r#"{"type":"assistant","uuid":"a","parentUuid":"p","message":{"id":"m","content":[{"type":"tool_use","id":"t","input":{}},{"type":"text","text":"hi"}]}}"#,
            r#"{"type":"user","uuid":"b","parentUuid":null,"message":{"role":"user","content":"a prompt"},"toolUseResult":{"stdout":"x"}}"#,
            r#"{"type":"user","uuid":"c","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}]}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"d","compactMetadata":{"preservedSegment":{"headUuid":"h","tailUuid":"t","anchorUuid":"an"},"preservedMessages":{"anchorUuid":"x","uuids":["u1","u2"]}}}"#,
            r#"{"type":"progress","uuid":"e","parentUuid":"a","data":{"type":"hook_progress"}}"#,
            r#"{}"#,
        ];
        for line in lines {
            let typed = Event::from(serde_json::from_str::<Wire>(line).expect("typed"));
            let value = Event::of_value(&serde_json::from_str(line).unwrap());
            assert_eq!(typed, value, "{line}");
        }
    }

    /// Members of unexpected types are read through a `Value`: still an
    /// event (the line is JSON), with what can be read of it.
    #[test]
    fn odd_shapes_are_events() {
        for line in [
            r#"{"type":"user","message":true}"#,
            r#"{"type":7,"uuid":"u"}"#,
            r#"{"message":{"content":["a string block"]}}"#,
            r#"[1,2]"#,
            r#""text""#,
        ] {
            let event = Event::parse(line).expect("JSON is an event");
            assert_eq!(event, Event::of_value(&serde_json::from_str(line).unwrap()));
        }
        assert!(Event::parse("{not json").is_none());
        let event = Event::parse(r#"{"type":7,"uuid":"u"}"#).unwrap();
        assert_eq!(event.uuid.as_deref(), Some("u"));
        assert_eq!(event.kind, None);
    }
}
