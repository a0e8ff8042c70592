#!/usr/bin/env bash
# `loopdbg doctor --scan` over an opencode database of about 1.1 GB
# (benches/opencode_store.py: SESSIONS sessions of TURNS completed bash
# calls of 5 KB output each; every 50th ends on a call left `running`),
# beside sqlite3 piped into jq finding the running calls (the floor: every
# part read and parsed, nothing paired or judged). Needs sqlite3, jq and
# /usr/bin/time (Debian packages).
# Usage: benches/opencode_scan.sh [SESSIONS] [TURNS]
set -euo pipefail
cd "$(dirname "$0")/.."
sessions=${1:-2000}
turns=${2:-100}
home=${TMPDIR:-/tmp}/loopdbg-bench-opencode-$sessions-$turns
db=$home/.local/share/opencode/opencode.db
cargo build --release --quiet --bin loopdbg
if [ ! -f "$db" ]; then
  mkdir -p "$(dirname "$db")"
  python3 benches/opencode_store.py "$db" "$sessions" "$turns" 5000 >/dev/null
fi
echo "database: $(du -sh "$db" | cut -f1), $sessions sessions"
for run in 1 2 3; do
  /usr/bin/time -f "loopdbg doctor --scan: %e s, %M KB peak" \
    env -i PATH="$PATH" HOME="$home" target/release/loopdbg doctor --scan >/dev/null
  /usr/bin/time -f "sqlite3 | jq: %e s, %M KB peak" bash -c \
    "sqlite3 -readonly '$db' 'select data from part' | jq -c 'select(.state.status==\"running\") | .callID' >/dev/null"
done
