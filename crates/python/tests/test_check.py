"""`loopdbg.check`, `check_file`, `check_jsonl` and `fix` give exactly what
the CLI prints for the same input, on every fixture of the project."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import loopdbg
from conftest import FIXTURES, REPO, fixture_files, run_cli

UNANSWERED = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [
        {"role": "user", "content": "Weather in Beijing and the USD/CNY rate?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_w1", "name": "weather", "input": {"city": "Beijing"}},
                {"type": "tool_use", "id": "toolu_f1", "name": "fx", "input": {"pair": "USD/CNY"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "18°C"}],
        },
    ],
}

FILES = fixture_files()
IDS = [str(p.relative_to(FIXTURES)) for p in FILES]


def test_the_fixtures_are_there():
    # A clone without its fixtures would make the comparisons below vacuous.
    assert len(FILES) > 100, FILES


def test_an_unanswered_tool_use_is_the_providers_400_naming_its_id():
    report = loopdbg.check(UNANSWERED)
    found = list(loopdbg.findings(report))
    assert [f["kind"] for f in found] == ["unanswered_call"]
    assert found[0]["rejected_by_provider"] is True
    assert found[0]["ids"] == ["toolu_f1"]
    assert "toolu_f1" in found[0]["message"]
    assert report["problems"] == 1 and report["with_problems"] == 1


@pytest.mark.parametrize("form", ["dict", "str", "bytes", "pretty"])
def test_every_form_of_a_body_is_the_same_check(cli, form):
    text = json.dumps(UNANSWERED, ensure_ascii=False)
    body = {
        "dict": UNANSWERED,
        "str": text,
        "bytes": text.encode(),
        "pretty": json.dumps(UNANSWERED, indent=2),
    }[form]
    stdin = body if isinstance(body, bytes) else (text if form == "dict" else body).encode()
    out = run_cli(cli, ["check", "--format", "json", "-"], stdin)
    assert out.returncode == 1, out.stderr
    assert loopdbg.check(body, name="<stdin>") == json.loads(out.stdout)


def test_a_message_array_alone_is_checked():
    report = loopdbg.check(UNANSWERED["messages"], provider="anthropic")
    assert [f["ids"] for f in loopdbg.findings(report)] == [["toolu_f1"]]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_check_file_equals_the_cli_on_every_fixture(cli, path):
    rel = str(path.relative_to(REPO))
    out = run_cli(cli, ["check", "--format", "json", rel])
    expected = json.loads(out.stdout)
    if out.returncode == 2 and expected["files"][0]["requests"] == 0:
        with pytest.raises(loopdbg.InputError) as raised:
            loopdbg.check_file(rel)
        error = expected["files"][0]["errors"][0]
        assert str(raised.value) == error["message"]
        assert (raised.value.line, raised.value.column) == (error.get("line"), error.get("column"))
    else:
        cwd = os.getcwd()
        os.chdir(REPO)
        try:
            assert loopdbg.check_file(rel) == expected
        finally:
            os.chdir(cwd)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_check_of_the_bytes_equals_the_cli_on_standard_input(cli, path):
    data = path.read_bytes()
    out = run_cli(cli, ["check", "--format", "json", "-"], data)
    expected = json.loads(out.stdout)
    if out.returncode == 2 and expected["files"][0]["requests"] == 0:
        with pytest.raises(loopdbg.InputError) as raised:
            loopdbg.check(data, name="<stdin>")
        assert str(raised.value) == expected["files"][0]["errors"][0]["message"]
    else:
        assert loopdbg.check(data, name="<stdin>") == expected


def test_jsonl_records_equal_the_cli_over_all_fixtures_at_once(cli):
    rels = [str(p.relative_to(REPO)) for p in FILES]
    out = run_cli(cli, ["check", "--format", "jsonl", *rels])
    expected = [json.loads(line) for line in out.stdout.splitlines()]
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert loopdbg.check_jsonl(rels) == expected
    finally:
        os.chdir(cwd)
    assert len(expected) > len(rels)


@pytest.mark.parametrize("mode", ["synthesize", "strip"])
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fix_equals_the_cli_on_every_fixture(cli, tmp_path, path, mode):
    out_file = tmp_path / "fixed"
    out = run_cli(cli, ["check", "--fix", mode, "-o", str(out_file), "-"], path.read_bytes())
    if not out_file.exists():
        # Refused (a log, a trace, an MCP capture) or unreadable: the
        # package raises the same located error.
        with pytest.raises(loopdbg.InputError) as raised:
            loopdbg.fix(path.read_bytes(), mode, name="<stdin>")
        assert str(raised.value) in out.stderr.decode()
        return
    fixed, changes = loopdbg.fix_counted(path.read_bytes(), mode, name="<stdin>")
    text = out_file.read_text()
    try:
        assert fixed == json.loads(text)
    except ValueError:
        assert fixed == text
    assert f"({changes} repair(s))" in out.stderr.decode()


def test_a_fixed_body_passes_the_check():
    fixed = loopdbg.fix(UNANSWERED)
    assert loopdbg.check(fixed)["problems"] == 0
    stripped = loopdbg.fix(UNANSWERED, mode="strip")
    assert loopdbg.check(stripped)["problems"] == 0
    assert "toolu_f1" not in json.dumps(stripped)


def test_an_unreadable_body_is_a_located_input_error():
    with pytest.raises(loopdbg.InputError) as raised:
        loopdbg.check('{"model": "m", "messages": [\n  {"role": "user", "content": "hi"},\n  oops\n]}')
    e = raised.value
    assert str(e).startswith("<body>:3:3: ")
    assert (e.origin, e.line, e.column) == ("<body>", 3, 3)


def test_a_missing_file_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(loopdbg.InputError, match="nope.json"):
        loopdbg.check_file(missing)


def test_several_files_keep_going_past_a_bad_one(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(UNANSWERED))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    report = loopdbg.check_files([good, bad])
    assert report["unreadable"] == 1 and report["problems"] == 1


def test_wrong_arguments_are_python_errors():
    with pytest.raises(TypeError):
        loopdbg.check(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown provider `claude`"):
        loopdbg.check(UNANSWERED, provider="claude")
    with pytest.raises(ValueError, match="synthesize or strip"):
        loopdbg.fix(UNANSWERED, mode="drop")
    assert "anthropic" in loopdbg.PROVIDERS and "claude-code" in loopdbg.PROVIDERS


def test_checks_run_in_threads_side_by_side():
    # The GIL is released while Rust checks: threads give the same results.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: loopdbg.check(UNANSWERED)["problems"], range(32)))
    assert results == [1] * 32
