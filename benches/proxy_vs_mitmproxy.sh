#!/usr/bin/env bash
# The proxy's added latency beside mitmproxy's, with a real SDK client
# (benches/proxy_vs_mitmproxy.py says what is measured). Builds the two
# binaries, installs the Anthropic SDK and mitmproxy in a venv under
# target/ (reused between runs), and runs the comparison.
#   ROUNDS=300 benches/proxy_vs_mitmproxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p loopdbg -p loopdbg-fake
venv=target/bench-venv
if [ ! -x "$venv/bin/mitmdump" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet anthropic mitmproxy
fi
MITMDUMP="$venv/bin/mitmdump" "$venv/bin/python" benches/proxy_vs_mitmproxy.py
