#!/usr/bin/env bash
# What loopdbg's Claude Code hooks add to a resume and to each status line
# redraw: `loopdbg hooks run claude-code session-start` and `loopdbg hooks
# statusline claude-code` on generated logs of 1,000 / 10,000 / 100,000
# events (about 0.5 / 5 / 50 MB), each given the JSON Claude Code sends on
# stdin; `true` is the floor (the shell hyperfine starts). Needs hyperfine.
# Usage: benches/hook_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin loopdbg --example gen_claude_log
dir=${TMPDIR:-/tmp}/loopdbg-bench-hooks
mkdir -p "$dir"
for events in 1000 10000 100000; do
  log=$dir/log-$events.jsonl
  [ -f "$log" ] || target/release/examples/gen_claude_log "$log" "$events"
  printf '{"session_id":"s","transcript_path":"%s","hook_event_name":"SessionStart","source":"resume"}' "$log" > "$dir/in-$events.json"
  ls -l "$log" | awk '{print $5, $9}'
  # (hyperfine 1.15 has no --input: each command reads the file itself.)
  in=$dir/in-$events.json
  hyperfine --warmup 2 --runs 10 \
    "true < $in" \
    "target/release/loopdbg hooks run claude-code session-start < $in" \
    "target/release/loopdbg hooks statusline claude-code < $in"
done
