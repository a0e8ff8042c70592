"""The package's types hold: mypy reads the installed package (its
``py.typed``, ``_native.pyi`` and inline hints) and a user's script
calling it, and finds no error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import loopdbg

USER = '''
import loopdbg
import loopdbg.guard

report: dict = loopdbg.check({"model": "m", "messages": []}, provider="anthropic")
fixed = loopdbg.fix('{"messages": []}', mode="strip")
rows: list = loopdbg.rows(["a.jsonl"])
transport = loopdbg.guard.GuardTransport("raise")
try:
    loopdbg.check_file("x.json")
except loopdbg.InputError as e:
    line: "int | None" = e.line
'''


def test_mypy_finds_no_error_in_the_package_or_its_use(tmp_path):
    pytest.importorskip("mypy")
    script = tmp_path / "user.py"
    script.write_text(USER)
    package = Path(loopdbg.__file__).parent
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", str(package), str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout
