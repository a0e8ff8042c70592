"""Conversations (request bodies) checked per second per worker: the Python package in process and
on Dask distributed, beside the CLI on the same shard (docs/performance.md). Run by benches/python_fleet.sh, which builds the release
CLI and the virtualenv; prints a Markdown table.

Every measure takes one core: RAYON_NUM_THREADS=1 for the CLI and for the
package (whose checker spreads JSON Lines over the cores otherwise), and
Dask workers of one thread. The shard is JSON Lines of request bodies
taken from the project's fixtures (a third of them with an unanswered
call), the kind of file a fleet run reads.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = os.environ.get("LOOPDBG_BIN", str(REPO / "target/release/loopdbg"))
LINES = int(os.environ.get("LINES", "20000"))
SHARDS = int(os.environ.get("SHARDS", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))

os.environ["RAYON_NUM_THREADS"] = "1"  # before the extension starts its pool

import loopdbg  # noqa: E402
import loopdbg.fleet  # noqa: E402


def bodies():
    found = []
    for p in sorted((REPO / "tests/fixtures").rglob("*.json")):
        try:
            r = loopdbg.check_file(p)
        except loopdbg.InputError:
            continue
        f = r["files"][0]
        if f["format"] in {"anthropic", "openai", "responses", "gemini"} and f["requests"] == 1:
            try:
                doc = json.loads(p.read_text())
            except ValueError:
                continue
            # A body, not an HTTP recording of one.
            if isinstance(doc, dict) and {"messages", "input", "contents"} & doc.keys():
                found.append(doc)
    return found


def shard(folder: Path, name: str, pool, rng) -> Path:
    path = folder / name
    with path.open("w") as out:
        for _ in range(LINES):
            out.write(json.dumps(rng.choice(pool), ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def median_seconds(fn) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rng = random.Random(27)
    pool = bodies()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = [str(shard(folder, f"shard-{i:02d}.jsonl", pool, rng)) for i in range(SHARDS)]
        one = paths[0]
        convs = len(loopdbg.rows(one))
        env = dict(os.environ, RAYON_NUM_THREADS="1")
        cli = median_seconds(
            lambda: subprocess.run([CLI, "check", "--format", "jsonl", one], env=env, stdout=subprocess.DEVNULL)
        )
        rows = median_seconds(lambda: loopdbg.rows(one))
        table = median_seconds(lambda: loopdbg.fleet.check_table([one]))
        print(f"shard: {convs} bodies ({Path(one).stat().st_size >> 20} MiB), median of {ROUNDS}")
        print()
        print("| run | workers | bodies/s | per worker |")
        print("|---|---|---|---|")
        print(f"| `loopdbg check --format jsonl` (one core) | 1 | {convs / cli:,.0f} | {convs / cli:,.0f} |")
        print(f"| `loopdbg.rows(path)` in process | 1 | {convs / rows:,.0f} | {convs / rows:,.0f} |")
        print(f"| `loopdbg.fleet.check_table` (rows → Arrow) | 1 | {convs / table:,.0f} | {convs / table:,.0f} |")
        from distributed import Client, LocalCluster

        for workers in (1, 2):
            with LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster, Client(cluster) as client:
                out = folder / f"out-{workers}"
                loopdbg.fleet.write_parquet(paths[:workers], str(out), client, files_per_task=1)  # warm
                seconds = median_seconds(
                    lambda: loopdbg.fleet.write_parquet(paths, str(out), client, files_per_task=1)
                )
            total = convs * SHARDS
            print(
                f"| `fleet.write_parquet`, Dask, {SHARDS} shards → Parquet | {workers} | "
                f"{total / seconds:,.0f} | {total / seconds / workers:,.0f} |"
            )
        print()
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
