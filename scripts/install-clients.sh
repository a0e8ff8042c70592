#!/usr/bin/env bash
# Installs the real SDK clients tests/clients.rs drives (boto3 for Bedrock,
# the official MCP SDK's client and server for `loopdbg mcp`, the openai
# and anthropic SDKs with the OpenTelemetry instrumentation whose traces
# `check` reads)
# into a virtualenv at ${LOOPDBG_CLIENTS:-target/clients}, at the versions
# scripts/clients/requirements.txt pins. Reused between runs: nothing is
# done when the pinned versions are there.
# Usage: scripts/install-clients.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${LOOPDBG_CLIENTS:-target/clients}
if ! command -v python3 >/dev/null 2>&1; then
  echo "clients: python3 not found; tests/clients.rs will skip the real clients" >&2
  exit 0
fi
# Every pinned version must be there (one missing pin reinstalls).
installed() {
  [ -x "$dest/bin/python" ] || return 1
  local frozen
  frozen=$("$dest/bin/pip" freeze 2>/dev/null) || return 1
  while read -r pin; do
    grep -qxiF "$pin" <<<"$frozen" || return 1
  done < <(grep -v '^#' scripts/clients/requirements.txt | grep .)
}
if installed; then
  echo "clients: pinned versions already in $dest"
  exit 0
fi
python3 -m venv "$dest"
"$dest/bin/pip" install --quiet --disable-pip-version-check -r scripts/clients/requirements.txt
echo "clients: installed into $dest"
