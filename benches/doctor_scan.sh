#!/usr/bin/env bash
# `loopdbg doctor --scan` over a generated store of about 1 GB: FILES
# Claude Code logs of EVENTS events each (examples/gen_claude_log) under a
# scratch home, and two a provider would refuse, beside jq reading the same
# files (the floor: every line parsed as JSON, one field printed, nothing
# judged) and cat (the bytes read, nothing parsed), and a second scan
# with nothing changed. Needs hyperfine and jq (Debian packages).
# Usage: benches/doctor_scan.sh [FILES] [EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-200}
events=${2:-10000}
home=${TMPDIR:-/tmp}/loopdbg-bench-scan-$files-$events
cargo build --release --quiet --bin loopdbg --example gen_claude_log
store=$home/.claude/projects/-bench
if [ ! -d "$store" ]; then
  mkdir -p "$store"
  target/release/examples/gen_claude_log "$home/one.jsonl" "$events"
  for i in $(seq -w 1 "$files"); do cp "$home/one.jsonl" "$store/5e55$i-0000-4000-8000-000000000000.jsonl"; done
  for i in 1 2; do
    cp tests/fixtures/transcripts/claude_code_v2/doctor_invalid_id.jsonl "$store/bad0000$i-0000-4000-8000-000000000000.jsonl"
  done
  touch -d '1 hour ago' "$store"/*.jsonl
fi
echo "store: $(du -sh "$store" | cut -f1) in $(ls "$store" | wc -l) files"
scan="env HOME=$home XDG_CACHE_HOME=$home/.cache CLAUDE_CONFIG_DIR= CODEX_HOME= GEMINI_CLI_HOME= COPILOT_HOME= XDG_CONFIG_HOME= XDG_DATA_HOME= target/release/loopdbg doctor --scan"
# Every session read and judged (--no-cache), against jq parsing every
# line and cat reading the bytes (the floor the first scan is bound by);
# then a second scan with nothing changed, its verdicts from the cache the
# run before it left (the goal: under a second).
$scan > /dev/null || true
hyperfine --warmup 1 --runs 3 --ignore-failure \
  "$scan --no-cache" \
  "cat $store/*.jsonl" \
  "jq -c 'select(.type == \"assistant\") | .uuid' $store/*.jsonl" \
  "$scan"
/usr/bin/time -f "peak memory of the scan: %M KB" $scan --no-cache | tail -n 1
