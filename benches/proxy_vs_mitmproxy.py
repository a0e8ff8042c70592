"""What a proxy costs a real agent: the Anthropic Python SDK against the
fake provider (crates/fake) on loopback, three ways in the same run:
direct, through `loopdbg proxy` (checking and writing a capture), and
through mitmproxy's `mitmdump` in reverse mode with `stream_large_bodies`
set, so that it streams answers instead of buffering them.

Each round takes the three ways in a shuffled order (fixed seed), one
client per way with its own connection pool, as an agent keeps one. Two
measures per way:

- one request: `messages.create` of the second trip of a loop (two calls
  answered), not streamed;
- first event of a streamed answer paced as a model writes it (first event
  after 20 ms, then one every 2 ms), the whole stream read after it.

Printed: each way's median and the median of what it adds over direct,
with a 95% bootstrap interval. With OTLP=1 the loopdbg proxy also sends
every exchange as a span (`--otlp`) to a collector on loopback (a small
OTLP/HTTP sink in a process of its own that answers 200 and counts), so
the cost of `--otlp` to the agent is in the same table. Run through benches/proxy_vs_mitmproxy.sh,
which builds the binaries and installs the SDK and mitmproxy in a venv.
"""

import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import anthropic

ROUNDS = int(os.environ.get("ROUNDS", "300"))
OTLP = os.environ.get("OTLP") == "1"

# An OTLP/HTTP collector stand-in: takes every POST, answers 200, and
# says how many it took when it is ended.
SINK = r"""
import http.server, signal, sys
taken = 0
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global taken
        self.rfile.read(int(self.headers.get("content-length", 0)))
        taken += 1
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
def stop(*_):
    print(f"collector: {taken} export request(s) taken", file=sys.stderr, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
server.serve_forever()
"""
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "target"))
LOOPDBG = os.environ.get("LOOPDBG", os.path.join(TARGET, "release", "loopdbg"))
FAKE = os.path.join(TARGET, "release", "loopdbg-fake")
MITMDUMP = os.environ.get("MITMDUMP", "mitmdump")

TOOLS = [
    {"name": "get_weather", "description": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "get_fx_rate", "description": "fx", "input_schema": {"type": "object", "properties": {"pair": {"type": "string"}}}},
]
SECOND_TRIP = [
    {"role": "user", "content": "weather and fx?"},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "北京"}},
        {"type": "tool_use", "id": "toolu_f1", "name": "get_fx_rate", "input": {"pair": "USD/CNY"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_w1", "content": "{\"temp_c\": 18}"},
        {"type": "tool_result", "tool_use_id": "toolu_f1", "content": "{\"rate\": 7.12}"},
    ]},
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, process, name):
    for _ in range(600):
        if process.poll() is not None:
            sys.exit(f"{name} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{name} did not start listening on {port}")


def one_request(client):
    began = time.perf_counter()
    client.messages.create(model="claude-bench", max_tokens=256, tools=TOOLS, messages=SECOND_TRIP)
    return time.perf_counter() - began


def first_event(client):
    began = time.perf_counter()
    first = None
    stream = client.messages.create(
        model="claude-bench", max_tokens=256, tools=TOOLS, stream=True,
        messages=[{"role": "user", "content": "weather and fx?"}],
        extra_headers={"x-fake-pace-ms": "20,2"},
    )
    for _ in stream:
        if first is None:
            first = time.perf_counter() - began
    return first


def bootstrap_median_diff(a, b, rng, n=2000):
    """95% interval of median(a) - median(b), resampling both."""
    diffs = sorted(
        statistics.median(rng.choices(a, k=len(a))) - statistics.median(rng.choices(b, k=len(b)))
        for _ in range(n)
    )
    return diffs[int(0.025 * n)], diffs[int(0.975 * n)]


def main():
    children = []
    try:
        fake = subprocess.Popen([FAKE], stdout=subprocess.PIPE, text=True)
        children.append(fake)
        upstream = fake.stdout.readline().strip()
        capture = os.path.join(tempfile.mkdtemp(), "bench.jsonl")
        loopdbg_port = free_port()
        extra = []
        if OTLP:
            sink_port = free_port()
            sink = subprocess.Popen([sys.executable, "-c", SINK, str(sink_port)])
            children.append(sink)
            wait_for(sink_port, sink, "the collector")
            extra = ["--otlp", f"http://127.0.0.1:{sink_port}"]
        loopdbg = subprocess.Popen(
            [LOOPDBG, "proxy", "--upstream", upstream, "--listen", f"127.0.0.1:{loopdbg_port}",
             "--capture", capture, "--no-tui", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(loopdbg)
        mitm_port = free_port()
        mitm = subprocess.Popen(
            [MITMDUMP, "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1",
             "--listen-port", str(mitm_port), "--set", "stream_large_bodies=1",
             "--set", "flow_detail=0", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(mitm)
        wait_for(loopdbg_port, loopdbg, "loopdbg proxy")
        wait_for(mitm_port, mitm, "mitmdump")
        ways = {
            "direct": upstream,
            "loopdbg proxy": f"http://127.0.0.1:{loopdbg_port}",
            "mitmproxy": f"http://127.0.0.1:{mitm_port}",
        }
        clients = {w: anthropic.Anthropic(base_url=u, api_key="sk-bench", max_retries=0) for w, u in ways.items()}
        measures = {"one request": one_request, "first event, paced": first_event}
        # Warm-up: connections, caches, the JIT-free paths of each way.
        for client in clients.values():
            for measure in measures.values():
                for _ in range(10):
                    measure(client)
        rng = random.Random(20261201)
        times = {m: {w: [] for w in ways} for m in measures}
        for _ in range(ROUNDS):
            for m, measure in measures.items():
                order = list(ways)
                rng.shuffle(order)
                for w in order:
                    times[m][w].append(measure(clients[w]))
        print(f"{ROUNDS} rounds, ways shuffled each round; Anthropic SDK {anthropic.__version__}")
        print()
        print("| measure | direct: median (IQR) | loopdbg proxy: added (95%) | mitmproxy: added (95%) | mitmproxy / loopdbg |")
        print("|---|---|---|---|---|")
        for m in measures:
            direct = times[m]["direct"]
            q = statistics.quantiles(direct, n=4)
            row = [m, f"{statistics.median(direct) * 1000:.2f} ms ({q[0] * 1000:.2f}–{q[2] * 1000:.2f})"]
            added = {}
            for w in ("loopdbg proxy", "mitmproxy"):
                d = statistics.median(times[m][w]) - statistics.median(direct)
                lo, hi = bootstrap_median_diff(times[m][w], direct, rng)
                added[w] = d
                row.append(f"{d * 1000:+.2f} ms ({lo * 1000:+.2f} to {hi * 1000:+.2f})")
            if added["loopdbg proxy"] > 0:
                row.append(f"{added['mitmproxy'] / added['loopdbg proxy']:.1f}×")
            else:
                row.append("loopdbg adds nothing measurable")
            print("| " + " | ".join(row) + " |")
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
