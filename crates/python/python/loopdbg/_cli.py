"""The ``loopdbg`` command, from the wheel.

A wheel from PyPI carries the command-line program itself
(``loopdbg/bin/loopdbg``, built from the same sources as the extension):
``pip install loopdbg`` puts ``loopdbg`` on PATH for people without Rust,
and this entry point hands the process over to it. ``python -m loopdbg``
does the same.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional


def binary() -> Optional[str]:
    """The path of the program the wheel carries, or None when it was
    built without it (``pip install ./crates/python`` from a clone where
    ``scripts/build-wheel.sh`` has not put it there)."""
    name = "loopdbg.exe" if os.name == "nt" else "loopdbg"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)
    return path if os.path.isfile(path) else None


def main(argv: Optional[List[str]] = None) -> int:
    """Run the program with ``argv`` (the command line's by default)."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = binary()
    if path is None:
        sys.stderr.write(
            "loopdbg: this Python package was built without the command-line program "
            "(the wheels on PyPI carry it; from a clone, scripts/build-wheel.sh builds one that does). "
            "The functions are here: python -c 'import loopdbg; help(loopdbg)'\n"
        )
        return 2
    if os.name == "nt":
        # No exec on Windows: the child's status is passed on.
        import subprocess

        return subprocess.call([path, *args])
    os.execv(path, [path, *args])
    return 0  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
