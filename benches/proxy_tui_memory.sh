#!/usr/bin/env bash
# The TUI proxy's memory over a long agent loop (issue 36): 1,000 exchanges
# whose requests grow as an agent's do (request k carries k earlier turns
# of ~1 KB each), through `loopdbg proxy` with its screen on (in tmux), to a
# Python upstream. The screen shows the newest looping exchange and a
# count, so memory should not grow with the exchanges seen.
# Usage: benches/proxy_tui_memory.sh [EXCHANGES] [BINARY]
# (BINARY defaults to target/release/loopdbg; give an older build to compare.)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
bin=${2:-target/release/loopdbg}
[ "$bin" != target/release/loopdbg ] || cargo build --release --quiet --bin loopdbg
work=$(mktemp -d)
session=loopdbg-mem-$$
trap 'tmux kill-session -t $session 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/upstream.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = b'{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_x","name":"f","input":{}}],"stop_reason":"tool_use","model":"m","usage":{"input_tokens":1,"output_tokens":1}}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
cat > "$work/agent.py" <<'PY'
import http.client, json, sys
n = int(sys.argv[1])
conn = http.client.HTTPConnection("127.0.0.1", 8822)
messages = [{"role": "user", "content": "go"}]
for k in range(n):
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": messages,
                       "tools": [{"name": "f", "input_schema": {"type": "object"}}]})
    conn.request("POST", "/v1/messages", body, {"content-type": "application/json", "x-api-key": "sk-bench"})
    conn.getresponse().read()
    messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "f", "input": {}}]})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "y" * 1000}]})
PY
python3 "$work/upstream.py" 8821 &
tmux new-session -d -s "$session" -x 160 -y 48 \
  "$bin proxy --upstream http://127.0.0.1:8821 --listen 127.0.0.1:8822"
for _ in $(seq 50); do
  (exec 3<>/dev/tcp/127.0.0.1/8822) 2>/dev/null && break
  sleep 0.1
done
proxy=$(pgrep -f "^$bin proxy --upstream http://127.0.0.1:8821" | head -1)
python3 "$work/agent.py" "$n"
echo "$bin: $n exchanges (the last request $(( n * 2 / 1000 )) MB): $(awk '/VmHWM/ {print $2, $3}' /proc/$proxy/status) peak, $(awk '/VmRSS/ {print $2, $3}' /proc/$proxy/status) at the end"
