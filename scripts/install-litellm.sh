#!/usr/bin/env bash
# Installs LiteLLM's proxy (the gateway) with loopdbg's guardrail for
# tests/litellm.rs and benches: a virtualenv at
# ${LOOPDBG_LITELLM:-target/litellm} with litellm[proxy] at the version
# scripts/litellm/requirements.txt pins and the loopdbg wheel
# scripts/install-python.sh built (target/wheels). Run after it.
# Usage: scripts/install-litellm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${LOOPDBG_LITELLM:-target/litellm}
wheel=$(ls -t target/wheels/loopdbg-*-abi3-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "litellm: no loopdbg wheel in target/wheels (run scripts/install-python.sh first)" >&2
  exit 1
fi
[ -x "$dest/bin/python" ] || python3 -m venv "$dest"
pip=("$dest/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" -r scripts/litellm/requirements.txt
# The wheel of this very tree, every time: the guardrail under test.
"${pip[@]}" --force-reinstall --no-deps "$wheel"
echo "litellm: $("$dest/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))') with loopdbg from $wheel in $dest"
