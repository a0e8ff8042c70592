"""The package's types hold: mypy reads the installed package (its
``py.typed``, ``_native.pyi`` and inline hints) and a user's script
calling it, and finds no error."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def mypy(*targets: str, cwd) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", *targets],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_mypy_finds_no_error_in_the_package_or_its_use(tmp_path):
    pytest.importorskip("mypy")
    # The package by its name (a folder under site-packages given as a
    # path would make site-packages a source root); then a user's script,
    # whose calls are checked against the package's types.
    mypy("-p", "loopdbg", cwd=tmp_path)
    script = tmp_path / "user.py"
    script.write_text(USER)
    mypy(str(script), cwd=tmp_path)
