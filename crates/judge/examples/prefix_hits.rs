//! Which requests of a proxy capture the gate reads past their prefix:
//! each request body, in order, through the gate's memory
//! (`loopdbg_read::prefix`), saying for each whether it continued a
//! remembered one and from how many messages back, and that the
//! conversation read so is the one reading it whole gives.
//! Usage: `cargo run --release -p loopdbg-judge --example prefix_hits -- CAPTURE.jsonl`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use loopdbg_formats::provider::Format;
use loopdbg_read::prefix::{Histories, read_whole};
use loopdbg_read::{Detail, Source, read_owned_as};

fn main() {
    let path = std::env::args().nth(1).expect("CAPTURE.jsonl");
    let histories = Histories::new(1 << 30);
    let (mut hits, mut all) = (0, 0);
    for (k, line) in std::fs::read_to_string(path).unwrap().lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let route = record["path"].as_str().unwrap_or("");
        let Some(format) = loopdbg_formats::route::provider_of_path(route) else {
            continue;
        };
        let body = serde_json::to_vec(&record["request"]).unwrap();
        let whole = read_owned_as(
            serde_json::from_slice(&body).unwrap(),
            Source::Provider(format),
            Detail::Shape,
        );
        all += 1;
        let history = match format {
            Format::Responses => "input",
            Format::Gemini => "contents",
            _ => "messages",
        };
        let messages = record["request"][history].as_array().map_or(0, Vec::len);
        match histories.read(format, route, &body, Detail::Shape) {
            Some(read) => {
                hits += 1;
                assert_eq!(Ok(&read.conv), whole.as_ref(), "request {}", k + 1);
                println!("#{} {messages} messages: read past the prefix", k + 1);
                histories.keep(read, &body);
            }
            None => {
                println!("#{} {messages} messages: read whole", k + 1);
                let doc = serde_json::from_slice(&body).unwrap();
                if matches!(
                    format,
                    Format::Openai | Format::Anthropic | Format::Responses | Format::Gemini
                ) && let Ok(read) = read_whole(format, doc, &body, Detail::Shape)
                {
                    histories.keep_whole(route, &body, 0, read, ());
                }
            }
        }
    }
    println!("{hits} of {all} read past their prefix");
}
