#!/usr/bin/env bash
# Times `loopdbg check` on a generated JSON Lines file (default 100 MB)
# against jq doing the same unanswered-call check and against reading the
# file with serde_json alone. Needs jq and hyperfine (Debian packages).
# Usage: benches/check_vs_jq.sh [MEGABYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-100}
file=${TMPDIR:-/tmp}/loopdbg-bench-$mb.jsonl
cargo build --release --quiet --bin loopdbg --example gen_jsonl --example serde_only
[ -f "$file" ] || target/release/examples/gen_jsonl "$file" "$mb"
jq_check='select(.messages) | [.messages[] | .content | arrays | .[] | select(.type=="tool_use") | .id] as $u | [.messages[] | .content | arrays | .[] | select(.type=="tool_result") | .tool_use_id] as $r | ($u - $r) | select(length > 0)'
# The three must agree on the number of conversations with an unanswered call.
echo "conversations with an unanswered call:"
echo "  jq:      $(jq -c "$jq_check" "$file" | wc -l)"
echo "  loopdbg: $(target/release/loopdbg check "$file" --format json | jq '[.files[].results[] | select(any(.findings[]; .kind == "unanswered_call"))] | length')"
hyperfine --warmup 1 --runs 3 --ignore-failure \
  "target/release/examples/serde_only $file" \
  "target/release/loopdbg check $file --format json" \
  "jq -c '$jq_check' $file"
echo "peak memory (max resident KB):"
/usr/bin/time -f "  loopdbg check: %M KB" target/release/loopdbg check "$file" --format json > /dev/null || true
/usr/bin/time -f "  serde_json only: %M KB" target/release/examples/serde_only "$file" > /dev/null
