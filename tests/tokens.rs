//! Tokens and cost, from logs and captures the real agents wrote against
//! the fake provider (which reports usage as the providers do): Claude
//! Code 2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0, each run once on
//! the fake's three-command loop, directly (their logs) and through
//! `loopdbg proxy` (the capture). The sums are held to what the agents
//! themselves reported, not to numbers loopdbg computed.

use crate::common::*;
use loopdbg_read::Agent;

use loopdbg_read::{Conversation, Log, Source};
use loopdbg_tui::theme::Theme;
use loopdbg_tui::{Action, App};
use serde_json::Value;

const DIR: &str = "tests/fixtures/transcripts/usage";

fn checked(file: &str, extra: &[&str]) -> Value {
    let out = loopdbg()
        .args(["check", "--format", "json", &format!("{DIR}/{file}")])
        .args(extra)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn usages(report: &Value) -> Vec<&Value> {
    report["files"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["usage"])
        .collect()
}

fn total(u: &Value) -> (u64, u64, u64, u64) {
    let t = &u["total"];
    let n = |k: &str| t[k].as_u64().unwrap();
    (n("input"), n("cache_read"), n("cache_write"), n("output"))
}

/// Claude Code printed, for this run (`--output-format json`):
/// `"usage":{"input_tokens":31672,"cache_creation_input_tokens":0,
/// "cache_read_input_tokens":5535,"output_tokens":125}`. Its log copies
/// each reply's usage into every event of the reply: counted once.
#[test]
fn claude_code_log_adds_up_to_what_claude_code_reported() {
    let report = checked("claude_code.jsonl", &[]);
    let usage = usages(&report);
    assert_eq!(usage.len(), 1);
    assert_eq!(total(usage[0]), (31672, 5535, 0, 125));
    assert_eq!(usage[0]["trips"].as_array().unwrap().len(), 3);
    // A model the shipped table has no price for: tokens, no cost.
    assert_eq!(usage[0]["unpriced"], serde_json::json!(["claude-opus-5-5"]));
    assert!(usage[0].get("cost").is_none());
    let tools = usage[0]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "Bash");
    assert_eq!(tools[0]["calls"], 3);
}

/// Codex keeps its own running total in each `token_count` event: the
/// last one is the session's, and loopdbg's trips add up to it.
#[test]
fn codex_log_adds_up_to_its_own_running_total() {
    let text = fixture("usage/codex.jsonl");
    let last = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.pointer("/payload/info/total_token_usage").cloned())
        .next_back()
        .unwrap();
    let report = checked("codex.jsonl", &[]);
    let (input, cached, _, output) = total(usages(&report)[0]);
    assert_eq!(input + cached, last["input_tokens"].as_u64().unwrap());
    assert_eq!(cached, last["cached_input_tokens"].as_u64().unwrap());
    assert_eq!(output, last["output_tokens"].as_u64().unwrap());
    // gpt-5 is priced: $1.25 in, $10 out per million.
    let cost = usages(&report)[0]["cost"].as_f64().unwrap();
    let expected = input as f64 * 1.25e-6 + output as f64 * 10e-6;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    assert_eq!(usages(&report)[0]["prices_as_of"], "2025-11-24");
}

/// What the provider sent (the proxy's capture) and what each agent wrote
/// in its log are the same tokens.
#[test]
fn the_capture_and_each_agents_log_hold_the_same_tokens() {
    let capture = fixture("usage/capture.jsonl");
    let mut by_agent: std::collections::HashMap<&str, (u64, u64)> = Default::default();
    for line in capture.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let path = v["path"].as_str().unwrap_or("");
        let agent = match path {
            p if p.starts_with("/v1/responses") => "codex",
            p if p.starts_with("/v1/messages") => "claude",
            // Gemini CLI's model router asks `generateContent` first; its
            // log holds only the streamed trips.
            p if p.contains("streamGenerateContent") => "gemini",
            _ => continue,
        };
        let Some((usage, _)) = loopdbg_read::capture::usage_of(&v) else {
            continue;
        };
        let slot = by_agent.entry(agent).or_default();
        slot.0 += usage.prompt();
        slot.1 += usage.output;
    }
    for (agent, file) in [
        ("claude", "claude_code.jsonl"),
        ("codex", "codex.jsonl"),
        ("gemini", "gemini_cli.jsonl"),
    ] {
        let (input, cached, written, output) = total(usages(&checked(file, &[]))[0]);
        assert_eq!(
            by_agent[agent],
            (input + cached + written, output),
            "{agent}: capture vs log"
        );
    }
}

/// `--prices FILE` replaces the table; a bad table is refused where it is
/// wrong, exit 2.
#[test]
fn prices_come_from_the_users_table_and_a_bad_one_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("prices.json");
    std::fs::write(
        &table,
        r#"{"as_of": "2026-12-01", "currency": "USD", "per": 1000000,
  "models": {"claude-opus-5": {"input": 4.0, "output": 20.0, "cache_read": 0.4}}}"#,
    )
    .unwrap();
    let report = checked("claude_code.jsonl", &["--prices", table.to_str().unwrap()]);
    let usage = usages(&report)[0];
    let cost = usage["cost"].as_f64().unwrap();
    let expected = (31672.0 * 4.0 + 5535.0 * 0.4 + 125.0 * 20.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    assert_eq!(usage["prices_as_of"], "2026-12-01");

    std::fs::write(&table, "{\"as_of\": \"x\",\n  \"currency\": 3}").unwrap();
    loopdbg()
        .args(["check", &format!("{DIR}/codex.jsonl"), "--prices"])
        .arg(&table)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!("{}:2:", table.display())));
}

fn read_log(source: Source, name: &str) -> Conversation {
    let mut log = Log::new(source).unwrap();
    for (i, line) in fixture(name).lines().enumerate() {
        log.push_owned(i + 1, serde_json::from_str(line).unwrap())
            .unwrap();
    }
    log.finish().unwrap().remove(0)
}

fn replay_app(conv: &Conversation) -> App {
    let findings = loopdbg_judge::check::check(conv);
    let trace = loopdbg_export::replay::trace_of(conv, &findings);
    let mut app = App::replay(
        "codex.jsonl",
        loopdbg_export::replay::session_for(conv, "replay"),
        trace,
        conv.source.as_str(),
        Theme::monochrome(),
    );
    apply(&mut app, Action::Resize(120, 40));
    app
}

fn screen(app: &App, w: u16, h: u16) -> String {
    use ratatui::{Terminal, backend::TestBackend};
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| f.render_widget(app, f.area())).unwrap();
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The debugger says each trip's tokens once its reply is in, with the
/// run's so far, and the totals and the tools' share at the end.
#[test]
fn the_debugger_shows_tokens_per_trip_and_in_all() {
    let conv = read_log(Source::Agent(Agent::Codex), "usage/codex.jsonl");
    let mut app = replay_app(&conv);
    let at_reply = (0..app.trace.len())
        .find(|&k| app.trace.step(k).phase == loopdbg_engine::trace::Phase::Reply)
        .unwrap();
    app.cursor = at_reply;
    let text = screen(&app, 120, 40);
    assert!(
        text.contains("tokens: this trip 10,107 in · 39 out · $0.0130 (gpt-5); so far 10,107 in"),
        "{text}"
    );
    apply(&mut app, Action::Last);
    let text = screen(&app, 120, 40);
    assert!(
        text.contains(
            "tokens: 30,709 in · 158 out · $0.0400 over 3 trip(s) (prices of 2025-11-24)"
        ),
        "{text}"
    );
    assert!(
        text.contains("exec_command × 3: 116 out to call it"),
        "{text}"
    );
}

/// The run's tokens "so far" at each trip, computed once per trace, are
/// each trip's summed and priced as it comes (a cost only while every
/// trip so far is priced), on each agent's log and with a model the
/// table does not price.
#[test]
fn the_tokens_so_far_at_each_trip_add_up_the_trips_before() {
    let logs = [
        (Source::Agent(Agent::ClaudeCode), "usage/claude_code.jsonl"),
        (Source::Agent(Agent::Codex), "usage/codex.jsonl"),
        (Source::Agent(Agent::GeminiCli), "usage/gemini_cli.jsonl"),
    ];
    for (source, name) in logs {
        let conv = read_log(source, name);
        let mut app = replay_app(&conv);
        for unpriced in [false, true] {
            if unpriced {
                // A trip on a model no table prices: no cost from it on.
                let k = app.trace.rounds.len() / 2;
                app = replay_app(&conv);
                app.trace.rounds[k].reply.model = Some("a-model-nobody-prices".into());
            }
            let mut usage = loopdbg_engine::message::Usage::default();
            let mut cost = Some(0.0);
            assert_eq!(app.tokens_so_far(0), (usage, cost), "{name}");
            for (k, round) in app.trace.rounds.iter().enumerate() {
                if let Some(u) = &round.reply.usage {
                    usage.add(u);
                    let priced = round
                        .reply
                        .model
                        .as_deref()
                        .and_then(|m| app.prices.cost(m, u));
                    cost = cost.zip(priced).map(|(a, b)| a + b);
                }
                assert_eq!(app.tokens_so_far(k + 1), (usage, cost), "{name}, trip {k}");
            }
            assert!(app.trace.rounds.len() >= 3, "{name}");
            if unpriced {
                assert!(cost.is_none(), "{name}");
            }
        }
    }
}

/// A handout of a replayed log has the tokens table.
#[test]
fn the_handout_has_a_tokens_table() {
    let conv = read_log(Source::Agent(Agent::Codex), "usage/codex.jsonl");
    let app = replay_app(&conv);
    let opts = loopdbg_handout::Options {
        kind: loopdbg_handout::Kind::Markdown,
        format: loopdbg_formats::provider::Format::Responses,
        model: "gpt-5".into(),
        redact: true,
        redact_patterns: Vec::new(),
        origin: "codex.jsonl".into(),
        prices: std::sync::Arc::new(loopdbg_formats::prices::Prices::builtin()),
    };
    let md = loopdbg_handout::render(&app.session, &app.trace, &opts);
    assert!(md.contains("## Tokens"), "{md}");
    assert!(
        md.contains("| 1 | gpt-5 | 10107 | 0 | 0 | 39 | $0.0130 |"),
        "{md}"
    );
    assert!(md.contains("| exec_command | 3 | 116 | 175 |"), "{md}");
    let html = loopdbg_handout::render(
        &app.session,
        &app.trace,
        &loopdbg_handout::Options {
            kind: loopdbg_handout::Kind::Html,
            ..opts
        },
    );
    assert!(html.contains("<table id=\"tokens\">"), "{html}");
}

/// `record` keeps each reply's tokens in the session it writes, so the
/// recorded loop shows them in the debugger too.
#[test]
fn record_keeps_the_tokens_of_each_reply() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    loopdbg()
        .args([
            "record",
            &format!("{DIR}/capture.jsonl"),
            "--conversation",
            "1",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let replies: Vec<&Value> = session["model"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|rules| rules.as_array().unwrap())
        .map(|r| &r["reply"])
        .collect();
    assert!(!replies.is_empty());
    for reply in &replies {
        assert!(reply["usage"]["input"].as_u64().unwrap() > 0, "{reply}");
        assert_eq!(reply["model"], "gpt-5");
    }
}
