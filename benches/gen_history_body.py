#!/usr/bin/env python3
"""A request body of about SIZE bytes (default 2 MB) holding an agent's
history as the agent sends it with every request, for
`--example gate_cost` (which appends a call and its answer to each
agent's own copy, round after round, so the history is the body's last
key here):

- `responses`: as Codex sends it (`store: false`, the whole history as
  `input`): a user message, then turns of a reasoning item, a
  `function_call` and its `function_call_output`;
- `gemini`: as Gemini CLI sends it (`contents`): a user turn, then a
  model turn calling a function and a user turn with its response.

Usage: benches/gen_history_body.py responses|gemini OUT [SIZE]
"""
import json
import sys

kind, out = sys.argv[1], sys.argv[2]
size = int(sys.argv[3]) if len(sys.argv) > 3 else 2_000_000
output = "line of code\n" * 120
if kind == "responses":
    items = [{"type": "message", "role": "user", "content": "fix the failing test"}]

    def turn(k):
        return [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [],
             "encrypted_content": "gAAAA" + "x" * 400},
            {"type": "function_call", "call_id": f"c{k}", "name": "shell",
             "arguments": json.dumps({"command": ["cat", f"src/f{k}.rs"]})},
            {"type": "function_call_output", "call_id": f"c{k}", "output": output},
        ]
elif kind == "gemini":
    items = [{"role": "user", "parts": [{"text": "fix the failing test"}]}]

    def turn(k):
        return [
            {"role": "model", "parts": [{"functionCall": {
                "id": f"c{k}", "name": "read_file", "args": {"path": f"src/f{k}.rs"}},
                "thoughtSignature": "c2ln" * 100}]},
            {"role": "user", "parts": [{"functionResponse": {
                "id": f"c{k}", "name": "read_file", "response": {"output": output}}}]},
        ]
else:
    sys.exit("usage: gen_history_body.py responses|gemini OUT [SIZE]")
k = 0
while len(json.dumps(items)) < size:
    items.extend(turn(k))
    k += 1
if kind == "responses":
    body = {"model": "gpt-5-codex", "instructions": "You are Codex.", "stream": True,
            "input": items}
else:
    body = {"generationConfig": {"temperature": 0}, "contents": items}
with open(out, "w") as f:
    json.dump(body, f)
