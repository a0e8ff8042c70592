#!/usr/bin/env bash
# `loopdbg doctor --scan` over years of sessions (issue 62, item 3): a home
# of SESSIONS sessions, about 2 MB each on average, across Claude Code,
# Codex, Gemini CLI and opencode (benches/gen_home.py says the shapes),
# beside cat reading the same bytes, and cozempic's and sesslint's scans
# of the part they read (Claude Code), from PyPI.
#
# Measured, one run each (a 20 GB run takes minutes; hyperfine's repeats
# would take an hour):
#   1. cat of every session file, the page cache dropped first (as cold as
#      the machine allows; needs root, else said and skipped);
#   2. the first scan, the page cache dropped first, no cache of verdicts;
#   3. the same with the files in the page cache (cat just read them), so
#      the scan's own speed shows;
#   4. a scan that writes the verdict cache, then one with nothing changed;
#   5. the same after one session in 100 grew by a turn (re-read, and only
#      those);
#   6. cozempic doctor and sesslint scan over two of Claude Code's forty
#      project folders (about 0.6 GB: both read at MB/s to tens of MB/s,
#      and sesslint stops at 1 GB unless told otherwise), beside
#      `loopdbg doctor --scan` over the same two.
# Usage: [FROM=N] benches/doctor_scan_home.sh [SESSIONS]   (default 10000,
# ~20 GB of disk under ${TMPDIR:-/tmp}; FROM=5 starts at step 5, with the
# cache step 4 left)
set -euo pipefail
cd "$(dirname "$0")/.."
sessions=${1:-10000}
home=${TMPDIR:-/tmp}/loopdbg-bench-home-$sessions
cargo build --release --quiet --bin loopdbg
[ -d "$home/.claude" ] || python3 benches/gen_home.py "$home" "$sessions"
scanners=target/bench-venv-scanners
if [ ! -x "$scanners/bin/sesslint" ]; then
  python3 -m venv "$scanners"
  "$scanners/bin/pip" install --quiet cozempic==1.8.39 sesslint==0.2.0
fi
files=$(find "$home" -type f -not -path "$home/.cache/*" | wc -l)
echo "home: $(du -sh --exclude=.cache "$home" | cut -f1) in $files files"
# The agents' variables cleared, so each store is found under HOME.
run=(env HOME="$home" XDG_CACHE_HOME="$home/.cache" CLAUDE_CONFIG_DIR= CODEX_HOME= GEMINI_CLI_HOME=
  COPILOT_HOME= XDG_CONFIG_HOME= XDG_DATA_HOME= COZEMPIC_NO_GLOBAL_INIT=1)
timed() { # LABEL COMMAND...: wall seconds and peak memory
  local label=$1; shift
  /usr/bin/time -f "$label: %e s, %M KB peak" "$@" > /dev/null 2> >(tail -n 1 >&2) || true
  wait
}
drop() {
  sync
  if ! echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
    echo "(the page cache could not be dropped: not root; the next line is warm)"
  fi
}
all_files() { find "$home" -type f -not -path "$home/.cache/*" -print0 | xargs -0 cat; }
export -f all_files; export home
scan="target/release/loopdbg doctor --scan"
if [ "${FROM:-1}" -le 4 ]; then
rm -rf "$home/.cache"
drop; timed "1. cat, cold" bash -c all_files
drop; timed "2. scan --no-cache, cold" "${run[@]}" $scan --no-cache
timed "   cat, warm" bash -c all_files
timed "3. scan --no-cache, warm" "${run[@]}" $scan --no-cache
timed "4. scan writing the cache" "${run[@]}" $scan
timed "   scan, nothing changed" "${run[@]}" $scan
"${run[@]}" $scan | tail -n 4 || true # it exits 1: some sessions are refused
fi
# One session in a hundred grows by a turn (a copy of its last line).
grown=0
while IFS= read -r -d '' f; do
  tail -n 1 "$f" >> "$f"; grown=$((grown + 1))
done < <(find "$home/.claude" "$home/.codex" "$home/.gemini" -type f -name '*.jsonl' -print0 | awk 'BEGIN{RS="\0"; ORS="\0"} NR % 100 == 0')
timed "5. scan after $grown sessions grew" "${run[@]}" $scan
# The peers over a home of two Claude Code project folders (hard links:
# the same files, no copy).
sub=$home-two
rm -rf "$sub"; mkdir -p "$sub/.claude/projects"
for p in 00 01; do cp -al "$home/.claude/projects/-home-dev-project$p" "$sub/.claude/projects/"; done
echo "two folders: $(du -shL "$sub/.claude/projects" | cut -f1) in $(find "$sub/.claude/projects" -type f | wc -l) files"
subrun=(env HOME="$sub" XDG_CACHE_HOME="$sub/.cache" CLAUDE_CONFIG_DIR= CODEX_HOME= GEMINI_CLI_HOME=
  COPILOT_HOME= XDG_CONFIG_HOME= XDG_DATA_HOME= COZEMPIC_NO_GLOBAL_INIT=1)
timed "6. loopdbg doctor --scan --no-cache (two folders)" "${subrun[@]}" $scan --no-cache
timed "   cozempic doctor (two folders)" "${subrun[@]}" "$scanners/bin/cozempic" doctor
/usr/bin/time -f "   sesslint scan (two folders): %e s, %M KB peak" -o "$sub.time" \
  env HOME="$sub" "$scanners/bin/sesslint" scan "$sub/.claude/projects" --no-color \
  --max-files 1000000 --max-bytes 1000000000000 > "$sub.sesslint" 2>&1 || true
cat "$sub.time"
echo "   sesslint's verdicts: $(grep -o '^ *\[[A-Z]*\]' "$sub.sesslint" | sort | uniq -c | tr -s ' \n' ' ')"
rm -f "$sub.time" "$sub.sesslint"
rm -rf "$sub"
