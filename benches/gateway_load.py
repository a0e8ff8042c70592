"""The proxy as a team's gateway, under load, beside LiteLLM's proxy and
mitmproxy forwarding the same traffic (issue 62, item 1). Run through
benches/gateway_load.sh, which builds the binaries and installs the peers.

The upstream is the fake provider (crates/fake) answering Chat Completions
streamed, paced as a model writes: its first event after FIRST ms, each
next one 20 ms later (`loopdbg-fake --pace`). The history is a real loop's:
rounds of an assistant calling get_weather and the tool's ~1 KB answer,
as many as SIZE bytes hold, all paired (nothing is blocked).

Each cell (a history size and a number of agents) runs every way in a
shuffled order (fixed seed):

- direct to the fake;
- `loopdbg proxy --no-tui --on-invalid block` (every request judged before
  it leaves);
- `loopdbg proxy --no-tui --on-invalid forward` (judged once the agent has
  its answer, off the request's path);
- LiteLLM's proxy (`litellm --config`, one worker), no guardrail;
- mitmproxy's `mitmdump` in reverse mode, streaming bodies.

The load generator (`loopdbg-load`, crates/fake/src/bin) runs AGENTS agents
in a closed loop on one thread; each agent's first request opens its
connection and is not counted. Per way: requests/s, the p50 and p99 of the
time to the answer's first byte and what each adds over direct's, what
the way held a request (`held`: the p50 and p99 of the time from the
client sending it to the fake having it whole, over direct's; the fake's
pacing does not enter it, so it is the finer measure), and the
gateway's peak resident memory during the cell (VmHWM, reset before each
cell through /proc/PID/clear_refs; LiteLLM's summed over its processes)
and its CPU time per request.

Environment: SPREAD_MS (default 0: every agent starts at once; see
loopdbg-load --spread), PIN (1: the gateway alone on the second core),
TRANSIT (1: each way's transit percentiles printed under its row), SIZES (bytes, comma-separated; default 20480,2097152),
AGENTS (default 1,16,64,256), WAYS (default all five: direct, loopdbg, loopdbg-forward, litellm,
mitmproxy), COUNT (requests
counted per cell, default 64, at least 4 per agent), GROW (default 1: each
agent's history is its own and grows by a call and its result at every
request, as an agent's does; 0 sends the same body every time, as the
runs before 2026-12-07 did), FORMAT (chat, the default: Chat Completions
`messages` to /v1/chat/completions; responses: the history as a
Responses `input` to /v1/responses, as Codex sends it, its turns a
function call and its output; LiteLLM is left out of a responses run).
"""

import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading

from litellm_proc import free_port, start_litellm

TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
BIN = os.path.join(TARGET, "release")
LITELLM = os.environ.get("LITELLM", os.path.join(TARGET, "litellm", "bin", "litellm"))
MITMDUMP = os.environ.get("MITMDUMP", os.path.join(TARGET, "bench-venv-mitmproxy", "bin", "mitmdump"))
SIZES = [int(s) for s in os.environ.get("SIZES", "20480,2097152").split(",")]
AGENTS = [int(a) for a in os.environ.get("AGENTS", "1,16,64,256").split(",")]
WAYS = os.environ.get("WAYS", "direct,loopdbg,loopdbg-forward,litellm,mitmproxy").split(",")
COUNT = int(os.environ.get("COUNT", "64"))
# Each agent's history its own, two messages longer at every request, as
# an agent's is (1, the default); 0 sends the one body every time.
GROW = os.environ.get("GROW", "1") == "1"
FORMAT = os.environ.get("FORMAT", "chat")
if FORMAT not in ("chat", "responses"):
    sys.exit("FORMAT is chat or responses")
ROUTE = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}[FORMAT]
# Agents' first requests spread over this many milliseconds (agent k of n
# at k/n of it) instead of all at once: the paced fake otherwise keeps
# them in step, and their requests reach the gateway in waves.
SPREAD_MS = int(os.environ.get("SPREAD_MS", "0"))
# PIN=1: the gateway on the second core, the client and the fake on the
# first (`taskset`), so a gateway's added latency is its own, not the
# client's and the fake's work on the same two cores (LiteLLM is not
# pinned: its workers are started apart).
PIN = os.environ.get("PIN") == "1"
GATEWAY_CORE = ["taskset", "-c", "1"] if PIN else []
LOAD_CORE = ["taskset", "-c", "0"] if PIN else []
# The model's pace: a longer history takes a model longer to start
# answering (a real one takes seconds on 2 MB, about 500,000 tokens).
FIRST_MS = {20480: 300, 2097152: 1000}
EACH_MS = 20


def drain(stream) -> None:
    threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()


class Gateway:
    """A way to the fake: its URL and the processes whose memory counts."""

    def __init__(self, name, url, procs):
        self.name, self.url, self.procs = name, url, procs

    def pids(self):
        pids = []
        for p in self.procs:
            pids.append(p.pid)
            try:
                out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout
                pids += [int(x) for x in out.split()]
            except OSError:
                pass
        return pids

    def reset_peak(self):
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass

    def peak_mb(self):
        total = 0
        for pid in self.pids():
            try:
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def cpu_seconds(self):
        ticks = 0
        for pid in self.pids():
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                pass
        return ticks / os.sysconf("SC_CLK_TCK")


def start_gateways(upstream, tmp, children):
    ways = {}
    if "direct" in WAYS:
        ways["direct"] = Gateway("direct", upstream, [])
    for way, policy in (("loopdbg", "block"), ("loopdbg-forward", "forward")):
        if way not in WAYS:
            continue
        proxy = subprocess.Popen(
            [*GATEWAY_CORE, os.path.join(BIN, "loopdbg"), "proxy", "--no-tui", "--listen", "127.0.0.1:0", "--upstream", upstream, "--on-invalid", policy],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        children.append(proxy)
        banner = proxy.stderr.readline()
        drain(proxy.stderr)
        url = "http://" + banner.split("listening on http://")[1].split()[0]
        ways[way] = Gateway(f"loopdbg proxy --on-invalid {policy}", url, [proxy])
    if "litellm" in WAYS and FORMAT == "chat":
        config = os.path.join(tmp, "config.yaml")
        with open(config, "w") as f:
            f.write(
                "model_list:\n  - model_name: fake-gpt\n    litellm_params:\n"
                f"      model: openai/gpt-4o-mini\n      api_base: {upstream}/v1\n      api_key: sk-fake\n"
                "litellm_settings:\n  set_verbose: false\n"
            )
        port = start_litellm(LITELLM, config, children)
        gw = children[-1]
        ways["litellm"] = Gateway("LiteLLM proxy", f"http://127.0.0.1:{port}", [gw])
    if "mitmproxy" in WAYS:
        port = free_port()
        mitm = subprocess.Popen(
            [*GATEWAY_CORE, MITMDUMP, "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1", "--listen-port", str(port),
             "--set", "stream_large_bodies=1", "--set", "connection_strategy=lazy", "-q"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        children.append(mitm)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                threading.Event().wait(0.1)
        ways["mitmproxy"] = Gateway("mitmproxy (mitmdump, reverse)", f"http://127.0.0.1:{port}", [mitm])
    return ways


def history(model: str, size: int) -> bytes:
    """A paired history of about `size` bytes, streamed: Chat Completions
    `messages`, or (FORMAT=responses) a Responses `input` as Codex sends
    it (`store: false`); the history last, so the load generator can grow
    it (--grow)."""
    ask = "What is the weather in Beijing, hour by hour?"
    if FORMAT == "responses":
        key, turns = "input", [{"type": "message", "role": "user", "content": ask}]
        tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
        extra = {"store": False}

        def turn(call, arguments, output):
            return ({"type": "function_call", "call_id": call, "name": "get_weather", "arguments": arguments},
                    {"type": "function_call_output", "call_id": call, "output": output})
    else:
        key, turns = "messages", [{"role": "user", "content": ask}]
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        extra = {}

        def turn(call, arguments, output):
            return ({"role": "assistant", "content": None, "tool_calls": [
                        {"id": call, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
                    {"role": "tool", "tool_call_id": call, "content": output})
    body = {"model": model, "stream": True, **extra, "tools": tools, key: turns}
    written = len(json.dumps(body))
    k = 0
    while written < size:
        k += 1
        for message in turn(f"call_{k:06d}", json.dumps({"city": "北京", "hour": k}),
                            f"hour {k}: 18°C, clear. " + "x" * 900):
            turns.append(message)
            written += len(json.dumps(message)) + 2
    return json.dumps(body).encode()


def load(url, body_file, agents, per_agent):
    grow = ["--grow"] if GROW else []
    if SPREAD_MS:
        grow += ["--spread", str(SPREAD_MS)]
    out = subprocess.run(
        [*LOAD_CORE, os.path.join(BIN, "loopdbg-load"), *grow, url + ROUTE, body_file, str(agents), str(per_agent),
         "authorization: Bearer sk-bench"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    children = []
    rng = random.Random(62)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for size in SIZES:
                first = FIRST_MS.get(size, 300)
                fake = subprocess.Popen([*LOAD_CORE, os.path.join(BIN, "loopdbg-fake"), "--pace", f"{first},{EACH_MS}"], stdout=subprocess.PIPE, text=True)
                children.append(fake)
                upstream = fake.stdout.readline().strip()
                ways = start_gateways(upstream, tmp, children)
                bodies = {}
                for name in ways:
                    path = os.path.join(tmp, f"{name}-{size}.json")
                    with open(path, "wb") as f:
                        f.write(history("fake-gpt" if name == "litellm" else "gpt-4o-mini", size))
                    bodies[name] = path
                actual = os.path.getsize(bodies[next(iter(ways))])
                print(f"\n## history {actual} bytes; the model's first event after {first} ms, each next {EACH_MS} ms later")
                print(f"{'agents':>6} {'way':32} {'req/s':>7} {'ttfb p50':>9} {'p99':>8} {'added p50':>10} {'p99':>8} {'peak MB':>8} {'CPU ms/req':>10} {'held p50':>9} {'p99':>7} statuses")
                for agents in AGENTS:
                    per_agent = max(4, COUNT // agents)
                    order = list(ways)
                    rng.shuffle(order)
                    results = {}
                    for name in order:
                        gw = ways[name]
                        gw.reset_peak()
                        cpu = gw.cpu_seconds()
                        results[name] = load(gw.url, bodies[name], agents, per_agent)
                        results[name]["peak_mb"] = gw.peak_mb()
                        results[name]["cpu_ms"] = (gw.cpu_seconds() - cpu) * 1000 / max(1, results[name]["requests"])
                    base = results.get("direct")
                    for name in ways:
                        r = results[name]
                        t = r["ttfb"]
                        added = (f"{t['p50'] - base['ttfb']['p50']:10.2f} {t['p99'] - base['ttfb']['p99']:8.2f}"
                                 if base and name != "direct" else f"{'':10} {'':8}")
                        memory = f"{r['peak_mb']:8.1f} {r['cpu_ms']:10.2f}" if ways[name].procs else f"{'':8} {'':10}"
                        # What the way held a request beyond direct's transit.
                        transit = r.get("transit", {})
                        held = (f"{transit['p50'] - base['transit']['p50']:9.2f} {transit['p99'] - base['transit']['p99']:7.2f}"
                                if base and name != "direct" and r.get("transits") and base.get("transits")
                                else f"{'':9} {'':7}")
                        print(f"{agents:6} {ways[name].name:32} {r['rps']:7.1f} {t['p50']:9.2f} {t['p99']:8.2f} {added} {memory} {held} {r['statuses']}")
                        if os.environ.get("TRANSIT") == "1" and r.get("transits"):
                            print(f"{'':6} transit ms: p50 {transit['p50']:.2f} p90 {transit['p90']:.2f} p99 {transit['p99']:.2f} max {transit['max']:.2f}")
                    sys.stdout.flush()
                for c in children:
                    c.kill()
                children.clear()
    finally:
        for c in children:
            c.kill()


if __name__ == "__main__":
    main()
