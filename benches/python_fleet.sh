#!/usr/bin/env bash
# Conversations per second per worker: the Python package (in process and
# on a local Dask cluster) beside the CLI on the same shard. Builds the
# release CLI and, when missing, the package's virtualenv
# (scripts/install-python.sh). Usage: benches/python_fleet.sh
# (LINES=20000 SHARDS=8 ROUNDS=5 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p loopdbg
[ -x target/python/bin/python ] || scripts/install-python.sh
target/python/bin/python benches/python_fleet.py
