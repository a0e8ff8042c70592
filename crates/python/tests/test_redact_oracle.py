"""`--redact` judged by a recogniser the field maintains (issue 59, item
5): Yelp's detect-secrets, with its default plugins, scans each handout
and export `loopdbg run --redact` writes of a session with credentials
planted in its prompt, a tool's table and the reply. Without `--redact`
it finds them (so the oracle can fail; an OTLP export masks them either
way); with it, nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import run_cli

detect_secrets = pytest.importorskip("detect_secrets", reason="detect-secrets is in tests/requirements.txt")
from detect_secrets import SecretsCollection  # noqa: E402
from detect_secrets.settings import default_settings  # noqa: E402

# Credentials of the shapes detect-secrets' plugins know, all fake.
PLANTED = [
    "AKIAIOSFODNN7EXAMPLF",
    "ASIAY34FZKBOKMUTVV7A",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "https://admin:Pa55word-9x@gw.corp.internal/",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "glpat-abcdefghij0123456789",
    "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "sk_live_abcdefghijklmnopqrstuvwx",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAx4Qh",
    "db_password = hunter2hunter2",
]


def _session(tmp_path: Path) -> Path:
    secrets = "; ".join(PLANTED)
    session = {
        "user": f"deploy with these: {secrets}",
        "tools": [
            {
                "name": "read",
                "table": [{"args": {"path": "deploy.env"}, "result": f"found {secrets}"}],
            }
        ],
        "model": {
            "s": [
                {"when": {"round": 1}, "reply": {"tool_calls": [{"id": "call_r1", "name": "read", "args": {"path": "deploy.env"}}]}},
                {"reply": {"text": f"the file holds {secrets}"}},
            ]
        },
    }
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(session))
    return path


def _found(path: Path, kind: str) -> List[str]:
    collection = SecretsCollection()
    with default_settings():
        collection.scan_file(str(path))
    found: Dict[str, List[dict]] = collection.json()
    types = {s["type"] for items in found.values() for s in items}
    # An OTLP export's trace and span ids are random hex by definition.
    if kind == "otlp":
        types.discard("Hex High Entropy String")
    return sorted(types)


@pytest.mark.parametrize("kind", ["md", "html", "json", "otlp"])
def test_detect_secrets_finds_nothing_in_a_redacted_export(cli: Path, tmp_path: Path, kind: str) -> None:
    session = _session(tmp_path)
    plain = tmp_path / f"plain.{kind}"
    done = run_cli(cli, ["run", "--export", kind, "-o", str(plain), str(session)])
    assert done.returncode == 0, done.stderr
    before = _found(plain, kind)
    if kind == "otlp":
        # Spans mask credentials whether or not --redact is given.
        assert before == [], before
    else:
        assert len(before) >= 5, f"the oracle sees the planted keys: {before}"
    redacted = tmp_path / f"redacted.{kind}"
    done = run_cli(cli, ["run", "--export", kind, "--redact", "-o", str(redacted), str(session)])
    assert done.returncode == 0, done.stderr
    assert _found(redacted, kind) == [], redacted.read_text()[:2000]
    text = redacted.read_text()
    for planted in ["Pa55word", "hunter2", "MIIEow", "wJalrXUtnFEMI", "dozjgNryP4J3"]:
        assert planted not in text, f"{kind} kept {planted}"
