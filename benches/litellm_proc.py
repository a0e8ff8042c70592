"""LiteLLM's proxy as the benches start it (benches/litellm_guardrail.py,
benches/gateway_load.py): one worker on a free loopback port, the model
cost map read locally (no download), errors only in its log."""

import os
import socket
import subprocess
import threading


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_litellm(litellm: str, config: str, children: list) -> int:
    """Starts `litellm --config CONFIG`, appends it to `children` and
    returns its port once it serves; its output is drained after."""
    port = free_port()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR")
    gw = subprocess.Popen(
        [litellm, "--config", config, "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    children.append(gw)
    for line in gw.stdout:
        if "Uvicorn running on" in line:
            threading.Thread(target=lambda: [None for _ in gw.stdout], daemon=True).start()
            return port
    raise SystemExit(f"LiteLLM did not start: {gw.args}")
