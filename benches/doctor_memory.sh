#!/usr/bin/env bash
# Peak memory and time of `loopdbg doctor` (planning, then writing) beside
# `loopdbg check` on two generated Claude Code logs with one tool result
# dropped: a dense one (EVENTS events of ordinary size, about 560 bytes
# each) and one of large tool output (100,000 events, each result padded
# to about 12 KB, plus a `toolUseResult` of the same size, as Claude Code
# writes it). Needs python3.
# Usage: benches/doctor_memory.sh [EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-600000}
dir=${TMPDIR:-/tmp}/loopdbg-doctor-bench
mkdir -p "$dir"
cargo build --release --quiet --bin loopdbg --example gen_claude_log
bin=$PWD/target/release/loopdbg
gen=target/release/examples/gen_claude_log
# One result dropped past 5/6 of the log: the call before it is unanswered.
drop_result() { # IN OUT
  python3 - "$1" "$2" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
lines = open(src).readlines()
at = next(k for k in range(len(lines) * 5 // 6, len(lines)) if '"tool_result"' in lines[k])
open(out, "w").writelines(lines[:at] + lines[at + 1:])
PY
}
$gen "$dir/dense-src.jsonl" "$events" > /dev/null
drop_result "$dir/dense-src.jsonl" "$dir/dense.jsonl"
$gen "$dir/large-src.jsonl" 100000 > /dev/null
python3 - "$dir/large-src.jsonl" "$dir/large-padded.jsonl" <<'PY'
import json, sys
filler = "    let total = items.iter().map(|i| i.price * i.qty).sum::<u64>();  // a line of the file read\n" * 120
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        if '"tool_result"' in line:
            v = json.loads(line)
            for b in v["message"]["content"]:
                if b.get("type") == "tool_result":
                    b["content"] = b["content"] + filler if isinstance(b.get("content"), str) else [{"type": "text", "text": filler}]
            v["toolUseResult"] = {"stdout": filler, "stderr": "", "interrupted": False}
            line = json.dumps(v, separators=(",", ":")) + "\n"
        out.write(line)
PY
drop_result "$dir/large-padded.jsonl" "$dir/large.jsonl"
for shape in dense large; do
  f=$dir/$shape.jsonl
  echo "$shape: $(wc -l < "$f") lines, $(($(stat -c %s "$f") / 1048576)) MiB"
  /usr/bin/time -f "  check:          %e s, %M KB" "$bin" check "$f" > /dev/null || true
  /usr/bin/time -f "  doctor:         %e s, %M KB" "$bin" doctor "$f" > /dev/null || true
  cp "$f" "$dir/w.jsonl"; rm -f "$dir"/w.jsonl.loopdbg-bak*
  /usr/bin/time -f "  doctor --write: %e s, %M KB" "$bin" doctor --write --force "$dir/w.jsonl" | tail -1
done
rm -f "$dir"/w.jsonl*
