#!/usr/bin/env bash
# The Python wheel that carries the command-line program: `pip install
# loopdbg` gives `loopdbg` on PATH (crates/python/python/loopdbg/_cli.py
# hands over to it) beside the in-process functions, for people who have
# Python but not Rust. Builds the CLI in release, copies it beside the
# package (crates/python/python/loopdbg/bin/, ignored by git; pyproject's
# `include` takes it into the wheel), then the abi3 wheel.
#
# Usage: scripts/build-wheel.sh OUT_DIR [TARGET]
#   TARGET: a Rust target triple for both; the host's when absent.
#   LOOPDBG_CLI=path: carry that binary instead of building one (a
#   release's own, as .github/workflows/publish-pypi.yml does).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/build-wheel.sh OUT_DIR [TARGET]}
target=${2:-}
maturin=${MATURIN:-maturin}

target_args=()
built=target/release
if [ -n "$target" ]; then
  target_args=(--target "$target")
  built=target/$target/release
fi
exe=loopdbg
case $target in *windows*) exe=loopdbg.exe ;; esac

cli=${LOOPDBG_CLI:-}
if [ -z "$cli" ]; then
  cargo build --release --locked --bin loopdbg "${target_args[@]}"
  cli=$built/$exe
fi
bin=crates/python/python/loopdbg/bin
rm -rf "$bin"
mkdir -p "$bin"
cp "$cli" "$bin/$exe"
"$maturin" build --release --quiet -m crates/python/Cargo.toml -o "$out" "${target_args[@]}"
