#!/usr/bin/env python3
"""Claude Code logs of five shapes, about 50 MB each at SCALE 1, for
timing `check` and the first frame against agx on each
(benches/check_shapes.sh):

  long       one conversation of 50,000 turns, as issue 40 measured it:
             one prompt, then per turn an assistant event with one text
             and one tool_use block and a user event with a tool_result of
             about ten lines; short uuids, no rewinds (100,002 events)
  sessions   a folder of 800 sessions of 25 prompts each (one file each,
             as Claude Code writes them)
  rewinds    one conversation of 20,000 prompts with a rewind every 5 (the
             user stepped back and asked again: an abandoned branch each)
  large      1,000 prompts whose results are about 50 KB each (a file
             read whole, a long test run)
  subagents  11,000 prompts, every 10th running a Task sub-agent of 8
             prompts, written into the same file as a sidechain

Usage: gen_claude_shapes.py OUT_DIR [SCALE]   (SCALE defaults to 1)
"""
import json
import os
import sys

SESSION = "6c1f0d52-8a0e-4d7b-9a51-2f3c8b1e0a77"
RESULT = "\n".join(f"src/lib.rs:{n}: pub fn total_{n}() -> u64 {{ items.iter().sum() }}" for n in range(10))


class Log:
    def __init__(self, path, session=SESSION):
        self.out = open(path, "w")
        self.session = session
        self.n = 0
        self.second = 0

    def uuid(self):
        self.n += 1
        return f"e{self.n}"

    def stamp(self):
        self.second += 1
        s = self.second
        return f"2026-11-{2 + s // 86400:02}T{s // 3600 % 24:02}:{s // 60 % 60:02}:{s % 60:02}.000Z"

    def event(self, kind, parent, message, **extra):
        uuid = self.uuid()
        record = {
            "parentUuid": parent,
            "isSidechain": extra.pop("sidechain", False),
            "userType": "external",
            "cwd": "/home/dev/shop",
            "sessionId": self.session,
            "version": "2.0.76",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": self.stamp(),
            "message": message,
        }
        record.update(extra)
        self.out.write(json.dumps(record, separators=(",", ":")) + "\n")
        return uuid

    def turn(self, parent, t, result=RESULT, sidechain=False, tag="t"):
        """A prompt, a call, its result and an answer; the last uuid."""
        side = {"sidechain": sidechain}
        p = self.event("user", parent, {"role": "user", "content": f"Turn {t}: fix the next failing test."}, **side)
        call = f"toolu_{tag}{t:06}"
        a = self.event("assistant", p, {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{tag}{t}a", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Reading the module first."},
                        {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "src/lib.rs"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 4, "cache_read_input_tokens": 13000, "output_tokens": 90}}, **side)
        r = self.event("user", a, {"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": result}]},
            toolUseResult={"type": "text", "file": {"filePath": "src/lib.rs", "numLines": 10}}, **side)
        return self.event("assistant", r, {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{tag}{t}b", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": f"Fixed turn {t}."}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 4, "cache_read_input_tokens": 13100, "output_tokens": 12}},
            **side)


def long(path, turns):
    log = Log(path)
    parent = log.event("user", None, {"role": "user", "content": "Fix every failing test, one at a time."})
    for t in range(turns):
        call = f"toolu_{t:06}"
        a = log.event("assistant", parent, {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{t}", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": f"Test {t} next."},
                        {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"cargo test t{t}"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 4, "cache_read_input_tokens": 13000, "output_tokens": 40}})
        parent = log.event("user", a, {"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": RESULT}]})
    log.event("assistant", parent, {
        "model": "claude-sonnet-4-5-20250929", "id": "msg_end", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "All tests pass."}], "stop_reason": "end_turn", "stop_sequence": None})


def sessions(folder, count):
    os.makedirs(folder, exist_ok=True)
    for s in range(count):
        log, parent = Log(os.path.join(folder, f"{s:08x}-0000-4000-8000-000000000000.jsonl"), f"s{s}"), None
        for t in range(25):
            parent = log.turn(parent, t)


def rewinds(path, turns):
    log, parent = Log(path), None
    for t in range(turns):
        if t % 5 == 4:
            log.turn(parent, t, tag="abandoned")  # the branch stepped back from
        parent = log.turn(parent, t)


def large(path, turns):
    log, parent = Log(path), None
    big = "\n".join([RESULT] * 80)
    for t in range(turns):
        parent = log.turn(parent, t, result=big)


def subagents(path, turns):
    log, parent = Log(path), None
    for t in range(turns):
        parent = log.turn(parent, t)
        if t % 10 == 9:
            side = None
            for k in range(8):
                side = log.turn(side, k, sidechain=True, tag=f"s{t}_")


def main():
    out = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    n = lambda count: max(1, int(count * scale))
    os.makedirs(out, exist_ok=True)
    long(os.path.join(out, "long.jsonl"), n(50000))
    sessions(os.path.join(out, "sessions"), n(800))
    rewinds(os.path.join(out, "rewinds.jsonl"), n(16000))
    large(os.path.join(out, "large.jsonl"), n(1000))
    subagents(os.path.join(out, "subagents.jsonl"), n(11000))


if __name__ == "__main__":
    main()
