#!/usr/bin/env bash
# Times `loopdbg check` on generated JSON Lines files (default 100 MB) in
# each provider's format — Anthropic, OpenAI Chat, Responses, Gemini,
# Bedrock Converse — against jq doing the same unanswered-call check on the
# same file, side by side in one run, and against reading the file with
# serde_json alone. Needs jq and hyperfine (Debian packages).
# Usage: benches/check_vs_jq.sh [MEGABYTES] [FORMAT...]
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-100}
shift || true
formats=("$@")
[ ${#formats[@]} -gt 0 ] || formats=(anthropic openai responses gemini bedrock)
cargo build --release --quiet --bin loopdbg --example gen_jsonl --example serde_only

# The same check in jq, per format: the ids called minus the ids answered.
jq_check() {
  case "$1" in
    anthropic) echo 'select(.messages) | [.messages[] | .content | arrays | .[] | select(.type=="tool_use") | .id] as $u | [.messages[] | .content | arrays | .[] | select(.type=="tool_result") | .tool_use_id] as $r | ($u - $r) | select(length > 0)' ;;
    openai) echo 'select(.messages) | [.messages[] | .tool_calls? // [] | .[] | .id] as $u | [.messages[] | select(.role=="tool") | .tool_call_id] as $r | ($u - $r) | select(length > 0)' ;;
    responses) echo 'select(.input) | [.input[] | select(.type=="function_call") | .call_id] as $u | [.input[] | select(.type=="function_call_output") | .call_id] as $r | ($u - $r) | select(length > 0)' ;;
    gemini) echo 'select(.contents) | [.contents[] | .parts[] | .functionCall.id? // empty] as $u | [.contents[] | .parts[] | .functionResponse.id? // empty] as $r | ($u - $r) | select(length > 0)' ;;
    bedrock) echo 'select(.messages) | [.messages[] | .content[] | .toolUse.toolUseId? // empty] as $u | [.messages[] | .content[] | .toolResult.toolUseId? // empty] as $r | ($u - $r) | select(length > 0)' ;;
  esac
}

for format in "${formats[@]}"; do
  file=${TMPDIR:-/tmp}/loopdbg-bench-$format-$mb.jsonl
  [ -f "$file" ] || target/release/examples/gen_jsonl "$file" "$mb" "$format"
  check=$(jq_check "$format")
  echo "== $format ($(du -m "$file" | cut -f1) MB)"
  # Both must agree on the number of conversations with an unanswered call.
  echo "conversations with an unanswered call:"
  echo "  jq:      $(jq -c "$check" "$file" | wc -l)"
  echo "  loopdbg: $(target/release/loopdbg check "$file" --format json | jq '[.files[].results[] | select(any(.findings[]; .kind == "unanswered_call"))] | length')"
  hyperfine --warmup 1 --runs 3 --ignore-failure --export-json "${TMPDIR:-/tmp}/loopdbg-bench-$format.json" \
    "target/release/examples/serde_only $file" \
    "target/release/loopdbg check $file --format json" \
    "jq -c '$check' $file"
  # The ratio of the means, jq over loopdbg.
  jq -r '.results | "jq / loopdbg: \((.[2].mean / .[1].mean) * 100 | round / 100)x"' "${TMPDIR:-/tmp}/loopdbg-bench-$format.json"
  /usr/bin/time -f "peak memory, loopdbg check: %M KB" target/release/loopdbg check "$file" --format json > /dev/null || true
done
