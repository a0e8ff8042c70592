"""The Python page's examples (docs/python.md) run, in order, and print
what they show: each ``#> `` line of a block is a line the block prints."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from conftest import REPO


def blocks():
    page = (REPO / "docs" / "python.md").read_text()
    return re.findall(r"```python\n(.*?)```", page, flags=re.S)


def test_the_readme_has_its_python_examples():
    assert len(blocks()) >= 4


def test_the_readme_examples_print_what_they_show(fake, tmp_path, monkeypatch):
    # The examples read tests/fixtures and write `checked/` where they run.
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-example")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    namespace: dict = {}
    for n, code in enumerate(blocks(), start=1):
        shown = [line[3:] for line in code.splitlines() if line.startswith("#> ")]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README python block {n}", "exec"), namespace)
        assert out.getvalue().splitlines() == shown, f"block {n}:\n{code}"
    # Blocked under "raise": the guard example sent nothing.
    assert fake.served() == 0
