//! Tokens as each provider reports them, in one shape
//! ([`Usage`]): the full-rate prompt
//! tokens, the output, and the cache reads and writes counted apart.
//! OpenAI and Gemini count cached tokens inside their prompt totals, so
//! they are taken out of `input` here.

use loopdbg_engine::message::{Block, Message, Text, Usage};
use serde::Serialize;
use serde_json::Value;

use crate::prices::{Price, Prices};
use crate::provider::Format;

/// The tokens of one trip, priced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TripTokens {
    /// The reply's index among the messages (0-based).
    pub message: usize,
    /// The line of the file it was read from, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The model that wrote it, when known (shared: a long log names the
    /// same model on every trip).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Text>,
    /// Its tokens.
    #[serde(flatten)]
    pub usage: Usage,
    /// What it cost, when the price table prices its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// What one tool's calls cost: the output tokens of the replies that
/// called it (shared evenly among a reply's calls) and the prompt tokens
/// its results added to the next trip (that trip's prompt growth, shared
/// among the results it carried by their size).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolTokens {
    /// The tool's name.
    pub name: String,
    /// How many times it was called.
    pub calls: usize,
    /// Output tokens spent calling it.
    pub output: u64,
    /// Prompt tokens its results added.
    pub results: u64,
    /// What those cost, when every trip involved is priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// A conversation's tokens: per trip, per tool, in all, and priced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Per trip, in order.
    pub trips: Vec<TripTokens>,
    /// Per tool, most expensive first.
    pub tools: Vec<ToolTokens>,
    /// All trips.
    pub total: Usage,
    /// The cost of the priced trips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Models the price table does not name: their trips have no cost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// The date of the prices used.
    pub prices_as_of: String,
}

/// One trip's tokens as a file or a trace holds them: the reply's message
/// index, its line, its model, its usage.
pub type Trip<'a> = (usize, Option<usize>, Option<&'a str>, Usage);

/// The summary of `trips` (in message order) over `messages`, priced by
/// `prices`; `None` when no trip reported tokens.
pub fn summary(messages: &[Message], trips: &[Trip<'_>], prices: &Prices) -> Option<Summary> {
    summary_kept(messages, trips, prices).map(|(summary, _)| summary)
}

/// [`summary`], and what it summed, for a summary grown later
/// ([`regrow`]).
fn summary_kept(
    messages: &[Message],
    trips: &[Trip<'_>],
    prices: &Prices,
) -> Option<(Summary, Tally)> {
    if trips.is_empty() {
        return None;
    }
    let mut tally = Tally::new(prices);
    let mut priced = Vec::with_capacity(trips.len());
    tally.price(trips, prices, &mut priced);
    Some(tally.summary(messages, priced, prices))
}

/// What [`summary`] summed and split of a trace's first trips, in order:
/// kept beside the summary so that the summary of the trace grown from
/// it (`--follow`) sums and splits only the trips after them.
#[derive(Debug, Clone)]
pub struct Tally {
    /// How many trips are summed and split (a trip's results are split
    /// by the next trip's prompt: the last trip never is).
    trips: usize,
    total: Usage,
    cost: Option<f64>,
    unpriced: Vec<String>,
    tools: ToolSplit,
    /// Each model met, as shared text, and its price.
    known: Vec<(Text, Option<Price>)>,
    prices_as_of: String,
    /// The summary was grown from an earlier one ([`regrow`]).
    grown: bool,
}

/// Per tool, in the order first seen: calls, output, results, cost, and
/// whether every share was priced.
type ToolSplit = indexmap::IndexMap<String, (usize, f64, f64, f64, bool), ahash::RandomState>;

impl Tally {
    fn new(prices: &Prices) -> Tally {
        Tally {
            trips: 0,
            total: Usage::default(),
            cost: None,
            unpriced: Vec::new(),
            tools: ToolSplit::default(),
            known: Vec::new(),
            prices_as_of: prices.as_of.clone(),
            grown: false,
        }
    }

    /// Whether the summary beside it was grown from an earlier one
    /// ([`regrow`]) rather than made afresh.
    pub fn grown(&self) -> bool {
        self.grown
    }

    /// Prices `trips` into `priced`.
    fn price(&mut self, trips: &[Trip<'_>], prices: &Prices, priced: &mut Vec<TripTokens>) {
        let mut cache = PriceCache {
            prices,
            known: std::mem::take(&mut self.known),
        };
        for &(message, line, model, usage) in trips {
            let (model, price) = cache.model(model);
            priced.push(TripTokens {
                message,
                line,
                model,
                usage,
                cost: price.map(|p| dollars(prices.cost_at(&p, &usage))),
            });
        }
        self.known = cache.known;
    }

    /// Sums and splits `trips[self.trips..to]`.
    fn add(&mut self, messages: &[Message], trips: &[TripTokens], to: usize, prices: &Prices) {
        let mut cache = PriceCache {
            prices,
            known: std::mem::take(&mut self.known),
        };
        for k in self.trips..to {
            let trip = &trips[k];
            self.total.add(&trip.usage);
            let (model, price) = cache.model(trip.model.as_deref());
            match (
                price.map(|p| prices.cost_at(&p, &trip.usage)),
                model.as_deref(),
            ) {
                (Some(c), _) => *self.cost.get_or_insert(0.0) += c,
                (None, m) => {
                    let name = m.unwrap_or("(model not recorded)").to_string();
                    if !self.unpriced.contains(&name) {
                        self.unpriced.push(name);
                    }
                }
            }
            split_trip(messages, trips, k, prices, &mut cache, &mut self.tools);
        }
        self.trips = self.trips.max(to);
        self.known = cache.known;
    }

    /// The summary of `priced`, all of whose trips from `self.trips` on
    /// are summed here into a copy (the last ones may change as the trace
    /// grows); the rest but the last two are summed into `self` for good.
    fn summary(
        mut self,
        messages: &[Message],
        priced: Vec<TripTokens>,
        prices: &Prices,
    ) -> (Summary, Tally) {
        self.add(messages, &priced, priced.len().saturating_sub(2), prices);
        let mut all = self.clone();
        all.add(messages, &priced, priced.len(), prices);
        let mut tools: Vec<ToolTokens> = all
            .tools
            .into_iter()
            .map(
                |(name, (calls, output, results, cost, priced))| ToolTokens {
                    name,
                    calls,
                    output: output.round() as u64,
                    results: results.round() as u64,
                    cost: priced.then_some(dollars(cost)),
                },
            )
            .collect();
        tools.sort_by_key(|t| std::cmp::Reverse(t.output + t.results));
        let summary = Summary {
            trips: priced,
            tools,
            total: all.total,
            cost: all.cost.map(dollars),
            unpriced: all.unpriced,
            prices_as_of: prices.as_of.clone(),
        };
        (summary, self)
    }
}

/// A cost in dollars to the nano-dollar (a hundredth of a token of the
/// cheapest model priced): sums of per-token prices in binary floating
/// point print as `0.004122000000000001`, which reports and JSON carry.
fn dollars(cost: f64) -> f64 {
    (cost * 1e9).round() / 1e9
}

/// The length of a value's compact JSON text, counted as it is written
/// rather than built (a result can be megabytes).
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, nor can serializing a `Value`.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Each model's price, looked up in the table once per summary: a lookup
/// scans every model the table names, and a long log asks it three times
/// a trip for the same few models.
struct PriceCache<'p> {
    prices: &'p Prices,
    /// Each model met, as shared text, and its price.
    known: Vec<(Text, Option<Price>)>,
}

impl<'p> PriceCache<'p> {
    fn of(&mut self, model: Option<&str>) -> Option<Price> {
        self.model(model).1
    }

    /// The model as shared text, and its price.
    fn model(&mut self, model: Option<&str>) -> (Option<Text>, Option<Price>) {
        let Some(model) = model else {
            return (None, None);
        };
        if let Some((name, price)) = self.known.iter().find(|(m, _)| &**m == model) {
            return (Some(name.clone()), *price);
        }
        let price = self.prices.of(model).map(|(_, p)| *p);
        let name = Text::from(model);
        self.known.push((name.clone(), price));
        (Some(name), price)
    }
}

/// Splits trip `k`'s output among the calls its reply made, and the next
/// trip's prompt growth among the results sent in between, into `tools`.
fn split_trip<'p>(
    messages: &[Message],
    trips: &[TripTokens],
    k: usize,
    prices: &'p Prices,
    cache: &mut PriceCache<'p>,
    tools: &mut ToolSplit,
) {
    // A tool's slot, its name copied only the first time it is seen
    // (hashed once a call with ahash: SipHash twice a call was an eighth
    // of a followed log's end summary).
    fn slot<'a>(acc: &'a mut ToolSplit, name: &str) -> &'a mut (usize, f64, f64, f64, bool) {
        let at = match acc.get_index_of(name) {
            Some(at) => at,
            None => {
                acc.insert_full(name.to_string(), (0, 0.0, 0.0, 0.0, true))
                    .0
            }
        };
        &mut acc[at]
    }
    let trip = &trips[k];
    let Some(reply) = messages.get(trip.message) else {
        return;
    };
    let calls: Vec<(&str, &str)> = reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((&**id, &**name)),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    let out_share = trip.usage.output as f64 / calls.len() as f64;
    let out_price = cache.of(trip.model.as_deref());
    for (_, name) in &calls {
        let slot = slot(tools, name);
        slot.0 += 1;
        slot.1 += out_share;
        match out_price {
            Some(p) => slot.3 += out_share * p.output / prices.per,
            None => slot.4 = false,
        }
    }
    // The results sent before the next trip, by size.
    let Some(next) = trips.get(k + 1) else {
        return;
    };
    let growth = next
        .usage
        .prompt()
        .saturating_sub(trip.usage.prompt() + trip.usage.output) as f64;
    // A reply makes a few calls: looked up by a scan, not a map per
    // trip; an id given twice names the later call, as a map did.
    let name_of = |id: &str| calls.iter().rev().find(|(i, _)| *i == id).map(|&(_, n)| n);
    let mut sizes: Vec<(&str, f64)> = Vec::new();
    for m in messages
        .get(trip.message + 1..next.message)
        .unwrap_or_default()
    {
        for b in &m.content {
            if let Block::ToolResult {
                tool_use_id,
                content,
                ..
            } = b
                && let Some(name) = name_of(tool_use_id)
            {
                sizes.push((name, json_len(content).max(1) as f64));
            }
        }
    }
    let all: f64 = sizes.iter().map(|(_, s)| s).sum();
    let in_price = cache.of(next.model.as_deref());
    for (name, size) in sizes {
        let share = growth * size / all;
        let slot = slot(tools, name);
        slot.2 += share;
        match in_price {
            Some(p) => slot.3 += share * p.input / prices.per,
            None => slot.4 = false,
        }
    }
}

/// The trips of a trace: each round whose reply reported tokens.
pub fn of_trace(trace: &loopdbg_engine::Trace, prices: &Prices) -> Option<Summary> {
    of_trace_kept(trace, prices).map(|(summary, _)| summary)
}

/// [`of_trace`], and what it summed, to grow it by ([`regrow`]).
pub fn of_trace_kept(trace: &loopdbg_engine::Trace, prices: &Prices) -> Option<(Summary, Tally)> {
    summary_kept(&trace.messages, &trips_of(&trace.rounds), prices)
}

/// The trips of `rounds` that reported tokens.
fn trips_of(rounds: &[loopdbg_engine::trace::Round]) -> Vec<Trip<'_>> {
    rounds
        .iter()
        .filter_map(|r| {
            let usage = r.reply.usage?;
            Some((trip_message(r), None, r.reply.model.as_deref(), usage))
        })
        .collect()
}

/// The message a round's trip is counted at: its reply's.
fn trip_message(r: &loopdbg_engine::trace::Round) -> usize {
    r.reply_message.unwrap_or(r.request_len)
}

/// The summary of `trace` (what [`of_trace`] gives), grown from `kept`:
/// the summary and tally of the trace it was grown from, whose messages
/// before `since` it keeps (`loopdbg_export::replay::regrow`). Only the
/// trips from `since` on are priced, summed and split: `--follow` gives
/// each appended event its tokens in proportion to the event, not to the
/// log. Built afresh from `None`, at other prices, or when a trip the
/// tally split by is gone.
pub fn regrow(
    kept: Option<(Summary, Tally)>,
    trace: &loopdbg_engine::Trace,
    since: usize,
    prices: &Prices,
) -> Option<(Summary, Tally)> {
    let Some((summary, mut tally)) = kept else {
        return of_trace_kept(trace, prices);
    };
    let kept_trips = summary.trips.partition_point(|t| t.message < since);
    // The last trip summed was split by the next one's prompt.
    let split_by_kept = tally.trips == 0 || kept_trips > tally.trips;
    if tally.prices_as_of != prices.as_of || !split_by_kept {
        return of_trace_kept(trace, prices);
    }
    // The rounds from `since` on, read from the end.
    let later = trace
        .rounds
        .iter()
        .rev()
        .take_while(|r| trip_message(r) >= since)
        .count();
    let mut priced = summary.trips;
    priced.truncate(kept_trips);
    let rounds = &trace.rounds[trace.rounds.len() - later..];
    tally.price(&trips_of(rounds), prices, &mut priced);
    tally.grown = true;
    if priced.is_empty() {
        return None;
    }
    Some(tally.summary(&trace.messages, priced, prices))
}

/// The usage and model a provider's response object reports.
pub fn of_response(format: Format, response: &Value) -> Option<(Usage, Option<String>)> {
    let model = |key: &str| {
        response
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match format {
        Format::Anthropic => Some((anthropic(response.get("usage")?), model("model"))),
        Format::Openai => Some((openai_chat(response.get("usage")?), model("model"))),
        Format::Responses => Some((responses(response.get("usage")?), model("model"))),
        Format::Gemini => Some((
            gemini(response.get("usageMetadata")?),
            model("modelVersion"),
        )),
        // The model is in the path, not the answer.
        Format::Bedrock => Some((bedrock(response.get("usage")?), None)),
    }
}

fn count(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// Bedrock Converse's `usage`: `inputTokens` leaves the cached tokens out,
/// as Anthropic's `input_tokens` does.
pub fn bedrock(u: &Value) -> Usage {
    Usage {
        input: count(u, "/inputTokens"),
        output: count(u, "/outputTokens"),
        cache_read: count(u, "/cacheReadInputTokens"),
        cache_write: count(u, "/cacheWriteInputTokens"),
    }
}

/// Anthropic's `usage`: cache reads and writes are already apart.
pub fn anthropic(u: &Value) -> Usage {
    Usage {
        input: count(u, "/input_tokens"),
        output: count(u, "/output_tokens"),
        cache_read: count(u, "/cache_read_input_tokens"),
        cache_write: count(u, "/cache_creation_input_tokens"),
    }
}

/// Chat Completions' `usage`: `prompt_tokens` includes the cached ones.
pub fn openai_chat(u: &Value) -> Usage {
    let cached = count(u, "/prompt_tokens_details/cached_tokens");
    Usage {
        input: count(u, "/prompt_tokens").saturating_sub(cached),
        output: count(u, "/completion_tokens"),
        cache_read: cached,
        cache_write: 0,
    }
}

/// Responses' `usage` (and Codex's `token_count`, which copies it):
/// `input_tokens` includes the cached ones.
pub fn responses(u: &Value) -> Usage {
    let cached = u
        .pointer("/input_tokens_details/cached_tokens")
        .or_else(|| u.get("cached_input_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Usage {
        input: count(u, "/input_tokens").saturating_sub(cached),
        output: count(u, "/output_tokens"),
        cache_read: cached,
        cache_write: 0,
    }
}

/// Gemini's `usageMetadata`: `promptTokenCount` includes the cached
/// content; thinking is billed as output.
pub fn gemini(u: &Value) -> Usage {
    let cached = count(u, "/cachedContentTokenCount");
    Usage {
        input: count(u, "/promptTokenCount").saturating_sub(cached),
        output: count(u, "/candidatesTokenCount") + count(u, "/thoughtsTokenCount"),
        cache_read: cached,
        cache_write: 0,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_results_tokens_go_to_the_call_its_id_names_the_later_of_two() {
        use loopdbg_engine::message::Role;
        let call = |id: &str, name: &str| Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: std::sync::Arc::new(json!({})),
        };
        let message = |role, content| Message {
            role,
            content,
            finish_reason: None,
        };
        let messages = vec![
            message(Role::User, vec![]),
            message(
                Role::Assistant,
                vec![call("x", "first"), call("x", "later")],
            ),
            message(
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: "x".into(),
                    content: std::sync::Arc::new(json!("result")),
                    is_error: false,
                }],
            ),
            message(Role::Assistant, vec![]),
        ];
        let usage = |input, output| Usage {
            input,
            output,
            ..Usage::default()
        };
        let model = Some("claude-sonnet-4-5");
        let trips = [
            (1, None, model, usage(10, 4)),
            (3, None, model, usage(100, 1)),
        ];
        let summary = summary(&messages, &trips, &Prices::builtin()).unwrap();
        let tool = |name: &str| summary.tools.iter().find(|t| t.name == name).unwrap();
        // Output split over both calls; the prompt's growth (100 - 10 - 4)
        // all to the call the result's id names: the later one.
        assert_eq!((tool("first").output, tool("first").results), (2, 0));
        assert_eq!((tool("later").output, tool("later").results), (2, 86));
        // The model is one shared text across trips.
        let models: Vec<_> = summary
            .trips
            .iter()
            .map(|t| t.model.clone().unwrap())
            .collect();
        assert!(std::sync::Arc::ptr_eq(&models[0], &models[1]));
        assert!(summary.cost.is_some());
    }

    /// A trip of Claude Code's generated sessions: 4 in, 12 out, 13,100
    /// read from the cache at claude-sonnet-4-5's prices is $0.004122,
    /// which the sum of per-token prices made 0.004122000000000001.
    #[test]
    fn costs_are_whole_nano_dollars() {
        let usage = Usage {
            input: 4,
            output: 12,
            cache_read: 13_100,
            ..Usage::default()
        };
        let model = Some("claude-sonnet-4-5-20250929");
        let trips = [(1, None, model, usage), (3, None, model, usage)];
        let summary = summary(&[], &trips, &Prices::builtin()).unwrap();
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["trips"][0]["cost"].to_string(), "0.004122");
        assert_eq!(json["cost"].to_string(), "0.008244");
    }

    #[test]
    fn a_values_length_is_its_compact_texts() {
        for v in [
            serde_json::json!(null),
            serde_json::json!("a \"quoted\" é"),
            serde_json::json!({"b": [1, 2.5, {"c": null}], "a": "x\ny"}),
        ] {
            assert_eq!(json_len(&v), v.to_string().len());
        }
    }
    use super::*;
    use serde_json::json;

    #[test]
    fn cached_tokens_are_taken_out_of_the_prompt_where_the_provider_counts_them_in() {
        let a = anthropic(&json!({"input_tokens": 10, "output_tokens": 5,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}));
        assert_eq!(
            (a.input, a.output, a.cache_read, a.cache_write),
            (10, 5, 100, 20)
        );
        let c = openai_chat(&json!({"prompt_tokens": 120, "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 100}}));
        assert_eq!((c.input, c.output, c.cache_read), (20, 7, 100));
        let r = responses(&json!({"input_tokens": 50, "output_tokens": 9,
            "input_tokens_details": {"cached_tokens": 30}}));
        assert_eq!((r.input, r.cache_read), (20, 30));
        let g = gemini(&json!({"promptTokenCount": 40, "candidatesTokenCount": 3,
            "thoughtsTokenCount": 2, "cachedContentTokenCount": 10}));
        assert_eq!((g.input, g.output, g.cache_read), (30, 5, 10));
        assert_eq!(g.prompt(), 40);
    }
}
