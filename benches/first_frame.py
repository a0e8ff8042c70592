#!/usr/bin/env python3
"""Time to first frame of a terminal program, in a 120x40 pseudo-terminal:
from spawn until the screen has `marker` on it (or, without a marker, until
it has drawn `min_bytes` after entering the alternate screen). The median of
`runs` runs is printed in milliseconds. Usage:
    first_frame.py RUNS MARKER -- COMMAND ARGS...
"""
import fcntl, os, pty, select, signal, statistics, struct, sys, termios, time

def once(cmd, marker):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    start = time.perf_counter()
    seen = b""
    elapsed = None
    while time.perf_counter() - start < 30:
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if marker.encode() in seen:
            elapsed = time.perf_counter() - start
            break
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return elapsed

def main():
    runs = int(sys.argv[1]); marker = sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    times = [once(cmd, marker) for _ in range(runs)]
    if any(t is None for t in times):
        print("no frame", file=sys.stderr); sys.exit(1)
    print(f"{statistics.median(times) * 1000:.0f} ms")

main()
