#!/usr/bin/env bash
# Installs the agents tests/agents.rs drives (Claude Code, Codex, Gemini
# CLI, opencode) at the versions scripts/agents/package.json pins, into
# ${LOOPDBG_AGENTS:-target/agents}. Reused between runs: nothing is done
# when the installed versions are the pinned ones; npm's own cache makes a
# reinstall work offline once it has been filled.
# Usage: scripts/install-agents.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${LOOPDBG_AGENTS:-target/agents}
if ! command -v npm >/dev/null 2>&1; then
  echo "agents: npm not found; tests/agents.rs will skip the real agents" >&2
  exit 0
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
installed() {
  node -e '
    const want = require(process.argv[1]).dependencies;
    for (const [name, version] of Object.entries(want)) {
      const have = require(process.argv[2] + "/node_modules/" + name + "/package.json").version;
      if (have !== version) process.exit(1);
    }' "$PWD/scripts/agents/package.json" "$dest" 2>/dev/null
}
if installed; then
  echo "agents: pinned versions already in $dest"
  exit 0
fi
cp scripts/agents/package.json "$dest/package.json"
(cd "$dest" && npm install --prefer-offline --no-audit --no-fund --loglevel=error)
installed || { echo "agents: $dest does not hold the pinned versions after npm install" >&2; exit 1; }
echo "agents: installed into $dest"
