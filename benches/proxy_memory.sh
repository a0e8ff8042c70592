#!/usr/bin/env bash
# The proxy's peak memory (VmHWM) for one large request body, under
# --on-invalid forward and block, with and without --capture (issue 23,
# item 12). A Python upstream reads the body and answers a small message.
# Usage: benches/proxy_memory.sh [MEGABYTES]   (default 250)
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-250}
cargo build --release --quiet --bin loopdbg
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
python3 - "$work/body.json" "$mb" <<'PY'
import json, sys
text = "x" * (int(sys.argv[2]) * 1024 * 1024)
json.dump({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": text}]}, open(sys.argv[1], "w"))
PY
cat > "$work/upstream.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers["content-length"])
        while n > 0:
            n -= len(self.rfile.read(min(n, 1 << 20)))
        body = b'{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","model":"m","usage":{"input_tokens":1,"output_tokens":1}}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$work/upstream.py" 8811 &
sleep 0.5
for policy in forward block; do
  for capture in "" "--capture $work/cap.jsonl"; do
    rm -f "$work/cap.jsonl"
    # shellcheck disable=SC2086
    target/release/loopdbg proxy --upstream http://127.0.0.1:8811 --listen 127.0.0.1:8812 \
      --no-tui --on-invalid $policy $capture > /dev/null 2>&1 &
    proxy=$!
    sleep 0.5
    curl -s -o /dev/null -H 'content-type: application/json' -H 'x-api-key: sk-bench' \
      --data-binary @"$work/body.json" http://127.0.0.1:8812/v1/messages
    sleep 1
    echo "$policy ${capture:+(capture)}: $(awk '/VmHWM/ {print $2, $3}' /proc/$proxy/status) peak for a $mb MB body"
    kill $proxy; wait $proxy 2>/dev/null || true
  done
done
