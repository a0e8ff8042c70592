"""What loopdbg's guardrail adds to LiteLLM's proxy, and what LiteLLM and
`loopdbg proxy` each add to a request, side by side in one run: the same
Chat Completions history (the second trip of a loop, two calls answered,
padded to SIZE bytes of tool output) POSTed to the fake provider
(crates/fake) four ways, in a shuffled order each round (fixed seed):

- direct to the fake;
- through LiteLLM 1.100 (`litellm --config`, one worker), no guardrail;
- through the same LiteLLM with `loopdbg.litellm_guardrail` (pre_call,
  on_invalid: block) on the request;
- through `loopdbg proxy --no-tui --on-invalid block`.

Printed per way: median and p99 of the round trip, and the median each
adds over direct. Run through benches/litellm_guardrail.sh, which builds
the binaries and installs LiteLLM (scripts/install-litellm.sh).
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx
from litellm_proc import start_litellm

ROUNDS = int(os.environ.get("ROUNDS", "200"))
SIZE = int(os.environ.get("SIZE", str(20 << 10)))
TARGET = os.environ.get("CARGO_TARGET_DIR", "target")
FAKE = os.path.join(TARGET, "release", "loopdbg-fake")
LOOPDBG = os.path.join(TARGET, "release", "loopdbg")
LITELLM = os.path.join(os.path.dirname(sys.executable), "litellm")


def body(model: str, guardrails: list) -> bytes:
    pad = "x" * max(0, SIZE - 600)
    return json.dumps(
        {
            "model": model,
            "messages": [
                {"role": "user", "content": "Weather in Beijing and USD/CNY?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
                        {"id": "call_f1", "type": "function", "function": {"name": "get_fx_rate", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_w1", "content": "18°C " + pad},
                {"role": "tool", "tool_call_id": "call_f1", "content": "7.12"},
            ],
            **({"guardrails": guardrails} if guardrails else {}),
        }
    ).encode()


def main() -> None:
    children = []
    try:
        fake = subprocess.Popen([FAKE], stdout=subprocess.PIPE, text=True)
        children.append(fake)
        upstream = fake.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.yaml")
            with open(config, "w") as f:
                f.write(
                    "model_list:\n  - model_name: fake-gpt\n    litellm_params:\n"
                    f"      model: openai/gpt-4o-mini\n      api_base: {upstream}/v1\n      api_key: sk-fake\n"
                    "guardrails:\n  - guardrail_name: loopdbg\n    litellm_params:\n"
                    "      guardrail: loopdbg.litellm_guardrail.LoopdbgGuardrail\n"
                    "      mode: pre_call\n      on_invalid: block\n"
                    "litellm_settings:\n  set_verbose: false\n"
                )
            port = start_litellm(LITELLM, config, children)
            proxy = subprocess.Popen(
                [LOOPDBG, "proxy", "--no-tui", "--listen", "127.0.0.1:0", "--upstream", upstream,
                 "--on-invalid", "block", "--capture", os.path.join(tmp, "capture.jsonl")],
                stderr=subprocess.PIPE,
                text=True,
            )
            children.append(proxy)
            banner = proxy.stderr.readline()
            proxied = "http://" + banner.split("listening on http://")[1].split()[0]
            threading.Thread(target=lambda: [None for _ in proxy.stderr], daemon=True).start()
            ways = {
                "direct": (f"{upstream}/v1/chat/completions", body("gpt-4o-mini", [])),
                "litellm": (f"http://127.0.0.1:{port}/chat/completions", body("fake-gpt", [])),
                "litellm + loopdbg guardrail": (f"http://127.0.0.1:{port}/chat/completions", body("fake-gpt", ["loopdbg"])),
                "loopdbg proxy --on-invalid block": (f"{proxied}/v1/chat/completions", body("gpt-4o-mini", [])),
            }
            clients = {name: httpx.Client(timeout=60) for name in ways}
            times = {name: [] for name in ways}
            rng = random.Random(7)
            order = list(ways)
            for round_ in range(ROUNDS + 5):
                rng.shuffle(order)
                for name in order:
                    url, data = ways[name]
                    t = time.perf_counter()
                    r = clients[name].post(url, content=data, headers={"content-type": "application/json", "authorization": "Bearer sk-x"})
                    took = time.perf_counter() - t
                    if r.status_code != 200:
                        raise SystemExit(f"{name}: {r.status_code} {r.text[:300]}")
                    if round_ >= 5:
                        times[name].append(took * 1000)
            direct = statistics.median(times["direct"])
            print(f"{ROUNDS} rounds, history of {len(ways['direct'][1])} bytes")
            print(f"{'way':36} {'median ms':>10} {'p99 ms':>8} {'added ms':>9}")
            for name in ways:
                t = sorted(times[name])
                p99 = t[min(len(t) - 1, int(len(t) * 0.99))]
                med = statistics.median(t)
                print(f"{name:36} {med:10.2f} {p99:8.2f} {med - direct:9.2f}")
    finally:
        for c in children:
            c.kill()


if __name__ == "__main__":
    main()
