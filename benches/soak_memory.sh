#!/usr/bin/env bash
# Memory over a day of use (issue 62, item 4), the resident set read from
# /proc at fixed points of the work rather than at times:
#
#   gateway   `loopdbg proxy --no-tui --on-invalid block` over EXCHANGES
#             exchanges (default 100,000) from 16 agents (the load
#             generator, crates/fake/src/bin/loopdbg-load.rs), 20 KB
#             Chat Completions histories streamed back unpaced by the fake
#             provider; VmRSS after every tenth of them
#   tui       the same through `loopdbg proxy` with its screen on (a
#             160x48 tmux pane)
#   follow    `loopdbg LOG --follow` (a 120x40 tmux pane) while a Claude
#             Code log grows to FOLLOW_MB (default 1024) in tenths, each
#             appended at once; VmRSS once the follower has drawn it (its
#             CPU time stops moving); under --follow-memory FOLLOW_MEMORY
#             MiB (default 2048, loopdbg's own: the whole held to 512 MiB
#             of log, the newest part only past it)
#
# Usage: [EXCHANGES=100000] [FOLLOW_MB=1024] [FOLLOW_MEMORY=2048] benches/soak_memory.sh [gateway] [tui] [follow]
# (no argument: all three). Needs tmux.
set -euo pipefail
cd "$(dirname "$0")/.."
exchanges=${EXCHANGES:-100000}
follow_mb=${FOLLOW_MB:-1024}
follow_memory=${FOLLOW_MEMORY:-2048}
parts=${*:-gateway tui follow}
cargo build --release --quiet -p loopdbg -p loopdbg-fake --example gen_claude_log
work=$(mktemp -d)
session=loopdbg-soak-$$
trap 'tmux kill-session -t $session 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hwm() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
settled() { # PID: wait until its CPU time stops moving for a second
  local before after
  after=$(cpu "$1")
  while :; do
    before=$after; sleep 1; after=$(cpu "$1")
    [ "$before" != "$after" ] || break
  done
}
python3 -c "
import sys; sys.path.insert(0, 'benches'); import gateway_load as g
open('$work/body.json', 'wb').write(g.history('gpt-4o-mini', 20480))"

soak_proxy() { # NAME PID URL
  local name=$1 pid=$2 url=$3 tenth=$((exchanges / 10)) done_=0
  echo "$name: exchanges, VmRSS MB (start $(rss "$pid"))"
  for _ in $(seq 10); do
    target/release/loopdbg-load "$url/v1/chat/completions" "$work/body.json" 16 $((tenth / 16)) \
      "authorization: Bearer sk-soak-0123456789" > "$work/load.json"
    done_=$((done_ + tenth))
    echo "  $done_ $(rss "$pid") ($(python3 -c "import json; r = json.load(open('$work/load.json')); print(round(r['rps']), 'req/s,', r['statuses'])"))"
  done
  echo "  peak $(hwm "$pid") MB"
}

target/release/loopdbg-fake > "$work/fake.url" &
for _ in $(seq 50); do [ -s "$work/fake.url" ] && break; sleep 0.1; done
upstream=$(head -n 1 "$work/fake.url")
for part in $parts; do
  case $part in
    gateway)
      target/release/loopdbg proxy --no-tui --listen 127.0.0.1:0 --upstream "$upstream" \
        --on-invalid block > /dev/null 2> "$work/proxy.err" &
      pid=$!
      for _ in $(seq 50); do grep -q "listening on" "$work/proxy.err" 2>/dev/null && break; sleep 0.1; done
      url=$(grep -o 'http://127[^ ]*' "$work/proxy.err" | head -n 1)
      soak_proxy "gateway (--no-tui)" "$pid" "$url"
      kill "$pid"; wait "$pid" 2>/dev/null || true
      ;;
    tui)
      tmux new-session -d -s "$session" -x 160 -y 48 \
        "target/release/loopdbg proxy --listen 127.0.0.1:8931 --upstream $upstream"
      for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8931) 2>/dev/null && break; sleep 0.1; done
      pid=$(pgrep -f "^target/release/loopdbg proxy --listen 127.0.0.1:8931" | head -n 1)
      soak_proxy "proxy with its screen" "$pid" "http://127.0.0.1:8931"
      tmux kill-session -t "$session"
      ;;
    follow)
      # A log of FOLLOW_MB, appended to the followed file a tenth at a time.
      events=$((follow_mb * 1024 * 1024 / 545))
      target/release/examples/gen_claude_log "$work/whole.jsonl" "$events" > /dev/null
      split -n l/10 -d "$work/whole.jsonl" "$work/part."
      log=$work/followed.jsonl
      cat "$work/part.00" > "$log"
      tmux new-session -d -s "$session" -x 120 -y 40 "target/release/loopdbg $log --follow --follow-memory $follow_memory"
      sleep 1
      pid=$(pgrep -f -- "^target/release/loopdbg $log --follow" | head -n 1)
      settled "$pid"
      echo "follow: log MB, VmRSS MB"
      echo "  $(( $(stat -c %s "$log") >> 20 )) $(rss "$pid")"
      for k in 01 02 03 04 05 06 07 08 09; do
        cat "$work/part.$k" >> "$log"
        settled "$pid"
        echo "  $(( $(stat -c %s "$log") >> 20 )) $(rss "$pid")"
      done
      # A follower past its memory lets the whole go once the judge's
      # thread ends (after its rest, a multiple of its last judgement).
      sleep 60
      echo "  a minute later $(rss "$pid")"
      echo "  peak $(hwm "$pid") MB"
      tmux kill-session -t "$session"
      ;;
  esac
done
