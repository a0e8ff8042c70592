#!/usr/bin/env python3
"""How soon `loopdbg LOG --follow` shows an event an agent appends to a long
Claude Code log, and what the follower costs meanwhile (issue 40, items 3
and 5). The follower runs in a 120x40 tmux pane; ROUNDS user prompts, each
with a word of its own, are appended one a second (an agent's pace) to the
log's newest conversation; for each, the time until the word is on the
screen (`shown`), and until the screen shows it in the whole log's judged
picture (`judged`: the title is the conversation's again; both from the
append, and equal for a pinned conversation, which shows no part). The first is
appended as soon as the whole picture is on the screen (`at once`: the
judge may still be making the spare picture it grows the next from);
then the follower is let settle (`settled`: from the whole picture until
it takes no CPU) and the others are appended. Then a turn whose
call is never answered is appended: the time until the provider's 400
is alarmed on the screen (`alarmed`). Then the follower is left idle for IDLE seconds: the CPU it takes is read from
/proc, as are its resident memory after the first change and at the end
(does it grow with time?) and its peak.

Usage: follow_latency.py BINARY LOG [ROUNDS] [IDLE]
(FOLLOW_ARGS: more arguments, e.g. `--conversation 1`: a pinned
conversation opens on a line saying it is read, and shows no part)
Prints one Markdown row: size, first frame, time to the whole picture, the first
event judged at once, settled, shown, judged (the events after it settled), alarmed, idle CPU,
memory after the first change -> at the end, peak. Needs tmux.
benches/follow_latency.sh builds the binary and the log.
"""

import json
import os
import statistics
import subprocess
import sys
import time

SESSION = "loopdbg-follow-latency"


def screen():
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", SESSION], capture_output=True, text=True
    ).stdout


def wait_for(test, limit=600.0, needed=True):
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        text = screen()
        if test(text):
            return time.perf_counter() - start, text
        time.sleep(0.005)
    if needed:
        raise SystemExit(f"timed out; screen:\n{screen()}")
    return None, screen()


def said_after(text, start, what):
    """Whether `what` is said in the notice that begins with `start` (it
    wraps onto the rows after it; a pane above may name `what` too)."""
    at = text.find(start)
    return at >= 0 and what in text[at : at + 600]


def last_event(log):
    with open(log, "rb") as f:
        f.seek(max(0, os.path.getsize(log) - (1 << 20)))
        lines = f.read().splitlines()
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("uuid") and not event.get("isSidechain"):
            return event
    raise SystemExit("no event with a uuid at the end of the log")


def event_after(last, parent, uuid, kind, content):
    """A Claude Code event of `kind` hung from `parent`, written as `last`
    (the log's newest event) was."""
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": last.get("cwd", "/w"),
        "sessionId": last.get("sessionId", "s"),
        "version": last.get("version", "2.0.76"),
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-12-05T00:00:00.000Z",
        "message": {"id": f"msg-{uuid}", "role": kind, "content": content},
    }


def proc(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = dict(
        line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line
    )
    kb = lambda key: int(status[key].split()[0])
    return cpu, kb("VmRSS") / 1024, kb("VmHWM") / 1024


def settle(pid, limit=120.0):
    """Waits until the follower takes under 2 % of a core over half a
    second; answers when (time.perf_counter())."""
    start = time.perf_counter()
    cpu, _, _ = proc(pid)
    while time.perf_counter() - start < limit:
        time.sleep(0.5)
        now, _, _ = proc(pid)
        if now - cpu < 0.01:
            break
        cpu = now
    return time.perf_counter()


def main():
    binary, log = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    idle = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    started = time.perf_counter()
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", SESSION, "-x", "120", "-y", "40", f"{binary} {log} --follow {os.environ.get('FOLLOW_ARGS', '')}"],
        check=True,
    )
    pid = int(
        subprocess.run(
            ["tmux", "display", "-p", "-t", SESSION, "#{pane_pid}"], capture_output=True, text=True
        ).stdout
    )
    # The first frame: the newest part of a large log (its title says
    # "judging the whole log"), or the whole when it opens on the whole.
    wait_for(lambda s: "follow: judging" in s or "follow: reading" in s or "follow: conversation" in s)
    first = time.perf_counter() - started
    wait_for(lambda s: "follow: conversation" in s)
    opened = time.perf_counter() - started
    last = last_event(log)
    parent = last["uuid"]
    shown, judged = [], []
    at_once, settled = None, None
    try:
        for k in range(rounds + 1):
            word = f"w{os.getpid() % 1000:03d}q{k:03d}z"
            uuid = f"bench-{os.getpid()}-{k}"
            event = event_after(last, parent, uuid, "user", f"{word} run the tests again")
            parent = uuid
            with open(log, "a") as f:
                f.write(json.dumps(event) + "\n")
            on_screen, _ = wait_for(lambda s: word in s)
            # Both from the append: the judged picture comes after the part.
            t, _ = wait_for(lambda s: word in s and "follow: conversation" in s)
            t += on_screen
            if k == 0:
                at_once = t
                _, first_rss, _ = proc(pid)
                settled = settle(pid) - started - opened
                continue
            shown.append(on_screen)
            judged.append(t)
            time.sleep(1.0)
        # A turn whose call is never answered (a prompt follows it): how
        # soon the provider's 400 is alarmed on the screen.
        call = f"toolu_bench{os.getpid() % 1000:03d}"
        turn = []
        for kind, content in (
            ("assistant", [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "deploy"}}]),
            ("user", "never mind"),
        ):
            uuid = f"bench-{os.getpid()}-{kind}"
            turn.append(event_after(last, parent, uuid, kind, content))
            parent = uuid
        with open(log, "a") as f:
            f.write("".join(json.dumps(e) + "\n" for e in turn))
        # Not on the screen within a minute: said where it cannot be seen.
        alarmed, _ = wait_for(lambda s: said_after(s, "» ALARM", call), 60.0, False)
        wait_for(lambda s: "follow: conversation" in s and "judging the whole" not in s)
        time.sleep(1.0)
        before, _, _ = proc(pid)
        time.sleep(idle)
        after, rss, peak = proc(pid)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    said = lambda t: "not on the screen" if t is None else f"{t * 1000:.0f} ms"
    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms (max {max(xs) * 1000:.0f})"
    size = os.path.getsize(log) / 1e6
    print(
        f"| {size:.0f} MB | {first * 1000:.0f} ms | {opened:.1f} s | {at_once * 1000:.0f} ms | {settled:.1f} s "
        f"| {ms(shown)} | {ms(judged)} | {said(alarmed)} "
        f"| {100 * (after - before) / idle:.1f} % | {first_rss:.0f} → {rss:.0f} MB | {peak:.0f} MB |"
    )


main()
