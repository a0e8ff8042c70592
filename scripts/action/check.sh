#!/usr/bin/env bash
# The check of loopdbg's GitHub Action (action.yml), runnable anywhere:
# tests/action.rs runs it on the project's fixtures.
#
#   LOOPDBG_FILES    patterns, one a line (`**` reaches into folders)
#   LOOPDBG_FAIL_ON  refusal (default) | warning (check --strict) | never
#   LOOPDBG_SARIF    where the SARIF report goes (default loopdbg.sarif)
#   LOOPDBG_DEFER_EXIT=true  exit 0 and leave the verdict to a later step
#                    (the action uploads the report first)
#   LOOPDBG          the binary (default: loopdbg on PATH)
#
# Writes GitHub's annotations to standard output (`check --format github`),
# the text report to $GITHUB_STEP_SUMMARY, and `exit-code` and `sarif` to
# $GITHUB_OUTPUT, when those are set. Exits as `loopdbg check` does: 0
# clean, 1 refused (or warned, with fail-on: warning), 2 unreadable or
# nothing matched.
set -uo pipefail
shopt -s globstar nullglob

loopdbg=${LOOPDBG:-loopdbg}
fail_on=${LOOPDBG_FAIL_ON:-refusal}
sarif=${LOOPDBG_SARIF:-loopdbg.sarif}

output() { [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1=$2" >> "$GITHUB_OUTPUT"; return 0; }
finish() {
  output exit-code "$1"
  if [ "${LOOPDBG_DEFER_EXIT:-}" = true ] || [ "$fail_on" = never ]; then exit 0; fi
  exit "$1"
}

strict=()
case $fail_on in
  refusal | never) ;;
  warning) strict=(--strict) ;;
  *) echo "::error title=loopdbg::fail-on is refusal, warning or never, not '$fail_on'"; finish 2 ;;
esac

# Each line a pattern; a pattern that matches nothing is said, as a typo
# in a workflow should be, not passed over as a clean check.
files=()
unmatched=()
while IFS= read -r pattern || [ -n "$pattern" ]; do
  pattern=${pattern#"${pattern%%[![:space:]]*}"}
  pattern=${pattern%"${pattern##*[![:space:]]}"}
  [ -z "$pattern" ] && continue
  # Expanded as a glob only: split on nothing.
  IFS= matched=($pattern)
  if [ ${#matched[@]} -eq 0 ] || { [ ${#matched[@]} -eq 1 ] && [ ! -e "${matched[0]}" ]; }; then
    unmatched+=("$pattern")
  else
    files+=("${matched[@]}")
  fi
done <<< "${LOOPDBG_FILES:-}"
for pattern in "${unmatched[@]}"; do
  echo "::error title=loopdbg::no file matches '$pattern'"
done
if [ ${#unmatched[@]} -gt 0 ] || [ ${#files[@]} -eq 0 ]; then
  [ ${#files[@]} -eq 0 ] && [ ${#unmatched[@]} -eq 0 ] && echo "::error title=loopdbg::the files input names no pattern"
  finish 2
fi

if ! command -v "$loopdbg" > /dev/null 2>&1; then
  echo "::error title=loopdbg::$loopdbg is not installed (the action's install step installs it)"
  finish 2
fi

# The annotations, and the verdict.
"$loopdbg" check "${strict[@]}" --format github -- "${files[@]}"
status=$?
# The report for code scanning, written whatever the verdict.
if "$loopdbg" check "${strict[@]}" --format sarif -- "${files[@]}" > "$sarif.tmp"; [ -s "$sarif.tmp" ]; then
  mv "$sarif.tmp" "$sarif"
  output sarif "$sarif"
else
  rm -f "$sarif.tmp"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    echo '### loopdbg check'
    echo
    echo '```'
    NO_COLOR=1 "$loopdbg" check "${strict[@]}" -- "${files[@]}" 2>&1
    echo '```'
  } >> "$GITHUB_STEP_SUMMARY"
fi
finish "$status"
