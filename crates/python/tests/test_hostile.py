"""Issue 59's goal in Python, which must never abort: no input under 1 MB
takes more than 1 GiB. Each input is checked by `loopdbg.check` and
`loopdbg.check_file` in a child interpreter whose address space is limited
to 1 GiB (``RLIMIT_AS``): it ends with a report or an ``InputError``, never
a signal. Before the bounds, the first two took the interpreter past
15 GB, the third 4 GB."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

resource = pytest.importorskip("resource", reason="RLIMIT_AS is POSIX")

ZEROS = b"0," * (1 << 19)


def _members(*parts: tuple[bytes, int]) -> bytes:
    """Gzip members one after another: 100 MB from one compressed MB."""
    out = b""
    for data, times in parts:
        out += gzip.compress(data, compresslevel=9) * times
    return out


INPUTS = {
    "bomb.json.gz": _members((b'{"messages":[', 1), (ZEROS, 100), (b"0]}", 1)),
    "values.json.gz": _members(
        (b'{"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":[', 1),
        (ZEROS, 15),
        (b"0]}]}", 1),
    ),
    "ids.traj": json.dumps(
        {
            "trajectory": [],
            "info": {},
            "history": [
                {"role": "system", "content": "s"},
                {"role": "tool", "content": "x" * 100_000, "tool_call_ids": [f"c{i}" for i in range(20_000)]},
            ],
        }
    ).encode(),
}

CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import loopdbg
path = sys.argv[1]
for how in ("check", "check_file"):
    try:
        if how == "check":
            loopdbg.check(open(path, "rb").read(), name=path)
        else:
            loopdbg.check_file(path)
        print(how, "report")
    except loopdbg.InputError as e:
        print(how, "refused:", str(e).splitlines()[0])
"""


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_an_input_under_a_megabyte_is_checked_within_a_gibibyte(tmp_path: Path, name: str) -> None:
    data = INPUTS[name]
    assert len(data) < 1 << 20
    path = tmp_path / name
    path.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, f"{name}: {done.returncode}\n{done.stdout}{done.stderr}"
    said = done.stdout.splitlines()
    assert [line.split()[0] for line in said] == ["check", "check_file"], done.stdout
