#!/usr/bin/env bash
# Issue 59's goal, measured: no input under 1 MB takes over 1 GB or 10 s.
# Generates the round's hostile inputs (each under 1 MB) and the worst
# ones still read (a 1 MB .json.gz at 28× of short messages), then prints
# each one's size, the peak RSS and wall time of `loopdbg check`, and how
# it ended, for one or two builds side by side (GNU time's %M).
# Usage: benches/hostile_inputs.sh [OLD_BINARY] [NEW_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
new=${2:-target/release/loopdbg}
old=${1:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import gzip, io, json, random, sys
d = sys.argv[1]
random.seed(1)
def members(path, *parts):
    with open(path, "wb") as f:
        for data, times in parts:
            f.write(gzip.compress(data, 9) * times)
zeros = b"0," * (1 << 19)
members(f"{d}/bomb.json.gz", (b'{"messages":[', 1), (zeros, 100), (b"0]}", 1))
members(f"{d}/values.json.gz", (b'{"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":[', 1), (zeros, 15), (b"0]}]}", 1))
json.dump({"trajectory": [], "info": {}, "history": [{"role": "system", "content": "s"},
    {"role": "tool", "content": "x" * 100_000, "tool_call_ids": [f"c{i}" for i in range(20_000)]}]},
    open(f"{d}/ids.traj", "w"))
text = '{"type":"init","session_id":"s","model":"gemini-2.5-pro"}\n{"type":"message","role":"user","content":"hi"}\n'
event = '{"type":"message","role":"assistant","content":"%s","delta":true}\n' % ("w" * 40)
while len(text) < 950_000:
    text += event
open(f"{d}/stream.jsonl", "w").write(text)
def near(path, head, piece, tail, target=1_000_000):
    buf = io.BytesIO(); f = gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9)
    f.write(head.encode())
    while buf.tell() < target - 20_000:
        f.write(piece().encode())
    f.write(tail.encode()); f.close()
    open(path, "wb").write(buf.getvalue())
r = lambda k: "".join(random.choice("ab") for _ in range(k))
near(f"{d}/near-chat.json.gz", '{"model":"gpt-4o","messages":[', lambda: '{"role":"user","content":"%s"},' % r(5), '{"role":"user","content":"x"}]}')
near(f"{d}/near-lines.jsonl.gz", "", lambda: '{"model":"gpt-4o","messages":[%s]}\n' % ",".join('{"role":"user","content":"%s"}' % r(5) for _ in range(2000)), "")
PY
printf '%-20s %9s  %-28s %-28s\n' input bytes "${old:+old: MB s exit}" "new: MB s exit"
for f in "$dir"/*; do
  row=""
  for bin in $old $new; do
    /usr/bin/time -f '%M %e' -o "$dir/.t" timeout 60 "$bin" check "$f" >/dev/null 2>&1 && code=0 || code=$?
    read -r kb s < <(tail -1 "$dir/.t")
    row="$row$(printf '%-28s' "$((kb / 1024)) MB ${s} s exit $code")"
  done
  printf '%-20s %9s  %s\n' "$(basename "$f")" "$(stat -c %s "$f")" "$row"
done
