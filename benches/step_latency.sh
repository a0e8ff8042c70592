#!/usr/bin/env bash
# How long one step back takes at the end of a long log's replay (issue 40:
# what a week-long session's debugger does at each key): each binary given
# (default: this tree's release build) opens each log in a 120x40 tmux
# pane, goes to the newest step (End), and 9 steps back (Left) are timed
# from the key to the header showing the new step; the median, min and
# max are printed (10 s: the step never came). The logs: generated
# Claude Code logs (examples/gen_claude_log.rs) of 200, 100,000 and
# 1,800,000 events (about 0.1 MB, 56 MB and 1 GB). Needs tmux.
# Usage: benches/step_latency.sh [BINARY...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin loopdbg --example gen_claude_log
binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=("$PWD/target/release/loopdbg")
work=$(mktemp -d)
session="loopdbg-step-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null; rm -rf "$work"' EXIT
target/release/examples/gen_claude_log "$work/short.jsonl" 200 > /dev/null
target/release/examples/gen_claude_log "$work/56mb.jsonl" 100000 > /dev/null
target/release/examples/gen_claude_log "$work/1gb.jsonl" 1800000 > /dev/null
logs=("$work/short.jsonl" "$work/56mb.jsonl" "$work/1gb.jsonl")
ms() { echo $(( $(date +%s%N) / 1000000 )); }
header() { tmux capture-pane -p -t "$session" | head -1; }
echo "| binary | log | step back (median) | min | max |"
echo "|---|---|---|---|---|"
for log in "${logs[@]}"; do
  for bin in "${binaries[@]}"; do
    tmux kill-session -t "$session" 2>/dev/null || true
    tmux new-session -d -s "$session" -x 120 -y 40 "$bin $log; sleep 600"
    # Opened, and the whole log read (a large one opens on its part).
    # (Tested on captured text: `grep -q` ends a pipe early, which
    # pipefail would read as a failure.)
    while true; do
      screen=$(tmux capture-pane -p -t "$session")
      if grep -q "step " <<< "$screen" && ! grep -q "reading the rest" <<< "$screen"; then
        break
      fi
      sleep 0.05
    done
    tmux send-keys -t "$session" End
    sleep 1.5
    times=()
    for _ in $(seq 9); do
      before=$(header)
      start=$(ms)
      tmux send-keys -t "$session" Left
      until [ "$(header)" != "$before" ] || [ $(( $(ms) - start )) -gt 10000 ]; do sleep 0.001; done
      times+=($(( $(ms) - start )))
    done
    printf "%s\n" "${times[@]}" | sort -n | tr '\n' ' ' | awk -v b="$(basename "$bin")" -v l="$(basename "$log")" \
      '{printf "| %s | %s | %d ms | %d ms | %d ms |\n", b, l, $5, $1, $9}'
  done
done
