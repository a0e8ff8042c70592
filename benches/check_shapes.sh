#!/usr/bin/env bash
# `loopdbg check` against agx-tui 0.3 (`cargo install agx-tui --version
# '^0.3'`) on every Claude Code log shape benches/gen_claude_shapes.py
# writes (one long conversation, many short sessions, many rewinds, large
# tool results, many sub-agents), side by side in one run: time (hyperfine,
# mean of 5 after a warm-up; then RUNS runs of each in turn with
# benches/interleaved.py, which a machine whose speed drifts between runs
# cannot tilt to one side), peak memory (/usr/bin/time), and the first
# frame of each debugger in a 120x40 pseudo-terminal (median of 5).
# A folder of sessions is `loopdbg check FOLDER/*.jsonl` against
# `agx corpus FOLDER`. Needs hyperfine and python3.
# Usage: benches/check_shapes.sh [SCALE] [RUNS]  (RUNS: 20 unless given)
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-1}
runs=${2:-20}
dir=${TMPDIR:-/tmp}/loopdbg-shapes-$scale
command -v agx >/dev/null || { echo "agx not found: cargo install agx-tui --version '^0.3'" >&2; exit 1; }
cargo build --release --quiet --bin loopdbg
bin=$PWD/target/release/loopdbg
[ -d "$dir" ] || python3 benches/gen_claude_shapes.py "$dir" "$scale"
for shape in long sessions rewinds large subagents; do
  if [ "$shape" = sessions ]; then
    ours="$bin check $dir/sessions/*.jsonl"; theirs="agx corpus $dir/sessions"
  else
    ours="$bin check $dir/$shape.jsonl"; theirs="agx $dir/$shape.jsonl --summary --no-cost"
  fi
  echo "== $shape ($(du -sh "$dir/$shape"* | cut -f1 | head -1))"
  hyperfine --warmup 1 --runs 5 --ignore-failure --style basic --export-markdown /dev/null "$ours" "$theirs" 2>&1 \
    | grep -E "Time \(mean|±|faster|Benchmark" || true
  python3 benches/interleaved.py "$runs" "$ours" "$theirs"
  /usr/bin/time -f "  peak: loopdbg %M KB" bash -c "$ours > /dev/null" || true
  /usr/bin/time -f "  peak: agx     %M KB" bash -c "$theirs > /dev/null" || true
  if [ "$shape" != sessions ]; then
    echo "  first frame: loopdbg $(python3 benches/first_frame.py 5 round -- "$bin" "$dir/$shape.jsonl"), agx $(python3 benches/first_frame.py 5 conversation -- agx "$dir/$shape.jsonl")"
  fi
done
