"""The pytest suite of the `loopdbg` Python package. It runs against the
package as installed (`pip install ./crates/python`), beside the CLI and
the fake provider built from the same clone, so every comparison is the
wheel's Rust code against the binary's:

- ``LOOPDBG_BIN``: the `loopdbg` binary (default ``target/debug/loopdbg``,
  built with cargo when missing);
- ``LOOPDBG_FAKE``: the fake provider (default ``target/debug/loopdbg-fake``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


def _binary(env: str, package: str, name: str) -> Path:
    given = os.environ.get(env)
    if given:
        return Path(given)
    path = REPO / "target" / "debug" / name
    if not path.exists():
        subprocess.run(
            ["cargo", "build", "--quiet", "-p", package, "--bin", name], cwd=REPO, check=True
        )
    return path


@pytest.fixture(scope="session")
def cli() -> Path:
    return _binary("LOOPDBG_BIN", "loopdbg", "loopdbg")


@pytest.fixture(scope="session")
def fake_binary() -> Path:
    return _binary("LOOPDBG_FAKE", "loopdbg-fake", "loopdbg-fake")


class Fake:
    """The fake provider in a process of its own, on loopback."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([str(binary)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def served(self) -> int:
        """How many requests reached it."""
        import urllib.request

        with urllib.request.urlopen(self.url + "/__fake/requests") as r:
            return json.load(r)["requests"]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def fake(fake_binary: Path) -> Iterator[Fake]:
    f = Fake(fake_binary)
    yield f
    f.stop()


def run_cli(cli: Path, args: List[str], stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], input=stdin, capture_output=True, cwd=REPO)


def fixture_files() -> List[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file())


def pytest_report_header(config: pytest.Config) -> str:
    import loopdbg

    return f"loopdbg package at {Path(loopdbg.__file__).parent} (python {sys.version.split()[0]})"
