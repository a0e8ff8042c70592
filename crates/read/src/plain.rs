//! `check`'s way into the format readers for a JSON Lines line: each
//! format's one reader (`anthropic`, `openai_chat`, `responses`, `gemini`,
//! `bedrock`) is deserialized straight from the line's text (no
//! `serde_json::Value` tree) and converts it as it converts a `Value`.
//!
//! A reader takes the line only when `detect` would give it that format
//! and it reads without an error: `None` means "read it the general way"
//! (detect on a `Value`, then the same reader), never "bad line". Which
//! format is tried first changes only the time. `tests` holds both ways
//! in to the same conversation on every fixture.
//!
//! Why: building a `Value` tree and walking it was two thirds of checking
//! a line, and `check` is measured against jq on 100 MB files.

use super::{Conversation, Source};
use loopdbg_formats::provider::Format;

/// The line read as `forced` (or as what it is), when it has the plain
/// shape; `None` sends it to the general reader.
pub fn conversation(line: &str, forced: Option<Source>) -> Option<Conversation> {
    match forced {
        Some(Source::Provider(format)) => read_as(line, format, true),
        Some(_) => None,
        None => guessed(line),
    }
}

/// [`conversation`], trying every shape whatever this thread has seen
/// (see `Seen`): what tests hold to the general reader line by line.
pub fn every_shape(line: &str, forced: Option<Source>) -> Option<Conversation> {
    match forced {
        Some(Source::Provider(format)) => read_as(line, format, true),
        Some(_) => None,
        None => FORMATS.into_iter().find_map(|f| read_as(line, f, false)),
    }
}

/// The formats in the order tried when the line's format is not known.
const FORMATS: [Format; 5] = [
    Format::Anthropic,
    Format::Openai,
    Format::Responses,
    Format::Gemini,
    Format::Bedrock,
];

/// What this thread has seen of the lines so far: the format that read
/// the last one (a file's lines share one, so it is tried first), and
/// how many lines in a row no shape took (a file of capture records or
/// of an agent's events: the path then stands aside for a while, so such
/// files do not pay five failed attempts a line).
#[derive(Clone, Copy)]
struct Seen {
    last: Format,
    misses: u32,
    standing_aside: u32,
}

thread_local! {
    static SEEN: std::cell::Cell<Seen> = const {
        std::cell::Cell::new(Seen { last: Format::Anthropic, misses: 0, standing_aside: 0 })
    };
}

/// Tries each shape, the last one that fitted first. Which one takes a
/// line changes only the time: each takes only what `detect` says is
/// its format, so no two take the same line.
fn guessed(line: &str) -> Option<Conversation> {
    let mut seen = SEEN.get();
    if seen.standing_aside > 0 {
        seen.standing_aside -= 1;
        SEEN.set(seen);
        return None;
    }
    let order = std::iter::once(seen.last).chain(FORMATS.into_iter().filter(|f| *f != seen.last));
    let mut found = None;
    for format in order {
        if let Some(conv) = read_as(line, format, false) {
            seen.last = format;
            found = Some(conv);
            break;
        }
    }
    match found {
        Some(_) => seen.misses = 0,
        None if seen.misses >= 3 => (seen.misses, seen.standing_aside) = (0, 64),
        None => seen.misses += 1,
    }
    SEEN.set(seen);
    found
}

/// The line read by `format`'s reader, when it takes it.
fn read_as(line: &str, format: Format, forced: bool) -> Option<Conversation> {
    // serde_json checks a `\u` escape's surrogates only in a string it
    // reads, not in one it skips (a field no reader looks at), so a line
    // with a lone surrogate there would be taken here and refused by the
    // general path (found by the `plain` fuzz target).
    if !surrogates_are_paired(line) {
        return None;
    }
    match format {
        Format::Openai => crate::openai_chat::plain(line, forced),
        Format::Anthropic => crate::anthropic::plain(line, forced),
        Format::Responses => crate::responses::plain(line),
        Format::Gemini => crate::gemini::plain(line),
        Format::Bedrock => crate::bedrock::plain(line),
    }
}

/// Whether every `\u` escape of a surrogate in `line` is a high one
/// followed by a low one, as serde_json requires of a string it reads.
pub(crate) fn surrogates_are_paired(line: &str) -> bool {
    if !line.contains("\\u") {
        return true;
    }
    let hex = |at: usize| {
        line.get(at..at + 4)
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        match hex(i + 2) {
            Some(0xD800..=0xDBFF) => {
                let low = (bytes.get(i + 6..i + 8) == Some(b"\\u".as_slice()))
                    .then(|| hex(i + 8))
                    .flatten();
                if !matches!(low, Some(0xDC00..=0xDFFF)) {
                    return false;
                }
                i += 12;
            }
            Some(0xDC00..=0xDFFF) => return false,
            _ => i += 6,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn general(line: &str) -> Conversation {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        let source = super::super::detect(&doc).unwrap();
        super::super::read_owned(doc, source).unwrap()
    }

    #[test]
    fn plain_bodies_read_as_the_general_readers_do() {
        let lines = [
            r#"{"model":"gpt-4.1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{not json"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"temp\":21}"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","required":["city"]},"strict":true}}],"temperature":0}"#,
            r#"{"messages":[{"role":"developer","content":"x"},{"role":"user"}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":null}}]}"#,
            r#"{"messages":[{"role":"assistant","content":"","tool_calls":[]},{"role":"tool","tool_call_id":"x"}]}"#,
            r#"{"model":"claude-sonnet-4-5","max_tokens":9,"system":"Be brief.","messages":[{"role":"user","content":"Weather in \"Paris\"?"},{"role":"assistant","content":[{"type":"text","text":"One lookup."},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"},"cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"21"}],"is_error":true},{"type":"text"}]},{"role":"assistant","content":null}],"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}]}"#,
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}"#,
            // Chat with content parts.
            r#"{"messages":[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
            // Responses as the openai-agents SDK sends it.
            r#"{"include":[],"input":[{"content":"Weather in Paris?","role":"user"},{"id":"fc_1","arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","status":"completed"},{"call_id":"call_1","output":"21","type":"function_call_output"},{"id":"msg_1","content":[{"annotations":[],"text":"21 degrees.","type":"output_text","logprobs":[]}],"role":"assistant","status":"completed","type":"message"}],"instructions":"Be brief.","model":"gpt-4.1","tools":[{"name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":true,"type":"function","description":"Weather."}],"stream":false}"#,
            r#"{"input":[{"role":"developer","content":"x"},{"type":"function_call","call_id":"a","name":"f"},{"type":"function_call","call_id":"b","name":"f","arguments":"{"},{"type":"function_call_output","call_id":"b","output":[{"type":"input_text","text":"x"}]}]}"#,
            // Gemini with and without ids, signed, a thought.
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"no"}}},{"functionResponse":{"name":"f","id":"x","response":{"result":1}}}]},{"parts":[{"text":"ok"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"F","parametersJsonSchema":{"type":"object"},"parameters":{}}]}],"model":"gemini-2.5-flash"}"#,
            // Bedrock with a system prompt, a cache point, an error result.
            r#"{"modelId":"anthropic.claude","system":[{"text":"a"},{"cachePoint":{"type":"default"}},{"text":"b"}],"messages":[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"no"}],"status":"error"}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{"type":"default"}}],"toolChoice":{"auto":{}}},"inferenceConfig":{"maxTokens":9}}"#,
            r#"{"messages":[{"role":"user","content":[{"text":null}]}]}"#,
            // Every format read by one reader, so the fast
            // path takes their odder shapes too: one part given as an
            // object, a snake_case system, an image block.
            r#"{"contents":[{"role":"user","parts":{"text":"hi"}}]}"#,
            r#"{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            r#"{"messages":[{"role":"user","content":[{"image":{"format":"png"}}]}]}"#,
            // And Responses': a stored reference, a continuation, a
            // custom call, `input` as a string.
            r#"{"input":[{"id":"fc_1"}]}"#,
            r#"{"previous_response_id":"r","input":[{"type":"function_call_output","call_id":"a","output":"x"}]}"#,
            r#"{"input":[{"type":"custom_tool_call","call_id":"a","name":"f","input":"x"}]}"#,
            r#"{"input":"hi","tools":[{"type":"function","name":"f"},{"function":{"name":"g"}}]}"#,
            // And Anthropic's: thinking, server tools, a call from code, a
            // Cline task store.
            r#"{"thinking":{"type":"enabled"},"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search"}]}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"tool_id":"s"}}]}]}"#,
            r#"{"messages":[{"role":"user","content":"hi","ts":1}],"max_tokens":1}"#,
            // And Chat's.
            // A null call id is paired by position, with a warning.
            r#"{"messages":[{"role":"tool","tool_call_id":null,"content":"x"}]}"#,
            // Content parts, a legacy function call, an unknown field.
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"x"}]}]}"#,
            r#"{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x","name":"f"}]}"#,
            // Duplicate keys: the last is kept, as in a `Value`.
            r#"{"messages":[{"role":"user","role":"tool","tool_call_id":"a"}]}"#,
        ];
        for line in lines {
            let plain =
                every_shape(line, None).unwrap_or_else(|| panic!("the plain path takes {line}"));
            assert_eq!(plain, general(line), "{line}");
        }
    }

    #[test]
    fn a_lone_surrogate_in_a_field_no_reader_reads_goes_to_the_general_reader() {
        let body = |text: &str| {
            format!(
                r#"{{"messages":[{{"role":"user","content":"hi","note":"{text}"}}],"max_tokens":1}}"#
            )
        };
        for bad in [r"\ud83e\ued16", r"\ud83e", r"\ude00x", r"x\ud83e\u0041"] {
            let line = body(bad);
            assert!(
                serde_json::from_str::<serde_json::Value>(&line).is_err(),
                "{line}"
            );
            assert!(every_shape(&line, None).is_none(), "{line}");
        }
        for good in [r"\ud83d\ude00", r"\\ud83e", r"\u00e9", "plain"] {
            let line = body(good);
            assert!(
                serde_json::from_str::<serde_json::Value>(&line).is_ok(),
                "{line}"
            );
            assert!(every_shape(&line, None).is_some(), "{line}");
        }
    }

    #[test]
    fn anything_else_goes_to_the_general_reader() {
        for line in [
            // Anthropic: a block it does not know (a notice), an unknown
            // role (an error), a block with no `type` (Bedrock's shape).
            r#"{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"toolUse"}]}]}"#,
            r#"{"max_tokens":1,"messages":[{"role":"robot","content":[{"type":"tool_use","id":"t","name":"f"}]}]}"#,
            r#"{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"text":"y"}]}]}"#,
            // Responses: a message with no role (an error), `input` as
            // an object (not Responses to `detect`).
            r#"{"input":[{"type":"message","content":"x"}]}"#,
            r#"{"input":{"role":"user"}}"#,
            // Gemini: an unknown role (an error); a body also holding
            // Responses' `input`.
            r#"{"contents":[{"role":"system","parts":[]}]}"#,
            r#"{"input":[],"contents":[{"role":"user","parts":[]}]}"#,
            // Bedrock: an empty block (a notice).
            r#"{"messages":[{"role":"user","content":[{}]}]}"#,
            // Another format's parts in a Chat-looking body: detect says
            // Responses, or Anthropic.
            r#"{"messages":[{"role":"assistant","content":[{"type":"output_text","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
            r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","text":"x"}],"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}]}"#,
            // Another format's keys, a capture record, a bare array.
            r#"{"system":"s","messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#,
            r#"{"loopdbg":"capture","request":{},"messages":[{"role":"tool","tool_call_id":"a"}]}"#,
            r#"[{"role":"tool","tool_call_id":"a","content":"x"}]"#,
            // Chat: an unknown role (an error).
            r#"{"messages":[{"role":"robot","content":"x"}],"model":"gpt-5"}"#,
        ] {
            // `every_shape`: `conversation` may stand aside after misses.
            assert!(every_shape(line, None).is_none(), "{line}");
        }
        let chat = r#"{"messages":[{"role":"tool","tool_call_id":"a","content":"x"}]}"#;
        assert!(conversation(chat, Some(Source::Provider(Format::Anthropic))).is_none());
        assert!(conversation(chat, Some(Source::Provider(Format::Openai))).is_some());
    }
}
