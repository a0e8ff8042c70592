//! What the gate costs per request on a history of the bench's shape
//! (`benches/gateway_load.py`'s body): AGENTS agents, each sending its own
//! history two messages longer every time, judged round-robin as a
//! gateway sees them, with the conversations remembered and without.
//! A body whose last key is `"input": [` is a Responses request (as Codex
//! sends its history): its turns are a call item and its output; one
//! whose last key is `"contents": [` is a Gemini request (as Gemini CLI
//! sends it): a model turn calling and a user turn answering
//! (`benches/gen_history_body.py` writes both).
//! Usage: `cargo run --release -p loopdbg-judge --example gate_cost -- BODY [AGENTS] [ROUNDS]`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use loopdbg_judge::gate::{Memory, OnInvalid, OnUnjudged, judge};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let body = std::fs::read(args.next().expect("BODY")).unwrap();
    let agents: usize = args.next().map_or(8, |a| a.parse().unwrap());
    let rounds: usize = args.next().map_or(8, |a| a.parse().unwrap());
    #[derive(Clone, Copy, PartialEq)]
    enum Shape {
        Chat,
        Responses,
        Gemini,
    }
    let has = |key: &[u8]| body.windows(key.len()).any(|w| w == key);
    let shape = match (has(b"\"input\": ["), has(b"\"contents\": [")) {
        (true, _) => Shape::Responses,
        (_, true) => Shape::Gemini,
        _ => Shape::Chat,
    };
    let (key, path): (&[u8], &str) = match shape {
        Shape::Responses => (b"\"input\": [", "/v1/responses"),
        Shape::Gemini => (
            b"\"contents\": [",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        ),
        Shape::Chat => (b"\"messages\": [", "/v1/chat/completions"),
    };
    let at = body
        .windows(key.len())
        .position(|w| w == key)
        .expect("a messages or input array")
        + key.len();
    let end = body.trim_ascii_end().len() - 2;
    let mut histories: Vec<Vec<u8>> = (0..agents)
        .map(|a| {
            let mut b = body[..end].to_vec();
            b.splice(
                at..at,
                match shape {
                    Shape::Gemini => format!("{{\"role\": \"user\", \"parts\": [{{\"text\": \"(agent {a})\"}}]}}, "),
                    Shape::Responses => format!("{{\"type\": \"message\", \"role\": \"user\", \"content\": \"(agent {a})\"}}, "),
                    Shape::Chat => format!("{{\"role\": \"user\", \"content\": \"(agent {a})\"}}, "),
                }
                .into_bytes(),
            );
            b
        })
        .collect();
    let budget = std::env::var("BUDGET_MIB").map_or(loopdbg_judge::gate::HISTORIES_BUDGET, |m| {
        m.parse::<usize>().unwrap() << 20
    });
    for budget in [0, budget] {
        let memory = Memory::new(budget);
        let mut spent = std::time::Duration::ZERO;
        let mut refused = 0;
        for round in 0..rounds {
            for (a, h) in histories.iter_mut().enumerate() {
                let id = format!("call_{a}_{round}_{budget}");
                let turn = match shape {
                    Shape::Gemini => format!(
                        ", {{\"role\": \"model\", \"parts\": [{{\"functionCall\": {{\"id\": \"{id}\", \"name\": \"get_weather\", \"args\": {{}}}}}}]}}, {{\"role\": \"user\", \"parts\": [{{\"functionResponse\": {{\"id\": \"{id}\", \"name\": \"get_weather\", \"response\": {{\"output\": \"18°C\"}}}}}}]}}"
                    ),
                    Shape::Responses => format!(
                        ", {{\"type\": \"function_call\", \"call_id\": \"{id}\", \"name\": \"get_weather\", \"arguments\": \"{{}}\"}}, {{\"type\": \"function_call_output\", \"call_id\": \"{id}\", \"output\": \"18°C\"}}"
                    ),
                    Shape::Chat => format!(
                        ", {{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{{\"id\": \"{id}\", \"type\": \"function\", \"function\": {{\"name\": \"get_weather\", \"arguments\": \"{{}}\"}}}}]}}, {{\"role\": \"tool\", \"tool_call_id\": \"{id}\", \"content\": \"18°C\"}}"
                    ),
                };
                h.extend_from_slice(turn.as_bytes());
                let mut request = h.clone();
                request.extend_from_slice(b"]}");
                let t = Instant::now();
                let judged = judge(path, &request, OnInvalid::Block, OnUnjudged::Block, &memory);
                if round > 0 {
                    spent += t.elapsed();
                }
                refused += usize::from(judged.verdict.is_some_and(|v| v.rejected.is_some()));
            }
        }
        let n = (agents * (rounds - 1)) as u32;
        let rss = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS"))
                    .map(str::to_string)
            })
            .unwrap_or_default();
        println!(
            "budget {budget}: {:?} a request over {n} ({refused} refused); {rss}",
            spent / n.max(1)
        );
    }
}
