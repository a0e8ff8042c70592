#!/usr/bin/env python3
"""A Responses request body of about SIZE bytes (default 2 MB) shaped as
Codex sends its history (`store: false`, the whole history as `input`):
a user message, then turns of a reasoning item, a `function_call` and
its `function_call_output`. `input` is the body's last key, as
`--example gate_cost` grows it (it appends a call and its output to each
agent's own copy, round after round).

Usage: benches/gen_responses_body.py OUT [SIZE]
"""
import json
import sys

out = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
items = [{"type": "message", "role": "user", "content": "fix the failing test"}]
k = 0
while len(json.dumps(items)) < size:
    items.append({"type": "reasoning", "id": f"rs_{k}", "summary": [],
                  "encrypted_content": "gAAAA" + "x" * 400})
    items.append({"type": "function_call", "call_id": f"c{k}", "name": "shell",
                  "arguments": json.dumps({"command": ["cat", f"src/f{k}.rs"]})})
    items.append({"type": "function_call_output", "call_id": f"c{k}",
                  "output": "line of code\n" * 120})
    k += 1
body = {"model": "gpt-5-codex", "instructions": "You are Codex.", "stream": True,
        "input": items}
with open(out, "w") as f:
    json.dump(body, f)
