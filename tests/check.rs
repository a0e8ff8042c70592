//! `check`: every violation kind on fixtures written in each provider's
//! documented format, repairs, and the round trip of every shipped session
//! through each wire format.

use crate::common::*;
use loopdbg_read::finding::Kind;

use loopdbg_engine::ledger::Ledger;
use loopdbg_engine::strategy::{Extract, StopRule};
use loopdbg_engine::{Session, Strategy};
use loopdbg_formats::provider::{Format, request_body};
use loopdbg_judge::check::{Finding, check};
use loopdbg_judge::fix::{Repair, repair};
use loopdbg_read::{Conversation, Source, detect, read};
use serde_json::Value;

fn conversation(name: &str) -> Conversation {
    let doc: Value = serde_json::from_str(&fixture(name)).unwrap();
    read(&doc, detect(&doc).unwrap()).unwrap()
}

fn findings(name: &str) -> Vec<Finding> {
    check(&conversation(name))
}

fn only(name: &str, kind: &str) -> Finding {
    let all = findings(name);
    let of_kind: Vec<&Finding> = all.iter().filter(|f| f.kind.as_str() == kind).collect();
    assert_eq!(of_kind.len(), 1, "{name}: {all:#?}");
    of_kind[0].clone()
}

#[test]
fn clean_conversations_have_no_findings() {
    for name in [
        "anthropic_clean.json",
        "openai_clean.json",
        "responses_clean.json",
    ] {
        assert_eq!(findings(name), vec![], "{name}");
    }
}

#[test]
fn formats_are_detected_by_content() {
    let d = |n: &str| detect(&serde_json::from_str(&fixture(n)).unwrap());
    assert_eq!(
        d("anthropic_clean.json"),
        Some(Source::Provider(Format::Anthropic))
    );
    assert_eq!(
        d("anthropic_results_after_text.json"),
        Some(Source::Provider(Format::Anthropic))
    );
    assert_eq!(
        d("openai_clean.json"),
        Some(Source::Provider(Format::Openai))
    );
    assert_eq!(
        d("responses_problems.json"),
        Some(Source::Provider(Format::Responses))
    );
    assert_eq!(
        d("responses_clean.json"),
        Some(Source::Provider(Format::Responses))
    );
}

#[test]
fn anthropic_parallel_call_without_result() {
    let f = only("anthropic_parallel_one_missing.json", "unanswered_call");
    assert_eq!(f.path, "messages[1]");
    assert_eq!(f.ids, ["toolu_f1"]);
    // The provider's words begin with the place it names: the message
    // after the calls, where their results belong.
    assert!(f.message.starts_with(
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_f1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    ));
    assert!(f.rejected_by_provider());
}

#[test]
fn anthropic_interrupted_call() {
    let f = only("anthropic_interrupted.json", "unanswered_call");
    assert_eq!(
        (f.path.as_str(), f.ids.clone()),
        ("messages[1]", vec!["toolu_r1".to_string()])
    );
}

#[test]
fn anthropic_results_must_open_the_next_message() {
    let f = only("anthropic_results_after_text.json", "results_not_first");
    assert_eq!(f.path, "messages[2]");
    assert_eq!(f.ids, ["toolu_w1"]);
    assert_eq!(
        f.message,
        "Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
    );
}

#[test]
fn anthropic_orphan_result_after_compaction() {
    let f = only("anthropic_compacted_orphan.json", "unexpected_result");
    assert_eq!(f.path, "messages[0].content[0]");
    assert_eq!(f.ids, ["toolu_old7"]);
    assert!(
        f.message
            .starts_with("unexpected `tool_use_id` found in `tool_result` blocks: toolu_old7.")
    );
}

#[test]
fn anthropic_ids_unique_and_well_formed() {
    // One id in two separate, answered turns: accepted, but ambiguous.
    let reused = only("anthropic_duplicate_and_bad_ids.json", "reused_id");
    assert_eq!(
        (
            reused.path.as_str(),
            reused.ids.clone(),
            reused.rejected_by_provider()
        ),
        ("messages[3].content[0]", vec!["toolu_1".to_string()], false)
    );
    assert!(
        !findings("anthropic_duplicate_and_bad_ids.json")
            .iter()
            .any(|f| f.kind == Kind::DuplicateId)
    );
    // One id twice in one turn: the 400.
    let dup = only("anthropic_duplicate_in_one_turn.json", "duplicate_id");
    assert_eq!(
        (
            dup.path.as_str(),
            dup.ids.clone(),
            dup.rejected_by_provider()
        ),
        (
            "messages[1].content[1]",
            vec!["toolu_01A".to_string()],
            true
        )
    );
    assert!(dup.message.starts_with("`tool_use` ids must be unique"));
    let bad = only("anthropic_duplicate_and_bad_ids.json", "invalid_id");
    assert_eq!(bad.path, "messages[5].content[0]");
    assert!(bad.message.contains("^[a-zA-Z0-9_-]+$"));
}

#[test]
fn truncated_turn_whose_calls_ran() {
    let f = only(
        "anthropic_truncated_executed.json",
        "truncated_turn_executed",
    );
    assert_eq!(
        (f.path.as_str(), f.rejected_by_provider()),
        ("messages[1]", false)
    );
}

#[test]
fn openai_every_kind() {
    let f = only("openai_problems.json", "unanswered_call");
    assert_eq!(f.path, "messages[1]");
    assert_eq!(f.ids, ["call_b", "call_c"]);
    assert_eq!(
        f.message,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b, call_c"
    );
    let o = only("openai_problems.json", "unexpected_result");
    assert_eq!(
        (o.path.as_str(), o.ids.clone()),
        ("messages[3]", vec!["call_z".to_string()])
    );
    assert!(o.message.starts_with(
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
    ));
    let a = only("openai_problems.json", "invalid_arguments");
    assert_eq!(
        (a.path.as_str(), a.ids.clone()),
        ("messages[1].tool_calls[2]", vec!["call_c".to_string()])
    );
    let s = only("openai_problems.json", "schema_violation");
    assert_eq!(s.path, "messages[1].tool_calls[1]");
    assert!(s.message.contains("location"), "{}", s.message);
    let u = only("openai_problems.json", "unknown_tool");
    assert!(
        u.message
            .contains("`get_wether` is not among the request's tools")
    );
}

#[test]
fn responses_both_directions() {
    let f = only("responses_problems.json", "unanswered_call");
    assert_eq!(
        (f.path.as_str(), f.message.as_str()),
        ("input[2]", "No tool output found for function call fc_2.")
    );
    let o = only("responses_problems.json", "unexpected_result");
    assert_eq!(
        (o.path.as_str(), o.message.as_str()),
        (
            "input[4]",
            "No tool call found for function call output with call_id fc_9."
        )
    );
}

#[test]
fn claude_code_log_names_the_event_where_pairing_broke() {
    let convs = claude_code_log("claude_code_interrupted.jsonl");
    assert_eq!(convs.len(), 2, "the sidechain is a conversation of its own");
    assert_eq!(convs[0].label, None);
    assert_eq!(convs[1].label.as_deref(), Some("sub-agent"));
    // Three assistant events with one message id are one API message.
    assert_eq!(convs[0].messages[1].content.len(), 3);
    let f: Vec<Finding> = check(&convs[0]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].kind.as_str(), "unanswered_call");
    assert_eq!(f[0].ids, ["toolu_b"]);
    assert_eq!((f[0].line, f[0].uuid.as_deref()), (Some(5), Some("u4")));
}

#[test]
fn claude_code_compaction_leaves_an_orphan_result() {
    let convs = claude_code_log("claude_code_compacted.jsonl");
    assert_eq!(convs.len(), 2);
    assert!(check(&convs[0]).is_empty());
    let f = check(&convs[1]);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].kind.as_str(), f[0].line, f[0].uuid.as_deref()),
        ("unexpected_result", Some(5), Some("b2"))
    );
}

const PAIRING: [&str; 4] = [
    "unanswered_call",
    "unexpected_result",
    "results_not_first",
    "duplicate_id",
];

fn repaired(name: &str, how: Repair) -> Vec<Finding> {
    let mut doc: Value = serde_json::from_str(&fixture(name)).unwrap();
    let source = detect(&doc).unwrap();
    assert!(
        repair(&mut doc, source.provider(), how) > 0,
        "{name}: nothing repaired"
    );
    check(&read(&doc, source).unwrap())
}

#[test]
fn synthesize_answers_every_dangling_call() {
    for name in [
        "anthropic_parallel_one_missing.json",
        "anthropic_interrupted.json",
        "anthropic_results_after_text.json",
        "openai_problems.json",
        "responses_problems.json",
    ] {
        let left = repaired(name, Repair::Synthesize);
        assert!(
            !left
                .iter()
                .any(|f| f.kind == Kind::UnansweredCall || f.kind == Kind::ResultsNotFirst),
            "{name}: {left:#?}"
        );
    }
}

/// The commonest Gemini break (a resumed Gemini CLI session sends each
/// response twice): both repairs drop the copies, so the proxy's
/// `--on-invalid repair=synthesize` lets the agent through as `strip` does.
#[test]
fn both_repairs_mend_a_call_answered_twice() {
    for how in [Repair::Synthesize, Repair::Strip] {
        let left = repaired("gemini_duplicate_responses.json", how);
        assert!(
            left.iter().all(|f| !f.rejected_by_provider()),
            "{how:?}: {left:#?}"
        );
    }
}

#[test]
fn strip_leaves_no_pairing_problem() {
    for name in [
        "anthropic_parallel_one_missing.json",
        "anthropic_interrupted.json",
        "anthropic_results_after_text.json",
        "anthropic_compacted_orphan.json",
        "openai_problems.json",
        "responses_problems.json",
    ] {
        let left = repaired(name, Repair::Strip);
        assert!(
            !left.iter().any(|f| PAIRING.contains(&f.kind.as_str())),
            "{name}: {left:#?}"
        );
    }
}

/// Renders each request body the run sent and reads it back.
fn round_trip(
    session: &Session,
    strategy: &Strategy,
    format: Format,
) -> Vec<(usize, Vec<Finding>)> {
    let trace = loopdbg_engine::run(session, strategy);
    let mut lens: Vec<usize> = trace
        .steps
        .iter()
        .filter(|s| s.phase == loopdbg_engine::trace::Phase::Request)
        .map(|s| s.history_len)
        .collect();
    lens.push(trace.messages.len());
    lens.into_iter()
        .map(|len| {
            let body = request_body(format, session, &trace.messages[..len], "m");
            let conv = read(&body, Source::Provider(format)).unwrap();
            (len, check(&conv))
        })
        .collect()
}

#[test]
fn every_session_round_trips_clean_under_all_and_robust() {
    for (name, session) in shipped() {
        for behavior in session.behavior_names() {
            let mut s = Strategy::for_session(&session);
            s.extract = Extract::All;
            s.stop = StopRule::Robust;
            s.behavior = behavior.to_string();
            s.max_rounds = s.max_rounds.min(50);
            for format in Format::ALL {
                for (len, found) in round_trip(&session, &s, format) {
                    let pairing: Vec<&Finding> = found
                        .iter()
                        .filter(|f| {
                            PAIRING.contains(&f.kind.as_str()) && f.kind != Kind::DuplicateId
                        })
                        .collect();
                    assert!(
                        pairing.is_empty(),
                        "{name}/{behavior} as {format} at {len} messages: {pairing:#?}"
                    );
                }
            }
        }
    }
}

#[test]
fn parallel_call_sessions_carry_exactly_the_dropped_call_under_first() {
    for (name, session) in shipped() {
        let mut s = Strategy::for_session(&session);
        s.extract = Extract::First;
        s.stop = StopRule::ToolCalls;
        s.max_rounds = s.max_rounds.min(20);
        let trace = loopdbg_engine::run(&session, &s);
        let mut expected = Ledger::of(&trace.messages, &[]).unpaired();
        expected.sort();
        for format in Format::ALL {
            let body = request_body(format, &session, &trace.messages, "m");
            let found = check(&read(&body, Source::Provider(format)).unwrap());
            let mut ids: Vec<String> = found
                .iter()
                .filter(|f| f.kind == Kind::UnansweredCall)
                .flat_map(|f| f.ids.clone())
                .collect();
            // One id per unanswered call, as the ledger counts them: a stub
            // that reuses ids leaves one call per round.
            ids.sort();
            assert_eq!(ids, expected, "{name} as {format}");
            assert!(
                !found.iter().any(|f| f.kind == Kind::UnexpectedResult),
                "{name} as {format}: {found:#?}"
            );
        }
        if name == "weather_fx.json" {
            assert_eq!(expected, ["toolu_f1"]);
        }
    }
}

#[test]
fn a_repeated_turn_is_a_spin_even_with_fresh_ids() {
    let f = only("anthropic_repeated_turn.json", "repeated_turn");
    assert_eq!(f.path, "messages[3]");
    assert_eq!(f.ids, ["toolu_a2"]);
    assert!(
        f.message.contains("(first at messages[1])"),
        "{}",
        f.message
    );
    assert!(!f.rejected_by_provider());
}

#[test]
fn unknown_tool_names_the_declared_ones() {
    let f = only("openai_problems.json", "unknown_tool");
    assert_eq!(
        (f.path.as_str(), f.ids.clone()),
        ("messages[1].tool_calls[2]", vec!["call_c".to_string()])
    );
    assert_eq!(
        f.message,
        "`get_wether` is not among the request's tools (get_weather)"
    );
}

/// The debugger lists provider views from cheap spans and renders only the
/// lines on screen; the spans must agree with the full rendering.
#[test]
fn view_spans_agree_with_rendering() {
    for (name, session) in shipped() {
        let mut s = Strategy::for_session(&session);
        s.max_rounds = s.max_rounds.min(12);
        for extract in [Extract::First, Extract::All] {
            s.extract = extract;
            let trace = loopdbg_engine::run(&session, &s);
            for format in Format::ALL {
                let items = loopdbg_formats::provider::render(format, &trace.messages);
                let spans = loopdbg_formats::provider::spans(format, &trace.messages);
                assert_eq!(items.len(), spans.len(), "{name} as {format}");
                for (item, span) in items.iter().zip(&spans) {
                    assert_eq!(
                        (item.role.as_str(), &item.from),
                        (span.role, &span.from),
                        "{name} as {format}"
                    );
                    let alone =
                        loopdbg_formats::provider::render_span(format, &trace.messages, span)
                            .unwrap();
                    assert_eq!(&alone, item, "{name} as {format}");
                }
            }
        }
    }
}

/// In a provider view the ids pane names each call and result where that
/// provider's body holds it (issue 22, item 6: it stayed
/// `messages[1].content[2]` in the Responses and Gemini views). Every path
/// is looked up in the view's own rendering and must land on a block that
/// carries the id.
#[test]
fn block_paths_point_at_the_id_in_every_provider_view() {
    use loopdbg_engine::message::Block;
    let mut checked = 0;
    for (name, session) in shipped() {
        let mut s = Strategy::for_session(&session);
        s.max_rounds = s.max_rounds.min(6);
        let trace = loopdbg_engine::run(&session, &s);
        let history = &trace.messages;
        for format in Format::ALL {
            let items: Vec<Value> = loopdbg_formats::provider::render(format, history)
                .into_iter()
                .map(|i| i.json)
                .collect();
            let spans = loopdbg_formats::provider::spans(format, history);
            for (m, message) in history.iter().enumerate() {
                for (b, block) in message.content.iter().enumerate() {
                    let id = match block {
                        Block::ToolUse { id, .. } => id.to_string(),
                        Block::ToolResult { tool_use_id, .. } => tool_use_id.to_string(),
                        _ => continue,
                    };
                    let path = loopdbg_formats::provider::block_path(format, history, &spans, m, b)
                        .unwrap_or_else(|| panic!("{name} as {format}: no path for {id}"));
                    // `messages[2].content[1]` → a JSON pointer into the list.
                    let pointer: String = path
                        .split('.')
                        .enumerate()
                        .map(|(i, seg)| {
                            let (key, index) = seg.trim_end_matches(']').split_once('[').unwrap();
                            if i == 0 {
                                format!("/{index}")
                            } else {
                                format!("/{key}/{index}")
                            }
                        })
                        .collect();
                    let found = Value::Array(items.clone())
                        .pointer(&pointer)
                        .cloned()
                        .unwrap_or_else(|| panic!("{name} as {format}: {path} is not in the view"));
                    assert!(
                        found.to_string().contains(&format!("\"{id}\"")),
                        "{name} as {format}: {path} holds {found}, not {id}"
                    );
                    let expected_root = match format {
                        Format::Responses => "input[",
                        Format::Gemini => "contents[",
                        _ => "messages[",
                    };
                    assert!(path.starts_with(expected_root), "{path}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} blocks checked");
}

/// An unpaired `server_tool_use` / `mcp_tool_use` is refused once the
/// history goes on past it, and accepted while its result is in flight
/// (pydantic-ai measured both live; see the fixtures' SOURCE.md).
#[test]
fn an_unpaired_server_call_is_refused_once_the_history_goes_on() {
    let dir = "tests/fixtures/transcripts/unpaired_server_calls";
    for (file, text) in [
        (
            "continued_web_search.json",
            "`web_search` tool use with id srvtoolu_01EoSNE7k4dUJyGatASCV5qs was found without a corresponding `web_search_tool_result` block",
        ),
        (
            "continued_mcp.json",
            "`mcp_tool_use` with id mcptoolu_01AbCdEfGhIjKlMnOpQrStUv was found without a corresponding `mcp_tool_result` block",
        ),
    ] {
        crate::common::loopdbg()
            .args(["check", &format!("{dir}/{file}")])
            .assert()
            .code(1)
            .stdout(predicates::str::contains("unanswered_server_call (400)"))
            .stdout(predicates::str::contains(text));
    }
    for file in ["in_flight_web_search.json", "in_flight_mcp.json"] {
        crate::common::loopdbg()
            .args(["check", &format!("{dir}/{file}")])
            .assert()
            .code(0);
    }
}

/// A tool search the client runs is a call: answered by its
/// `tool_search_output` or by a `function_call_output` with its `call_id`
/// (which OpenAI takes; it was a false `unexpected_result` 400).
#[test]
fn a_client_tool_search_pairs_with_its_output() {
    let dir = "tests/fixtures/transcripts/responses_tool_search";
    for file in [
        "answered_by_tool_search_output.json",
        "answered_by_function_call_output.json",
    ] {
        crate::common::loopdbg()
            .args(["check", &format!("{dir}/{file}")])
            .assert()
            .code(0);
    }
    crate::common::loopdbg()
        .args(["check", "--strict", &format!("{dir}/unanswered.json")])
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "unanswered_call (warning)  [search-1]",
        ))
        .stdout(predicates::str::contains(
            "No tool output found for tool search call search-1.",
        ));
}

/// With extended thinking on, the tool loop in progress must open with its
/// thinking block (Anthropic's 400, as users reported it; see SOURCE.md).
#[test]
fn a_tool_loop_without_its_thinking_block_is_refused_when_thinking_is_on() {
    let dir = "tests/fixtures/transcripts/anthropic_thinking";
    crate::common::loopdbg()
        .args(["check", &format!("{dir}/dropped.json")])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("thinking_missing (400)"))
        .stdout(predicates::str::contains(
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.",
        ));
    // Adaptive thinking: a reply without a thinking block may simply not
    // have thought (Claude Code's requests so were answered 200).
    for file in ["kept.json", "new_prompt.json", "adaptive_no_thinking.json"] {
        crate::common::loopdbg()
            .args(["check", &format!("{dir}/{file}")])
            .assert()
            .code(0);
    }
    crate::common::loopdbg()
        .args([
            "check",
            "--strict",
            &format!("{dir}/adaptive_dropped_one.json"),
        ])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("thinking_missing (warning)"));
}

/// Shapes the providers accept are read, not refused as unreadable
/// (issue 25 item 6; see the fixtures' SOURCE.md).
#[test]
fn shapes_the_providers_accept_are_read() {
    let dir = "tests/fixtures/transcripts/lenient_shapes";
    crate::common::loopdbg()
        .args(["check", &format!("{dir}/responses_bare_reference.json")])
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "unverifiable_result (note)  [call_1]",
        ))
        .stdout(predicates::str::contains("item_reference fc_123"));
    crate::common::loopdbg()
        .args([
            "check",
            "--strict",
            &format!("{dir}/chat_null_tool_call_id.json"),
        ])
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "unnamed_result (warning)  [call_1]",
        ))
        .stdout(predicates::str::contains(
            "0 a provider would reject with a 400",
        ));
    crate::common::loopdbg()
        .args(["check", &format!("{dir}/gemini_parts_object.json")])
        .assert()
        .code(0);
}

// ------------------------------------------------------------ Bedrock Converse

fn bedrock(name: &str) -> Vec<Finding> {
    let doc: Value = serde_json::from_str(&fixture(&format!("bedrock/{name}"))).unwrap();
    assert_eq!(
        detect(&doc),
        Some(Source::Provider(Format::Bedrock)),
        "{name}"
    );
    check(&read(&doc, Source::Provider(Format::Bedrock)).unwrap())
}

#[test]
fn bedrock_converse_is_checked_in_its_own_words() {
    assert!(bedrock("clean.json").is_empty());
    let missing = bedrock("parallel_first_only.json");
    assert_eq!(missing.len(), 1, "{missing:#?}");
    assert_eq!(missing[0].kind, Kind::UnansweredCall);
    assert!(missing[0].rejected_by_provider());
    assert_eq!(
        missing[0].message,
        "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_sX1A7q9kipz4qAW36LUR1H, tooluse_mnUeKx1nqbeU7vWccDvS7a"
    );
    let extra = bedrock("pruned_tool_use.json");
    assert_eq!(extra.len(), 1, "{extra:#?}");
    assert_eq!(extra[0].kind, Kind::UnexpectedResult);
    assert_eq!(
        extra[0].message,
        "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn."
    );
    let undeclared = bedrock("no_tool_config.json");
    assert_eq!(undeclared.len(), 1, "{undeclared:#?}");
    assert_eq!(undeclared[0].kind, Kind::MissingToolConfig);
    assert!(undeclared[0].rejected_by_provider());
    let empty = bedrock("error_result_empty.json");
    assert_eq!(empty.len(), 1, "{empty:#?}");
    assert_eq!(empty[0].kind, Kind::EmptyErrorResult);
    assert_eq!(
        empty[0].message,
        "The content field at messages.2.content.1.toolResult cannot be empty when status value is error."
    );
    let odd = bedrock("unknown_block_and_bad_id.json");
    let kinds: Vec<&str> = odd.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["invalid_id", "unknown_block"], "{odd:#?}");
}

/// A body with blocks its provider does not define is never called clean:
/// a Bedrock body read as Anthropic (`--format anthropic` is refused for
/// it; an Anthropic body with one Bedrock block is read as Anthropic) and
/// an unknown block type in either.
#[test]
fn blocks_the_provider_does_not_define_are_never_clean() {
    let mixed: Value = serde_json::json!({"model": "m", "max_tokens": 9, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}]},
        {"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "widget"}]}
    ]});
    assert_eq!(detect(&mixed), Some(Source::Provider(Format::Anthropic)));
    let found = check(&read(&mixed, Source::Provider(Format::Anthropic)).unwrap());
    let kinds: Vec<&str> = found.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["unknown_block", "unknown_block"], "{found:#?}");
    assert!(found[0].message.contains("Bedrock Converse"), "{found:#?}");
    let bedrock_body: Value = serde_json::json!({"messages": [
        {"role": "user", "content": [{"text": "hi"}, {"widget": {}}]}]});
    let found = check(&read(&bedrock_body, detect(&bedrock_body).unwrap()).unwrap());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, Kind::UnknownBlock);
}

#[test]
fn bedrock_repairs_keep_every_other_block() {
    for (how, calls) in [(Repair::Synthesize, 3), (Repair::Strip, 1)] {
        let mut doc: Value =
            serde_json::from_str(&fixture("bedrock/parallel_first_only.json")).unwrap();
        let changed = repair(&mut doc, Format::Bedrock, how);
        assert_eq!(changed, 2, "{how:?}");
        let conv = read(&doc, Source::Provider(Format::Bedrock)).unwrap();
        assert!(check(&conv).is_empty(), "{how:?}: {doc:#}");
        assert_eq!(conv.messages[1].tool_uses().count(), calls, "{how:?}");
        // The assistant's text, the system prompt and the tools stay.
        assert_eq!(doc["messages"][1]["content"][0]["text"], "Let me search.");
        assert!(doc["toolConfig"].is_object() && doc["system"].is_array());
    }
}

/// Roo Code sends the summary, not the three messages it replaced, and no
/// reasoning item: four messages of the file's eight entries, each named
/// by its own index in the file.
#[test]
fn a_roo_task_history_is_read_as_roo_sends_it() {
    let conv = conversation("agent_stores/roo_api_conversation_history.json");
    assert_eq!(conv.messages.len(), 4);
    let paths: Vec<String> = conv
        .message_sources
        .iter()
        .map(|s| s.path.to_string())
        .collect();
    assert_eq!(
        paths,
        ["messages[3]", "messages[5]", "messages[6]", "messages[7]"]
    );
    assert!(check(&conv).is_empty());
}

/// An agent killed while one of two parallel calls ran has written the
/// other's result: the log ends mid-turn, the call is still in flight (a
/// note: Claude Code closes it as it resumes, tried in tests/agents.rs),
/// not a history a provider would refuse.
#[test]
fn a_log_cut_between_parallel_results_holds_a_call_in_flight() {
    use predicates::prelude::*;
    let text = std::fs::read_to_string("tests/fixtures/transcripts/claude_code_v2/parallel.jsonl")
        .unwrap();
    let cut: Vec<&str> = text.lines().take(9).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.jsonl");
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    loopdbg()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(
            predicates::str::contains("unanswered_call (note)  [toolu_01Read2]").and(
                predicates::str::contains("ends while these calls are in flight: toolu_01Read2"),
            ),
        );
}

/// Gemini takes consecutive function response turns as one: two parallel
/// calls answered in two turns of one response each were accepted (200, a
/// reply that used both, in a held-out recording). A run that still
/// misses a call is the count's 400.
#[test]
fn gemini_responses_split_over_consecutive_turns_answer_the_call_turn() {
    let body = |responses: &[&str]| {
        let turns: Vec<serde_json::Value> = responses
            .iter()
            .map(|id| {
                serde_json::json!({"role": "user", "parts": [
                {"functionResponse": {"id": id, "name": "get_weather", "response": {"t": 1}}}]})
            })
            .collect();
        let mut contents = vec![
            serde_json::json!({"role": "user", "parts": [{"text": "Boston and Paris?"}]}),
            serde_json::json!({"role": "model", "parts": [
                {"functionCall": {"id": "fc_b1", "name": "get_weather", "args": {}}},
                {"functionCall": {"id": "fc_p1", "name": "get_weather", "args": {}}}]}),
        ];
        contents.extend(turns);
        serde_json::json!({ "contents": contents })
    };
    let conv = loopdbg_read::read(
        &body(&["fc_b1", "fc_p1"]),
        loopdbg_read::Source::Provider(Format::Gemini),
    )
    .unwrap();
    assert_eq!(check(&conv), Vec::<Finding>::new());
    let conv = loopdbg_read::read(
        &body(&["fc_b1"]),
        loopdbg_read::Source::Provider(Format::Gemini),
    )
    .unwrap();
    let found = check(&conv);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].kind, Kind::UnansweredCall);
    assert_eq!(found[0].ids, ["fc_p1"]);
    assert!(
        found[0].message.contains("(2 call(s), 2 response(s))")
            || found[0]
                .message
                .contains("number of function response parts"),
        "{}",
        found[0].message
    );
}

/// A first request (one user message, no tool yet) says nothing of its
/// format in its messages: the model and `max_tokens` lean it. OpenAI
/// Chat bodies for gpt-*, o1-*, and llama3-* or gemini-* behind
/// OpenAI-compatible endpoints, none with `max_tokens` (which Anthropic
/// requires), were labelled Anthropic in a held-out corpus.
#[test]
fn a_first_request_is_labelled_by_its_model_and_max_tokens() {
    let cases = [
        (
            r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#,
            "openai",
        ),
        (
            r#"{"model":"o1-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":5}"#,
            "openai",
        ),
        (
            r#"{"model":"llama3-70b-8192","messages":[{"role":"user","content":"hi"}]}"#,
            "openai",
        ),
        (
            r#"{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"hi"}]}"#,
            "openai",
        ),
        (r#"{"messages":[{"role":"user","content":"hi"}]}"#, "openai"),
        (
            r#"{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}],"max_tokens":5}"#,
            "anthropic",
        ),
        (
            r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}"#,
            "anthropic",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (k, (body, expected)) in cases.iter().enumerate() {
        // As a document and as a line of JSON Lines (the fast path).
        for (name, text) in [
            (format!("{k}.json"), format!("{body}\n")),
            (format!("{k}.jsonl"), format!("{body}\n{body}\n")),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let (_, report) = check_json(&path);
            assert_eq!(report["files"][0]["format"], *expected, "{body}");
        }
    }
}

/// Gemini takes `contents` and `parts` given as single objects for lists
/// of one (a held-out recording sent both and got 200): read, not refused.
#[test]
fn gemini_contents_and_parts_as_single_objects_are_read() {
    let body = serde_json::json!({"contents": {"role": "user", "parts": {"text": "hi"}}});
    assert_eq!(
        loopdbg_read::detect(&body),
        Some(loopdbg_read::Source::Provider(Format::Gemini))
    );
    let conv = loopdbg_read::read(&body, loopdbg_read::Source::Provider(Format::Gemini)).unwrap();
    assert_eq!(conv.messages.len(), 1);
    assert_eq!(check(&conv), Vec::<Finding>::new());
}

/// Three parallel calls answered in three consecutive turns of one
/// response each: Gemini takes the run as one turn (it answered 200 and
/// used all three), so each response pairs with its call and nothing is
/// said; a fourth response in the run answers no call (issue 41: each was
/// warned as "answers the wrong call").
#[test]
fn gemini_responses_over_consecutive_turns_answer_the_calls_before_them() {
    let mut body = serde_json::json!({"contents": [
        {"role": "user", "parts": [{"text": "weather in a, b, c"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "w", "args": {"c": "a"}}},
            {"functionCall": {"name": "w", "args": {"c": "b"}}},
            {"functionCall": {"name": "w", "args": {"c": "c"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": 1}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": 2}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": 3}}}]}
    ], "tools": [{"functionDeclarations": [{"name": "w"}]}]});
    let gemini = loopdbg_read::Source::Provider(Format::Gemini);
    let conv = loopdbg_read::read(&body, gemini).unwrap();
    assert_eq!(check(&conv), Vec::<Finding>::new());
    let calls: Vec<String> = loopdbg_read::tool_uses(&conv.messages[1])
        .map(|(_, id, _)| id.to_string())
        .collect();
    let answered: Vec<String> = (2..5)
        .flat_map(|i| loopdbg_read::tool_results(&conv.messages[i]).map(|(_, id)| id.to_string()))
        .collect();
    assert_eq!(calls, answered);

    body["contents"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
        {"role": "user", "parts": [{"functionResponse": {"name": "w", "response": {"t": 4}}}]}));
    let conv = loopdbg_read::read(&body, gemini).unwrap();
    let kinds: Vec<Kind> = check(&conv).iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&Kind::UnansweredCall), "{kinds:?}");
}

/// `check --format sarif` is SARIF 2.1.0 valid against the published
/// schema, one result per finding of `--format json` at its file and line,
/// each result's rule among the driver's rules, an unreadable file as a
/// failed invocation's notification; `--format github` annotates the same
/// findings as workflow commands (issue 41).
#[test]
fn sarif_and_github_annotations_carry_every_finding() {
    let files = [
        "tests/fixtures/transcripts/anthropic_parallel_one_missing.json",
        "tests/fixtures/transcripts/claude_code_interrupted.jsonl",
        "tests/fixtures/bad/truncated_json.json",
    ];
    let run = |format: &str| {
        let out = loopdbg()
            .arg("check")
            .args(files)
            .args(["--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "an unreadable file: exit 2");
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let findings: Vec<&serde_json::Value> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["results"].as_array().unwrap())
        .flat_map(|r| r["findings"].as_array().unwrap())
        .collect();
    assert!(findings.len() >= 2, "{json}");

    let sarif: serde_json::Value = serde_json::from_str(&run("sarif")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/schemas/sarif-schema-2.1.0.json").unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0: {errors:?}");
    let run0 = &sarif["runs"][0];
    let results = run0["results"].as_array().unwrap();
    assert_eq!(results.len(), findings.len());
    let rules: Vec<&str> = run0["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for (result, finding) in results.iter().zip(&findings) {
        assert_eq!(result["ruleId"], finding["kind"]);
        assert!(rules.contains(&result["ruleId"].as_str().unwrap()));
        let level = match finding["severity"].as_str().unwrap() {
            "400" => "error",
            "warning" => "warning",
            _ => "note",
        };
        assert_eq!(result["level"], level, "{result}");
        let place = &result["locations"][0]["physicalLocation"];
        assert!(files.contains(&place["artifactLocation"]["uri"].as_str().unwrap()));
        assert!(place["region"]["startLine"].as_u64().unwrap() >= 1);
        if let Some(line) = finding["line"].as_u64() {
            assert_eq!(place["region"]["startLine"], line);
        }
    }
    let invocation = &run0["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let unread = &invocation["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"];
    assert_eq!(unread["artifactLocation"]["uri"], files[2]);
    assert_eq!(unread["region"]["startLine"], 4);

    let github = run("github");
    let commands: Vec<&str> = github.lines().collect();
    assert_eq!(commands.len(), findings.len() + 1, "{github}");
    for line in &commands {
        assert!(
            ["::error file=", "::warning file=", "::notice file="]
                .iter()
                .any(|p| line.starts_with(p)),
            "{line}"
        );
        assert!(line.contains(",line="), "{line}");
    }
    assert!(
        commands
            .iter()
            .any(|l| l.starts_with("::error file=tests/fixtures/transcripts/anthropic_parallel_one_missing.json,line=4,col=5,title=loopdbg unanswered_call (400)::")),
        "{github}"
    );
}

/// Many small inputs are checked side by side and reported in the order
/// given, the same as one at a time; JSON Lines of bodies among them (each
/// checked on the thread pool while its file waits) once hung the lot.
#[test]
fn many_small_files_are_checked_side_by_side_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let sources = [
        "tests/fixtures/transcripts/dataset.jsonl",
        "tests/fixtures/transcripts/claude_code_interrupted.jsonl",
        "tests/fixtures/transcripts/claude_code_compacted.jsonl",
    ];
    for k in 0..12 {
        let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(sources[k % 3]);
        let to = dir.path().join(format!(
            "{k:02}-{}",
            from.file_name().unwrap().to_string_lossy()
        ));
        std::fs::copy(&from, &to).unwrap();
        files.push(to);
    }
    let run = |files: &[std::path::PathBuf]| {
        let out = crate::common::loopdbg()
            .args(["check", "--format", "jsonl"])
            .args(files)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some(),
            "ended by a signal (a hang cut short?)"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let together = run(&files);
    let one_by_one: String = files.iter().map(|f| run(std::slice::from_ref(f))).collect();
    // Every file's lines, in the order the files were given.
    let files_named = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["file"].as_str().map(str::to_string))
            .collect()
    };
    assert!(!files_named(&together).is_empty());
    assert_eq!(files_named(&together), files_named(&one_by_one));
}

/// The same reply twice is a spin only when nothing new was asked between:
/// after a tool result it is `repeated_turn`; after a new user prompt (two
/// questions with one answer, "ok" to "thanks" and "bye") it is not.
#[test]
fn a_new_prompt_between_two_equal_replies_is_not_a_spin() {
    let kinds = |doc: Value| -> Vec<Kind> {
        check(&read(&doc, Source::Provider(Format::Anthropic)).unwrap())
            .into_iter()
            .map(|f| f.kind)
            .collect()
    };
    let asked_again = serde_json::json!({"messages": [
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "You're welcome."},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "You're welcome."},
    ]});
    assert_eq!(kinds(asked_again), []);
    let call = serde_json::json!({"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}});
    let call2 = serde_json::json!({"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}});
    let spun = serde_json::json!({"messages": [
        {"role": "user", "content": "list it"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
        {"role": "assistant", "content": [call2]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "a"}]},
    ]});
    assert_eq!(kinds(spun), [Kind::RepeatedTurn]);
}

/// One exit rule for the whole CLI (issue 60, item 4): a warning alone (an
/// accepted shape that breaks loops) passes, as a linter's warnings do,
/// and fails under `--strict`; a refusal fails either way. A warning-only
/// log exited 1 while the README said 1 meant refused.
#[test]
fn a_warning_alone_passes_unless_strict_and_a_refusal_always_fails() {
    let warned = "tests/fixtures/transcripts/lenient_shapes/chat_null_tool_call_id.json";
    for (strict, code) in [(false, 0), (true, 1)] {
        let mut args = vec!["check", warned];
        if strict {
            args.push("--strict");
        }
        crate::common::loopdbg()
            .args(&args)
            .assert()
            .code(code)
            .stdout(predicates::str::contains("(warning)"))
            .stdout(predicates::str::contains(
                "(0 a provider would reject with a 400)",
            ));
    }
    for strict in [false, true] {
        let mut args = vec![
            "check",
            "tests/fixtures/transcripts/anthropic_parallel_one_missing.json",
        ];
        if strict {
            args.push("--strict");
        }
        crate::common::loopdbg().args(&args).assert().code(1);
    }
}

/// An agent's session that holds no conversation yet (Gemini CLI writes
/// its chat's first record before the first prompt) is nothing a provider
/// could refuse: exit 0, said as such, 1 under `--strict`; a file of no
/// known shape is still not a pass (issue 60, item 4: an empty Gemini chat
/// exited 1).
#[test]
fn an_agents_session_with_no_conversation_yet_passes() {
    let dir = tempfile::tempdir().unwrap();
    let chat = dir.path().join("session-2026-12-07T03-30-0a1b2c3d.jsonl");
    std::fs::write(
        &chat,
        "{\"sessionId\":\"0a1b2c3d-0000-4000-8000-000000000000\",\"projectHash\":\"68aca359\",\"startTime\":\"2026-12-07T03:30:00.000Z\",\"lastUpdated\":\"2026-12-07T03:30:00.000Z\",\"kind\":\"main\"}\n",
    )
    .unwrap();
    crate::common::loopdbg()
        .arg("check")
        .arg(&chat)
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "(gemini-cli): the session holds no conversation yet: nothing to send, nothing to check",
        ));
    crate::common::loopdbg()
        .args(["check", "--strict"])
        .arg(&chat)
        .assert()
        .code(1);
}

/// A count of messages is the body's (issue 60, item 3): a Chat body of 5
/// messages, its system prompt first, said "4 messages" while its finding
/// pointed at the body's `messages[2]`.
#[test]
fn a_chat_bodys_message_count_includes_its_system_message() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("chat.json");
    std::fs::write(
        &body,
        r#"{"model": "gpt-4o", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather and fx?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_w", "type": "function", "function": {"name": "w", "arguments": "{}"}},
                {"id": "call_f", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_w", "content": "18C"},
            {"role": "user", "content": "and?"}]}"#,
    )
    .unwrap();
    crate::common::loopdbg()
        .arg("check")
        .arg(&body)
        .assert()
        .code(1)
        .stdout(predicates::str::contains("(openai, 5 messages)"))
        .stdout(predicates::str::contains(
            "messages[2]  unanswered_call (400)  [call_f]",
        ));
}

/// Five `cache_control` blocks are Anthropic's 400 ("A maximum of 4 blocks
/// with cache_control may be provided. Found 5."), read from a document or
/// from a JSON line alike; a `null` one, and the words in a user's text,
/// are not blocks.
#[test]
fn more_than_four_cache_breakpoints_are_refused_however_the_body_is_read() {
    let pretty = fixture("anthropic_cache_control_five.json");
    let doc: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let said = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = loopdbg().args(["check"]).arg(&path).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for (name, text) in [
        ("pretty.json", pretty.clone()),
        ("line.json", doc.to_string()),
        ("lines.jsonl", format!("{doc}\n{doc}\n")),
    ] {
        let out = said(name, &text);
        assert!(
            out.contains("cache_control_limit (400)")
                && out
                    .contains("A maximum of 4 blocks with cache_control may be provided. Found 5."),
            "{name}: {out}"
        );
    }
    // One breakpoint `null`, one only named in the user's words: four.
    let mut four = doc.clone();
    four["tools"][0]["cache_control"] = serde_json::Value::Null;
    four["messages"][0]["content"][0]["text"] =
        serde_json::Value::from("why does \"cache_control\": {} fail?");
    for (name, text) in [
        ("four.json", four.to_string()),
        ("four.jsonl", format!("{four}\n")),
    ] {
        assert!(!said(name, &text).contains("cache_control_limit"), "{name}");
    }
}

/// Blank text and empty messages, in each provider's words, at the place
/// each names; Anthropic lets the final assistant message (a prefill) be
/// empty, and a message of blocks loopdbg passes over is not empty.
#[test]
fn blank_text_and_empty_messages_are_refused_in_the_providers_words() {
    let said = |name: &str| -> Vec<(String, String, String)> {
        findings(name)
            .into_iter()
            .map(|f| (f.kind.as_str().to_string(), f.path, f.message))
            .collect()
    };
    let t = |k: &str, p: &str, m: &str| (k.to_string(), p.to_string(), m.to_string());
    assert_eq!(
        said("anthropic_blank_text.json"),
        [
            t(
                "blank_text",
                "messages[1].content[0]",
                "messages: text content blocks must be non-empty"
            ),
            t(
                "blank_text",
                "messages[2].content[1]",
                "messages: text content blocks must contain non-whitespace text"
            ),
            t(
                "empty_content",
                "messages[3]",
                "messages.3: all messages must have non-empty content except for the optional final assistant message"
            ),
        ]
    );
    assert_eq!(
        said("bedrock_blank_text.json"),
        [
            t(
                "blank_text",
                "messages[1].content[0]",
                "The text field in the ContentBlock object at messages.1.content.0 is blank. Add text to the text field, and try again."
            ),
            t(
                "empty_content",
                "messages[3]",
                "The content field in the Message object at messages.3 is empty. Add a ContentBlock object to the content field and try again."
            ),
        ]
    );
    let body =
        |messages: Value| serde_json::json!({"model": "m", "max_tokens": 9, "messages": messages});
    let prefill = body(serde_json::json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": []}
    ]));
    let image_only = body(serde_json::json!([
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}
    ]));
    for doc in [prefill, image_only] {
        let conv = read(&doc, Source::Provider(Format::Anthropic)).unwrap();
        assert_eq!(check(&conv), vec![], "{doc}");
    }
}

/// `repair` (and so `proxy --repair`) drops blank text blocks and gives a
/// message left with nothing a placeholder, keeping the roles alternating;
/// the repaired body is clean.
#[test]
fn blank_text_and_empty_messages_are_repaired() {
    for (name, format) in [
        ("anthropic_blank_text.json", Format::Anthropic),
        ("bedrock_blank_text.json", Format::Bedrock),
    ] {
        for how in [Repair::Synthesize, Repair::Strip] {
            let mut doc: Value = serde_json::from_str(&fixture(name)).unwrap();
            let messages = doc["messages"].as_array().unwrap().len();
            let changed = repair(&mut doc, format, how);
            let conv = read(&doc, Source::Provider(format)).unwrap();
            let refused: Vec<Finding> = check(&conv)
                .into_iter()
                .filter(|f| f.rejected_by_provider())
                .collect();
            assert_eq!(refused, vec![], "{name} {how:?}: {doc:#}");
            if (format, how) == (Format::Anthropic, Repair::Strip) {
                // `strip` drops a message it finds empty, as it drops one
                // it empties; Anthropic merges the two user messages.
                assert_eq!(doc["messages"].as_array().unwrap().len(), messages - 1);
                continue;
            }
            assert_eq!(doc["messages"].as_array().unwrap().len(), messages);
            assert_eq!(changed, findings(name).len(), "{name} {how:?}");
            assert_eq!(
                conv.messages[3].content,
                [loopdbg_engine::message::Block::Text {
                    text: loopdbg_judge::fix::EMPTY_PLACEHOLDER.into()
                }]
            );
        }
    }
}
