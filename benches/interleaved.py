#!/usr/bin/env python3
"""Two commands timed in turn, A B B A A B …, so that a machine whose
speed drifts between runs (a shared 2-core VM moves by a third within
a minute) slows both alike; hyperfine runs all of one command, then all
of the other, and such a drift lands on one side only.

Usage: benches/interleaved.py RUNS 'OURS' 'THEIRS'   (shell command lines)

Prints each side's median and fastest wall time and the ratio THEIRS /
OURS: of the medians, and the quartiles of the ratio of each pair of runs
made side by side.
"""
import statistics
import subprocess
import sys
import time


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def main():
    runs, ours, theirs = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    timed(ours), timed(theirs)  # warm the page cache for both
    a, b = [], []
    for i in range(runs):
        if i % 2:
            b.append(timed(theirs)); a.append(timed(ours))
        else:
            a.append(timed(ours)); b.append(timed(theirs))
    ratios = sorted(y / x for x, y in zip(a, b))
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"  interleaved x{runs}: loopdbg {ma:.1f} ms (fastest {min(a):.1f}), agx {mb:.1f} ms (fastest {min(b):.1f});"
          f" {mb / ma:.2f}x of the medians, pairs {q(0.25):.2f}-{q(0.75):.2f}x (quartiles)")


if __name__ == "__main__":
    main()
