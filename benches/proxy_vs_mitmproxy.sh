#!/usr/bin/env bash
# The proxy's added latency beside mitmproxy's, with a real SDK client
# (benches/proxy_vs_mitmproxy.py says what is measured). Builds the two
# binaries, installs the Anthropic SDK and mitmproxy in two venvs under
# target/ (reused between runs: mitmproxy 11.0.2, the last release for
# Python 3.11, pins an h11 older than the SDK's), and runs the comparison.
#   ROUNDS=300 benches/proxy_vs_mitmproxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p loopdbg -p loopdbg-fake
sdk=target/bench-venv-sdk
mitm=target/bench-venv-mitmproxy
if [ ! -x "$sdk/bin/python" ] || ! "$sdk/bin/python" -c 'import anthropic' 2>/dev/null; then
  python3 -m venv "$sdk"
  "$sdk/bin/pip" install --quiet anthropic
fi
if [ ! -x "$mitm/bin/mitmdump" ]; then
  python3 -m venv "$mitm"
  "$mitm/bin/pip" install --quiet "mitmproxy==11.0.2"
fi
MITMDUMP="$mitm/bin/mitmdump" "$sdk/bin/python" benches/proxy_vs_mitmproxy.py
