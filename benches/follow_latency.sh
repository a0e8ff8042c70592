#!/usr/bin/env bash
# How soon `loopdbg LOG --follow` shows an event appended to a long Claude
# Code log, how soon the whole log's judged picture has it, the follower's
# idle CPU and its memory (issue 40, items 3 and 5): a generated log
# (examples/gen_claude_log.rs) followed in a 120x40 tmux pane by each
# binary given (default: this tree's release build), a fresh copy of the
# log for each. Needs tmux.
# Usage: benches/follow_latency.sh [EVENTS] [BINARY...]
#   EVENTS: 100000 is about 56 MB, 1800000 about 1 GB (default)
#   ROUNDS=5 appended prompts, IDLE=10 seconds idle, FOLLOW_ARGS more
#   arguments (`--conversation 1`: a pinned conversation, no part shown),
#   FOLLOW_MEMORY=8192 MiB given to a binary that has --follow-memory (a
#   1 GB log is past its default's whole, 512 MiB, and would be followed
#   by its newest part only: this bench measures the whole picture)
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1800000}
shift || true
cargo build --release --quiet --bin loopdbg --example gen_claude_log
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$PWD/target/release/loopdbg")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/examples/gen_claude_log "$work/log.jsonl" "$events" > /dev/null
echo "| binary | log | first frame | whole picture | first event judged at once | settled | new event shown (median, max) | judged | 400 alarmed | idle CPU | RSS after 1st change → end | peak |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for bin in "${binaries[@]}"; do
  cp "$work/log.jsonl" "$work/run.jsonl"
  echo -n "| $(basename "$bin") "
  args=${FOLLOW_ARGS:-}
  if "$bin" --help | grep -q -- --follow-memory; then args="$args --follow-memory ${FOLLOW_MEMORY:-8192}"; fi
  FOLLOW_ARGS=$args python3 benches/follow_latency.py "$bin" "$work/run.jsonl" "${ROUNDS:-5}" "${IDLE:-10}"
done
