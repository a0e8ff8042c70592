"""Type stubs for ``loopdbg._native``, the Rust extension (crates/python/src/lib.rs).

Each function returns the JSON the CLI prints, as text; the modules of
``loopdbg`` parse it. Prefer those: this layer may change between releases.
"""

from typing import List, Optional, Tuple

#: The provider and agent names ``provider=`` takes, comma-separated.
PROVIDERS: str

class InputError(Exception):
    """An input loopdbg cannot read; ``str(e)`` is ``file:line:column: …``."""

    origin: str
    line: Optional[int]
    column: Optional[int]

def check(data: bytes, provider: Optional[str] = None, origin: str = "<body>") -> str: ...
def check_files(paths: List[str], provider: Optional[str] = None, mcp: Optional[str] = None) -> str: ...
def check_files_jsonl(
    paths: List[str], provider: Optional[str] = None, mcp: Optional[str] = None
) -> List[str]: ...
def rows(paths: List[str], provider: Optional[str] = None) -> str: ...
def rows_of(data: bytes, provider: Optional[str] = None, origin: str = "<body>") -> str: ...
def fix(
    data: bytes, mode: str = "synthesize", provider: Optional[str] = None, origin: str = "<body>"
) -> Tuple[str, int]: ...
def _located(message: str, line: Optional[int] = None, column: Optional[int] = None) -> InputError: ...

class Gate:
    def __init__(self, mode: str = "warn", on_unjudged: str = "block") -> None: ...
    def judge(self, path: str, body: bytes) -> str: ...
    def remember(self, response: bytes) -> None: ...
