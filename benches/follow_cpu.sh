#!/usr/bin/env bash
# CPU taken by `loopdbg LOG --follow` while an agent appends to a long
# Claude Code log: a generated log (examples/gen_claude_log.rs), the
# follower in a 120x40 tmux pane, 50 lines appended over 10 s; the CPU time
# the follower used is read from /proc (issue 23, item 8). Needs tmux.
# Usage: benches/follow_cpu.sh [EVENTS]   (default 100000, about 56 MB)
# LOOPDBG=BINARY measures another build (the log generator must be built).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-100000}
[ -n "${LOOPDBG:-}" ] || cargo build --release --quiet --bin loopdbg --example gen_claude_log
work=$(mktemp -d)
log="$work/followed.jsonl"
trap 'tmux kill-session -t loopdbg-follow-bench 2>/dev/null || true; rm -rf "$work"' EXIT
target/release/examples/gen_claude_log "$log" "$events" > /dev/null
bin=${LOOPDBG:-$PWD/target/release/loopdbg}
tmux new-session -d -s loopdbg-follow-bench -x 120 -y 40 "$bin $log --follow"
sleep 4
pid=$(pgrep -f -- "^$bin $log --follow" | head -1)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
before=$(cpu)
line=$(tail -n 1 "$log")
for _ in $(seq 1 50); do echo "$line" >> "$log"; sleep 0.2; done
sleep 3
after=$(cpu)
echo "follow: $(awk -v a="$after" -v b="$before" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (a - b) / hz }') s of CPU for 50 lines appended over 10 s to $(du -h "$log" | cut -f1) ($events events)"
