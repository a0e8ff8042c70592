//! Request bodies of the fake's scripted loop (a prompt, a reply with
//! two calls, their results, the answer) in each provider's own shape,
//! for the benchmark's generated files (`examples/gen_jsonl.rs`) and the
//! tests that hold `check`'s fast path to those very lines.

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
