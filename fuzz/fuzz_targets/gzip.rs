//! A compressed or plain input as `check` and `--follow` take it in: known
//! as gzip by its bytes, decompressed as it is read, cut into chunks of
//! whole lines with every line bounded (small bounds here, so the fuzzer
//! reaches them). Checked against reading the same text whole: the chunks
//! number their lines right, keep every line within the bound, and are
//! the text itself, the overlong lines left out.
#![no_main]

use std::io::{BufRead, Read};

use libfuzzer_sys::fuzz_target;
use loopdbg_io::gunzip::decoded;
use loopdbg_io::lines::LineChunks;

const MAX_LINE: usize = 24;
const CHUNK: usize = 16;
/// A gzip member may expand about a thousandfold: what is read is bounded
/// so a bomb costs the fuzzer no more than a plain input.
const MOST: u64 = 1 << 22;

fuzz_target!(|data: &[u8]| {
    // What the text is, read whole (the oracle).
    let Ok((mut whole, _)) = decoded(Box::new(std::io::Cursor::new(data.to_vec()))) else {
        return;
    };
    let mut text = Vec::new();
    let complete = (&mut whole).take(MOST).read_to_end(&mut text).is_ok();
    // The same input in chunks.
    let Ok((reader, _)) = decoded(Box::new(std::io::Cursor::new(data.to_vec()))) else {
        panic!("the second look at the same bytes failed");
    };
    let bounded: Box<dyn BufRead + Send> =
        Box::new(std::io::BufReader::with_capacity(7, reader.take(MOST)));
    let mut chunks = LineChunks::new(bounded, 1, CHUNK, MAX_LINE);
    let mut kept = Vec::new();
    let mut next = 1;
    let mut overlong = Vec::new();
    while let Some(chunk) = chunks.next_chunk(Vec::new()) {
        let Ok(chunk) = chunk else {
            assert!(
                !complete || text.len() as u64 == MOST,
                "the chunks failed where the whole read did not"
            );
            return;
        };
        assert_eq!(chunk.first, next, "line numbers run on");
        for line in chunk.bytes.split_inclusive(|&b| b == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            assert!(
                body.len() <= MAX_LINE,
                "a line of {} bytes was kept",
                body.len()
            );
        }
        next += chunk.bytes.iter().filter(|&&b| b == b'\n').count();
        if let Some(n) = chunk.overlong {
            assert_eq!(n, next, "the overlong line is the one after the chunk");
            overlong.push(n);
            next += 1;
        }
        kept.extend_from_slice(&chunk.bytes);
    }
    if !complete {
        return;
    }
    // The text with its overlong lines left out is what was kept.
    let mut expected = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if body.len() > MAX_LINE {
            assert!(
                overlong.contains(&(i + 1)),
                "line {} is overlong and was not named",
                i + 1
            );
        } else {
            expected.extend_from_slice(line);
        }
    }
    assert_eq!(kept, expected);
});
