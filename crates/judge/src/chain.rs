//! Responses requests that continue a stored response.
//!
//! A request with `previous_response_id` carries only what is new: the
//! calls it must answer are in the stored response, on OpenAI's side, so
//! the request alone cannot say whether each has its output (OpenAI
//! answers a missing one with "No tool output found for function call
//! …", a 400). Whoever saw that response's answer — the proxy that relayed
//! it, a capture that recorded it — can: [`ResponseStore`] keeps the calls
//! of the responses seen (bounded, oldest forgotten first), and
//! [`ResponseStore::chain`] says what a request continues. The check then
//! reads the request with the stored calls in front of its input
//! ([`read_continuing`]), located as `previous_response_id
//! resp_… output[k]`; an id the store has not seen is said to be
//! unverifiable, never guessed.

use std::collections::VecDeque;
use std::sync::Arc;

use ahash::AHashMap;
use serde_json::{Value, json};

use crate::check::{Finding, check};
use crate::fix::{Repair, repair};
use loopdbg_engine::diagnostics::json_span::JsonPath;
use loopdbg_formats::provider::Format;
use loopdbg_read::finding::{Kind, Severity};
use loopdbg_read::responses::is_call;
use loopdbg_read::{BlockSource, Conversation, Detail, ReadError, Source, read_owned_as};

/// How many responses a store remembers: a proxy's agents continue the
/// response they just got, so a few thousand cover every live chain.
pub const KEPT_RESPONSES: usize = 4096;

/// One call a stored response made: where it stood in its `output` and
/// the item as the check reads it (its arguments left out, since only
/// whether it is answered is asked here; the store stays small).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    /// The index of the item in the response's `output`.
    pub output_index: usize,
    /// `{"type", "call_id", "name"}` of the call.
    pub item: Value,
}

/// What a request continues.
#[derive(Debug, Clone, PartialEq)]
pub enum Chain {
    /// No `previous_response_id`.
    Starts,
    /// A response this store saw, with the calls it made.
    Known {
        /// The response id.
        id: String,
        /// Its calls, in output order.
        calls: Arc<[StoredCall]>,
    },
    /// A response this store never saw (before the proxy started, through
    /// another route, or forgotten).
    Unknown {
        /// The response id.
        id: String,
    },
}

/// The calls of the responses seen, by response id.
#[derive(Debug, Default)]
pub struct ResponseStore {
    calls: AHashMap<String, Arc<[StoredCall]>>,
    order: VecDeque<String>,
}

impl ResponseStore {
    /// An empty store.
    pub fn new() -> ResponseStore {
        ResponseStore::default()
    }

    /// Remembers a Responses answer (`{"id": "resp_…", "output": […]}`);
    /// anything else (an error, another provider's answer) is ignored.
    pub fn remember(&mut self, response: &Value) {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some(output) = response.get("output").and_then(Value::as_array) else {
            return;
        };
        let calls: Arc<[StoredCall]> = output
            .iter()
            .enumerate()
            .filter_map(|(k, item)| stored_call(k, item))
            .collect();
        if self.calls.insert(id.to_string(), calls).is_none() {
            self.order.push_back(id.to_string());
            if self.order.len() > KEPT_RESPONSES
                && let Some(oldest) = self.order.pop_front()
            {
                self.calls.remove(&oldest);
            }
        }
    }

    /// What `request` (a Responses request body) continues.
    pub fn chain(&self, request: &Value) -> Chain {
        match request.get("previous_response_id").and_then(Value::as_str) {
            None => Chain::Starts,
            Some(id) => match self.calls.get(id) {
                Some(calls) => Chain::Known {
                    id: id.to_string(),
                    calls: calls.clone(),
                },
                None => Chain::Unknown { id: id.to_string() },
            },
        }
    }

    /// How many responses are remembered.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

fn stored_call(output_index: usize, item: &Value) -> Option<StoredCall> {
    let kind = item.get("type").and_then(Value::as_str)?;
    if !is_call(kind) {
        return None;
    }
    let call_id = item.get("call_id").and_then(Value::as_str)?;
    let mut kept = json!({"type": kind, "call_id": call_id});
    if let Some(name) = item.get("name").and_then(Value::as_str) {
        kept["name"] = Value::from(name);
    }
    match kind {
        "function_call" => kept["arguments"] = Value::from("{}"),
        "custom_tool_call" => kept["input"] = Value::from(""),
        _ => {}
    }
    Some(StoredCall {
        output_index,
        item: kept,
    })
}

/// Where a stored call is said to be.
pub fn stored_path(id: &str, output_index: usize) -> String {
    format!("previous_response_id {id} output[{output_index}]")
}

/// Checks a Responses request body against what it continues: the
/// stored calls read in front of its input (findings about those calls
/// themselves, such as their arguments, belong to the response that made
/// them and are left out; only whether each is answered is this
/// request's), or, for a response not seen, a note that says so.
pub fn check_continuing(
    body: Value,
    chain: &Chain,
    detail: Detail,
) -> Result<Vec<Finding>, ReadError> {
    match chain {
        Chain::Starts => {
            read_owned_as(body, Source::Provider(Format::Responses), detail).map(|c| check(&c))
        }
        Chain::Known { id, calls } => {
            let conv = read_continuing(body, id, calls, detail)?;
            let prefix = stored_path(id, 0);
            let prefix = &prefix[..prefix.len() - "0]".len()];
            let mut findings = check(&conv);
            findings.retain(|f| !f.path.starts_with(prefix) || f.kind == Kind::UnansweredCall);
            Ok(findings)
        }
        Chain::Unknown { id } => {
            let conv = read_owned_as(body, Source::Provider(Format::Responses), detail)?;
            let mut findings = check(&conv);
            findings.push(Finding {
                kind: Kind::UnverifiableChain,
                path: "previous_response_id".into(),
                line: None,
                uuid: None,
                ids: vec![id.clone()],
                message: format!(
                    "the request continues {id}, a response not seen here: whether every call it made has its output cannot be checked"
                ),
                severity: Severity::Note,
                evidence: None,
            });
            Ok(findings)
        }
    }
}

/// [`repair`], for a request that continues a stored response: under
/// `synthesize`, the stored calls without an output get one (at the head
/// of the input, where OpenAI looks for them). `strip` cannot take back a
/// call the provider stored, so it repairs only what the request holds.
pub fn repair_continuing(doc: &mut Value, format: Format, how: Repair, chain: &Chain) -> usize {
    let stored = match chain {
        Chain::Known { calls, .. }
            if format == Format::Responses && how == Repair::Synthesize && !calls.is_empty() =>
        {
            calls
        }
        _ => return repair(doc, format, how),
    };
    let Some(body) = doc.as_object_mut() else {
        return repair(doc, format, how);
    };
    let input = match body.remove("input") {
        Some(Value::Array(items)) => items,
        Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
        None => Vec::new(),
        Some(other) => {
            body.insert("input".into(), other);
            return repair(doc, format, how);
        }
    };
    let mut items: Vec<Value> = stored.iter().map(|c| c.item.clone()).collect();
    items.extend(input);
    body.insert("input".into(), Value::Array(items));
    let changes = repair(doc, format, how);
    if let Some(Value::Array(items)) = doc.get_mut("input") {
        items.drain(..stored.len());
    }
    changes
}

/// A Responses request that continues a stored response whose calls are
/// `calls` (see [`ResponseStore`]): read as if those calls stood before its
/// input, each located where the stored response has it
/// (`previous_response_id resp_… output[k]`), so an output missing for
/// one is found as it is in a request that carries the call itself.
pub fn read_continuing(
    mut doc: Value,
    response_id: &str,
    calls: &[StoredCall],
    detail: Detail,
) -> Result<Conversation, ReadError> {
    let Some(body) = doc.as_object_mut() else {
        return read_owned_as(doc, Source::Provider(Format::Responses), detail);
    };
    let stored = calls.len();
    let mut items: Vec<Value> = calls.iter().map(|c| c.item.clone()).collect();
    let mut text_input = false;
    match body.remove("input") {
        Some(Value::Array(rest)) => items.extend(rest),
        Some(Value::String(text)) => {
            text_input = true;
            items.push(serde_json::json!({"role": "user", "content": text}));
        }
        Some(other) => {
            body.insert("input".into(), other);
            return read_owned_as(doc, Source::Provider(Format::Responses), detail);
        }
        None => {}
    }
    body.insert("input".into(), Value::Array(items));
    let located = |i: usize| {
        let path = match i.checked_sub(stored) {
            None => stored_path(response_id, calls[i].output_index),
            Some(_) if text_input => "input".to_string(),
            Some(k) => JsonPath::root().key("input").index(k).to_string(),
        };
        BlockSource {
            path: path.into(),
            ..Default::default()
        }
    };
    loopdbg_read::responses::read_items(&mut doc, detail, &located)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(id: &str, calls: &[&str]) -> Value {
        let mut output = vec![json!({"type": "reasoning", "id": "rs_1", "summary": []})];
        output.extend(calls.iter().map(|c| {
            json!({"type": "function_call", "call_id": c, "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
        }));
        json!({"id": id, "object": "response", "output": output})
    }

    #[test]
    fn a_store_knows_the_calls_of_the_responses_it_saw() {
        let mut store = ResponseStore::new();
        store.remember(&response("resp_1", &["call_a", "call_b"]));
        let chain = store.chain(&json!({"previous_response_id": "resp_1", "input": []}));
        let Chain::Known { id, calls } = chain else {
            panic!("{chain:?}")
        };
        assert_eq!(id, "resp_1");
        let ids: Vec<_> = calls
            .iter()
            .map(|c| (c.output_index, c.item["call_id"].as_str().unwrap()))
            .collect();
        assert_eq!(ids, [(1, "call_a"), (2, "call_b")]);
        assert_eq!(
            store.chain(&json!({"previous_response_id": "resp_9"})),
            Chain::Unknown {
                id: "resp_9".into()
            }
        );
        assert_eq!(store.chain(&json!({"input": []})), Chain::Starts);
    }

    #[test]
    fn a_store_forgets_the_oldest_past_its_bound() {
        let mut store = ResponseStore::new();
        for n in 0..KEPT_RESPONSES + 10 {
            store.remember(&response(&format!("resp_{n}"), &["call_x"]));
        }
        assert_eq!(store.len(), KEPT_RESPONSES);
        assert!(matches!(
            store.chain(&json!({"previous_response_id": "resp_0"})),
            Chain::Unknown { .. }
        ));
        assert!(matches!(
            store.chain(&json!({"previous_response_id": format!("resp_{}", KEPT_RESPONSES + 9)})),
            Chain::Known { .. }
        ));
    }

    fn output(call: &str) -> Value {
        json!({"type": "function_call_output", "call_id": call, "output": "18°C"})
    }

    fn judged(store: &ResponseStore, body: Value) -> Vec<Finding> {
        let chain = store.chain(&body);
        check_continuing(body, &chain, Detail::Shape).unwrap()
    }

    #[test]
    fn a_chained_request_missing_an_output_is_refused_as_openai_refuses_it() {
        let mut store = ResponseStore::new();
        store.remember(&response("resp_1", &["call_a", "call_b"]));
        let findings = judged(
            &store,
            json!({"model": "gpt-5", "previous_response_id": "resp_1", "input": [output("call_a")]}),
        );
        assert_eq!(findings.len(), 1, "{findings:?}");
        let f = &findings[0];
        assert_eq!(f.kind, Kind::UnansweredCall);
        assert_eq!(f.ids, ["call_b"]);
        assert!(f.rejected_by_provider());
        assert_eq!(f.path, "previous_response_id resp_1 output[2]");
        assert_eq!(f.message, "No tool output found for function call call_b.");
        // A text input answers nothing either.
        let findings = judged(
            &store,
            json!({"model": "gpt-5", "previous_response_id": "resp_1", "input": "and now?"}),
        );
        let ids: Vec<_> = findings.iter().flat_map(|f| f.ids.clone()).collect();
        assert_eq!(ids, ["call_a", "call_b"], "{findings:?}");
    }

    #[test]
    fn a_chained_request_with_every_output_is_clean_and_verified() {
        let mut store = ResponseStore::new();
        store.remember(&response("resp_1", &["call_a", "call_b"]));
        let findings = judged(
            &store,
            json!({"previous_response_id": "resp_1", "input": [output("call_b"), output("call_a")]}),
        );
        assert!(findings.is_empty(), "{findings:?}");
        // Without the store the same outputs can only be noted.
        let alone = judged(
            &ResponseStore::new(),
            json!({"previous_response_id": "resp_1", "input": [output("call_b"), output("call_a")]}),
        );
        let kinds: Vec<_> = alone.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::UnverifiableResult,
                Kind::UnverifiableResult,
                Kind::UnverifiableChain
            ]
        );
        assert!(alone.iter().all(|f| !f.rejected_by_provider()));
    }
}
