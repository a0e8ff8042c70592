#!/usr/bin/env bash
# Installs the real SDK clients tests/clients.rs drives (boto3 for Bedrock)
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
if [ -x "$dest/bin/python" ] && "$dest/bin/pip" freeze 2>/dev/null | grep -qxF "$(grep -v '^#' scripts/clients/requirements.txt)"; then
  echo "clients: pinned versions already in $dest"
  exit 0
fi
python3 -m venv "$dest"
"$dest/bin/pip" install --quiet --disable-pip-version-check -r scripts/clients/requirements.txt
echo "clients: installed into $dest"
