//! A handout of one run, to give to someone else: every step, each request's
//! message array as a provider receives it (the first two side by side, as
//! seed 003 lays them out), the tools' return values, the ledger at each
//! request, how the run ended and its warnings. Markdown, one
//! self-contained HTML file, or JSON with the whole trace. Pure: text out.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod emit;
pub mod redact;

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Serialize;
use serde_json::{Value, json};

use loopdbg_engine::ledger::{IdState, Ledger};
use loopdbg_engine::session::Session;
use loopdbg_engine::trace::{Phase, Trace};
use loopdbg_formats::provider::{Format, request_body};
use loopdbg_lesson::report::{RunReport, clean, compact};

/// What a handout is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Markdown.
    Markdown,
    /// One HTML file, styles inline, no script, no outside resource.
    Html,
    /// JSON: the handout's sections and the whole trace.
    Json,
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "md" | "markdown" => Ok(Kind::Markdown),
            "html" => Ok(Kind::Html),
            "json" => Ok(Kind::Json),
            _ => Err(format!("unknown export `{s}` (expected md, html or json)")),
        }
    }
}

/// How to write the handout.
#[derive(Debug, Clone)]
pub struct Options {
    /// Markdown, HTML or JSON.
    pub kind: Kind,
    /// The wire format request bodies are shown in.
    pub format: Format,
    /// The model name written into request bodies.
    pub model: String,
    /// Mask credentials and personal data (`--redact`).
    pub redact: bool,
    /// More patterns to mask when redacting (`--redact-pattern`).
    pub redact_patterns: Vec<String>,
    /// The session's file name, for the heading.
    pub origin: String,
    /// What tokens cost.
    pub prices: std::sync::Arc<loopdbg_formats::prices::Prices>,
}

impl Options {
    /// A handout of `kind` with request bodies in `format` for its default
    /// model, priced with `prices`.
    pub fn new(
        kind: Kind,
        format: Format,
        redact: bool,
        origin: String,
        prices: std::sync::Arc<loopdbg_formats::prices::Prices>,
    ) -> Options {
        let model = loopdbg_formats::provider::default_model(format).to_string();
        Options {
            kind,
            format,
            model,
            redact,
            redact_patterns: Vec::new(),
            origin,
            prices,
        }
    }
}

/// One request the loop sent.
#[derive(Debug, Clone, Serialize)]
pub struct RequestSection {
    /// 1-based.
    pub number: usize,
    /// Its round.
    pub round: u32,
    /// The body as the provider receives it.
    pub body: Value,
    /// Ids with their result by then.
    pub paired: Vec<String>,
    /// Ids without a result: the provider would answer 400.
    pub unpaired: Vec<String>,
}

/// Requests between the first and the last few, not written out: each
/// request repeats the whole history before it, so writing every one makes
/// a handout grow with the square of the rounds (5,000 rounds took 24 GB).
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    /// How many requests.
    pub count: usize,
    /// The first one's round.
    pub from_round: u32,
    /// The last one's round.
    pub to_round: u32,
    /// They come after this many of [`Handout::requests`].
    pub after: usize,
}

/// Requests written out at the start of a handout: the two trips and a
/// little more.
pub const FIRST_REQUESTS: usize = 4;
/// Requests written out at the end: where the run stopped.
pub const LAST_REQUESTS: usize = 2;

/// One call's return value.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReturn {
    /// Its round.
    pub round: u32,
    /// The call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Value,
    /// What came back.
    pub result: Value,
    /// How it ended (finished, failed, timed out, …).
    pub status: String,
}

/// The handout's content, before it is written in a format.
#[derive(Debug, Clone, Serialize)]
pub struct Handout {
    /// The session's title.
    pub title: String,
    /// The session file.
    pub origin: String,
    /// The strategy, in words.
    pub strategy: String,
    /// The wire format of the bodies.
    pub wire: &'static str,
    /// `k. round r · phase · unpaired n`, one per step.
    pub steps: Vec<String>,
    /// The requests written out: every one, or the first and the last few.
    pub requests: Vec<RequestSection>,
    /// The requests between them, when there were too many to write out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
    /// Every call's return value.
    pub tool_returns: Vec<ToolReturn>,
    /// How the run ended.
    pub end: String,
    /// The final answer.
    pub final_text: Option<String>,
    /// Warnings and provider errors.
    pub warnings: Vec<String>,
    /// The tokens each trip took, per tool and in all, priced (when the
    /// replies reported them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<loopdbg_formats::usage::Summary>,
}

/// Gathers what a handout shows, masked by `redactor` when one is given.
pub fn gather(
    session: &Session,
    trace: &Trace,
    opts: &Options,
    redactor: Option<&mut loopdbg_formats::redact::Redactor>,
) -> Handout {
    let report = RunReport::new(session, trace);
    let steps = trace
        .steps
        .iter()
        .enumerate()
        .map(|(k, s)| {
            format!(
                "{}. round {} · {}{}",
                k + 1,
                s.round,
                s.phase.name(),
                if s.unpaired > 0 {
                    format!(" · unpaired {}", s.unpaired)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    let asked: Vec<&loopdbg_engine::trace::Step> = trace
        .steps
        .iter()
        .filter(|s| s.phase == Phase::Request)
        .collect();
    let total = asked.len();
    let shown = |i: usize| i < FIRST_REQUESTS || i + LAST_REQUESTS >= total;
    let left_out = (total > FIRST_REQUESTS + LAST_REQUESTS).then(|| LeftOut {
        count: total - FIRST_REQUESTS - LAST_REQUESTS,
        from_round: asked[FIRST_REQUESTS].round,
        to_round: asked[total - LAST_REQUESTS - 1].round,
        after: FIRST_REQUESTS,
    });
    let requests = asked
        .iter()
        .enumerate()
        .filter(|(i, _)| shown(*i))
        .map(|(i, s)| {
            let history = &trace.messages[..s.history_len];
            let ledger = Ledger::of(history, &[]);
            let ids = |state| {
                ledger
                    .ids_in(state)
                    .map(|e| e.id.to_string())
                    .collect::<Vec<_>>()
            };
            RequestSection {
                number: i + 1,
                round: s.round,
                body: request_body(opts.format, session, history, &opts.model),
                paired: ids(IdState::Paired),
                unpaired: ids(IdState::Unpaired),
            }
        })
        .collect();
    let tool_returns = report
        .round_details
        .iter()
        .flat_map(|r| {
            r.executed.iter().map(move |e| ToolReturn {
                round: r.round,
                id: e.id.to_string(),
                name: e.name.to_string(),
                args: (*e.args).clone(),
                result: (*e.result).clone(),
                status: format!("{:?}", e.status).to_lowercase(),
            })
        })
        .collect();
    // The provider's 400s are among the run's warnings, one per request:
    // said once with the rounds, as `loopdbg run` says them.
    let warnings = loopdbg_lesson::report::dedup_warnings(&report.warnings);
    let mut h = Handout {
        title: if session.title.is_empty() {
            opts.origin.clone()
        } else {
            session.title.clone()
        },
        origin: opts.origin.clone(),
        strategy: trace.strategy.label(),
        wire: opts.format.title(),
        steps,
        requests,
        left_out,
        tool_returns,
        end: format!("{} — {}", report.end, report.end_detail),
        final_text: report.final_text.clone(),
        warnings,
        tokens: loopdbg_formats::usage::of_trace(trace, &opts.prices),
    };
    if let Some(r) = redactor {
        redact::handout(&mut h, r);
    }
    inert_values(&mut h);
    h
}

/// The handout written as `opts.kind`.
pub fn render(session: &Session, trace: &Trace, opts: &Options) -> String {
    render_counted(session, trace, opts).0
}

/// [`render`], and when redacting, what was masked (`3 email(s), …`).
/// A `--redact-pattern` that is not a regular expression masks nothing
/// (the command line refuses it before it comes here).
pub fn render_counted(session: &Session, trace: &Trace, opts: &Options) -> (String, String) {
    let mut redactor = opts
        .redact
        .then(|| loopdbg_formats::redact::Redactor::new(&opts.redact_patterns).unwrap_or_default());
    let h = gather(session, trace, opts, redactor.as_mut());
    let text = match opts.kind {
        Kind::Markdown => markdown(&h),
        Kind::Html => html(&h),
        Kind::Json => {
            let mut trace_json = serde_json::to_value(trace).unwrap_or(Value::Null);
            if let Some(r) = redactor.as_mut() {
                r.value(&mut trace_json);
            }
            let doc = json!({"handout": h, "trace": trace_json});
            // Through the inert writer: bidi and tag characters as \u
            // escapes, which parse back the same.
            let mut text = Vec::new();
            let _ = loopdbg_engine::diagnostics::inert_json::pretty(&mut text, &doc);
            text.push(b'\n');
            String::from_utf8(text).unwrap_or_default()
        }
    };
    (text, redactor.map(|r| r.counts()).unwrap_or_default())
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn ids(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// A fence longer than any run of backticks inside `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

fn md_cell(s: &str) -> String {
    clean(s).replace('|', "\\|")
}

/// Markdown prose from input: inert, and HTML in it shown, not rendered
/// (a `<script>` or `<img onerror>` in a reply stays text in any viewer).
fn md_text(s: &str) -> String {
    md_cell(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Strings inside the handout's JSON values (bodies, arguments, results)
/// with the characters that hide or reorder text escaped: serde escapes
/// the C0 controls when it writes JSON, but not DEL, the C1 controls
/// (U+009B is a terminal's CSI), bidi overrides, zero-width or tag
/// characters.
fn inert_values(h: &mut Handout) {
    fn walk(v: &mut Value) {
        match v {
            Value::String(s) => {
                let hidden = |c: char| loopdbg_engine::diagnostics::inert::is_unsafe(c) && c >= ' ';
                if s.chars().any(hidden) {
                    *s = s
                        .chars()
                        .map(|c| match hidden(c) {
                            true => format!("\\u{{{:x}}}", c as u32),
                            false => c.to_string(),
                        })
                        .collect();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            Value::Object(map) => map.values_mut().for_each(walk),
            _ => {}
        }
    }
    for r in &mut h.requests {
        walk(&mut r.body);
    }
    for t in &mut h.tool_returns {
        walk(&mut t.args);
        walk(&mut t.result);
    }
}

/// The handout's strings from input, inert for a terminal (an HTML or
/// Markdown handout is often printed to one): one path for every field.
fn inert_strings(h: &Handout) -> Handout {
    let mut h = h.clone();
    for s in [&mut h.title, &mut h.origin, &mut h.strategy, &mut h.end] {
        *s = clean(s);
    }
    if let Some(t) = h.final_text.as_mut() {
        *t = clean(t);
    }
    for s in h.warnings.iter_mut().chain(h.steps.iter_mut()) {
        *s = clean(s);
    }
    for r in &mut h.requests {
        for id in r.paired.iter_mut().chain(r.unpaired.iter_mut()) {
            *id = clean(id);
        }
    }
    for t in &mut h.tool_returns {
        t.id = clean(&t.id);
        t.name = clean(&t.name);
    }
    h
}

fn markdown(h: &Handout) -> String {
    let mut out = format!(
        "# {}\n\nSession `{}` · strategy {} · request bodies as {}\n\n",
        md_text(&h.title),
        md_cell(&h.origin),
        h.strategy,
        h.wire
    );
    out.push_str("## How it ended\n\n");
    out.push_str(&format!("- end: {}\n", md_text(&h.end)));
    out.push_str(&format!(
        "- final answer: {}\n",
        h.final_text.as_deref().map_or("null".into(), md_text)
    ));
    for w in &h.warnings {
        out.push_str(&format!("- ⚠ {}\n", md_text(w)));
    }
    out.push_str("\n## Requests\n\n");
    for (i, r) in h.requests.iter().enumerate() {
        if let Some(gap) = h.left_out.as_ref().filter(|g| g.after == i) {
            out.push_str(&format!("{}\n\n", left_out_words(gap)));
        }
        let body = pretty(&r.body);
        let f = fence(&body);
        out.push_str(&format!(
            "### Request {} (round {})\n\nLedger: paired {} · unpaired {}{}\n\n{f}json\n{body}\n{f}\n\n",
            r.number,
            r.round,
            ids(&r.paired),
            ids(&r.unpaired),
            if r.unpaired.is_empty() {
                ""
            } else {
                " — the provider would answer 400"
            }
        ));
    }
    if let Some(tokens) = &h.tokens {
        out.push_str(&markdown_tokens(tokens));
    }
    out.push_str("## Tool return values\n\n| round | id | tool | arguments | result | status |\n|---|---|---|---|---|---|\n");
    for t in &h.tool_returns {
        out.push_str(&format!(
            "| {} | `{}` | {} | `{}` | `{}` | {} |\n",
            t.round,
            md_cell(&t.id),
            md_text(&t.name),
            md_cell(&compact(&t.args)),
            md_cell(&compact(&t.result)),
            t.status
        ));
    }
    out.push_str("\n## Steps\n\n");
    for s in &h.steps {
        out.push_str(&format!("- {s}\n"));
    }
    out
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem;color:#222}\
pre{background:#f6f6f6;padding:.75rem;overflow:auto;font-size:13px}\
.pair{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}\
.bad{color:#a00;font-weight:bold}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}\
code{font-size:13px}";

/// One self-contained page: styles inline, no script, no outside resource.
/// Every string from the run goes through maud's escaping; nothing is
/// written into the page unescaped but the fixed style sheet.
fn html(h: &Handout) -> String {
    let h = &inert_strings(h);
    // The first two requests side by side: what the second trip adds.
    let (first_two, rest) = h.requests.split_at(h.requests.len().min(2));
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (h.title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (h.title) }
                p {
                    "Session " code { (h.origin) } " · strategy " (h.strategy)
                    " · request bodies as " (h.wire)
                }
                h2 { "How it ended" }
                ul id="end" {
                    li { "end: " (h.end) }
                    li { "final answer: " span id="final" { (h.final_text.as_deref().unwrap_or("null")) } }
                    @for w in &h.warnings {
                        li class="bad" { "⚠ " (w) }
                    }
                }
                h2 { "Requests" }
                div class="pair" {
                    @for r in first_two { (request_section(r)) }
                }
                @for (i, r) in rest.iter().enumerate() {
                    @if let Some(gap) = h.left_out.as_ref().filter(|g| g.after == i + first_two.len()) {
                        p class="left-out" { (left_out_words(gap)) }
                    }
                    (request_section(r))
                }
                @if let Some(tokens) = &h.tokens {
                    (html_tokens(tokens))
                }
                h2 { "Tool return values" }
                table id="tools" {
                    tr { th { "round" } th { "id" } th { "tool" } th { "arguments" } th { "result" } th { "status" } }
                    @for t in &h.tool_returns {
                        tr {
                            td { (t.round) }
                            td { code { (t.id) } }
                            td { (t.name) }
                            td { code { (compact(&t.args)) } }
                            td { code { (compact(&t.result)) } }
                            td { (t.status) }
                        }
                    }
                }
                h2 { "Steps" }
                ol id="steps" {
                    @for s in &h.steps {
                        li { (s.split_once(". ").map_or(s.as_str(), |(_, t)| t)) }
                    }
                }
            }
        }
    };
    let mut out = page.into_string();
    out.push('\n');
    out
}

/// A cost, or a dash when the model has no price.
fn cost_cell(c: Option<f64>) -> String {
    c.map_or("–".into(), |c| format!("${c:.4}"))
}

/// Which prices the costs are at.
fn prices_words(t: &loopdbg_formats::usage::Summary) -> String {
    let mut words = format!("Costs at the list prices of {}", t.prices_as_of);
    if !t.unpriced.is_empty() {
        words.push_str(&format!(
            "; no price for {} (pass `--prices FILE`)",
            clean(&t.unpriced.join(", "))
        ));
    }
    words.push('.');
    words
}

fn markdown_tokens(t: &loopdbg_formats::usage::Summary) -> String {
    let mut out = String::from(
        "## Tokens\n\nEach trip sends the whole history again: its prompt grows with every round.\n\n| trip | model | in | cached | to cache | out | cost |\n|---|---|---|---|---|---|---|\n",
    );
    for (k, trip) in t.trips.iter().enumerate() {
        let u = &trip.usage;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            k + 1,
            md_cell(trip.model.as_deref().unwrap_or("–")),
            u.input,
            u.cache_read,
            u.cache_write,
            u.output,
            cost_cell(trip.cost)
        ));
    }
    let u = &t.total;
    out.push_str(&format!(
        "| all | | {} | {} | {} | {} | {} |\n\n",
        u.input,
        u.cache_read,
        u.cache_write,
        u.output,
        cost_cell(t.cost)
    ));
    if !t.tools.is_empty() {
        out.push_str("| tool | calls | out to call it | in for its results | cost |\n|---|---|---|---|---|\n");
        for tool in &t.tools {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                md_text(&tool.name),
                tool.calls,
                tool.output,
                tool.results,
                cost_cell(tool.cost)
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!("{}\n\n", prices_words(t)));
    out
}

fn html_tokens(t: &loopdbg_formats::usage::Summary) -> Markup {
    html! {
        h2 { "Tokens" }
        p { "Each trip sends the whole history again: its prompt grows with every round." }
        table id="tokens" {
            tr { th { "trip" } th { "model" } th { "in" } th { "cached" } th { "to cache" } th { "out" } th { "cost" } }
            @for (k, trip) in t.trips.iter().enumerate() {
                tr {
                    td { (k + 1) }
                    td { (clean(trip.model.as_deref().unwrap_or("–"))) }
                    td { (trip.usage.input) } td { (trip.usage.cache_read) }
                    td { (trip.usage.cache_write) } td { (trip.usage.output) }
                    td { (cost_cell(trip.cost)) }
                }
            }
            tr {
                td { "all" } td {}
                td { (t.total.input) } td { (t.total.cache_read) }
                td { (t.total.cache_write) } td { (t.total.output) }
                td { (cost_cell(t.cost)) }
            }
        }
        @if !t.tools.is_empty() {
            table id="tool-tokens" {
                tr { th { "tool" } th { "calls" } th { "out to call it" } th { "in for its results" } th { "cost" } }
                @for tool in &t.tools {
                    tr {
                        td { (clean(&tool.name)) } td { (tool.calls) } td { (tool.output) }
                        td { (tool.results) } td { (cost_cell(tool.cost)) }
                    }
                }
            }
        }
        p { (prices_words(t)) }
    }
}

/// What a handout says where requests were left out.
fn left_out_words(gap: &LeftOut) -> String {
    format!(
        "… {} request(s) left out (rounds {} to {}): each repeats the history before it; `loopdbg run --format json` holds the whole trace.",
        gap.count, gap.from_round, gap.to_round
    )
}

/// One request: its ledger and the body as the provider receives it.
fn request_section(r: &RequestSection) -> Markup {
    html! {
        section class="request" id=(format!("request-{}", r.number)) {
            h3 { "Request " (r.number) " (round " (r.round) ")" }
            p {
                "Ledger: paired " (ids(&r.paired)) " · unpaired "
                span class=[(!r.unpaired.is_empty()).then_some("bad")] { (ids(&r.unpaired)) }
            }
            pre { (pretty(&r.body)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopdbg_engine::strategy::Strategy;

    fn weather() -> (Session, Trace) {
        let text = r#"{"title": "t <b>", "user": "北京天气？",
          "tools": [{"name": "get_weather", "table": [{"args": {"city": "北京"}, "result": {"temp_c": 18}}]}],
          "model": {"s": [
            {"when": {"round": 1}, "reply": {"tool_calls": [{"id": "call_w1", "name": "get_weather", "args": {"city": "北京"}}]}},
            {"reply": {"text": "北京 18°C。"}}]}}"#;
        let s = Session::parse("w.json", text).unwrap();
        let t = loopdbg_engine::run(&s, &Strategy::for_session(&s));
        (s, t)
    }

    fn opts(kind: Kind) -> Options {
        Options {
            kind,
            format: Format::Anthropic,
            model: "m".into(),
            redact: false,
            redact_patterns: Vec::new(),
            origin: "w.json".into(),
            prices: std::sync::Arc::new(loopdbg_formats::prices::Prices::builtin()),
        }
    }

    #[test]
    fn markdown_holds_both_requests_and_the_answer() {
        let (s, t) = weather();
        let md = render(&s, &t, &opts(Kind::Markdown));
        assert!(md.contains("### Request 1 (round 1)"));
        assert!(md.contains("### Request 2 (round 2)"));
        assert!(md.contains("\"tool_use_id\": \"call_w1\""));
        assert!(md.contains("北京 18°C。"));
    }

    #[test]
    fn html_escapes_what_it_shows() {
        let (s, t) = weather();
        let page = render(&s, &t, &opts(Kind::Html));
        assert!(page.contains("<title>t &lt;b&gt;</title>"));
        assert!(!page.contains("<b>"));
        assert!(page.contains("class=\"pair\""));
    }

    #[test]
    fn json_holds_the_whole_trace() {
        let (s, t) = weather();
        let v: Value = serde_json::from_str(&render(&s, &t, &opts(Kind::Json))).unwrap();
        assert_eq!(v["trace"]["steps"].as_array().unwrap().len(), t.steps.len());
        assert_eq!(v["handout"]["requests"].as_array().unwrap().len(), 2);
    }

    /// A C1 control (U+009B is a terminal's CSI), DEL and a bidi override
    /// from a tool's result, an argument or the answer reach no handout
    /// raw, in any form.
    #[test]
    fn no_handout_holds_a_c1_control_or_a_bidi_override() {
        let text = r#"{"title": "t\u202e", "user": "x\u009b31m",
          "tools": [{"name": "get_weather", "table": [{"args": {"city": "\u009b2J"}, "result": {"t": "\u202etxt.exe\u007f"}}]}],
          "model": {"s": [
            {"when": {"round": 1}, "reply": {"tool_calls": [{"id": "call_w1", "name": "get_weather", "args": {"city": "\u009b2J"}}]}},
            {"reply": {"text": "done \u009b1m \u202e"}}]}}"#;
        let s = Session::parse("w.json", text).unwrap();
        let t = loopdbg_engine::run(&s, &Strategy::for_session(&s));
        for kind in [Kind::Markdown, Kind::Html, Kind::Json] {
            let out = render(&s, &t, &opts(kind));
            for c in ['\u{9b}', '\u{202e}', '\u{7f}'] {
                assert!(!out.contains(c), "{kind:?} holds U+{:04X}", c as u32);
            }
        }
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fence("a ```` b"), "`````");
        assert_eq!(fence("plain"), "```");
    }
}
