"""loopdbg in process: will a provider reject this agent history?

The checker behind ``loopdbg check``, called from Python. Every function
hands its input to the same Rust code the CLI runs, so a result here is
exactly what ``loopdbg check --format json`` prints for the same input::

    import loopdbg

    report = loopdbg.check(body)            # a request body or message array
    for finding in loopdbg.findings(report):
        print(finding["kind"], finding["ids"], finding["message"])

    loopdbg.check_file("agent.jsonl")      # every format `check` reads
    fixed = loopdbg.fix(body)              # the missing results synthesized

Guarding an SDK client (see :mod:`loopdbg.guard`)::

    client = anthropic.Anthropic(http_client=loopdbg.guard.client("raise"))

Fleet runs over many files on Dask (see :mod:`loopdbg.fleet`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from . import _native
from ._native import InputError

__all__ = [
    "InputError",
    "PROVIDERS",
    "check",
    "check_file",
    "check_files",
    "check_jsonl",
    "findings",
    "fix",
    "fix_counted",
    "rows",
    "rows_of",
]

#: The names ``provider=`` takes, as ``check --input-format`` spells them.
PROVIDERS: List[str] = [p.strip() for p in _native.PROVIDERS.split(",")]

Body = Union[str, bytes, bytearray, memoryview, Dict[str, Any], List[Any]]
PathLike = Union[str, "os.PathLike[str]"]


def _bytes(body: Body) -> bytes:
    """The input as the bytes a file holding it would have."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (dict, list)):
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    raise TypeError(
        f"loopdbg takes a request body as str, bytes, dict or list, not {type(body).__name__}"
    )


def _raise_if_unread(report: Dict[str, Any]) -> Dict[str, Any]:
    """Raises :class:`InputError` when a file could not be read at all (the
    CLI exits 2 then); a file with some bad lines keeps them in ``errors``."""
    for f in report["files"]:
        if f["requests"] == 0 and f.get("errors"):
            e = f["errors"][0]
            raise _native._located(e["message"], e.get("line"), e.get("column"))
    return report


def check(body: Body, provider: Optional[str] = None, *, name: str = "<body>") -> Dict[str, Any]:
    """Checks one input held in memory: a request body, a message array,
    JSON Lines of them, an agent log or a trace (``str``, ``bytes``, or an
    already parsed ``dict``/``list``).

    Returns the document ``loopdbg check --format json`` prints for a file
    holding the same bytes, with ``name`` as its file (pass ``"<stdin>"``
    to match ``loopdbg check -`` exactly). ``provider`` forces the format
    (one of :data:`PROVIDERS`); left out, it is detected.

    Raises :class:`InputError` (``file:line:column: …``) when nothing in
    the input can be read, :class:`ValueError` for an unknown provider.
    """
    text = _native.check(_bytes(body), provider, name)
    return _raise_if_unread(json.loads(text))


def check_file(
    path: PathLike, provider: Optional[str] = None, *, mcp: Optional[PathLike] = None
) -> Dict[str, Any]:
    """``loopdbg check --format json PATH``: every format ``check`` reads
    (request bodies, JSON Lines, proxy captures, agent logs, HTTP
    recordings, OTLP traces, MCP captures). ``mcp`` is a ``loopdbg mcp``
    capture to match the model's calls against (``check --mcp``).

    Raises :class:`InputError` when the file cannot be read at all.
    """
    return check_files([path], provider, mcp=mcp)


def check_files(
    paths: Sequence[PathLike], provider: Optional[str] = None, *, mcp: Optional[PathLike] = None
) -> Dict[str, Any]:
    """``loopdbg check --format json PATH…`` over several files. A file that
    cannot be read is reported in its ``errors`` and the others are still
    checked; :class:`InputError` is raised only when one file was given
    and it could not be read."""
    names = [os.fspath(p) for p in paths]
    report = json.loads(_native.check_files(names, provider, _opt_path(mcp)))
    if len(names) == 1:
        _raise_if_unread(report)
    return report


def check_jsonl(
    paths: Sequence[PathLike], provider: Optional[str] = None, *, mcp: Optional[PathLike] = None
) -> List[Dict[str, Any]]:
    """The records ``loopdbg check --format jsonl PATH…`` prints: one per
    conversation (``{"file", "conversation"}``), then one per file that
    failed or held nothing."""
    names = [os.fspath(p) for p in paths]
    return [json.loads(r) for r in _native.check_files_jsonl(names, provider, _opt_path(mcp))]


def findings(report: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """Every finding of a report from :func:`check` or :func:`check_file`,
    each with the ``file`` and ``conversation`` it belongs to."""
    for f in report["files"]:
        for conv in f["results"]:
            for finding in conv["findings"]:
                yield dict(finding, file=f["file"], conversation=conv["conversation"])


def fix(
    body: Body,
    mode: str = "synthesize",
    provider: Optional[str] = None,
    *,
    name: str = "<body>",
) -> Any:
    """``loopdbg check --fix MODE``: the input repaired. ``synthesize`` adds
    an error result for each call left without one; ``strip`` removes the
    unanswered calls (and results that answer nothing).

    Returns the repaired body parsed (a ``dict`` for a request body, a
    ``list`` for a message array). JSON Lines come back as ``str``, one
    repaired line per line. Raises :class:`InputError` for an input that
    cannot be read or is not rewritten (an agent log, a trace).
    """
    text, _changes = _native.fix(_bytes(body), mode, provider, name)
    try:
        return json.loads(text)
    except ValueError:
        return text


def fix_counted(
    body: Body, mode: str = "synthesize", provider: Optional[str] = None, *, name: str = "<body>"
) -> "tuple[Any, int]":
    """:func:`fix`, and how many calls or results the repair added or
    removed (0: nothing needed repair)."""
    text, changes = _native.fix(_bytes(body), mode, provider, name)
    try:
        return json.loads(text), changes
    except ValueError:
        return text, changes


def rows(paths: Union[PathLike, Iterable[PathLike]], provider: Optional[str] = None) -> List[Dict[str, Any]]:
    """The check as table rows: one per conversation (``file``, ``format``,
    ``conversation``, ``severity``, ``kinds``, ``ids``, ``message``, …) and
    one per file, or line, that could not be read (``error``). The rows of
    a conversation are what ``check --format jsonl`` prints for it,
    flattened; see :mod:`loopdbg.fleet` for Parquet and Dask."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return json.loads(_native.rows([os.fspath(p) for p in paths], provider))


def rows_of(body: Body, provider: Optional[str] = None, *, name: str = "<body>") -> List[Dict[str, Any]]:
    """:func:`rows` for one input held in memory (a warehouse column)."""
    return json.loads(_native.rows_of(_bytes(body), provider, name))


def _opt_path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


def __getattr__(name: str) -> Any:
    # The guard needs httpx and the fleet needs Dask: imported when used,
    # so `import loopdbg` takes neither.
    if name in ("guard", "fleet"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'loopdbg' has no attribute {name!r}")
