#!/usr/bin/env bash
# Instructions `loopdbg check` executes (valgrind's callgrind, one thread)
# on 10 MB of each provider's JSON Lines and a Claude Code log of 10,000
# events, for two builds side by side. On a shared 2-core machine wall time
# moves ±15 % between runs (hyperfine in check_vs_jq.sh says so); the
# instruction count moves well under 1 %, so a before/after of a refactor
# is read here, and its speed against jq in check_vs_jq.sh.
# Usage: benches/check_instructions.sh OLD_BINARY [NEW_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: benches/check_instructions.sh OLD_BINARY [NEW_BINARY]}
new=${2:-target/release/loopdbg}
cargo build --release --quiet --bin loopdbg --example gen_jsonl --example gen_claude_log
dir=${TMPDIR:-/tmp}
for f in anthropic openai responses gemini bedrock; do
  [ -f "$dir/loopdbg-ir-$f.jsonl" ] || target/release/examples/gen_jsonl "$dir/loopdbg-ir-$f.jsonl" 10 "$f" >/dev/null
done
[ -f "$dir/loopdbg-ir-claude.jsonl" ] || target/release/examples/gen_claude_log "$dir/loopdbg-ir-claude.jsonl" 10000 >/dev/null
count() {
  RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$dir/loopdbg-ir.err" || true
  grep -o 'Collected : [0-9]*' "$dir/loopdbg-ir.err" | awk '{print $3}'
}
printf '%-10s %15s %15s %8s\n' input old new change
for f in anthropic openai responses gemini bedrock claude; do
  a=$(count "$old" check "$dir/loopdbg-ir-$f.jsonl" --format json)
  b=$(count "$new" check "$dir/loopdbg-ir-$f.jsonl" --format json)
  printf '%-10s %15s %15s %7.2f%%\n' "$f" "$a" "$b" "$(echo "($b - $a) * 100 / $a" | bc -l)"
done
