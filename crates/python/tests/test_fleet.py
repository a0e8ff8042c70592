"""Fleet checks on a real Dask distributed cluster (a scheduler and two
worker processes on loopback): a sharded corpus of JSON Lines of bodies
and agent logs lands in Parquet, and its totals are the CLI's over the
same files. And the DuckDB functions over a column of bodies."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import loopdbg
import loopdbg.fleet
from conftest import FIXTURES, REPO, fixture_files, run_cli
from test_check import UNANSWERED

LOGS = {"claude-code", "codex", "gemini-cli", "copilot-cli", "opencode"}


def kinds_of_fixtures():
    """Fixture request bodies (one document each) and agent logs."""
    bodies, logs = [], []
    for path in fixture_files():
        try:
            report = loopdbg.check_file(path)
        except loopdbg.InputError:
            continue
        f = report["files"][0]
        # A file with nothing to check (a trace of no LLM span) has no format.
        if f.get("format") in LOGS and not f.get("errors"):
            logs.append(path)
        elif f.get("format") in {"anthropic", "openai", "responses", "gemini"} and f["requests"] == 1:
            try:
                doc = json.loads(path.read_text())
            except ValueError:
                continue
            # A body, not an HTTP recording of one.
            if isinstance(doc, dict) and {"messages", "input", "contents"} & doc.keys():
                bodies.append(doc)
    return bodies, logs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """40 shards of JSON Lines (bodies, some broken, some bad lines), the
    fixture agent logs, an unreadable file and an empty one."""
    root = tmp_path_factory.mktemp("corpus")
    bodies, logs = kinds_of_fixtures()
    assert len(bodies) >= 10 and len(logs) >= 5, (len(bodies), len(logs))
    rng = random.Random(27)
    paths = []
    for shard in range(40):
        lines = []
        for n in range(25):
            if n % 11 == 10:
                lines.append("{not json")
                continue
            body = json.loads(json.dumps(rng.choice(bodies + [UNANSWERED])))
            if body is UNANSWERED or "messages" in body and n % 5 == 0:
                body = json.loads(json.dumps(UNANSWERED))
                body["messages"][1]["content"][1]["id"] = f"toolu_s{shard}n{n}"
            lines.append(json.dumps(body, ensure_ascii=False))
        p = root / f"bodies-{shard:03d}.jsonl"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    for i, log in enumerate(logs):
        p = root / f"log-{i:03d}-{log.name}"
        shutil.copy(log, p)
        paths.append(p)
    (root / "broken.json").write_text('{"messages": [')
    (root / "empty.jsonl").write_text("")
    paths += [root / "broken.json", root / "empty.jsonl"]
    return [str(p) for p in paths]


def cli_totals(cli, paths):
    out = run_cli(cli, ["check", "--format", "jsonl", *paths])
    assert out.returncode == 2, out.stderr  # broken.json is unreadable
    convs, conversations, unreadable = [], set(), 0
    per_file = Counter()
    for line in out.stdout.decode().splitlines():
        record = json.loads(line)
        if "conversation" in record:
            convs.append(record["conversation"])
            conversations.add((record["file"], record["conversation"]["conversation"]))
            per_file[record["file"]] += 1
        else:
            unreadable += len(record["errors"]) + (1 if record.get("warning") else 0)
    kinds = Counter()
    for c in convs:
        kinds.update({f["kind"] for f in c["findings"]})
    return {
        "requests": len(convs),
        "conversations": len(conversations),
        "with_findings": sum(1 for c in convs if c["findings"]),
        "problems": sum(1 for c in convs for f in c["findings"] if f["severity"] != "note"),
        "rejected": sum(1 for c in convs if any(f["rejected_by_provider"] for f in c["findings"])),
        "unreadable": unreadable,
        "by_kind": dict(sorted(kinds.items())),
    }, per_file


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as c, distributed.Client(c) as client:
        yield client


def test_the_fleet_run_lands_in_parquet_with_the_clis_totals(cli, corpus, cluster, tmp_path):
    import distributed

    expected, per_file = cli_totals(cli, corpus)
    assert expected["rejected"] > 40 and expected["unreadable"] > 40, expected
    out = tmp_path / "checked"
    with distributed.get_task_stream(cluster) as stream:
        summary = loopdbg.fleet.write_parquet(corpus, str(out), cluster, files_per_task=3)
    workers = {task["worker"] for task in stream.data}
    assert len(workers) == 2, f"every task ran on one worker: {workers}"
    table = pq.read_table(out)
    assert table.schema.equals(loopdbg.fleet.SCHEMA, check_metadata=False)
    assert loopdbg.fleet.totals(table) == expected
    assert {k: summary[k] for k in expected} == expected
    files = Counter(f for f, c in zip(table["file"].to_pylist(), table["conversation"].to_pylist()) if c)
    assert files == per_file


def test_gathered_tables_keep_the_order_of_the_paths(corpus, cluster):
    local = loopdbg.fleet.check_table(corpus)
    gathered = loopdbg.fleet.check_corpus(corpus, cluster, files_per_task=5)
    assert gathered.equals(local)


def test_the_arrow_columns_are_the_rows(corpus):
    """Rows built as Arrow columns in Rust (the C data interface) hold what
    the rows as JSON hold, file by file, with the table's own schema;
    gzip and the remote path (fsspec, bytes in memory) read the same."""
    import pyarrow as pa

    table = loopdbg.fleet.check_table(corpus)
    assert table.schema.equals(loopdbg.fleet.SCHEMA, check_metadata=False)
    expected = [dict(r) for p in corpus for r in loopdbg.rows(p)]
    got = table.to_pylist()
    assert len(got) == len(expected) > 1000
    columns = loopdbg.fleet.SCHEMA.names
    for a, b in zip(got, expected):
        assert a == {name: b.get(name, [] if name in ("kinds", "ids") else None) for name in columns}
    native = loopdbg._native.rows_arrow([corpus[0]])
    assert len(native) == len(loopdbg.rows(corpus[0]))
    assert pa.record_batch(native).num_rows == len(native)
    remote = loopdbg.fleet.check_table(["file://" + corpus[0]])
    assert remote.column("conversation").equals(table.slice(0, remote.num_rows).column("conversation"))


def test_a_row_names_the_file_the_provider_and_the_ids(corpus):
    table = loopdbg.fleet.check_table(corpus[:1])
    rows = [r for r in table.to_pylist() if r["rejected_by_provider"] and r["format"] == "anthropic"]
    assert rows, table.to_pylist()
    row = rows[0]
    assert row["file"] == corpus[0] and row["severity"] == "400"
    assert "unanswered_call" in row["kinds"]
    assert any(i.startswith("toolu_s0n") for i in row["ids"])
    bad = [r for r in table.to_pylist() if r["error"]]
    assert bad and all(r["error"].startswith(corpus[0] + ":") for r in bad)


def test_duckdb_checks_a_column_of_bodies(cli, corpus):
    duckdb = pytest.importorskip("duckdb")
    bodies = [line for line in Path(corpus[0]).read_text().splitlines()]
    con = duckdb.connect()
    try:
        loopdbg.fleet.register_duckdb(con)
        con.execute("CREATE TABLE runs (id INTEGER, body VARCHAR)")
        con.executemany("INSERT INTO runs VALUES (?, ?)", list(enumerate(bodies)))
        rejected = con.execute("SELECT count(*) FROM runs WHERE loopdbg_rejected(body)").fetchone()[0]
        by_kind = dict(
            con.execute(
                "SELECT kind, count(*) FROM (SELECT unnest(loopdbg_kinds(body)) AS kind FROM runs) GROUP BY kind"
            ).fetchall()
        )
        doc = json.loads(con.execute("SELECT loopdbg_check(body) FROM runs WHERE id = 0").fetchone()[0])
    finally:
        con.close()
    # The CLI over each body as its own input.
    expected_rejected, expected_kinds = 0, Counter()
    for body in bodies:
        out = run_cli(cli, ["check", "--format", "json", "-"], body.encode())
        report = json.loads(out.stdout)
        found = [f for f in report["files"][0]["results"] for f in f["findings"]]
        expected_rejected += any(f["rejected_by_provider"] for f in found)
        expected_kinds.update({f["kind"] for f in found})
        if body is bodies[0]:
            assert doc == json.loads(
                run_cli(cli, ["check", "--format", "json", "-"], body.encode()).stdout.decode().replace('"<stdin>"', '"<body>"')
            )
    assert rejected == expected_rejected > 0
    assert by_kind == dict(expected_kinds)
