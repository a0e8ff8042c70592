"""Fleet checks: loopdbg's check over a sharded corpus, on Dask distributed,
into a table that lands in Parquet; and a DuckDB function for runs that
already sit in a warehouse.

One row per request checked (a body, a log segment, a captured exchange;
see :data:`SCHEMA`), numbered by the conversation it belongs to: ``file``, ``format`` (the
provider or agent it was read as), ``conversation``, ``severity``,
``kinds``, ``ids``, ``message``, and ``error`` on the rows of files, or
lines, that could not be read. A row is what ``loopdbg check --format
jsonl`` prints for that conversation, so the totals over a corpus are the
CLI's over the same files.

On a laptop or a real cluster alike::

    from dask.distributed import Client
    import loopdbg.fleet

    client = Client()                      # or Client("tcp://scheduler:8786")
    paths = sorted(glob.glob("runs/2026-11-*/**/*.jsonl", recursive=True))
    summary = loopdbg.fleet.write_parquet(paths, "checked/", client)
    # checked/part-00000.parquet …, written by the workers themselves

    table = loopdbg.fleet.check_corpus(paths, client)    # or gathered here
    loopdbg.fleet.totals(table)

Each task checks a batch of files (``files_per_task``) with the Rust
checker, which does not hold the GIL. Paths with a scheme (``s3://``,
``gs://``) are read through fsspec on the worker.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Sequence

import pyarrow as pa

from . import _native

__all__ = [
    "SCHEMA",
    "check_corpus",
    "check_table",
    "register_duckdb",
    "table",
    "totals",
    "write_parquet",
]

#: The table's columns, as Parquet stores them.
SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("format", pa.string()),
        ("conversation", pa.int64()),
        ("request", pa.int64()),
        ("line", pa.int64()),
        ("label", pa.string()),
        ("messages", pa.int64()),
        ("findings", pa.int64()),
        ("problems", pa.int64()),
        ("rejected_by_provider", pa.bool_()),
        ("severity", pa.string()),
        ("kinds", pa.list_(pa.string())),
        ("ids", pa.list_(pa.string())),
        ("message", pa.string()),
        ("error", pa.string()),
    ]
)


def table(rows: Iterable[Dict[str, Any]]) -> pa.Table:
    """Rows (from :func:`loopdbg.rows`) as an Arrow table of :data:`SCHEMA`."""
    return pa.Table.from_pylist(list(rows), schema=SCHEMA)


def _batch_of_path(path: str, provider: Optional[str]) -> pa.RecordBatch:
    if "://" in path:
        import fsspec

        with fsspec.open(path, "rb", compression="infer") as f:
            data = f.read()
        return pa.record_batch(_native.rows_arrow_of(data, provider, path))
    return pa.record_batch(_native.rows_arrow([path], provider))


def check_table(paths: Sequence[str], provider: Optional[str] = None) -> pa.Table:
    """The table of ``paths``, checked in this process. The rows are built
    as Arrow columns in Rust and reach pyarrow through the Arrow C data
    interface: no JSON, no Python object per row."""
    batches = [_batch_of_path(os.fspath(p), provider) for p in paths]
    return pa.Table.from_batches(batches, schema=SCHEMA)


def _batches(paths: Sequence[str], files_per_task: int) -> List[List[str]]:
    if files_per_task < 1:
        raise ValueError("files_per_task must be at least 1")
    paths = [os.fspath(p) for p in paths]
    return [paths[i : i + files_per_task] for i in range(0, len(paths), files_per_task)]


def _client(client: Any) -> Any:
    if client is not None:
        return client
    from distributed import get_client

    return get_client()


def check_corpus(
    paths: Sequence[str],
    client: Any = None,
    *,
    provider: Optional[str] = None,
    files_per_task: int = 4,
) -> pa.Table:
    """Checks ``paths`` on the Dask cluster of ``client`` (the current one
    when left out) and gathers the table here, in the order of ``paths``."""
    c = _client(client)
    futures = c.map(check_table, _batches(paths, files_per_task), provider=provider, pure=False)
    parts = c.gather(futures)
    return pa.concat_tables(parts) if parts else table([])


def _write_part(paths: List[str], out: str, index: int, provider: Optional[str]) -> Dict[str, Any]:
    import pyarrow.parquet as pq

    t = check_table(paths, provider)
    name = f"part-{index:05d}.parquet"
    if "://" in out:
        import fsspec

        with fsspec.open(f"{out.rstrip('/')}/{name}", "wb") as f:
            pq.write_table(t, f)
    else:
        pq.write_table(t, os.path.join(out, name))
    return {"part": name, "files": len(paths), "rows": t.num_rows, **totals(t)}


def write_parquet(
    paths: Sequence[str],
    out: str,
    client: Any = None,
    *,
    provider: Optional[str] = None,
    files_per_task: int = 4,
) -> Dict[str, Any]:
    """Checks ``paths`` on the cluster; each task writes its own
    ``part-NNNNN.parquet`` under ``out`` (a folder every worker sees, or an
    fsspec URL), so no table passes through the client. Returns the totals
    and the parts written (a file is never split between parts, so the
    parts' conversations add up)."""
    if "://" not in out:
        os.makedirs(out, exist_ok=True)
    c = _client(client)
    batches = _batches(paths, files_per_task)
    futures = [
        c.submit(_write_part, batch, out, i, provider, pure=False) for i, batch in enumerate(batches)
    ]
    parts = c.gather(futures)
    summed: Counter = Counter()
    kinds: Counter = Counter()
    for part in parts:
        kinds.update(part.pop("by_kind"))
        summed.update({k: v for k, v in part.items() if isinstance(v, int)})
    result: Dict[str, Any] = dict(summed)
    result["by_kind"] = dict(sorted(kinds.items()))
    result["parts"] = [p["part"] for p in parts]
    return result


def totals(t: pa.Table) -> Dict[str, Any]:
    """What a table adds up to, as ``check`` counts: ``requests`` checked
    (a row each: a body, a log segment, a captured exchange),
    ``conversations`` (a loop's requests are one), requests with findings,
    ``problems`` (findings other than notes), requests a provider would
    refuse, rows of what could not be read, and requests per finding kind."""
    d = t.to_pydict()
    rows = [i for i, c in enumerate(d["conversation"]) if c is not None]
    kinds: Counter = Counter()
    for i in rows:
        kinds.update(d["kinds"][i])
    return {
        "requests": len(rows),
        "conversations": len({(d["file"][i], d["conversation"][i]) for i in rows}),
        "with_findings": sum(1 for i in rows if d["findings"][i]),
        "problems": sum(d["problems"][i] for i in rows),
        "rejected": sum(1 for i in rows if d["rejected_by_provider"][i]),
        "unreadable": sum(1 for e in d["error"] if e is not None),
        "by_kind": dict(sorted(kinds.items())),
    }


def register_duckdb(con: Any, prefix: str = "loopdbg") -> None:
    """Registers the check as DuckDB functions on connection ``con``, for a
    column of request bodies (``VARCHAR``, or ``JSON`` cast to it):

    - ``loopdbg_check(body) -> VARCHAR``: the ``check --format json``
      document, as JSON text (an unreadable body gives its ``errors``, not
      a failed query);
    - ``loopdbg_rejected(body) -> BOOLEAN``: would the provider refuse it;
    - ``loopdbg_kinds(body) -> VARCHAR[]``: its finding kinds;
    - ``loopdbg_ids(body) -> VARCHAR[]``: the ids involved.
    """
    def rows(body: str) -> List[Dict[str, Any]]:
        return json.loads(_native.rows_of(body.encode(), None, "<body>"))

    def check(body: str) -> str:
        return _native.check(body.encode(), None, "<body>")

    def rejected(body: str) -> bool:
        return any(r["rejected_by_provider"] for r in rows(body))

    def kinds(body: str) -> List[str]:
        return [k for r in rows(body) for k in r["kinds"]]

    def ids(body: str) -> List[str]:
        return [i for r in rows(body) for i in r["ids"]]

    text, flag, strings = "VARCHAR", "BOOLEAN", "VARCHAR[]"
    con.create_function(f"{prefix}_check", check, [text], text)
    con.create_function(f"{prefix}_rejected", rejected, [text], flag)
    con.create_function(f"{prefix}_kinds", kinds, [text], strings)
    con.create_function(f"{prefix}_ids", ids, [text], strings)
