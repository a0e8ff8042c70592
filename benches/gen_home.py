#!/usr/bin/env python3
"""A home with years of agent sessions, for `doctor --scan` at scale
(benches/doctor_scan_home.sh, issue 62 item 3): SESSIONS sessions across
Claude Code (60 %), Codex (20 %), Gemini CLI (15 %) and opencode (5 %),
written where each agent keeps them, in the shapes they write:

  Claude Code  ~/.claude/projects/-PROJECT/UUID.jsonl, a prompt, a call,
               its result and an answer per turn (gen_claude_shapes.py)
  Codex        ~/.codex/sessions/YYYY/MM/DD/rollout-…-UUID.jsonl: meta,
               turn context, then per turn a prompt, a reasoning item, a
               shell call, its output and an answer
  Gemini CLI   ~/.gemini/tmp/HASH/chats/session-…-ID.jsonl (the JSON Lines
               store of Gemini CLI 0.4x): a header, then per turn a prompt
               and a gemini record whose call carries its result
  opencode     ~/.local/share/opencode/opencode.db (opencode_store.py)

Sizes follow a long tail: half the sessions about 0.25 MB, a third 2 MB,
the rest 8 MB (about 2 MB on average, so 10,000 sessions are about 20 GB).
Each agent's three sizes are generated once and copied (every copy a file
of its own, its bytes on disk). One session in 200 of Claude Code's and
Codex's is a real broken one from the fixtures, so the scan has something
to say. Every file is dated an hour back (a file modified within 2 s of a
scan is read again whatever the cache says).

Usage: gen_home.py HOME [SESSIONS]   (SESSIONS defaults to 10,000)
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_claude_shapes import Log  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "transcripts")
SIZES = [(0.50, 256 << 10), (0.35, 2 << 20), (0.15, 8 << 20)]
OUTPUT = "\n".join(f"test cart::case_{n} ... ok" for n in range(24))


def size_of(k: int) -> int:
    """The size of the k-th session of an agent, by the long tail."""
    at = (k * 0.618034) % 1.0
    for share, size in SIZES:
        if at < share:
            return size
        at -= share
    return SIZES[-1][1]


def claude(path: str, size: int) -> None:
    log, parent, t = Log(path), None, 0
    while log.out.tell() < size:
        parent = log.turn(parent, t)
        t += 1
    log.out.close()


def codex(path: str, size: int) -> None:
    def line(f, kind, payload, s):
        stamp = f"2026-11-03T{8 + s // 3600 % 12:02}:{s // 60 % 60:02}:{s % 60:02}.000Z"
        f.write(json.dumps({"timestamp": stamp, "type": kind, "payload": payload}, separators=(",", ":")) + "\n")

    with open(path, "w") as f:
        line(f, "session_meta", {"id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "timestamp": "2026-11-03T08:00:00.000Z",
                                 "cwd": "/home/dev/shop", "originator": "codex_cli_rs", "cli_version": "0.46.0",
                                 "instructions": None, "git": {"commit_hash": "abc123", "branch": "main"}}, 0)
        line(f, "turn_context", {"cwd": "/home/dev/shop", "approval_policy": "on-request", "sandbox_policy": {"mode": "workspace-write"},
                                 "model": "gpt-5-codex", "effort": "medium", "summary": "auto"}, 1)
        t = 0
        while f.tell() < size:
            s = 10 + t * 5
            call = f"call_{t:06d}"
            line(f, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Turn {t}: run the tests."}]}, s)
            line(f, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Running tests**"}],
                                      "content": None, "encrypted_content": "gAAAAABo" + "A" * 200}, s + 1)
            line(f, "response_item", {"type": "function_call", "name": "shell", "call_id": call,
                                      "arguments": json.dumps({"command": ["bash", "-lc", f"cargo test case_{t}"], "workdir": "/home/dev/shop"})}, s + 2)
            line(f, "response_item", {"type": "function_call_output", "call_id": call,
                                      "output": json.dumps({"output": OUTPUT, "metadata": {"exit_code": 0, "duration_seconds": 0.4}})}, s + 3)
            line(f, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Turn {t} passes."}]}, s + 4)
            t += 1


def gemini(path: str, size: int) -> None:
    def stamp(s):
        return f"2026-11-03T{9 + s // 3600 % 12:02}:{s // 60 % 60:02}:{s % 60:02}.000Z"

    with open(path, "w") as f:
        f.write(json.dumps({"sessionId": "8f0e1c2d-3b4a-5968-7a6b-5c4d3e2f1a0b", "projectHash": "e3b0c44298fc1c149afbf4c8996fb924",
                            "startTime": stamp(0), "lastUpdated": stamp(0), "kind": "main"}) + "\n")
        t = 0
        while f.tell() < size:
            s = 1 + t * 3
            call = f"run_shell_command-{1762160404000 + t}-a{t}"
            f.write(json.dumps({"id": f"u{t}", "timestamp": stamp(s), "type": "user", "content": [{"text": f"Turn {t}: run the tests."}]}) + "\n")
            f.write(json.dumps({"id": f"g{t}", "timestamp": stamp(s + 1), "type": "gemini", "content": "", "model": "gemini-2.5-pro",
                                "toolCalls": [{"id": call, "name": "run_shell_command", "args": {"command": f"cargo test case_{t}"},
                                               "status": "success", "timestamp": stamp(s + 1), "displayName": "Shell",
                                               "renderOutputAsMarkdown": False,
                                               "result": [{"functionResponse": {"id": call, "name": "run_shell_command",
                                                                                "response": {"output": OUTPUT}}}]}]}) + "\n")
            f.write(json.dumps({"id": f"a{t}", "timestamp": stamp(s + 2), "type": "gemini", "content": f"Turn {t} passes.", "model": "gemini-2.5-pro"}) + "\n")
            t += 1


def main() -> None:
    home = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    templates = os.path.join(home, "templates")
    os.makedirs(templates, exist_ok=True)
    writers = {"claude": claude, "codex": codex, "gemini": gemini}
    for name, write in writers.items():
        for _, size in SIZES:
            path = os.path.join(templates, f"{name}-{size}.jsonl")
            if not os.path.exists(path):
                write(path, size)
    counts = {"claude": total * 60 // 100, "codex": total * 20 // 100, "gemini": total * 15 // 100}
    counts["opencode"] = total - sum(counts.values())
    broken = {"claude": os.path.join(FIXTURES, "claude_code_v2", "doctor_invalid_id.jsonl"),
              "codex": os.path.join(FIXTURES, "codex", "rollout-2026-11-03T08-10-00-interrupted.jsonl")}
    for k in range(counts["claude"]):
        folder = os.path.join(home, ".claude", "projects", f"-home-dev-project{k % 40:02d}")
        os.makedirs(folder, exist_ok=True)
        source = broken["claude"] if k % 200 == 199 else os.path.join(templates, f"claude-{size_of(k)}.jsonl")
        shutil.copyfile(source, os.path.join(folder, f"{k:08x}-0000-4000-8000-{k:012x}.jsonl"))
    for k in range(counts["codex"]):
        day = os.path.join(home, ".codex", "sessions", "2026", f"{1 + k % 12:02d}", f"{1 + k % 28:02d}")
        os.makedirs(day, exist_ok=True)
        source = broken["codex"] if k % 200 == 199 else os.path.join(templates, f"codex-{size_of(k)}.jsonl")
        shutil.copyfile(source, os.path.join(day, f"rollout-2026-{1 + k % 12:02d}-{1 + k % 28:02d}T08-00-00-0199a1b2-c3d4-7e5f-8a9b-{k:012x}.jsonl"))
    for k in range(counts["gemini"]):
        chats = os.path.join(home, ".gemini", "tmp", f"{k % 30:064x}", "chats")
        os.makedirs(chats, exist_ok=True)
        shutil.copyfile(os.path.join(templates, f"gemini-{size_of(k)}.jsonl"),
                        os.path.join(chats, f"session-2026-11-03T09-00-{k:08x}.jsonl"))
    data = os.path.join(home, ".local", "share", "opencode")
    os.makedirs(data, exist_ok=True)
    # opencode keeps every session in one database: sessions of 2 MB (200
    # turns of 10 KB of output), the average of the others.
    subprocess.run([sys.executable, os.path.join(HERE, "opencode_store.py"), os.path.join(data, "opencode.db"),
                    str(counts["opencode"]), "200", "10000"], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(templates)
    subprocess.run(["find", home, "-type", "f", "-exec", "touch", "-d", "1 hour ago", "{}", "+"], check=True)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
