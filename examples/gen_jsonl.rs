//! Generates a JSON Lines file of conversations for benchmarking `loopdbg
//! check`: `cargo run --release --example gen_jsonl -- OUT MEGABYTES
//! [FORMAT]`, FORMAT one of anthropic (the default), openai, responses,
//! gemini, bedrock. Each line is one request body of the same two-call
//! loop in that provider's own shape; every 7th conversation loses one
//! tool result (an unanswered call).

use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: gen_jsonl OUT MEGABYTES [FORMAT]");
    let megabytes: u64 = args.next().map_or(100, |s| s.parse().expect("a number"));
    let format = args.next().unwrap_or_else(|| "anthropic".to_string());
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let mut written = 0u64;
    let mut n = 0u64;
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(8);
    while written < megabytes << 20 {
        n += 1;
        let line = conversation(&format, n, n.is_multiple_of(7), &filler);
        writeln!(w, "{line}").unwrap();
        written += line.len() as u64 + 1;
    }
    w.flush().unwrap();
    eprintln!(
        "wrote {out}: {n} {format} conversations, {} MB",
        written >> 20
    );
}

/// One request body: a prompt, a reply with two calls, their results (the
/// second left out when `drop_one`), and the answer.
pub fn conversation(format: &str, n: u64, drop_one: bool, filler: &str) -> String {
    let note = format!(r#"{{\"temp_c\":24,\"note\":\"{filler}\"}}"#);
    let prompt = format!("Conversation {n}: weather and FX, please. {filler}");
    let answer = format!("Sunny, 24 degrees; 7.12. {filler}");
    let (a, b) = (format!("call_{n}_a"), format!("call_{n}_b"));
    let pick = |both: String, one: String| if drop_one { one } else { both };
    match format {
        "openai" => {
            let results = pick(
                format!(
                    r#"{{"role":"tool","tool_call_id":"{a}","content":"{note}"}},{{"role":"tool","tool_call_id":"{b}","content":"7.12"}}"#
                ),
                format!(r#"{{"role":"tool","tool_call_id":"{a}","content":"{note}"}}"#),
            );
            format!(
                r#"{{"model":"gpt-4.1","messages":[{{"role":"user","content":"{prompt}"}},{{"role":"assistant","content":"Two lookups.","tool_calls":[{{"id":"{a}","type":"function","function":{{"name":"get_weather","arguments":"{{\"city\":\"Beijing\"}}"}}}},{{"id":"{b}","type":"function","function":{{"name":"get_fx_rate","arguments":"{{\"base\":\"USD\",\"quote\":\"CNY\"}}"}}}}]}},{results},{{"role":"assistant","content":"{answer}"}}]}}"#
            )
        }
        "responses" => {
            let results = pick(
                format!(
                    r#"{{"type":"function_call_output","call_id":"{a}","output":"{note}"}},{{"type":"function_call_output","call_id":"{b}","output":"7.12"}}"#
                ),
                format!(r#"{{"type":"function_call_output","call_id":"{a}","output":"{note}"}}"#),
            );
            format!(
                r#"{{"model":"gpt-4.1","input":[{{"role":"user","content":"{prompt}"}},{{"type":"function_call","call_id":"{a}","name":"get_weather","arguments":"{{\"city\":\"Beijing\"}}"}},{{"type":"function_call","call_id":"{b}","name":"get_fx_rate","arguments":"{{\"base\":\"USD\",\"quote\":\"CNY\"}}"}},{results},{{"role":"assistant","content":"{answer}"}}]}}"#
            )
        }
        "gemini" => {
            let results = pick(
                format!(
                    r#"{{"functionResponse":{{"id":"{a}","name":"get_weather","response":{{"result":"{note}"}}}}}},{{"functionResponse":{{"id":"{b}","name":"get_fx_rate","response":{{"result":"7.12"}}}}}}"#
                ),
                format!(
                    r#"{{"functionResponse":{{"id":"{a}","name":"get_weather","response":{{"result":"{note}"}}}}}}"#
                ),
            );
            format!(
                r#"{{"contents":[{{"role":"user","parts":[{{"text":"{prompt}"}}]}},{{"role":"model","parts":[{{"functionCall":{{"id":"{a}","name":"get_weather","args":{{"city":"Beijing"}}}}}},{{"functionCall":{{"id":"{b}","name":"get_fx_rate","args":{{"base":"USD","quote":"CNY"}}}}}}]}},{{"role":"user","parts":[{results}]}},{{"role":"model","parts":[{{"text":"{answer}"}}]}}]}}"#
            )
        }
        "bedrock" => {
            let results = pick(
                format!(
                    r#"{{"toolResult":{{"toolUseId":"{a}","content":[{{"text":"{note}"}}]}}}},{{"toolResult":{{"toolUseId":"{b}","content":[{{"text":"7.12"}}]}}}}"#
                ),
                format!(
                    r#"{{"toolResult":{{"toolUseId":"{a}","content":[{{"text":"{note}"}}]}}}}"#
                ),
            );
            format!(
                r#"{{"toolConfig":{{"tools":[{{"toolSpec":{{"name":"get_weather","inputSchema":{{"json":{{"type":"object"}}}}}}}},{{"toolSpec":{{"name":"get_fx_rate","inputSchema":{{"json":{{"type":"object"}}}}}}}}]}},"messages":[{{"role":"user","content":[{{"text":"{prompt}"}}]}},{{"role":"assistant","content":[{{"text":"Two lookups."}},{{"toolUse":{{"toolUseId":"{a}","name":"get_weather","input":{{"city":"Beijing"}}}}}},{{"toolUse":{{"toolUseId":"{b}","name":"get_fx_rate","input":{{"base":"USD","quote":"CNY"}}}}}}]}},{{"role":"user","content":[{results}]}},{{"role":"assistant","content":[{{"text":"{answer}"}}]}}]}}"#
            )
        }
        _ => {
            let results = pick(
                format!(
                    r#"[{{"type":"tool_result","tool_use_id":"{a}","content":"{note}"}},{{"type":"tool_result","tool_use_id":"{b}","content":"7.12"}}]"#
                ),
                format!(r#"[{{"type":"tool_result","tool_use_id":"{a}","content":"{note}"}}]"#),
            );
            format!(
                r#"{{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{{"role":"user","content":"{prompt}"}},{{"role":"assistant","content":[{{"type":"text","text":"Two lookups."}},{{"type":"tool_use","id":"{a}","name":"get_weather","input":{{"city":"Beijing"}}}},{{"type":"tool_use","id":"{b}","name":"get_fx_rate","input":{{"base":"USD","quote":"CNY"}}}}]}},{{"role":"user","content":{results}}},{{"role":"assistant","content":[{{"type":"text","text":"{answer}"}}]}}]}}"#
            )
        }
    }
}
