#!/usr/bin/env bash
# loopdbg's guardrail inside LiteLLM's proxy, LiteLLM alone and `loopdbg
# proxy`, against the fake provider: benches/litellm_guardrail.py says
# what is measured. Builds the release binaries and installs LiteLLM with
# this tree's wheel (scripts/install-python.sh, scripts/install-litellm.sh).
# Usage: [ROUNDS=200] [SIZE=20480] benches/litellm_guardrail.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p loopdbg -p loopdbg-fake
[ -x target/litellm/bin/litellm ] || scripts/install-litellm.sh
target/litellm/bin/python benches/litellm_guardrail.py
