//! OpenTelemetry traces as `check`, replay and `record` read them. The
//! fixtures in `tests/fixtures/otlp/` are spans written by real
//! instrumentation libraries over the real SDKs against the fake provider
//! (`tests/clients/otel_loop.py`; SOURCE.md there says which versions):
//! each library's `all` trace answered both parallel calls, its `first`
//! trace only the first, so the fake refused the second request. Each is
//! there as OTLP JSON Lines (the OpenTelemetry JSON file exporter) and as
//! OTLP protobuf (the SDK's own encoder). The live runs are in
//! tests/clients.rs.

use crate::common::{check_json, findings, loopdbg, scratch};
use serde_json::Value;

/// Library, dialect it writes, provider, and the id it left unanswered.
const LIBRARIES: &[(&str, &str, &str, &str)] = &[
    (
        "openinference-openai",
        "llm.input_messages",
        "openai",
        "call_f1",
    ),
    (
        "openinference-anthropic",
        "llm.input_messages",
        "anthropic",
        "toolu_f1",
    ),
    (
        "openllmetry-anthropic",
        "gen_ai.input.messages",
        "anthropic",
        "toolu_f1",
    ),
    (
        "otel-openai-v2",
        "gen_ai.input.messages",
        "openai",
        "call_f1",
    ),
];

fn fixture(name: &str) -> String {
    format!("tests/fixtures/otlp/{name}")
}

#[test]
fn a_dropped_result_is_the_providers_400_naming_the_call_in_every_dialect() {
    for (library, dialect, provider, id) in LIBRARIES {
        for ext in ["jsonl", "pb"] {
            let path = fixture(&format!("{library}-first.{ext}"));
            let (code, report) = check_json(&path);
            assert_eq!(code, Some(1), "{path}");
            let file = &report["files"][0];
            assert_eq!(file["requests"], 2, "{path}: one request per LLM span");
            assert_eq!(file["conversations"], 1, "{path}");
            let all = findings(&report);
            let refused: Vec<&Value> = all
                .iter()
                .filter(|f| f["kind"] == "unanswered_call")
                .collect();
            assert_eq!(refused.len(), 1, "{path}: {all:#?}");
            let f = refused[0];
            assert_eq!(f["ids"], serde_json::json!([id]), "{path}");
            assert_eq!(f["severity"], "400", "{path}");
            assert_eq!(f["rejected_by_provider"], true, "{path}");
            // The provider's own words, confirmed by what the span recorded.
            assert_eq!(f["evidence"]["outcome"], "refused", "{path}: {f:#}");
            let message = f["message"].as_str().unwrap();
            assert!(
                message.contains("The trace confirms it"),
                "{path}: {message}"
            );
            // Where: the trace, the span, the attribute.
            let place = f["path"].as_str().unwrap();
            assert!(place.starts_with("trace "), "{path}: {place}");
            assert!(place.contains(" span "), "{path}: {place}");
            let attribute = match *dialect {
                // OpenInference keeps the whole request in `input.value`.
                "llm.input_messages" => "input.value messages[1]",
                d => d,
            };
            assert!(place.contains(attribute), "{path}: {place}");
            let label = report["files"][0]["results"][0]["label"].as_str().unwrap();
            assert!(label.contains(dialect), "{path}: {label}");
            assert_eq!(file["format"], *provider, "{path}");
            // The tool spans say the second call never ran.
            assert!(
                all.iter()
                    .any(|f| f["kind"] == "tool_never_ran" && f["ids"][0] == *id),
                "{path}: {all:#?}"
            );
        }
    }
}

#[test]
fn a_complete_trace_is_clean() {
    for (library, _, provider, _) in LIBRARIES {
        for ext in ["jsonl", "pb"] {
            let path = fixture(&format!("{library}-all.{ext}"));
            let (code, report) = check_json(&path);
            assert_eq!(code, Some(0), "{path}: {report:#}");
            assert_eq!(report["files"][0]["requests"], 2, "{path}");
            assert_eq!(report["files"][0]["format"], *provider, "{path}");
            assert!(findings(&report).is_empty(), "{path}: {report:#}");
        }
    }
}

#[test]
fn json_and_protobuf_of_one_trace_read_the_same() {
    for (library, ..) in LIBRARIES {
        for mode in ["all", "first"] {
            let (_, json) = check_json(fixture(&format!("{library}-{mode}.jsonl")));
            let (_, pb) = check_json(fixture(&format!("{library}-{mode}.pb")));
            // What was found, about which ids, how grave, in whose words
            // (the JSON Lines file also names a line, which protobuf has
            // not, and a finding in a log-like file names the call's block).
            let strip = |f: Vec<Value>| {
                f.into_iter()
                    .map(|f| {
                        (
                            f["kind"].clone(),
                            f["ids"].clone(),
                            f["severity"].clone(),
                            f["message"].clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                strip(findings(&json)),
                strip(findings(&pb)),
                "{library}-{mode}"
            );
        }
    }
}

#[test]
fn a_trace_replays_and_records_as_its_loop() {
    let dir = scratch("otlp-record");
    for (library, ..) in LIBRARIES {
        let session = dir.join(format!("{library}.json"));
        loopdbg()
            .args(["record", &fixture(&format!("{library}-all.jsonl")), "-o"])
            .arg(&session)
            .assert()
            .success();
        let out = loopdbg()
            .args(["run", "--format", "json"])
            .arg(&session)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{library}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = run.to_string();
        // The two parallel calls, then the fake's answer.
        assert!(
            text.contains("get_weather") && text.contains("get_fx_rate"),
            "{library}: {text}"
        );
        assert!(
            text.contains("北京 18°C, USD/CNY 7.12"),
            "{library}: {text}"
        );
    }
}

#[test]
fn a_broken_export_is_located_and_the_rest_is_read() {
    let dir = scratch("otlp-bad");
    let good = std::fs::read_to_string(fixture("otel-openai-v2-first.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(1, r#"{"resourceSpans": [{"scopeSpans": 7}]}"#);
    let path = dir.join("broken.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let out = loopdbg().args(["check"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("broken.jsonl:2:"), "{said}");
    assert!(
        said.contains("expected an OTLP JSON export of traces"),
        "{said}"
    );
    // The other exports were still read and checked.
    assert!(said.contains("unanswered_call"), "{said}");
}

#[test]
fn a_protobuf_that_is_not_otlp_is_refused_clearly() {
    let dir = scratch("otlp-bad-pb");
    let path = dir.join("broken.pb");
    let mut bytes = std::fs::read(fixture("otel-openai-v2-first.pb")).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&path, bytes).unwrap();
    let out = loopdbg().args(["check"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("expected OTLP protobuf"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
}

#[test]
fn fix_refuses_a_trace() {
    let dir = scratch("otlp-fix");
    let out = loopdbg()
        .args([
            "check",
            "--fix",
            "synthesize",
            &fixture("otel-openai-v2-first.jsonl"),
            "-o",
        ])
        .arg(dir.join("fixed.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not rewrite a trace"));
}

/// `run --export otlp` of a session, read back: `check` finds in the
/// spans what the run's own warnings say, and `record` turns them into a
/// session that runs the same loop.
#[test]
fn an_exported_run_reads_back_into_the_same_run() {
    let dir = scratch("otlp-export");
    for (session, extract) in [
        ("sessions/weather_fx.json", "all"),
        ("sessions/weather_fx.json", "first"),
        ("sessions/weather.json", "all"),
    ] {
        let export = dir.join("run.otlp.jsonl");
        loopdbg()
            .args([
                "run",
                session,
                "--extract",
                extract,
                "--export",
                "otlp",
                "--force",
                "-o",
            ])
            .arg(&export)
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .assert()
            .success();
        let text = std::fs::read_to_string(&export).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        assert!(
            spans[0]["name"]
                .as_str()
                .unwrap()
                .starts_with("invoke_agent ")
        );
        assert_eq!(
            spans[0]["startTimeUnixNano"], "1700000000000000000",
            "SOURCE_DATE_EPOCH"
        );
        // The run's own verdict and the spans' agree.
        let run: Value = serde_json::from_slice(
            &loopdbg()
                .args(["run", session, "--extract", extract, "--format", "json"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let (code, report) = check_json(&export);
        let rejected = findings(&report)
            .iter()
            .any(|f| f["kind"] == "unanswered_call" && f["severity"] == "400");
        let warned = run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "provider_400");
        assert_eq!(rejected, warned, "{session} {extract}: {report:#}");
        assert_eq!(code, Some(if warned { 1 } else { 0 }), "{report:#}");
        // Each finding is on its trip span as an event, too.
        if warned {
            assert!(text.contains(r#""name":"loopdbg.finding""#), "{text}");
        }
        if extract == "all" {
            let recorded = dir.join(format!("recorded-{}.json", session.len()));
            loopdbg()
                .args(["record"])
                .arg(&export)
                .arg("-o")
                .arg(&recorded)
                .assert()
                .success();
            let again: Value = serde_json::from_slice(
                &loopdbg()
                    .args(["run", "--format", "json"])
                    .arg(&recorded)
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap();
            assert_eq!(again["final_text"], run["final_text"], "{session}");
            assert_eq!(again["tool_runs"], run["tool_runs"], "{session}");
        }
    }
}

#[test]
fn a_replay_exports_in_its_own_providers_format() {
    let dir = scratch("otlp-replay");
    let export = dir.join("replay.jsonl");
    loopdbg()
        .args([
            "run",
            &fixture("otel-openai-v2-first.jsonl"),
            "--export",
            "otlp",
            "-o",
        ])
        .arg(&export)
        .assert()
        .success();
    let text = std::fs::read_to_string(&export).unwrap();
    assert!(text.contains(r#""stringValue":"openai""#), "{text}");
    assert!(text.contains(r#""stringValue":"replay""#), "{text}");
    let (code, report) = check_json(&export);
    assert_eq!(code, Some(1));
    let all = findings(&report);
    let f = all.iter().find(|f| f["kind"] == "unanswered_call").unwrap();
    assert_eq!(f["ids"][0], "call_f1");
    // No provider answered a replay's spans: nothing confirms or contradicts.
    assert!(f.get("evidence").is_none(), "{f:#}");
}

/// A JSON Lines file whose first line is blank opens with 0x0a, as OTLP
/// protobuf does: it is still read as text.
#[test]
fn a_file_opening_with_a_blank_line_is_not_taken_for_protobuf() {
    let dir = scratch("otlp-newline");
    let path = dir.join("bodies.jsonl");
    std::fs::write(
        &path,
        "\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
    )
    .unwrap();
    let out = loopdbg().args(["check"]).arg(&path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An id in hex as protobuf's JSON mapping writes bytes: base64.
fn base64_of_hex(hex: &str) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A span as protobuf's canonical JSON mapping writes it (what Tempo's and
/// Jaeger's APIs, Go's `protojson` and Python's `MessageToJson` write):
/// enums by name, ids as base64.
fn in_protobufs_json_mapping(span: &mut Value) {
    const KINDS: [&str; 6] = [
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
    const CODES: [&str; 3] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
    if let Some(k) = span["kind"].as_u64() {
        span["kind"] = KINDS[k as usize].into();
    }
    if let Some(c) = span["status"]["code"].as_u64() {
        span["status"]["code"] = CODES[c as usize].into();
    }
    for key in ["traceId", "spanId", "parentSpanId"] {
        if let Some(hex) = span[key].as_str().filter(|h| !h.is_empty()) {
            span[key] = base64_of_hex(hex).into();
        }
    }
}

/// The same spans written as protobuf's JSON mapping read to the same
/// findings as the OTLP JSON encoding (they were refused whole: "invalid
/// type: string \"SPAN_KIND_INTERNAL\", expected i32").
#[test]
fn a_trace_in_protobufs_json_mapping_reads_as_the_same_trace() {
    let dir = scratch("proto3-json");
    for (library, ..) in LIBRARIES {
        for mode in ["all", "first"] {
            let name = format!("{library}-{mode}.jsonl");
            let text = std::fs::read_to_string(fixture(&name)).unwrap();
            let mut mapped = String::new();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let mut export: Value = serde_json::from_str(line).unwrap();
                for resource in export["resourceSpans"].as_array_mut().unwrap() {
                    for scope in resource["scopeSpans"].as_array_mut().unwrap() {
                        for span in scope["spans"].as_array_mut().unwrap() {
                            in_protobufs_json_mapping(span);
                        }
                    }
                }
                mapped.push_str(&format!("{export}\n"));
            }
            assert!(mapped.contains("\"kind\":\"SPAN_KIND_"), "{name}");
            let path = dir.join(&name);
            std::fs::write(&path, &mapped).unwrap();
            let (code, as_mapped) = check_json(&path);
            let (expected, as_otlp) = check_json(fixture(&name));
            assert_eq!(code, expected, "{name}: {as_mapped:#}");
            let strip = |report: &Value| -> Vec<(Value, Value, Value)> {
                findings(report)
                    .into_iter()
                    .map(|f| (f["kind"].clone(), f["ids"].clone(), f["message"].clone()))
                    .collect()
            };
            assert_eq!(strip(&as_mapped), strip(&as_otlp), "{name}");
        }
    }
}

/// Under the conventions of 1.36 and earlier the messages are GenAI events
/// emitted as OTLP log records (opentelemetry-instrumentation-openai-v2's
/// own wrapper for them, the SDK's JSON file exporter: SOURCE.md). The
/// logs alone name the call the provider refused; the logs beside their
/// spans (one file of both) read as one span, whose 400 confirms it; and
/// the logs in protobuf's JSON mapping read the same.
#[test]
fn genai_events_in_otlp_logs_read_as_the_spans_they_belong_to() {
    let first = fixture("otel-openai-v2-events-first.logs.jsonl");
    let (code, report) = check_json(&first);
    assert_eq!(code, Some(1), "{report:#}");
    let file = &report["files"][0];
    assert_eq!(file["format"], "openai");
    assert_eq!(file["requests"], 2, "one request per LLM span: {report:#}");
    let refused: Vec<Value> = findings(&report)
        .into_iter()
        .filter(|f| f["kind"] == "unanswered_call")
        .collect();
    assert_eq!(refused.len(), 1, "{report:#}");
    assert_eq!(refused[0]["ids"], serde_json::json!(["call_f1"]));
    assert_eq!(refused[0]["severity"], "400");
    let place = refused[0]["path"].as_str().unwrap();
    assert!(place.contains("gen_ai.assistant.message"), "{place}");
    assert_eq!(
        refused[0]["line"], 3,
        "the log line of the span's first record: {report:#}"
    );

    let (code, report) = check_json(fixture("otel-openai-v2-events-all.logs.jsonl"));
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["files"][0]["requests"], 2);

    // The spans alone carry no messages: nothing to check.
    let (_, spans_only) = check_json(fixture("otel-openai-v2-events-first.jsonl"));
    assert_eq!(spans_only["files"][0]["requests"], 0, "{spans_only:#}");

    // Spans and logs in one file: one span each, confirmed by its status.
    let dir = scratch("otlp-logs");
    let both = dir.join("both.jsonl");
    let text = std::fs::read_to_string(fixture("otel-openai-v2-events-first.jsonl")).unwrap()
        + &std::fs::read_to_string(&first).unwrap();
    std::fs::write(&both, text).unwrap();
    let (code, report) = check_json(&both);
    assert_eq!(code, Some(1));
    assert_eq!(report["files"][0]["requests"], 2, "{report:#}");
    let all = findings(&report);
    let refused = all.iter().find(|f| f["kind"] == "unanswered_call").unwrap();
    assert_eq!(refused["ids"], serde_json::json!(["call_f1"]));
    assert_eq!(refused["evidence"]["outcome"], "refused", "{refused:#}");
    assert!(
        all.iter()
            .any(|f| f["kind"] == "tool_never_ran" && f["ids"][0] == "call_f1")
    );
    let label = report["files"][0]["results"][0]["label"].as_str().unwrap();
    assert!(label.contains("chat gpt-4o-mini"), "{label}");

    // protobuf's JSON mapping: severities by name, ids in base64.
    let mut mapped = String::new();
    for line in std::fs::read_to_string(&first).unwrap().lines() {
        let mut export: Value = serde_json::from_str(line).unwrap();
        for resource in export["resourceLogs"].as_array_mut().unwrap() {
            for scope in resource["scopeLogs"].as_array_mut().unwrap() {
                for record in scope["logRecords"].as_array_mut().unwrap() {
                    record["severityNumber"] = "SEVERITY_NUMBER_INFO".into();
                    for key in ["traceId", "spanId"] {
                        record[key] = base64_of_hex(record[key].as_str().unwrap()).into();
                    }
                }
            }
        }
        mapped.push_str(&format!("{export}\n"));
    }
    let path = dir.join("mapped.logs.jsonl");
    std::fs::write(&path, mapped).unwrap();
    let (code, as_mapped) = check_json(&path);
    assert_eq!(code, Some(1), "{as_mapped:#}");
    let ids =
        |r: &Value| -> Vec<Value> { findings(r).into_iter().map(|f| f["ids"].clone()).collect() };
    let (_, as_otlp) = check_json(&first);
    assert_eq!(ids(&as_mapped), ids(&as_otlp));
    assert!(
        as_mapped["files"][0]["results"][0]["label"]
            .as_str()
            .unwrap()
            .contains(&as_otlp["files"][0]["results"][0]["label"].as_str().unwrap()[..40])
    );
}

/// The Python SDK's console exporter prints each span as a pretty JSON
/// object, one after another (`ConsoleSpanExporter`, as many quick starts
/// set it up): read as the same spans the OTLP JSON file exporter wrote
/// in the same run (`tests/clients/otel_loop.py` wrote both), to the same
/// findings.
#[test]
fn console_spans_read_as_the_otlp_export_of_the_same_run() {
    for mode in ["all", "first"] {
        let console = fixture(&format!(
            "openllmetry-anthropic-console-{mode}.console.json"
        ));
        let otlp = fixture(&format!("openllmetry-anthropic-console-{mode}.jsonl"));
        let (code, as_console) = check_json(&console);
        let (expected, as_otlp) = check_json(&otlp);
        assert_eq!(code, expected, "{console}: {as_console:#}");
        assert_eq!(as_console["files"][0]["format"], "anthropic");
        assert_eq!(as_console["files"][0]["requests"], 2, "{as_console:#}");
        // (A trace read whole names an unanswered call by its message, a
        // trace of lines by its part: the paths are compared by span.)
        let strip = |report: &Value| -> Vec<(Value, Value, Value, String)> {
            findings(report)
                .into_iter()
                .map(|f| {
                    let path = f["path"].as_str().unwrap_or("");
                    let span = path.split(" gen_ai.").next().unwrap_or("").to_string();
                    (
                        f["kind"].clone(),
                        f["ids"].clone(),
                        f["message"].clone(),
                        span,
                    )
                })
                .collect()
        };
        assert_eq!(strip(&as_console), strip(&as_otlp), "{console}");
    }
    let (_, first) = check_json(fixture("openllmetry-anthropic-console-first.console.json"));
    assert!(
        findings(&first)
            .iter()
            .any(|f| f["kind"] == "unanswered_call" && f["ids"][0] == "toolu_f1"),
        "{first:#}"
    );
}

/// A trace fetched from a trace store's API reads as the export it holds:
/// Grafana Tempo's `/api/traces/{id}` (`{"batches": [...]}`, written here
/// as older Tempo versions write it: `instrumentationLibrarySpans`, ids in
/// upper-case hex), its `/api/v2/traces/{id}` (`{"trace": {...}}`) and
/// Jaeger's API v3 (`{"result": {...}}` in protobuf's JSON mapping, as
/// grpc-gateway writes it: enum names, base64 ids), each to the findings
/// of the file exporter's JSON Lines of the same trace.
#[test]
fn a_trace_from_tempos_or_jaegers_api_reads_as_the_export_it_holds() {
    let dir = scratch("trace-apis");
    for (library, ..) in LIBRARIES {
        let name = format!("{library}-first.jsonl");
        let text = std::fs::read_to_string(fixture(&name)).unwrap();
        let resources: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .flat_map(|l| {
                let export: Value = serde_json::from_str(l).unwrap();
                export["resourceSpans"].as_array().unwrap().clone()
            })
            .collect();
        let mut old_tempo = resources.clone();
        for resource in &mut old_tempo {
            let scopes = resource
                .as_object_mut()
                .unwrap()
                .remove("scopeSpans")
                .unwrap();
            let mut scopes = scopes.as_array().unwrap().clone();
            for scope in &mut scopes {
                if let Some(s) = scope.as_object_mut().unwrap().remove("scope") {
                    scope["instrumentationLibrary"] = s;
                }
                for span in scope["spans"].as_array_mut().unwrap() {
                    for key in ["traceId", "spanId", "parentSpanId"] {
                        if let Some(id) = span[key].as_str() {
                            span[key] = id.to_uppercase().into();
                        }
                    }
                }
            }
            resource["instrumentationLibrarySpans"] = scopes.into();
        }
        let mut mapped = resources.clone();
        for resource in &mut mapped {
            for scope in resource["scopeSpans"].as_array_mut().unwrap() {
                for span in scope["spans"].as_array_mut().unwrap() {
                    in_protobufs_json_mapping(span);
                }
            }
        }
        let answers = [
            ("tempo-v1", serde_json::json!({ "batches": old_tempo })),
            (
                "tempo-v2",
                serde_json::json!({"trace": {"resourceSpans": resources}}),
            ),
            (
                "jaeger-v3",
                serde_json::json!({"result": {"resourceSpans": mapped}}),
            ),
        ];
        let (expected, as_export) = check_json(fixture(&name));
        let strip = |report: &Value| -> Vec<(Value, Value, Value)> {
            findings(report)
                .into_iter()
                .map(|f| (f["kind"].clone(), f["ids"].clone(), f["message"].clone()))
                .collect()
        };
        for (api, answer) in answers {
            let path = dir.join(format!("{library}-{api}.json"));
            std::fs::write(&path, serde_json::to_string_pretty(&answer).unwrap()).unwrap();
            let (code, report) = check_json(&path);
            assert_eq!(code, expected, "{library} {api}: {report:#}");
            assert_eq!(
                report["files"][0]["requests"], 2,
                "{library} {api}: {report:#}"
            );
            assert_eq!(strip(&report), strip(&as_export), "{library} {api}");
        }
    }
}
