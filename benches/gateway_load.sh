#!/usr/bin/env bash
# The proxy as a shared gateway under load, beside LiteLLM's proxy and
# mitmproxy (benches/gateway_load.py says what is measured). Builds the
# binaries (loopdbg, the fake provider, the load generator) and installs
# the peers in venvs under target/ (reused between runs): LiteLLM at the
# version scripts/litellm/requirements.txt pins, mitmproxy 11.0.2 (as
# benches/proxy_vs_mitmproxy.sh).
# Usage: [SIZES=20480,2097152] [AGENTS=1,16,64,256] [COUNT=200] benches/gateway_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p loopdbg -p loopdbg-fake
if [ ! -x target/litellm/bin/litellm ]; then
  python3 -m venv target/litellm
  target/litellm/bin/pip install --quiet -r scripts/litellm/requirements.txt
fi
if [ ! -x target/bench-venv-mitmproxy/bin/mitmdump ]; then
  python3 -m venv target/bench-venv-mitmproxy
  target/bench-venv-mitmproxy/bin/pip install --quiet "mitmproxy==11.0.2"
fi
echo "$(date -u +%F), $(nproc) cores; $(target/release/loopdbg --version); LiteLLM $(target/litellm/bin/python -c 'import importlib.metadata as m; print(m.version("litellm"))'); $(target/bench-venv-mitmproxy/bin/mitmdump --version | head -n 1)"
python3 benches/gateway_load.py
