//! The shapes real files have, as providers and agents write them today:
//! Claude Code 2.x logs (a uuid graph with rewinds, compactions, parallel
//! calls and sub-agent logs), Anthropic server and MCP tools, and requests
//! providers accept although a naive pairing check would cry 400. Each
//! fixture is written after public API recordings and log parsers'
//! fixtures; each test pins the verdict, the path, the ids and the wording.

use crate::common::{body, claude_code_log, fixture};
use loopdbg_judge::check::Kind;
use loopdbg_read::Agent;

use loopdbg_judge::check::{Finding, check};
use loopdbg_read::{detect, read};
use serde_json::Value;

fn request(name: &str) -> Vec<Finding> {
    let doc: Value = serde_json::from_str(&fixture(name)).unwrap();
    check(&read(&doc, detect(&doc).unwrap()).unwrap())
}

fn kinds(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.kind.as_str()).collect()
}

fn rejected(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.rejected_by_provider())
        .collect()
}

// ---- Claude Code 2.x -------------------------------------------------------

#[test]
fn parallel_calls_whose_results_point_at_their_own_blocks_are_one_turn() {
    let convs = claude_code_log("claude_code_v2/parallel.jsonl");
    assert_eq!(convs.len(), 1);
    let c = &convs[0];
    // user, assistant (text + two calls, one message.id), user (two results), answer.
    let roles: Vec<String> = c.messages.iter().map(|m| format!("{:?}", m.role)).collect();
    assert_eq!(roles, ["User", "Assistant", "User", "Assistant"]);
    assert_eq!(c.messages[1].content.len(), 3);
    assert_eq!(c.messages[2].content.len(), 2);
    assert_eq!(check(c), vec![], "a log Claude Code sent without a 400");
}

#[test]
fn a_rewound_branch_is_a_notice_not_a_400() {
    let convs = claude_code_log("claude_code_v2/rewind.jsonl");
    assert_eq!(convs.len(), 1);
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["off_branch"], "{f:#?}");
    assert!(rejected(&f).is_empty());
    assert_eq!(
        (f[0].line, f[0].uuid.as_deref(), f[0].ids.clone()),
        (Some(6), Some("u02"), vec!["toolu_03Rm".to_string()])
    );
    assert!(f[0].message.starts_with(
        "2 message event(s) on lines 6–7 branch off line 5 (uuid a02) and are not part of the live conversation"
    ));
    // The live conversation is the edited one.
    let text: Vec<String> = convs[0]
        .messages
        .iter()
        .map(|m| format!("{:?}", m.content.first()))
        .collect();
    assert!(text.iter().any(|t| t.contains("Show it instead.")));
    assert!(!text.iter().any(|t| t.contains("Delete it.")));
}

/// A real Claude Code 2.1.332 log: killed mid-tool, then `/compact`. Its
/// boundary keeps the last message ("No response requested.") as
/// `compactMetadata.preservedSegment`, and the `/compact` command's own
/// events hang from that message, not from the summary. Claude Code
/// resumes it as summary, kept message, what followed (tests/agents.rs
/// saw the request); so is it read, and the history before the summary
/// is the conversation the compaction ended.
#[test]
fn a_compaction_that_kept_a_message_resumes_from_its_summary() {
    let convs = claude_code_log("claude_code_v2/compact_kept_segment.jsonl");
    assert_eq!(convs.len(), 2, "before and after the compaction");
    let text = |m: &loopdbg_engine::message::Message| format!("{:?}", m.content.first());
    let after = &convs[1];
    assert!(text(&after.messages[0]).contains("This session is being continued"));
    assert!(text(&after.messages[1]).contains("No response requested."));
    assert_eq!(after.compaction.as_ref().map(|c| c.line), Some(37));
    assert_eq!(convs[0].ended_by_compaction, Some(37));
    let before = &convs[0];
    assert!(
        !before
            .messages
            .iter()
            .any(|m| text(m).contains("No response requested.")),
        "the kept message is sent after the summary only"
    );
    for c in &convs {
        assert_eq!(check(c), vec![], "{:?}", c.label);
    }
}

/// A kept message that names itself as its parent (no agent writes
/// that; the doctor's fuzz target did): read, not walked forever.
#[test]
fn a_kept_message_that_is_its_own_parent_is_read_in_bounded_time() {
    let mut log = loopdbg_read::ClaudeCodeLog::default();
    let events = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"user","uuid":"r1","parentUuid":"r1","sessionId":"s","message":{"role":"user","content":"again"}}"#,
        r#"{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"r1","sessionId":"s","compactMetadata":{"preservedSegment":{"headUuid":"r1","anchorUuid":"sum","tailUuid":"r1"}}}"#,
        r#"{"type":"user","uuid":"sum","parentUuid":"b1","sessionId":"s","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued"}}"#,
    ];
    for (i, e) in events.iter().enumerate() {
        log.push_owned(i + 1, serde_json::from_str(e).unwrap())
            .unwrap();
    }
    let convs = log.finish();
    assert!(!convs.is_empty());
}

#[test]
fn a_rewind_to_the_first_prompt_leaves_the_old_tree_as_a_branch() {
    let convs = claude_code_log("claude_code_v2/rewind_new_start.jsonl");
    assert_eq!(convs.len(), 1);
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["off_branch"], "{f:#?}");
    assert_eq!(
        f[0].ids,
        ["toolu_02Ls".to_string(), "toolu_02Cat".to_string()]
    );
    assert!(f[0].message.contains("start over from a new first prompt"));
}

#[test]
fn compact_boundary_starts_a_new_conversation() {
    let convs = claude_code_log("claude_code_v2/compact.jsonl");
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[1].label.as_deref(), Some("after compaction 1"));
    assert_eq!(check(&convs[0]), vec![]);
    assert_eq!(check(&convs[1]), vec![]);
    assert_eq!(
        convs[1].messages[0].role,
        loopdbg_engine::message::Role::User
    );
}

#[test]
fn a_sub_agent_log_is_checked_as_a_named_conversation() {
    let convs = claude_code_log("claude_code_v2/subagents/agent-a7f3c2e1.jsonl");
    assert_eq!(convs.len(), 1);
    assert_eq!(convs[0].label.as_deref(), Some("sub-agent a7f3c2e1"));
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unanswered_call"]);
    assert_eq!(
        (f[0].line, f[0].uuid.as_deref(), f[0].ids.clone()),
        (Some(4), Some("s04"), vec!["toolu_05Read".to_string()])
    );
}

// ---- Anthropic server and MCP tools -----------------------------------------

#[test]
fn server_tool_results_in_the_same_turn_need_no_client_result() {
    let f = request("anthropic_server_tools.json");
    assert_eq!(f, vec![], "accepted with 200: {f:#?}");
}

#[test]
fn a_paused_turn_ending_the_request_is_accepted() {
    assert_eq!(request("anthropic_pause_turn.json"), vec![]);
}

#[test]
fn a_resumed_pause_turn_pairs_across_the_two_assistant_messages() {
    // Anthropic merges the two consecutive assistant messages into one turn.
    let f = request("anthropic_pause_turn_resumed.json");
    assert_eq!(kinds(&f), ["consecutive_same_role"]);
    assert!(rejected(&f).is_empty());
    assert_eq!(f[0].path, "messages[2]");
}

#[test]
fn a_server_result_without_its_call_is_the_400_anthropic_sends() {
    let f = request("anthropic_server_result_orphan.json");
    assert_eq!(kinds(&f), ["unexpected_result"]);
    assert!(f[0].rejected_by_provider());
    assert_eq!(f[0].path, "messages[3].content[0]");
    assert_eq!(
        f[0].message,
        "unexpected `tool_use_id` found in `advisor_tool_result` blocks: srvtoolu_01DcAD2oDB6fdQXk4XdWShsW. Each `advisor_tool_result` block must have a corresponding `server_tool_use` block before it."
    );
}

#[test]
fn an_unanswered_mcp_call_has_its_own_wording() {
    let f = request("anthropic_mcp_unanswered.json");
    assert_eq!(kinds(&f), ["unanswered_server_call"], "{f:#?}");
    assert_eq!(
        (
            f[0].path.as_str(),
            f[0].ids.clone(),
            f[0].rejected_by_provider()
        ),
        (
            "messages[1].content[0]",
            vec!["mcptoolu_01Roll".to_string()],
            true
        )
    );
    // The history goes on past the call: Anthropic's 400 (see
    // tests/fixtures/transcripts/unpaired_server_calls/SOURCE.md).
    assert!(
        f[0].message.starts_with(
            "`mcp_tool_use` with id mcptoolu_01Roll was found without a corresponding `mcp_tool_result` block"
        ),
        "{}",
        f[0].message
    );
}

#[test]
fn consecutive_assistant_messages_are_merged_not_rejected() {
    let f = request("anthropic_consecutive_assistant.json");
    assert_eq!(
        kinds(&f),
        ["consecutive_same_role", "consecutive_same_role"],
        "{f:#?}"
    );
    assert!(rejected(&f).is_empty());
    assert_eq!(f[0].path, "messages[2]");
    assert!(
        f[0].message
            .starts_with("2 consecutive `assistant` messages from messages[1]")
    );
}

// ---- OpenAI Responses as sent -------------------------------------------------

#[test]
fn responses_input_as_a_plain_string_is_one_user_message() {
    let doc: Value = serde_json::from_str(&fixture("responses_string_input.json")).unwrap();
    let conv = read(&doc, detect(&doc).unwrap()).unwrap();
    assert_eq!(conv.messages.len(), 1);
    assert_eq!(check(&conv), vec![]);
}

#[test]
fn a_continued_response_answers_calls_it_does_not_contain() {
    let f = request("responses_continuation.json");
    assert_eq!(kinds(&f), ["unverifiable_result"]);
    assert!(rejected(&f).is_empty());
    assert_eq!(
        (f[0].path.as_str(), f[0].ids.clone()),
        ("input[0]", vec!["call_Vv2rWn8yHpq0Ztd3".to_string()])
    );
    assert!(
        f[0].message
            .contains("previous_response_id resp_68af2c4b1a2c8190a1b2c3d4e5f60718")
    );
}

#[test]
fn strip_never_empties_a_continuation() {
    use loopdbg_formats::provider::Format;
    use loopdbg_judge::fix::{Repair, repair};
    let mut doc: Value = serde_json::from_str(&fixture("responses_continuation.json")).unwrap();
    assert_eq!(repair(&mut doc, Format::Responses, Repair::Strip), 0);
    assert_eq!(doc["input"].as_array().unwrap().len(), 1);
}

#[test]
fn hosted_and_custom_items_are_read_and_paired() {
    let doc: Value = serde_json::from_str(&fixture("responses_items.json")).unwrap();
    let conv = read(&doc, detect(&doc).unwrap()).unwrap();
    // custom, function and local shell calls are the client's to answer.
    let calls: Vec<&str> = conv
        .messages
        .iter()
        .flat_map(|m| loopdbg_read::tool_uses(m).map(|(_, id, _)| id))
        .collect();
    assert_eq!(calls, ["call_Custom1", "call_Weather1", "call_Shell1"]);
    // get_weather is deferred and loaded by tool search: not unknown.
    assert_eq!(check(&conv), vec![]);
}

#[test]
fn an_unanswered_custom_tool_call_gets_its_own_wording() {
    let f = request("responses_custom_unanswered.json");
    assert_eq!(kinds(&f), ["unanswered_call"]);
    assert!(f[0].rejected_by_provider());
    assert_eq!(f[0].path, "input[1]");
    assert_eq!(
        f[0].message,
        "No tool output found for custom tool call call_Custom9."
    );
}

// ---- Gemini generateContent -----------------------------------------------------

#[test]
fn gemini_bodies_are_detected_and_clean_ones_pass() {
    use loopdbg_formats::provider::Format;
    use loopdbg_read::Source;
    for name in ["gemini_clean.json", "gemini_no_ids.json"] {
        let doc: Value = serde_json::from_str(&fixture(name)).unwrap();
        assert_eq!(
            detect(&doc),
            Some(Source::Provider(Format::Gemini)),
            "{name}"
        );
        let conv = read(&doc, detect(&doc).unwrap()).unwrap();
        assert_eq!(check(&conv), vec![], "{name}");
    }
}

#[test]
fn gemini_counts_responses_against_calls_in_its_own_words() {
    let f = request("gemini_missing_response.json");
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert!(f[0].rejected_by_provider());
    assert_eq!(f[0].path, "contents[2]");
    assert_eq!(f[0].ids, ["get_weather#1.1"]);
    assert!(f[0].message.starts_with(
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
    ));
}

#[test]
fn gemini_turn_order_rules_in_its_own_words() {
    let f = request("gemini_turn_order.json");
    assert_eq!(
        kinds(&f),
        ["call_turn_out_of_place", "unexpected_result"],
        "{f:#?}"
    );
    assert_eq!(f[0].path, "contents[2]");
    assert_eq!(
        f[0].message,
        "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
    );
    assert_eq!(f[1].path, "contents[5]");
    assert_eq!(
        f[1].message,
        "Please ensure that function response turn comes immediately after a function call turn."
    );
    assert!(f.iter().all(|x| x.rejected_by_provider()));
}

#[test]
fn gemini_3_wants_the_thought_signature_of_the_current_turn() {
    let f = request("gemini3_unsigned.json");
    assert_eq!(kinds(&f), ["missing_thought_signature"], "{f:#?}");
    assert!(f[0].rejected_by_provider());
    assert_eq!(f[0].path, "contents[1].parts[0]");
    assert!(f[0].message.starts_with(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly"
    ));
    assert!(
        f[0].message
            .contains("`default_api:check_flight` , position 1.")
    );
    // The same body for a model that is not Gemini 3 is fine.
    let mut doc: Value = serde_json::from_str(&fixture("gemini3_unsigned.json")).unwrap();
    doc["model"] = "gemini-2.5-flash".into();
    assert_eq!(check(&read(&doc, detect(&doc).unwrap()).unwrap()), vec![]);
}

#[test]
fn gemini_repairs_pair_every_call() {
    use loopdbg_formats::provider::Format;
    use loopdbg_judge::fix::{Repair, repair};
    for how in [Repair::Synthesize, Repair::Strip] {
        let mut doc: Value =
            serde_json::from_str(&fixture("gemini_missing_response.json")).unwrap();
        assert_eq!(repair(&mut doc, Format::Gemini, how), 1, "{how:?}");
        let left = check(&read(&doc, detect(&doc).unwrap()).unwrap());
        assert_eq!(left, vec![], "{how:?}: {doc:#}");
    }
}

/// A Claude Code log read the way `check` reads it (in outline) and the way
/// replay reads it (whole), through the parallel line reader.
fn log_read(text: &str, detail: loopdbg_read::Detail) -> Vec<Vec<Finding>> {
    use loopdbg_read::{Log, Source};
    let mut log = Log::new(Source::Agent(Agent::ClaudeCode)).unwrap();
    log.keep(detail);
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    assert!(log.push_lines(&lines).is_empty(), "every line readable");
    log.finish().unwrap().iter().map(check).collect()
}

#[test]
fn check_reads_logs_in_outline_with_the_same_findings() {
    use loopdbg_read::Detail;
    let names = [
        "claude_code_compacted.jsonl",
        "claude_code_interrupted.jsonl",
        "claude_code_v2/compact.jsonl",
        "claude_code_v2/parallel.jsonl",
        "claude_code_v2/rewind.jsonl",
        "claude_code_v2/rewind_new_start.jsonl",
        "claude_code_v2/subagents/agent-a7f3c2e1.jsonl",
        "claude_code_v2/refused_400.jsonl",
        "claude_code_v2/answered_after_interrupt.jsonl",
        "claude_code_v2/api_errors.jsonl",
        "claude_code_v2/cut_at_head.jsonl",
        "claude_code_v2/synthetic_reply.jsonl",
    ];
    for name in names {
        let text = fixture(name);
        let whole = log_read(&text, Detail::Full);
        assert_eq!(log_read(&text, Detail::Shape), whole, "{name}");
        // The typed reader and the lenient one agree.
        let lenient: Vec<Vec<Finding>> = claude_code_log(name).iter().map(check).collect();
        assert_eq!(lenient, whole, "{name}");
    }
}

#[test]
fn a_repeated_turn_is_found_in_outline_as_in_full() {
    use loopdbg_read::Detail;
    let event = |uuid: &str, parent: &str, kind: &str, message: &str| {
        format!(
            r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"sessionId":"s","timestamp":"2026-11-02T00:00:0{}.000Z","message":{message}}}"#,
            uuid.len() % 10
        )
    };
    let call = |id: &str, input: &str| {
        format!(
            r#"{{"role":"assistant","id":"m{id}","content":[{{"type":"text","text":"Checking again."}},{{"type":"tool_use","id":"{id}","name":"Read","input":{input}}}],"stop_reason":"tool_use"}}"#
        )
    };
    let result = |id: &str| {
        format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"same file"}}]}}"#
        )
    };
    // The second turn's arguments differ only in key order: a repeat. The
    // third's differ in array order: not one, and the fourth repeats it.
    let inputs = [
        r#"{"path":"a","lines":[1,2]}"#,
        r#"{"lines":[1,2],"path":"a"}"#,
        r#"{"lines":[2,1],"path":"a"}"#,
        r#"{"lines":[2,1],"path":"a"}"#,
    ];
    let mut lines = vec![event(
        "u1",
        "null",
        "user",
        r#"{"role":"user","content":"Read it."}"#,
    )];
    let mut parent = "u1".to_string();
    for (k, input) in inputs.iter().enumerate() {
        let (a, r, t) = (
            format!("a{}", k + 1),
            format!("r{}", k + 1),
            format!("t{}", k + 1),
        );
        lines.push(event(
            &a,
            &format!("\"{parent}\""),
            "assistant",
            &call(&t, input),
        ));
        lines.push(event(&r, &format!("\"{a}\""), "user", &result(&t)));
        parent = r;
    }
    let lines = lines.join("\n");
    let whole = log_read(&lines, Detail::Full);
    let outline = log_read(&lines, Detail::Shape);
    assert_eq!(outline, whole);
    let repeats: Vec<&Finding> = whole[0]
        .iter()
        .filter(|f| f.kind == Kind::RepeatedTurn)
        .collect();
    let ids: Vec<&[String]> = repeats.iter().map(|f| &f.ids[..]).collect();
    assert_eq!(ids, [["t2"], ["t4"]], "{whole:?}");
}

#[test]
fn outline_and_full_agree_on_edge_json_and_on_lines_read_leniently() {
    use loopdbg_read::Detail;
    // `"timestamp": 0` is not a string: such a line is read the lenient
    // way, through a Value. Each pair of turns is equal as Values (a key
    // given twice keeps its last value; -0 is read as the float -0.0,
    // which equals 0.0; absent input is null).
    let turn = |uuid: &str, parent: &str, id: &str, input: &str, lenient: bool| {
        let stamp = if lenient {
            "0"
        } else {
            r#""2026-11-02T00:00:01.000Z""#
        };
        let input = if input.is_empty() {
            String::new()
        } else {
            format!(r#","input":{input}"#)
        };
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}","timestamp":{stamp},"message":{{"role":"assistant","id":"m{id}","content":[{{"type":"tool_use","id":"{id}","name":"Read"{input}}}],"stop_reason":"tool_use"}}}}
{{"type":"user","uuid":"r{uuid}","parentUuid":"{uuid}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"x"}}]}}}}"#
        )
    };
    let cases = [
        (r#"{"a":1,"a":2}"#, r#"{"a":2}"#),
        (r#"{"n":-0}"#, r#"{"n":0.0}"#),
        ("", "null"),
    ];
    for (k, (first, second)) in cases.iter().enumerate() {
        for (lenient_first, lenient_second) in [(false, false), (false, true), (true, false)] {
            let text = [
                r#"{"type":"user","uuid":"u","parentUuid":null,"message":{"role":"user","content":"go"}}"#.to_string(),
                turn("a1", "u", "t1", first, lenient_first),
                turn("a2", "ra1", "t2", second, lenient_second),
            ]
            .join("\n");
            let whole = log_read(&text, Detail::Full);
            assert_eq!(log_read(&text, Detail::Shape), whole, "case {k}: {text}");
            assert!(
                whole[0].iter().any(|f| f.kind == Kind::RepeatedTurn),
                "case {k}: equal turns are a repeat: {whole:?}"
            );
        }
    }
}

// ---- What the log itself says became of a request ------------------------

fn evidence(f: &Finding) -> Option<(&str, Option<usize>)> {
    f.evidence.as_ref().map(|e| (e.outcome.as_str(), e.line))
}

#[test]
fn a_400_the_log_recorded_is_confirmed_and_the_error_is_no_message() {
    // Claude Code 2.0 after an interrupt: the next two prompts got the
    // provider's 400, written as `isApiErrorMessage` events.
    let convs = claude_code_log("claude_code_v2/refused_400.jsonl");
    assert_eq!(convs.len(), 1);
    let c = &convs[0];
    // The errors are not history: user, assistant, user, assistant, user, user.
    assert_eq!(c.messages.len(), 6);
    assert_eq!(
        c.refusals
            .iter()
            .map(|r| (r.at, r.status, r.source.line))
            .collect::<Vec<_>>(),
        [(5, Some(400), Some(8)), (6, Some(400), Some(10))]
    );
    let f = check(c);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert_eq!(f[0].severity.as_str(), "400");
    assert_eq!(f[0].ids, ["toolu_01Bump"]);
    assert_eq!((f[0].line, f[0].uuid.as_deref()), (Some(6), Some("r5")));
    assert_eq!(evidence(&f[0]), Some(("refused", Some(8))));
    assert!(
        f[0].message.contains(
            "The log confirms it: the provider refused the next 2 requests (lines 8, 10); the first answer: API Error: 400"
        ),
        "{}",
        f[0].message
    );
}

#[test]
fn a_call_left_open_but_answered_after_is_a_warning_not_a_400() {
    // Claude Code 2.1: Esc during a Bash call, a new prompt, and the model
    // answered it: the request went through, so it was repaired on the way.
    let f = check(&claude_code_log("claude_code_v2/answered_after_interrupt.jsonl")[0]);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert!(rejected(&f).is_empty());
    assert_eq!(f[0].severity.as_str(), "warning");
    assert_eq!(evidence(&f[0]), Some(("answered", Some(5))));
    assert!(f[0].message.starts_with(
        "as written, this history would be refused (`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01Migrate."
    ));
    assert!(
        f[0].message
            .contains("the log shows the next request was answered (line 5)")
    );
}

#[test]
fn calls_still_in_flight_at_the_end_of_a_log_are_a_note() {
    // The sub-agent's last Read has no result yet: no request carried it.
    let f = check(&claude_code_log("claude_code_v2/subagents/agent-a7f3c2e1.jsonl")[0]);
    assert_eq!(kinds(&f), ["unanswered_call"]);
    assert_eq!(f[0].severity.as_str(), "note");
    assert_eq!(evidence(&f[0]), Some(("in_flight", None)));
    assert!(f[0].message.starts_with(
        "the log of this conversation ends while these calls are in flight: toolu_05Read."
    ));
    // A request body that ends the same way is a request: a 400 still.
    let f = request("anthropic_parallel_one_missing.json");
    assert_eq!(rejected(&f).len(), 1);
}

#[test]
fn provider_errors_in_a_log_are_reported_by_what_they_mean() {
    let f = check(&claude_code_log("claude_code_v2/api_errors.jsonl")[0]);
    assert_eq!(kinds(&f), ["refused_request", "refused_request"], "{f:#?}");
    // Overloaded: the request was never judged; a note.
    assert_eq!((f[0].severity.as_str(), f[0].line), ("note", Some(2)));
    assert!(f[0].message.contains("(529): API Error: 529 Overloaded."));
    // Too long: a real 400, though nothing pairs wrong.
    assert_eq!((f[1].severity.as_str(), f[1].line), ("400", Some(6)));
    assert!(f[1].message.contains("prompt is too long"));
}

#[test]
fn codex_repairs_its_history_before_every_request() {
    // Codex fills in `aborted` for a call without output and drops outputs
    // without a call (codex-rs `normalize_history`): never a 400.
    let convs = {
        let text = fixture("codex/rollout-2026-11-03T08-20-00-compacted.jsonl");
        let mut log = loopdbg_read::Log::new(loopdbg_read::Source::Agent(Agent::Codex)).unwrap();
        let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
        assert!(log.push_lines(&lines).is_empty());
        log.finish().unwrap()
    };
    let all: Vec<Finding> = convs.iter().flat_map(check).collect();
    assert!(rejected(&all).is_empty(), "{all:#?}");
    let orphan = all
        .iter()
        .find(|f| f.kind == Kind::UnexpectedResult)
        .unwrap();
    // Dropped, the model loses nothing: a note.
    assert_eq!(orphan.severity.as_str(), "note");
    assert_eq!(evidence(orphan).map(|e| e.0), Some("repaired"));
    assert!(
        orphan
            .message
            .contains("Codex drops it before every request (`remove_orphan_outputs`)"),
        "{orphan:#?}"
    );
}

// ---- OpenAI Chat: custom tools and the older functions API -----------------

#[test]
fn chat_custom_tool_calls_pair_by_id_like_function_calls() {
    let f = request("openai_custom_tool.json");
    // The custom call is answered; the function call next to it is not.
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert_eq!(f[0].ids, ["call_Test1"]);
    assert_eq!(
        (f[0].severity.as_str(), f[0].path.as_str()),
        ("400", "messages[1]")
    );
    let conv = body("openai_custom_tool.json");
    assert!(
        conv.tools.iter().any(|t| t.name == "apply_patch"),
        "a custom tool is a declared tool"
    );
}

#[test]
fn legacy_function_calls_pair_by_name_and_an_open_one_is_a_warning() {
    let conv = body("openai_legacy_functions.json");
    assert_eq!(conv.source.as_str(), "openai");
    // The answered call and its `function` message pair up.
    let f = check(&conv);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert!(rejected(&f).is_empty());
    assert_eq!(f[0].ids, ["get_time@messages[4]"]);
    assert!(f[0].message.starts_with(
        "a `function_call` (get_time@messages[4]) is not followed by the `function` message"
    ));
}

#[test]
fn a_server_call_waiting_on_client_tools_gets_its_result_turns_later() {
    // Programmatic tool calling: code_execution calls query_sales twice
    // through client tool_use blocks (`caller.tool_id`); its own result
    // comes in the assistant turn after the last tool_result.
    let f = request("anthropic_programmatic_tools.json");
    assert_eq!(f, vec![], "accepted as sent");
    // Without its call the same result block is still the 400.
    let mut doc: Value =
        serde_json::from_str(&fixture("anthropic_programmatic_tools.json")).unwrap();
    doc["messages"][1]["content"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let f = check(&read(&doc, detect(&doc).unwrap()).unwrap());
    assert_eq!(kinds(&f), ["unexpected_result"], "{f:#?}");
    assert_eq!(f[0].ids, ["srvtoolu_01Code"]);
    assert!(f[0].rejected_by_provider());
}

#[test]
fn unnamed_sub_agents_written_into_the_main_log_are_each_checked() {
    // Claude Code 1.0 wrote every Task's sidechain into the main file,
    // each from its own root and without an agentId: two sub-agents, not a
    // rewind of one.
    let convs = claude_code_log("claude_code_inline_subagents.jsonl");
    let labels: Vec<Option<&str>> = convs.iter().map(|c| c.label.as_deref()).collect();
    assert_eq!(
        labels,
        [
            None,
            Some("sub-agent from line 3"),
            Some("sub-agent from line 4")
        ]
    );
    assert_eq!(convs[2].messages.len(), 4, "b's Grep and its result");
    for c in &convs {
        assert_eq!(check(c), vec![], "{:?}", c.label);
    }
}

#[test]
fn a_branch_is_reported_with_the_conversation_it_forks_from() {
    // A rewind before a compaction belongs to the conversation before it.
    let convs = claude_code_log("claude_code_v2/rewind_then_compact.jsonl");
    assert_eq!(convs.len(), 2);
    let notes: Vec<Vec<&str>> = convs
        .iter()
        .map(|c| check(c).into_iter().map(|f| f.kind.as_str()).collect())
        .collect();
    assert_eq!(notes, [vec!["off_branch"], vec![]]);
    let f = check(&convs[0]);
    assert_eq!(
        (f[0].line, f[0].ids.clone()),
        (Some(3), vec!["toolu_01Del".to_string()])
    );
    assert!(f[0].message.contains("branch off line 2 (uuid w2)"));
}

#[test]
fn a_gemini_cli_error_record_confirms_the_400() {
    // One of two reads never finished; the next request got Gemini's own
    // 400, which the CLI wrote as an `error` record.
    let text = fixture("gemini_cli/session-2026-11-04T10-00-2b7c4e9a.jsonl");
    let mut log = loopdbg_read::Log::new(loopdbg_read::Source::Agent(Agent::GeminiCli)).unwrap();
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    assert!(log.push_lines(&lines).is_empty());
    let convs = log.finish().unwrap();
    assert_eq!(convs[0].refusals.len(), 1);
    assert_eq!(convs[0].refusals[0].status, Some(400));
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert_eq!(f[0].ids, ["read_file-1762250403000-b2"]);
    assert_eq!(evidence(&f[0]), Some(("refused", Some(5))));
    assert!(f[0].message.starts_with(
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
    ));
}

#[test]
fn a_recorded_2xx_outranks_a_predicted_400() {
    // How the weighing works, on a cassette in VCR's JSON form: whatever
    // loopdbg's rules predict, the provider's recorded answer is the fact.
    let cassette = serde_json::json!({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages",
            "body": serde_json::json!({"model": "m", "max_tokens": 9, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]},
                {"role": "user", "content": "go on"}]}).to_string()},
        "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": "{}"}}}]});
    let convs = loopdbg_read::recording::read_recording(&cassette)
        .unwrap()
        .unwrap();
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unanswered_call"]);
    assert!(rejected(&f).is_empty());
    assert_eq!(evidence(&f[0]), Some(("answered", None)));
    assert!(
        f[0].message
            .ends_with("but the recording shows it answered 200: it accepts this shape")
    );
    assert_eq!(f[0].path, "interactions[0].request.messages[1]");
}

#[test]
fn a_log_cut_at_its_head_cannot_check_what_it_does_not_hold() {
    // The first event's parent is not in the file: the result it carries
    // answers a call made before, which was sent but is not here.
    let convs = claude_code_log("claude_code_v2/cut_at_head.jsonl");
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unverifiable_result"], "{f:#?}");
    assert!(rejected(&f).is_empty());
    assert_eq!(
        (f[0].line, f[0].ids.clone()),
        (Some(1), vec!["toolu_01Ls".to_string()])
    );
    assert!(
        f[0].message
            .contains("(its parentUuid is not in this file)")
    );
}

#[test]
fn a_reply_claude_code_wrote_itself_is_no_answer_of_the_provider() {
    // After Esc, Claude Code writes "No response requested." as the
    // `<synthetic>` model: no request was answered, so the open call
    // stays the 400 the next request would get.
    let convs = claude_code_log("claude_code_v2/synthetic_reply.jsonl");
    assert_eq!(convs[0].synthetic, [3]);
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert_eq!(f[0].severity.as_str(), "400");
    assert_eq!(f[0].evidence, None);
}

#[test]
fn a_compressed_recorded_refusal_confirms_the_status_without_words() {
    // VCR keeps a gzipped body as `!!binary`: the status is known, its
    // words are not, and base64 is never shown as the provider's.
    let cassette = serde_json::json!({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
            "body": serde_json::json!({"model": "gpt-4o", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "user", "content": "go on"}]}).to_string()},
        "response": {"status": {"code": 400, "message": "Bad Request"},
            "headers": {"Content-Encoding": ["gzip"]},
            "body": {"string": "H4sIAAAAAAAAA6tWSkksSVSyUlAqyUhVqOZSUADxSgEAL7VA3xoAAAA=\n"}}}]});
    let convs = loopdbg_read::recording::read_recording(&cassette)
        .unwrap()
        .unwrap();
    let f = check(&convs[0]);
    assert_eq!(kinds(&f), ["unanswered_call"], "{f:#?}");
    assert_eq!(f[0].severity.as_str(), "400");
    assert_eq!(evidence(&f[0]), Some(("refused", None)));
    assert!(f[0].message.ends_with(
        "The recording holds a 400 for this request (its body is compressed, so its words are not read)."
    ));
    assert!(!f[0].message.contains("H4sI"));
}

/// An event type a newer Claude Code writes and loopdbg does not know is
/// said once, as a note, whether or not it has a uuid; the conversation
/// reads as without it. Types it knows (bookkeeping Claude Code 2.1.332
/// writes) are not mentioned.
#[test]
fn an_unknown_event_type_is_noted_once_and_read_around() {
    use loopdbg_read::finding::Kind;
    let text = fixture("claude_code_v2/parallel.jsonl");
    let plain = log_read(&text, loopdbg_read::Detail::Full);
    let extra = [
        r#"{"type":"api-request","sessionId":"s","id":"r1","keep":0,"tail":[]}"#,
        r#"{"type":"cost-state","sessionId":"s","totalCostUSD":0.1}"#,
        r#"{"type":"holo-sync","sessionId":"s","state":1}"#,
        r#"{"type":"holo-sync","sessionId":"s","state":2}"#,
        r#"{"type":"holo-sync","uuid":"u-holo","parentUuid":null,"sessionId":"s"}"#,
    ];
    let with = format!("{text}{}\n", extra.join("\n"));
    let read = log_read(&with, loopdbg_read::Detail::Full);
    let notes: Vec<&Finding> = read
        .iter()
        .flatten()
        .filter(|f| f.kind == Kind::UnknownEvent)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].ids, ["holo-sync"]);
    assert!(notes[0].is_note());
    let others: Vec<Vec<Finding>> = read
        .into_iter()
        .map(|fs| {
            fs.into_iter()
                .filter(|f| f.kind != Kind::UnknownEvent)
                .collect()
        })
        .collect();
    assert_eq!(others, plain);
}
