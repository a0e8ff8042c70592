#!/usr/bin/env bash
# `loopdbg check` and the replay's first frame on a generated Claude Code
# log (100,000 events, about 50 MB) against agx-tui 0.3 (`cargo install
# agx-tui`), measured side by side in one run. Needs hyperfine (Debian
# package) and python3 for the first-frame timer.
# Usage: benches/check_vs_agx.sh [EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-100000}
file=${TMPDIR:-/tmp}/loopdbg-bench-claude-$events.jsonl
cargo build --release --quiet --bin loopdbg --example gen_claude_log
# Generated again whenever the generator is newer than the file.
[ "$file" -nt target/release/examples/gen_claude_log ] || target/release/examples/gen_claude_log "$file" "$events"
command -v agx >/dev/null || { echo "agx not found: cargo install agx-tui --version '^0.3'" >&2; exit 1; }
ls -l "$file"
hyperfine --warmup 1 --runs 5 --ignore-failure \
  "target/release/loopdbg check $file" \
  "agx $file --summary --no-cost"
echo "peak memory (max resident KB):"
/usr/bin/time -f "  loopdbg check: %M KB" target/release/loopdbg check "$file" > /dev/null || true
/usr/bin/time -f "  agx --summary: %M KB" agx "$file" --summary --no-cost > /dev/null
echo "first frame in a 120x40 pseudo-terminal (median of 5):"
echo "  loopdbg: $(python3 benches/first_frame.py 5 round -- target/release/loopdbg "$file")"
echo "  agx:     $(python3 benches/first_frame.py 5 conversation -- agx "$file")"
